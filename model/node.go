package model

import (
	"errors"
	"fmt"
	"sort"
)

// NodeSpec is a declarative description of one server (or, for a multi-node
// NVLink domain such as GB200 NVL72, one NVLink domain). It is plain data
// that YAML files, presets and topology parsers produce; Build turns it into
// topology elements.
type NodeSpec struct {
	// Name is the template name ("dgx-h100") or a user's label.
	Name string `yaml:"name,omitempty"`
	// Description is a one-line summary shown by `collsim presets`.
	Description string `yaml:"description,omitempty"`
	// Source cites where the layout comes from.
	Source string `yaml:"source,omitempty"`
	// GPU is the GPU catalog name.
	GPU string `yaml:"gpu"`
	// GPUs is the number of GPUs.
	GPUs int `yaml:"gpus"`
	// CPU is the CPU vendor ("intel", "amd", "grace", ...).
	CPU string `yaml:"cpu"`
	// SocketsPerHost groups sockets into hosts (operating-system instances);
	// sockets of different hosts share no SMP link. 0 means all sockets form
	// one host. GB200 NVL72 uses 2 (one tray, two Grace CPUs).
	SocketsPerHost int `yaml:"sockets_per_host,omitempty"`
	// Sockets is the PCIe layout under each CPU socket.
	Sockets []SocketSpec `yaml:"sockets"`
	// NVLink describes the GPU-to-GPU NVLink fabric.
	NVLink NVLinkSpec `yaml:"nvlink"`
	// NICs are the network adapters. NIC i sits where the PCIe layout lists index i.
	NICs NICSpec `yaml:"nics"`
	// NICSlots is how many NIC positions the PCIe layout names; Build places
	// NICs.Count adapters evenly over these slots. 0 means NICs.Count.
	NICSlots int `yaml:"nic_slots,omitempty"`
	// GPUDirect is false when the GPU driver cannot do GPUDirect RDMA
	// (nvidia-peermem or dma-buf missing). Default true.
	GPUDirect *bool `yaml:"gpudirect,omitempty"`
}

// SocketSpec is one CPU socket and what hangs off its root ports.
type SocketSpec struct {
	HostBridges []BridgeSpec `yaml:"host_bridges"`
}

// BridgeSpec is a PCIe host bridge or a PCIe switch: the devices directly
// below it and the switches below those. GPU and NIC entries are indices
// (NIC entries are slot indices, see NodeSpec.NICSlots).
type BridgeSpec struct {
	GPUs     []int        `yaml:"gpus,omitempty"`
	NICs     []int        `yaml:"nics,omitempty"`
	Switches []BridgeSpec `yaml:"switches,omitempty"`
	// Gen and Width describe a switch's uplink; 0 means x16 at the
	// platform's generation: a host bridge's Gen (its root ports; 0 means
	// the GPU's PCIe generation), inherited by the switches below it. The
	// devices below a switch never raise its generation: a NIC's link
	// trains at the lower of the adapter's and the switch's generations.
	Gen   int `yaml:"gen,omitempty"`
	Width int `yaml:"width,omitempty"`
}

// NVLinkSpec describes NVLink between the GPUs of a node.
type NVLinkSpec struct {
	// Kind is "nvswitch" (every GPU to a switch fabric), "mesh" (every pair
	// directly linked), "pairs" (explicit list) or "none".
	Kind string `yaml:"kind"`
	// Switch is the NVSwitch generation for kind nvswitch; default the one
	// that pairs with the GPU's NVLink generation.
	Switch string `yaml:"switch,omitempty"`
	// Links is the NVLink count per GPU to the switches (nvswitch) or per
	// pair (mesh); 0 means all of the GPU's links (nvswitch) or an even share
	// (mesh).
	Links int `yaml:"links,omitempty"`
	// Pairs lists [gpuA, gpuB, links] for kind pairs.
	Pairs [][3]int `yaml:"pairs,omitempty"`
}

