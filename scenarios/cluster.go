package scenarios

import (
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// defaultScenario is default.yaml; DefaultScenario hands out copies.
//
//go:embed default.yaml
var defaultScenario []byte

// DefaultScenario returns the YAML of the cluster `collsim predict` uses
// when no cluster is given: four DGX A100 nodes with only two 100G RoCEv2
// NICs each, the typical under-provisioned first cluster whose cross-node
// AllReduce crawls. Each call returns a fresh copy.
func DefaultScenario() []byte { return append([]byte(nil), defaultScenario...) }

// DefaultScenarioName is the file name errors in the embedded scenario cite.
const DefaultScenarioName = "default.yaml (embedded)"

// maxScenarioBytes bounds a cluster file.
const maxScenarioBytes = 4 << 20

// LoadFile reads a cluster YAML file.
func LoadFile(path string) (model.ClusterSpec, error) {
	data, err := readLimited(path)
	if err != nil {
		return model.ClusterSpec{}, err
	}
	return Load(path, data)
}

// posError is an error at a position in a YAML file.
type posError struct {
	file      string
	line, col int
	msg       string
}

func (e *posError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.file, e.line, e.col, e.msg)
}

func errAt(file string, n *yaml.Node, format string, a ...any) error {
	return &posError{file: file, line: n.Line, col: n.Column, msg: fmt.Sprintf(format, a...)}
}

// Load parses a cluster YAML document. Every error names file:line:column
// and the offending key. The schema (see README) is:
//
//	name: text
//	node: <preset name> | {template: <preset>, <NodeSpec fields to override>} | <full NodeSpec>
//	nodes: N
//	gpus_per_node: G
//	gpu: <GPU model replacing the template's>
//	nics: "4x200G-ib" | {count, speed, kind, stack, gdr, ports, pcie: gen4|gen5,
//	       roce: {pfc, ecn, dcqcn, mtu, loss_rate, retransmit: go-back-n|selective-repeat, gid_index}}
//	fabric: {kind: single-switch|fat-tree|leaf-spine|rail-optimized|rail-only, tiers, radix,
//	         nodes_per_leaf, oversubscription: r | [leaf, spine], planes, routing: static|ecmp|adaptive,
//	         sharp, placement: packed|scattered|[slots], degraded: [{link, gbps | down}],
//	         background: [{collective, nodes, size}], switch_latency_ns}
//	env: {NCCL_X: value, ...}
//	nccl_version: "2.21"
//	run: {launch: process-per-gpu|single-process, vm: true|false}
func Load(file string, data []byte) (model.ClusterSpec, error) {
	doc, err := parseYAML(file, "cluster file", data)
	if err != nil {
		return model.ClusterSpec{}, err
	}
	if len(doc.Content) == 0 {
		return model.ClusterSpec{}, fmt.Errorf("%s: empty cluster file", file)
	}
	return decodeCluster(file, doc.Content[0])
}

