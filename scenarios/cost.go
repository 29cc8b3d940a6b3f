package scenarios

import (
	_ "embed"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// examplePrices is the embedded example price catalog; ExamplePrices
// parses a fresh copy on every call.
//
//go:embed prices_example.yaml
var examplePrices []byte

// ExamplePricesName is the file name errors and reports give the embedded
// example price catalog.
const ExamplePricesName = "prices_example.yaml (embedded)"

// ExampleNotice is what every result priced with example prices says.
const ExampleNotice = "example prices, replace with your quotes"

// Price is one number of a price catalog with where it comes from.
type Price struct {
	// Value is in the unit of its section: US dollars for prices, kW for
	// power, ports for the switch radix, years for the period.
	Value float64
	// Source cites the value; for a bare number in a file it is the file
	// position.
	Source string
	// Assumption is true when no public figure stands behind the value.
	Assumption bool
}

// Cite returns the source, marked "assumption: " when it is one.
func (p Price) Cite() string {
	if p.Assumption {
		return "assumption: " + p.Source
	}
	return p.Source
}

// PriceCatalog is a cost model: prices per GPU model, per NIC and per
// switch port by kind and speed, per server by node template, and
// optionally power per node with an energy price and a period. The
// embedded ExamplePrices is one; users give their own with --prices.
type PriceCatalog struct {
	// File is where the catalog was read from.
	File string
	// Example is true for example prices (not quotes); results then carry
	// ExampleNotice.
	Example bool
	// Title, Currency and Date describe the catalog.
	Title, Currency, Date string
	// GPU is keyed by catalog GPU name ("H100-SXM").
	GPU map[string]Price
	// NIC and SwitchPort are keyed by NICKey ("ib-400G").
	NIC, SwitchPort map[string]Price
	// SwitchRadix is the number of ports of one switch.
	SwitchRadix Price
	// Server prices a node without its GPUs and NICs, keyed by node
	// template name; "default" prices any other node.
	Server map[string]Price
	// PowerKW is the power of one node in kW by template ("default" for
	// others); nil means energy is not priced.
	PowerKW map[string]Price
	// USDPerKWh and Years price the energy: nodes × kW × 8760 h × Years ×
	// USDPerKWh.
	USDPerKWh, Years Price
}

// CostItem is one line of a design's cost.
type CostItem struct {
	// Item names what is priced: "GPU H100-SXM", "NIC ib-400G",
	// "switch port ib-400G", "server dgx-h100", "energy".
	Item string
	// Key is the catalog entry used, as Terms names it ("GPU H100-SXM",
	// "power dgx-h100").
	Key string
	// Qty units at Unit each make USD.
	Qty  float64
	Unit Price
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

// NICKey is the price key of a NIC or switch port: "ib-400G" for kind ib
// at 400 Gb/s (NDR and 400G are the same key).
func NICKey(kind model.NICKind, gbps int) string {
	return fmt.Sprintf("%s-%dG", kind, gbps)
}

// parseNICKey reads "KIND-SPEED" ("ib-NDR", "roce-400G") into its
// canonical key.
func parseNICKey(s string) (string, error) {
	k, sp, ok := strings.Cut(strings.TrimSpace(s), "-")
	if !ok {
		return "", fmt.Errorf("want KIND-SPEED such as ib-400G or roce-100G, got %q", s)
	}
	kind, err := model.ParseNICKind(k)
	if err != nil {
		return "", err
	}
	speed, err := model.LookupNICSpeed(sp, kind)
	if err != nil {
		return "", err
	}
	return NICKey(kind, speed.Gbps), nil
}

// ExamplePrices returns the embedded example price catalog, labelled as
// EXAMPLE list prices with the date and source of every figure.
func ExamplePrices() (*PriceCatalog, error) {
	return LoadPrices(ExamplePricesName, examplePrices)
}

// LoadPricesFile reads a price catalog file (schema: LoadPrices).
func LoadPricesFile(path string) (*PriceCatalog, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return LoadPrices(path, data)
}

// LoadPrices parses a price catalog. Errors name file:line:column. The
// schema (see prices_example.yaml and docs/sweep.md) is:
//
//	example: true                 # results say "example prices, replace with your quotes"
//	title: text
//	currency: USD
//	date: "2024-10"
//	gpu:         {H100-SXM: PRICE, ...}
//	nic:         {ib-400G: PRICE, roce-400G: PRICE, ...}
//	switch_port: {ib-400G: PRICE, ...}
//	switch_radix: {ports: 64, source: ...}
//	server:      {dgx-h100: PRICE, default: PRICE}
//	power:                        # optional
//	  kw_per_node: {dgx-h100: {kw: 10.2, source: ...}, default: ...}
//	  usd_per_kwh: {usd: 0.08, source: ...}
//	  years: {years: 3, source: ...}
//
// where PRICE is a bare number or {usd: N, source: "...", assumption: true}.
func LoadPrices(file string, data []byte) (*PriceCatalog, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty price file", file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errAt(file, root, "the price catalog must be a mapping (gpu, nic, switch_port, server, ...)")
	}
	c := &PriceCatalog{File: file, Currency: "USD", SwitchRadix: Price{Value: 64, Source: "default: 64-port switches", Assumption: true}}
	err := eachKey(file, root, func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "example":
			c.Example, err = boolValue(file, v, "example")
		case "title":
			c.Title = v.Value
		case "currency":
			c.Currency = v.Value
		case "date":
			c.Date = v.Value
		case "gpu":
			c.GPU, err = priceMap(file, v, "gpu", 0, func(s string) (string, error) {
				g, err := model.LookupGPU(s)
				return g.Name, err
			})
		case "nic":
			c.NIC, err = priceMap(file, v, "nic", 0, parseNICKey)
		case "switch_port":
			c.SwitchPort, err = priceMap(file, v, "switch_port", 0, parseNICKey)
		case "switch_radix":
			c.SwitchRadix, err = priceValue(file, v, "switch_radix", 2)
			if err == nil && c.SwitchRadix.Value != math.Trunc(c.SwitchRadix.Value) {
				err = errAt(file, v, "switch_radix: want a whole number of ports, got %g", c.SwitchRadix.Value)
			}
		case "server":
			c.Server, err = priceMap(file, v, "server", 0, nodeKey)
		case "power":
			err = c.decodePower(file, v)
		default:
			err = errAt(file, k, "unknown key %q (known: example, title, currency, date, gpu, nic, switch_port, switch_radix, server, power)", k.Value)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *PriceCatalog) decodePower(file string, v *yaml.Node) error {
	if v.Kind != yaml.MappingNode {
		return errAt(file, v, "power must be a mapping (kw_per_node, usd_per_kwh, years)")
	}
	var have [3]bool
	err := eachKey(file, v, func(k, x *yaml.Node) error {
		var err error
		switch k.Value {
		case "kw_per_node":
			c.PowerKW, err = priceMap(file, x, "power.kw_per_node", 0, nodeKey)
			have[0] = true
		case "usd_per_kwh":
			c.USDPerKWh, err = priceValue(file, x, "power.usd_per_kwh", 0)
			have[1] = true
		case "years":
			c.Years, err = priceValue(file, x, "power.years", 0)
			if err == nil && c.Years.Value > 50 {
				err = errAt(file, x, "power.years: %g is more than 50", c.Years.Value)
			}
			have[2] = true
		default:
			err = errAt(file, k, "unknown key %q (known: kw_per_node, usd_per_kwh, years)", k.Value)
		}
		return err
	})
	if err != nil {
		return err
	}
	for i, k := range []string{"kw_per_node", "usd_per_kwh", "years"} {
		if !have[i] {
			return errAt(file, v, "power: missing key %q (power needs kw_per_node, usd_per_kwh and years)", k)
		}
	}
	return nil
}

// nodeKey checks a server or power key: a node template name or "default".
func nodeKey(s string) (string, error) {
	if s == "default" {
		return s, nil
	}
	p, err := LookupPreset(s)
	if err != nil {
		return "", fmt.Errorf("%v (or default)", err)
	}
	return p.Name, nil
}

func boolValue(file string, v *yaml.Node, key string) (bool, error) {
	b, err := strconv.ParseBool(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil {
		return false, errAt(file, v, "%s: want true or false, got %q", key, v.Value)
	}
	return b, nil
}

// priceMap reads a mapping of key -> price; norm checks and canonicalises
// each key. Two spellings of one key are an error.
func priceMap(file string, v *yaml.Node, section string, lo float64, norm func(string) (string, error)) (map[string]Price, error) {
	if v.Kind != yaml.MappingNode {
		return nil, errAt(file, v, "%s must be a mapping of names to prices", section)
	}
	out := map[string]Price{}
	err := eachKey(file, v, func(k, x *yaml.Node) error {
		key, err := norm(k.Value)
		if err != nil {
			return errAt(file, k, "%s: %v", section, err)
		}
		if _, dup := out[key]; dup {
			return errAt(file, k, "%s: %q is given twice (as %s)", section, k.Value, key)
		}
		p, err := priceValue(file, x, section+"."+k.Value, lo)
		if err != nil {
			return err
		}
		out[key] = p
		return nil
	})
	return out, err
}

// priceValue reads a bare number or {usd|kw|ports|years|value: N, source,
// assumption}; the value must be finite and at least lo.
func priceValue(file string, v *yaml.Node, key string, lo float64) (Price, error) {
	var p Price
	num := func(n *yaml.Node) error {
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return errAt(file, n, "%s: want a number, got %q", key, n.Value)
		}
		if f < lo {
			return errAt(file, n, "%s: %g is below %g", key, f, lo)
		}
		p.Value = f
		return nil
	}
	switch v.Kind {
	case yaml.ScalarNode:
		p.Source = fmt.Sprintf("%s:%d:%d", file, v.Line, v.Column)
		return p, num(v)
	case yaml.MappingNode:
	default:
		return p, errAt(file, v, "%s: want a number or {usd: N, source: ...}", key)
	}
	var have bool
	err := eachKey(file, v, func(k, x *yaml.Node) error {
		switch k.Value {
		case "usd", "kw", "ports", "years", "value":
			if have {
				return errAt(file, k, "%s: more than one value", key)
			}
			have = true
			return num(x)
		case "source":
			p.Source = strings.TrimSpace(x.Value)
		case "assumption":
			b, err := boolValue(file, x, key+".assumption")
			p.Assumption = b
			return err
		default:
			return errAt(file, k, "%s: unknown key %q (known: usd, kw, ports, years, value, source, assumption)", key, k.Value)
		}
		return nil
	})
	if err != nil {
		return p, err
	}
	if !have {
		return p, errAt(file, v, "%s: missing the value (usd, kw, ports, years or value)", key)
	}
	if p.Source == "" {
		p.Source = fmt.Sprintf("%s:%d:%d", file, v.Line, v.Column)
	}
	return p, nil
}

// Label describes the catalog in one line for outputs: its title or file,
// its date and, for example prices, ExampleNotice.
func (c *PriceCatalog) Label() string {
	s := c.File
	if c.Title != "" {
		s = c.Title + " (" + c.File + ")"
	}
	if c.Date != "" {
		s += ", " + c.Date
	}
	if c.Example {
		s += ": " + ExampleNotice
	}
	return s
}

// lookupNode finds the price of a node template, falling back to default.
func lookupNode(m map[string]Price, node string) (Price, string, bool) {
	if p, ok := m[node]; ok && node != "" {
		return p, node, true
	}
	p, ok := m["default"]
	return p, "default", ok
}

func keys(m map[string]Price) string {
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

// Cost prices a cluster: its GPUs, NICs, switch ports (FabricPorts),
// servers and, when the catalog has power, the energy over the period. A
// part without a price is an error naming the part and the file. It runs
// in time linear in the number of leaves.
func (c *PriceCatalog) Cost(spec model.ClusterSpec) (Cost, error) {
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
	add := func(item string, qty float64, p Price) {
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
		nk := NICKey(kind, speed.Gbps)
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

// Terms lists every figure of the catalog with its source, sorted by
// section and key, for the assumptions of a report. When used is not nil
// only the entries it holds (by CostItem.Key) are listed, with the radix
// and the energy price and period.
func (c *PriceCatalog) Terms(used map[string]bool) []Term {
	var out []Term
	section := func(prefix, unit string, m map[string]Price) {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			name := prefix + " " + k
			if used != nil && !used[name] {
				continue
			}
			out = append(out, Term{Name: "price: " + name, Value: formatValue(m[k].Value, unit), Source: m[k].Cite()})
		}
	}
	cur := c.Currency
	section("GPU", cur, c.GPU)
	section("NIC", cur, c.NIC)
	section("switch port", cur, c.SwitchPort)
	section("server", cur, c.Server)
	out = append(out, Term{Name: "price: switch radix", Value: formatValue(c.SwitchRadix.Value, "ports"), Source: c.SwitchRadix.Cite()})
	if c.PowerKW != nil {
		section("power", "kW per node", c.PowerKW)
		out = append(out,
			Term{Name: "price: energy", Value: formatValue(c.USDPerKWh.Value, cur+"/kWh"), Source: c.USDPerKWh.Cite()},
			Term{Name: "price: energy period", Value: formatValue(c.Years.Value, "years"), Source: c.Years.Cite()})
	}
	return out
}

func formatValue(v float64, unit string) string {
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
}
