package model

import (
	"errors"
	"fmt"
	"slices"
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
	// Run is how the collective is launched on the hosts (RunSpec): a
	// process per GPU or one per node, bare metal or virtual machines.
	Run RunSpec `yaml:"run,omitempty"`
	// Seed drives every random choice of the fabric (ECMP hashing); the
	// same seed gives the same routes.
	Seed uint64 `yaml:"-"`
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
	// Fabric is the network between the nodes; nil on a single node.
	Fabric *Fabric
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
	stack := s.NICs.Stack
	if NICKind(s.NICs.Kind) != kind {
		stack = "" // a stack belongs to its NIC kind: a new kind gets its default
	}
	out.NICs = NICSpec{Count: count, Speed: speed, Kind: string(kind), Stack: stack, RoCE: s.NICs.RoCE, GDR: s.NICs.GDR, Ports: s.NICs.Ports, PCIe: s.NICs.PCIe}
	return out
}

// mergesAdapterPorts reports whether NCCL release v makes the ports of one
// multi-port adapter one NET/IB device (NCCL_IB_MERGE_NICS, added in 2.20.3
// with default 1). 2.20-2.23 merge devices whose PCI path, with the PCI
// function stripped, and system image GUID match (net_ib.cc: "Merge
// multi-port NICs into the same PCI device"). 2.24 moved the merge to the
// topology (topo.cc ncclTopoAutoMerge: devices at most NCCL_NET_MERGE_LEVEL,
// default PORT, apart) but kept each port's full PCI path, so the ports of
// a dual-function adapter are two PCI devices (PIX) and stay apart through
// 2.26; 2.27 strips the function again (net_ib/init.cc ncclIbGetPciPath)
// and they merge.
func mergesAdapterPorts(v Version) bool {
	return v.AtLeast(20) && !(v.AtLeast(24) && !v.AtLeast(27))
}

// mergedAdapterPorts returns s as NCCL sees it when NET/IB merges the
// ports of one adapter: a node with more InfiniBand or RoCE NICs than its
// layout has NIC slots holds k ports in each slot (NodeSpec.NICSlots), the
// ports of one adapter (adapterGen). In the releases that merge them
// (mergesAdapterPorts) NCCL makes them one device of k times the speed,
// whose connections open their QPs on every port (connect.cc: QP i on
// device i mod devices). collsim's multi-port NIC is that device: one NIC
// of k ports with the speed split over them, each port on its own cable.
// So 16x 100G RoCE in the DGX A100 layout's 8 slots is, in NCCL 2.27, 8 NICs
// of 200G with 2 ports each: the graph search finds 8 channels at 24 GB/s
// instead of 16 at 12, and NCCL's per-channel tree cap then keeps the ring
// for large sizes. The node is left as it is in the other releases, with
// NCCL_IB_MERGE_NICS=0, with NCCL_IB_HCA (assumption: collsim names a
// merged device by its ports, and a filter is matched against the ports as
// the user wrote them), when the NICs already have several ports, do not
// fill the slots evenly, or when the speed catalog has no row for the
// merged speed.
func (s NodeSpec) mergedAdapterPorts(v Version, k Knobs) NodeSpec {
	slots := s.NICSlots
	if slots == 0 || s.NICs.Count <= slots || s.NICs.Count%slots != 0 || s.NICs.Ports > 1 {
		return s
	}
	if !mergesAdapterPorts(v) || k.IBMergeNICs == 0 || k.IBHCA != nil || k.IBDisable {
		return s
	}
	kind := NICKind(s.NICs.Kind)
	if kind != NICIB && kind != NICRoCE {
		return s
	}
	speed, err := LookupNICSpeed(s.NICs.Speed, kind)
	if err != nil {
		return s
	}
	per := s.NICs.Count / slots
	merged := ""
	for _, row := range nicSpeeds {
		if row.Gbps == speed.Gbps*per && slices.Contains(row.Kinds, kind) {
			merged = row.Name
			break
		}
	}
	if merged == "" {
		return s
	}
	out := s
	out.NICs.Count, out.NICs.Ports, out.NICs.Speed, out.NICs.merged = slots, per, merged, per
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
	if err := c.Run.Validate(); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if knobs.IBDisable && node.NICs.Count > 0 {
		// NCCL_IB_DISABLE turns off NCCL's NET/IB, not a network plugin:
		// on aws-ofi-nccl or GPUDirect-TCPX/TCPXO it changes nothing
		// (IBDisableInert says so).
		if k, err := ParseNICKind(node.NICs.Kind); err == nil {
			if st, err := ResolveStack(node.NICs.Stack, k); err == nil && !st.ReadsIBDisable() && st != StackSocket {
				knobs.IBDisable = false
				knobs.IBDisableInert = string(st)
			}
		}
	}
	node = node.mergedAdapterPorts(ver, knobs)
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
		// cl.Spec holds the node as NCCL sees it (mergedAdapterPorts): the
		// same ports, cabled per NIC.
		if cl.Fabric, err = cl.Spec.buildFabric(t, cl.Nodes); err != nil {
			return nil, fmt.Errorf("fabric: %w", err)
		}
		cl.Fabric.Seed = c.Seed
		cl.Fabric.applyKnobs(knobs)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return cl, nil
}

