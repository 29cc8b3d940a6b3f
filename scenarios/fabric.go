package scenarios

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// fabricKeys lists the keys of the fabric: mapping.
const fabricKeys = "kind, tiers, radix, nodes_per_leaf, oversubscription, planes, routing, sharp, placement, degraded, background, switch_latency_ns"

// fabricDoc remembers where each fabric key sits, so that errors found
// later (when the fabric is sized) point at the key.
type fabricDoc struct {
	node  *yaml.Node
	vals  map[string]*yaml.Node
	items map[string][]*yaml.Node
}

// decodeFabric reads the fabric key: a kind name, or a mapping of the keys
// in fabricKeys. Every value is checked here; errors name file:line:col and
// the key.
func decodeFabric(file string, v *yaml.Node) (model.FabricSpec, *fabricDoc, error) {
	var f model.FabricSpec
	doc := &fabricDoc{node: v, vals: map[string]*yaml.Node{}, items: map[string][]*yaml.Node{}}
	if v.Kind == yaml.ScalarNode {
		f.Kind = v.Value
		doc.vals["kind"] = v
		return f, doc, doc.check(file, f.Validate())
	}
	if v.Kind != yaml.MappingNode {
		return f, doc, errAt(file, v, "fabric must be a kind name or a mapping (%s)", fabricKeys)
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if _, dup := doc.vals[k.Value]; dup {
			return f, doc, errAt(file, k, "fabric: duplicate key %q", k.Value)
		}
		doc.vals[k.Value] = val
		key := "fabric." + k.Value
		var err error
		switch k.Value {
		case "kind":
			f.Kind, err = scalarText(file, val, key)
		case "tiers":
			f.Tiers, err = intValue(file, val, key, 2, 3)
		case "radix":
			f.Radix, err = intValue(file, val, key, 2, 1024)
		case "nodes_per_leaf":
			f.NodesPerLeaf, err = intValue(file, val, key, 1, model.MaxRanks)
		case "planes":
			f.Planes, err = intValue(file, val, key, 1, 64)
		case "routing":
			f.Routing, err = scalarText(file, val, key)
		case "sharp":
			f.SHARP, err = fabricBool(file, val, key)
		case "switch_latency_ns":
			f.SwitchLatencyNs, err = floatValue(file, val, key)
		case "oversubscription":
			err = decodeOversub(file, val, &f)
		case "placement":
			switch val.Kind {
			case yaml.SequenceNode:
				f.Placement = string(model.PlacementExplicit)
				doc.items["placement"] = val.Content
				for _, it := range val.Content {
					s, err := intValue(file, it, "fabric.placement", 0, model.MaxRanks-1)
					if err != nil {
						return f, doc, err
					}
					f.Slots = append(f.Slots, s)
				}
			default:
				f.Placement, err = scalarText(file, val, key)
				if err == nil && strings.EqualFold(strings.TrimSpace(f.Placement), string(model.PlacementExplicit)) {
					err = errAt(file, val, "%s: explicit placement is written as the list of node slots, e.g. [0, 4, 8, 12]", key)
				}
			}
		case "degraded":
			if val.Kind != yaml.SequenceNode {
				return f, doc, errAt(file, val, "%s: want a list such as [{link: node3/nic2, gbps: 200}, {link: leaf1/up0, down: true}]", key)
			}
			doc.items["degraded"] = val.Content
			for _, it := range val.Content {
				var d model.DegradedLink
				if err := strictDecode(file, it, &d); err != nil {
					return f, doc, err
				}
				f.Degraded = append(f.Degraded, d)
			}
		case "background":
			if val.Kind != yaml.SequenceNode {
				return f, doc, errAt(file, val, "%s: want a list such as [{collective: alltoall, nodes: 32, size: 1G}]", key)
			}
			doc.items["background"] = val.Content
			for _, it := range val.Content {
				var b model.BackgroundJob
				if err := strictDecode(file, it, &b); err != nil {
					return f, doc, err
				}
				f.Background = append(f.Background, b)
			}
		default:
			return f, doc, errAt(file, k, "fabric: unknown key %q (known: %s)", k.Value, fabricKeys)
		}
		if err != nil {
			return f, doc, err
		}
	}
	return f, doc, doc.check(file, f.Validate())
}

// check turns a *model.FabricError into an error at the key's position.
func (d *fabricDoc) check(file string, err error) error {
	if err == nil {
		return nil
	}
	var fe *model.FabricError
	if d == nil || !errors.As(err, &fe) {
		return err
	}
	at := d.node
	if v, ok := d.vals[fe.Key]; ok {
		at = v
	}
	if its := d.items[fe.Key]; fe.Item >= 0 && fe.Item < len(its) {
		at = its[fe.Item]
		if fe.Sub != "" {
			if k := valueOf(at, fe.Sub); k != nil {
				at = k
			}
		}
	}
	return errAt(file, at, "fabric.%s", fe.Error())
}

