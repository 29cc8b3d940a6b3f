package model

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Arch is a GPU architecture family.
type Arch string

// GPU architectures known to the catalog.
const (
	Volta     Arch = "Volta"
	Turing    Arch = "Turing"
	Ampere    Arch = "Ampere"
	Ada       Arch = "Ada"
	Hopper    Arch = "Hopper"
	Blackwell Arch = "Blackwell"
)

// GPUModel is one row of the GPU catalog.
type GPUModel struct {
	// Name is the catalog key, e.g. "H100-SXM".
	Name string
	// Arch is the architecture family.
	Arch Arch
	// SM is the compute capability times ten (70, 80, 90, 100, ...), as NCCL uses it.
	SM int
	// NVLinkGen is the NVLink generation (0 when the part has no NVLink).
	NVLinkGen int
	// NVLinkLinks is the number of NVLink links the part exposes (SXM) or
	// carries through its bridge connector (PCIe cards); 0 without NVLink.
	NVLinkLinks int
	// NVLinkBridgeOnly is true for PCIe cards whose NVLink exists only with
	// an optional bridge; nodes must ask for the bridge explicitly.
	NVLinkBridgeOnly bool
	// PCIeGen and PCIeWidth describe the host interface.
	PCIeGen, PCIeWidth int
	// MemGB is the device memory in GB (informational, used by reports).
	MemGB int
	// NoPCIeP2P is true for GeForce parts whose driver refuses peer-to-peer
	// over PCIe (nvidia-smi topo -p2p shows NS); NCCL then uses SHM.
	NoPCIeP2P bool
	// NoGDR is true for GeForce parts, which have no GPUDirect RDMA (CUDA
	// Toolkit documentation, GPUDirect RDMA, §1: "available on both Tesla
	// and Quadro GPUs"): NCCL stages their network traffic through host
	// memory.
	NoGDR bool
	// Source names where the figures come from.
	Source string
	// Aliases are other spellings seen in nvidia-smi, nccl-tests and NCCL logs.
	Aliases []string
}