// NICSpec is the network adapters of a node.
type NICSpec struct {
	Count int `yaml:"count"`
	// Speed is a NIC speed catalog name: "HDR", "NDR", "400G", ...
	Speed string `yaml:"speed,omitempty"`
	// Kind is ib, roce, efa or tcp.
	Kind string `yaml:"kind,omitempty"`
	// Stack is the network stack driving the NICs (NetStacks lists the
	// names); empty means the kind's default (DefaultStack).
	Stack string `yaml:"stack,omitempty"`
	// RoCE holds RoCEv2 fabric settings; nil means a well-configured lossless fabric.
	RoCE *RoCEParams `yaml:"roce,omitempty"`
	// GDR is false when the NICs cannot do GPUDirect RDMA. Default true for RDMA kinds.
	GDR *bool `yaml:"gdr,omitempty"`
	// Ports is the number of fabric ports per NIC (0 means 1); Speed is
	// split evenly over them and each port has its own cable (to its own
	// plane when the fabric has several).
	Ports int `yaml:"ports,omitempty"`
	// PCIe is the PCIe generation of the NIC's x16 slot ("gen4", "gen5");
	// empty means the generation the NIC speed needs (NICSpeed.PCIeGen).
	PCIe string `yaml:"pcie,omitempty"`
	// merged is the count of NICs each NIC stands for when NCCL merged the
	// ports of one adapter (mergedAdapterPorts), 0 otherwise: it names the
	// device as NCCL does, the port devices joined by '+'.
	merged int
}

// Physical latencies of one hop, used for path latency reporting and for the
// extra hops of multi-tier fabrics. Per-step software latencies live in the
// simulator's protocol table, calibrated against nccl-tests.
const (
	NVLinkHopLatency = 100 * Nanosecond // NVLink + NVSwitch port-to-port, order of magnitude
	PCIeHopLatency   = 150 * Nanosecond // one PCIe switch or root port traversal
	SMPHopLatency    = 100 * Nanosecond // UPI/xGMI hop
	NetCableLatency  = 50 * Nanosecond  // ~10 m of fibre
	SwitchLatency    = 300 * Nanosecond // cut-through IB/Ethernet switch port-to-port (NDR ~130 ns, Spectrum ~300-600 ns)
	localBW          = GBps(5000)       // NCCL LOC_BW: links inside a CPU or switch package
)

// MaxGPUsPerNode bounds a node (or one NVLink domain, which NCCL treats as
// a node): 576 GPUs, the largest NVLink domain NVIDIA has announced (NVL576).
const MaxGPUsPerNode = 576

// NodeElems records the element IDs one Build call created.
type NodeElems struct {
	GPUs     []ElemID
	NICs     []ElemID
	CPUs     []ElemID
	Mem      []ElemID
	NVSwitch ElemID
	// FirstElem/NumElems and FirstLink/NumLinks delimit the contiguous
	// blocks of elements and links this node's Build added.
	FirstElem ElemID
	NumElems  int
	FirstLink LinkID
	NumLinks  int
}

// Validate checks the spec without building it; errors name the field.
func (s *NodeSpec) Validate() error {
	_, err := s.resolve()
	return err
}

type resolvedNode struct {
	gpu    GPUModel
	cpu    CPUModel
	nvl    NVLinkGen
	nics   []NICInfo
	slotOf []int // NIC index -> slot
}

