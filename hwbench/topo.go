package hwbench

import (
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
)

// TopoResult is the machine as the topo probe found it: NVML's GPU
// inventory, the PCI tree from sysfs, the RDMA devices, an nvidia-smi
// topo -m style path matrix, and all of it as a model node spec.
type TopoResult struct {
	Stamp
	// Node is the machine as a model.NodeSpec (YAML field names); nil when
	// it could not be built (NodeError says why).
	Node *Node `json:"node,omitempty"`
	// NodeError is why Node is missing, or why it fails model validation.
	NodeError string `json:"node_error,omitempty"`
	// GPUModel is the catalog GPU the NVML name matched ("H100-SXM").
	GPUModel string    `json:"gpu_model,omitempty"`
	GPUs     []TopoGPU `json:"gpus"`
	Pairs    []GPUPair `json:"pairs,omitempty"`
	NICs     []TopoNIC `json:"nics,omitempty"`
	// Matrix is the path type between every pair of GPUs and NICs.
	Matrix PathMatrix `json:"matrix"`
	// CPU is the CPU vendor in model terms.
	CPU string `json:"cpu,omitempty"`
	// GPUDirectModule is true when nvidia_peermem (or nv_peer_mem) is loaded.
	GPUDirectModule bool     `json:"gpudirect_module"`
	Notes           []string `json:"notes,omitempty"`
}

// TopoGPU is one GPU with its CUDA ordinal and PCI path.
type TopoGPU struct {
	GPUInfo
	// CUDAIndex is the CUDA device ordinal, -1 when the runtime is absent.
	CUDAIndex int `json:"cuda_index"`
	// PCIPath is the chain from the host bridge to the GPU.
	PCIPath []PCIHop `json:"pci_path,omitempty"`
}

// TopoNIC is one RDMA device with its PCI path and whether the node spec
// counts it.
type TopoNIC struct {
	HCA
	PCIPath []PCIHop `json:"pci_path,omitempty"`
	// InNode is true when Node.nics includes this device; Kind and Speed are
	// its model NIC kind and speed name.
	InNode bool   `json:"in_node"`
	Kind   string `json:"kind,omitempty"`
	Speed  string `json:"speed,omitempty"`
}

// PCIHop is one element of a PCI path.
type PCIHop struct {
	// ID is the PCI address, or the root bus ("pci0000:17") of the host bridge.
	ID string `json:"id"`
	// Role is "host-bridge", "root-port", "switch-upstream",
	// "switch-downstream" or "device".
	Role string   `json:"role"`
	Link PCIeLink `json:"link"`
}

// PathMatrix is the nvidia-smi topo -m matrix: X, NV<n>, PIX, PXB, PHB,
// NODE, SYS between GPUs and NICs.
type PathMatrix struct {
	Labels []string   `json:"labels"`
	Cells  [][]string `json:"cells"`
	// NICNames maps NIC labels to devices ("NIC0": "mlx5_0").
	NICNames map[string]string `json:"nic_names,omitempty"`
	// NUMA is each GPU's NUMA node (-1 unknown).
	NUMA []int `json:"numa,omitempty"`
}

// topoInput is everything buildTopo works from.
type topoInput struct {
	host  string
	inv   *Inventory
	cuda  []DeviceInfo // nil without a CUDA runtime
	verbs []HCA        // nil without libibverbs
	fsys  fs.FS
}