// valueOf returns the value of key name in mapping n, or nil.
func valueOf(n *yaml.Node, name string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == name {
			return n.Content[i+1]
		}
	}
	return nil
}

// decodeOversub reads oversubscription: a number (2, "2:1") or, for three
// tiers, a list [leaf, spine].
func decodeOversub(file string, v *yaml.Node, f *model.FabricSpec) error {
	one := func(n *yaml.Node) (float64, error) {
		s := strings.TrimSpace(n.Value)
		s = strings.TrimSuffix(s, ":1")
		x, err := strconv.ParseFloat(s, 64)
		if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(x) {
			return 0, errAt(file, n, "fabric.oversubscription: want a ratio such as 1, 2 or 3:1, got %s", gotWords(n))
		}
		if x < 1 {
			return 0, errAt(file, n, "fabric.oversubscription: %g is below 1 (down:up; 1 is non-blocking)", x)
		}
		return x, nil
	}
	if v.Kind == yaml.SequenceNode {
		if len(v.Content) < 1 || len(v.Content) > 2 {
			return errAt(file, v, "fabric.oversubscription: want [leaf, spine], got %d entries", len(v.Content))
		}
		var err error
		if f.Oversubscription, err = one(v.Content[0]); err != nil {
			return err
		}
		if len(v.Content) == 2 {
			if f.SpineOversubscription, err = one(v.Content[1]); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	f.Oversubscription, err = one(v)
	return err
}

func fabricBool(file string, v *yaml.Node, key string) (bool, error) {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		return false, errAt(file, v, "%s: want true or false, got %s", key, gotWords(v))
	}
	return b, nil
}

func floatValue(file string, v *yaml.Node, key string) (float64, error) {
	x, err := strconv.ParseFloat(strings.TrimSpace(v.Value), 64)
	if v.Kind != yaml.ScalarNode || err != nil {
		return 0, errAt(file, v, "%s: want a number, got %s", key, gotWords(v))
	}
	return x, nil
}

// nicKeys lists the keys of the nics: mapping.
const nicKeys = "count, speed, kind, stack, gdr, ports, pcie, roce"

// decodeNICMap reads the mapping form of nics; roce starts from the
// defaults of a well-configured fabric, so only the keys given change, and
// dcqcn follows ecn unless given.
func decodeNICMap(file string, v *yaml.Node) (model.NICSpec, error) {
	var ns model.NICSpec
	if v.Kind != yaml.MappingNode {
		return ns, errAt(file, v, "nics: want COUNTxSPEED-KIND or a mapping (%s), got %s", nicKeys, nodeWords(v))
	}
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: v.Line, Column: v.Column}
	var roceNode *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		if v.Content[i].Value == "roce" {
			roceNode = v.Content[i+1]
			continue
		}
		rest.Content = append(rest.Content, v.Content[i], v.Content[i+1])
	}
	if err := strictDecode(file, rest, &ns); err != nil {
		return ns, err
	}
	if ns.Ports < 0 || ns.Ports > 8 || (ns.Ports == 0 && valueOf(v, "ports") != nil) {
		// 0 is how the decoder leaves ports not given; given, it is no port.
		return ns, errAt(file, valueOrNode(v, "ports"), "nics.ports: %d is outside 1..8", ns.Ports)
	}
	if ns.PCIe != "" {
		if _, err := model.ParsePCIeGen(ns.PCIe); err != nil {
			return ns, errAt(file, valueOrNode(v, "pcie"), "nics.pcie: %v", err)
		}
	}
	if roceNode == nil {
		return ns, nil
	}
	if roceNode.Kind != yaml.MappingNode {
		return ns, errAt(file, roceNode, "nics.roce: want a mapping (pfc, ecn, dcqcn, mtu, loss_rate, retransmit, gid_index)")
	}
	r := model.DefaultRoCE()
	if err := strictDecode(file, roceNode, &r); err != nil {
		return ns, err
	}
	if valueOf(roceNode, "dcqcn") == nil {
		r.DCQCN = r.ECN
	}
	if rt, err := model.ParseRetransmit(string(r.Retransmit)); err == nil {
		r.Retransmit = rt
	}
	if err := r.Validate(); err != nil {
		key, _, _ := strings.Cut(err.Error(), ":")
		return ns, errAt(file, valueOrNode(roceNode, key), "nics.roce.%v", err)
	}
	ns.RoCE = &r
	return ns, nil
}

func valueOrNode(n *yaml.Node, key string) *yaml.Node {
	if v := valueOf(n, key); v != nil {
		return v
	}
	return n
}
