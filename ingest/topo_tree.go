package ingest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
)

// Building a model.NodeSpec from the pairwise path types of nvidia-smi topo
// -m (nvidia-smi's legend):
//
//	PIX  = at most one PCIe bridge between the two: the same switch
//	PXB  = several bridges, no host bridge: the same tree under one host bridge
//	PHB  = through a PCIe host bridge: the same host bridge, no common switch
//	NODE = between host bridges of one NUMA node: the same socket
//	SYS  = across the SMP interconnect: different sockets (NUMA nodes)
//	NV#  = # bonded NVLinks (says nothing about PCIe)
//
// Devices are grouped level by level (union of pairs at or below a level),
// and NUMA affinity places GPUs whose PCIe relations are hidden behind NV#.

// pathLevel ranks a PCIe path type; 0 means unknown (NV#, X, empty).
func pathLevel(s string) int {
	switch s {
	case "PIX":
		return 1
	case "PXB":
		return 2
	case "PHB":
		return 3
	case "NODE":
		return 4
	case "SYS":
		return 5
	}
	return 0
}

// maxNVLinkCount is the most NVLinks between two GPUs that nvidia-smi topo
// -m prints (NV18: all 18 links of an H100 or B200 to the NVSwitch fabric)
// and the most an NCCL topology <nvlink count> states.
const maxNVLinkCount = 18

// nvLinks returns k for an NV# cell "NV1".."NV18" as nvidia-smi prints it
// (0 for anything else: another path type, or a garbled NV cell, which
// badNVCell names).
func nvLinks(s string) int {
	if !strings.HasPrefix(s, "NV") {
		return 0
	}
	k, err := strconv.Atoi(s[2:])
	if err != nil || k < 1 || k > maxNVLinkCount || strconv.Itoa(k) != s[2:] {
		return 0
	}
	return k
}

// badNVCell reports whether s claims to be an NV# cell (starts with "NV")
// but is not one nvidia-smi prints: "NV0", "NV-3", "NV999", "NVx".
func badNVCell(s string) bool {
	return strings.HasPrefix(s, "NV") && nvLinks(s) == 0
}

type unionFind []int

func newUF(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u unionFind) find(i int) int {
	for u[i] != i {
		u[i] = u[u[i]]
		i = u[i]
	}
	return i
}

func (u unionFind) union(a, b int) { u[u.find(a)] = u.find(b) }

// groups returns the components of members (in member order, each
// component ordered by first member).
func (u unionFind) groups(members []int) [][]int {
	idx := map[int]int{}
	var out [][]int
	for _, m := range members {
		r := u.find(m)
		k, ok := idx[r]
		if !ok {
			k = len(out)
			idx[r] = k
			out = append(out, nil)
		}
		out[k] = append(out[k], m)
	}
	return out
}

// topoGraph is the input of the tree builder: nGPU GPUs (indices 0..nGPU-1)
// then NICs, the path type between every pair, and per-GPU NUMA ids (-1 unknown).
type topoGraph struct {
	nGPU, nNIC int
	rel        [][]string
	numa       []int
}

func (g *topoGraph) n() int { return g.nGPU + g.nNIC }