// buildTopo turns the inventory, sysfs and RDMA facts into a TopoResult.
func buildTopo(in topoInput) *TopoResult {
	t := &TopoResult{CPU: cpuVendor(in.fsys), GPUDirectModule: peerMemLoaded(in.fsys)}
	note := func(f string, a ...any) { t.Notes = append(t.Notes, fmt.Sprintf(f, a...)) }
	cudaOf := map[string]int{}
	for _, d := range in.cuda {
		cudaOf[d.BusID] = d.Index
	}
	gpuPCI := make([]*pciDev, len(in.inv.GPUs))
	busToGPU := map[string]int{}
	for i, g := range in.inv.GPUs {
		busToGPU[g.BusID] = i
		tg := TopoGPU{GPUInfo: g, CUDAIndex: -1}
		if c, ok := cudaOf[g.BusID]; ok {
			tg.CUDAIndex = c
		}
		if d, err := readPCI(in.fsys, g.BusID); err == nil {
			gpuPCI[i] = d
			tg.PCIPath = pciHops(in.fsys, d)
			if tg.NUMA < 0 {
				tg.NUMA = d.NUMA
			}
		} else {
			note("GPU %d (%s): no PCI path in sysfs: %v", i, g.BusID, err)
		}
		t.GPUs = append(t.GPUs, tg)
	}
	t.Pairs = in.inv.Pairs

	// RDMA devices: sysfs is the base (it needs no library); verbs adds the
	// active MTU, LIDs and GIDs it reads from the device.
	sys, _ := readHCAs(in.fsys)
	nicPCI := map[string]*pciDev{}
	byName := map[string]int{}
	for _, h := range sys {
		byName[h.Name] = len(t.NICs)
		nicPCI[h.Name] = h.pci
		n := TopoNIC{HCA: h.HCA}
		if h.pci != nil {
			n.PCIPath = pciHops(in.fsys, h.pci)
		}
		t.NICs = append(t.NICs, n)
	}
	for _, v := range in.verbs {
		i, ok := byName[v.Name]
		if !ok {
			byName[v.Name] = len(t.NICs)
			t.NICs = append(t.NICs, TopoNIC{HCA: v})
			continue
		}
		mergeHCA(&t.NICs[i].HCA, v)
	}

	t.Matrix = pathMatrix(in.inv, gpuPCI, t.NICs, nicPCI, busToGPU)

	gm, ok := model.GPUModel{}, false
	if len(in.inv.GPUs) > 0 {
		gm, ok = model.MatchGPU(in.inv.GPUs[0].Name)
		for _, g := range in.inv.GPUs[1:] {
			if g.Name != in.inv.GPUs[0].Name {
				note("GPUs differ (%q and %q); the node spec uses the first", in.inv.GPUs[0].Name, g.Name)
				break
			}
		}
	}
	switch {
	case len(in.inv.GPUs) == 0:
		t.NodeError = "no GPU found"
	case !ok:
		t.NodeError = fmt.Sprintf("GPU %q is not in the model catalog", in.inv.GPUs[0].Name)
	default:
		t.GPUModel = gm.Name
		spec, notes := nodeSpec(in, gm, gpuPCI, t)
		t.Notes = append(t.Notes, notes...)
		t.Node = &Node{NodeSpec: spec}
		if err := spec.Validate(); err != nil {
			t.NodeError = err.Error()
		}
	}
	return t
}

// mergeHCA fills what sysfs could not tell from what verbs reported.
func mergeHCA(dst *HCA, v HCA) {
	if dst.FirmwareVersion == "" {
		dst.FirmwareVersion = v.FirmwareVersion
	}
	if dst.NodeGUID == "" {
		dst.NodeGUID = v.NodeGUID
	}
	for _, vp := range v.Ports {
		found := false
		for i := range dst.Ports {
			p := &dst.Ports[i]
			if p.Port != vp.Port {
				continue
			}
			found = true
			if vp.ActiveMTU != 0 {
				p.ActiveMTU = vp.ActiveMTU
			}
			if p.RateGbps == 0 {
				p.RateGbps = vp.RateGbps
			}
			if p.LID == 0 {
				p.LID = vp.LID
			}
			if p.State == "" {
				p.State, p.PhysState, p.LinkLayer = vp.State, vp.PhysState, vp.LinkLayer
			}
			if len(p.GIDs) == 0 {
				p.GIDs = vp.GIDs
			}
		}
		if !found {
			dst.Ports = append(dst.Ports, vp)
		}
	}
}

func pciHops(fsys fs.FS, d *pciDev) []PCIHop {
	hops := make([]PCIHop, len(d.Chain))
	sw := map[string]bool{}
	for _, s := range d.switches() {
		sw[s] = true
	}
	for i, id := range d.Chain {
		h := PCIHop{ID: id}
		switch {
		case i == 0:
			h.Role = "host-bridge"
		case i == len(d.Chain)-1:
			h.Role = "device"
		case i == 1:
			h.Role = "root-port"
		case sw[id]:
			h.Role = "switch-upstream"
		default:
			h.Role = "switch-downstream"
		}
		if i > 0 {
			h.Link = readLink(fsys, d.bridgeDir(i))
		}
		hops[i] = h
	}
	return hops
}

