package ingest

import (
	"encoding/json"
	"math"

	"github.com/collsim/collsim/model"
)

// Kind names the type of an artifact file, detected from its content.
type Kind string

// Artifact kinds.
const (
	KindNCCLTests     Kind = "nccl-tests"      // nccl-tests text output (any version, any collective)
	KindNCCLTestsJSON Kind = "nccl-tests-json" // nccl-tests -J output
	KindNCCLLog       Kind = "nccl-log"        // NCCL_DEBUG=INFO log without a results table
	KindTopoMatrix    Kind = "nvidia-smi-topo" // nvidia-smi topo -m
	KindTopoXML       Kind = "nccl-topo-xml"   // NCCL_TOPO_DUMP_FILE / NCCL_TOPO_FILE
	KindGraphXML      Kind = "nccl-graph-xml"  // NCCL_GRAPH_DUMP_FILE / NCCL_GRAPH_FILE
	KindP2PBandwidth  Kind = "p2pbw"           // CUDA sample p2pBandwidthLatencyTest
	KindNVBandwidth   Kind = "nvbandwidth"     // nvbandwidth text or -j JSON
	KindPerftest      Kind = "perftest"        // ib_write_bw / ib_read_bw / ib_send_lat ...
	KindIBStat        Kind = "ibstat"          // ibstat / ibstatus
	KindHWBench       Kind = "hwbench"         // collsim hwbench JSON
	KindSummary       Kind = "summary"         // free-text published statements (recognised, no records)
)

// Artifact is everything collsim read from one file. Only the fields that
// fit the file's kind are set; an NCCL-tests file often carries a Log too.
type Artifact struct {
	// File is the path as given.
	File string `json:"file"`
	Kind Kind   `json:"kind"`
	// Runs are nccl-tests result tables (several per file when it holds several runs).
	Runs []*Run `json:"runs,omitempty"`
	// Log is what NCCL_DEBUG=INFO lines said, when the file has any.
	Log *NCCLLog `json:"log,omitempty"`
	// Topo is a node layout read from nvidia-smi topo -m or NCCL XML.
	Topo *TopoInfo `json:"topo,omitempty"`
	// Graph is an NCCL graph file's channels (KindGraphXML).
	Graph *model.ChannelGraph `json:"graph,omitempty"`
	// Matrices are bandwidth or latency matrices (p2pBandwidthLatencyTest, nvbandwidth, hwbench).
	Matrices []*Matrix `json:"matrices,omitempty"`
	// Perftest are perftest results.
	Perftest []*PerftestResult `json:"perftest,omitempty"`
	// Ports are InfiniBand / RoCE ports from ibstat, ibstatus or hwbench.
	Ports []IBPort `json:"ports,omitempty"`
	// Machine is free-form metadata (hostname, driver, CUDA, NCCL versions, time).
	Machine map[string]string `json:"machine,omitempty"`
	// Findings are the problems and notable facts the file shows.
	Findings []Finding `json:"findings,omitempty"`
	// Skipped lists lines that looked like data but could not be used.
	Skipped []Skip `json:"skipped,omitempty"`
	// Notes say what the parser did about values it kept but distrusts or
	// refused (a row kept out of the fit, an absurd time), and facts about
	// the file as a whole (a run of a single row), one per case, in line
	// order. A refused row appears here, not in Skipped.
	Notes []Note `json:"notes,omitempty"`
	// Figures are bandwidth figures quoted in free text (KindSummary).
	Figures []Figure `json:"figures,omitempty"`
}

// Figure is one bandwidth figure quoted in a free-text file, such as
// "480GB/s" in a maintainer's statement.
type Figure struct {
	// Line is the 1-based line of the figure.
	Line int `json:"line"`
	// Value is the number as written; Unit is how it was written
	// ("GB/s", "Gb/s", "GByte/s", "Gbps").
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// GBps is Value converted to GB/s (1e9 bytes/s), 0 when the unit is not a rate.
	GBps float64 `json:"gbps"`
	// Section is the heading of the section the figure is in ("NVIDIA/nccl-tests#212 ...").
	Section string `json:"section,omitempty"`
	// Context is the text around the figure.
	Context string `json:"context"`
}

// Device is one rank's GPU as an nccl-tests header lists it.
type Device struct {
	Rank  int    `json:"rank"`
	Host  string `json:"host"`
	Dev   int    `json:"device"`
	BusID string `json:"bus_id,omitempty"`
	Name  string `json:"name"`
}