// buildNode turns the graph into a NodeSpec layout (sockets, NVLink, NIC
// count); notes explain inferences.
func (g *topoGraph) buildNode() (model.NodeSpec, []string) {
	var notes []string
	n := g.n()
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	lvl := func(i, j int) int { return pathLevel(g.rel[i][j]) }
	// Sockets: PCIe relations up to NODE, then equal NUMA ids.
	su := newUF(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if l := lvl(i, j); l >= 1 && l <= 4 {
				su.union(i, j)
			}
		}
	}
	sysBetween := func(a, b []int) bool {
		for _, x := range a {
			for _, y := range b {
				if lvl(x, y) == 5 {
					return true
				}
			}
		}
		return false
	}
	comps := su.groups(all)
	byNUMA := map[int][]int{}
	var numaIDs []int
	for ci, c := range comps {
		for _, m := range c {
			if m >= g.nGPU || g.numa[m] < 0 {
				continue
			}
			id := g.numa[m]
			if _, ok := byNUMA[id]; !ok {
				numaIDs = append(numaIDs, id)
			}
			if l := byNUMA[id]; len(l) == 0 || l[len(l)-1] != ci {
				byNUMA[id] = append(l, ci)
			}
		}
	}
	sort.Ints(numaIDs)
	for _, id := range numaIDs {
		list := byNUMA[id]
		for _, ck := range list[1:] {
			if sysBetween(comps[list[0]], comps[ck]) {
				notes = addUnique(notes, fmt.Sprintf("devices %s and %s report NUMA node %d but their path is SYS: placed on different sockets, as the path matrix says",
					deviceName(g, comps[list[0]][0]), deviceName(g, comps[ck][0]), id))
				continue
			}
			su.union(comps[list[0]][0], comps[ck][0])
		}
	}
	// GPUs with no PCIe relation and no NUMA id join the first socket.
	var lone []int
	for i := 0; i < g.nGPU; i++ {
		known := g.numa[i] >= 0
		for j := 0; j < n && !known; j++ {
			known = j != i && lvl(i, j) > 0
		}
		if !known {
			lone = append(lone, i)
		}
	}
	if len(lone) > 1 {
		for _, i := range lone[1:] {
			su.union(i, lone[0])
		}
		notes = append(notes, "the PCIe placement of some GPUs is unknown (no NUMA affinity, only NVLink to other GPUs): they are put on one socket")
	}
	sockets := su.groups(all)
	sockNUMA := func(c []int) int {
		best := 1 << 30
		for _, m := range c {
			if m < g.nGPU && g.numa[m] >= 0 && g.numa[m] < best {
				best = g.numa[m]
			}
		}
		return best
	}
	sort.SliceStable(sockets, func(a, b int) bool {
		na, nb := sockNUMA(sockets[a]), sockNUMA(sockets[b])
		if na != nb {
			return na < nb
		}
		return sockets[a][0] < sockets[b][0]
	})
	spec := model.NodeSpec{GPUs: g.nGPU}
	hu := newUF(n)
	xu := newUF(n)
	pu := newUF(n)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			l := lvl(i, j)
			if l >= 1 && l <= 3 {
				hu.union(i, j)
			}
			if l >= 1 && l <= 2 {
				xu.union(i, j)
			}
			if l == 1 {
				pu.union(i, j)
			}
		}
	}
	place := func(b *model.BridgeSpec, d int) {
		if d < g.nGPU {
			b.GPUs = append(b.GPUs, d)
		} else {
			b.NICs = append(b.NICs, d-g.nGPU)
		}
	}
	for _, sock := range sockets {
		var ss model.SocketSpec
		for _, hb := range hu.groups(sock) {
			var b model.BridgeSpec
			for _, tree := range xu.groups(hb) {
				if len(tree) == 1 {
					place(&b, tree[0])
					continue
				}
				leaves := pu.groups(tree)
				if len(leaves) == 1 {
					var sw model.BridgeSpec
					for _, d := range tree {
						place(&sw, d)
					}
					b.Switches = append(b.Switches, sw)
					continue
				}
				var top model.BridgeSpec
				singles := 0
				for _, lf := range leaves {
					if len(lf) == 1 {
						singles++
					}
				}
				for _, lf := range leaves {
					if len(lf) == 1 && singles == 1 {
						place(&top, lf[0])
						continue
					}
					var leaf model.BridgeSpec
					for _, d := range lf {
						place(&leaf, d)
					}
					top.Switches = append(top.Switches, leaf)
				}
				b.Switches = append(b.Switches, top)
			}
			ss.HostBridges = append(ss.HostBridges, b)
		}
		spec.Sockets = append(spec.Sockets, ss)
	}
	spec.NVLink = g.nvlink()
	spec.NICs.Count = g.nNIC
	spec.NICSlots = g.nNIC
	return spec, notes
}