// decodeCluster reads a cluster mapping (the schema of Load) from a YAML
// node; the sweep's base uses it for an inline cluster.
func decodeCluster(file string, root *yaml.Node) (model.ClusterSpec, error) {
	if root.Kind != yaml.MappingNode {
		return model.ClusterSpec{}, errAt(file, root, "the cluster must be a mapping of keys (name, node, nodes, ...)")
	}
	var spec model.ClusterSpec
	var nodeSet bool
	var nodeAt *yaml.Node // the node key's value, for positions
	var gpu string
	var gpuNode *yaml.Node
	var nicsNode *yaml.Node
	var fab *fabricDoc
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return spec, errAt(file, k, "duplicate key %q", k.Value)
		}
		seen[k.Value] = true
		switch k.Value {
		case "name":
			name, err := scalarText(file, v, "name")
			if err != nil {
				return spec, err
			}
			spec.Name = name
		case "node":
			ns, err := decodeNode(file, v)
			if err != nil {
				return spec, err
			}
			spec.Node, nodeSet, nodeAt = ns, true, v
		case "nodes":
			n, err := intValue(file, v, "nodes", 1, model.MaxRanks)
			if err != nil {
				return spec, err
			}
			spec.Nodes = n
		case "gpus_per_node":
			n, err := intValue(file, v, "gpus_per_node", 1, model.MaxGPUsPerNode)
			if err != nil {
				return spec, err
			}
			spec.GPUsPerNode = n
		case "gpu":
			g, err := scalarText(file, v, "gpu")
			if err != nil {
				return spec, err
			}
			if strings.TrimSpace(g) == "" {
				return spec, errAt(file, v, "gpu: want a GPU model such as H100-SXM, got nothing")
			}
			gpu, gpuNode = g, v
		case "nics":
			nicsNode = v
		case "fabric":
			f, doc, err := decodeFabric(file, v)
			if err != nil {
				return spec, err
			}
			spec.Fabric, fab = f, doc
		case "env":
			if v.Kind != yaml.MappingNode {
				return spec, errAt(file, v, "env must be a mapping of NCCL variables")
			}
			spec.Env = map[string]string{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				ek := v.Content[j].Value
				ev, err := scalarText(file, v.Content[j+1], "env."+ek)
				if err != nil {
					return spec, err
				}
				spec.Env[ek] = ev
			}
			if _, err := model.ParseKnobs(spec.Env); err != nil {
				return spec, errAt(file, v, "env: %v", err)
			}
		case "nccl_version":
			ver, err := scalarText(file, v, "nccl_version")
			if err != nil {
				return spec, err
			}
			if _, err := model.ParseVersion(ver); err != nil {
				return spec, errAt(file, v, "nccl_version: %v", err)
			}
			spec.NCCLVersion = ver
		case "run":
			r, err := decodeRun(file, v)
			if err != nil {
				return spec, err
			}
			spec.Run = r
		default:
			return spec, errAt(file, k, "unknown key %q (known: name, node, nodes, gpus_per_node, gpu, nics, fabric, env, nccl_version, run)", k.Value)
		}
	}
	if !nodeSet {
		return spec, errAt(file, root, "missing key \"node\" (a preset name such as dgx-h100, or a node description)")
	}
	if spec.Nodes == 0 {
		spec.Nodes = 1
	}
	if gpu != "" {
		var err error
		if spec, err = withGPU(spec, gpu, "gpu"); err != nil {
			return spec, errAt(file, gpuNode, "%v", err)
		}
	}
	if nicsNode != nil {
		ns, err := decodeNICs(file, nicsNode, spec.Node)
		if err != nil {
			return spec, err
		}
		spec.Node = ns
	}
	if err := spec.Node.Validate(); err != nil {
		// At the node key the message names ("gpus: ..."), else the node.
		key, _, _ := strings.Cut(err.Error(), ":")
		return spec, errAt(file, valueOrNode(nodeAt, key), "node: %v", err)
	}
	if fab != nil && spec.Nodes > 1 {
		// Size the fabric now, so that a radix too small or a degraded link
		// that does not exist is reported at its key.
		if err := spec.CheckFabric(); err != nil {
			var fe *model.FabricError
			if errors.As(err, &fe) {
				return spec, fab.check(file, err)
			}
		}
	}
	return spec, nil
}

func intValue(file string, v *yaml.Node, key string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil {
		return 0, errAt(file, v, "%s: want an integer, got %s", key, gotWords(v))
	}
	if n < lo || n > hi {
		return 0, errAt(file, v, "%s: %d is outside %d..%d", key, n, lo, hi)
	}
	return n, nil
}