// Run is one nccl-tests results table.
type Run struct {
	// Collective is what the table measured.
	Collective model.Collective `json:"-"`
	// CollectiveName is Collective's name, for JSON.
	CollectiveName string `json:"collective"`
	// Binary is the test binary when known ("all_reduce_perf").
	Binary string `json:"binary,omitempty"`
	// Line is the 1-based line where the table (or its header) starts.
	Line int `json:"line"`
	// Ranks is the communicator size (from the device lines, or derived from busbw/algbw).
	Ranks int `json:"ranks"`
	// Hosts are the distinct hostnames of the device lines, in order of appearance.
	Hosts   []string `json:"hosts,omitempty"`
	Devices []Device `json:"devices,omitempty"`
	// DType is the element type of the rows ("float"), DTypeSize its size in bytes.
	DType     string `json:"dtype,omitempty"`
	DTypeSize int    `json:"dtype_size,omitempty"`
	// TestsVersion and NCCLVersion when the file states them.
	TestsVersion string `json:"tests_version,omitempty"`
	NCCLVersion  string `json:"nccl_version,omitempty"`
	// Params are header parameters (minBytes, maxBytes, iters, warmup iters, nGpus, nThread, ...).
	Params map[string]string `json:"params,omitempty"`
	Rows   []Row             `json:"rows"`
	// AvgBusBW is the "# Avg bus bandwidth" footer, 0 when absent.
	AvgBusBW float64 `json:"avg_busbw_gbps,omitempty"`
	// OutOfBounds is the "# Out of bounds values" count, -1 when absent.
	OutOfBounds int `json:"out_of_bounds"`
}

// Row is one size of an nccl-tests table.
type Row struct {
	Line  int    `json:"line"`
	Size  int64  `json:"size_bytes"`
	Count int64  `json:"count"`
	Type  string `json:"type,omitempty"`
	Redop string `json:"redop,omitempty"`
	Root  int    `json:"root"`
	// OOP and IP are the out-of-place and in-place results.
	OOP Result `json:"out_of_place"`
	IP  Result `json:"in_place"`
}

// RepeatedSize is a row of a results table whose size, datatype, redop
// and root an earlier row of the same table already has (rows that differ
// in datatype, redop or root are nccl-tests' own -d all, -o all and root
// loops, not repeats).
type RepeatedSize struct {
	// Size is the repeated size in bytes; First is the line of the first
	// row with it, Line the line of this one.
	Size        int64
	First, Line int
	// Rounded is true when the row follows the first directly in a table
	// stepping by bytes (-i): nccl-tests rounds each requested size down
	// to whole elements per rank, so two steps can print one size. Any
	// other repeat (a table stepping by a factor, or rows apart) is two
	// measurements of one size: runs pasted together.
	Rounded bool
}

// Result is one timing group of a row.
type Result struct {
	TimeUs float64 `json:"time_us"`
	AlgBW  float64 `json:"algbw_gbps"`
	BusBW  float64 `json:"busbw_gbps"`
	// Wrong is the #wrong count; -1 when validation was off (N/A) or the
	// file is an old version that printed an error value instead.
	Wrong int64 `json:"wrong"`
	// MaxErr is the old-format "error" column, 0 otherwise.
	MaxErr float64 `json:"max_error,omitempty"`
	// Valid is false when the group is missing (in-place absent) or unparsable.
	Valid bool `json:"valid"`
}

