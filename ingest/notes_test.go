package ingest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// table builds an nccl-tests 2.13+ all_reduce_perf output with the given
// rows ("size count time algbw busbw" for both groups).
func testsTable(rows ...string) string {
	var b strings.Builder
	b.WriteString("# Collective test starting: all_reduce_perf\n")
	b.WriteString("#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n")
	b.WriteString("#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 1.0\n")
	return b.String()
}

func TestRowPlausibility(t *testing.T) {
	doc := testsTable(
		"     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0",   // line 4: fine
		"     2097152        524288     float     sum      -1     0.00    0.00    0.00      0    30.00   69.90  122.33      0",   // line 5: zero OOP time
		"     4194304       1048576     float     sum      -1   -40.00 -104.86 -183.50      0    40.00  104.86  183.50      0",   // line 6: negative
		"     8388608       2097152     float     sum      -1   1e+308    0.00    0.00      0    80.00  104.86  183.50      0",   // line 7: absurd time
		"    16777216       4194304     float     sum      -1     0.10 167772.16 293601.28   0   160.00  104.86  183.50      0",  // line 8: absurd busbw
		"    33554432       8388608     float     sum      -1   320.00  104.86  183.50      0     0.01 3355443.20 5872025.60  0", // line 9: absurd in-place only
	)
	a, err := Parse("t.txt", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	rows := a.Runs[0].Rows
	// Lines 7 and 8 are refused; 4, 5, 6 and 9 are kept.
	var lines []int
	for _, r := range rows {
		lines = append(lines, r.Line)
	}
	if sprint(lines) != "4 5 6 9 " {
		t.Fatalf("rows at lines %v, want 4 5 6 9", lines)
	}
	if !rows[0].OOP.Valid || rows[1].OOP.Valid || !rows[1].IP.Valid || rows[2].OOP.Valid || !rows[3].OOP.Valid || rows[3].IP.Valid {
		t.Errorf("validity: %+v", rows)
	}
	want := map[int]string{
		5: "out-of-place time 0 us is not a measurement",
		6: "out-of-place time -40 us is not a measurement",
		7: "time 1e+308 us is not a plausible measurement (above 1e+10 us); row refused",
		8: "above 100000 GB/s (100 TB/s), not a plausible measurement; row refused",
		9: "in-place bandwidth 5.8720256e+06 GB/s",
	}
	got := map[int]string{}
	for _, n := range a.Notes {
		got[n.Line] += n.Message
	}
	for line, w := range want {
		if !strings.Contains(got[line], w) {
			t.Errorf("note at line %d = %q, want %q", line, got[line], w)
		}
	}
	if len(a.Notes) != len(want) {
		t.Errorf("%d notes, want %d: %v", len(a.Notes), len(want), a.Notes)
	}
	if a.Notes[0].String() != "line 5: "+a.Notes[0].Message {
		t.Errorf("String() = %q", a.Notes[0].String())
	}
}

func TestSingleRowRunNoted(t *testing.T) {
	doc := testsTable("     1048576        262144     float     sum      -1    20.00   52.43   91.75      0    20.00   52.43   91.75      0")
	a, err := Parse("t.txt", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Notes) != 1 || a.Notes[0].Line != 1 || !strings.Contains(a.Notes[0].Message, "single row (size 1048576 B)") {
		t.Fatalf("notes = %v", a.Notes)
	}
}

func TestTopoMatrixAsymmetric(t *testing.T) {
	doc := "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n" +
		"GPU0\t X \tNV4\tSYS\t0-23\t0\n" +
		"GPU1\tNV4\t X \tNV4\t0-23\t0\n" +
		"GPU2\tSYS\tPHB\t X \t24-47\t1\n"
	_, err := Parse("topo.txt", strings.NewReader(doc))
	if err == nil || !strings.Contains(err.Error(), "topo.txt:3: topology matrix is not symmetric: row GPU1 column GPU2 is NV4 but row GPU2 column GPU1 (line 4) is PHB") {
		t.Fatalf("err = %v", err)
	}
	if !errors.Is(err, ErrUnrecognized) {
		t.Errorf("err does not wrap ErrUnrecognized")
	}
}

func TestHWBenchDuplicateNodeKey(t *testing.T) {
	// The node of a hwbench report is read as YAML (JSON is YAML); a key
	// given twice is refused, not resolved by the last one.
	b, err := os.ReadFile("testdata/hwbench_fake.json")
	if err != nil {
		t.Fatal(err)
	}
	dup := bytes.Replace(b, []byte(`"gpu": "H100-SXM",`), []byte(`"gpu": "H100-SXM", "gpu": "A100-SXM4",`), 1)
	if bytes.Equal(dup, b) {
		t.Fatal("fixture changed: no node gpu key to duplicate")
	}
	_, err = Parse("hw.json", bytes.NewReader(dup))
	if err == nil || !strings.Contains(err.Error(), `"gpu" already defined`) {
		t.Fatalf("err = %v", err)
	}
}

func TestScanLinesMatchesEachLine(t *testing.T) {
	long := strings.Repeat("x", MaxLineLength+10)
	inputs := []string{
		"", "a", "a\n", "a\r\nb", "\n\n", "a\nb\n",
		long, long + "\nnext", "a\n" + long + "\r\n" + long[:MaxLineLength] + "\nz",
		strings.Repeat("y", MaxLineLength) + "\n" + strings.Repeat("w", MaxLineLength+5),
	}
	for i, in := range inputs {
		var want, got []line
		eachLine([]byte(in), func(l line) bool { want = append(want, l); return true })
		// Short reads put line ends at every position of a read (one byte
		// at a time for the short inputs, an odd 997 for the long ones).
		chunk := 1
		if len(in) > 100 {
			chunk = 997
		}
		if err := scanLines(shortReader{strings.NewReader(in), chunk}, func(l line) bool { got = append(got, l); return true }); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("input %d: %d lines, want %d", i, len(got), len(want))
		}
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("input %d line %d: got {%d %d bytes cut=%v}, want {%d %d bytes cut=%v}", i, k, got[k].num, len(got[k].text), got[k].cut, want[k].num, len(want[k].text), want[k].cut)
			}
		}
	}
}