// gpuCatalog lists the GPUs collsim models. NVLink link counts and PCIe
// generations are from NVIDIA's product pages and the NVLink table in
// nccl-facts §8 (hwloc#574, nccl-tests#149, #212, DeepEP#16).
var gpuCatalog = []GPUModel{
	{Name: "V100-SXM2", Arch: Volta, SM: 70, NVLinkGen: 2, NVLinkLinks: 6, PCIeGen: 3, PCIeWidth: 16, MemGB: 32,
		Source:  "NVIDIA V100 datasheet: 6 NVLink2 links, 300 GB/s bidirectional; hwloc#574",
		Aliases: []string{"Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB", "V100-SXM2-16GB", "V100-SXM2-32GB", "Tesla V100-SXM3-32GB", "V100-SXM3", "V100"}},
	{Name: "A100-SXM4", Arch: Ampere, SM: 80, NVLinkGen: 3, NVLinkLinks: 12, PCIeGen: 4, PCIeWidth: 16, MemGB: 80,
		Source:  "NVIDIA A100 datasheet: 12 NVLink3 links, 600 GB/s bidirectional; nccl-tests#149",
		Aliases: []string{"A100-SXM4-40GB", "A100-SXM4-80GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "A100-SXM", "A100"}},
	{Name: "A100-PCIE", Arch: Ampere, SM: 80, NVLinkGen: 3, NVLinkLinks: 12, NVLinkBridgeOnly: true, PCIeGen: 4, PCIeWidth: 16, MemGB: 80,
		Source:  "NVIDIA A100 PCIe datasheet: NVLink bridge for 2 GPUs, 600 GB/s bidirectional",
		Aliases: []string{"A100-PCIE-40GB", "A100-PCIE-80GB", "NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe", "A100 80GB PCIe"}},
	{Name: "H100-SXM", Arch: Hopper, SM: 90, NVLinkGen: 4, NVLinkLinks: 18, PCIeGen: 5, PCIeWidth: 16, MemGB: 80,
		Source:  "NVIDIA H100 datasheet: 18 NVLink4 links, 900 GB/s bidirectional; nccl-tests#212",
		Aliases: []string{"NVIDIA H100 80GB HBM3", "H100 80GB HBM3", "NVIDIA H100", "H100", "H100-SXM5", "H100-SXM5-80GB"}},
	{Name: "H100-PCIE", Arch: Hopper, SM: 90, NVLinkGen: 4, NVLinkLinks: 12, NVLinkBridgeOnly: true, PCIeGen: 5, PCIeWidth: 16, MemGB: 80,
		Source:  "NVIDIA H100 PCIe datasheet: NVLink bridge 600 GB/s bidirectional; nccl#1161 (~116 GB/s busbw on 2 bridged GPUs)",
		Aliases: []string{"NVIDIA H100 PCIe", "H100 PCIe", "NVIDIA H100 NVL", "H100-NVL"}},
	{Name: "H200-SXM", Arch: Hopper, SM: 90, NVLinkGen: 4, NVLinkLinks: 18, PCIeGen: 5, PCIeWidth: 16, MemGB: 141,
		Source:  "NVIDIA H200 datasheet: NVLink 900 GB/s; nccl-tests#272",
		Aliases: []string{"NVIDIA H200", "H200", "NVIDIA H200 141GB HBM3e", "H200-SXM5"}},
	{Name: "H200-NVL", Arch: Hopper, SM: 90, NVLinkGen: 4, NVLinkLinks: 18, NVLinkBridgeOnly: true, PCIeGen: 5, PCIeWidth: 16, MemGB: 141,
		Source:  "NVIDIA H200 NVL datasheet: PCIe Gen5 card, 141 GB, NVLink bridge 900 GB/s per GPU (2- or 4-way; collsim models bridged pairs)",
		Aliases: []string{"NVIDIA H200 NVL", "H200 NVL"}},
	{Name: "H800-SXM", Arch: Hopper, SM: 90, NVLinkGen: 4, NVLinkLinks: 8, PCIeGen: 5, PCIeWidth: 16, MemGB: 80,
		Source:  "H800: NVLink capped at 400 GB/s bidirectional (8 links); DeepEP#16, DeepSeek-V3#28, nccl#1411 (NV8)",
		Aliases: []string{"NVIDIA H800", "H800", "NVIDIA H800 80GB HBM3"}},
	{Name: "B200", Arch: Blackwell, SM: 100, NVLinkGen: 5, NVLinkLinks: 18, PCIeGen: 5, PCIeWidth: 16, MemGB: 180,
		Source:  "NVIDIA DGX B200 datasheet: 18 NVLink5 links, 1.8 TB/s bidirectional; host ConnectX-7 on PCIe Gen5",
		Aliases: []string{"NVIDIA B200", "B200-SXM"}},
	{Name: "GB200", Arch: Blackwell, SM: 100, NVLinkGen: 5, NVLinkLinks: 18, PCIeGen: 5, PCIeWidth: 16, MemGB: 186,
		Source:  "NVIDIA GB200 NVL72 datasheet: 72 GPUs in one NVLink domain, 1.8 TB/s per GPU; Grace over NVLink-C2C",
		Aliases: []string{"NVIDIA GB200", "GB200-NVL"}},
	{Name: "L40S", Arch: Ada, SM: 89, PCIeGen: 4, PCIeWidth: 16, MemGB: 48,
		Source:  "NVIDIA L40S datasheet: PCIe Gen4 x16, no NVLink",
		Aliases: []string{"NVIDIA L40S"}},
	{Name: "L40", Arch: Ada, SM: 89, PCIeGen: 4, PCIeWidth: 16, MemGB: 48,
		Source:  "NVIDIA L40 datasheet: PCIe Gen4 x16, no NVLink, 48 GB; half the L40S's tensor rate",
		Aliases: []string{"NVIDIA L40"}},
	{Name: "RTX-4090", Arch: Ada, SM: 89, PCIeGen: 4, PCIeWidth: 16, MemGB: 24, NoPCIeP2P: true, NoGDR: true,
		Source:  "NVIDIA GeForce RTX 4090 specifications: PCIe Gen4 x16, no NVLink; GeForce drivers report PCIe P2P not supported",
		Aliases: []string{"NVIDIA GeForce RTX 4090", "GeForce RTX 4090", "RTX 4090"}},
	{Name: "RTX-2080TI", Arch: Turing, SM: 75, NVLinkGen: 2, NVLinkLinks: 2, NVLinkBridgeOnly: true, PCIeGen: 3, PCIeWidth: 16, MemGB: 11, NoPCIeP2P: true, NoGDR: true,
		Source:  "NVIDIA GeForce RTX 2080 Ti specifications: PCIe Gen3 x16, optional 2-link NVLink bridge; P2P NS in topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt",
		Aliases: []string{"NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti", "RTX 2080 Ti", "RTX2080TI"}},
}

// GPUModels returns a copy of the GPU catalog in catalog order.
func GPUModels() []GPUModel { return append([]GPUModel(nil), gpuCatalog...) }

// LookupGPU finds a GPU by catalog name or alias, ignoring case, spaces,
// dashes and underscores. An unknown name is an error listing the known ones.
func LookupGPU(name string) (GPUModel, error) {
	k := normName(name)
	for _, g := range gpuCatalog {
		if normName(g.Name) == k {
			return g, nil
		}
	}
	for _, g := range gpuCatalog {
		for _, a := range g.Aliases {
			if normName(a) == k {
				return withMemOf(g, name), nil
			}
		}
	}
	names := make([]string, len(gpuCatalog))
	for i, g := range gpuCatalog {
		names[i] = g.Name
	}
	return GPUModel{}, fmt.Errorf("unknown GPU %q (known: %s)", name, strings.Join(names, ", "))
}

// MatchGPU finds the catalog GPU whose name or alias best matches a free-form
// device name such as "NVIDIA A100-SXM4-80GB" printed by nccl-tests: an exact
// match first, then the longest alias contained in the name. ok is false when
// nothing matches.
func MatchGPU(device string) (GPUModel, bool) {
	if g, err := LookupGPU(device); err == nil {
		return g, true
	}
	k := normName(device)
	best, bestLen := GPUModel{}, 0
	for _, g := range gpuCatalog {
		for _, a := range append([]string{g.Name}, g.Aliases...) {
			n := normName(a)
			if len(n) > bestLen && strings.Contains(k, n) {
				best, bestLen = g, len(n)
			}
		}
	}
	if bestLen == 0 {
		return GPUModel{}, false
	}
	best = withMemOf(best, device)
	if otherFormFactor(k, best) {
		// "Tesla V100-PCIE-32GB" contains "V100", "NVIDIA GH200 480GB"
		// contains "H200": a part of another form factor or package, not
		// the catalog's entry; better unknown than wrong.
		return GPUModel{}, false
	}
	return best, true
}

// reMemGB finds a memory size in a device name ("A100-SXM4-40GB",
// "NVIDIA H100 80GB HBM3").
var reMemGB = regexp.MustCompile(`(?i)(^|[^0-9])([0-9]{1,4})\s?GB\b`)

// withMemOf is g with the memory size its device name states, where one
// entry stands for several sizes (A100 40 or 80 GB, V100 16 or 32 GB).
func withMemOf(g GPUModel, device string) GPUModel {
	if m := reMemGB.FindStringSubmatch(device); m != nil {
		if v, err := strconv.Atoi(m[2]); err == nil && v > 0 {
			g.MemGB = v
		}
	}
	return g
}

// otherFormFactor reports whether a normalised device name names another
// form factor or package than the catalog entry g it contains: a PCIe card
// where g is an SXM part, an SXM part where g is a PCIe card, a Grace
// Hopper or Grace Blackwell superchip (GH200, GB200) where g is not one.
func otherFormFactor(k string, g GPUModel) bool {
	name := normName(g.Name)
	pcieCard := g.NVLinkBridgeOnly || g.NVLinkGen == 0
	switch {
	case strings.Contains(k, "PCIE") && !pcieCard:
		return true
	case strings.Contains(k, "SXM") && pcieCard:
		return true
	case strings.Contains(k, "GH200") && !strings.Contains(name, "GH200"):
		return true
	case strings.Contains(k, "GB200") && !strings.Contains(name, "GB200"):
		return true
	}
	return false
}

func normName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r == ' ' || r == '-' || r == '_' {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// NVLinkGen is one NVLink generation.
type NVLinkGen struct {
	Gen int
	// LineGBps is the signalling rate per link per direction.
	LineGBps GBps
	// NCCLGBps is the per-link bandwidth NCCL's topology code assumes
	// (SMxx_NVLINK_BW in src/graph/topo.h, nccl-facts §3.3).
	NCCLGBps GBps
	Source   string
}

var nvlinkGens = []NVLinkGen{
	{1, 20, 18, "P100: 4 links, 160 GB/s bidirectional (hwloc#574); NCCL SM60_NVLINK_BW 18"},
	{2, 25, 20, "V100: 6 links, 300 GB/s bidirectional (hwloc#574); NCCL SM70_NVLINK_BW 20"},
	{3, 25, 20, "A100: 12 links, 600 GB/s bidirectional (nccl-tests#149); NCCL SM80_NVLINK_BW 20"},
	{4, 25, 20.6, "H100: 18 links, 900 GB/s bidirectional (nccl-tests#212); NCCL SM90_NVLINK_BW 20.6"},
	{5, 50, 40.1, "B200: 18 links, 1.8 TB/s bidirectional (nvidia.com NVLink page); NCCL SM100_NVLINK_BW 40.1"},
}

// LookupNVLink returns NVLink generation gen (1..5).
func LookupNVLink(gen int) (NVLinkGen, error) {
	for _, g := range nvlinkGens {
		if g.Gen == gen {
			return g, nil
		}
	}
	return NVLinkGen{}, fmt.Errorf("unknown NVLink generation %d (known: 1, 2, 3, 4, 5)", gen)
}

// NVSwitchGen is one NVSwitch generation.
type NVSwitchGen struct {
	Name      string
	NVLinkGen int
	Ports     int
	// Multicast is true when the switch supports NVLink SHARP (multicast and
	// in-switch reduction), which NVLS needs.
	Multicast bool
	Source    string
}

var nvswitchGens = []NVSwitchGen{
	{"gen1", 2, 18, false, "DGX-2: 12 NVSwitch gen1, 18 NVLink2 ports each (nvidia.com NVLink page)"},
	{"gen2", 3, 36, false, "HGX A100: 6 NVSwitch gen2, 36 NVLink3 ports, 2 links from each GPU to each switch"},
	{"gen3", 4, 64, true, "HGX H100: 4 NVSwitch gen3, 64 NVLink4 ports, multicast and SHARP (NVIDIA third-generation NVSwitch blog)"},
	{"gen4", 5, 72, true, "NVLink Switch for GB200 NVL72 / HGX B200: NVLink5, SHARP; switch tray 144 ports, 14.4 TB/s"},
}

// LookupNVSwitch returns the NVSwitch generation by name ("gen1".."gen4").
func LookupNVSwitch(name string) (NVSwitchGen, error) {
	for _, g := range nvswitchGens {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
	}
	return NVSwitchGen{}, fmt.Errorf("unknown NVSwitch generation %q (known: gen1, gen2, gen3, gen4)", name)
}

// NVSwitchForNVLink returns the NVSwitch generation that pairs with an NVLink generation.
func NVSwitchForNVLink(nvlinkGen int) (NVSwitchGen, error) {
	for _, g := range nvswitchGens {
		if g.NVLinkGen == nvlinkGen {
			return g, nil
		}
	}
	return NVSwitchGen{}, fmt.Errorf("no NVSwitch generation pairs with NVLink %d", nvlinkGen)
}

// PCIeGen is one PCIe generation.
type PCIeGen struct {
	Gen int
	// GTs is the per-lane transfer rate in GT/s.
	GTs float64
	// X16GBps is the theoretical x16 bandwidth per direction after encoding.
	X16GBps GBps
	// NCCLX16GBps is what NCCL's topology code assigns to an x16 link
	// (width × rate / 80, nccl-facts §3.3).
	NCCLX16GBps GBps
	// AchievedX16GBps is the bulk-copy bandwidth a GPU reaches per direction
	// on an x16 link; it is where the default PCIe efficiency comes from.
	AchievedX16GBps GBps
	Source          string
}

var pcieGens = []PCIeGen{
	{3, 8, 15.75, 12, 12.5, "theory hpc-notes.pages.dev/reference/pcie; ~12 GB/s measured on V100 (bam#54)"},
	{4, 16, 31.5, 24, 25, "theory as above; ~25 GB/s measured on A100 (bam#54)"},
	{5, 32, 63, 48, 55, "theory as above; 55.3 GB/s H2D measured on H800 by nvbandwidth (shared/data nvbandwidth_h800 file)"},
	{6, 64, 121, 96, 110, "theory ~121 GB/s (PAM4/FLIT); achieved assumed at 2x Gen5"},
}

// LookupPCIe returns PCIe generation gen (3..6).
func LookupPCIe(gen int) (PCIeGen, error) {
	for _, g := range pcieGens {
		if g.Gen == gen {
			return g, nil
		}
	}
	return PCIeGen{}, fmt.Errorf("unknown PCIe generation %d (known: 3, 4, 5, 6)", gen)
}

// PCIeGenOfSpeed returns the PCIe generation of a per-lane link speed as
// Linux sysfs (current_link_speed, max_link_speed) and NCCL's topology XML
// (link_speed) print it: "32.0 GT/s PCIe", "16 GT/s", "2.5 GT/s PCIe". Only
// the leading number counts; a rate a little below a generation's nominal
// one (2.5, 5, 8, 16, 32, 64 GT/s) still maps to it. It returns 0 when the
// speed is missing, not a number ("Unknown") or below 2 GT/s. Generations
// 1 and 2 are returned too, though LookupPCIe knows only 3 to 6.
func PCIeGenOfSpeed(speed string) int {
	f := strings.Fields(speed)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	switch {
	case v >= 60:
		return 6
	case v >= 30:
		return 5
	case v >= 15:
		return 4
	case v >= 7.5:
		return 3
	case v >= 4.5:
		return 2
	case v >= 2:
		return 1
	}
	return 0
}

// PCIeBandwidth returns the line (after encoding) and the NCCL-model
// bandwidth per direction of a PCIe link of generation gen and the given
// width (1..16 lanes).
func PCIeBandwidth(gen, width int) (line, ncclModel GBps, err error) {
	g, err := LookupPCIe(gen)
	if err != nil {
		return 0, 0, err
	}
	switch width {
	case 1, 2, 4, 8, 16:
	default:
		return 0, 0, fmt.Errorf("invalid PCIe width x%d (known: x1, x2, x4, x8, x16)", width)
	}
	f := GBps(width) / 16
	return g.X16GBps * f, g.NCCLX16GBps * f, nil
}

// NICKind is how a NIC carries NCCL traffic.
type NICKind string

// NIC kinds. IB and RoCE use the verbs transport (NET/IB); EFA uses the
// libfabric plugin (NET/OFI); TCP uses NCCL's socket transport (NET/Socket).
const (
	NICIB   NICKind = "ib"
	NICRoCE NICKind = "roce"
	NICEFA  NICKind = "efa"
	NICTCP  NICKind = "tcp"
)

// NICKinds lists the known kinds, in a fixed order (sim indexes its
// per-kind terms by it).
func NICKinds() []NICKind { return []NICKind{NICIB, NICRoCE, NICEFA, NICTCP} }

// RDMA reports whether the kind uses RDMA (and so can use GPUDirect RDMA).
func (k NICKind) RDMA() bool { return k == NICIB || k == NICRoCE || k == NICEFA }

// NICSpeed is one row of the NIC speed catalog.
type NICSpeed struct {
	// Name is the catalog key, e.g. "NDR" or "400G".
	Name string
	// Gbps is the line rate in Gb/s.
	Gbps int
	// Kinds lists the NIC kinds this speed exists for.
	Kinds []NICKind
	// PCIeGen is the host interface the usual adapter needs (x16).
	PCIeGen int
	Source  string
}

var nicSpeeds = []NICSpeed{
	{"EDR", 100, []NICKind{NICIB}, 3, "InfiniBand EDR 4x25G (net_ib/init.cc lane rates)"},
	{"HDR", 200, []NICKind{NICIB}, 4, "InfiniBand HDR 4x50G"},
	{"NDR200", 200, []NICKind{NICIB}, 5, "InfiniBand NDR200 2x100G (ConnectX-7)"},
	{"NDR", 400, []NICKind{NICIB}, 5, "InfiniBand NDR 4x100G"},
	{"XDR", 800, []NICKind{NICIB}, 6, "InfiniBand XDR 4x200G"},
	{"10G", 10, []NICKind{NICTCP, NICRoCE}, 3, "Ethernet 10GbE"},
	{"25G", 25, []NICKind{NICTCP, NICRoCE}, 3, "Ethernet 25GbE"},
	{"100G", 100, []NICKind{NICIB, NICTCP, NICRoCE, NICEFA}, 3, "100 Gb/s: IB EDR, 100GbE, AWS EFA (p4d: 4x100G)"},
	{"200G", 200, []NICKind{NICIB, NICTCP, NICRoCE, NICEFA}, 4, "200 Gb/s: IB HDR/NDR200, 200GbE, EFA"},
	{"400G", 400, []NICKind{NICIB, NICTCP, NICRoCE, NICEFA}, 5, "400 Gb/s: IB NDR, 400GbE, EFA"},
	{"800G", 800, []NICKind{NICIB, NICTCP, NICRoCE}, 6, "800 Gb/s: IB XDR, 800GbE"},
}

// NICSpeeds returns a copy of the NIC speed catalog.
func NICSpeeds() []NICSpeed { return append([]NICSpeed(nil), nicSpeeds...) }

// LookupNICSpeed finds a speed by name ("NDR", "400G", "400", "400Gb") for a
// given kind. Unknown speeds are errors listing those known for the kind.
func LookupNICSpeed(name string, kind NICKind) (NICSpeed, error) {
	if !validNICKind(kind) {
		return NICSpeed{}, fmt.Errorf("unknown NIC kind %q (known: %s)", kind, nicKindList())
	}
	k := strings.ToUpper(strings.TrimSpace(name))
	k = strings.TrimSuffix(strings.TrimSuffix(k, "BPS"), "B")
	if k != "" && strings.Trim(k, "0123456789") == "" {
		k += "G"
	}
	var known []string
	for _, s := range nicSpeeds {
		if !s.hasKind(kind) {
			continue
		}
		known = append(known, s.Name)
		if s.Name == k {
			return s, nil
		}
	}
	return NICSpeed{}, fmt.Errorf("unknown %s NIC speed %q (known: %s)", kind, name, strings.Join(known, ", "))
}

func (s NICSpeed) hasKind(k NICKind) bool {
	for _, x := range s.Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// LineGBps returns the line rate in GB/s (Gb/s ÷ 8), NCCL's NIC bandwidth
// (speed in Mb/s ÷ 8000, nccl-facts §3.3).
func (s NICSpeed) LineGBps() GBps { return GBps(float64(s.Gbps) / 8) }

func validNICKind(k NICKind) bool {
	for _, x := range NICKinds() {
		if x == k {
			return true
		}
	}
	return false
}

func nicKindList() string {
	s := make([]string, len(NICKinds()))
	for i, k := range NICKinds() {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// ParseNICKind parses a NIC kind name.
func ParseNICKind(s string) (NICKind, error) {
	k := NICKind(strings.ToLower(strings.TrimSpace(s)))
	switch k {
	case "infiniband":
		k = NICIB
	case "rocev2", "ethernet":
		k = NICRoCE
	case "socket", "sockets":
		k = NICTCP
	}
	if !validNICKind(k) {
		return "", fmt.Errorf("unknown NIC kind %q (known: %s)", s, nicKindList())
	}
	return k, nil
}

// CPUVendor is a host CPU family, which sets the inter-socket bandwidth and
// some NCCL defaults.
type CPUVendor string

// CPU vendors.
const (
	CPUIntel CPUVendor = "intel"
	CPUAMD   CPUVendor = "amd"
	CPUArm   CPUVendor = "arm"
	CPUGrace CPUVendor = "grace"
	CPUPower CPUVendor = "power"
)

// CPUModel is one row of the CPU catalog.
type CPUModel struct {
	Vendor CPUVendor
	// InterSocketGBps is the achieved bandwidth per direction between two
	// sockets, used as link capacity.
	InterSocketGBps GBps
	// NCCLInterSocketGBps is NCCL's constant for the same link (topo.h).
	NCCLInterSocketGBps GBps
	// HostMemGBps bounds traffic staged through host memory (SHM transport,
	// NET without GPUDirect RDMA) per socket.
	HostMemGBps GBps
	Source      string
}

var cpuCatalog = []CPUModel{
	{CPUIntel, 40, 10, 100, "NCCL SKL_QPI_BW 10 (topo.h). Physical values are assumptions: 40 GB/s per direction for 2-3 UPI links (Xeon SP), 100 GB/s for 8-channel DDR4/DDR5; calibrate fits smp.eff and hostmem.eff"},
	{CPUAMD, 50, 16, 120, "NCCL AMD_BW 16 (topo.h). Physical values are assumptions: 50 GB/s per direction over EPYC xGMI, 120 GB/s for 8-12 channel DDR4/DDR5"},
	{CPUArm, 30, 6, 80, "NCCL ARM_BW 6 (topo.h). Physical values are assumptions for a typical Arm server (30 GB/s inter-socket, 80 GB/s memory)"},
	{CPUGrace, 150, 40, 400, "NVIDIA Grace datasheet: LPDDR5X up to ~500 GB/s, Grace-Grace coherent link 600 GB/s bidirectional; collsim assumes 150 GB/s usable per direction and 400 GB/s of memory; NCCL value 40 assumed"},
	{CPUPower, 60, 32, 140, "NCCL P9_BW 32 (topo.h). Physical values are assumptions for the POWER9 X-bus (60 GB/s) and its memory (140 GB/s)"},
}

// LookupCPU returns the CPU catalog row for a vendor name (case-insensitive;
// "genuineintel" and "authenticamd" accepted).
func LookupCPU(vendor string) (CPUModel, error) {
	v := strings.ToLower(strings.TrimSpace(vendor))
	switch v {
	case "genuineintel", "x86", "x86_64", "xeon":
		v = "intel"
	case "authenticamd", "epyc":
		v = "amd"
	case "arm64", "aarch64":
		v = "arm"
	}
	var known []string
	for _, c := range cpuCatalog {
		known = append(known, string(c.Vendor))
		if string(c.Vendor) == v {
			return c, nil
		}
	}
	sort.Strings(known)
	return CPUModel{}, fmt.Errorf("unknown CPU vendor %q (known: %s)", vendor, strings.Join(known, ", "))
}
