package ingest

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// garbage is an io.Reader of n pseudo-random bytes that never holds them
// all: either binary noise or printable lines (text == true).
type garbage struct {
	n, off int64
	state  uint64
	text   bool
}

func (g *garbage) Read(p []byte) (int, error) {
	if g.off >= g.n {
		return 0, io.EOF
	}
	if int64(len(p)) > g.n-g.off {
		p = p[:g.n-g.off]
	}
	for i := range p {
		g.state ^= g.state << 13
		g.state ^= g.state >> 7
		g.state ^= g.state << 17
		c := byte(g.state >> 24)
		if g.text {
			c = 'a' + c%26
			if g.state%61 == 0 {
				c = '\n'
			} else if g.state%7 == 0 {
				c = ' '
			}
		}
		p[i] = c
	}
	g.off += int64(len(p))
	return len(p), nil
}

func TestBadInput(t *testing.T) {
	header := "# nThread 1 nGpus 2 minBytes 8 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	row8 := "           8             2     float     sum      -1    17.08    0.00    0.00      0    16.76    0.00    0.00      0\n"
	tests := []struct {
		name string
		in   io.Reader
		want string // in the error text
		line string // the file:line part
	}{
		{"empty", strings.NewReader(""), "empty input", "bad:1:"},
		{"blank lines", strings.NewReader("\n  \n\t\n"), "empty input", "bad:1:"},
		{"binary", bytes.NewReader(append([]byte("GPU0\n"), 0, 1, 2, 3)), "binary data", "bad:2:"},
		{"gzip", bytes.NewReader([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xfe}), "gzip-compressed: decompress it first (gunzip -c bad > bad.txt)", "bad:1:"},
		{"prose", strings.NewReader("hello world\nnothing to see\n"), "no known format", "bad:1:"},
		{"header only", strings.NewReader(header), "no complete result row", "bad:2:"},
		{"truncated table", strings.NewReader(header + "           8             2     float     sum      -1    17.08    0.00"), "incomplete table row: 7 of 13 columns", "bad:3:"},
		// A file cut after complete rows, inside the next one: refused
		// (its complete rows would judge the run without the lost sizes),
		// also when NCCL log lines make it read as a log first.
		{"cut inside a row", strings.NewReader(header + row8 + "          16             4     float"), "the file ends inside a results row (3 of its 13 columns)", "bad:4:"},
		{"log cut inside a row", strings.NewReader("host:1:1 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n" + header + row8 + "          16             4     float     sum      -1    16.72"), "the log is truncated", "bad:5:"},
		{"missing columns", strings.NewReader(header + "           8             2     float     sum      -1    17.08    0.00    0.00\n          16             4     float     sum      -1    16.72\n"), "incomplete table row", "bad:3:"},
		{"bad number", strings.NewReader(header + "           8             2     float     sum      -1    17.08    x.00    0.00      0    16.76    0.00    0.00      0\n"), "column algbw: \"x.00\" is not a number", "bad:3:"},
		{"bad json", strings.NewReader("{\"results\": [{\"size\": 8, \"out_of_place\": {\"bus_bw\": 1,\n \"alg_bw\": }}]}"), "invalid JSON", "bad:2:"},
		{"json no rows", strings.NewReader(`{"results": [], "average_bus_bandwidth": {"bandwidth": 0}}`), "without any result", "bad:1:"},
		{"topo truncated row", strings.NewReader("        GPU0    GPU1    CPU Affinity\nGPU0     X      NV12    0-23\nGPU1    NV12\n"), "has 1 of 2 cells", "bad:3:"},
		{"topo missing row", strings.NewReader("        GPU0    GPU1    GPU2\nGPU0     X      NV12    NV12\nGPU1    NV12     X      NV12\n"), "row GPU2 is missing", "bad:1:"},
		{"binary garbage 100MB", &garbage{n: 100 << 20, state: 88172645463325252}, "binary data", "bad:"},
		{"text garbage 100MB", &garbage{n: 100 << 20, state: 88172645463325252, text: true}, "no known format", "bad:1:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Parse("bad", tc.in)
			if err == nil {
				t.Fatalf("no error; artifact %+v", a)
			}
			if !errors.Is(err, ErrUnrecognized) {
				t.Errorf("error does not wrap ErrUnrecognized: %v", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "calibrate: "+tc.line) || !strings.Contains(msg, tc.want) {
				t.Errorf("error = %q, want prefix %q and %q", msg, "calibrate: "+tc.line, tc.want)
			}
		})
	}
}

// TestGarbageBoundedMemory checks that rejecting 100 MB of text garbage
// reads no more than the detection window.
func TestGarbageBoundedMemory(t *testing.T) {
	g := &garbage{n: 100 << 20, state: 1, text: true}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Parse("garbage", g); !errors.Is(err, ErrUnrecognized) {
		t.Fatalf("err = %v", err)
	}
	runtime.ReadMemStats(&after)
	if g.off > DetectWindow {
		t.Errorf("read %d bytes, want at most the %d-byte detection window", g.off, DetectWindow)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("allocated %d bytes to reject garbage", alloc)
	}
}

func TestTooLarge(t *testing.T) {
	// A recognised start followed by more than the limit: refused with ErrTooLarge.
	head := "# nThread 1\n#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
	r := io.MultiReader(strings.NewReader(head), &garbage{n: 3 << 20, state: 7, text: true})
	_, err := parseLimited("big", r, 2<<20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	// ParseFile refuses by size before reading.
	dir := t.TempDir()
	p := filepath.Join(dir, "huge.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxInputSize + 1); err != nil {
		t.Skip("cannot create a sparse file:", err)
	}
	f.Close()
	if _, err := ParseFile(p); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ParseFile(huge) = %v, want ErrTooLarge", err)
	}
	if _, err := ParseFile(filepath.Join(dir, "missing.txt")); err == nil || !os.IsNotExist(errors.Unwrap(err)) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("ParseFile(missing) = %v", err)
	}
}

func TestLoadTopologyWrongKind(t *testing.T) {
	_, err := LoadTopology("testdata/raw/ibstat_snellius_h100_node.txt")
	if err == nil || !strings.Contains(err.Error(), "is ibstat output, not a topology") {
		t.Errorf("err = %v", err)
	}
	ti, err := LoadTopology("testdata/raw/topo_h100sxm_aws-p5-48xl_1x8_nvswitch_trainingoneks.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ti.NodeSpec("", "", ""); err == nil || !strings.Contains(err.Error(), "does not name the GPU model") {
		t.Errorf("NodeSpec without GPU: %v", err)
	}
	if _, err := ti.NodeSpec("H800", "", ""); err == nil || !strings.Contains(err.Error(), "links: 18 is outside 0..8") {
		t.Errorf("NodeSpec with a GPU of 8 NVLinks on NV18: %v", err)
	}
	if err := ti.SetGPU("NVIDIA H100 80GB HBM3"); err != nil || ti.Node.GPU != "H100-SXM" {
		t.Errorf("SetGPU: %v %q", err, ti.Node.GPU)
	}
	nic, err := LoadTopology("testdata/raw/topo_a100sxm80_hgx8_roce100x8_deepep13.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nic.NodeSpec("", "", ""); err == nil || !strings.Contains(err.Error(), "speed is unknown") {
		t.Errorf("NodeSpec without NIC speed: %v", err)
	}
}
