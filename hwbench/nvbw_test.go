package hwbench

import (
	"context"
	"math"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestNVBandwidthMatrix runs the nvbw probe on the fake (4 GPUs, two per
// socket behind one PCIe switch): alone, each GPU gets the full host link;
// all at once, the second GPU of each socket waits for the shared uplink,
// so the all-at-once figures fall below the alone ones; the device
// matrices show NVLink both ways with an empty diagonal; SM copies are
// declared absent.
func TestNVBandwidthMatrix(t *testing.T) {
	o := fakeOptions(t.TempDir())
	o.Probes, o.CopyBytes = []string{"nvbw"}, 4*model.MiB
	rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 4}), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	nv := rep.NVBW
	byName := map[string]NVBTest{}
	for _, tc := range nv.Tests {
		byName[tc.Name] = tc
	}
	for _, name := range []string{"host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "host_to_all_memcpy_ce", "all_to_host_memcpy_ce", "device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %s test", name)
		}
	}
	n := int64(o.CopyBytes)
	alone := byName["host_to_device_memcpy_ce"].Values[0]
	all := byName["host_to_all_memcpy_ce"].Values[0]
	for i := range alone {
		if want := copyGBps(n, fakeH2DPinned, fakeCopyLatency); !near(float64(alone[i]), want, 1e-3) {
			t.Errorf("GPU %d alone %.2f, want %.2f", i, alone[i], want)
		}
	}
	// GPUs 0 and 1 share socket 0's uplink, 2 and 3 socket 1's.
	for _, pair := range [][2]int{{0, 1}, {2, 3}} {
		lo := math.Min(float64(all[pair[0]]), float64(all[pair[1]]))
		if lo > 0.6*float64(alone[pair[0]]) {
			t.Errorf("GPUs %v at once: %.2f and %.2f, want one near half of %.2f (shared uplink)", pair, all[pair[0]], all[pair[1]], alone[pair[0]])
		}
	}
	for _, name := range []string{"device_to_device_memcpy_read_ce", "device_to_device_memcpy_write_ce"} {
		m := byName[name].Values
		if !math.IsNaN(float64(m[1][1])) || !near(float64(m[0][3]), copyGBps(n, fakeP2PNVLink, fakeCopyLatency), 1e-3) {
			t.Errorf("%s: diagonal %v, 0-3 %.2f", name, m[1][1], m[0][3])
		}
	}
	if len(nv.Notes) == 0 || nv.Notes[0] != SMCopyNote {
		t.Errorf("notes %q", nv.Notes)
	}
}