// maxCatalogLinks is the largest NVLink count of any catalog GPU.
func maxCatalogLinks() int {
	m := 0
	for _, gm := range model.GPUModels() {
		m = max(m, gm.NVLinkLinks)
	}
	return m
}

// nvlink reads NV# cells: every pair with the same count k and more links
// per GPU (k x (n-1)) than any GPU has means an NVSwitch; otherwise the pairs.
func (g *topoGraph) nvlink() model.NVLinkSpec {
	k0, all := -1, g.nGPU >= 2
	var pairs [][3]int
	for i := 0; i < g.nGPU; i++ {
		for j := i + 1; j < g.nGPU; j++ {
			k := nvLinks(g.rel[i][j])
			if k == 0 {
				all = false
				continue
			}
			if k0 < 0 {
				k0 = k
			} else if k != k0 {
				all = false
			}
			pairs = append(pairs, [3]int{i, j, k})
		}
	}
	switch {
	case len(pairs) == 0:
		return model.NVLinkSpec{Kind: "none"}
	case all && g.nGPU >= 3 && k0*(g.nGPU-1) > maxCatalogLinks():
		return model.NVLinkSpec{Kind: "nvswitch", Links: k0}
	}
	return model.NVLinkSpec{Kind: "pairs", Pairs: pairs}
}

// inferGPU picks the catalog GPU an NVSwitch node with k links per GPU (and
// compute capability sm, 0 when unknown) must have. It returns "" when the
// candidates differ in anything the model uses; note lists the candidates.
func inferGPU(k, sm int) (name, note string) {
	var cands []model.GPUModel
	for _, gm := range model.GPUModels() {
		if gm.NVLinkBridgeOnly || gm.NVLinkLinks != k || (sm > 0 && gm.SM != sm) {
			continue
		}
		cands = append(cands, gm)
	}
	if len(cands) == 0 {
		return "", ""
	}
	names := make([]string, len(cands))
	same := true
	for i, c := range cands {
		names[i] = c.Name
		same = same && c.SM == cands[0].SM && c.NVLinkGen == cands[0].NVLinkGen && c.PCIeGen == cands[0].PCIeGen && c.Arch == cands[0].Arch
	}
	if !same {
		return "", fmt.Sprintf("GPU model not inferred: %d NVLinks per GPU fits %s", k, strings.Join(names, ", "))
	}
	if len(cands) > 1 {
		return cands[0].Name, fmt.Sprintf("GPU inferred as %s from %d NVLinks per GPU; %s model the same", cands[0].Name, k, strings.Join(names[1:], ", "))
	}
	return cands[0].Name, fmt.Sprintf("GPU inferred as %s from %d NVLinks per GPU on an NVSwitch", cands[0].Name, k)
}

