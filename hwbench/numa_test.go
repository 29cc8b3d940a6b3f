package hwbench

import (
	"context"
	"math"
	"reflect"
	"testing"
	"testing/fstest"
)

func TestNUMANodes(t *testing.T) {
	for in, want := range map[string][]int{"0\n": {0}, "0-1\n": {0, 1}, "0,2-3\n": {0, 2, 3}, "": nil, "x": nil, "3-1": nil} {
		fsys := fstest.MapFS{"sys/devices/system/node/online": &fstest.MapFile{Data: []byte(in)}}
		if got := numaNodes(fsys); !reflect.DeepEqual(got, want) {
			t.Errorf("numaNodes(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestCopyNUMABinding checks that the copy probe binds the pinned memory
// of its near rows to the GPU's NUMA node (from sysfs), measures the far
// rows on the other node, and reports both nodes; on a one-socket machine
// there is no far row.
func TestCopyNUMABinding(t *testing.T) {
	o := fakeOptions(t.TempDir())
	o.Probes = []string{"copy", "gdr"}
	rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 4, NICs: 2}), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	n := int64(o.CopyBytes)
	for _, row := range rep.Copy.GPUs {
		// The fake alternates GPUs between sockets 0 and 1 in bus order.
		wantNode := map[int]int{0: 0, 1: 0, 2: 1, 3: 1}[row.GPU]
		if row.NUMA != wantNode || row.HostNUMA != wantNode || row.FarNUMA != 1-wantNode {
			t.Errorf("GPU %d: numa %d host %d far %d, want %d, %d, %d", row.GPU, row.NUMA, row.HostNUMA, row.FarNUMA, wantNode, wantNode, 1-wantNode)
		}
		if want := copyGBps(n, fakeH2DPinned, fakeCopyLatency); !near(float64(row.H2DPinned), want, 1e-3) {
			t.Errorf("GPU %d near h2d %.2f, want %.2f", row.GPU, row.H2DPinned, want)
		}
		if want := copyGBps(n, fakeH2DPinned*fakeFarNUMA, fakeCopyLatency); !near(float64(row.H2DPinnedFar), want, 1e-3) {
			t.Errorf("GPU %d far h2d %.2f, want %.2f", row.GPU, row.H2DPinnedFar, want)
		}
	}
	for i, p := range rep.GDR.Ports {
		if p.HostNUMA != i { // mlx5_0 on socket 0, mlx5_1 on socket 1
			t.Errorf("%s: host memory on node %d, want %d", p.HCA, p.HostNUMA, i)
		}
	}

	one, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 1, NICs: -1}), func() Options { o := fakeOptions(t.TempDir()); o.Probes = []string{"copy"}; return o }())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r := one.Copy.GPUs[0]; r.FarNUMA != -1 || !math.IsNaN(float64(r.H2DPinnedFar)) || r.HostNUMA != 0 {
		t.Errorf("one socket: %+v", r)
	}
}

// TestNCCLAbortOnFailure checks that a failed collective ends the
// communicators with ncclCommAbort, not a ncclCommDestroy that may block,
// and that a good run destroys them.
func TestNCCLAbortOnFailure(t *testing.T) {
	for _, tc := range []struct {
		fail               string
		destroyed, aborted int
	}{{"", 4, 0}, {"allgather", 0, 4}} {
		f := NewFake(FakeConfig{FailCollective: tc.fail})
		o := fakeOptions(t.TempDir())
		o.Probes = []string{"nccl"}
		o.MaxBytes = 4096
		rep, err := Run(context.Background(), f, o)
		if (err != nil) != (tc.fail != "") {
			t.Fatalf("fail %q: Run error %v", tc.fail, err)
		}
		if d, a := f.CommEnds(); d != tc.destroyed || a != tc.aborted {
			t.Errorf("fail %q: %d destroyed, %d aborted; want %d, %d", tc.fail, d, a, tc.destroyed, tc.aborted)
		}
		if tc.fail != "" && (statusOf(rep)["nccl"] != StatusFailed || len(rep.NCCL.Notes) == 0) {
			t.Errorf("status %v notes %q", statusOf(rep), rep.NCCL.Notes)
		}
	}
}

// TestZeroByteRows checks that AllGather rows smaller than ranks x 16
// bytes (zero elements per rank) read 0 GB/s, not NaN.
func TestZeroByteRows(t *testing.T) {
	o := fakeOptions(t.TempDir())
	o.Probes = []string{"nccl"}
	o.MinBytes, o.MaxBytes = 8, 1024
	rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 8}), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var zero int
	for _, sw := range rep.NCCL.Sweeps {
		for _, row := range sw.Rows {
			for _, tm := range []Timing{row.OOP, row.IP} {
				if math.IsNaN(float64(tm.TimeUs)) || math.IsNaN(float64(tm.BusBW)) {
					t.Errorf("%s %d bytes: NaN %+v", sw.Collective, row.Size, tm)
				}
			}
			if row.Size == 0 {
				zero++
				if row.OOP.AlgBW != 0 || row.OOP.BusBW != 0 {
					t.Errorf("%s zero-byte row %+v", sw.Collective, row.OOP)
				}
			}
		}
	}
	if zero == 0 {
		t.Error("no zero-byte row in the sweep (8 ranks from 8 bytes)")
	}
	if math.IsNaN(float64(rep.NCCL.Sweeps[1].AvgBusBW)) {
		t.Error("average busbw is NaN")
	}
}
