package model

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Kind is the type of a topology element.
type Kind uint8

// Element kinds.
const (
	KindGPU Kind = iota
	KindNVSwitch
	KindPCIeSwitch
	// KindHostBridge is a CPU root port / PCIe host bridge.
	KindHostBridge
	// KindCPU is one CPU socket (NUMA domain) with its host memory.
	KindCPU
	KindNIC
	// KindSwitch is a network fabric switch.
	KindSwitch
	// KindHostMem is the host memory of one socket; traffic staged in host
	// memory (SHM, NET without GPUDirect RDMA) is written into and read out
	// of it.
	KindHostMem
)

var kindNames = [...]string{"gpu", "nvswitch", "pcie-switch", "host-bridge", "cpu", "nic", "switch", "host-memory"}

// String returns the kind's name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// LinkKind is the technology of a link.
type LinkKind uint8

// Link kinds.
const (
	LinkNVLink LinkKind = iota
	LinkPCIe
	// LinkCPU joins a host bridge to its socket (inside the CPU).
	LinkCPU
	// LinkSMP joins two CPU sockets (UPI, xGMI, ...).
	LinkSMP
	// LinkC2C is an NVLink-C2C link between a GPU and a Grace CPU.
	LinkC2C
	// LinkNet is a network cable between a NIC and a fabric switch, or between switches.
	LinkNet
	// LinkMem joins a socket to its host memory.
	LinkMem
)

var linkKindNames = [...]string{"nvlink", "pcie", "cpu", "smp", "c2c", "net", "mem"}

// String returns the link kind's name.
func (k LinkKind) String() string {
	if int(k) < len(linkKindNames) {
		return linkKindNames[k]
	}
	return fmt.Sprintf("link(%d)", k)
}

// ElemID identifies an element in a Topology (an index into Elements).
type ElemID int32

// LinkID identifies a directed link in a Topology (an index into Links).
type LinkID int32

// None is the ID of no element.
const None ElemID = -1

// Element is one vertex of the topology graph.
type Element struct {
	ID   ElemID
	Kind Kind
	// Name is hierarchical and unique: "node3/gpu5", "node0/cpu1", "leaf2".
	Name string
	// Node is the index of the server the element belongs to, -1 for fabric switches.
	Node int
	// Index is the element's index among elements of its kind within its node
	// (the local GPU index, the NIC index, the socket number).
	Index int
	// Socket is the CPU socket (NUMA domain) the element hangs off, -1 if none.
	Socket int
	// GPU is set for GPUs.
	GPU *GPUModel
	// NIC is set for NICs.
	NIC *NICInfo
	// CPU is set for CPU sockets.
	CPU *CPUModel
	// Multicast is set for NVSwitches that support NVLink SHARP.
	Multicast bool
	// GDR is false for GPUs or NICs that cannot do GPUDirect RDMA (no
	// nvidia-peermem / dma-buf); true otherwise.
	GDR bool
}

// NICInfo describes a NIC element.
type NICInfo struct {
	Kind NICKind
	// Stack is the network stack driving the NIC (never empty once built).
	Stack NetStack
	Speed NICSpeed
	// Device is the verbs or interface name, e.g. "mlx5_0".
	Device string
	// Rail is the rail the NIC's port is cabled to (same rail index on every node).
	Rail int
	// RoCE parameters; zero values mean defaults (PFC on, ECN on, MTU 4096, no loss).
	RoCE RoCEParams
	// Ports is the number of fabric ports (>= 1), each Speed/Ports.
	Ports int
	// PCIeGen is the PCIe generation of the NIC's x16 slot.
	PCIeGen int
}

// HostCapGBps is the most the NIC can move per direction through its PCIe
// x16 slot (the catalog's theoretical figure): a 400G NIC in a Gen4 slot is
// held to 31.5 GB/s, below its 50 GB/s line rate (fabric-facts §6.1).
func (n *NICInfo) HostCapGBps() GBps {
	g, err := LookupPCIe(n.PCIeGen)
	if err != nil {
		return n.Speed.LineGBps()
	}
	return min(n.Speed.LineGBps(), g.X16GBps)
}

