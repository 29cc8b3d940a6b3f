package model

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// PathType is NCCL's classification of the path between two elements, in
// increasing order of distance (nccl-facts §3.2; compare by name across NCCL
// versions, the numeric values here are collsim's own).
type PathType uint8

// Path types.
const (
	PathLOC PathType = iota
	PathNVL
	PathNVB
	PathC2C
	PathPIX
	PathPXB
	PathP2C
	PathPXN
	PathPHB
	PathSYS
	PathNET
	PathDIS
)

var pathNames = [...]string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET", "DIS"}

// String returns the NCCL name of the path type.
func (p PathType) String() string {
	if int(p) < len(pathNames) {
		return pathNames[p]
	}
	return fmt.Sprintf("path(%d)", p)
}

// ParsePathLevel reads an NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL value: a name
// (LOC, NVL, NVB, PIX, PXB, PHB, SYS, and the newer C2C, P2C, PXN; NODE is
// accepted as PHB) or a legacy integer (0 LOC, 1 PIX, 2 PXB, 3 PHB, 4-5 SYS,
// nccl-facts §3.4).
func ParsePathLevel(s string) (PathType, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if n, err := strconv.Atoi(u); err == nil {
		switch {
		case n <= 0:
			return PathLOC, nil
		case n == 1:
			return PathPIX, nil
		case n == 2:
			return PathPXB, nil
		case n == 3:
			return PathPHB, nil
		default:
			return PathSYS, nil
		}
	}
	if u == "NODE" {
		return PathPHB, nil
	}
	for i, n := range pathNames {
		if n == u && PathType(i) != PathNET && PathType(i) != PathDIS {
			return PathType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown path level %q (known: LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS or 0-5)", s)
}

// Algo is an NCCL collective algorithm.
type Algo uint8

// Algorithms, in NCCL's index order (nccl-facts §2.1), plus Direct for
// AlltoAll, which NCCL runs as grouped send/recv.
const (
	AlgoTree Algo = iota
	AlgoRing
	AlgoCollNetDirect
	AlgoCollNetChain
	AlgoNVLS
	AlgoNVLSTree
	AlgoPAT
	AlgoDirect
	NumAlgos
)

var algoNames = [...]string{"tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat", "direct"}

// String returns the lower-case algorithm name used in collsim output.
func (a Algo) String() string {
	if int(a) < len(algoNames) {
		return algoNames[a]
	}
	return fmt.Sprintf("algo(%d)", a)
}

// ParseAlgo reads an algorithm name, case-insensitive.
func ParseAlgo(s string) (Algo, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for i, n := range algoNames {
		if n == k {
			return Algo(i), nil
		}
	}
	return 0, fmt.Errorf("unknown algorithm %q (known: %s)", s, strings.Join(algoNames[:], ", "))
}

// Proto is an NCCL protocol.
type Proto uint8

// Protocols in NCCL's index order.
const (
	ProtoLL Proto = iota
	ProtoLL128
	ProtoSimple
	NumProtos
)

var protoNames = [...]string{"ll", "ll128", "simple"}

// String returns the lower-case protocol name.
func (p Proto) String() string {
	if int(p) < len(protoNames) {
		return protoNames[p]
	}
	return fmt.Sprintf("proto(%d)", p)
}

// ParseProto reads a protocol name, case-insensitive.
func ParseProto(s string) (Proto, error) {
	k := strings.ToLower(strings.TrimSpace(s))
	for i, n := range protoNames {
		if n == k {
			return Proto(i), nil
		}
	}
	return 0, fmt.Errorf("unknown protocol %q (known: LL, LL128, Simple)", s)
}

// Knobs are the NCCL environment variables collsim honours, parsed. The zero
// value is not meaningful; use ParseKnobs (with an empty map for defaults).
type Knobs struct {
	// Raw holds the variables as given, keyed by full name (NCCL_P2P_LEVEL).
	Raw map[string]string
	// P2PDisable forces P2P off (NCCL_P2P_DISABLE=1).
	P2PDisable bool
	// P2PLevel is NCCL_P2P_LEVEL; Set reports whether it was given.
	P2PLevel    PathType
	P2PLevelSet bool
	// NetGDRLevel is NCCL_NET_GDR_LEVEL; NetGDRLevelSet reports whether it was given.
	NetGDRLevel    PathType
	NetGDRLevelSet bool
	// NetGDRRead is NCCL_NET_GDR_READ (-1 auto).
	NetGDRRead int
	// IBDisable forces NET/Socket (NCCL_IB_DISABLE=1).
	IBDisable bool
	// IBDisableInert names the network stack on which NCCL_IB_DISABLE=1
	// was given and changes nothing (a plugin that does not read it; the
	// cluster builder clears IBDisable then), "" otherwise.
	IBDisableInert string
	// SHMDisable disables the SHM transport (NCCL_SHM_DISABLE=1).
	SHMDisable bool
	// Algos and Protos are the enabled sets after NCCL_ALGO / NCCL_PROTO.
	Algos  [NumAlgos]bool
	Protos [NumProtos]bool
	// AlgoSet / ProtoSet report whether the user restricted them.
	AlgoSet, ProtoSet bool
	// MinChannels / MaxChannels are NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (0 = unset).
	MinChannels, MaxChannels int
	// MinCTAs / MaxCTAs are NCCL_MIN_CTAS / NCCL_MAX_CTAS (0 = unset), the
	// communicator's CTA bounds from NCCL 2.17: they bound the coll channels
	// as MIN/MAX_NCHANNELS do and the NVLS channels too (Resolution.CTABounds).
	MinCTAs, MaxCTAs int
	// CrossNIC is NCCL_CROSS_NIC (0, 1, 2).
	CrossNIC int
	// PXNDisable is NCCL_PXN_DISABLE.
	PXNDisable bool
	// NVLSEnable is NCCL_NVLS_ENABLE (0 off, 1 on, 2 auto).
	NVLSEnable int
	// NVBDisable is NCCL_NVB_DISABLE.
	NVBDisable bool
	// NetDisableIntra is NCCL_NET_DISABLE_INTRA.
	NetDisableIntra bool
	// IBHCA is the parsed NCCL_IB_HCA filter (nil = all devices).
	IBHCA *HCAFilter
	// NVLSChannels is NCCL_NVLS_NCHANNELS (0 = default).
	NVLSChannels int
	// BuffSize is NCCL_BUFFSIZE in bytes (0 = default 4 MiB).
	BuffSize Bytes
	// NVLSChunkSize is NCCL_NVLS_CHUNKSIZE in bytes (0 = default 128 KiB).
	NVLSChunkSize Bytes
	// IBGIDIndex is NCCL_IB_GID_INDEX (-1 auto).
	IBGIDIndex int
	// IBQPsPerConn is NCCL_IB_QPS_PER_CONNECTION: RC QPs per connection
	// (default 1 since 2.10.3, NCCL src/transport/net_ib/connect.cc). Each QP is
	// its own flow for ECMP hashing.
	IBQPsPerConn int
	// IBSplitDataOnQPs is NCCL_IB_SPLIT_DATA_ON_QPS: -1 unset (1 in
	// 2.18-2.19, 0 from 2.20: SplitDataOnQPs resolves it by version).
	IBSplitDataOnQPs int
	// IBAdaptiveRouting is NCCL_IB_ADAPTIVE_ROUTING: -2 unset (auto: on for
	// the InfiniBand link layer, off for RoCE; net_ib/init.cc), 0 or 1.
	IBAdaptiveRouting int
	// IBMergeNICs is NCCL_IB_MERGE_NICS: 1 (the default since 2.20) merges
	// the ports of one adapter into one NCCL device (net_ib.cc v2.20.3-1:
	// devices with the same PCI path, function stripped, and the same
	// system image GUID); 0 keeps every port a device of its own.
	IBMergeNICs int
	// CollNetEnable is NCCL_COLLNET_ENABLE (0 or 1; unset is off).
	CollNetEnable bool
	// NChannelsPerNetPeer is NCCL_NCHANNELS_PER_NET_PEER (0 = NCCL's
	// version-dependent default, see Tuner.P2PChannels).
	NChannelsPerNetPeer int
}

// SplitDataOnQPs resolves NCCL_IB_SPLIT_DATA_ON_QPS for NCCL version v: the
// value given, else 1 in 2.18-2.19 and 0 from 2.20 (NCCL
// v2.19.3 net_ib.cc:1005 = 1, v2.20.3 net_ib.cc:1301 = 0).
func (k Knobs) SplitDataOnQPs(v Version) bool {
	if k.IBSplitDataOnQPs >= 0 {
		return k.IBSplitDataOnQPs == 1
	}
	return v.AtLeast(18) && !v.AtLeast(20)
}

// AdaptiveRoutingOn resolves NCCL_IB_ADAPTIVE_ROUTING for a link layer:
// the value given, else on for InfiniBand and off otherwise (v2.30.7
// net_ib/init.cc: the -2 default enables it when the port's link layer is
// IB).
func (k Knobs) AdaptiveRoutingOn(link NICKind) bool {
	if k.IBAdaptiveRouting >= 0 {
		return k.IBAdaptiveRouting == 1
	}
	return link == NICIB
}

type knobDef struct {
	name string
	doc  string
	set  func(k *Knobs, v string) error
}

func boolKnob(dst func(k *Knobs) *bool) func(k *Knobs, v string) error {
	return func(k *Knobs, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			return fmt.Errorf("want 0 or 1, got %q", v)
		}
		*dst(k) = n != 0
		return nil
	}
}

func intKnob(lo, hi int, dst func(k *Knobs) *int) func(k *Knobs, v string) error {
	return func(k *Knobs, v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("want an integer in %d..%d, got %q", lo, hi, v)
		}
		*dst(k) = n
		return nil
	}
}

