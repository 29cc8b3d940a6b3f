package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// TestFabricBottleneckCountsItsFlows: the bottleneck line names a fabric
// link with the flows its routing put on it. A leaf's cables to one spine
// share a name ("fabric/leaf1->fabric/spine0"); the bottleneck used to be
// found again by that name, which is the first of those cables, and ECMP
// left some idle, so 16 DGX H100s with 8x 400G RoCE on a 1:1 fat-tree of
// 4 nodes per leaf printed "carries 0 ECMP flows" beside a link 87% busy
// (and examples/fabric.yaml's 2x100G-roce design at 1:1 did too). The
// count is that of the link the loads rank busiest, and never 0.
func TestFabricBottleneckCountsItsFlows(t *testing.T) {
	for _, c := range []struct {
		name  string
		o     scenarios.Overrides
		fab   model.FabricSpec
		coll  model.Collective
		bytes model.Bytes
	}{
		{"16x dgx-h100, 8x400G RoCE, fat-tree 4 per leaf 1:1 ECMP, AllGather 1G",
			scenarios.Overrides{Node: "dgx-h100", Nodes: 16, NICs: "8x400G-roce"},
			model.FabricSpec{Kind: "fat-tree", Tiers: 2, NodesPerLeaf: 4, Oversubscription: 1, Routing: "ecmp"},
			model.AllGather, 1 << 30},
		{"4x dgx-a100, 2x100G RoCE, leaf-spine 2 per leaf 1:1, AllReduce 256M",
			scenarios.Overrides{Node: "dgx-a100", Nodes: 4, NICs: "2x100G-roce"},
			model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 2, Oversubscription: 1},
			model.AllReduce, 256 << 20},
	} {
		spec, err := c.o.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		spec.Fabric = c.fab
		cl, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		e, err := NewEnv(cl, DefaultParams())
		if err != nil {
			t.Fatal(err)
		}
		pt, err := e.Predict(context.Background(), Request{Coll: c.coll, ElemSize: 4, Engine: EngineAnalytic}, c.bytes)
		if err != nil {
			t.Fatal(err)
		}
		// The link the loads rank busiest, as bottleneck ranks them, and
		// the flows the call's demands put on it.
		f, _, _, err := e.physicalForm(Call{Coll: c.coll, Bytes: pt.Size, Choice: pt.Choice})
		if err != nil {
			t.Fatal(err)
		}
		_, loads, _ := e.analytic(f, e.baseLat(pt.Choice))
		top, topBusy := -1, 0.0
		for l, ld := range loads {
			if ld > 0 && e.caps[l] > 0 && ld/e.caps[l] > topBusy {
				top, topBusy = l, ld/e.caps[l]
			}
		}
		if top < 0 || e.netLinkRole(model.LinkID(top)) != 2 {
			t.Fatalf("%s: the busiest link is %d, not a fabric port (bottleneck %q)", c.name, top, pt.Bottleneck)
		}
		var flows int32
		for _, d := range f.demands {
			for _, x := range d.route {
				if x == model.LinkID(top) {
					flows += max(d.weight, 1)
					break
				}
			}
		}
		want := fmt.Sprintf("%s (carries %d ", e.LinkName(model.LinkID(top)), flows)
		if flows == 0 || !strings.HasPrefix(pt.Bottleneck, want) {
			t.Errorf("%s: bottleneck %q, want it to begin %q", c.name, pt.Bottleneck, want)
		}
	}
}