// RoCEParams are the Ethernet-fabric settings that change RoCEv2 behaviour.
type RoCEParams struct {
	// PFC is false when priority flow control is off (lossy RoCE).
	PFC bool `yaml:"pfc"`
	// ECN is false when ECN marking / DCQCN is off.
	ECN bool `yaml:"ecn"`
	// MTU is the RoCE path MTU in bytes (256..4096).
	MTU int `yaml:"mtu"`
	// LossRate is the packet loss probability on the fabric (0..1).
	LossRate float64 `yaml:"loss_rate"`
	// GIDIndex is the GID table index in use; -1 = auto.
	GIDIndex int `yaml:"gid_index"`
	// DCQCN is true when the NICs run DCQCN rate control on ECN marks
	// (Zhu et al., SIGCOMM 2015; fabric-facts §4.3); it needs ECN.
	DCQCN bool `yaml:"dcqcn"`
	// Retransmit is the NIC's loss recovery; empty means go-back-n.
	Retransmit Retransmit `yaml:"retransmit,omitempty"`
	// SwitchMTU is the Ethernet (IP) MTU of the switch ports in bytes; 0
	// means jumbo frames (9216, the usual data-centre setting). A RoCE
	// packet carrying a full path-MTU payload is the payload plus 60 B of
	// IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4 (linux include/rdma/ib_pack.h header sizes); a
	// switch MTU below that drops every full packet.
	SwitchMTU int `yaml:"switch_mtu,omitempty"`
}

// RoCEIPOverhead is what a RoCEv2 packet adds to its payload inside the IP
// MTU: IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4 bytes (linux
// include/rdma/ib_pack.h sizes).
const RoCEIPOverhead = 60

// Retransmit is how an RDMA NIC recovers a lost packet.
type Retransmit string

// Loss recovery schemes (fabric-facts §4.5).
const (
	// GoBackN resends everything after the lost packet (ConnectX RC NICs).
	GoBackN Retransmit = "go-back-n"
	// SelectiveRepeat resends only the lost packet (IRN, Mittal et al.,
	// SIGCOMM 2018).
	SelectiveRepeat Retransmit = "selective-repeat"
)

// ParseRetransmit reads a loss recovery scheme; "" is go-back-n.
func ParseRetransmit(s string) (Retransmit, error) {
	switch r := Retransmit(strings.ToLower(strings.TrimSpace(s))); r {
	case "", GoBackN:
		return GoBackN, nil
	case SelectiveRepeat:
		return r, nil
	}
	return "", fmt.Errorf("unknown %q (known: go-back-n, selective-repeat)", s)
}

// DefaultRoCE returns the settings of a well-configured lossless RoCEv2
// fabric: PFC, ECN with DCQCN, MTU 4096, go-back-N recovery (ConnectX RC,
// fabric-facts §4.5).
func DefaultRoCE() RoCEParams {
	return RoCEParams{PFC: true, ECN: true, DCQCN: true, MTU: 4096, GIDIndex: -1, Retransmit: GoBackN}
}

// Link is one direction of a physical link. Every physical link is stored as
// two Links, each other's Reverse.
type Link struct {
	ID       LinkID
	From, To ElemID
	Kind     LinkKind
	// BW is the achievable bandwidth in this direction, used as the link's
	// capacity by the flow simulator.
	BW GBps
	// NCCLBW is the bandwidth NCCL's topology code assigns to the link (its
	// graph search and tuning use this, not BW).
	NCCLBW GBps
	// Latency is the one-way propagation and switching delay of the link.
	Latency Time
	// Lanes is the NVLink link count or the PCIe width.
	Lanes int
	// Reverse is the opposite direction of the same physical link.
	Reverse LinkID
}

// Topology is the graph of a whole cluster. Elements and links are referred
// to by ID; the zero value is an empty topology ready for Add calls.
type Topology struct {
	Elements []Element
	Links    []Link
	// Out lists the outgoing links of each element, in insertion order.
	Out [][]LinkID
	// NumNodes is the number of servers.
	NumNodes int

	byName map[string]ElemID
}

