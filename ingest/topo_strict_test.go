package ingest

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// topoMatrix4 is a 4-GPU nvidia-smi topo -m listing whose GPU0-GPU1 cells
// are nv (lines: 1 header, 2..5 rows GPU0..GPU3).
func topoMatrix4(nv string) string {
	return "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n" +
		"GPU0\t X \t" + nv + "\tNV4\tNV4\t0-23\t0\n" +
		"GPU1\t" + nv + "\t X \tNV4\tNV4\t0-23\t0\n" +
		"GPU2\tNV4\tNV4\t X \tNV4\t24-47\t1\n" +
		"GPU3\tNV4\tNV4\tNV4\t X \t24-47\t1\n"
}

// TestTopoMatrixStrict: garbled NV# cells and repeated rows are refused
// with the line, the row and column and the cell; a BOM is accepted.
func TestTopoMatrixStrict(t *testing.T) {
	rows := strings.SplitAfter(topoMatrix4("NV4"), "\n")
	tests := []struct {
		name, in string
		line     string // the file:line part
		want     string // in the error text
	}{
		{"NV-3", topoMatrix4("NV-3"), "bad:2:", `GPU0 row, GPU1 column: "NV-3" is not an NVLink count (NV1..NV18`},
		{"NV0", topoMatrix4("NV0"), "bad:2:", `GPU0 row, GPU1 column: "NV0" is not an NVLink count`},
		{"NV999", topoMatrix4("NV999"), "bad:2:", `GPU0 row, GPU1 column: "NV999" is not an NVLink count`},
		{"NV19", topoMatrix4("NV19"), "bad:2:", `"NV19" is not an NVLink count`},
		{"NVx", topoMatrix4("NVx"), "bad:2:", `"NVx" is not an NVLink count`},
		{"NV+4", topoMatrix4("NV+4"), "bad:2:", `"NV+4" is not an NVLink count`},
		{"NV only garbled, 2 GPUs", "\tGPU0\tGPU1\nGPU0\t X \tNV-3\nGPU1\tNV-3\t X \n", "bad:2:", `GPU0 row, GPU1 column: "NV-3" is not an NVLink count`},
		{"garbled in a lower row", strings.Replace(topoMatrix4("NV4"), "GPU3\tNV4\tNV4", "GPU3\tNV4\tNV0", 1), "bad:5:", `GPU3 row, GPU1 column: "NV0"`},
		{"row repeated", rows[0] + rows[1] + rows[2] + rows[3] + rows[3] + rows[4], "bad:5:", "topology matrix row GPU2 appears twice (lines 4 and 5)"},
		{"first row repeated", rows[0] + rows[1] + rows[1] + rows[2] + rows[3] + rows[4], "bad:3:", "row GPU0 appears twice (lines 2 and 3)"},
		{"last row repeated", rows[0] + rows[1] + rows[2] + rows[3] + rows[4] + rows[4], "bad:6:", "row GPU3 appears twice (lines 5 and 6)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, tc.in, tc.line, tc.want)
		})
	}
}

// TestTopoMatrixNVCounts: every link count nvidia-smi prints (NV1..NV18)
// is read as that many links.
func TestTopoMatrixNVCounts(t *testing.T) {
	for _, k := range []int{1, 2, 4, 6, 8, 12, 18} {
		nv := "NV" + itoa(k)
		a, err := Parse("ok", strings.NewReader(topoMatrix4(nv)))
		if err != nil {
			t.Fatalf("%s: %v", nv, err)
		}
		found := false
		for _, p := range a.Topo.Node.NVLink.Pairs {
			if p[0] == 0 && p[1] == 1 {
				found = p[2] == k
			}
		}
		if !found {
			t.Errorf("%s: NVLink %+v, want pair 0-1 with %d links", nv, a.Topo.Node.NVLink, k)
		}
	}
}