func (s *NodeSpec) resolve() (*resolvedNode, error) {
	r := &resolvedNode{}
	var err error
	if r.gpu, err = LookupGPU(s.GPU); err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	if s.GPUs <= 0 {
		return nil, fmt.Errorf("gpus: must be at least 1, got %d", s.GPUs)
	}
	if r.gpu.NoGDR && s.GPUDirect != nil && *s.GPUDirect {
		return nil, fmt.Errorf("gpudirect: %s is a GeForce part, which has no GPUDirect RDMA (Tesla and Quadro only); leave gpudirect unset or false", r.gpu.Name)
	}
	if s.GPUs > MaxGPUsPerNode {
		return nil, fmt.Errorf("gpus: %d GPUs in one node or NVLink domain is not a real machine (max %d, NVIDIA's NVL576)", s.GPUs, MaxGPUsPerNode)
	}
	cpu := s.CPU
	if cpu == "" {
		cpu = "intel"
	}
	if r.cpu, err = LookupCPU(cpu); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	if len(s.Sockets) == 0 {
		return nil, errors.New("sockets: at least one socket is needed")
	}
	if s.SocketsPerHost < 0 {
		return nil, fmt.Errorf("sockets_per_host: must not be negative")
	}
	if r.gpu.NVLinkGen > 0 {
		if r.nvl, err = LookupNVLink(r.gpu.NVLinkGen); err != nil {
			return nil, err
		}
	}
	// Every GPU and NIC slot must appear exactly once in the PCIe layout.
	slots := s.NICSlots
	if slots == 0 {
		slots = s.NICs.Count
	}
	gpuSeen := make([]int, s.GPUs)
	slotSeen := make([]int, slots)
	var walk func(path string, b *BridgeSpec) error
	walk = func(path string, b *BridgeSpec) error {
		for _, g := range b.GPUs {
			if g < 0 || g >= s.GPUs {
				return fmt.Errorf("%s: GPU index %d out of range 0..%d", path, g, s.GPUs-1)
			}
			gpuSeen[g]++
		}
		for _, n := range b.NICs {
			if n < 0 || n >= slots {
				return fmt.Errorf("%s: NIC slot %d out of range 0..%d", path, n, slots-1)
			}
			slotSeen[n]++
		}
		if b.Gen != 0 {
			if _, err := LookupPCIe(b.Gen); err != nil {
				return fmt.Errorf("%s.gen: %w", path, err)
			}
		}
		if b.Width != 0 {
			if _, _, err := PCIeBandwidth(3, b.Width); err != nil {
				return fmt.Errorf("%s.width: %w", path, err)
			}
		}
		for i := range b.Switches {
			if err := walk(fmt.Sprintf("%s.switches[%d]", path, i), &b.Switches[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for si := range s.Sockets {
		for hi := range s.Sockets[si].HostBridges {
			if err := walk(fmt.Sprintf("sockets[%d].host_bridges[%d]", si, hi), &s.Sockets[si].HostBridges[hi]); err != nil {
				return nil, err
			}
		}
	}
	for g, n := range gpuSeen {
		if n != 1 {
			return nil, fmt.Errorf("sockets: GPU %d appears %d times in the PCIe layout (want exactly once)", g, n)
		}
	}
	for sl, n := range slotSeen {
		if n != 1 {
			return nil, fmt.Errorf("sockets: NIC slot %d appears %d times in the PCIe layout (want exactly once)", sl, n)
		}
	}
	if err := s.NVLink.validate(s.GPUs, r.gpu); err != nil {
		return nil, fmt.Errorf("nvlink: %w", err)
	}
	if s.NICs.Count < 0 || s.NICs.Count > 256 {
		return nil, fmt.Errorf("nics.count: %d is out of range 0..256", s.NICs.Count)
	}
	if s.NICs.Count > 0 {
		if slots == 0 {
			return nil, errors.New("nics: the PCIe layout has no NIC slot")
		}
		kind, err := ParseNICKind(s.NICs.Kind)
		if err != nil {
			return nil, fmt.Errorf("nics.kind: %w", err)
		}
		speed, err := LookupNICSpeed(s.NICs.Speed, kind)
		if err != nil {
			return nil, fmt.Errorf("nics.speed: %w", err)
		}
		stack, err := ResolveStack(s.NICs.Stack, kind)
		if err != nil {
			return nil, fmt.Errorf("nics.stack: %w", err)
		}
		if (stack == StackTCPX || stack == StackTCPXO) && s.NICs.GDR != nil && !*s.NICs.GDR {
			// Their plugins receive into GPU buffers: there is no staged
			// TCPX to model.
			return nil, fmt.Errorf("nics.gdr: false cannot run the %s stack, which moves data between GPU memory and the NIC by design; use stack: socket for TCP staged through host memory", stack)
		}
		ports := max(s.NICs.Ports, 1)
		if s.NICs.Ports < 0 || s.NICs.Ports > 8 {
			return nil, fmt.Errorf("nics.ports: %d is outside 1..8", s.NICs.Ports)
		}
		gen := speed.PCIeGen
		if s.NICs.PCIe != "" {
			if gen, err = ParsePCIeGen(s.NICs.PCIe); err != nil {
				return nil, fmt.Errorf("nics.pcie: %w", err)
			}
		}
		roce := DefaultRoCE()
		if s.NICs.RoCE != nil {
			roce = *s.NICs.RoCE
			if err := roce.Validate(); err != nil {
				return nil, fmt.Errorf("nics.roce: %w", err)
			}
		}
		r.slotOf = spreadSlots(s.NICs.Count, slots)
		if s.NICs.PCIe == "" {
			gen = adapterGen(speed, (s.NICs.Count+slots-1)/slots)
		}
		for i := 0; i < s.NICs.Count; i++ {
			dev := fmt.Sprintf("mlx5_%d", i)
			for j := 1; j < s.NICs.merged; j++ {
				// NIC i merges the ports that were NICs i, i+slots, ...
				// (spreadSlots), as NET/IB names a merged device.
				dev += fmt.Sprintf("+mlx5_%d", i+j*s.NICs.Count)
			}
			switch kind {
			case NICEFA:
				dev = fmt.Sprintf("rdmap%ds0", 16+i)
			case NICTCP:
				dev = fmt.Sprintf("eth%d", i)
			}
			r.nics = append(r.nics, NICInfo{Kind: kind, Stack: stack, Speed: speed, Device: dev, Rail: i, RoCE: roce, Ports: ports, PCIeGen: gen})
		}
	}
	return r, nil
}

// Validate checks RoCE settings.
func (p RoCEParams) Validate() error {
	switch p.MTU {
	case 256, 512, 1024, 2048, 4096:
	default:
		return fmt.Errorf("mtu: %d is not a RoCE MTU (known: 256, 512, 1024, 2048, 4096)", p.MTU)
	}
	if !(p.LossRate >= 0 && p.LossRate < 1) {
		return fmt.Errorf("loss_rate: %g is outside [0, 1)", p.LossRate)
	}
	if _, err := ParseRetransmit(string(p.Retransmit)); err != nil {
		return fmt.Errorf("retransmit: %w", err)
	}
	if p.DCQCN && !p.ECN {
		return errors.New("dcqcn: DCQCN reacts to ECN marks; it needs ecn: true")
	}
	if p.GIDIndex < -1 || p.GIDIndex > 255 {
		return fmt.Errorf("gid_index: %d is outside -1..255", p.GIDIndex)
	}
	if p.SwitchMTU != 0 && (p.SwitchMTU < 576 || p.SwitchMTU > 9216) {
		return fmt.Errorf("switch_mtu: %d is outside 576..9216", p.SwitchMTU)
	}
	if p.SwitchMTU != 0 && p.SwitchMTU < p.MTU+RoCEIPOverhead {
		// The host's path MTU does not fit the switch: every full-size
		// packet is dropped, the QPs exhaust their retries and NCCL fails.
		return fmt.Errorf("switch_mtu: %d is below the %d B a RoCE MTU of %d needs (payload + %d B of headers): the switches would drop every full packet; lower mtu to %d or raise the switch MTU", p.SwitchMTU, p.MTU+RoCEIPOverhead, p.MTU, RoCEIPOverhead, fitMTU(p.SwitchMTU))
	}
	return nil
}

// adapterGen is the PCIe generation of the x16 adapter that carries k NIC
// ports of the given speed in one slot. When a node has more NICs than its
// layout has slots, spreadSlots puts k of them in each slot: they are the
// ports of one multi-port adapter (a dual-port ConnectX card appears to
// NCCL as two devices, mlx5_0 and mlx5_1, on one PCIe function each) and
// share its host interface. A slot's link is sized by the generation its
// NICs need (up to the platform's, nicGen), so with the single port's
// generation two 100G ports would share a Gen3 x16 interface (~12 GB/s for 25 GB/s of ports), where
// the dual-port 100GbE adapters that such nodes carry (ConnectX-6 Dx) are
// PCIe Gen4 x16 (NVIDIA ConnectX-6 Dx product brief). The generation is the
// one the catalog gives the speed of all k ports together: 2x 100G takes
// the 200G row's Gen4. Assumption: the adapter carries its ports at line
// rate; nics.pcie states the real generation where it does not (a dual-port
// HDR ConnectX-6 on Gen4 x16).
func adapterGen(speed NICSpeed, k int) int {
	gen := speed.PCIeGen
	if k <= 1 {
		return gen
	}
	need := speed.Gbps * k
	best := 0
	for _, s := range nicSpeeds {
		if s.Gbps >= need && (best == 0 || s.PCIeGen < best) {
			best = s.PCIeGen
		}
	}
	if best == 0 {
		// Beyond the catalog's fastest row: the newest generation it names.
		for _, s := range nicSpeeds {
			best = max(best, s.PCIeGen)
		}
	}
	return max(gen, best)
}

// spreadSlots places n NICs over s slots: evenly spaced when n <= s (so two
// NICs in an eight-slot server land on both sockets), round-robin beyond.
func spreadSlots(n, s int) []int {
	out := make([]int, n)
	for i := range out {
		if n <= s {
			out[i] = i * s / n
		} else {
			out[i] = i % s
		}
	}
	return out
}

func (v *NVLinkSpec) validate(nGPU int, g GPUModel) error {
	switch v.Kind {
	case "", "none":
		return nil
	case "nvswitch", "mesh", "pairs":
	default:
		return fmt.Errorf("kind: unknown %q (known: nvswitch, mesh, pairs, none)", v.Kind)
	}
	if g.NVLinkGen == 0 {
		return fmt.Errorf("%s has no NVLink", g.Name)
	}
	if g.NVLinkBridgeOnly && v.Kind != "pairs" {
		// A PCIe card's NVLink is a bridge between cards: no NVSwitch
		// (and so no NVLS), no mesh of its links to every other card.
		return fmt.Errorf("kind: %s is a PCIe card whose NVLink is at most a bridge between two cards; use kind: pairs (bridged pairs) or none", g.Name)
	}
	switch v.Kind {
	case "nvswitch":
		if v.Switch != "" {
			sw, err := LookupNVSwitch(v.Switch)
			if err != nil {
				return fmt.Errorf("switch: %w", err)
			}
			if sw.NVLinkGen != g.NVLinkGen {
				return fmt.Errorf("switch: %s has NVLink%d ports, %s has NVLink%d links; they do not connect", v.Switch, sw.NVLinkGen, g.Name, g.NVLinkGen)
			}
		} else if _, err := NVSwitchForNVLink(g.NVLinkGen); err != nil {
			return err
		}
		if v.Links < 0 || v.Links > g.NVLinkLinks {
			return fmt.Errorf("links: %d is outside 0..%d for %s", v.Links, g.NVLinkLinks, g.Name)
		}
	case "mesh":
		if nGPU > 1 {
			per := v.Links
			if per == 0 {
				per = g.NVLinkLinks / (nGPU - 1)
			}
			if per <= 0 || per*(nGPU-1) > g.NVLinkLinks {
				return fmt.Errorf("a full mesh of %d %s needs %d links per pair, the GPU has %d links", nGPU, g.Name, max(per, 1), g.NVLinkLinks)
			}
		}
	case "pairs":
		used := make([]int, nGPU)
		for i, p := range v.Pairs {
			if p[0] < 0 || p[0] >= nGPU || p[1] < 0 || p[1] >= nGPU || p[0] == p[1] || p[2] <= 0 {
				return fmt.Errorf("pairs[%d]: %v is not [gpuA, gpuB, links>0] with distinct GPUs in 0..%d", i, p, nGPU-1)
			}
			used[p[0]] += p[2]
			used[p[1]] += p[2]
		}
		for gi, u := range used {
			if u > g.NVLinkLinks {
				return fmt.Errorf("GPU %d uses %d NVLinks, %s has %d", gi, u, g.Name, g.NVLinkLinks)
			}
		}
	}
	return nil
}

// Build adds the node's elements and internal links to t as server number
// node. Names are "node<N>/gpu<i>", "node<N>/nic<i>", "node<N>/cpu<s>",
// "node<N>/cpu<s>/mem", "node<N>/cpu<s>/hb<h>", "node<N>/pcisw<k>" and
// "node<N>/nvswitch" (all NVSwitches merged into one element, as NCCL does).
func (s *NodeSpec) Build(t *Topology, node int) (*NodeElems, error) {
	r, err := s.resolve()
	if err != nil {
		return nil, fmt.Errorf("node %q: %w", s.Name, err)
	}
	b := &nodeBuilder{t: t, node: node, spec: s, r: r, out: &NodeElems{NVSwitch: None,
		FirstElem: ElemID(len(t.Elements)), FirstLink: LinkID(len(t.Links))}}
	if err := b.build(); err != nil {
		return nil, fmt.Errorf("node %q: %w", s.Name, err)
	}
	b.out.NumElems = len(t.Elements) - int(b.out.FirstElem)
	b.out.NumLinks = len(t.Links) - int(b.out.FirstLink)
	return b.out, nil
}

type nodeBuilder struct {
	t     *Topology
	node  int
	spec  *NodeSpec
	r     *resolvedNode
	out   *NodeElems
	nSw   int
	slots map[int][]int // slot -> NIC indices
}

func (b *nodeBuilder) name(f string, a ...any) string {
	return fmt.Sprintf("node%d/", b.node) + fmt.Sprintf(f, a...)
}

func (b *nodeBuilder) build() error {
	s, r, t := b.spec, b.r, b.t
	// GeForce parts have no GPUDirect RDMA (CUDA's GPUDirect RDMA guide:
	// "available on both Tesla and Quadro GPUs"), whatever the driver.
	gdr := (s.GPUDirect == nil || *s.GPUDirect) && !r.gpu.NoGDR
	b.out.GPUs = make([]ElemID, s.GPUs)
	// Sockets first so GPU socket numbers are known when GPUs are created.
	gpuSocket := make([]int, s.GPUs)
	for si := range s.Sockets {
		for _, hb := range s.Sockets[si].HostBridges {
			markSocket(&hb, si, gpuSocket)
		}
	}
	for si := range s.Sockets {
		cpu := r.cpu
		id, err := t.Add(Element{Kind: KindCPU, Name: b.name("cpu%d", si), Node: b.node, Index: si, Socket: si, CPU: &cpu})
		if err != nil {
			return err
		}
		mem, err := t.Add(Element{Kind: KindHostMem, Name: b.name("cpu%d/mem", si), Node: b.node, Index: si, Socket: si})
		if err != nil {
			return err
		}
		if _, err := t.Connect(id, mem, LinkMem, r.cpu.HostMemGBps, localBW, 0, 0); err != nil {
			return err
		}
		b.out.CPUs = append(b.out.CPUs, id)
		b.out.Mem = append(b.out.Mem, mem)
	}
	perHost := s.SocketsPerHost
	if perHost == 0 {
		perHost = len(s.Sockets)
	}
	for i := 0; i < len(s.Sockets); i++ {
		for j := i + 1; j < len(s.Sockets); j++ {
			if i/perHost != j/perHost {
				continue
			}
			if _, err := t.Connect(b.out.CPUs[i], b.out.CPUs[j], LinkSMP, r.cpu.InterSocketGBps, r.cpu.NCCLInterSocketGBps, SMPHopLatency, 0); err != nil {
				return err
			}
		}
	}
	for g := 0; g < s.GPUs; g++ {
		gm := r.gpu
		id, err := t.Add(Element{Kind: KindGPU, Name: b.name("gpu%d", g), Node: b.node, Index: g, Socket: gpuSocket[g], GPU: &gm, GDR: gdr})
		if err != nil {
			return err
		}
		b.out.GPUs[g] = id
	}
	b.slots = map[int][]int{}
	for i, sl := range r.slotOf {
		b.slots[sl] = append(b.slots[sl], i)
	}
	b.out.NICs = make([]ElemID, len(r.nics))
	for si := range s.Sockets {
		for hi := range s.Sockets[si].HostBridges {
			hb, err := t.Add(Element{Kind: KindHostBridge, Name: b.name("cpu%d/hb%d", si, hi), Node: b.node, Index: hi, Socket: si})
			if err != nil {
				return err
			}
			if _, err := t.Connect(b.out.CPUs[si], hb, LinkCPU, localBW, localBW, 0, 0); err != nil {
				return err
			}
			br := &s.Sockets[si].HostBridges[hi]
			if err := b.attach(hb, si, br, b.platformGen(br)); err != nil {
				return err
			}
		}
	}
	return b.nvlinks()
}

func markSocket(br *BridgeSpec, si int, gpuSocket []int) {
	for _, g := range br.GPUs {
		gpuSocket[g] = si
	}
	for i := range br.Switches {
		markSocket(&br.Switches[i], si, gpuSocket)
	}
}

// platformGen is the PCIe generation of the platform below a host bridge:
// the generation the layout states for the host bridge (its root ports),
// else the GPU's. That default is an assumption: the CPU catalog names no
// PCIe generation, and the presets pair each GPU with the platform that
// carries it (V100 on Gen3 PLX switches, A100 on Gen4, H100 and later on
// Gen5); a node whose host is newer than its GPUs (an L40S on a Gen5
// server) states gen on its host bridges, or its NICs train at the GPU's.
func (b *nodeBuilder) platformGen(hb *BridgeSpec) int {
	if hb.Gen != 0 {
		return hb.Gen
	}
	return b.r.gpu.PCIeGen
}

// switchGen is the generation of a PCIe switch below a bridge of generation
// parent: the one the layout states for it, else its parent's (the
// platform's). The devices below a switch do not raise it: a PCIe link
// trains at the highest generation both of its ends support, so a Gen4 NIC
// under a Gen3 switch runs at Gen3 and leaves the switch and its uplink at
// Gen3 (see nicGen).
func switchGen(sw *BridgeSpec, parent int) int {
	if sw.Gen != 0 {
		return sw.Gen
	}
	return parent
}

// nicGen is the generation a NIC's x16 link trains at below a bridge of
// generation parent: the lower of the adapter's (nics.pcie, or the one its
// speed needs, adapterGen) and the bridge's. A 200G NIC (Gen4) in a DGX-1's
// Gen3 PLX switch gets ~12 GB/s, not Gen4's ~25.
func nicGen(nic, parent int) int {
	if parent > 0 && parent < nic {
		return parent
	}
	return nic
}

func (b *nodeBuilder) pcieLink(a, c ElemID, gen, width int) error {
	line, nccl, err := PCIeBandwidth(gen, width)
	if err != nil {
		return err
	}
	_, err = b.t.Connect(a, c, LinkPCIe, line, nccl, PCIeHopLatency, width)
	return err
}

// attach creates the devices and switches below parent (a host bridge or
// switch) whose PCIe generation is gen.
func (b *nodeBuilder) attach(parent ElemID, socket int, br *BridgeSpec, gen int) error {
	t, r := b.t, b.r
	for _, g := range br.GPUs {
		if err := b.pcieLink(b.out.GPUs[g], parent, r.gpu.PCIeGen, r.gpu.PCIeWidth); err != nil {
			return err
		}
	}
	for _, sl := range br.NICs {
		for _, n := range b.slots[sl] {
			info := r.nics[n]
			info.PCIeGen = nicGen(info.PCIeGen, gen)
			nicGDR := (info.Kind.RDMA() || info.Stack.GPUDirect()) && (b.spec.NICs.GDR == nil || *b.spec.NICs.GDR)
			id, err := t.Add(Element{Kind: KindNIC, Name: b.name("nic%d", n), Node: b.node, Index: n, Socket: socket, NIC: &info, GDR: nicGDR})
			if err != nil {
				return err
			}
			b.out.NICs[n] = id
			if err := b.pcieLink(id, parent, info.PCIeGen, 16); err != nil {
				return err
			}
		}
	}
	for i := range br.Switches {
		sw := &br.Switches[i]
		id, err := t.Add(Element{Kind: KindPCIeSwitch, Name: b.name("pcisw%d", b.nSw), Node: b.node, Index: b.nSw, Socket: socket})
		if err != nil {
			return err
		}
		b.nSw++
		swGen, width := switchGen(sw, gen), sw.Width
		if width == 0 {
			width = 16
		}
		if err := b.pcieLink(id, parent, swGen, width); err != nil {
			return err
		}
		if err := b.attach(id, socket, sw, swGen); err != nil {
			return err
		}
	}
	return nil
}

func (b *nodeBuilder) nvlinks() error {
	s, r, t := b.spec, b.r, b.t
	v := s.NVLink
	if v.Kind == "" || v.Kind == "none" || s.GPUs < 2 {
		return nil
	}
	per, nccl := r.nvl.LineGBps, r.nvl.NCCLGBps
	switch v.Kind {
	case "nvswitch":
		sw, err := NVSwitchForNVLink(r.gpu.NVLinkGen)
		if err != nil {
			return err
		}
		if v.Switch != "" {
			if sw, err = LookupNVSwitch(v.Switch); err != nil {
				return err
			}
		}
		id, err := t.Add(Element{Kind: KindNVSwitch, Name: b.name("nvswitch"), Node: b.node, Socket: -1, Multicast: sw.Multicast})
		if err != nil {
			return err
		}
		b.out.NVSwitch = id
		links := v.Links
		if links == 0 {
			links = r.gpu.NVLinkLinks
		}
		for _, g := range b.out.GPUs {
			if _, err := t.Connect(g, id, LinkNVLink, per*GBps(links), nccl*GBps(links), NVLinkHopLatency, links); err != nil {
				return err
			}
		}
	case "mesh":
		links := v.Links
		if links == 0 {
			links = r.gpu.NVLinkLinks / (s.GPUs - 1)
		}
		for i := 0; i < s.GPUs; i++ {
			for j := i + 1; j < s.GPUs; j++ {
				if _, err := t.Connect(b.out.GPUs[i], b.out.GPUs[j], LinkNVLink, per*GBps(links), nccl*GBps(links), NVLinkHopLatency, links); err != nil {
					return err
				}
			}
		}
	case "pairs":
		ps := append([][3]int(nil), v.Pairs...)
		sort.Slice(ps, func(i, j int) bool {
			if ps[i][0] != ps[j][0] {
				return ps[i][0] < ps[j][0]
			}
			return ps[i][1] < ps[j][1]
		})
		for _, p := range ps {
			if _, err := t.Connect(b.out.GPUs[p[0]], b.out.GPUs[p[1]], LinkNVLink, per*GBps(p[2]), nccl*GBps(p[2]), NVLinkHopLatency, p[2]); err != nil {
				return err
			}
		}
	}
	return nil
}

// fitMTU is the largest RoCE path MTU whose packets fit an IP MTU.
func fitMTU(ip int) int {
	for m := 4096; m >= 256; m /= 2 {
		if m+RoCEIPOverhead <= ip {
			return m
		}
	}
	return 256
}
