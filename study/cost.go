package study

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// CostItem is one line of a design's cost.
type CostItem struct {
	// Item names what is priced: "GPU H100-SXM", "NIC ib-400G",
	// "switch port ib-400G", "server dgx-h100", "energy".
	Item string
	// Key is the catalog entry used, as PriceCatalog.Terms names it ("GPU H100-SXM",
	// "power dgx-h100").
	Key string
	// Qty units at Unit each make USD.
	Qty  float64
	Unit scenarios.Price
	USD  float64
}

// Cost is what a design costs.
type Cost struct {
	Items []CostItem
	// CapexUSD is the hardware, EnergyUSD the energy over the period,
	// TotalUSD their sum.
	CapexUSD, EnergyUSD, TotalUSD float64
	// Ports is the number of switch ports priced; Fabric says how they
	// were counted.
	Ports  int
	Fabric string
}

// lookupNode finds the price of a node template, falling back to default.
func lookupNode(m map[string]scenarios.Price, node string) (scenarios.Price, string, bool) {
	if p, ok := m[node]; ok && node != "" {
		return p, node, true
	}
	p, ok := m["default"]
	return p, "default", ok
}

func keys(m map[string]scenarios.Price) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) == 0 {
		return "none"
	}
	return strings.Join(ks, ", ")
}

// Price prices a cluster at catalog c: its GPUs, NICs, switch ports
// (FabricPorts), servers and, when the catalog has power, the energy over
// the period. A part without a price is an error naming the part and the
// file. It runs in time linear in the number of leaves.
func Price(c *scenarios.PriceCatalog, spec model.ClusterSpec) (Cost, error) {
	var out Cost
	gpu, err := model.LookupGPU(spec.Node.GPU)
	if err != nil {
		return out, err
	}
	gpus := spec.Node.GPUs
	if spec.GPUsPerNode > 0 {
		gpus = spec.GPUsPerNode
	}
	nodes := float64(spec.Nodes)
	add := func(item string, qty float64, p scenarios.Price) {
		usd := qty * p.Value
		out.Items = append(out.Items, CostItem{Item: item, Key: item, Qty: qty, Unit: p, USD: usd})
		out.CapexUSD += usd
	}
	gp, ok := c.GPU[gpu.Name]
	if !ok {
		return out, fmt.Errorf("no price for GPU %q in %s (priced: %s)", gpu.Name, c.File, keys(c.GPU))
	}
	add("GPU "+gpu.Name, nodes*float64(gpus), gp)
	node := spec.Node.Name
	sp, key, ok := lookupNode(c.Server, node)
	if !ok {
		return out, fmt.Errorf("no server price for node %q in %s and no default (priced: %s)", nodeLabel(node), c.File, keys(c.Server))
	}
	add("server "+key, nodes, sp)
	if n := spec.Node.NICs; n.Count > 0 {
		kind, err := model.ParseNICKind(n.Kind)
		if err != nil {
			return out, err
		}
		speed, err := model.LookupNICSpeed(n.Speed, kind)
		if err != nil {
			return out, err
		}
		nk := scenarios.NICKey(kind, speed.Gbps)
		np, ok := c.NIC[nk]
		if !ok {
			return out, fmt.Errorf("no price for NIC %q in %s (priced: %s)", nk, c.File, keys(c.NIC))
		}
		add("NIC "+nk, nodes*float64(n.Count), np)
		ports, how := FabricPorts(spec, int(c.SwitchRadix.Value))
		out.Ports, out.Fabric = ports, how
		if ports > 0 {
			pp, ok := c.SwitchPort[nk]
			if !ok {
				return out, fmt.Errorf("no price for switch port %q in %s (priced: %s)", nk, c.File, keys(c.SwitchPort))
			}
			add("switch port "+nk, float64(ports), pp)
		}
	}
	if c.PowerKW != nil {
		kw, key, ok := lookupNode(c.PowerKW, node)
		if !ok {
			return out, fmt.Errorf("no power for node %q in %s and no default (given: %s)", nodeLabel(node), c.File, keys(c.PowerKW))
		}
		kwh := nodes * kw.Value * 8760 * c.Years.Value
		out.EnergyUSD = kwh * c.USDPerKWh.Value
		out.Items = append(out.Items, CostItem{Item: fmt.Sprintf("energy (%s: %g kW per node, %g years)", key, kw.Value, c.Years.Value), Key: "power " + key, Qty: kwh, Unit: c.USDPerKWh, USD: out.EnergyUSD})
	}
	out.TotalUSD = out.CapexUSD + out.EnergyUSD
	return out, nil
}

func nodeLabel(n string) string {
	if n == "" {
		return "custom node"
	}
	return n
}

// FabricPorts counts the switch ports a cluster's fabric needs and says
// how. One node needs none. A single-switch (non-blocking) fabric uses one
// port per NIC while one switch of radix ports holds them all, and
// otherwise a non-blocking folded Clos (fat tree) of t tiers, which
// connects radix^t / 2^(t-1) NICs with 2t-1 ports per NIC. A leaf-spine
// fabric uses, per leaf, one port per NIC below it plus
// ceil(downlinks / oversubscription) uplink ports on the leaf and as many
// on the spine.
func FabricPorts(spec model.ClusterSpec, radix int) (int, string) {
	nics := spec.Node.NICs.Count
	if spec.Nodes <= 1 || nics <= 0 {
		return 0, "no fabric (one node)"
	}
	down := spec.Nodes * nics
	if spec.Fabric.Kind == "leaf-spine" && spec.Fabric.NodesPerLeaf > 0 {
		over := spec.Fabric.Oversubscription
		if over < 1 {
			over = 1
		}
		ports, leaves := 0, 0
		for first := 0; first < spec.Nodes; first += spec.Fabric.NodesPerLeaf {
			d := (min(spec.Nodes, first+spec.Fabric.NodesPerLeaf) - first) * nics
			up := int(math.Ceil(float64(d)/over - 1e-9))
			ports += d + 2*up
			leaves++
		}
		return ports, fmt.Sprintf("leaf-spine: %d leaves of %d node(s), %g:1, %d ports", leaves, spec.Fabric.NodesPerLeaf, over, ports)
	}
	if radix < 2 {
		radix = 2
	}
	capacity := float64(radix)
	for t := 1; t <= 8; t++ {
		if float64(down) <= capacity {
			ports := down * (2*t - 1)
			if t == 1 {
				return ports, fmt.Sprintf("one %d-port switch, %d ports", radix, ports)
			}
			return ports, fmt.Sprintf("non-blocking %d-tier fat tree of %d-port switches, %d ports", t, radix, ports)
		}
		capacity *= float64(radix) / 2
	}
	return down * 15, fmt.Sprintf("non-blocking 8-tier fat tree of %d-port switches, %d ports", radix, down*15)
}
