package scenarios

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// MaxDesigns bounds the number of designs in one sweep: 2^20. Designs
// are generated one at a time (Design), so the grid itself is never held;
// the bound keeps a sweep's per-design results (a few KB each) in memory.
const MaxDesigns = 1 << 20

// DefaultSweepSize is the message size of a collective metric when the
// sweep names none.
const DefaultSweepSize = model.GiB

// Sweep is a what-if grid: a base cluster, axes whose values are combined
// in every way (the first axis varies slowest), and the metric each
// design is judged by. It is plain data; Designs expands it.
type Sweep struct {
	// File is where the sweep was read from; Name labels it.
	File, Name string
	// Base is the cluster every design starts from; BaseFrom says where it
	// came from ("preset dgx-h100", "cluster file c.yaml", "inline").
	Base     model.ClusterSpec
	BaseFrom string
	// Axes are the dimensions of the grid, in the order written.
	Axes []Axis
	// Metric is what each design is judged by.
	Metric Metric
	// Within is the tolerance of the recommendation: the cheapest design
	// within this fraction of the best throughput. 0 means not given.
	Within float64
}

// Axis is one dimension of a sweep.
type Axis struct {
	// Key is nodes, gpus_per_node, gpu, nics, fabric.oversubscription,
	// fabric.nodes_per_leaf or env.NCCL_X.
	Key string
	// Values are the settings as written, in order, without duplicates.
	Values []string
}

// Metric is what a sweep measures on each design: a collective at one
// size, or a training-step workload.
type Metric struct {
	// Coll, Size, Datatype, Algo and Proto describe a collective metric.
	// Datatype is an nccl-tests type name ("float"); DatatypeAt is its
	// position in the file for errors ("" when not given).
	Coll       model.Collective
	Size       model.Bytes
	Datatype   string
	DatatypeAt string
	Algo       *model.Algo
	Proto      *model.Proto
	// Workload, when not nil, replaces the collective: the metric is the
	// step time and throughput of the workload.
	Workload *Workload
}

// Design is one point of a sweep's grid.
type Design struct {
	// Index is the 1-based position in grid order.
	Index int
	// Name joins the axis settings: "nodes=16 nics=8x400G-ib".
	Name string
	// Values holds one setting per axis, in axis order.
	Values []string
	// Spec is the cluster.
	Spec model.ClusterSpec
}

// sweepAxisKeys are the axis names (env.NCCL_X besides).
var sweepAxisKeys = [...]string{"nodes", "gpus_per_node", "gpu", "nics", "fabric.oversubscription", "fabric.nodes_per_leaf", "run.launch", "run.vm"}

// LoadSweepFile reads a sweep YAML file (schema: LoadSweep). Relative
// file names inside it are relative to its directory.
func LoadSweepFile(path string) (*Sweep, error) {
	data, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	return LoadSweep(path, data)
}

