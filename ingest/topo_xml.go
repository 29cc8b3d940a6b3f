package ingest

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
)

// NCCL topology XML (NCCL_TOPO_DUMP_FILE / NCCL_TOPO_FILE, nccl-facts §6):
//
//	<system version="1">
//	  <cpu numaid="0" arch="x86_64" vendor="AuthenticAMD" ...>
//	    <pci busid="..." class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">  (a switch)
//	      <pci busid="..." class="0x030200" ...><gpu dev="0" sm="80" ...>
//	          <nvlink target="..." count="2" tclass="0x068000"/></gpu></pci>
//	      <pci busid="..." class="0x020700" ...><nic><net name="mlx5_0" dev="0" speed="200000" .../></nic></pci>
//
// A cpu is a socket with one host bridge (NCCL does not distinguish host
// bridges inside a NUMA node: paths through the CPU are PHB); each bridge
// pci element is a PCIe switch level; gpu and nic elements hang off the
// enclosing bridge. nvlink targets of class 0x068000 are NVSwitches.

// Limits on XML inputs.
const (
	maxXMLSize     = 16 << 20
	maxXMLDepth    = 64
	maxXMLElements = 200000
)

type xnode struct {
	name  string
	attrs map[string]string
	kids  []*xnode
	line  int
}

func (n *xnode) attr(k string) string { return n.attrs[k] }

func detectTopoXML(h *head) bool {
	c := firstJSONChar(h.raw)
	if c != '<' {
		return false
	}
	// <graphs> (NCCL_GRAPH_DUMP_FILE) is taken too, to be refused with a clear message.
	return bytes.Contains(h.raw, []byte("<graphs")) || (bytes.Contains(h.raw, []byte("<system")) &&
		(bytes.Contains(h.raw, []byte("<cpu")) || bytes.Contains(h.raw, []byte("<gpu")) || bytes.Contains(h.raw, []byte("<pci"))))
}

