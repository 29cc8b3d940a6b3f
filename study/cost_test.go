package study

import (
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// TestPricePresets: every preset's GPU and NICs are priced by the example
// catalog (EFA aside, which is not sold).
func TestPricePresets(t *testing.T) {
	c, err := scenarios.ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range scenarios.Presets() {
		spec := model.ClusterSpec{Node: p.Node, Nodes: 2}
		if _, err := Price(c, spec); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

// TestPrice checks a small design by hand: 2 dgx-h100 with 8x NDR on one
// 64-port switch = 16 GPUs, 16 NICs, 16 ports, 2 servers, 2 x 10.2 kW.
func TestPrice(t *testing.T) {
	c, err := scenarios.ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := scenarios.LookupPreset("dgx-h100")
	cost, err := Price(c, model.ClusterSpec{Node: p.Node, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	capex := 16*27500.0 + 2*30000 + 16*2500 + 16*672
	energy := 2 * 10.2 * 8760 * 3 * 0.08
	if math.Abs(cost.CapexUSD-capex) > 1e-6 || math.Abs(cost.EnergyUSD-energy) > 1e-6 || cost.Ports != 16 {
		t.Errorf("cost = %+v, want capex %v energy %v", cost, capex, energy)
	}
	// A catalog without a price for the GPU names it.
	cat, err := scenarios.LoadPrices("p.yaml", []byte("gpu: {H100-SXM: 1}\nnic: {ib-400G: 1}\nswitch_port: {ib-400G: 1}\nserver: {default: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := scenarios.LookupPreset("dgx-b200")
	_, err = Price(cat, model.ClusterSpec{Node: b.Node, Nodes: 2})
	if err == nil || !strings.Contains(err.Error(), `no price for GPU "B200" in p.yaml (priced: H100-SXM)`) {
		t.Errorf("missing GPU price: %v", err)
	}
	// Bare numbers cite their position.
	if cat.GPU["H100-SXM"].Source != "p.yaml:1:17" {
		t.Errorf("source = %q", cat.GPU["H100-SXM"].Source)
	}
}

// TestFabricPorts: ports per NIC by fabric; the Clos sizes follow
// radix^t / 2^(t-1) NICs for t tiers with 2t-1 ports per NIC.
func TestFabricPorts(t *testing.T) {
	p, _ := scenarios.LookupPreset("dgx-h100") // 8 NICs per node
	tests := []struct {
		nodes int
		fab   model.FabricSpec
		want  int
	}{
		{1, model.FabricSpec{}, 0},
		{8, model.FabricSpec{}, 64},         // 64 NICs: one 64-port switch
		{16, model.FabricSpec{}, 128 * 3},   // 128 NICs: 2 tiers
		{512, model.FabricSpec{}, 4096 * 5}, // 4096 NICs > 64*32 = 2048: 3 tiers
		{8, model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 4, Oversubscription: 2}, 64 + 2*32},
		{5, model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 4, Oversubscription: 3}, 40 + 2*(11+3)}, // 32/3 -> 11, 8/3 -> 3
	}
	for _, tc := range tests {
		got, how := FabricPorts(model.ClusterSpec{Node: p.Node, Nodes: tc.nodes, Fabric: tc.fab}, 64)
		if got != tc.want {
			t.Errorf("%d nodes %+v: %d ports (%s), want %d", tc.nodes, tc.fab, got, how, tc.want)
		}
	}
}
