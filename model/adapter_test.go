package model_test

import (
	"testing"

	"github.com/collsim/collsim/scenarios"
)

// ringNICs returns how many distinct NICs of node 0 the ring graph of a
// two-node cluster uses, how many NCCL can use, their ports and the first
// one's device name.
func ringNICs(t *testing.T, o scenarios.Overrides) (used, usable, ports int, dev0 string) {
	t.Helper()
	c, r := resolved(t, o)
	seen := map[int]bool{}
	for _, ch := range r.SearchGraphs().Ring.Channels {
		seen[ch.NetIn], seen[ch.NetOut] = true, true
	}
	return len(seen), len(r.NICUsable[0]), max(c.Spec.Node.NICs.Ports, 1), c.Topo.Elem(r.NICUsable[0][0]).NIC.Device
}

// TestMultiPortAdapterCarriesItsPorts: OCI's BM.GPU4.8 has 16x 100G RoCE
// ports for 8 A100s (ociTutorials_a100_2x8_bmgpu48_roce100x16 in
// ingest/testdata/cases_heldout.yaml, raw/nccltests_a100sxm40_2x8_roce100x16_ocitutorials_1.txt:
// 191.76 GB/s busbw at 10 GiB, above the ~95 GB/s that 8 of the ports can
// carry). With two ports in each of the DGX A100 layout's 8 NIC slots, the
// slot's link was sized for one 100G port (Gen3 x16, ~12 GB/s), so the ring
// search could reserve only one port per slot and used 8 of 16. The two
// ports are one adapter on a Gen4 x16 interface. NCCL before 2.20 and in
// 2.24-2.26 sees 16 devices and uses every one; 2.20-2.23 and 2.27 on merge
// each adapter's ports into one device of 200G (NCCL_IB_MERGE_NICS,
// mergesAdapterPorts), 8 devices of 2 ports, and NCCL_IB_MERGE_NICS=0 keeps
// the 16.
func TestMultiPortAdapterCarriesItsPorts(t *testing.T) {
	for _, c := range []struct {
		version     string
		set         []string
		used, ports int
		dev         string
	}{
		{"2.19", nil, 16, 1, "mlx5_0"},
		{"2.22", nil, 8, 2, "mlx5_0+mlx5_8"}, // NET/IB's name of a merged device
		{"2.26", nil, 16, 1, "mlx5_0"},       // 2.24-2.26 keep a dual-function adapter's ports apart
		{"2.30", nil, 8, 2, "mlx5_0+mlx5_8"},
		{"2.30", []string{"NCCL_IB_MERGE_NICS=0"}, 16, 1, "mlx5_0"},
	} {
		used, usable, ports, dev := ringNICs(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "16x100G-roce", NCCLVersion: c.version, Set: c.set})
		if dev != c.dev {
			t.Errorf("NCCL %s %v: NIC 0 is %s, want %s", c.version, c.set, dev, c.dev)
		}
		if usable != c.used || used != c.used || ports != c.ports {
			t.Errorf("16x100G on dgx-a100, NCCL %s %v: ring uses %d of %d NICs of %d ports, want %d of %d of %d", c.version, c.set, used, usable, ports, c.used, c.used, c.ports)
		}
	}
	// One port per slot keeps the port's own generation: unchanged.
	if used, usable, _, _ := ringNICs(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "8x100G-roce"}); used != usable || used != 8 {
		t.Errorf("8x100G on dgx-a100: ring uses %d of %d NICs", used, usable)
	}
}
