package scenarios

import (
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestExamplePrices: the embedded catalog loads, is labelled as example
// prices, and every figure has a source.
func TestExamplePrices(t *testing.T) {
	c, err := ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	if !c.Example || !strings.Contains(c.Label(), ExampleNotice) || !strings.Contains(c.Title, "EXAMPLE") || c.Date == "" {
		t.Errorf("label %q, title %q, date %q", c.Label(), c.Title, c.Date)
	}
	for _, term := range c.Terms(nil) {
		if strings.TrimSpace(term.Source) == "" || strings.HasPrefix(term.Source, ExamplePricesName) {
			t.Errorf("%s has no source: %q", term.Name, term.Source)
		}
	}
	// Every preset's GPU and NICs are priced (EFA aside, which is not sold).
	for _, p := range Presets() {
		spec := model.ClusterSpec{Node: p.Node, Nodes: 2}
		if _, err := c.Cost(spec); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
}

// TestCost checks a small design by hand: 2 dgx-h100 with 8x NDR on one
// 64-port switch = 16 GPUs, 16 NICs, 16 ports, 2 servers, 2 x 10.2 kW.
func TestCost(t *testing.T) {
	c, err := ExamplePrices()
	if err != nil {
		t.Fatal(err)
	}
	p, _ := LookupPreset("dgx-h100")
	cost, err := c.Cost(model.ClusterSpec{Node: p.Node, Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	capex := 16*27500.0 + 2*30000 + 16*2500 + 16*672
	energy := 2 * 10.2 * 8760 * 3 * 0.08
	if math.Abs(cost.CapexUSD-capex) > 1e-6 || math.Abs(cost.EnergyUSD-energy) > 1e-6 || cost.Ports != 16 {
		t.Errorf("cost = %+v, want capex %v energy %v", cost, capex, energy)
	}
	// A catalog without a price for the GPU names it.
	cat, err := LoadPrices("p.yaml", []byte("gpu: {H100-SXM: 1}\nnic: {ib-400G: 1}\nswitch_port: {ib-400G: 1}\nserver: {default: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LookupPreset("dgx-b200")
	_, err = cat.Cost(model.ClusterSpec{Node: b.Node, Nodes: 2})
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
	p, _ := LookupPreset("dgx-h100") // 8 NICs per node
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

func TestLoadPricesErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{"gpu: {H900: 1}\n", "p.yaml:1:7: gpu: unknown GPU \"H900\""},
		{"nic: {ib-999G: 1}\n", "p.yaml:1:7: nic: unknown ib NIC speed"},
		{"nic: {ib-NDR: 1, ib-400G: 2}\n", "p.yaml:1:18: nic: \"ib-400G\" is given twice"},
		{"gpu: {B200: -5}\n", "p.yaml:1:13: gpu.B200: -5 is below 0"},
		{"gpu: {B200: {usd: 1, kw: 2}}\n", "p.yaml:1:22: gpu.B200: more than one value"},
		{"gpu: {B200: {source: x}}\n", "p.yaml:1:13: gpu.B200: missing the value"},
		{"server: {dgx-z: 1}\n", "p.yaml:1:10: server: unknown node template"},
		{"power: {usd_per_kwh: 0.1, years: 3}\n", "missing key \"kw_per_node\""},
		{"switch_radix: 1\n", "p.yaml:1:15: switch_radix: 1 is below 2"},
		{"bogus: 1\n", "p.yaml:1:1: unknown key \"bogus\""},
	}
	for _, tc := range tests {
		_, err := LoadPrices("p.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}