// shortReader returns at most n bytes per Read.
type shortReader struct {
	r io.Reader
	n int
}

func (o shortReader) Read(p []byte) (int, error) {
	if len(p) > o.n {
		p = p[:o.n]
	}
	return o.r.Read(p)
}

func TestProgress(t *testing.T) {
	data := bigLog(t, 3*ProgressStep+1000)
	var calls [][2]int64
	a, err := ParseWith("big.log", bytes.NewReader(data), Options{Size: int64(len(data)), Progress: func(read, total int64) {
		calls = append(calls, [2]int64{read, total})
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) == 0 {
		t.Fatal("no runs")
	}
	// About one call per ProgressStep bytes, and a last one at the end.
	if len(calls) < 3 || len(calls) > 6 {
		t.Fatalf("%d progress calls for %d bytes: %v", len(calls), len(data), calls)
	}
	for i, c := range calls {
		if c[1] != int64(len(data)) || (i > 0 && c[0] < calls[i-1][0]) {
			t.Fatalf("calls %v", calls)
		}
	}
	if last := calls[len(calls)-1]; last[0] != int64(len(data)) {
		t.Fatalf("last call %v, want read == %d", last, len(data))
	}
	// Unknown size: total is -1.
	calls = nil
	if _, err := ParseWith("big.log", bytes.NewReader(data), Options{Progress: func(read, total int64) { calls = append(calls, [2]int64{read, total}) }}); err != nil {
		t.Fatal(err)
	}
	if calls[0][1] != -1 {
		t.Fatalf("total = %d, want -1", calls[0][1])
	}
}

func TestStreamSameAsInMemory(t *testing.T) {
	// Streaming a log larger than the detection window gives what parsing
	// the same bytes in memory gives.
	data := bigLog(t, DetectWindow+DetectWindow/2)
	a, err := Parse("big.log", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseNCCLTests("big.log", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) != len(b.Runs) || len(a.Log.Connections) != len(b.Log.Connections) || len(a.Skipped) != len(b.Skipped) {
		t.Fatalf("stream: %d runs %d connections %d skipped; in memory: %d %d %d",
			len(a.Runs), len(a.Log.Connections), len(a.Skipped), len(b.Runs), len(b.Log.Connections), len(b.Skipped))
	}
	for i := range a.Runs {
		if len(a.Runs[i].Rows) != len(b.Runs[i].Rows) {
			t.Fatalf("run %d: %d rows vs %d", i, len(a.Runs[i].Rows), len(b.Runs[i].Rows))
		}
	}
}