// readXML builds an element tree with bounded depth and size.
func readXML(name string, data []byte) (*xnode, error) {
	if len(data) > maxXMLSize {
		return nil, fmt.Errorf("calibrate: %s: XML input of %d bytes is above the %d-byte limit: %w", name, len(data), maxXMLSize, ErrTooLarge)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	var stack []*xnode
	var root *xnode
	count := 0
	for {
		tok, err := dec.RawToken()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, _ := dec.InputPos()
			return nil, errNoData(name, line, "invalid XML: %v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			count++
			line, _ := dec.InputPos()
			if count > maxXMLElements {
				return nil, errNoData(name, line, "more than %d XML elements", maxXMLElements)
			}
			if len(stack) >= maxXMLDepth {
				return nil, errNoData(name, line, "XML nested deeper than %d elements", maxXMLDepth)
			}
			n := &xnode{name: t.Name.Local, attrs: map[string]string{}, line: line}
			for i, at := range t.Attr {
				if i >= 64 {
					break
				}
				n.attrs[at.Name.Local] = at.Value
			}
			if len(stack) == 0 {
				if root != nil {
					return nil, errNoData(name, line, "XML has more than one root element")
				}
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) == 0 {
				line, _ := dec.InputPos()
				return nil, errNoData(name, line, "unbalanced XML end tag </%s>", t.Name.Local)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if root == nil {
		return nil, errNoData(name, 1, "no XML element")
	}
	if len(stack) != 0 {
		return nil, errNoData(name, lineAt(data, len(data)), "XML ends inside <%s> (truncated?)", stack[len(stack)-1].name)
	}
	return root, nil
}

func cpuVendor(n *xnode) string {
	switch strings.ToLower(n.attr("arch")) {
	case "arm64", "aarch64":
		return "arm"
	case "ppc64", "ppc64le":
		return "power"
	}
	switch n.attr("vendor") {
	case "GenuineIntel":
		return "intel"
	case "AuthenticAMD", "HygonGenuine":
		return "amd"
	}
	return ""
}

type xmlGPU struct {
	dev   int
	sm    int
	busid string
	links []*xnode
	line  int
	bare  bool // a <pci> of a GPU class without a <gpu>
}

// nicsAre is "1 NIC is" or "N NICs are".
func nicsAre(n int) string {
	if n == 1 {
		return "1 NIC is"
	}
	return itoa(n) + " NICs are"
}

// hasKid reports whether n has a child element called name.
func hasKid(n *xnode, name string) bool {
	for _, k := range n.kids {
		if k.name == name {
			return true
		}
	}
	return false
}

// kindOfNetNames infers the NIC kind from NCCL <net name=...> values:
// NET/Socket names network interfaces (eth0, ens1f0, enp65s0, bond0), so
// such names mean TCP; NET/IB names HCAs (mlx5_0), which may be InfiniBand
// or RoCE, so they leave the kind unknown. Mixed or empty names give "".
func kindOfNetNames(names []string) model.NICKind {
	if len(names) == 0 {
		return ""
	}
	for _, n := range names {
		if !(strings.HasPrefix(n, "eth") || strings.HasPrefix(n, "en") || strings.HasPrefix(n, "bond")) {
			return ""
		}
	}
	return model.NICTCP
}

func parseTopoXML(name string, data []byte) (*Artifact, error) {
	root, err := readXML(name, data)
	if err != nil {
		return nil, err
	}
	switch root.name {
	case "system":
	case "graphs":
		return parseGraphXML(name, root)
	default:
		return nil, errNoData(name, root.line, "XML root <%s> is not an NCCL topology <system>", root.name)
	}
	if err := checkTopoXML(name, root); err != nil {
		return nil, err
	}
	t := &TopoInfo{Source: string(KindTopoXML)}
	spec := model.NodeSpec{Name: "topo", Source: name + " (NCCL topology XML)"}
	var gpus []*xmlGPU
	nics := 0
	var speeds []int
	nvswitchPCI := 0
	// Bare <pci> devices: GPUs and NICs given by PCI class only.
	pciGPUs, pciNICs, pciIB := 0, 0, 0
	pciNICGen := 0
	var nicNames []string
	var walk func(n *xnode, b *model.BridgeSpec, busid string)
	walk = func(n *xnode, b *model.BridgeSpec, busid string) {
		for _, k := range n.kids {
			switch k.name {
			case "pci":
				cls := strings.ToLower(k.attr("class"))
				switch {
				case strings.HasPrefix(cls, "0x0604"):
					sw := model.BridgeSpec{Gen: model.PCIeGenOfSpeed(k.attr("link_speed"))}
					if _, err := model.LookupPCIe(sw.Gen); err != nil {
						sw.Gen = 0 // below Gen3 or unknown: let the model choose
					}
					if w, err := strconv.Atoi(k.attr("link_width")); err == nil {
						switch w {
						case 1, 2, 4, 8, 16:
							sw.Width = w
						}
					}
					walk(k, &sw, k.attr("busid"))
					b.Switches = append(b.Switches, sw)
				case strings.HasPrefix(cls, "0x0680"):
					nvswitchPCI++
				case strings.HasPrefix(cls, "0x03") && !hasKid(k, "gpu"):
					// A display or 3D controller (0x0300, 0x0302) without a
					// <gpu>: NCCL fills in the GPU at run time.
					if len(gpus) >= maxMatrixDim {
						continue
					}
					b.GPUs = append(b.GPUs, len(gpus))
					gpus = append(gpus, &xmlGPU{dev: -1, busid: k.attr("busid"), line: k.line, bare: true})
					pciGPUs++
				case strings.HasPrefix(cls, "0x02") && !hasKid(k, "nic") && !hasKid(k, "net"):
					// A network controller (0x0200 Ethernet, 0x0207
					// InfiniBand) without a <nic>.
					if nics >= maxMatrixDim {
						continue
					}
					b.NICs = append(b.NICs, nics)
					nics++
					pciNICs++
					if strings.HasPrefix(cls, "0x0207") {
						pciIB++
					}
					if g := model.PCIeGenOfSpeed(k.attr("link_speed")); g > 0 && pciNICGen == 0 {
						pciNICGen = g
					}
				default:
					walk(k, b, k.attr("busid"))
				}
			case "gpu":
				if len(gpus) >= maxMatrixDim {
					continue
				}
				g := &xmlGPU{dev: -1, busid: busid, line: k.line}
				if v, err := strconv.Atoi(k.attr("dev")); err == nil {
					g.dev = v
				}
				g.sm, _ = strconv.Atoi(k.attr("sm"))
				for _, l := range k.kids {
					if l.name == "nvlink" {
						g.links = append(g.links, l)
					}
				}
				b.GPUs = append(b.GPUs, len(gpus))
				gpus = append(gpus, g)
			case "nic":
				walk(k, b, busid)
			case "net":
				if nics >= maxMatrixDim {
					continue
				}
				b.NICs = append(b.NICs, nics)
				nics++
				if v, err := strconv.Atoi(k.attr("speed")); err == nil && v > 0 {
					speeds = append(speeds, v)
				}
				nicNames = append(nicNames, k.attr("name"))
				if n := k.attr("name"); n != "" {
					if t.NICNames == nil {
						t.NICNames = map[string]string{}
					}
					t.NICNames["NIC"+itoa(nics-1)] = n
				}
			}
		}
	}
	for _, c := range root.kids {
		if c.name != "cpu" {
			continue
		}
		if len(spec.Sockets) >= maxMatrixDim {
			break
		}
		if spec.CPU == "" {
			spec.CPU = cpuVendor(c)
		}
		var hb model.BridgeSpec
		walk(c, &hb, "")
		spec.Sockets = append(spec.Sockets, model.SocketSpec{HostBridges: []model.BridgeSpec{hb}})
	}
	if len(gpus) == 0 {
		return nil, errNoData(name, root.line, "NCCL topology XML without any <gpu> under a <cpu>")
	}
	if pciGPUs == len(gpus) {
		// No dev attributes: CUDA numbers GPUs in PCI bus ID order
		// (CUDA_DEVICE_ORDER=PCI_BUS_ID; the default FASTEST_FIRST gives the
		// same order on a node of identical GPUs).
		order := make([]int, len(gpus))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool {
			return strings.ToLower(gpus[order[a]].busid) < strings.ToLower(gpus[order[b]].busid)
		})
		for rank, i := range order {
			gpus[i].dev = rank
		}
		t.Notes = append(t.Notes, fmt.Sprintf("%d GPUs are bare <pci> elements (PCI class only, as in the topology files cloud images install for NCCL_TOPO_FILE): NCCL detects the GPU model and NVLinks at run time, so collsim takes the model from --gpu and numbers the GPUs in PCI bus ID order", pciGPUs))
	} else if pciGPUs > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d of %d GPUs are bare <pci> elements without a <gpu>", pciGPUs, len(gpus)))
	}
	// Renumber GPUs by their dev attribute when it is a permutation.
	perm := make([]int, len(gpus))
	seen := map[int]bool{}
	okPerm := true
	for i, g := range gpus {
		if g.dev < 0 || g.dev >= len(gpus) || seen[g.dev] {
			okPerm = false
			break
		}
		seen[g.dev] = true
		perm[i] = g.dev
	}
	if !okPerm {
		for i := range perm {
			perm[i] = i
		}
	}
	renumber(&spec, perm)
	ordered := make([]*xmlGPU, len(gpus))
	for i, g := range gpus {
		ordered[perm[i]] = g
	}
	spec.GPUs = len(gpus)
	spec.NICs.Count = nics
	spec.NICSlots = nics
	// NVLink: links to NVSwitches add up; GPU targets are pairs.
	byBus := map[string]int{}
	for i, g := range ordered {
		if g.busid != "" {
			byBus[strings.ToLower(g.busid)] = i
		}
	}
	switchLinks, pairs := 0, map[[2]int]int{}
	for i, g := range ordered {
		sw := 0
		for _, l := range g.links {
			cnt, _ := strconv.Atoi(l.attr("count")) // 1..maxNVLinkCount, checked by checkTopoXML
			cls := strings.ToLower(l.attr("tclass"))
			switch {
			case strings.HasPrefix(cls, "0x0680"):
				sw += cnt
			case strings.HasPrefix(cls, "0x03"):
				if j, ok := byBus[strings.ToLower(l.attr("target"))]; ok && j != i {
					k := [2]int{min(i, j), max(i, j)}
					pairs[k] = max(pairs[k], cnt)
				}
			}
		}
		switchLinks = max(switchLinks, sw)
	}
	switch {
	case switchLinks > 0:
		spec.NVLink = model.NVLinkSpec{Kind: "nvswitch", Links: switchLinks}
	case len(pairs) > 0:
		spec.NVLink.Kind = "pairs"
		for k, v := range pairs {
			spec.NVLink.Pairs = append(spec.NVLink.Pairs, [3]int{k[0], k[1], v})
		}
		sort.Slice(spec.NVLink.Pairs, func(a, b int) bool {
			pa, pb := spec.NVLink.Pairs[a], spec.NVLink.Pairs[b]
			if pa[0] != pb[0] {
				return pa[0] < pb[0]
			}
			return pa[1] < pb[1]
		})
	case pciGPUs > 0:
		// Not stated: NodeSpec decides from the GPU model.
		spec.NVLink.Kind = ""
	default:
		spec.NVLink.Kind = "none"
	}
	// GPU model from sm and the NVLink count.
	sm := ordered[0].sm
	links := switchLinks
	if spec.NVLink.Kind == "pairs" {
		per := map[int]int{}
		for _, p := range spec.NVLink.Pairs {
			per[p[0]] += p[2]
			per[p[1]] += p[2]
		}
		for _, v := range per {
			links = max(links, v)
		}
	}
	if sm > 0 {
		gpu, note := inferGPUFromSM(sm, links, spec.NVLink.Kind)
		spec.GPU = gpu
		if note != "" {
			t.Notes = append(t.Notes, note)
		}
	}
	if nvswitchPCI > 0 && spec.NVLink.Kind != "nvswitch" {
		t.Notes = append(t.Notes, fmt.Sprintf("%d NVSwitch PCI devices listed but no GPU NVLink targets one", nvswitchPCI))
	}
	switch {
	case pciNICs > 0 && pciIB == pciNICs && pciNICs == nics:
		t.NICKind = model.NICIB
		t.Notes = append(t.Notes, fmt.Sprintf("%s bare <pci> elements of class 0x0207 (InfiniBand); their speed is not in the file", nicsAre(pciNICs)))
	case pciNICs > 0 && pciIB == 0 && pciNICs == nics:
		t.Notes = append(t.Notes, fmt.Sprintf("%s bare <pci> elements of class 0x0200 (Ethernet): RoCE or TCP is not stated, nor their speed", nicsAre(pciNICs)))
	case pciNICs > 0:
		t.Notes = append(t.Notes, fmt.Sprintf("%d of %d NICs are bare <pci> elements; their kind and speed are not all stated", pciNICs, nics))
	case nics > 0:
		t.NICKind = kindOfNetNames(nicNames)
	}
	if pciNICs > 0 && pciNICs == nics && len(speeds) == 0 {
		t.NICPCIeGen = pciNICGen
	}
	if len(speeds) > 0 {
		t.NICSpeed = nicSpeedName(speeds[0])
		for _, s := range speeds[1:] {
			if s != speeds[0] {
				t.Notes = append(t.Notes, "NICs of different speeds; the first one's speed is used")
				break
			}
		}
	}
	t.Node = spec
	t.Labels, t.Matrix = specMatrix(&t.Node)
	t.NUMA = nil
	a := &Artifact{Kind: KindTopoXML, Topo: t}
	a.Findings = topoFindings(t, root.line, 0)
	return a, nil
}

// rePCIeSpeed is a PCIe link speed as Linux prints it in sysfs
// (max_link_speed) and NCCL copies it into link_speed: "16 GT/s" (kernel
// 5.6 and earlier), "16.0 GT/s PCIe" (later kernels).
var rePCIeSpeed = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) GT/s(?: PCIe)?$`)

// checkTopoXML refuses attribute values no NCCL topology file holds, which
// would otherwise be read as a default and silently change the node: an
// <nvlink> count that is not 1..18, a <net> speed or <pci> link_width that
// is not a number of the right kind, a link_speed that is not a PCIe
// speed, a <gpu> dev or sm that is not a number, two <pci> elements with
// one bus ID or two <gpu> elements with one dev on one host. What NCCL
// itself writes for "unknown" stays valid: link_speed "" (or sysfs's
// "Unknown speed") and link_width "0", as in virtual machines' files.
// Absent attributes are not checked here. The error names the line, the
// element, the attribute and the value.
func checkTopoXML(name string, root *xnode) error {
	type key struct{ host, id string }
	busLine := map[key]int{}
	devLine := map[key]int{}
	bad := func(n *xnode, attr, want string) error {
		return errNoData(name, n.line, "<%s> %s=%q is not %s", n.name, attr, n.attr(attr), want)
	}
	whole := func(v string) (int, bool) {
		if v == "" || strings.TrimLeft(v, "0123456789") != "" || len(v) > 9 {
			return 0, false
		}
		k, err := strconv.Atoi(v)
		return k, err == nil
	}
	var walk func(n *xnode, host string) error
	walk = func(n *xnode, host string) error {
		has := func(a string) bool { _, ok := n.attrs[a]; return ok }
		switch n.name {
		case "cpu":
			// NCCL's fused multi-node (MNNVL) topologies tell hosts apart by host_hash.
			host = n.attr("host_hash")
		case "pci":
			if b := strings.ToLower(strings.TrimSpace(n.attr("busid"))); b != "" {
				k := key{host, b}
				if l, ok := busLine[k]; ok {
					return errNoData(name, n.line, "<pci> busid=%q appears twice (lines %d and %d): one PCI device cannot be in two places", n.attr("busid"), l, n.line)
				}
				busLine[k] = n.line
			}
			if has("link_width") {
				switch w, ok := whole(n.attr("link_width")); {
				case !ok:
					return bad(n, "link_width", "a PCIe link width (1, 2, 4, 8, 12, 16, 32 lanes; 0 when unknown)")
				case w != 0 && w != 1 && w != 2 && w != 4 && w != 8 && w != 12 && w != 16 && w != 32:
					return bad(n, "link_width", "a PCIe link width (1, 2, 4, 8, 12, 16, 32 lanes; 0 when unknown)")
				}
			}
			if has("link_speed") {
				v := strings.TrimSpace(n.attr("link_speed"))
				ok := v == "" || strings.HasPrefix(strings.ToLower(v), "unknown")
				if m := rePCIeSpeed.FindStringSubmatch(v); m != nil {
					f, err := strconv.ParseFloat(m[1], 64)
					ok = err == nil && f > 0
				}
				if !ok {
					return bad(n, "link_speed", `a PCIe link speed ("16.0 GT/s PCIe", "8 GT/s"; empty when unknown)`)
				}
			}
		case "gpu":
			if has("dev") {
				d, ok := whole(n.attr("dev"))
				if !ok {
					return bad(n, "dev", "a GPU index (0, 1, ...)")
				}
				k := key{host, itoa(d)}
				if l, ok := devLine[k]; ok {
					return errNoData(name, n.line, "<gpu> dev=%q appears twice (lines %d and %d)", n.attr("dev"), l, n.line)
				}
				devLine[k] = n.line
			}
			if has("sm") {
				if v, ok := whole(n.attr("sm")); !ok || v == 0 {
					return bad(n, "sm", "a compute capability (80, 90, ...)")
				}
			}
		case "nvlink":
			if !has("count") {
				return errNoData(name, n.line, "<nvlink> has no count attribute (the number of NVLinks to its target, which NCCL requires)")
			}
			if v, ok := whole(n.attr("count")); !ok || v < 1 || v > maxNVLinkCount {
				return bad(n, "count", fmt.Sprintf("a number of NVLinks (1..%d)", maxNVLinkCount))
			}
		case "net":
			if has("speed") {
				if _, ok := whole(n.attr("speed")); !ok {
					return bad(n, "speed", "a link speed in Mb/s (200000 for 200 Gb/s)")
				}
			}
		}
		for _, k := range n.kids {
			if err := walk(k, host); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root, "")
}

// renumber rewrites the GPU indices of a layout through perm.
func renumber(s *model.NodeSpec, perm []int) {
	var walk func(b *model.BridgeSpec)
	walk = func(b *model.BridgeSpec) {
		for i, g := range b.GPUs {
			b.GPUs[i] = perm[g]
		}
		for i := range b.Switches {
			walk(&b.Switches[i])
		}
	}
	for si := range s.Sockets {
		for hi := range s.Sockets[si].HostBridges {
			walk(&s.Sockets[si].HostBridges[hi])
		}
	}
}

// inferGPUFromSM picks the catalog GPU with compute capability sm and the
// given NVLink count (0 for none).
func inferGPUFromSM(sm, links int, kind string) (string, string) {
	if kind == "nvswitch" {
		return inferGPU(links, sm)
	}
	var cands []string
	for _, g := range model.GPUModels() {
		if g.SM != sm {
			continue
		}
		if links == 0 && (g.NVLinkLinks == 0 || g.NVLinkBridgeOnly) || links > 0 && g.NVLinkLinks >= links {
			cands = append(cands, g.Name)
		}
	}
	if len(cands) == 1 {
		return cands[0], fmt.Sprintf("GPU inferred as %s from sm %d", cands[0], sm)
	}
	if len(cands) > 1 {
		return "", fmt.Sprintf("GPU model not inferred: sm %d with %d NVLinks fits %s", sm, links, strings.Join(cands, ", "))
	}
	return "", ""
}

// nicSpeedName maps an NCCL net speed in Mb/s to a NIC speed catalog name
// ("200G"), or "" when the catalog has none.
func nicSpeedName(mbps int) string {
	gbps := (mbps + 500) / 1000
	for _, s := range model.NICSpeeds() {
		if s.Gbps == gbps && strings.HasSuffix(s.Name, "G") {
			return s.Name
		}
	}
	return ""
}