// specMatrix prints the path type between every pair of devices of a
// layout, as nvidia-smi topo -m would (GPUs then NICs).
func specMatrix(s *model.NodeSpec) (labels []string, m [][]string) {
	type pos struct {
		sock, hb int
		sw       []int // switch ids from the host bridge down
	}
	nNIC := s.NICs.Count
	slots := s.NICSlots
	if slots == 0 {
		slots = nNIC
	}
	where := make([]pos, s.GPUs+slots)
	set := make([]bool, s.GPUs+slots)
	next := 0
	var walk func(b *model.BridgeSpec, p pos)
	walk = func(b *model.BridgeSpec, p pos) {
		for _, gi := range b.GPUs {
			if gi >= 0 && gi < s.GPUs {
				where[gi], set[gi] = p, true
			}
		}
		for _, ni := range b.NICs {
			if ni >= 0 && ni < slots {
				where[s.GPUs+ni], set[s.GPUs+ni] = p, true
			}
		}
		for i := range b.Switches {
			q := pos{sock: p.sock, hb: p.hb, sw: append(append([]int(nil), p.sw...), next)}
			next++
			walk(&b.Switches[i], q)
		}
	}
	for si := range s.Sockets {
		for hi := range s.Sockets[si].HostBridges {
			walk(&s.Sockets[si].HostBridges[hi], pos{sock: si, hb: hi})
		}
	}
	nv := map[[2]int]int{}
	switch s.NVLink.Kind {
	case "nvswitch":
		for i := 0; i < s.GPUs; i++ {
			for j := 0; j < s.GPUs; j++ {
				nv[[2]int{i, j}] = s.NVLink.Links
			}
		}
	case "pairs":
		for _, p := range s.NVLink.Pairs {
			nv[[2]int{p[0], p[1]}], nv[[2]int{p[1], p[0]}] = p[2], p[2]
		}
	}
	n := s.GPUs + slots
	for i := 0; i < s.GPUs; i++ {
		labels = append(labels, "GPU"+itoa(i))
	}
	for i := 0; i < slots; i++ {
		labels = append(labels, "NIC"+itoa(i))
	}
	m = make([][]string, n)
	for i := 0; i < n; i++ {
		m[i] = make([]string, n)
		for j := 0; j < n; j++ {
			a, b := where[i], where[j]
			switch {
			case i == j:
				m[i][j] = "X"
			case i < s.GPUs && j < s.GPUs && nv[[2]int{i, j}] > 0:
				m[i][j] = "NV" + itoa(nv[[2]int{i, j}])
			case !set[i] || !set[j]:
				m[i][j] = "?"
			case a.sock != b.sock:
				m[i][j] = "SYS"
			case a.hb != b.hb:
				m[i][j] = "NODE"
			default:
				common := 0
				for common < len(a.sw) && common < len(b.sw) && a.sw[common] == b.sw[common] {
					common++
				}
				switch {
				case common == 0:
					m[i][j] = "PHB"
				case common == len(a.sw) && common == len(b.sw):
					m[i][j] = "PIX"
				default:
					m[i][j] = "PXB"
				}
			}
		}
	}
	return labels, m
}

// SetGPU sets the GPU model of the node (a catalog name or alias, see
// model.LookupGPU), which nvidia-smi topo -m does not print.
func (t *TopoInfo) SetGPU(name string) error {
	g, err := model.LookupGPU(name)
	if err != nil {
		return fmt.Errorf("calibrate: topology: %w", err)
	}
	t.Node.GPU = g.Name
	return nil
}

// NodeSpec returns the node layout with the facts the topology file does
// not state filled in: gpu (a catalog name; "" keeps the inferred one),
// nicSpeed (a NIC speed catalog name such as "HDR" or "400G"; "" keeps the
// inferred one) and nicKind (ib, roce, efa, tcp). The result passes
// model.NodeSpec.Validate; an error names what is missing or wrong. t is not
// changed. When the file does not state the NVLinks (bare <pci> GPUs), they
// are inferred from the GPU model as NodeSpecAssuming says.
func (t *TopoInfo) NodeSpec(gpu, nicSpeed string, nicKind model.NICKind) (model.NodeSpec, error) {
	s, _, err := t.nodeSpec(gpu, nicSpeed, nicKind)
	return s, err
}