// nvlinkCounts returns active GPU-to-GPU link counts per pair and each GPU's
// active links to NVSwitches (anything that is not another GPU).
func nvlinkCounts(inv *Inventory, busToGPU map[string]int) (pair map[[2]int]int, toSwitch []int) {
	pair = map[[2]int]int{}
	toSwitch = make([]int, len(inv.GPUs))
	for i, g := range inv.GPUs {
		for _, l := range g.NVLinks {
			if !l.Active {
				continue
			}
			if j, ok := busToGPU[l.RemoteBusID]; ok && l.RemoteType != "switch" {
				if i < j {
					pair[[2]int{i, j}]++
				}
				continue
			}
			toSwitch[i]++
		}
	}
	return pair, toSwitch
}

func pathMatrix(inv *Inventory, gpuPCI []*pciDev, nics []TopoNIC, nicPCI map[string]*pciDev, busToGPU map[string]int) PathMatrix {
	n, m := len(inv.GPUs), len(nics)
	pm := PathMatrix{NICNames: map[string]string{}}
	devs := make([]*pciDev, 0, n+m)
	for i := 0; i < n; i++ {
		pm.Labels = append(pm.Labels, fmt.Sprintf("GPU%d", i))
		devs = append(devs, gpuPCI[i])
		numa := inv.GPUs[i].NUMA
		if numa < 0 && gpuPCI[i] != nil {
			numa = gpuPCI[i].NUMA
		}
		pm.NUMA = append(pm.NUMA, numa)
	}
	for i, nic := range nics {
		l := fmt.Sprintf("NIC%d", i)
		pm.Labels = append(pm.Labels, l)
		pm.NICNames[l] = nic.Name
		devs = append(devs, nicPCI[nic.Name])
	}
	pair, toSwitch := nvlinkCounts(inv, busToGPU)
	pm.Cells = make([][]string, n+m)
	for a := range pm.Cells {
		pm.Cells[a] = make([]string, n+m)
		for b := range pm.Cells[a] {
			switch {
			case a == b:
				pm.Cells[a][b] = "X"
				continue
			case a < n && b < n:
				lo, hi := min(a, b), max(a, b)
				if c := pair[[2]int{lo, hi}]; c > 0 {
					pm.Cells[a][b] = fmt.Sprintf("NV%d", c)
					continue
				}
				if c := min(toSwitch[a], toSwitch[b]); c > 0 {
					pm.Cells[a][b] = fmt.Sprintf("NV%d", c)
					continue
				}
			}
			if devs[a] == nil || devs[b] == nil {
				pm.Cells[a][b] = "?"
				continue
			}
			pm.Cells[a][b] = pathType(devs[a], devs[b])
		}
	}
	return pm
}

// bridgeNode is a host bridge or PCIe switch while the node spec is built.
type bridgeNode struct {
	id         string
	gpus, nics []int
	kids       []*bridgeNode
	gen, width int
}

func (b *bridgeNode) child(id string) *bridgeNode {
	for _, k := range b.kids {
		if k.id == id {
			return k
		}
	}
	k := &bridgeNode{id: id}
	b.kids = append(b.kids, k)
	return k
}

func (b *bridgeNode) spec() model.BridgeSpec {
	s := model.BridgeSpec{GPUs: b.gpus, NICs: b.nics, Gen: b.gen, Width: b.width}
	for _, k := range b.kids {
		s.Switches = append(s.Switches, k.spec())
	}
	return s
}

