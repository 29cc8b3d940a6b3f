package sim

import (
	"reflect"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// TestTreeEdgesShared: the tree edges an Env keeps from one call to the
// next (Env.treeEdges) give every call the DES schedule and the analytic
// form a fresh Env gives it, op for op and demand for demand, when the
// calls change channel count and protocol back and forth, with and
// without bundles, on a single switch and on an ECMP fabric whose tree
// hops split over routes (edgeFlows).
func TestTreeEdgesShared(t *testing.T) {
	ecmp, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_IB_QPS_PER_CONNECTION=4"}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	ecmp.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "ecmp"}
	single, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 4}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	tree := model.AlgoTree
	calls := []struct {
		proto model.Proto
		nc    int
		size  model.Bytes
	}{
		{model.ProtoLL, 2, 64 << 10}, {model.ProtoLL128, 8, 1 << 20}, {model.ProtoLL, 2, 128 << 10},
		{model.ProtoLL128, 8, 4 << 20}, {model.ProtoSimple, 4, 16 << 20}, {model.ProtoLL128, 8, 2 << 20},
	}
	for name, spec := range map[string]model.ClusterSpec{"ecmp": ecmp, "single switch": single} {
		warm := internalEnv(t, spec)
		for _, bundled := range []bool{true, false} {
			for _, c := range calls {
				call := Call{Coll: model.AllReduce, Bytes: c.size, Choice: model.Choice{Algo: tree, Proto: c.proto, Channels: c.nc}}
				cold := internalEnv(t, spec)
				opts := func(e *Env) desOpts {
					o := desOpts{window: 4}
					if bundled {
						o.bundleCaps = e.caps
					}
					return o
				}
				got, err := warm.program(call, true, opts(warm))
				if err != nil {
					t.Fatal(err)
				}
				want, err := cold.program(call, true, opts(cold))
				if err != nil {
					t.Fatal(err)
				}
				if !sameSchedule(got.sched, want.sched) {
					t.Errorf("%s, bundled %v, %s %d channels %s: the schedule differs from a fresh Env's", name, bundled, c.proto, c.nc, model.FormatBytes(c.size))
				}
				fg, err := warm.closedForm(call)
				if err != nil {
					t.Fatal(err)
				}
				fw, err := cold.closedForm(call)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(fg, fw) {
					t.Errorf("%s, %s %d channels %s: the analytic form differs from a fresh Env's", name, c.proto, c.nc, model.FormatBytes(c.size))
				}
			}
		}
	}
}

// TestNVLSTreeRefGraph: the NVLS graph nvls.warp.gbps.hopper's source
// compares NCCL's NVLSTree ceiling with (nvlsTreeRef*) is the one the
// model's NCCL search finds on 2 x DGX H100 with 8x NDR400.
func TestNVLSTreeRefGraph(t *testing.T) {
	spec, err := scenarios.Overrides{Node: "dgx-h100", Nodes: nvlsTreeRefNodes, NICs: "8x400G-ib"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	e := internalEnv(t, spec)
	c := e.Cluster
	g := e.Tuner.Graphs.NVLS
	if g == nil || g.NChannels != nvlsTreeRefGraphCh || float64(g.BWIntra) != nvlsTreeRefBWIntra || float64(g.BWInter) != nvlsTreeRefBWInter {
		t.Fatalf("NVLS graph %+v, the term's source says %d channels of %g/%g GB/s", g, nvlsTreeRefGraphCh, nvlsTreeRefBWIntra, nvlsTreeRefBWInter)
	}
	if c.GPUsPerNode() != nvlsTreeRefGPUs {
		t.Fatalf("%d GPUs per node, the source says %d", c.GPUsPerNode(), nvlsTreeRefGPUs)
	}
}

// internalEnv builds spec with the default parameters (specEnv for the
// package's own tests).
func internalEnv(t *testing.T, spec model.ClusterSpec) *Env {
	t.Helper()
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEnv(c, DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	return e
}