var knobDefs = []knobDef{
	{"NCCL_P2P_DISABLE", "1 disables P2P between GPUs (SHM or NET instead)", boolKnob(func(k *Knobs) *bool { return &k.P2PDisable })},
	{"NCCL_P2P_LEVEL", "farthest path type for P2P: LOC, NVL, NVB, PIX, PXB, PHB, SYS or 0-5", func(k *Knobs, v string) error {
		p, err := ParsePathLevel(v)
		k.P2PLevel, k.P2PLevelSet = p, err == nil
		return err
	}},
	{"NCCL_NET_GDR_LEVEL", "farthest GPU-NIC path type for GPUDirect RDMA", func(k *Knobs, v string) error {
		p, err := ParsePathLevel(v)
		k.NetGDRLevel, k.NetGDRLevelSet = p, err == nil
		return err
	}},
	{"NCCL_NET_GDR_READ", "1/0 GPUDirect RDMA reads on the send side", intKnob(0, 1, func(k *Knobs) *int { return &k.NetGDRRead })},
	{"NCCL_IB_DISABLE", "1 disables NET/IB, NCCL falls back to NET/Socket", boolKnob(func(k *Knobs) *bool { return &k.IBDisable })},
	{"NCCL_SHM_DISABLE", "1 disables the SHM transport", boolKnob(func(k *Knobs) *bool { return &k.SHMDisable })},
	{"NCCL_ALGO", "algorithm list (Ring, Tree, NVLS, NVLSTree, PAT, CollNetDirect, CollNetChain; ^ excludes)", func(k *Knobs, v string) error {
		m, err := parseEnableList(v, algoNames[:NumAlgos-1])
		if err != nil {
			return err
		}
		copy(k.Algos[:], m)
		k.Algos[AlgoDirect] = true
		k.AlgoSet = true
		return nil
	}},
	{"NCCL_PROTO", "protocol list (LL, LL128, Simple; ^ excludes)", func(k *Knobs, v string) error {
		m, err := parseEnableList(v, protoNames[:])
		if err != nil {
			return err
		}
		copy(k.Protos[:], m)
		k.ProtoSet = true
		return nil
	}},
	{"NCCL_NCHANNELS_PER_NET_PEER", "p2p channels per network peer (send/recv, alltoall)", intKnob(1, 64, func(k *Knobs) *int { return &k.NChannelsPerNetPeer })},
	{"NCCL_MIN_NCHANNELS", "minimum channels", intKnob(1, 64, func(k *Knobs) *int { return &k.MinChannels })},
	{"NCCL_MAX_NCHANNELS", "maximum channels", intKnob(1, 64, func(k *Knobs) *int { return &k.MaxChannels })},
	{"NCCL_MIN_CTAS", "minimum CTAs per collective (2.17+, ignored before): a floor on the coll channels, as NCCL_MIN_NCHANNELS, and on the NVLS channels", intKnob(1, 64, func(k *Knobs) *int { return &k.MinCTAs })},
	{"NCCL_MAX_CTAS", "maximum CTAs per collective (2.17+, ignored before): a cap on the coll and NVLS channels", intKnob(1, 64, func(k *Knobs) *int { return &k.MaxCTAs })},
	{"NCCL_CROSS_NIC", "rings across nodes: 0 enter and leave a node by one NIC (the last GPU sends through the NIC's GPU, PXN), 1 leave by the last GPU's closest NIC, 2 (default) one NIC first, then at the same speed NIC-crossing rings (in mirrored pairs from 2.20; from 2.18 to 2.20 only when 15% faster)", intKnob(0, 2, func(k *Knobs) *int { return &k.CrossNIC })},
	{"NCCL_PXN_DISABLE", "1 disables PXN (sending through an NVLink peer's NIC)", boolKnob(func(k *Knobs) *bool { return &k.PXNDisable })},
	{"NCCL_NVLS_ENABLE", "0 off, 1 on, 2 auto (NVLink SHARP)", intKnob(0, 2, func(k *Knobs) *int { return &k.NVLSEnable })},
	{"NCCL_NVB_DISABLE", "1 forbids NVLink paths through an intermediate GPU", boolKnob(func(k *Knobs) *bool { return &k.NVBDisable })},
	{"NCCL_NET_DISABLE_INTRA", "1 forbids the network between GPUs of one node", boolKnob(func(k *Knobs) *bool { return &k.NetDisableIntra })},
	{"NCCL_IB_HCA", "HCA filter: prefixes, ^ excludes, = exact, :port", func(k *Knobs, v string) error {
		f, err := ParseHCAFilter(v)
		k.IBHCA = f
		return err
	}},
	{"NCCL_NVLS_NCHANNELS", "NVLS channel count", intKnob(1, 64, func(k *Knobs) *int { return &k.NVLSChannels })},
	{"NCCL_NVLS_CHUNKSIZE", "NVLS chunk per head and channel in bytes (default 131072; smaller calls shrink it to 64K/32K/16K)", func(k *Knobs, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 4096 || n > 1<<24 || n%16 != 0 {
			return fmt.Errorf("want bytes in 4096..16777216, a multiple of 16, got %q", v)
		}
		k.NVLSChunkSize = Bytes(n)
		return nil
	}},
	{"NCCL_BUFFSIZE", "Simple protocol buffer per connection in bytes (default 4194304)", func(k *Knobs, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 64*1024 || n > 1<<30 {
			return fmt.Errorf("want bytes in 65536..1073741824, got %q", v)
		}
		k.BuffSize = Bytes(n)
		return nil
	}},
	{"NCCL_IB_GID_INDEX", "RoCE GID index (-1 auto); recorded, not modelled: the fabric's link layer and roce settings decide the transport", intKnob(-1, 255, func(k *Knobs) *int { return &k.IBGIDIndex })},
	{"NCCL_IB_QPS_PER_CONNECTION", "RC QPs per connection (default 1); each QP is one ECMP flow", intKnob(1, 128, func(k *Knobs) *int { return &k.IBQPsPerConn })},
	{"NCCL_IB_SPLIT_DATA_ON_QPS", "1 splits each message over the QPs, 0 round-robins whole messages (default 0 from 2.20, 1 in 2.18-2.19); the flow model gives each QP 1/Q of the bytes either way", intKnob(0, 1, func(k *Knobs) *int { return &k.IBSplitDataOnQPs })},
	{"NCCL_IB_MERGE_NICS", "1 (default from 2.20) makes the ports of one adapter one NCCL device whose connections open QPs on every port; 0 keeps each port a device", intKnob(0, 1, func(k *Knobs) *int { return &k.IBMergeNICs })},
	{"NCCL_IB_ADAPTIVE_ROUTING", "1/0 adaptive-routing-safe transfers (default: on for InfiniBand, off for RoCE); 0 on an adaptive IB fabric routes statically", intKnob(0, 1, func(k *Knobs) *int { return &k.IBAdaptiveRouting })},
	{"NCCL_COLLNET_ENABLE", "1 enables CollNet (SHARP in-network reduction) where the fabric has sharp: true; any value but 1 leaves it off", func(k *Knobs, v string) error {
		// NCCL accepts only 0 or 1 and forces anything else to 0 with an
		// INFO line (NCCL init.cc); collsim does the same.
		k.CollNetEnable = strings.TrimSpace(v) == "1"
		return nil
	}},
}