// Add appends an element and returns its ID. Its ID field is set by Add.
// Add fails if the name is empty or already used.
func (t *Topology) Add(e Element) (ElemID, error) {
	if e.Name == "" {
		return None, errors.New("model: element with empty name")
	}
	if t.byName == nil {
		t.reindex()
	}
	if _, dup := t.byName[e.Name]; dup {
		return None, fmt.Errorf("model: duplicate element name %q", e.Name)
	}
	e.ID = ElemID(len(t.Elements))
	t.Elements = append(t.Elements, e)
	t.Out = append(t.Out, nil)
	t.byName[e.Name] = e.ID
	if e.Node+1 > t.NumNodes {
		t.NumNodes = e.Node + 1
	}
	return e.ID, nil
}

func (t *Topology) reindex() {
	t.byName = make(map[string]ElemID, len(t.Elements))
	for i := range t.Elements {
		t.byName[t.Elements[i].Name] = ElemID(i)
	}
}

// Connect adds a physical link between a and b as two directed links with
// the same bandwidth and latency, and returns the a->b direction.
func (t *Topology) Connect(a, b ElemID, kind LinkKind, bw, ncclBW GBps, lat Time, lanes int) (LinkID, error) {
	return t.ConnectAsym(a, b, kind, bw, bw, ncclBW, lat, lanes)
}

// ConnectAsym is Connect with a different achievable bandwidth in each
// direction (bwAB from a to b, bwBA back).
func (t *Topology) ConnectAsym(a, b ElemID, kind LinkKind, bwAB, bwBA, ncclBW GBps, lat Time, lanes int) (LinkID, error) {
	if !t.valid(a) || !t.valid(b) || a == b {
		return -1, fmt.Errorf("model: cannot link element %d to %d", a, b)
	}
	if bwAB <= 0 || bwBA <= 0 {
		return -1, fmt.Errorf("model: link %s <-> %s: bandwidth must be positive", t.Elements[a].Name, t.Elements[b].Name)
	}
	if lat < 0 {
		return -1, fmt.Errorf("model: link %s <-> %s: negative latency", t.Elements[a].Name, t.Elements[b].Name)
	}
	id := LinkID(len(t.Links))
	t.Links = append(t.Links,
		Link{ID: id, From: a, To: b, Kind: kind, BW: bwAB, NCCLBW: ncclBW, Latency: lat, Lanes: lanes, Reverse: id + 1},
		Link{ID: id + 1, From: b, To: a, Kind: kind, BW: bwBA, NCCLBW: ncclBW, Latency: lat, Lanes: lanes, Reverse: id})
	t.Out[a] = append(t.Out[a], id)
	t.Out[b] = append(t.Out[b], id+1)
	return id, nil
}

func (t *Topology) valid(id ElemID) bool { return id >= 0 && int(id) < len(t.Elements) }

// ByName returns the element with the given hierarchical name.
func (t *Topology) ByName(name string) (ElemID, bool) {
	if t.byName == nil {
		t.reindex()
	}
	id, ok := t.byName[name]
	return id, ok
}

// Elem returns the element with the given ID. It panics on an invalid ID (a
// caller bug: IDs come from this topology).
func (t *Topology) Elem(id ElemID) *Element { return &t.Elements[id] }

// LinkBetween returns the directed link from a to b, if one exists. When
// there are several parallel links the first is returned. O(degree of a).
func (t *Topology) LinkBetween(a, b ElemID) (LinkID, bool) {
	for _, l := range t.Out[a] {
		if t.Links[l].To == b {
			return l, true
		}
	}
	return -1, false
}

// GPUs returns the IDs of all GPUs in node order, then local index order;
// the position in this slice is the GPU's rank in a communicator that spans
// every GPU. O(elements).
func (t *Topology) GPUs() []ElemID { return t.ofKind(KindGPU) }

// NICs returns the IDs of all NICs in node, then index order.
func (t *Topology) NICs() []ElemID { return t.ofKind(KindNIC) }

func (t *Topology) ofKind(k Kind) []ElemID {
	var ids []ElemID
	for i := range t.Elements {
		if t.Elements[i].Kind == k {
			ids = append(ids, ElemID(i))
		}
	}
	sort.SliceStable(ids, func(a, b int) bool {
		ea, eb := &t.Elements[ids[a]], &t.Elements[ids[b]]
		if ea.Node != eb.Node {
			return ea.Node < eb.Node
		}
		return ea.Index < eb.Index
	})
	return ids
}

