package model

import (
	"errors"
	"fmt"
)

// ClusterSpec is a whole cluster: identical nodes, a fabric and NCCL
// settings. It is plain data (YAML in scenarios, flags in the CLI).
type ClusterSpec struct {
	// Name labels the cluster in output.
	Name string `yaml:"name,omitempty"`
	// Node is the server design every node uses.
	Node NodeSpec `yaml:"node"`
	// Nodes is the number of servers (or NVLink domains).
	Nodes int `yaml:"nodes"`
	// GPUsPerNode uses only the first G GPUs of each node (0 = all).
	GPUsPerNode int `yaml:"gpus_per_node,omitempty"`
	// Fabric is the network between nodes.
	Fabric FabricSpec `yaml:"fabric,omitempty"`
	// Env holds NCCL variables by name (NCCL_P2P_LEVEL: PHB).
	Env map[string]string `yaml:"env,omitempty"`
	// NCCLVersion selects version-dependent NCCL defaults ("2.21", "2.30").
	// Empty means the newest collsim knows.
	NCCLVersion string `yaml:"nccl_version,omitempty"`
}

// FabricSpec describes the network between nodes.
type FabricSpec struct {
	// Kind is "single-switch" (default: one non-blocking switch) or
	// "leaf-spine" (nodes grouped under leaves, leaves joined through an
	// aggregated spine whose capacity is the leaf's downlink capacity
	// divided by Oversubscription).
	Kind string `yaml:"kind,omitempty"`
	// NodesPerLeaf is the number of nodes under one leaf (leaf-spine).
	NodesPerLeaf int `yaml:"nodes_per_leaf,omitempty"`
	// Oversubscription is downlink:uplink at the leaves (1 = non-blocking).
	Oversubscription float64 `yaml:"oversubscription,omitempty"`
	// SwitchLatencyNs overrides the port-to-port latency of one switch.
	SwitchLatencyNs float64 `yaml:"switch_latency_ns,omitempty"`
}

// Cluster is a built cluster: its topology, parsed NCCL settings and the
// elements of every node.
type Cluster struct {
	Spec  ClusterSpec
	Topo  *Topology
	Knobs Knobs
	Nodes []*NodeElems
	// Ranks lists the GPU element of each communicator rank: node-major,
	// local GPU index minor, as mpirun with one rank per GPU assigns them.
	Ranks []ElemID
	// Version is the parsed NCCLVersion.
	Version Version
}

// GPUsPerNode returns the GPU count of each node.
func (c *Cluster) GPUsPerNode() int { return len(c.Nodes[0].GPUs) }

// NumNodes returns the node count.
func (c *Cluster) NumNodes() int { return len(c.Nodes) }

// NumRanks returns the number of ranks (GPUs).
func (c *Cluster) NumRanks() int { return len(c.Ranks) }

// GPUModel returns the GPU model of the cluster.
func (c *Cluster) GPUModel() GPUModel { return *c.Topo.Elem(c.Ranks[0]).GPU }

// MaxRanks bounds the GPUs collsim will build in one cluster.
const MaxRanks = 131072

// WithGPUs returns a copy of s that keeps only GPUs 0..g-1: other GPUs are
// removed from the PCIe layout and the NVLink fabric (mesh links per pair
// keep the full node's value).
func (s NodeSpec) WithGPUs(g int) (NodeSpec, error) {
	if g <= 0 {
		return s, fmt.Errorf("gpus per node must be at least 1, got %d", g)
	}
	if g > s.GPUs {
		return s, fmt.Errorf("gpus per node %d is more than the %d GPUs of %q", g, s.GPUs, s.Name)
	}
	if g == s.GPUs {
		return s, nil
	}
	out := s
	out.Sockets = make([]SocketSpec, len(s.Sockets))
	for i, so := range s.Sockets {
		out.Sockets[i].HostBridges = make([]BridgeSpec, len(so.HostBridges))
		for j := range so.HostBridges {
			out.Sockets[i].HostBridges[j] = trimBridge(so.HostBridges[j], g)
		}
	}
	out.NVLink.Pairs = nil
	switch s.NVLink.Kind {
	case "mesh":
		if out.NVLink.Links == 0 {
			if gm, err := LookupGPU(s.GPU); err == nil && s.GPUs > 1 {
				out.NVLink.Links = gm.NVLinkLinks / (s.GPUs - 1)
			}
		}
	case "pairs":
		for _, p := range s.NVLink.Pairs {
			if p[0] < g && p[1] < g {
				out.NVLink.Pairs = append(out.NVLink.Pairs, p)
			}
		}
	}
	out.GPUs = g
	return out, nil
}

func trimBridge(b BridgeSpec, g int) BridgeSpec {
	out := BridgeSpec{NICs: append([]int(nil), b.NICs...), Gen: b.Gen, Width: b.Width}
	for _, x := range b.GPUs {
		if x < g {
			out.GPUs = append(out.GPUs, x)
		}
	}
	for _, sw := range b.Switches {
		out.Switches = append(out.Switches, trimBridge(sw, g))
	}
	return out
}

// WithNICs returns a copy of s with count NICs of the given speed and kind,
// spread over the template's NIC positions.
func (s NodeSpec) WithNICs(count int, speed string, kind NICKind) NodeSpec {
	slots := s.NICSlots
	if slots == 0 {
		slots = s.NICs.Count
	}
	out := s
	out.NICSlots = slots
	out.NICs = NICSpec{Count: count, Speed: speed, Kind: string(kind), RoCE: s.NICs.RoCE, GDR: s.NICs.GDR}
	return out
}