// nodeSpec builds the model node: sockets from NUMA nodes, host bridges
// from PCI root buses, PCIe switches from the bridge chains, NVLink from
// NVML's remote ends, NICs from the largest group of active RDMA ports of
// one kind and speed.
func nodeSpec(in topoInput, gm model.GPUModel, gpuPCI []*pciDev, t *TopoResult) (model.NodeSpec, []string) {
	var notes []string
	note := func(f string, a ...any) { notes = append(notes, fmt.Sprintf(f, a...)) }
	n := len(in.inv.GPUs)
	spec := model.NodeSpec{
		Name:        "hwbench-" + in.host,
		Description: fmt.Sprintf("%s: %d x %s as measured by collsim hwbench", in.host, n, in.inv.GPUs[0].Name),
		Source:      "collsim hwbench topo probe (NVML, sysfs PCI tree, /sys/class/infiniband)",
		GPU:         gm.Name,
		GPUs:        n,
		CPU:         t.CPU,
	}
	if spec.CPU == "arm" && gm.Name == "GB200" {
		spec.CPU = "grace"
	}
	if spec.CPU == "" {
		note("CPU vendor unknown; the model assumes intel")
	}

	// NICs: pick the largest group of active ports with one kind and speed.
	type nicPick struct {
		idx         int
		kind, speed string
		gbps        int
	}
	groups := map[[2]string][]nicPick{}
	for i := range t.NICs {
		nic := &t.NICs[i]
		kind, speed, gbps, why := nicModel(nic.HCA)
		if why != "" {
			note("%s not in the node spec: %s", nic.Name, why)
			continue
		}
		nic.Kind, nic.Speed = kind, speed
		k := [2]string{kind, speed}
		groups[k] = append(groups[k], nicPick{i, kind, speed, gbps})
	}
	var chosen []nicPick
	for _, g := range groups {
		if len(g) > len(chosen) || (len(g) == len(chosen) && len(g) > 0 && (g[0].gbps > chosen[0].gbps || (g[0].gbps == chosen[0].gbps && g[0].kind < chosen[0].kind))) {
			chosen = g
		}
	}
	sort.Slice(chosen, func(a, b int) bool { return chosen[a].idx < chosen[b].idx })
	for _, g := range groups {
		if len(chosen) > 0 && g[0].kind == chosen[0].kind && g[0].speed == chosen[0].speed {
			continue
		}
		for _, p := range g {
			note("%s (%s %s) not in the node spec: the spec holds one NIC kind and speed (%d x %s %s chosen)", t.NICs[p.idx].Name, p.kind, p.speed, len(chosen), chosen[0].kind, chosen[0].speed)
		}
	}
	if len(chosen) > 0 {
		spec.NICs = model.NICSpec{Count: len(chosen), Kind: chosen[0].kind, Speed: chosen[0].speed}
		spec.NICSlots = len(chosen)
		for _, p := range chosen {
			t.NICs[p.idx].InNode = true
		}
	}

	// PCIe tree, grouped by NUMA node.
	type socket struct {
		numa int
		hbs  []*bridgeNode
		byID map[string]*bridgeNode
	}
	sockets := map[int]*socket{}
	sock := func(numa int) *socket {
		if numa < 0 {
			numa = 0
		}
		s := sockets[numa]
		if s == nil {
			s = &socket{numa: numa, byID: map[string]*bridgeNode{}}
			sockets[numa] = s
		}
		return s
	}
	place := func(d *pciDev, gpu, slot int) {
		s := sock(-1)
		hbID := "unknown"
		var sws []string
		if d != nil {
			s, hbID, sws = sock(d.NUMA), d.hostBridge(), d.switches()
		}
		hb := s.byID[hbID]
		if hb == nil {
			hb = &bridgeNode{id: hbID}
			s.byID[hbID] = hb
			s.hbs = append(s.hbs, hb)
		}
		cur := hb
		for k, sw := range sws {
			cur = cur.child(sw)
			if cur.gen == 0 {
				l := readLink(in.fsys, d.bridgeDir(1+1+2*k))
				if l.MaxGen >= 3 && l.MaxGen <= 6 {
					cur.gen = l.MaxGen
				}
				switch l.MaxWidth {
				case 1, 2, 4, 8, 16:
					cur.width = l.MaxWidth
				}
			}
		}
		if gpu >= 0 {
			cur.gpus = append(cur.gpus, gpu)
		} else {
			cur.nics = append(cur.nics, slot)
		}
	}
	for i := 0; i < n; i++ {
		if gpuPCI[i] == nil {
			note("GPU %d placed under an unknown host bridge of socket 0", i)
		}
		place(gpuPCI[i], i, -1)
	}
	for slot, p := range chosen {
		d, err := readPCI(in.fsys, t.NICs[p.idx].BusID)
		if err != nil {
			d = nil
			note("%s placed under an unknown host bridge of socket 0", t.NICs[p.idx].Name)
		}
		place(d, -1, slot)
	}
	numas := make([]int, 0, len(sockets))
	for k := range sockets {
		numas = append(numas, k)
	}
	sort.Ints(numas)
	for _, k := range numas {
		s := sockets[k]
		sort.SliceStable(s.hbs, func(a, b int) bool { return naturalLess(s.hbs[a].id, s.hbs[b].id) })
		ss := model.SocketSpec{}
		for _, hb := range s.hbs {
			ss.HostBridges = append(ss.HostBridges, hb.spec())
		}
		spec.Sockets = append(spec.Sockets, ss)
	}
	if len(numas) > 2 {
		note("%d NUMA nodes become %d sockets; on AMD NPS>1 several NUMA nodes share one socket", len(numas), len(numas))
	}

	spec.NVLink, notes = nvlinkSpec(in.inv, gm, notes)
	return spec, notes
}