// NodeElems returns the elements of kind k on server node, in index order.
func (t *Topology) NodeElems(node int, k Kind) []ElemID {
	var ids []ElemID
	for _, id := range t.ofKind(k) {
		if t.Elements[id].Node == node {
			ids = append(ids, id)
		}
	}
	return ids
}

// Validate checks the graph: unique names, links between existing elements
// with positive bandwidth, consistent reverse links, every GPU attached to
// its host (PCIe or C2C), every NIC attached to its host and to the fabric
// when there is more than one node. The error names the offending element.
func (t *Topology) Validate() error {
	if len(t.Elements) == 0 {
		return errors.New("model: empty topology")
	}
	seen := make(map[string]bool, len(t.Elements))
	for i, e := range t.Elements {
		if e.ID != ElemID(i) {
			return fmt.Errorf("model: element %q has ID %d at index %d", e.Name, e.ID, i)
		}
		if seen[e.Name] {
			return fmt.Errorf("model: duplicate element name %q", e.Name)
		}
		seen[e.Name] = true
		if e.Kind == KindGPU && e.GPU == nil {
			return fmt.Errorf("model: %s: GPU without a model", e.Name)
		}
		if e.Kind == KindNIC && e.NIC == nil {
			return fmt.Errorf("model: %s: NIC without a speed", e.Name)
		}
	}
	for i, l := range t.Links {
		if l.ID != LinkID(i) || !t.valid(l.From) || !t.valid(l.To) {
			return fmt.Errorf("model: link %d is malformed", i)
		}
		if l.BW <= 0 {
			return fmt.Errorf("model: link %s -> %s: bandwidth must be positive", t.Elements[l.From].Name, t.Elements[l.To].Name)
		}
		if int(l.Reverse) >= len(t.Links) || t.Links[l.Reverse].From != l.To || t.Links[l.Reverse].To != l.From {
			return fmt.Errorf("model: link %s -> %s has no matching reverse", t.Elements[l.From].Name, t.Elements[l.To].Name)
		}
	}
	for _, e := range t.Elements {
		switch e.Kind {
		case KindGPU:
			if !t.hasLink(e.ID, LinkPCIe) && !t.hasLink(e.ID, LinkC2C) {
				return fmt.Errorf("model: %s: GPU is not attached to a PCIe switch, host bridge or CPU", e.Name)
			}
		case KindNIC:
			if !t.hasLink(e.ID, LinkPCIe) && !t.hasLink(e.ID, LinkC2C) {
				return fmt.Errorf("model: %s: NIC is not attached to a PCIe switch or host bridge", e.Name)
			}
			if t.NumNodes > 1 && !t.hasLink(e.ID, LinkNet) {
				return fmt.Errorf("model: %s: NIC is not cabled to the fabric", e.Name)
			}
		case KindNVSwitch:
			if !t.hasLink(e.ID, LinkNVLink) {
				return fmt.Errorf("model: %s: NVSwitch has no NVLink", e.Name)
			}
		}
	}
	return nil
}

func (t *Topology) hasLink(id ElemID, k LinkKind) bool {
	for _, l := range t.Out[id] {
		if t.Links[l].Kind == k {
			return true
		}
	}
	return false
}

// Describe returns a one-line inventory such as
// "2 nodes: 16x H100-SXM, 16x NIC (400G ib), 8 NVSwitch".
func (t *Topology) Describe() string {
	counts := map[string]int{}
	var order []string
	add := func(k string) {
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	for _, e := range t.Elements {
		switch e.Kind {
		case KindGPU:
			add(e.GPU.Name)
		case KindNIC:
			add(fmt.Sprintf("NIC (%s %s)", e.NIC.Speed.Name, e.NIC.Kind))
		case KindNVSwitch:
			add("NVSwitch")
		}
	}
	parts := make([]string, 0, len(order))
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%dx %s", counts[k], k))
	}
	return fmt.Sprintf("%d node(s): %s", t.NumNodes, strings.Join(parts, ", "))
}