// NCCLLog is what NCCL_DEBUG=INFO lines of a file said.
type NCCLLog struct {
	Version string `json:"version,omitempty"`
	// Network is "IB", "Socket" or a plugin name ("AWS Libfabric", "OFI", "GIB").
	Network string `json:"network,omitempty"`
	// HCAs are the devices NET/IB (or Socket) listed, with link layer.
	HCAs []HCA `json:"hcas,omitempty"`
	// Ranks, Nodes and LocalRanks from the comm summary lines (0 when absent).
	Ranks      int `json:"ranks,omitempty"`
	Nodes      int `json:"nodes,omitempty"`
	LocalRanks int `json:"local_ranks,omitempty"`
	// Channels is the coll channel count ("Channel xx/NN" or the summary line).
	Channels     int `json:"channels,omitempty"`
	NVLSChannels int `json:"nvls_channels"`
	// NVLSAvailable is nil when the log does not say.
	NVLSAvailable *bool `json:"nvls_available,omitempty"`
	// Rings are the ring orders of rank 0's "Channel xx/NN : r r r" lines.
	Rings [][]int `json:"rings,omitempty"`
	// Trees are the raw "Trees [...]" strings.
	Trees []string `json:"trees,omitempty"`
	// Connections are the per-channel transport lines.
	Connections []Connection `json:"connections,omitempty"`
	// GDR is true/false when "Connected all rings ... GDR n" or the NET lines say, nil if unknown.
	GDR *bool `json:"gdr,omitempty"`
	// Fallbacks are "Could not find a path" lines.
	Fallbacks []string `json:"fallbacks,omitempty"`
	// Warnings are NCCL WARN lines.
	Warnings []string `json:"warnings,omitempty"`
	// Env are NCCL_* variables the log reports as set.
	Env map[string]string `json:"env,omitempty"`
	// Tuning holds the TUNING table cells when present: function -> algo/proto -> [latency us, bw GB/s].
	Tuning map[string]map[string][2]float64 `json:"tuning,omitempty"`
	// Enabled is the "Enabled NCCL Func/Proto/Algo Matrix" when present:
	// function -> protocol or algorithm name -> value as printed (0 off, 1 on, 2 on by choice).
	Enabled map[string]map[string]int `json:"enabled,omitempty"`
	// ChannelSummary is the raw "N coll channels, ... nvls channels, ..." line;
	// NVLSChannels is meaningful only when it mentions nvls channels.
	ChannelSummary string `json:"channel_summary,omitempty"`
	// Hosts are the distinct hostnames of the log line prefixes, in order of appearance.
	Hosts []string `json:"hosts,omitempty"`
	// NoIBDevice is true when the log says "NET/IB : No device found".
	NoIBDevice bool `json:"no_ib_device,omitempty"`
	// RingGDR is the "GDR n" of "Connected all rings, use ring PXN n GDR n"
	// (nil when absent); it can disagree with the per-channel NET lines.
	RingGDR *bool `json:"ring_gdr,omitempty"`
	// RingPXN is the "PXN n" of the same line (nil when absent).
	RingPXN *bool `json:"ring_pxn,omitempty"`
	// Lines gives the 1-based line of the first occurrence of notable
	// statements, keyed by a short name ("version", "network", "nvls",
	// "channel_summary", "ring_gdr", "no_ib_device"), for evidence.
	Lines map[string]int `json:"lines,omitempty"`
	// DroppedConnections counts transport lines beyond the stored cap.
	DroppedConnections int `json:"dropped_connections,omitempty"`
	// Comms are the distinct communicator sizes the comm lines ("comm 0x..
	// rank 0 nRanks 8 nNodes 2 ...") state, each with its first line, in
	// order of appearance; Ranks and Nodes are the first one's. validate
	// --log checks them against the measured run.
	Comms []Comm `json:"-"`
}

// Comm is one communicator size an NCCL log states.
type Comm struct {
	// Ranks is nRanks; Nodes is nNodes, 0 when the line does not say.
	Ranks, Nodes int
	// Line is the 1-based line of the first comm line of this size.
	Line int
}

// HCA is one network device NCCL listed.
type HCA struct {
	Index     int    `json:"index"`
	Name      string `json:"name"`
	Port      int    `json:"port,omitempty"`
	LinkLayer string `json:"link_layer,omitempty"` // IB, RoCE, or empty for sockets
}

// Connection is one "Channel xx : a[d] -> b[d] via T" line.
type Connection struct {
	Line    int `json:"line"`
	Channel int `json:"channel"`
	From    int `json:"from_rank"`
	To      int `json:"to_rank"`
	// Transport is "P2P", "SHM", "NET" or "CollNet".
	Transport string `json:"transport"`
	// Detail is the rest of the via string ("CUMEM", "IB/0/GDRDMA", "Socket/0", "direct/direct").
	Detail string `json:"detail"`
	// Net is the network name for NET lines ("IB", "Socket", "OFI", "Libfabric").
	Net string `json:"net,omitempty"`
	// GDR is true for NET lines with GDRDMA.
	GDR bool `json:"gdr,omitempty"`
	// SameHost is true when both ranks are known to be on the same host.
	SameHost bool `json:"same_host,omitempty"`
	// Dir is "send" or "receive" for NET lines that say so.
	Dir string `json:"dir,omitempty"`
	// Host is the host that printed the line.
	Host string `json:"host,omitempty"`
}