// strictDecode decodes v into out, refusing unknown fields, with positions.
func strictDecode(file string, v *yaml.Node, out any) error {
	data, err := yaml.Marshal(v)
	if err != nil {
		return errAt(file, v, "%v", err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil {
		return decodeError(file, v, data, out, err)
	}
	return nil
}

// decodeNode reads the node key: a preset name, a template with overrides,
// or a full inline node description.
func decodeNode(file string, v *yaml.Node) (model.NodeSpec, error) {
	if v.Kind == yaml.ScalarNode {
		p, err := LookupPreset(v.Value)
		if err != nil {
			return model.NodeSpec{}, errAt(file, v, "node: %v", err)
		}
		return p.Node, nil
	}
	if v.Kind != yaml.MappingNode {
		return model.NodeSpec{}, errAt(file, v, "node must be a preset name or a mapping")
	}
	var base model.NodeSpec
	rest := &yaml.Node{Kind: yaml.MappingNode, Line: v.Line, Column: v.Column}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if k.Value == "template" {
			name, err := scalarText(file, val, "node.template")
			if err != nil {
				return model.NodeSpec{}, err
			}
			p, err := LookupPreset(name)
			if err != nil {
				return model.NodeSpec{}, errAt(file, val, "node.template: %v", err)
			}
			base = p.Node
			continue
		}
		rest.Content = append(rest.Content, k, val)
	}
	if err := strictDecode(file, rest, &base); err != nil {
		return model.NodeSpec{}, err
	}
	return base, nil
}

// decodeNICs reads the nics key: the --nics string form or a mapping.
func decodeNICs(file string, v *yaml.Node, node model.NodeSpec) (model.NodeSpec, error) {
	if v.Kind == yaml.ScalarNode {
		count, speed, kind, err := ParseNICs(v.Value)
		if err != nil {
			return node, errAt(file, v, "nics: %v", err)
		}
		return node.WithNICs(count, speed, kind), nil
	}
	ns, err := decodeNICMap(file, v)
	if err != nil {
		return node, err
	}
	if ns.Kind == "" && ns.Stack != "" {
		if st, err := model.ParseNetStack(ns.Stack); err == nil {
			ns.Kind = string(st.Kind()) // the stack says what the NICs are
		}
	}
	kind, err := model.ParseNICKind(ns.Kind)
	if err != nil {
		return node, errAt(file, v, "nics.kind: %v", err)
	}
	if _, err := model.LookupNICSpeed(ns.Speed, kind); err != nil {
		return node, errAt(file, v, "nics.speed: %v", err)
	}
	if ns.Count < 0 || ns.Count > 256 {
		return node, errAt(file, v, "nics.count: %d is outside 0..256", ns.Count)
	}
	if ns.Stack != "" {
		if _, err := model.ResolveStack(ns.Stack, kind); err != nil {
			return node, errAt(file, valueOrNode(v, "stack"), "nics.stack: %v", err)
		}
	}
	out := node.WithNICs(ns.Count, ns.Speed, kind)
	out.NICs.Stack, out.NICs.RoCE, out.NICs.GDR, out.NICs.Ports, out.NICs.PCIe = ns.Stack, ns.RoCE, ns.GDR, ns.Ports, ns.PCIe
	return out, nil
}

// ParseNICs reads the --nics form COUNTxSPEED[-KIND]: "4x200G-ib",
// "2x100G-roce", "1x10G-tcp", "4x100G-efa", "8xNDR" (kind defaults to ib).
func ParseNICs(s string) (count int, speed string, kind model.NICKind, err error) {
	t := strings.TrimSpace(s)
	x := strings.IndexAny(t, "xX")
	if x <= 0 {
		return 0, "", "", fmt.Errorf("invalid NIC spec %q (want COUNTxSPEED-KIND, e.g. 4x200G-ib, 2x100G-roce, 1x10G-tcp, 4x100G-efa)", s)
	}
	count, err = strconv.Atoi(t[:x])
	if err != nil || count < 1 || count > 256 {
		return 0, "", "", fmt.Errorf("invalid NIC count in %q (want 1..256)", s)
	}
	rest := t[x+1:]
	kind = model.NICIB
	if d := strings.LastIndex(rest, "-"); d >= 0 {
		if kind, err = model.ParseNICKind(rest[d+1:]); err != nil {
			return 0, "", "", fmt.Errorf("%q: %w", s, err)
		}
		rest = rest[:d]
	}
	sp, err := model.LookupNICSpeed(rest, kind)
	if err != nil {
		return 0, "", "", fmt.Errorf("%q: %w", s, err)
	}
	return count, sp.Name, kind, nil
}

// Overrides are the command-line options that build or change a cluster.
type Overrides struct {
	// Cluster is a YAML file; Node a preset name. Both empty: the default scenario.
	Cluster string
	Node    string
	// Topo replaces the node layout (from nvidia-smi topo -m or NCCL XML,
	// already converted by the caller).
	Topo *model.NodeSpec
	// Nodes, GPUsPerNode: 0 = keep.
	Nodes, GPUsPerNode int
	GPU                string
	NICs               string
	// NetStack names the network stack (model.NetStacks); "" = keep.
	NetStack string
	// Set holds NCCL_X=VALUE assignments.
	Set         []string
	NCCLVersion string
	// Launch names the launch mode (model.Launches); "" = keep.
	Launch string
	// VM sets whether the hosts are virtual machines; nil = keep.
	VM *bool
}

// Resolve builds the ClusterSpec the overrides describe, on top of the
// cluster file, the preset or the embedded default scenario.
func (o Overrides) Resolve() (model.ClusterSpec, error) {
	var spec model.ClusterSpec
	var err error
	switch {
	case o.Cluster != "" && o.Node != "":
		return spec, errors.New("give either --cluster or --node, not both")
	case o.Cluster != "":
		if spec, err = LoadFile(o.Cluster); err != nil {
			return spec, err
		}
	case o.Node != "":
		p, err := LookupPreset(o.Node)
		if err != nil {
			return spec, err
		}
		spec = model.ClusterSpec{Name: p.Name, Node: p.Node, Nodes: 1}
	case o.Topo != nil:
		spec = model.ClusterSpec{Name: o.Topo.Name, Node: *o.Topo, Nodes: 1}
	default:
		if spec, err = Load(DefaultScenarioName, defaultScenario); err != nil {
			return spec, err
		}
	}
	if o.Topo != nil && (o.Cluster != "" || o.Node != "") {
		nics := spec.Node.NICs
		spec.Node = *o.Topo
		if spec.Node.NICs.Speed == "" {
			spec.Node.NICs.Speed, spec.Node.NICs.Kind = nics.Speed, nics.Kind
		}
	}
	if o.Nodes != 0 {
		if o.Nodes < 0 || o.Nodes > model.MaxRanks {
			return spec, fmt.Errorf("--nodes %d is outside 1..%d", o.Nodes, model.MaxRanks)
		}
		spec.Nodes = o.Nodes
	}
	if o.GPUsPerNode != 0 {
		if o.GPUsPerNode < 0 {
			return spec, fmt.Errorf("--gpus-per-node %d must be positive", o.GPUsPerNode)
		}
		if o.GPUsPerNode > spec.Node.GPUs {
			return spec, fmt.Errorf("--gpus-per-node %d is more than the %d GPUs of node %q", o.GPUsPerNode, spec.Node.GPUs, spec.Node.Name)
		}
		spec.GPUsPerNode = o.GPUsPerNode
	}
	if o.GPU != "" {
		if spec, err = withGPU(spec, o.GPU, "--gpu"); err != nil {
			return spec, err
		}
	}
	if o.NICs != "" {
		count, speed, kind, err := ParseNICs(o.NICs)
		if err != nil {
			return spec, fmt.Errorf("--nics: %w", err)
		}
		spec.Node = spec.Node.WithNICs(count, speed, kind)
	}
	if o.NetStack != "" {
		kind, err := model.ParseNICKind(spec.Node.NICs.Kind)
		if err != nil {
			return spec, fmt.Errorf("--net-stack: the node has no NIC kind: %w", err)
		}
		st, err := model.ResolveStack(o.NetStack, kind)
		if err != nil {
			return spec, fmt.Errorf("--net-stack: %w", err)
		}
		spec.Node.NICs.Stack = string(st)
	}
	if len(o.Set) > 0 && spec.Env == nil {
		spec.Env = map[string]string{}
	} else if len(o.Set) > 0 {
		env := make(map[string]string, len(spec.Env))
		for k, v := range spec.Env {
			env[k] = v
		}
		spec.Env = env
	}
	for _, kv := range o.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return spec, fmt.Errorf("--set %q: want NCCL_NAME=VALUE", kv)
		}
		spec.Env[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if o.NCCLVersion != "" {
		spec.NCCLVersion = o.NCCLVersion
	}
	if spec, err = applyRun(spec, o.Launch, o.VM); err != nil {
		return spec, fmt.Errorf("--launch: %w", err)
	}
	if _, err := model.ParseKnobs(spec.Env); err != nil {
		return spec, err
	}
	return spec, nil
}

// withGPU replaces the GPU model of spec's nodes; a GPU without NVLink
// cannot replace the GPUs of a node built around NVLink. what names the
// option in errors ("--gpu", "axes.gpu").
func withGPU(spec model.ClusterSpec, name, what string) (model.ClusterSpec, error) {
	g, err := model.LookupGPU(name)
	if err != nil {
		return spec, err
	}
	if g.NVLinkGen == 0 && spec.Node.NVLink.Kind != "" && spec.Node.NVLink.Kind != "none" {
		return spec, fmt.Errorf("%s %s has no NVLink but node %q is built around NVLink (%s); use --node pcie-gpu-server", what, g.Name, spec.Node.Name, spec.Node.NVLink.Kind)
	}
	if g.NVLinkBridgeOnly && !bridgeable(spec.Node.NVLink) {
		// A PCIe card's NVLink is a bridge between two cards (catalog
		// NVLinkBridgeOnly): no NVSwitch, no mesh.
		return spec, fmt.Errorf("%s %s is a PCIe card whose NVLink is at most a bridge between two cards, but node %q is built around NVLink (%s); use --node pcie-gpu-server", what, g.Name, spec.Node.Name, spec.Node.NVLink.Kind)
	}
	spec.Node.GPU = g.Name
	if base, err := model.LookupGPU(g.Name); err == nil && base.MemGB != g.MemGB {
		// The name states another memory size than the entry's
		// ("A100-SXM4-40GB"): keep it, so the node has that memory.
		spec.Node.GPU = name
	}
	return spec, nil
}

// bridgeable reports whether NVLink nv can be built from two-card bridges:
// none, or pairs in which every GPU has at most one partner.
func bridgeable(nv model.NVLinkSpec) bool {
	switch nv.Kind {
	case "", "none":
		return true
	case "pairs":
		partner := map[int]bool{}
		for _, p := range nv.Pairs {
			if partner[p[0]] || partner[p[1]] {
				return false
			}
			partner[p[0]], partner[p[1]] = true, true
		}
		return true
	}
	return false
}

// Describe summarises a spec in one line: "4 x dgx-a100 (8x A100-SXM4, 2x 100G roce)".
func Describe(s model.ClusterSpec) string {
	g := s.Node.GPUs
	if s.GPUsPerNode > 0 {
		g = s.GPUsPerNode
	}
	nics := "no NIC"
	if s.Node.NICs.Count > 0 {
		nics = fmt.Sprintf("%dx %s %s", s.Node.NICs.Count, s.Node.NICs.Speed, s.Node.NICs.Kind)
	}
	name := s.Node.Name
	if name == "" {
		name = "custom node"
	}
	out := fmt.Sprintf("%d x %s (%dx %s, %s)", s.Nodes, name, g, s.Node.GPU, nics)
	if len(s.Env) > 0 {
		keys := make([]string, 0, len(s.Env))
		for k := range s.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+s.Env[k])
		}
		out += " with " + strings.Join(kv, " ")
	}
	return out
}