// NodeSpecAssuming is NodeSpec that fills what neither the arguments nor
// the file state with an assumption, and returns one sentence per
// assumption made (nil when none):
//   - NIC kind: InfiniBand;
//   - NIC speed: the fastest catalog speed of that kind whose usual adapter
//     fits the NICs' PCIe generation (model.NICSpeed.PCIeGen: HDR on Gen4,
//     NDR on Gen5), when the file gives the NICs' link speed; else 200G, the
//     default collsim has always used;
//   - NVLink, for GPUs listed as bare <pci> elements: see inferNVLink.
//
// The GPU model is never assumed: a file that does not name it needs gpu.
func (t *TopoInfo) NodeSpecAssuming(gpu, nicSpeed string, nicKind model.NICKind) (model.NodeSpec, []string, error) {
	var notes []string
	if t.Node.NICs.Count > 0 {
		if nicKind == "" {
			nicKind = t.NICKind
		}
		if nicKind == "" {
			nicKind = model.NICIB
			notes = append(notes, "assumed NIC kind ib: the file does not say whether the NICs are InfiniBand, RoCE or TCP (set it with --nics)")
		}
		if nicSpeed == "" {
			nicSpeed = t.NICSpeed
		}
		if nicSpeed == "" && t.NICPCIeGen > 0 {
			if sp, ok := fastestNICSpeed(nicKind, t.NICPCIeGen); ok {
				nicSpeed = sp.Name
				notes = append(notes, fmt.Sprintf("assumed NIC speed %s (%d Gb/s): the file gives no NIC speed, and %s is the fastest %s speed whose usual adapter fits the NICs' PCIe Gen%d x16 link (set it with --nics)",
					sp.Name, sp.Gbps, sp.Name, nicKind, t.NICPCIeGen))
			}
		}
		if nicSpeed == "" {
			nicSpeed = "200G"
			notes = append(notes, "assumed NIC speed 200G: the file gives no NIC speed (set it with --nics)")
		}
	}
	s, nv, err := t.nodeSpec(gpu, nicSpeed, nicKind)
	if err != nil {
		return s, nil, err
	}
	if nv != "" {
		notes = append(notes, nv)
	}
	return s, notes, nil
}

// fastestNICSpeed returns the fastest catalog speed of kind whose usual
// adapter needs at most PCIe generation gen (the first in catalog order
// among equals, so that InfiniBand gets its own names: EDR, HDR, NDR).
func fastestNICSpeed(kind model.NICKind, gen int) (model.NICSpeed, bool) {
	var best model.NICSpeed
	ok := false
	for _, s := range model.NICSpeeds() {
		has := false
		for _, k := range s.Kinds {
			has = has || k == kind
		}
		if has && s.PCIeGen <= gen && (!ok || s.Gbps > best.Gbps) {
			best, ok = s, true
		}
	}
	return best, ok
}

// inferNVLink chooses the NVLink fabric of a node whose file lists none
// (GPUs as bare <pci> elements, which NCCL completes at run time) from the
// GPU model and count, and says what it assumed:
//   - PCIe cards and parts without NVLink: none (a bridge is not assumed);
//   - NVLink 3 or later SXM parts, more than 4 GPUs: NVSwitch with all of the
//     GPU's links, as on 8-GPU HGX boards (DGX A100, DGX H100; Azure's ND A100
//     v4 and ND H100 v5 VMs, whose topology files these are);
//   - SXM parts, 2 to 4 GPUs: a direct mesh, as on HGX 4-GPU boards;
//   - V100 (NVLink 2), 8 GPUs: the DGX-1 hybrid cube-mesh (NVIDIA DGX-1
//     System Architecture white paper; Azure ND v2), GPUs numbered as there;
//   - anything else: none.
func inferNVLink(g model.GPUModel, n int) (model.NVLinkSpec, string) {
	switch {
	case g.NVLinkLinks == 0 || g.NVLinkBridgeOnly:
		return model.NVLinkSpec{Kind: "none"}, fmt.Sprintf("assumed no NVLink: the file lists none and %s is a PCIe part (a bridge is not assumed)", g.Name)
	case n == 1:
		return model.NVLinkSpec{Kind: "none"}, ""
	case g.NVLinkGen >= 3 && n > 4:
		return model.NVLinkSpec{Kind: "nvswitch"}, fmt.Sprintf("assumed NVSwitch, %d NVLinks per GPU: the file lists no NVLinks (NCCL detects them at run time) and %d %s GPUs sit on an HGX board with NVSwitches, as in Azure ND A100 v4 and ND H100 v5", g.NVLinkLinks, n, g.Name)
	case n <= 4:
		return model.NVLinkSpec{Kind: "mesh"}, fmt.Sprintf("assumed a direct NVLink mesh between the %d %s GPUs (HGX 4-GPU boards): the file lists no NVLinks", n, g.Name)
	case g.NVLinkGen == 2 && n == 8:
		return model.NVLinkSpec{Kind: "pairs", Pairs: append([][3]int(nil), dgx1CubeMesh...)}, "assumed the DGX-1 hybrid cube-mesh NVLink (6 links per GPU, as in Azure ND v2): the file lists no NVLinks"
	}
	return model.NVLinkSpec{Kind: "none"}, fmt.Sprintf("assumed no NVLink: the file lists none and no standard board has %d %s GPUs (describe the node in a cluster YAML)", n, g.Name)
}