// TestTopoMatrixBOM: a listing saved with a UTF-8 byte order mark reads as
// the same listing without it.
func TestTopoMatrixBOM(t *testing.T) {
	for _, in := range []string{
		topoMatrix4("NV4"),
		"        GPU0    GPU1    CPU Affinity\nGPU0     X      PIX     0-23\nGPU1    PIX      X      0-23\n",
	} {
		plain, err := Parse("f", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		bom, err := Parse("f", strings.NewReader("\ufeff"+in))
		if err != nil {
			t.Fatalf("with a BOM: %v", err)
		}
		if !reflect.DeepEqual(plain.Topo, bom.Topo) {
			t.Errorf("with a BOM:\n%+v\nwithout:\n%+v", bom.Topo, plain.Topo)
		}
	}
	b, err := os.ReadFile("../examples/nvidia-smi-topo.txt")
	if err != nil {
		t.Skip(err)
	}
	plain, err1 := Parse("f", strings.NewReader(string(b)))
	bom, err2 := Parse("f", strings.NewReader("\ufeff"+string(b)))
	if err1 != nil || err2 != nil || !reflect.DeepEqual(plain.Topo, bom.Topo) {
		t.Errorf("examples/nvidia-smi-topo.txt with a BOM: %v, %v", err1, err2)
	}
}

// edit replaces the first n occurrences (-1: all) of old in s, and fails
// when there is none, so that a test cannot pass on an unchanged fixture.
func edit(t *testing.T, s, old, new string, n int) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("fixture has no %q", old)
	}
	return strings.Replace(s, old, new, n)
}

// TestTopoXMLStrict: malformed attribute values of an NCCL topology dump
// are refused with the line, the element, the attribute and the value.
func TestTopoXMLStrict(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "topo_dgx-a100_nccl-dump.xml"))
	if err != nil {
		t.Fatal(err)
	}
	dump := string(b)
	tests := []struct {
		name, old, new string
		n              int
		line, want     string
	}{
		{"nvlink count negative", `count="2"`, `count="-7"`, -1, "bad:7:", `<nvlink> count="-7" is not a number of NVLinks (1..18)`},
		{"nvlink count text", `count="2"`, `count="lots"`, -1, "bad:7:", `<nvlink> count="lots" is not a number of NVLinks`},
		{"nvlink count zero", `count="2"`, `count="0"`, 1, "bad:7:", `<nvlink> count="0"`},
		{"nvlink count too many", `count="2"`, `count="19"`, 1, "bad:7:", `<nvlink> count="19"`},
		{"nvlink count missing", ` count="2"`, ``, 1, "bad:7:", `<nvlink> has no count attribute`},
		{"net speed negative", `speed="200000"`, `speed="-5"`, 1, "bad:17:", `<net> speed="-5" is not a link speed in Mb/s`},
		{"net speed text", `speed="200000"`, `speed="fast"`, 1, "bad:17:", `<net> speed="fast"`},
		{"link_width text", `link_width="16"`, `link_width="x16"`, 1, "bad:3:", `<pci> link_width="x16" is not a PCIe link width`},
		{"link_width negative", `link_width="16"`, `link_width="-16"`, 1, "bad:3:", `<pci> link_width="-16"`},
		{"link_width odd", `link_width="16"`, `link_width="3"`, 1, "bad:3:", `<pci> link_width="3"`},
		{"link_speed NaN", `link_speed="16.0 GT/s PCIe"`, `link_speed="NaN"`, 1, "bad:3:", `<pci> link_speed="NaN" is not a PCIe link speed`},
		{"link_speed no unit", `link_speed="16.0 GT/s PCIe"`, `link_speed="16"`, 1, "bad:3:", `<pci> link_speed="16"`},
		{"link_speed zero", `link_speed="16.0 GT/s PCIe"`, `link_speed="0 GT/s"`, 1, "bad:3:", `<pci> link_speed="0 GT/s"`},
		{"busid twice", `busid="0000:0f:00.0"`, `busid="0000:07:00.0"`, 1, "bad:22:", `<pci> busid="0000:07:00.0" appears twice (lines 5 and 22)`},
		{"busid twice, other case", `busid="0000:12:00.0"`, `busid="0000:0C:00.0"`, 1, "bad:32:", `<pci> busid="0000:0C:00.0" appears twice (lines 15 and 32)`},
		{"gpu dev twice", `dev="1" sm`, `dev="0" sm`, 1, "bad:23:", `<gpu> dev="0" appears twice (lines 6 and 23)`},
		{"gpu dev text", `dev="1" sm`, `dev="one" sm`, 1, "bad:23:", `<gpu> dev="one" is not a GPU index`},
		{"gpu sm text", `sm="80"`, `sm="eighty"`, 1, "bad:6:", `<gpu> sm="eighty" is not a compute capability`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantRefused(t, edit(t, dump, tc.old, tc.new, tc.n), tc.line, tc.want)
		})
	}
}