// KnownKnobs returns the NCCL variables collsim accepts with a short description of what it does with each, sorted by name.
func KnownKnobs() [][2]string {
	out := make([][2]string, len(knobDefs))
	for i, d := range knobDefs {
		out[i] = [2]string{d.name, d.doc}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// ParseKnobs validates and parses NCCL variables. Names may omit the NCCL_
// prefix. An unknown name or a bad value is an error naming the variable.
func ParseKnobs(env map[string]string) (Knobs, error) {
	k := Knobs{Raw: map[string]string{}, NetGDRRead: -1, CrossNIC: 2, NVLSEnable: 2, IBGIDIndex: -1, IBQPsPerConn: 1, IBSplitDataOnQPs: -1, IBAdaptiveRouting: -2, IBMergeNICs: 1}
	for i := range k.Algos {
		k.Algos[i] = true
	}
	for i := range k.Protos {
		k.Protos[i] = true
	}
	names := make([]string, 0, len(env))
	for n := range env {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		full := strings.ToUpper(strings.TrimSpace(n))
		if !strings.HasPrefix(full, "NCCL_") {
			full = "NCCL_" + full
		}
		var def *knobDef
		for i := range knobDefs {
			if knobDefs[i].name == full {
				def = &knobDefs[i]
			}
		}
		if def == nil {
			known := make([]string, len(knobDefs))
			for i, d := range knobDefs {
				known[i] = d.name
			}
			sort.Strings(known)
			return Knobs{}, fmt.Errorf("unknown NCCL variable %s (known: %s)", full, strings.Join(known, ", "))
		}
		if err := def.set(&k, env[n]); err != nil {
			return Knobs{}, fmt.Errorf("%s=%s: %w", full, env[n], err)
		}
		k.Raw[full] = env[n]
	}
	// CollNet runs only when NCCL_COLLNET_ENABLE=1 initialised it (NCCL
	// init.cc): off by default, and NCCL_ALGO=CollNetDirect alone
	// does not turn it on. The fabric's sharp: true is checked by the tuner.
	k.Algos[AlgoCollNetDirect] = k.Algos[AlgoCollNetDirect] && k.CollNetEnable
	k.Algos[AlgoCollNetChain] = k.Algos[AlgoCollNetChain] && k.CollNetEnable
	if k.MinChannels > 0 && k.MaxChannels > 0 && k.MinChannels > k.MaxChannels {
		return Knobs{}, fmt.Errorf("NCCL_MIN_NCHANNELS=%d is above NCCL_MAX_NCHANNELS=%d", k.MinChannels, k.MaxChannels)
	}
	return k, nil
}

// parseEnableList reads NCCL's list syntax: comma-separated names,
// case-insensitive, a leading ^ excludes the listed ones instead. The
// per-function prefix form ("allreduce:tree,nvls;ring") is reduced to the
// AllReduce entry if present, else the default entry.
func parseEnableList(v string, names []string) ([]bool, error) {
	s := strings.TrimSpace(v)
	if strings.Contains(s, ";") || strings.Contains(s, ":") {
		def, ar := "", ""
		for _, part := range strings.Split(s, ";") {
			part = strings.TrimSpace(part)
			if i := strings.Index(part, ":"); i >= 0 {
				if strings.EqualFold(strings.TrimSpace(part[:i]), "allreduce") {
					ar = part[i+1:]
				}
			} else if part != "" {
				def = part
			}
		}
		s = def
		if ar != "" {
			s = ar
		}
	}
	out := make([]bool, len(names))
	exclude := strings.HasPrefix(s, "^")
	if exclude {
		s = s[1:]
		for i := range out {
			out[i] = true
		}
	}
	any := false
	for _, item := range strings.Split(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		if item == "" {
			continue
		}
		found := false
		for i, n := range names {
			if n == item {
				out[i] = !exclude
				found, any = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown name %q (known: %s)", item, strings.Join(names, ", "))
		}
	}
	if !any {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// HCAFilter is a parsed NCCL_IB_HCA value.
type HCAFilter struct {
	Exclude bool
	Exact   bool
	Entries []HCAEntry
}

// HCAEntry is one device (prefix) and optional port.
type HCAEntry struct {
	Device string
	Port   int // 0 = any
}

// ParseHCAFilter reads NCCL_IB_HCA syntax: "mlx5_0:1,mlx5_1", "^mlx5_2", "=mlx5_0".
func ParseHCAFilter(v string) (*HCAFilter, error) {
	s := strings.TrimSpace(v)
	f := &HCAFilter{}
	if strings.HasPrefix(s, "^") {
		f.Exclude, s = true, s[1:]
	}
	if strings.HasPrefix(s, "=") {
		f.Exact, s = true, s[1:]
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		e := HCAEntry{Device: item}
		if i := strings.Index(item, ":"); i >= 0 {
			p, err := strconv.Atoi(item[i+1:])
			if err != nil || p < 1 {
				return nil, fmt.Errorf("bad port in %q", item)
			}
			e.Device, e.Port = item[:i], p
		}
		f.Entries = append(f.Entries, e)
	}
	if len(f.Entries) == 0 {
		return nil, fmt.Errorf("empty HCA list %q", v)
	}
	return f, nil
}

// Allows reports whether a device (port 1) passes the filter; nil allows all.
func (f *HCAFilter) Allows(device string) bool {
	if f == nil {
		return true
	}
	match := false
	for _, e := range f.Entries {
		if e.Port > 1 {
			continue
		}
		if (f.Exact && device == e.Device) || (!f.Exact && strings.HasPrefix(device, e.Device)) {
			match = true
		}
	}
	return match != f.Exclude
}
