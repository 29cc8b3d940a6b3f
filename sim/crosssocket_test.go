package sim_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestCrossSocketP2P runs every algorithm of every collective, on both
// engines, over clusters whose GPU-to-GPU traffic crosses a socket: the
// routes then carry the virtual cross-socket P2P links NewEnv adds, and every
// consumer of a route must know them (a PCIe server with NCCL_P2P_LEVEL=SYS
// once panicked with an index out of range in the latency class).
func TestCrossSocketP2P(t *testing.T) {
	clusters := []struct {
		name string
		o    scenarios.Overrides
		// nvls lists the NVLS algorithms the cluster supports (NVLS needs
		// NVLink SHARP, NVLSTree more than one node); the others must be
		// refused with an error.
		nvls []string
	}{
		{"pcie-sys", scenarios.Overrides{Node: "pcie-gpu-server", Set: []string{"NCCL_P2P_LEVEL=SYS"}}, nil},
		{"pcie-sys-2nodes", scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, Set: []string{"NCCL_P2P_LEVEL=SYS"}}, nil},
		{"pcie-sys-4gpus", scenarios.Overrides{Node: "pcie-gpu-server", GPUsPerNode: 4, Set: []string{"NCCL_P2P_LEVEL=SYS"}}, nil},
		{"dgx1-sys", scenarios.Overrides{Node: "dgx1-v100", Set: []string{"NCCL_P2P_LEVEL=SYS"}}, nil},
		{"dgx-h100-sys", scenarios.Overrides{Node: "dgx-h100", Set: []string{"NCCL_P2P_LEVEL=SYS"}}, []string{"nvls"}},
		{"dgx-h100-sys-2nodes", scenarios.Overrides{Node: "dgx-h100", Nodes: 2, Set: []string{"NCCL_P2P_LEVEL=SYS"}}, []string{"nvlstree"}},
	}
	algos := map[model.Collective][]string{
		model.AllReduce:     {"", "ring", "tree", "nvls", "nvlstree"},
		model.AllGather:     {"", "ring", "nvls"},
		model.ReduceScatter: {"", "ring", "nvls"},
		model.Broadcast:     {"", "ring"},
		model.Reduce:        {"", "ring"},
		model.AlltoAll:      {"", "direct"},
		model.SendRecv:      {"", "direct"},
	}
	// Sizes on both sides of NCCL's protocol and algorithm switches, each
	// at least one element per rank.
	sizes := []model.Bytes{1 << 10, 64 << 10, 4 << 20, 64 << 20}
	// Adaptive routing adds the fabric's bundles as virtual links too,
	// before the cross-socket ones: both kinds in one route set.
	adaptive := resolve(t, scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 4, Set: []string{"NCCL_P2P_LEVEL=SYS"}})
	adaptive.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "adaptive"}
	envs := map[string]*sim.Env{"pcie-sys-4nodes-adaptive": specEnv(t, adaptive)}
	ae := envs["pcie-sys-4nodes-adaptive"]
	if ae.Cluster.Fabric == nil || len(ae.Cluster.Fabric.Bundles()) == 0 {
		t.Fatal("the adaptive fat-tree has no bundles: the case shows nothing")
	}
	// Each kind of virtual link has its own class: a bundle is network, a
	// cross-socket link PCIe.
	nb := len(ae.Cluster.Fabric.Bundles())
	classes, names := ae.VirtualLinkClasses()
	if len(classes) <= nb {
		t.Fatalf("%d virtual links, %d of them bundles: no cross-socket link", len(classes), nb)
	}
	for i := range classes {
		want, wantName := model.LatNet, "fabric"
		if i >= nb {
			want, wantName = model.LatPCI, "cross-socket P2P"
		}
		if classes[i] != want || names[i] != wantName {
			t.Errorf("virtual link %d: class %v %q, want %v %q", i, classes[i], names[i], want, wantName)
		}
	}
	for _, cl := range clusters {
		envs[cl.name] = newEnv(t, cl.o)
	}
	clusters = append(clusters, struct {
		name string
		o    scenarios.Overrides
		nvls []string
	}{name: "pcie-sys-4nodes-adaptive"})
	for _, cl := range clusters {
		e := envs[cl.name]
		for coll, names := range algos {
			for _, name := range names {
				for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", cl.name, coll, nameOr(name), eng), func(t *testing.T) {
						req := sim.Request{Coll: coll, Engine: eng, ElemSize: 4}
						if name != "" {
							a, err := model.ParseAlgo(name)
							if err != nil {
								t.Fatal(err)
							}
							req.Algo = &a
						}
						for _, size := range sizes {
							p, err := e.Predict(context.Background(), req, size)
							if err != nil {
								isNVLS := name == "nvls" || name == "nvlstree"
								if isNVLS && !slices.Contains(cl.nvls, name) && strings.Contains(err.Error(), "no enabled algorithm") {
									// Not applicable: NCCL refuses it too.
									return
								}
								t.Fatalf("%d B: %v", size, err)
							}
							if !(p.TimeUs > 0) {
								t.Fatalf("%d B: time %v us, want > 0", size, p.TimeUs)
							}
						}
					})
				}
			}
		}
	}
}

func nameOr(s string) string {
	if s == "" {
		return "auto"
	}
	return s
}
