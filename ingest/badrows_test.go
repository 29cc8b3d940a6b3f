package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleLines returns examples/all_reduce.log (8 ranks, one table whose
// size-128 row is line 318) as lines.
func exampleLines(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "all_reduce.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if !strings.HasPrefix(strings.TrimSpace(lines[317]), "128 ") {
		t.Fatalf("line 318 of all_reduce.log is %q, want the size-128 row", lines[317])
	}
	return lines
}

// insertAfter returns lines with extra inserted after 1-based line n.
func insertAfter(lines []string, n int, extra ...string) string {
	out := append(append(append([]string(nil), lines[:n]...), extra...), lines[n:]...)
	return strings.Join(out, "\n")
}

func notesText(a *Artifact) string {
	var b strings.Builder
	for _, n := range a.Notes {
		b.WriteString(n.String() + "\n")
	}
	return b.String()
}

// TestRepeatedSizeNoted: a size repeated in one table (another time) is a
// note on its line naming the first line; RepeatedSizes reports it as not
// explained by rounding.
func TestRepeatedSizeNoted(t *testing.T) {
	lines := exampleLines(t)
	text := insertAfter(lines, 318, "         128            32     float     sum      -1    25.00    0.01    0.01      0    24.65    0.01    0.01      0")
	a, err := Parse("dup.log", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 319: size 128 appears twice in the table, at lines 318 and 319"; !strings.Contains(notesText(a), want) {
		t.Errorf("notes lack %q:\n%s", want, notesText(a))
	}
	reps := a.Runs[0].RepeatedSizes()
	if len(reps) != 1 || reps[0] != (RepeatedSize{Size: 128, First: 318, Line: 319}) {
		t.Errorf("RepeatedSizes = %+v", reps)
	}
}

// TestRepeatedSizeRounded: nccl-tests stepping by bytes prints one size
// twice when rounding to whole elements per rank merges two steps: noted,
// not a pasted run. The size-0 rows of small AllGather sizes are no repeat.
func TestRepeatedSizeRounded(t *testing.T) {
	text := strings.Join([]string{
		"# Collective test starting: all_gather_perf",
		"# nThread 1 nGpus 8 minBytes 8 maxBytes 96 step: 8(bytes) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
		"           0             0     float    none      -1     0.13    0.00    0.00      0     0.11    0.00    0.00      0",
		"           0             0     float    none      -1     0.13    0.00    0.00      0     0.11    0.00    0.00      0",
		"          32             1     float    none      -1    10.00    0.00    0.00      0    10.00    0.00    0.00      0",
		"          32             1     float    none      -1    10.10    0.00    0.00      0    10.00    0.00    0.00      0",
		"          64             2     float    none      -1    10.20    0.01    0.01      0    10.20    0.01    0.01      0",
		"          96             3     float    none      -1    10.30    0.01    0.01      0    10.30    0.01    0.01      0",
		"",
	}, "\n")
	a, err := Parse("rounded.log", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	reps := a.Runs[0].RepeatedSizes()
	if len(reps) != 1 || !reps[0].Rounded || reps[0].First != 6 || reps[0].Line != 7 {
		t.Errorf("RepeatedSizes = %+v, want the rounded repeat of line 6 at line 7", reps)
	}
	if n := notesText(a); !strings.Contains(n, "line 7: size 32 repeats line 6: nccl-tests rounds") || strings.Contains(n, "appears twice") {
		t.Errorf("notes:\n%s", n)
	}
}

// TestForeignRowsNoted: AllGather rows pasted into an AllReduce table
// (count = size / 8 ranks / 4 B) are notes and left out of fits.
func TestForeignRowsNoted(t *testing.T) {
	lines := exampleLines(t)
	text := insertAfter(lines, 406,
		"         128             4     float    none      -1    16.59    0.01    0.01      0    15.95    0.01    0.01      0",
		"  4294967296     134217728     float    none      -1    30000   143.2   125.3      0    30000   143.2   125.3      0")
	a, err := Parse("foreign.log", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	n := notesText(a)
	for _, want := range []string{"line 407: count 4 does not give size 128", "line 408: count 134217728 does not give size 4294967296"} {
		if !strings.Contains(n, want) {
			t.Errorf("notes lack %q:\n%s", want, n)
		}
	}
	for _, r := range a.Runs[0].Rows {
		if (r.Line == 407 || r.Line == 408) && r.OOP.Valid {
			t.Errorf("foreign row at line %d is valid: %+v", r.Line, r)
		}
		if r.Line == 318 && !r.OOP.Valid {
			t.Errorf("the table's own row at line 318 was invalidated")
		}
	}
}

// TestRefusedRowsAreNotes: rows refused for a NaN, infinite or garbage
// time are notes (which validate and calibrate print), not skipped lines.
func TestRefusedRowsAreNotes(t *testing.T) {
	lines := exampleLines(t)
	for i, v := range map[int]string{319: "nan", 320: "inf", 321: "abc"} {
		f := strings.Fields(lines[i-1])
		f[5] = v
		lines[i-1] = strings.Join(f, " ")
	}
	a, err := Parse("bad.log", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	n := notesText(a)
	for _, want := range []string{`line 319: out-of-place column time: "nan" is not a number; row refused`, `line 320: out-of-place column time: "inf"`, `line 321: out-of-place column time: "abc"`} {
		if !strings.Contains(n, want) {
			t.Errorf("notes lack %q:\n%s", want, n)
		}
	}
	for _, s := range a.Skipped {
		if s.Line >= 319 && s.Line <= 321 {
			t.Errorf("refused row also skipped: %+v", s)
		}
	}
}

const efaLog = "nccldebug_a100sxm40_aws-p4d_4pods-x1gpu_efa_trainingoneks.txt"

// TestCutLogLine: an NCCL log whose last line is cut inside "via NET/..."
// (no line break at the end) does not report a transport named "NE" or a
// network named "Libfa"; the line is dropped with a note. With the line
// break there, a complete line is read as before.
func TestCutLogLine(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "raw", efaLog))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	if !strings.Contains(lines[115], "[receive] via NET/Libfabric/0/GDRDMA") {
		t.Fatalf("line 116 is %q", lines[115])
	}
	head := strings.Join(lines[:115], "\n") + "\n"
	for _, cut := range []string{"NE", "NET/Libfa", "NET/Libfabric/0/GDR"} {
		text := head + strings.Replace(lines[115], "NET/Libfabric/0/GDRDMA", cut, 1)
		a, err := Parse("cut.log", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range a.Log.Connections {
			if c.Line == 116 {
				t.Errorf("cut at %q: connection kept: %+v", cut, c)
			}
		}
		if n := notesText(a); !strings.Contains(n, "line 116: the file ends inside this line") {
			t.Errorf("cut at %q: notes:\n%s", cut, n)
		}
	}
	a, err := Parse("whole.log", strings.NewReader(head+lines[115]))
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Log.Connections[len(a.Log.Connections)-1]; c.Line != 116 || c.Transport != "NET" || !c.GDR || len(a.Notes) != 0 {
		t.Errorf("a whole last line without a line break: %+v, notes %v", c, a.Notes)
	}
}

// TestLogComms: the communicator sizes of a log are kept for validate.
func TestLogComms(t *testing.T) {
	a, err := ParseFile(filepath.Join("testdata", "raw", efaLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Log.Comms) != 1 || a.Log.Comms[0].Ranks != 4 || a.Log.Comms[0].Line == 0 {
		t.Errorf("Comms = %+v, want one of 4 ranks", a.Log.Comms)
	}
}