// TestTopoXMLValidUnknowns: what NCCL writes for values it could not read
// (link_speed "" or "Unknown speed", link_width "0", net speed "0"), older
// kernels' speed strings, the most NVLinks a GPU has (18), and one bus ID
// on two hosts of a fused multi-node topology stay valid.
func TestTopoXMLValidUnknowns(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "topo_dgx-a100_nccl-dump.xml"))
	if err != nil {
		t.Fatal(err)
	}
	dump := string(b)
	base, err := Parse("ok", strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, old, new string }{
		{"link_width 0", `link_width="16"`, `link_width="0"`},
		{"link_speed empty", `link_speed="16.0 GT/s PCIe"`, `link_speed=""`},
		{"link_speed unknown", `link_speed="16.0 GT/s PCIe"`, `link_speed="Unknown speed"`},
		{"link_speed old kernel", `link_speed="16.0 GT/s PCIe"`, `link_speed="16 GT/s"`},
		{"link_speed gen6", `link_speed="16.0 GT/s PCIe"`, `link_speed="64.0 GT/s PCIe"`},
		{"link_width 32", `link_width="16"`, `link_width="32"`},
		{"net speed 0", `speed="200000"`, `speed="0"`},
		{"nvlink count 18", `count="2"`, `count="18"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("ok", strings.NewReader(edit(t, dump, tc.old, tc.new, 1))); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("unchanged values read the same", func(t *testing.T) {
		a, err := Parse("ok", strings.NewReader(edit(t, dump, `link_width="16"`, `link_width="0"`, -1)))
		if err != nil {
			t.Fatal(err)
		}
		if a.Topo.Node.NVLink.Links != base.Topo.Node.NVLink.Links || a.Topo.Node.NVLink.Links != 12 {
			t.Errorf("NVLink %+v, want 12 links per GPU", a.Topo.Node.NVLink)
		}
	})
	t.Run("one busid on two hosts", func(t *testing.T) {
		in := `<system version="1">
  <cpu numaid="0" host_hash="0x1"><pci busid="0000:07:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="90"/></pci></cpu>
  <cpu numaid="0" host_hash="0x2"><pci busid="0000:07:00.0" class="0x030200" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="90"/></pci></cpu>
</system>
`
		if _, err := Parse("ok", strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
	})
}

// wantRefused checks that the topology in is refused with one line that
// starts with "calibrate: " and line ("bad:3:") and holds want.
func wantRefused(t *testing.T, in, line, want string) {
	t.Helper()
	a, err := Parse("bad", strings.NewReader(in))
	if err == nil {
		t.Fatalf("no error; node %+v", a.Topo.Node)
	}
	if !errors.Is(err, ErrUnrecognized) {
		t.Errorf("error does not wrap ErrUnrecognized: %v", err)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "calibrate: "+line) || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("error = %q, want one line with prefix %q and %q", msg, "calibrate: "+line, want)
	}
}
