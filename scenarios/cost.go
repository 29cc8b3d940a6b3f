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
// optionally power per node with an energy price and a period (study.Price
// applies it to a design). The embedded ExamplePrices is one; users give
// their own with --prices.
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
	doc, err := parseYAML(file, "price file", data)
	if err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty price file", file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errAt(file, root, "the price catalog must be a mapping (gpu, nic, switch_port, server, ...)")
	}
	c := &PriceCatalog{File: file, Currency: "USD", SwitchRadix: Price{Value: 64, Source: "default: 64-port switches", Assumption: true}}
	err = eachKey(file, root, func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "example":
			c.Example, err = boolValue(file, v, "example")
		case "title":
			c.Title, err = scalarText(file, v, "title")
		case "currency":
			c.Currency, err = scalarText(file, v, "currency")
		case "date":
			c.Date, err = scalarText(file, v, "date")
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
		return false, errAt(file, v, "%s: want true or false, got %s", key, gotWords(v))
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
			return errAt(file, n, "%s: want a number, got %s", key, gotWords(n))
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
		return p, errAt(file, v, "%s: want a number or {usd: N, source: ...}, got %s", key, nodeWords(v))
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
			src, err := scalarText(file, x, key+".source")
			p.Source = strings.TrimSpace(src)
			return err
		case "assumption":
			b, err := boolValue(file, x, key+".assumption")
			p.Assumption = b
			return err
		default:
			return errAt(file, k, "%s: unknown key %q (known: usd, kw, ports, years, value, source, assumption)", key, k.Value)
		}
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

func nodeLabel(n string) string {
	if n == "" {
		return "custom node"
	}
	return n
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