// TopoInfo is a node layout read from a topology file.
type TopoInfo struct {
	// Node is the layout as a model node; Node.GPU is empty when the file
	// does not name the GPU model.
	Node model.NodeSpec `json:"-"`
	// Matrix is the path-type matrix as printed (GPUs then NICs).
	Labels []string   `json:"labels"`
	Matrix [][]string `json:"matrix"`
	// NICNames maps NIC labels to device names (NIC0 -> mlx5_0).
	NICNames map[string]string `json:"nic_names,omitempty"`
	// NUMA is the NUMA affinity per GPU (-1 unknown).
	NUMA []int `json:"numa,omitempty"`
	// CPUAffinity is the CPU affinity per GPU as printed ("0-23,48-71"), when given.
	CPUAffinity []string `json:"cpu_affinity,omitempty"`
	// P2PLabels and P2P are an "nvidia-smi topo -p2p" status matrix (OK, NS,
	// CNS, ...) when the file has one.
	P2PLabels []string   `json:"p2p_labels,omitempty"`
	P2P       [][]string `json:"p2p,omitempty"`
	// NICSpeed is the NIC speed catalog name inferred from the file (NCCL XML
	// net speed), empty when unknown.
	NICSpeed string `json:"nic_speed,omitempty"`
	// NICKind is the NIC kind the file shows (an InfiniBand PCI class, an
	// Ethernet interface name), empty when unknown.
	NICKind model.NICKind `json:"nic_kind,omitempty"`
	// NICPCIeGen is the PCIe generation of the NICs' links when the file
	// gives it and not their speed (NCCL topology files that list NICs as
	// bare <pci> elements), 0 otherwise; NodeSpecAssuming derives a speed from it.
	NICPCIeGen int `json:"nic_pcie_gen,omitempty"`
	// Notes record inferences and conflicts (ambiguous GPU model, a NUMA
	// affinity that contradicts the path matrix, ...).
	Notes []string `json:"notes,omitempty"`
	// Source is "nvidia-smi-topo" or "nccl-topo-xml".
	Source string `json:"source,omitempty"`
}

// Matrix is a GPU x GPU (or CPU x GPU) bandwidth or latency matrix.
type Matrix struct {
	// Title is the heading as printed.
	Title string `json:"title"`
	// Metric is "bandwidth-uni", "bandwidth-bidi" or "latency".
	Metric string `json:"metric"`
	// Unit is "GB/s" or "us".
	Unit string `json:"unit"`
	// P2P is nil when the matrix does not say whether P2P was enabled.
	P2P *bool `json:"p2p,omitempty"`
	// Path is "d2d", "h2d", "d2h", ... for nvbandwidth-style tests.
	Path string   `json:"path,omitempty"`
	Rows []string `json:"rows"`
	Cols []string `json:"cols"`
	// Values[i][j] is NaN for N/A cells (serialised as null).
	Values [][]float64 `json:"-"`
}

// PerftestResult is one perftest run's summary.
type PerftestResult struct {
	Test   string `json:"test"` // "ib_write_bw", ...
	Device string `json:"device,omitempty"`
	// LinkType is "IB" or "Ethernet".
	LinkType  string `json:"link_type,omitempty"`
	MTU       int    `json:"mtu,omitempty"`
	GPUDirect bool   `json:"gpudirect,omitempty"`
	// Bidirectional is true for a -b run: its bandwidths are the two
	// directions' sum.
	Bidirectional bool          `json:"bidirectional,omitempty"`
	Rows          []PerftestRow `json:"rows"`
}

// PerftestRow is one message size of a perftest run.
type PerftestRow struct {
	Bytes   int64   `json:"bytes"`
	Iters   int64   `json:"iterations"`
	PeakGbs float64 `json:"bw_peak_gbps,omitempty"` // Gb/s as perftest prints (or MB/s converted)
	AvgGbs  float64 `json:"bw_avg_gbps,omitempty"`
	// Latency columns in microseconds (latency tests).
	LatMinUs, LatTypUs, LatAvgUs float64 `json:"-"`
}

// IBPort is one HCA port.
type IBPort struct {
	Device    string `json:"device"`
	Port      int    `json:"port"`
	State     string `json:"state"`      // Active, Down, ...
	Physical  string `json:"phys_state"` // LinkUp, Disabled, ...
	RateGbps  int    `json:"rate_gbps"`
	LinkLayer string `json:"link_layer"` // InfiniBand or Ethernet
	MTU       int    `json:"mtu,omitempty"`
}

// Finding is a problem or notable fact a file shows.
type Finding struct {
	// Code is stable and machine-readable, e.g. "shm-instead-of-p2p".
	Code string `json:"code"`
	// Severity is "error", "warning" or "info".
	Severity string `json:"severity"`
	// Message says what it means in a sentence.
	Message string `json:"message"`
	// Evidence quotes what triggered it (a log line, a figure).
	Evidence string `json:"evidence,omitempty"`
	// Line is the 1-based line of the evidence, 0 when not a single line.
	Line int `json:"line,omitempty"`
}

// Finding severities.
const (
	SevError   = "error"
	SevWarning = "warning"
	SevInfo    = "info"
)