// LoadSweep parses a sweep spec. Every error names file:line:column and
// the key. The schema (docs/sweep.md) is:
//
//	name: text                          # optional
//	base: dgx-h100                      # a preset, a cluster file (x.yaml), or an inline cluster mapping
//	axes:                               # at least one; every combination is a design (at most 2^20)
//	  nodes: [8, 16, 32]
//	  nics: [8x400G-ib, 8x400G-roce]
//	  gpu: [H100-SXM, H200-SXM]
//	  gpus_per_node: [4, 8]
//	  fabric.oversubscription: [1, 2]   # needs a leaf-spine base fabric
//	  fabric.nodes_per_leaf: [4, 8]
//	  env.NCCL_ALGO: [Ring, Tree]
//	  run.launch: [process-per-gpu, single-process]
//	  run.vm: [false, true]
//	metric:                             # a collective at a size ...
//	  collective: allreduce
//	  size: 1G
//	  datatype: float                   # optional; algo, proto optional
//	# metric: {workload: {params: 7e9, compute_ms: 300, ...}}   # ... or a workload (inline or a file)
//	within: 5%                          # optional: recommendation tolerance
func LoadSweep(file string, data []byte) (*Sweep, error) {
	doc, err := parseYAML(file, "sweep file", data)
	if err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty sweep file", file)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errAt(file, root, "the sweep must be a mapping of keys (name, base, axes, metric, within)")
	}
	s := &Sweep{File: file}
	var baseNode, axesNode, axesKey, metricNode *yaml.Node
	err = eachKey(file, root, func(k, v *yaml.Node) error {
		switch k.Value {
		case "name":
			name, err := scalarText(file, v, "name")
			if err != nil {
				return err
			}
			s.Name = name
		case "base":
			baseNode = v
		case "axes":
			axesKey, axesNode = k, v
		case "metric":
			metricNode = v
		case "within":
			f, err := ParseFraction(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || f <= 0 || f >= 1 {
				return errAt(file, v, "within: want a fraction between 0 and 1 such as 5%% or 0.05, got %s", gotWords(v))
			}
			s.Within = f
		default:
			return errAt(file, k, "unknown key %q (known: name, base, axes, metric, within)", k.Value)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	switch {
	case baseNode == nil:
		return nil, errAt(file, root, "missing key \"base\" (a preset such as dgx-h100, a cluster file, or a cluster mapping)")
	case axesNode == nil:
		return nil, errAt(file, root, "missing key \"axes\" (e.g. axes: {nics: [8x400G-ib, 8x400G-roce]})")
	case metricNode == nil:
		return nil, errAt(file, root, "missing key \"metric\" (e.g. metric: {collective: allreduce, size: 1G})")
	}
	if err := s.decodeBase(baseNode); err != nil {
		return nil, err
	}
	if err := s.decodeAxes(axesKey, axesNode); err != nil {
		return nil, err
	}
	if err := s.decodeMetric(metricNode); err != nil {
		return nil, err
	}
	return s, nil
}

// relPath resolves a file named inside the sweep relative to its directory.
func (s *Sweep) relPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(s.File), p)
}

func (s *Sweep) decodeBase(v *yaml.Node) error {
	switch v.Kind {
	case yaml.MappingNode:
		spec, err := decodeCluster(s.File, v)
		if err != nil {
			return err
		}
		s.Base, s.BaseFrom = spec, "inline cluster"
		return nil
	case yaml.ScalarNode:
	default:
		return errAt(s.File, v, "base: want a preset name, a cluster file or a cluster mapping, got %s", nodeWords(v))
	}
	if ext := strings.ToLower(filepath.Ext(v.Value)); ext == ".yaml" || ext == ".yml" {
		if err := unreadable(s.relPath(v.Value)); err != nil {
			return errAt(s.File, v, "base: %v", err)
		}
		spec, err := LoadFile(s.relPath(v.Value))
		if err != nil {
			return errAt(s.File, v, "base: %v", err)
		}
		s.Base, s.BaseFrom = spec, "cluster file "+v.Value
		return nil
	}
	p, err := LookupPreset(v.Value)
	if err != nil {
		return errAt(s.File, v, "base: %v", err)
	}
	s.Base = model.ClusterSpec{Name: p.Name, Node: p.Node, Nodes: 1}
	s.BaseFrom = "preset " + p.Name
	return nil
}

func (s *Sweep) decodeAxes(key, v *yaml.Node) error {
	file := s.File
	if v.Kind != yaml.MappingNode {
		return errAt(file, v, "axes must be a mapping of axis names to lists of values (known: %s, env.NCCL_X)", strings.Join(sweepAxisKeys[:], ", "))
	}
	if len(v.Content) == 0 {
		return errAt(file, v, "axes: the grid is empty: give at least one axis with values (known: %s, env.NCCL_X)", strings.Join(sweepAxisKeys[:], ", "))
	}
	err := eachKey(file, v, func(k, list *yaml.Node) error {
		name := k.Value
		if !knownAxis(name) {
			return errAt(file, k, "unknown axis %q (known: %s, env.NCCL_X)", name, strings.Join(sweepAxisKeys[:], ", "))
		}
		if strings.HasPrefix(name, "fabric.") && s.Base.Fabric.Kind != "leaf-spine" {
			return errAt(file, k, "%s needs a leaf-spine base fabric (base: {..., fabric: {kind: leaf-spine, nodes_per_leaf: N}})", name)
		}
		if list.Kind != yaml.SequenceNode {
			return errAt(file, list, "%s: want a list of values, e.g. [a, b]", name)
		}
		if len(list.Content) == 0 {
			return errAt(file, list, "%s: the list is empty, so the grid is empty", name)
		}
		ax := Axis{Key: name}
		seen := map[string]bool{}
		for _, item := range list.Content {
			if item.Kind != yaml.ScalarNode {
				return errAt(file, item, "%s: want a single value (a scalar), got %s", name, nodeWords(item))
			}
			canon, err := s.checkAxisValue(name, item.Value)
			if err != nil {
				return errAt(file, item, "%s: %v", name, err)
			}
			if seen[canon] {
				return errAt(file, item, "%s: %q is listed twice", name, item.Value)
			}
			seen[canon] = true
			ax.Values = append(ax.Values, strings.TrimSpace(item.Value))
		}
		s.Axes = append(s.Axes, ax)
		return nil
	})
	if err != nil {
		return err
	}
	if n := s.Size(); n > MaxDesigns {
		var dims []string
		for _, a := range s.Axes {
			dims = append(dims, fmt.Sprintf("%s %d", a.Key, len(a.Values)))
		}
		return errAt(file, key, "axes: the grid has %s designs (%s); collsim sweeps at most %d: remove values or split the sweep", sizeString(s.Axes), strings.Join(dims, " x "), MaxDesigns)
	}
	return nil
}

// sizeString prints the product of the axis lengths, saturating at "more than 1e9".
func sizeString(axes []Axis) string {
	n := 1
	for _, a := range axes {
		n *= len(a.Values)
		if n > 1e9 {
			return "more than 1000000000"
		}
	}
	return strconv.Itoa(n)
}

func knownAxis(k string) bool {
	for _, x := range sweepAxisKeys {
		if k == x {
			return true
		}
	}
	return strings.HasPrefix(k, "env.NCCL_") && len(k) > len("env.NCCL_")
}

// checkAxisValue validates one setting against the base and returns its
// canonical form (to find duplicates).
func (s *Sweep) checkAxisValue(key, val string) (string, error) {
	v := strings.TrimSpace(val)
	switch key {
	case "nodes":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > model.MaxRanks {
			return "", fmt.Errorf("want a node count 1..%d, got %q", model.MaxRanks, val)
		}
		return strconv.Itoa(n), nil
	case "gpus_per_node":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", fmt.Errorf("want a positive integer, got %q", val)
		}
		if n > s.Base.Node.GPUs {
			return "", fmt.Errorf("%d is more than the %d GPUs of node %q", n, s.Base.Node.GPUs, nodeLabel(s.Base.Node.Name))
		}
		return strconv.Itoa(n), nil
	case "gpu":
		spec, err := withGPU(s.Base, v, "gpu")
		if err != nil {
			return "", err
		}
		return spec.Node.GPU, nil
	case "nics":
		count, speed, kind, err := ParseNICs(v)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%dx%s-%s", count, speed, kind), nil
	case "fabric.oversubscription":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 1 && f <= 64) {
			return "", fmt.Errorf("want a ratio 1..64 (downlink:uplink), got %q", val)
		}
		return strconv.FormatFloat(f, 'g', -1, 64), nil
	case "fabric.nodes_per_leaf":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", fmt.Errorf("want a positive integer, got %q", val)
		}
		return strconv.Itoa(n), nil
	case "run.launch":
		l, err := model.ParseLaunch(v)
		if err != nil {
			return "", err
		}
		return string(l), nil
	case "run.vm":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("want true or false, got %q", val)
		}
		return strconv.FormatBool(b), nil
	}
	name := strings.TrimPrefix(key, "env.")
	if _, err := model.ParseKnobs(map[string]string{name: v}); err != nil {
		return "", err
	}
	return v, nil
}