// PlanFabric sizes the cluster's fabric without building the nodes (cheap:
// scenarios calls it to place errors in the file). Errors are *FabricError.
func (c ClusterSpec) PlanFabric() (*FabricPlan, error) {
	nodes := c.Nodes
	if nodes < 1 {
		nodes = 1
	}
	nics := c.Node.NICs
	if nics.Count == 0 {
		return nil, fabErr("kind", "the nodes have no NIC to cable")
	}
	kind, err := ParseNICKind(nics.Kind)
	if err != nil {
		return nil, err
	}
	speed, err := LookupNICSpeed(nics.Speed, kind)
	if err != nil {
		return nil, err
	}
	p, err := PlanFabric(c.Fabric, nodes, nics.Count, max(nics.Ports, 1), kind, float64(speed.Gbps))
	if err != nil {
		return nil, err
	}
	for i, d := range c.Fabric.Degraded {
		if err := p.checkLinkName(normLinkName(d.Link), nodes); err != nil {
			return nil, fabItemErr("degraded", i, "link", "%s", err)
		}
	}
	return p, nil
}

// CheckFabric sizes and wires the fabric on stand-in NICs (no node
// internals), so that every fabric error, a fabric the degraded links cut
// apart included, is found without building the nodes. Errors are
// *FabricError.
func (c ClusterSpec) CheckFabric() error {
	p, err := c.PlanFabric()
	if err != nil {
		return err
	}
	t := &Topology{}
	nodes := make([]*NodeElems, len(p.Slot))
	for n := range nodes {
		ne := &NodeElems{}
		for i := 0; i < p.NICs; i++ {
			id, err := t.Add(Element{Kind: KindNIC, Name: fmt.Sprintf("node%d/nic%d", n, i), Node: n, Index: i, Socket: -1})
			if err != nil {
				return err
			}
			ne.NICs = append(ne.NICs, id)
		}
		nodes[n] = ne
	}
	_, err = buildFabric(t, c.Fabric, p, nodes, SwitchLatency)
	return err
}

func (c ClusterSpec) buildFabric(t *Topology, nodes []*NodeElems) (*Fabric, error) {
	f := c.Fabric
	lat := SwitchLatency
	if f.SwitchLatencyNs > 0 {
		lat = Time(f.SwitchLatencyNs * float64(Nanosecond))
	}
	spec := c
	spec.Nodes = len(nodes)
	p, err := spec.PlanFabric()
	if err != nil {
		return nil, err
	}
	fb, err := buildFabric(t, f, p, nodes, lat)
	if err != nil {
		return nil, err
	}
	if len(nodes) > 0 && len(nodes[0].NICs) > 0 {
		if nic := t.Elem(nodes[0].NICs[0]).NIC; nic != nil {
			fb.LinkLayer, fb.RoCE = nic.Kind, nic.RoCE
		}
	}
	return fb, nil
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