// Finding codes shared by inspect and validate. docs/inspect.md says what
// triggers each.
const (
	FindSHMInsteadOfP2P = "shm-instead-of-p2p"
	FindSocketNotIB     = "socket-instead-of-ib"
	FindNoGDR           = "net-without-gdr"
	FindNoNVLS          = "no-nvls"
	FindTopoFallback    = "topology-search-fallback"
	FindWrongResults    = "validation-errors"
	FindBandwidthCliff  = "bandwidth-cliff"
	FindNICPlateau      = "nic-plateau"
	FindNetIntraNode    = "net-within-node"
	FindFewerNICs       = "fewer-nics-than-installed"
	FindNCCLWarning     = "nccl-warning"
	FindP2PUnavailable  = "p2p-unavailable"
	FindGDRLevelRaised  = "gdr-level-raised"
	FindLowNetBW        = "net-bandwidth-low"
	FindNICFarFromGPU   = "nic-far-from-gpu"
	FindGDRReadOff      = "net-gdr-read-off"
)

// Note is one thing a parser noticed and did: "line 42: time 0 us is not a
// measurement; the row is kept out of the fit".
type Note struct {
	// Line is the 1-based line the note is about, 0 for the whole file.
	Line int `json:"line,omitempty"`
	// Message says what was seen and what was done, in a sentence.
	Message string `json:"message"`
}

// String is "line N: message", or the message alone for line 0.
func (n Note) String() string {
	if n.Line > 0 {
		return "line " + itoa(n.Line) + ": " + n.Message
	}
	return n.Message
}

// Skip is a line that could not be used, with why.
type Skip struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
	Text   string `json:"text,omitempty"`
}

// matrixJSON is Matrix's JSON form: Values with null for NaN cells.
type matrixJSON struct {
	Title  string       `json:"title"`
	Metric string       `json:"metric"`
	Unit   string       `json:"unit"`
	P2P    *bool        `json:"p2p,omitempty"`
	Path   string       `json:"path,omitempty"`
	Rows   []string     `json:"rows"`
	Cols   []string     `json:"cols"`
	Values [][]*float64 `json:"values"`
}

// MarshalJSON writes the matrix with its values; NaN (N/A) cells become null.
func (m *Matrix) MarshalJSON() ([]byte, error) {
	j := matrixJSON{Title: m.Title, Metric: m.Metric, Unit: m.Unit, P2P: m.P2P, Path: m.Path, Rows: m.Rows, Cols: m.Cols}
	j.Values = make([][]*float64, len(m.Values))
	for i, row := range m.Values {
		j.Values[i] = make([]*float64, len(row))
		for k, v := range row {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				v := v
				j.Values[i][k] = &v
			}
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes (null cells become NaN).
func (m *Matrix) UnmarshalJSON(b []byte) error {
	var j matrixJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = Matrix{Title: j.Title, Metric: j.Metric, Unit: j.Unit, P2P: j.P2P, Path: j.Path, Rows: j.Rows, Cols: j.Cols}
	m.Values = make([][]float64, len(j.Values))
	for i, row := range j.Values {
		m.Values[i] = make([]float64, len(row))
		for k, v := range row {
			if v == nil {
				m.Values[i][k] = math.NaN()
			} else {
				m.Values[i][k] = *v
			}
		}
	}
	return nil
}

// perftestRowJSON is PerftestRow's JSON form, latency columns included.
type perftestRowJSON struct {
	Bytes    int64   `json:"bytes"`
	Iters    int64   `json:"iterations"`
	PeakGbs  float64 `json:"bw_peak_gbps,omitempty"`
	AvgGbs   float64 `json:"bw_avg_gbps,omitempty"`
	LatMinUs float64 `json:"lat_min_us,omitempty"`
	LatTypUs float64 `json:"lat_typical_us,omitempty"`
	LatAvgUs float64 `json:"lat_avg_us,omitempty"`
}

// MarshalJSON writes the row with its latency columns (omitted when zero).
func (r PerftestRow) MarshalJSON() ([]byte, error) {
	return json.Marshal(perftestRowJSON{r.Bytes, r.Iters, r.PeakGbs, r.AvgGbs, r.LatMinUs, r.LatTypUs, r.LatAvgUs})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *PerftestRow) UnmarshalJSON(b []byte) error {
	var j perftestRowJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = PerftestRow{Bytes: j.Bytes, Iters: j.Iters, PeakGbs: j.PeakGbs, AvgGbs: j.AvgGbs, LatMinUs: j.LatMinUs, LatTypUs: j.LatTypUs, LatAvgUs: j.LatAvgUs}
	return nil
}
