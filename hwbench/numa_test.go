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
