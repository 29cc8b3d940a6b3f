package sim_test

import (
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestBundlesExact: channel groups (tree) and GPU shards (NVLSTree) that
// the fabric treats alike run as one bundle, and the bundled DES gives the
// full simulation's time and bottleneck (sim/bundle.go); where the fabric
// treats them differently (ECMP hashing each flow, a slow NIC) nothing is
// bundled. Every case is compared with Request.Full, which simulates every
// channel and GPU on its own.
func TestBundlesExact(t *testing.T) {
	leafSpine := func(per int, over float64) model.FabricSpec {
		return model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: per, Radix: 256, Oversubscription: over}
	}
	for _, tc := range []struct {
		name    string
		node    string
		nodes   int
		fabric  model.FabricSpec
		algo    string
		bundled bool // the bundles must cut the ops
	}{
		{"h100 leaf-spine 1:1", "dgx-h100", 16, leafSpine(4, 1), "nvlstree", true},
		{"h100 leaf-spine 2:1", "dgx-h100", 16, leafSpine(4, 2), "nvlstree", true},
		{"h100 partial leaf", "dgx-h100", 14, leafSpine(4, 1), "nvlstree", true},
		{"h100 one switch", "dgx-h100", 4, model.FabricSpec{}, "nvlstree", true},
		{"b200 leaf-spine", "dgx-b200", 8, leafSpine(4, 1), "nvlstree", true},
		{"h100 ECMP", "dgx-h100", 16, model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 4, Radix: 256, Oversubscription: 2, Routing: "ecmp"}, "nvlstree", false},
		{"h100 slow NIC", "dgx-h100", 4, model.FabricSpec{Degraded: []model.DegradedLink{{Link: "node2/nic3", Gbps: 200}}}, "nvlstree", false},
		// NCCL's tree chains on 8 GPUs behind an NVSwitch are not
		// rotations of each other, so their NVLink loads differ and the
		// check keeps every group; on the 4-GPU boards they bundle.
		{"h100 tree", "dgx-h100", 16, leafSpine(4, 1), "tree", false},
		{"hgx-h100-4gpu tree", "hgx-h100-4gpu", 16, leafSpine(4, 1), "tree", true},
		{"v100 4-GPU tree", "v100-4gpu-nvlink", 8, leafSpine(4, 2), "tree", true},
		{"hgx-h100-4gpu tree, slow NIC", "hgx-h100-4gpu", 4, model.FabricSpec{Degraded: []model.DegradedLink{{Link: "node1/nic0", Gbps: 100}}}, "tree", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := resolve(t, scenarios.Overrides{Node: tc.node, Nodes: tc.nodes})
			spec.Fabric = tc.fabric
			e := specEnv(t, spec)
			a, err := model.ParseAlgo(tc.algo)
			if err != nil {
				t.Fatal(err)
			}
			anyCut := false
			sizes := []model.Bytes{256 << 10, 4 << 20, 256 << 20}
			if testing.Short() {
				// The pipelined size is the slowest to run in full; -short
				// keeps the latency-bound and the mid size.
				sizes = sizes[:2]
			}
			for _, size := range sizes {
				req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, Algo: &a}
				red := predictReq(t, e, req, size)
				req.Full = true
				full := predictReq(t, e, req, size)
				if rel := math.Abs(red.TimeUs/full.TimeUs - 1); rel > 1e-9 {
					t.Errorf("%s: bundled %.6f us, every channel %.6f us (%.1e apart)", model.FormatBytes(size), red.TimeUs, full.TimeUs, rel)
				}
				if red.Bottleneck != full.Bottleneck {
					t.Errorf("%s: bundled bottleneck %q, every channel %q", model.FormatBytes(size), red.Bottleneck, full.Bottleneck)
				}
				if red.Ops > full.Ops {
					t.Errorf("%s: bundled %d ops, more than the %d of every channel", model.FormatBytes(size), red.Ops, full.Ops)
				}
				anyCut = anyCut || red.Ops < full.Ops
			}
			if anyCut != tc.bundled {
				t.Errorf("bundled: %v, want %v", anyCut, tc.bundled)
			}
		})
	}
}