func (s *Sweep) decodeMetric(v *yaml.Node) error {
	file := s.File
	if v.Kind != yaml.MappingNode {
		return errAt(file, v, "metric must be a mapping: {collective: allreduce, size: 1G} or {workload: ...}")
	}
	m := Metric{Coll: model.AllReduce, Size: DefaultSweepSize, Datatype: "float"}
	var haveColl, haveWorkload bool
	err := eachKey(file, v, func(k, x *yaml.Node) error {
		if k.Value != "workload" && x.Kind != yaml.ScalarNode {
			return errAt(file, x, "metric.%s: want a single value (a scalar), got %s", k.Value, nodeWords(x))
		}
		switch k.Value {
		case "collective":
			c, err := model.ParseCollective(x.Value)
			if err != nil {
				return errAt(file, x, "metric.collective: %v", err)
			}
			m.Coll, haveColl = c, true
		case "size":
			b, err := model.ParseBytes(x.Value)
			if err != nil || b <= 0 || b > model.TiB {
				return errAt(file, x, "metric.size: want a size 1..1T such as 1G, got %q", x.Value)
			}
			m.Size, haveColl = b, true
		case "datatype":
			m.Datatype, m.DatatypeAt, haveColl = strings.ToLower(strings.TrimSpace(x.Value)), fmt.Sprintf("%s:%d:%d", file, x.Line, x.Column), true
		case "algo":
			a, err := model.ParseAlgo(x.Value)
			if err != nil {
				return errAt(file, x, "metric.algo: %v", err)
			}
			m.Algo, haveColl = &a, true
		case "proto":
			p, err := model.ParseProto(x.Value)
			if err != nil {
				return errAt(file, x, "metric.proto: %v", err)
			}
			m.Proto, haveColl = &p, true
		case "workload":
			var w Workload
			var err error
			switch x.Kind {
			case yaml.ScalarNode:
				if err := unreadable(s.relPath(x.Value)); err != nil {
					return errAt(file, x, "metric.workload: %v", err)
				}
				if w, err = LoadWorkloadFile(s.relPath(x.Value)); err != nil {
					return errAt(file, x, "metric.workload: %v", err)
				}
			default:
				if w, err = decodeWorkload(file, x); err != nil {
					return err
				}
			}
			m.Workload, haveWorkload = &w, true
		default:
			return errAt(file, k, "unknown key %q (known: collective, size, datatype, algo, proto, workload)", k.Value)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if haveColl && haveWorkload {
		return errAt(file, v, "metric: give a collective (collective, size, ...) or a workload, not both")
	}
	if !haveColl && !haveWorkload {
		return errAt(file, v, "metric: give a collective (collective: allreduce, size: 1G) or a workload")
	}
	s.Metric = m
	return nil
}

// Size returns the number of designs in the grid (the product of the axis
// lengths), saturating at MaxDesigns+1.
func (s *Sweep) Size() int {
	if len(s.Axes) == 0 {
		return 0
	}
	n := 1
	for _, a := range s.Axes {
		n *= len(a.Values)
		if n > MaxDesigns {
			return MaxDesigns + 1
		}
	}
	return n
}

// Design returns the design at 0-based position i of the grid order (the
// first axis varies slowest, the last fastest), so a sweep can generate
// its designs one at a time. A combination that cannot be built is an
// error naming the design.
func (s *Sweep) Design(i int) (Design, error) {
	n := s.Size()
	if i < 0 || i >= n || n > MaxDesigns {
		return Design{}, fmt.Errorf("%s: design %d is outside the grid of %d", s.File, i+1, n)
	}
	d := Design{Index: i + 1, Spec: s.Base, Values: make([]string, len(s.Axes))}
	rest := i
	for a := len(s.Axes) - 1; a >= 0; a-- {
		k := len(s.Axes[a].Values)
		d.Values[a] = s.Axes[a].Values[rest%k]
		rest /= k
	}
	parts := make([]string, len(s.Axes))
	for a, ax := range s.Axes {
		parts[a] = ax.Key + "=" + d.Values[a]
	}
	d.Name = strings.Join(parts, " ")
	for a, ax := range s.Axes {
		var err error
		if d.Spec, err = applyAxis(d.Spec, ax.Key, d.Values[a]); err != nil {
			return Design{}, fmt.Errorf("%s: design %d (%s): %s: %w", s.File, d.Index, d.Name, ax.Key, err)
		}
	}
	return d, nil
}

// Designs expands the grid in order: the first axis varies slowest, the
// last fastest. A combination that cannot be built (gpus_per_node above
// the GPUs of the chosen GPU's node, say) is an error naming the design.
// It returns at most MaxDesigns designs.
func (s *Sweep) Designs() ([]Design, error) {
	n := s.Size()
	if n == 0 {
		return nil, fmt.Errorf("%s: the grid is empty", s.File)
	}
	if n > MaxDesigns {
		return nil, fmt.Errorf("%s: the grid has more than %d designs", s.File, MaxDesigns)
	}
	out := make([]Design, 0, n)
	idx := make([]int, len(s.Axes))
	for i := 0; i < n; i++ {
		d := Design{Index: i + 1, Spec: s.Base}
		var parts []string
		for a, ax := range s.Axes {
			val := ax.Values[idx[a]]
			d.Values = append(d.Values, val)
			parts = append(parts, ax.Key+"="+val)
		}
		d.Name = strings.Join(parts, " ")
		for a, ax := range s.Axes {
			var err error
			if d.Spec, err = applyAxis(d.Spec, ax.Key, d.Values[a]); err != nil {
				return nil, fmt.Errorf("%s: design %d (%s): %s: %w", s.File, d.Index, d.Name, ax.Key, err)
			}
		}
		out = append(out, d)
		for a := len(idx) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < len(s.Axes[a].Values) {
				break
			}
			idx[a] = 0
		}
	}
	return out, nil
}

// applyAxis sets one axis on a copy of spec.
func applyAxis(spec model.ClusterSpec, key, val string) (model.ClusterSpec, error) {
	switch key {
	case "nodes":
		n, err := strconv.Atoi(val)
		if err != nil {
			return spec, err
		}
		spec.Nodes = n
	case "gpus_per_node":
		n, err := strconv.Atoi(val)
		if err != nil {
			return spec, err
		}
		if n > spec.Node.GPUs {
			return spec, fmt.Errorf("%d is more than the %d GPUs of node %q", n, spec.Node.GPUs, nodeLabel(spec.Node.Name))
		}
		spec.GPUsPerNode = n
	case "gpu":
		return withGPU(spec, val, "gpu")
	case "nics":
		count, speed, kind, err := ParseNICs(val)
		if err != nil {
			return spec, err
		}
		spec.Node = spec.Node.WithNICs(count, speed, kind)
	case "fabric.oversubscription":
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return spec, err
		}
		spec.Fabric.Oversubscription = f
	case "fabric.nodes_per_leaf":
		n, err := strconv.Atoi(val)
		if err != nil {
			return spec, err
		}
		spec.Fabric.NodesPerLeaf = n
	case "run.launch":
		return applyRun(spec, val, nil)
	case "run.vm":
		b, err := strconv.ParseBool(val)
		if err != nil {
			return spec, err
		}
		return applyRun(spec, "", &b)
	default:
		env := make(map[string]string, len(spec.Env)+1)
		for k, v := range spec.Env {
			env[k] = v
		}
		env[strings.TrimPrefix(key, "env.")] = val
		if _, err := model.ParseKnobs(env); err != nil {
			return spec, err
		}
		spec.Env = env
	}
	return spec, nil
}

// Describe says in one line what the metric measures: "AllReduce 1G
// (float)" or the workload's Describe.
func (m Metric) Describe() string {
	if m.Workload != nil {
		return "training step: " + m.Workload.Describe()
	}
	s := fmt.Sprintf("%s %s (%s)", m.Coll, model.FormatBytes(m.Size), m.Datatype)
	if m.Algo != nil {
		s += ", algo " + m.Algo.String()
	}
	if m.Proto != nil {
		s += ", proto " + m.Proto.String()
	}
	return s
}