// nicModel maps an RDMA device to a model NIC kind and catalog speed name,
// or says why it does not fit.
func nicModel(h HCA) (kind, speed string, gbps int, why string) {
	var port *HCAPort
	for i := range h.Ports {
		if h.Ports[i].State == "Active" {
			port = &h.Ports[i]
			break
		}
	}
	if port == nil {
		return "", "", 0, "no active port"
	}
	k := model.NICIB
	switch {
	case h.Driver == "efa" || strings.HasPrefix(h.Name, "rdmap"):
		k = model.NICEFA
	case port.LinkLayer == "Ethernet":
		k = model.NICRoCE
	case port.LinkLayer != "InfiniBand":
		return "", "", 0, fmt.Sprintf("link layer %q", port.LinkLayer)
	}
	rate := int(port.RateGbps + 0.5)
	if rate <= 0 {
		return "", "", 0, "unknown rate"
	}
	// "400 Gb/sec (4X NDR)": prefer the IB name when its rate matches.
	if i := strings.LastIndexByte(port.Rate, ' '); i > 0 && k == model.NICIB {
		name := strings.TrimSuffix(port.Rate[i+1:], ")")
		if s, err := model.LookupNICSpeed(name, k); err == nil && s.Gbps == rate {
			return string(k), s.Name, rate, ""
		}
	}
	s, err := model.LookupNICSpeed(fmt.Sprint(rate), k)
	if err != nil {
		return "", "", 0, err.Error()
	}
	return string(k), s.Name, rate, ""
}

// nvlinkSpec turns NVML's per-link remote ends into the model's NVLink
// description.
func nvlinkSpec(inv *Inventory, gm model.GPUModel, notes []string) (model.NVLinkSpec, []string) {
	busToGPU := map[string]int{}
	for i, g := range inv.GPUs {
		busToGPU[g.BusID] = i
	}
	pair, toSwitch := nvlinkCounts(inv, busToGPU)
	n := len(inv.GPUs)
	sw := 0
	for _, c := range toSwitch {
		if c > 0 && (sw == 0 || c < sw) {
			sw = c
		}
	}
	if gm.NVLinkGen == 0 {
		if sw > 0 || len(pair) > 0 {
			notes = append(notes, fmt.Sprintf("NVML reports NVLinks but the catalog's %s has none; the spec says none", gm.Name))
		}
		return model.NVLinkSpec{Kind: "none"}, notes
	}
	if sw > 0 {
		links := sw
		if links > gm.NVLinkLinks {
			notes = append(notes, fmt.Sprintf("%d NVLinks per GPU to NVSwitch exceed the catalog's %d for %s; using all", links, gm.NVLinkLinks, gm.Name))
			links = 0
		}
		for i, c := range toSwitch {
			if c != sw {
				notes = append(notes, fmt.Sprintf("GPU %d has %d active NVLinks to NVSwitch, the spec uses the minimum %d", i, c, sw))
			}
		}
		return model.NVLinkSpec{Kind: "nvswitch", Links: links}, notes
	}
	if len(pair) == 0 || n < 2 {
		return model.NVLinkSpec{Kind: "none"}, notes
	}
	full := len(pair) == n*(n-1)/2
	c0 := -1
	for _, c := range pair {
		if c0 < 0 {
			c0 = c
		} else if c != c0 {
			full = false
		}
	}
	if full && c0*(n-1) <= gm.NVLinkLinks && !gm.NVLinkBridgeOnly {
		return model.NVLinkSpec{Kind: "mesh", Links: c0}, notes
	}
	var ps [][3]int
	for k, c := range pair {
		ps = append(ps, [3]int{k[0], k[1], c})
	}
	sort.Slice(ps, func(a, b int) bool {
		if ps[a][0] != ps[b][0] {
			return ps[a][0] < ps[b][0]
		}
		return ps[a][1] < ps[b][1]
	})
	return model.NVLinkSpec{Kind: "pairs", Pairs: ps}, notes
}