// dgx1CubeMesh is the DGX-1 (V100) hybrid cube-mesh: [gpuA, gpuB, links],
// as nvidia-smi topo -m prints it on a DGX-1 (NV1/NV2; 6 links per GPU).
var dgx1CubeMesh = [][3]int{
	{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2},
	{1, 2, 2}, {1, 3, 1}, {1, 5, 2},
	{2, 3, 2}, {2, 6, 1},
	{3, 7, 1},
	{4, 5, 1}, {4, 6, 1}, {4, 7, 2},
	{5, 6, 2}, {5, 7, 1},
	{6, 7, 2},
}

func (t *TopoInfo) nodeSpec(gpu, nicSpeed string, nicKind model.NICKind) (model.NodeSpec, string, error) {
	s := cloneNode(t.Node)
	if gpu != "" {
		g, err := model.LookupGPU(gpu)
		if err != nil {
			return model.NodeSpec{}, "", fmt.Errorf("calibrate: topology: %w", err)
		}
		s.GPU = g.Name
	}
	if s.GPU == "" {
		return model.NodeSpec{}, "", fmt.Errorf("calibrate: topology: the file does not name the GPU model; give one (for example --gpu H100-SXM)")
	}
	nvNote := ""
	if s.NVLink.Kind == "" {
		g, err := model.LookupGPU(s.GPU)
		if err != nil {
			return model.NodeSpec{}, "", fmt.Errorf("calibrate: topology: %w", err)
		}
		s.NVLink, nvNote = inferNVLink(g, s.GPUs)
	}
	if s.NICs.Count > 0 {
		if nicSpeed == "" {
			nicSpeed = t.NICSpeed
		}
		if nicSpeed == "" {
			return model.NodeSpec{}, "", fmt.Errorf("calibrate: topology: %d NICs but their speed is unknown; give one (for example HDR, NDR, 400G)", s.NICs.Count)
		}
		if nicKind == "" {
			nicKind = t.NICKind
		}
		if nicKind == "" {
			return model.NodeSpec{}, "", fmt.Errorf("calibrate: topology: %d NICs but their kind is unknown; give one (ib, roce, efa, tcp)", s.NICs.Count)
		}
		s.NICs.Speed, s.NICs.Kind = nicSpeed, string(nicKind)
	}
	if err := s.Validate(); err != nil {
		return model.NodeSpec{}, "", fmt.Errorf("calibrate: topology node: %w", err)
	}
	return s, nvNote, nil
}

// cloneNode deep-copies the slices of a NodeSpec.
func cloneNode(n model.NodeSpec) model.NodeSpec {
	out := n
	out.Sockets = make([]model.SocketSpec, len(n.Sockets))
	for i, s := range n.Sockets {
		out.Sockets[i].HostBridges = make([]model.BridgeSpec, len(s.HostBridges))
		for j := range s.HostBridges {
			out.Sockets[i].HostBridges[j] = cloneBridge(s.HostBridges[j])
		}
	}
	out.NVLink.Pairs = append([][3]int(nil), n.NVLink.Pairs...)
	return out
}

func cloneBridge(b model.BridgeSpec) model.BridgeSpec {
	out := b
	out.GPUs = append([]int(nil), b.GPUs...)
	out.NICs = append([]int(nil), b.NICs...)
	out.Switches = make([]model.BridgeSpec, len(b.Switches))
	for i := range b.Switches {
		out.Switches[i] = cloneBridge(b.Switches[i])
	}
	return out
}

