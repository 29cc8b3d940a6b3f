package accuracy

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	yaml "go.yaml.in/yaml/v3"
)

// Case is one entry of a validation corpus file in the shared/data
// cases.yaml format: a published nccl-tests run on known hardware.
type Case struct {
	// ID names the case uniquely.
	ID string `yaml:"id"`
	// File is the raw measurement file, relative to the cases file.
	File string `yaml:"file"`
	// TableIndex picks the results table when the file holds several.
	TableIndex int `yaml:"table_index_in_file"`
	// Source cites where the numbers were published.
	Source string `yaml:"source"`
	// GPU, GPUsPerNode, Nodes, TotalRanks, Intra and NIC describe the
	// hardware as the source states it.
	GPU         string  `yaml:"gpu"`
	GPUsPerNode int     `yaml:"gpus_per_node"`
	Nodes       int     `yaml:"nodes"`
	TotalRanks  int     `yaml:"total_ranks"`
	Intra       string  `yaml:"intra"`
	NIC         CaseNIC `yaml:"nic"`
	// Collective is the nccl-tests stem ("all_reduce").
	Collective string `yaml:"collective"`
	// DType is the nccl-tests data type ("float", "double").
	DType string `yaml:"dtype"`
	// NCCLVersion is free text ("2.29.2 (nccl-library=22902), ..."); empty when unknown.
	NCCLVersion string `yaml:"nccl_version"`
	// Env is free text about the run's environment variables.
	Env string `yaml:"env"`
	// Quality is ok, ok-with-caveats, suspect or degraded.
	Quality string `yaml:"quality"`
	// Caveat says what to keep in mind about the numbers.
	Caveat string `yaml:"caveat"`
	// Points are [size bytes, out-of-place busbw GB/s] as printed.
	Points [][]float64 `yaml:"points"`

	// derived marks a case PointToPointCases added.
	derived bool
}

// Group returns the case's mechanism group: "p2p" for AlltoAll and
// SendRecv (NCCL's grouped point-to-point operations) or "collective",
// and what carries the data: the network kind between nodes ("net ib",
// "net efa", "net roce", "net socket"), or one node's intra-node fabric
// ("nvswitch", "nvlink", "pcie").
func (c *Case) Group() string {
	kind := "collective"
	if coll, err := model.ParseCollective(c.Collective); err == nil && (coll == model.AlltoAll || coll == model.SendRecv) {
		kind = "p2p"
	}
	var over string
	if c.Nodes > 1 {
		t := strings.ToLower(c.NIC.Type)
		switch {
		case strings.Contains(t, "efa"):
			over = "net efa"
		case strings.Contains(t, "roce"):
			over = "net roce"
		case strings.Contains(t, "tcp"), strings.Contains(t, "socket"):
			over = "net socket"
		default:
			over = "net ib"
		}
	} else {
		t := strings.ToLower(c.Intra)
		switch {
		case strings.Contains(t, "nvswitch"):
			over = "nvswitch"
		case strings.Contains(t, "nvlink"):
			over = "nvlink"
		case strings.Contains(t, "pcie"):
			over = "pcie"
		default:
			over = "intra"
		}
	}
	return kind + ", " + over
}

