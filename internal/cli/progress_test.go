package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// rowCanceller is stdout that cancels the run once it has seen n table
// rows: an interrupt arriving while the sweep is half done.
type rowCanceller struct {
	bytes.Buffer
	n      int
	cancel context.CancelFunc
}

func (w *rowCanceller) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if tableRows(w.String()) >= w.n {
		w.cancel()
	}
	return n, err
}

func tableRows(out string) int {
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			rows++
		}
	}
	return rows
}

func runEnv(ctx context.Context, stdout io.Writer, terminal bool, args ...string) (int, string) {
	var errb bytes.Buffer
	e := &env{stdout: stdout, stderr: &errb, args: append([]string{"collsim"}, args...), now: func() time.Time { return time.Unix(0, 0) },
		isTerminal: func(io.Writer) bool { return terminal }}
	return runWith(ctx, e, e.args), errb.String()
}

// TestPredictProgress: on a terminal, stderr shows "size k/N" while each
// size runs and ends with the line cleared; piped, stderr stays empty. The
// rows are the same either way.
func TestPredictProgress(t *testing.T) {
	args := []string{"predict", "--engine", "analytic", "-b", "1K", "-e", "1M", "-f", "4"}
	var piped, term bytes.Buffer
	code, errs := runEnv(context.Background(), &piped, false, args...)
	if code != 0 || errs != "" {
		t.Fatalf("piped: exit %d, stderr %q", code, errs)
	}
	code, errs = runEnv(context.Background(), &term, true, args...)
	if code != 0 {
		t.Fatalf("terminal: exit %d, stderr %q", code, errs)
	}
	for k := 1; k <= 6; k++ {
		if want := "collsim: predict: size " + string(rune('0'+k)) + "/6 "; !strings.Contains(errs, want) {
			t.Errorf("terminal stderr lacks %q: %q", want, errs)
		}
	}
	last := errs[strings.LastIndex(errs, "\r")-1:]
	if strings.TrimSpace(last) != "" || !strings.HasSuffix(errs, "\r") {
		t.Errorf("progress line not cleared at the end: %q", errs)
	}
	if piped.String() != term.String() {
		t.Errorf("stdout differs between terminal and pipe:\n%s\n---\n%s", piped.String(), term.String())
	}
}

// TestPredictInterrupted: an interrupt in the middle of a sweep exits 130,
// says how many sizes finished, and leaves those sizes' rows printed (rows
// are printed as each size finishes, not at the end).
func TestPredictInterrupted(t *testing.T) {
	for _, format := range []string{"table", "csv"} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &rowCanceller{n: 3, cancel: cancel}
		if format == "csv" {
			out.n = 4 // the CSV header is a row too
		}
		code, errs := runEnv(ctx, out, false, "predict", "--engine", "analytic", "-b", "8", "-e", "64M", "--format", format)
		cancel()
		if code != ExitInterrupted {
			t.Fatalf("%s: exit %d, want %d; stderr %q", format, code, ExitInterrupted, errs)
		}
		if want := "collsim: predict: interrupted after 3 of 24 sizes\n"; errs != want {
			t.Errorf("%s: stderr %q, want %q", format, errs, want)
		}
		if got := tableRows(out.String()); got != out.n {
			t.Errorf("%s: %d rows printed before the interrupt, want %d:\n%s", format, got, out.n, out.String())
		}
	}

	// Interrupted before the first size: nothing printed.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	code, errs := runEnv(ctx, &out, true, "predict", "-b", "8", "-e", "64M")
	if code != ExitInterrupted || errs != "collsim: predict: interrupted after 0 of 24 sizes\n" || out.Len() != 0 {
		t.Errorf("exit %d, stderr %q, stdout %q", code, errs, out.String())
	}
}

// TestInputProgress: reading measurement files shows how far it has come on
// a terminal (inspect, calibrate and validate share the reader), nothing
// when piped.
func TestInputProgress(t *testing.T) {
	file := repoRoot + "/examples/all_reduce.log"
	for _, args := range [][]string{
		{"inspect", file},
		{"validate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--nics", "4x200G-ib", "--engine", "analytic", "--measured", file},
	} {
		var out bytes.Buffer
		_, errs := runEnv(context.Background(), &out, true, args...)
		if want := "collsim: " + args[0] + ": reading all_reduce.log (1 of 1): 100% of "; !strings.Contains(errs, want) {
			t.Errorf("%s on a terminal: stderr %q lacks %q", args[0], errs, want)
		}
		out.Reset()
		if _, errs := runEnv(context.Background(), &out, false, args...); strings.Contains(errs, "reading") {
			t.Errorf("%s piped: stderr %q shows progress", args[0], errs)
		}
	}
}

// TestEveryCommandInterrupted: an interrupt before the work is done stops
// every long-running command with exit 130 and a line naming it, and no
// output.
func TestEveryCommandInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	measured := repoRoot + "/examples/all_reduce.log"
	for _, args := range [][]string{
		{"predict"},
		{"scale", "--node", "dgx-a100"},
		{"sweep", "testdata/sweep/fabric.yaml"},
		{"compare", "--design", "a=--node dgx-h100", "--design", "b=--node dgx-a100"},
		{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", measured},
		{"validate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", measured},
		{"accuracy", "--cases", repoRoot + "/ingest/testdata/cases.yaml"},
		{"hwbench", "--fake", "--quiet", "--out", ""},
	} {
		var out bytes.Buffer
		code, errs := runEnv(ctx, &out, false, args...)
		if code != ExitInterrupted || !strings.HasPrefix(errs, "collsim: "+args[0]+": ") || !strings.Contains(errs, "interrupted") || strings.Count(errs, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 130 and one line naming the command and the interrupt", args[0], code, errs)
		}
		if out.Len() != 0 {
			t.Errorf("%s: printed %q after the interrupt", args[0], out.String())
		}
	}
}