// LoadTopology reads a node topology from an nvidia-smi topo -m listing or
// an NCCL topology XML file (NCCL_TOPO_DUMP_FILE), detected from content.
// Another kind of file is an error naming what it is.
func LoadTopology(path string) (*TopoInfo, error) {
	a, err := ParseFile(path)
	if err != nil {
		return nil, err
	}
	if a.Kind == KindGraphXML {
		return nil, fmt.Errorf("calibrate: %s: is an NCCL graph file (NCCL_GRAPH_FILE: the channels to use), not a topology (NCCL_TOPO_FILE, nvidia-smi topo -m)", path)
	}
	if a.Topo == nil || (a.Kind != KindTopoMatrix && a.Kind != KindTopoXML) {
		return nil, fmt.Errorf("calibrate: %s: is %s output, not a topology (nvidia-smi topo -m or NCCL topology XML)", path, a.Kind)
	}
	return a.Topo, nil
}

// topoFindings reports what a node layout means for NCCL: NICs that no GPU
// reaches within a PCIe switch tree (GPUDirect RDMA off by default), and
// pairs without peer-to-peer support.
func topoFindings(t *TopoInfo, pathLine, p2pLine int) []Finding {
	var out []Finding
	nGPU := t.Node.GPUs
	if nGPU > 0 && t.Node.NICs.Count > 0 && len(t.Matrix) == len(t.Labels) {
		near, known := false, false
		for i := 0; i < nGPU && i < len(t.Matrix); i++ {
			for j := nGPU; j < len(t.Labels) && j < len(t.Matrix[i]); j++ {
				l := pathLevel(t.Matrix[i][j])
				near = near || l == 1 || l == 2
				known = known || l > 0
			}
		}
		if !near && known {
			out = append(out, Finding{Code: FindNICFarFromGPU, Severity: SevWarning, Line: pathLine,
				Message:  "no GPU shares a PCIe switch tree (PIX/PXB) with any NIC: NCCL disables GPUDirect RDMA by default (NCCL_NET_GDR_LEVEL defaults to PXB) and stages network traffic through host memory, or uses GDR across the CPU if the level is raised, which is slow",
				Evidence: fmt.Sprintf("every GPU-NIC path is %s or farther", nearestPath(t, nGPU))})
		}
	}
	if len(t.P2P) > 0 {
		var bad []string
		for i, row := range t.P2P {
			for j, c := range row {
				if i != j && c != "OK" && c != "X" && i < len(t.P2PLabels) && j < len(t.P2PLabels) {
					bad = append(bad, t.P2PLabels[i]+"-"+t.P2PLabels[j]+" "+c)
				}
			}
		}
		if len(bad) > 0 {
			if len(bad) > 4 {
				bad = append(bad[:4], "...")
			}
			out = append(out, Finding{Code: FindP2PUnavailable, Severity: SevWarning, Line: p2pLine,
				Message:  "nvidia-smi reports GPU pairs without peer-to-peer support: NCCL uses SHM through host memory between them",
				Evidence: strings.Join(bad, ", ")})
		}
	}
	return out
}

func nearestPath(t *TopoInfo, nGPU int) string {
	best := 6
	for i := 0; i < nGPU && i < len(t.Matrix); i++ {
		for j := nGPU; j < len(t.Matrix[i]); j++ {
			if l := pathLevel(t.Matrix[i][j]); l > 0 && l < best {
				best = l
			}
		}
	}
	return map[int]string{1: "PIX", 2: "PXB", 3: "PHB", 4: "NODE", 5: "SYS"}[best]
}

// deviceName labels device d of g ("GPU3", "NIC1").
func deviceName(g *topoGraph, d int) string {
	if d < g.nGPU {
		return "GPU" + itoa(d)
	}
	return "NIC" + itoa(d-g.nGPU)
}