// PointToPointCases returns a case for every AlltoAll and SendRecv table of
// the cases' raw files that no case lists, so that the point-to-point
// collectives are scored wherever the corpus measured them. Each copies
// the hardware of the file's first case; its ID replaces that case's
// collective suffix (or appends one), with the table index when a file
// holds several such tables.
func PointToPointCases(cases []Case, dir string) ([]Case, error) {
	listed := map[string]map[int]bool{}
	var files []string
	first := map[string]*Case{}
	ids := map[string]bool{}
	for i := range cases {
		c := &cases[i]
		ids[c.ID] = true
		if listed[c.File] == nil {
			listed[c.File] = map[int]bool{}
			files = append(files, c.File)
			first[c.File] = c
		}
		listed[c.File][c.TableIndex] = true
	}
	var out []Case
	for _, f := range files {
		a, err := ingest.ParseFile(casePath(dir, f))
		if err != nil {
			return nil, fmt.Errorf("calibrate: case %s: %w", first[f].ID, err)
		}
		var want []int
		for i, r := range a.Runs {
			if (r.Collective == model.AlltoAll || r.Collective == model.SendRecv) && !listed[f][i] {
				want = append(want, i)
			}
		}
		base := first[f]
		stem := strings.TrimSuffix(base.ID, "_"+base.Collective)
		for _, i := range want {
			r := a.Runs[i]
			c := *base
			c.TableIndex, c.Collective, c.TotalRanks, c.Points, c.derived = i, r.Collective.TestName(), r.Ranks, nil, true
			c.ID = stem + "_" + c.Collective
			if ids[c.ID] {
				c.ID = fmt.Sprintf("%s_t%d", c.ID, i)
			}
			if r.Ranks%max(c.Nodes, 1) != 0 {
				return nil, fmt.Errorf("calibrate: %s: table %d (%s) has %d ranks, which %d nodes cannot hold evenly", f, i, r.CollectiveName, r.Ranks, c.Nodes)
			}
			c.Caveat = fmt.Sprintf("table %d of the file (%s), not listed in the cases file; hardware as case %s", i, r.CollectiveName, base.ID)
			ids[c.ID] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// CaseNIC is the network adapters of a case.
type CaseNIC struct {
	// Type, Count and Gbps are as stated ("ib-hdr", 4, 200); GDR and Note
	// are free text.
	Type  string  `yaml:"type"`
	Count int     `yaml:"count"`
	Gbps  float64 `yaml:"gbps"`
	GDR   string  `yaml:"gdr"`
	Note  string  `yaml:"note"`
}

// Degraded reports whether the source says the setup was misconfigured.
func (c *Case) Degraded() bool { return c.Quality == "degraded" }

// Version returns the NCCL release of the case as "2.x.y", empty when unknown.
func (c *Case) Version() string {
	return versionRE.FindString(strings.TrimSpace(c.NCCLVersion))
}

var versionRE = regexp.MustCompile(`^2\.\d+(\.\d+)?`)

// maxCasesBytes bounds a cases file.
const maxCasesBytes = 16 << 20

// LoadCases reads a cases file (shared/data/cases.yaml format). Errors name
// the file, and the case for semantic problems.
func LoadCases(path string) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxCasesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", path, err)
	}
	if len(data) > maxCasesBytes {
		return nil, fmt.Errorf("calibrate: %s: more than %d bytes", path, maxCasesBytes)
	}
	return ParseCases(path, data)
}

// ParseCases parses a cases document; name is used in errors.
func ParseCases(name string, data []byte) ([]Case, error) {
	var doc struct {
		Cases []Case `yaml:"cases"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %v", name, err)
	}
	if len(doc.Cases) == 0 {
		return nil, fmt.Errorf("calibrate: %s: no cases (want a top-level \"cases:\" list)", name)
	}
	seen := map[string]bool{}
	for i := range doc.Cases {
		c := &doc.Cases[i]
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("calibrate: %s: case %d has no id", name, i)
		case seen[c.ID]:
			return nil, fmt.Errorf("calibrate: %s: duplicate case id %q", name, c.ID)
		case c.File == "":
			return nil, fmt.Errorf("calibrate: %s: case %s has no file", name, c.ID)
		case c.Nodes < 1 || c.TotalRanks < 1:
			return nil, fmt.Errorf("calibrate: %s: case %s: nodes and total_ranks must be at least 1", name, c.ID)
		}
		seen[c.ID] = true
		if _, err := model.ParseCollective(c.Collective); err != nil {
			return nil, fmt.Errorf("calibrate: %s: case %s: %w", name, c.ID, err)
		}
		for j, p := range c.Points {
			if len(p) != 2 || p[0] < 0 {
				return nil, fmt.Errorf("calibrate: %s: case %s: point %d is not [size_bytes, busbw_gbps]", name, c.ID, j)
			}
		}
	}
	return doc.Cases, nil
}

// NodeFlags are the cluster options of one case, in the terms of the CLI's
// cluster flags (--node, --gpu, --gpus-per-node, --nics, --set), or an
// explicit node layout when no preset fits.
type NodeFlags struct {
	// Node, GPU, GPUsPerNode, NICs and Set are --node, --gpu,
	// --gpus-per-node, --nics and the --set NCCL_X=VALUE list.
	Node        string
	GPU         string
	GPUsPerNode int
	NICs        string
	Set         []string
	// Launch is --launch: the launch mode the case ran with, "" for the
	// default (see LaunchOf).
	Launch string
	// Inline replaces Node with an explicit layout.
	Inline *model.NodeSpec
}

// String prints the flags as a command line fragment.
func (f NodeFlags) String() string {
	var s []string
	if f.Inline != nil {
		s = append(s, fmt.Sprintf("(inline node %q)", f.Inline.Name))
	} else {
		s = append(s, "--node "+f.Node)
	}
	if f.GPU != "" {
		s = append(s, "--gpu "+f.GPU)
	}
	if f.GPUsPerNode > 0 {
		s = append(s, fmt.Sprintf("--gpus-per-node %d", f.GPUsPerNode))
	}
	if f.NICs != "" {
		s = append(s, "--nics "+f.NICs)
	}
	for _, kv := range f.Set {
		s = append(s, "--set "+kv)
	}
	if f.Launch != "" {
		s = append(s, "--launch "+f.Launch)
	}
	return strings.Join(s, " ")
}

// gFlagRE finds nccl-tests' -g N (GPUs per thread) in free text.
var gFlagRE = regexp.MustCompile(`(?:^|[\s(,;])-g\s*(\d+)`)

// LaunchOf returns the launch mode a case ran with and what says so:
// single-process when one thread drove several GPUs, as nccl-tests -g N
// with N > 1 does, stated by its results table's header ("nGpus N") or by
// the case's caveat or source ("-g 8"); process-per-gpu otherwise. r may be
// nil (the header is then not read). A header and a case text that
// disagree are an error naming both.
func (c *Case) LaunchOf(r *ingest.Run) (model.Launch, string, error) {
	_, header, _, err := calibrate.RunLaunch(r)
	if err != nil {
		return "", "", fmt.Errorf("calibrate: case %s: %w", c.ID, err)
	}
	text := 0
	for _, f := range []string{c.Caveat, c.Source} {
		if m := gFlagRE.FindStringSubmatch(f); m != nil {
			text, _ = strconv.Atoi(m[1])
			break
		}
	}
	if header > 0 && text > 0 && (header > 1) != (text > 1) {
		return "", "", fmt.Errorf("calibrate: case %s: the results header says nGpus %d, the case says -g %d", c.ID, header, text)
	}
	switch {
	case header > 1:
		return model.LaunchSingleProcess, fmt.Sprintf("the results header says nGpus %d (one thread drives %d GPUs)", header, header), nil
	case text > 1:
		return model.LaunchSingleProcess, fmt.Sprintf("the case says -g %d (one thread drives %d GPUs)", text, text), nil
	}
	return model.LaunchProcessPerGPU, "", nil
}

// CaseSetup maps a case to the cluster collsim models it with.
type CaseSetup struct {
	// Class groups cases measured on the same hardware; calibrated accuracy
	// fits on the other cases of the class (or other sizes when alone).
	Class string
	// Configured describes the cluster as it ran, misconfiguration included
	// (a degraded case is predicted only through these flags).
	Configured NodeFlags
	// Healthy, for degraded cases, is what the cluster should have been;
	// validate against it must name Expect among its diagnoses.
	Healthy *NodeFlags
	// Expect is the diagnosis code that validating against Healthy must name.
	Expect string
	// Why says where the mapping comes from.
	Why string
}

// r7525 is a Dell R7525 as in nccl-tests#293: two AMD EPYC sockets, the
// A100 PCIe on socket 1 (NUMA affinity 1 in the topo -m file), the single
// ConnectX-6 on socket 0 (SYS to the GPU).
func r7525() *model.NodeSpec {
	return &model.NodeSpec{
		Name: "r7525-a100pcie", GPU: "A100-PCIE", GPUs: 1, CPU: "amd",
		Description: "Dell R7525: 2x AMD EPYC, 1x A100 PCIe on socket 1, 1x HDR200 on socket 0 (GPU-NIC SYS)",
		Source:      "topo_a100pcie40_r7525_1x2_hdr-sys_ncclTests293.txt (NVIDIA/nccl-tests#293)",
		Sockets: []model.SocketSpec{
			{HostBridges: []model.BridgeSpec{{NICs: []int{0}}}},
			{HostBridges: []model.BridgeSpec{{GPUs: []int{0}}}},
		},
		NVLink: model.NVLinkSpec{Kind: "none"},
		NICs:   model.NICSpec{Count: 1, Speed: "HDR", Kind: "ib"},
	}
}

// caseSetups is the reviewable case -> cluster table, keyed by case ID or
// by an ID prefix ending in "*". Hardware facts come from each case's
// MANIFEST row; NCCL versions from the case (Version).
func caseSetups() map[string]CaseSetup {
	return map[string]CaseSetup{
		"xxrjun_h100_1x8_*": {Class: "h100-8gpu-nvswitch",
			Configured: NodeFlags{Node: "dgx-h100"},
			Why:        "1 node, 8x H100 80GB HBM3 SXM on NVSwitch (HGX H100 board)"},
		"snellius_h100_*": {Class: "h100-4gpu-snellius",
			Configured: NodeFlags{Node: "hgx-h100-4gpu"},
			Why:        "Snellius gpu_h100: 4x H100 on a 4-GPU NVLink mesh; 4x NDR200 IB per node (ibstat; the preset's NICs)"},
		"moc_h100_2x1_roce400_nogdr": {Class: "h100-1gpu-roce400",
			Configured: NodeFlags{Node: "dgx-h100", GPUsPerNode: 1, NICs: "1x400G-roce", Set: []string{"NCCL_NET_GDR_LEVEL=LOC", "NCCL_ALGO=Ring"}},
			Healthy:    &NodeFlags{Node: "dgx-h100", GPUsPerNode: 1, NICs: "1x400G-roce", Set: []string{"NCCL_ALGO=Ring"}},
			Expect:     calibrate.DiagNoGDR,
			Why:        "2 nodes x 1 H100, one 400G RoCE port (GPU-NIC PIX as on HGX); the log says GDR 0, modelled by NCCL_NET_GDR_LEVEL=LOC; NCCL_ALGO=RING from the run's env"},
		"aws_p4d_a100_2x8_efa": {Class: "a100-8gpu-p4d",
			Configured: NodeFlags{Node: "dgx-a100", NICs: "4x100G-efa"},
			Why:        "p4d.24xlarge: 8x A100-SXM4-40GB on NVSwitch, 4x 100G EFA"},
		"autodl_2080ti_1x2_*": {Class: "rtx2080ti-2gpu-pcie",
			Configured: NodeFlags{Node: "pcie-gpu-server", GPU: "RTX-2080TI", GPUsPerNode: 2, Set: []string{"NCCL_P2P_DISABLE=1"}},
			Healthy:    &NodeFlags{Node: "pcie-gpu-server", GPU: "RTX-2080TI", GPUsPerNode: 2},
			Expect:     calibrate.DiagSHM,
			Why: "2x RTX 2080 Ti, both under one PCIe switch (PIX, GPUs 0 and 1 of pcie-gpu-server). The GeForce driver refuses PCIe P2P " +
				"(p2pbw file: CANNOT Access Peer), so NCCL uses SHM; NCCL_P2P_DISABLE=1 describes that to the model. The healthy " +
				"expectation for two GPUs under one switch is P2P"},
		"abci_a100_*": {Class: "a100-8gpu-abci",
			Configured: NodeFlags{Node: "dgx-a100", NICs: "4xHDR-ib", Set: []string{"NCCL_NET_GDR_LEVEL=2"}},
			Why:        "ABCI compute node (A): 8x A100-SXM4-40GB on NVSwitch, 4x HDR200 IB (ABCI docs); NCCL_NET_GDR_LEVEL=2 from the job script"},
		"abci_v100_*": {Class: "v100-4gpu-abci",
			Configured: NodeFlags{Node: "v100-4gpu-nvlink", Set: []string{"NCCL_NET_GDR_LEVEL=2"}},
			Why:        "ABCI compute node (V): 4x V100-SXM2 NVLink mesh, 2x EDR IB (ABCI docs; the preset's NICs); NCCL_NET_GDR_LEVEL=2 from the job script"},
		"thanos_a100sxm80_1x8_*": {Class: "a100-8gpu-thanos",
			Configured: NodeFlags{Node: "dgx-a100"},
			Why:        "1 node, 8x A100-SXM4-80GB on NVSwitch"},
		"bcm_v100_2x1_tcp_socket": {Class: "v100-1gpu-socket",
			Configured: NodeFlags{Node: "v100-4gpu-nvlink", GPUsPerNode: 1, NICs: "1x10G-tcp", Set: []string{"NCCL_IB_DISABLE=1"}},
			Healthy:    &NodeFlags{Node: "v100-4gpu-nvlink", GPUsPerNode: 1, NICs: "1x100G-ib"},
			Expect:     calibrate.DiagSocket,
			Why:        "2 nodes x 1 V100-SXM3 with NCCL_IB_DISABLE=1 over ens3; 0.7-0.96 GB/s suggests 10GbE (speed not stated)"},
		"ncclTests293_a100pcie_2x1_hdr_gdrsys": {Class: "a100pcie-1gpu-hdr-sys",
			Configured: NodeFlags{Inline: r7525(), Set: []string{"NCCL_NET_GDR_LEVEL=SYS", "NCCL_SHM_DISABLE=1"}},
			Healthy:    &NodeFlags{Node: "pcie-gpu-server", GPU: "A100-PCIE", GPUsPerNode: 1, NICs: "1x200G-ib"},
			Expect:     calibrate.DiagGDRFar,
			Why:        "Dell R7525: A100 PCIe and ConnectX-6 HDR on different sockets (SYS); GDR forced across the CPU by NCCL_NET_GDR_LEVEL=SYS"},
		// The held-out runs (cases_heldout.yaml): hardware as each raw
		// file's MANIFEST row states it. NCCL_P2P_LEVEL=NVL, set in some of
		// their commands, is not passed: on these nodes every GPU pair is
		// NVLink-connected, where NCCL uses P2P by default.
		"ncclTests309_h100_2x8_ndr400": {Class: "h100-8gpu-xe9680-ndr400",
			Configured: NodeFlags{Node: "dgx-h100", Set: []string{"NCCL_NET_GDR_LEVEL=1"}},
			Why:        "Dell XE9680 (HGX H100 8-GPU, NVSwitch) with 8x ConnectX-7 IB 400G, as nccl-tests#309 states; NCCL_NET_GDR_LEVEL=1 from the run's command"},
		"ncclTests309_h100vm_4x8_ndr400": {Class: "h100-8gpu-xe9680-ndr400-vm",
			Configured: NodeFlags{Node: "dgx-h100", Set: []string{"NCCL_NET_GDR_LEVEL=1"}},
			Why:        "4 VMs of 8 H100 + 8 GPU-NIC pairs on IB 400G (nccl-tests#309); modelled as HGX H100 bare metal (these flags cannot mark VMs); NCCL_NET_GDR_LEVEL=1 from the run's command"},
		"ncclTests309aion_h100_*": {Class: "h100-8gpu-ndr400-aion",
			Configured: NodeFlags{Node: "dgx-h100"},
			Why:        "8x H100 80GB HBM3 per node on IB 400G (nccl-tests#309, second poster); 8 NICs per node inferred from the '400 GB/s IB limit' they quote"},
		"ncclTests309aion_h100_8x8_ctas24_qps2": {Class: "h100-8gpu-ndr400-aion",
			Configured: NodeFlags{Node: "dgx-h100", Set: []string{"NCCL_MIN_CTAS=24", "NCCL_IB_QPS_PER_CONNECTION=2"}},
			Why:        "as ncclTests309aion_h100_*, run with NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2 (NCCL_MIN_CTAS, NCCL >= 2.17, floors the coll and the NVLS channels)"},
		"ncclTests309aion_h100_2x8_ring_ctas24_qps2": {Class: "h100-8gpu-ndr400-aion",
			Configured: NodeFlags{Node: "dgx-h100", Set: []string{"NCCL_ALGO=Ring", "NCCL_MIN_CTAS=24", "NCCL_IB_QPS_PER_CONNECTION=2"}},
			Why:        "as ncclTests309aion_h100_8x8_ctas24_qps2, with NCCL_ALGO=Ring from the run's command"},
		"ociTutorials_a100_1x8_bmgpu48": {Class: "a100-8gpu-oci-bmgpu48",
			Configured: NodeFlags{Node: "dgx-a100"},
			Why:        "OCI BM.GPU4.8: 8x A100-SXM4-40GB on NVSwitch (OCI shape documentation)"},
		"ociTutorials_a100_2x8_bmgpu48_roce100x16": {Class: "a100-8gpu-oci-bmgpu48",
			Configured: NodeFlags{Node: "dgx-a100", NICs: "16x100G-roce"},
			Why:        "OCI BM.GPU4.8 on the cluster network: 16x 100G RoCE per node, as the tutorial states"},
		"ociTutorialsOL_a100_1x8_bmgpu48": {Class: "a100-8gpu-oci-bmgpu48",
			Configured: NodeFlags{Node: "dgx-a100"},
			Why:        "OCI BM.GPU4.8 as ociTutorials_a100_1x8_bmgpu48, the tutorial's Oracle Linux edition (NCCL 2.25.1 in an NGC container)"},
		"ociTutorialsOL_a100_2x8_bmgpu48_roce100x16_qps4": {Class: "a100-8gpu-oci-bmgpu48",
			Configured: NodeFlags{Node: "dgx-a100", NICs: "16x100G-roce", Set: []string{"NCCL_IB_QPS_PER_CONNECTION=4"}},
			Why: "OCI BM.GPU4.8 on the cluster network, 16x 100G RoCE, with the run's NCCL_IB_QPS_PER_CONNECTION=4; its NCCL_IB_HCA " +
				"names the 16 cluster-network ports by the host's device numbers (mlx5_0-3, mlx5_6-17), which are every NIC the model has, so it is not passed"},
		"ncclTests331_a100sxm64_1x2_sendrecv": {Class: "a100-4gpu-nv4-ncclTests331",
			Configured: NodeFlags{Node: "hgx-a100-4gpu", GPUsPerNode: 2, Set: []string{"NCCL_BUFFSIZE=4194304"}},
			Why: "2 of the 4 A100-SXM-64GB of one node, NV4 between every pair (topo -m in nccl-tests#331), as the " +
				"HGX A100 4-GPU mesh; NCCL_BUFFSIZE from the log (the default value)"},
	}
}

// SetupFor returns the cluster mapping of a case; an unmapped case is an error.
func SetupFor(c *Case) (CaseSetup, error) {
	table := caseSetups()
	if s, ok := table[c.ID]; ok {
		return s, nil
	}
	keys := make([]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if p, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(c.ID, p) {
			return table[k], nil
		}
	}
	return CaseSetup{}, fmt.Errorf("calibrate: case %s: no cluster mapping (cases.go maps: %s)", c.ID, strings.Join(keys, ", "))
}

// ClusterSpec builds the spec of flags f for case c: its node count and
// NCCL version come from the case.
func (c *Case) ClusterSpec(f NodeFlags) (model.ClusterSpec, error) {
	o := scenarios.Overrides{Node: f.Node, Nodes: c.Nodes, GPUsPerNode: f.GPUsPerNode, GPU: f.GPU, NICs: f.NICs,
		Set: f.Set, NCCLVersion: c.Version(), Topo: f.Inline, Launch: f.Launch}
	spec, err := o.Resolve()
	if err != nil {
		return spec, fmt.Errorf("calibrate: case %s: %w", c.ID, err)
	}
	spec.Name = c.ID
	return spec, nil
}

// casePath is a case's raw file: relative to dir (the cases file's
// directory), or as given when absolute.
func casePath(dir, file string) string {
	f := filepath.FromSlash(file)
	if filepath.IsAbs(f) {
		return f
	}
	return filepath.Join(dir, f)
}

// Measured returns the case's results table, read from its raw file
// (relative to dir, the cases file's directory) and checked against the
// case's collective and rank count.
func (c *Case) Measured(dir string) (*ingest.Artifact, *ingest.Run, error) {
	a, err := ingest.ParseFile(casePath(dir, c.File))
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: case %s: %w", c.ID, err)
	}
	coll, _ := model.ParseCollective(c.Collective)
	if c.TableIndex < 0 || c.TableIndex >= len(a.Runs) {
		return nil, nil, fmt.Errorf("calibrate: case %s: %s has %d results tables, the case wants table %d", c.ID, c.File, len(a.Runs), c.TableIndex)
	}
	r := a.Runs[c.TableIndex]
	if r.Collective != coll {
		return nil, nil, fmt.Errorf("calibrate: case %s: table %d of %s is %s, the case says %s", c.ID, c.TableIndex, c.File, r.CollectiveName, c.Collective)
	}
	if r.Ranks != c.TotalRanks {
		return nil, nil, fmt.Errorf("calibrate: case %s: table %d of %s has %d ranks, the case says %d", c.ID, c.TableIndex, c.File, r.Ranks, c.TotalRanks)
	}
	return a, r, nil
}