// Build validates the spec and builds the cluster. Errors name the field.
func (c ClusterSpec) Build() (*Cluster, error) {
	if c.Nodes <= 0 {
		return nil, fmt.Errorf("nodes: must be at least 1, got %d", c.Nodes)
	}
	node := c.Node
	if c.GPUsPerNode != 0 {
		var err error
		if node, err = node.WithGPUs(c.GPUsPerNode); err != nil {
			return nil, fmt.Errorf("gpus_per_node: %w", err)
		}
	}
	if c.Nodes > MaxRanks || c.Nodes*node.GPUs > MaxRanks {
		return nil, fmt.Errorf("nodes: %d nodes x %d GPUs is more than collsim models (%d GPUs)", c.Nodes, node.GPUs, MaxRanks)
	}
	if err := node.Validate(); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	if c.Nodes > 1 && node.NICs.Count == 0 {
		return nil, fmt.Errorf("nics: %d nodes need at least one NIC per node", c.Nodes)
	}
	knobs, err := ParseKnobs(c.Env)
	if err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	ver, err := ParseVersion(c.NCCLVersion)
	if err != nil {
		return nil, fmt.Errorf("nccl_version: %w", err)
	}
	t := &Topology{}
	cl := &Cluster{Spec: c, Topo: t, Knobs: knobs, Version: ver}
	cl.Spec.Node = node
	for n := 0; n < c.Nodes; n++ {
		ne, err := node.Build(t, n)
		if err != nil {
			return nil, err
		}
		cl.Nodes = append(cl.Nodes, ne)
		cl.Ranks = append(cl.Ranks, ne.GPUs...)
	}
	if c.Nodes > 1 {
		if err := c.Fabric.build(t, cl.Nodes); err != nil {
			return nil, fmt.Errorf("fabric: %w", err)
		}
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return cl, nil
}

func (f FabricSpec) build(t *Topology, nodes []*NodeElems) error {
	lat := SwitchLatency
	if f.SwitchLatencyNs < 0 || f.SwitchLatencyNs > 1e6 {
		return fmt.Errorf("switch_latency_ns: %g is outside 0..1e6", f.SwitchLatencyNs)
	}
	if f.SwitchLatencyNs > 0 {
		lat = Time(f.SwitchLatencyNs * float64(Nanosecond))
	}
	cable := func(nic, sw ElemID) error {
		bw := t.Elem(nic).NIC.Speed.LineGBps()
		_, err := t.Connect(nic, sw, LinkNet, bw, bw, NetCableLatency+lat, 1)
		return err
	}
	switch f.Kind {
	case "", "single-switch":
		sw, err := t.Add(Element{Kind: KindSwitch, Name: "fabric/switch", Node: -1, Socket: -1})
		if err != nil {
			return err
		}
		for _, ne := range nodes {
			for _, nic := range ne.NICs {
				if err := cable(nic, sw); err != nil {
					return err
				}
			}
		}
		return nil
	case "leaf-spine":
		per := f.NodesPerLeaf
		if per <= 0 {
			return fmt.Errorf("nodes_per_leaf: must be at least 1 for leaf-spine, got %d", per)
		}
		over := f.Oversubscription
		if over == 0 {
			over = 1
		}
		if over < 1 || over > 64 {
			return fmt.Errorf("oversubscription: %g is outside 1..64", over)
		}
		spine, err := t.Add(Element{Kind: KindSwitch, Name: "fabric/spine", Node: -1, Socket: -1})
		if err != nil {
			return err
		}
		for l := 0; l*per < len(nodes); l++ {
			leaf, err := t.Add(Element{Kind: KindSwitch, Name: fmt.Sprintf("fabric/leaf%d", l), Node: -1, Index: l, Socket: -1})
			if err != nil {
				return err
			}
			var down GBps
			for _, ne := range nodes[l*per : min(len(nodes), (l+1)*per)] {
				for _, nic := range ne.NICs {
					if err := cable(nic, leaf); err != nil {
						return err
					}
					down += t.Elem(nic).NIC.Speed.LineGBps()
				}
			}
			up := down / GBps(over)
			if _, err := t.Connect(leaf, spine, LinkNet, up, up, NetCableLatency+lat, 0); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("kind: unknown %q (known: single-switch, leaf-spine)", f.Kind)
}

// Version is an NCCL release, major.minor (patch ignored).
type Version struct{ Major, Minor int }

// newestMinor is the minor release of NCCL 2 whose behaviour collsim
// models by default.
const newestMinor = 30

// Newest is the NCCL release whose behaviour collsim models by default.
func Newest() Version { return Version{2, newestMinor} }

// ParseVersion reads "2.21", "2.21.5" or "2.21.5+cuda12.4"; empty is Newest().
func ParseVersion(s string) (Version, error) {
	if s == "" {
		return Newest(), nil
	}
	var v Version
	if n, _ := fmt.Sscanf(s, "%d.%d", &v.Major, &v.Minor); n != 2 || v.Major != 2 || v.Minor < 0 || v.Minor > 99 {
		return Version{}, fmt.Errorf("invalid NCCL version %q (want 2.x or 2.x.y)", s)
	}
	return v, nil
}

// AtLeast reports whether v is minor 2.m or later.
func (v Version) AtLeast(m int) bool { return v.Minor >= m }

// String prints the version as 2.x.
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// ErrNoPath is returned when two elements are not connected.
var ErrNoPath = errors.New("no path")
