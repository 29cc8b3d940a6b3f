package ingest

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// The fixtures in testdata (outside raw/) were written for these tests, in
// the layouts the tools print (see testdata/README.md); the figures they
// check are the ones written into them.

func mustParse(t *testing.T, path string) *Artifact {
	t.Helper()
	a, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestNCCLTestsJSON(t *testing.T) {
	a := mustParse(t, "testdata/nccltests_allreduce_h100_2x8.json")
	if a.Kind != KindNCCLTestsJSON || len(a.Runs) != 1 {
		t.Fatalf("kind %s runs %d", a.Kind, len(a.Runs))
	}
	r := a.Runs[0]
	// args[0] is .../all_reduce_perf; 16 devices on gpu-node-01/02;
	// nccl_version 22703; 14 results from 1 MiB to 8 GiB.
	if r.CollectiveName != "all_reduce" || r.Binary != "all_reduce_perf" || r.Ranks != 16 || len(r.Rows) != 14 ||
		r.NCCLVersion != "2.27.3" || len(r.Hosts) != 2 || r.OutOfBounds != 0 {
		t.Fatalf("run = %s %s ranks %d rows %d nccl %s hosts %v oob %d", r.CollectiveName, r.Binary, r.Ranks, len(r.Rows), r.NCCLVersion, r.Hosts, r.OutOfBounds)
	}
	last := r.Rows[len(r.Rows)-1]
	// last result: size 8589934592, out_of_place.bus_bw 368.0, root "    -1", nwrong 0.0
	if last.Size != 8589934592 || last.OOP.BusBW != 368.0 || last.Root != -1 || last.OOP.Wrong != 0 || !last.IP.Valid || r.DTypeSize != 4 {
		t.Errorf("last row = %+v", last)
	}
	if r.Params["iterations"] != "20" || r.Params["step_factor"] != "2" {
		t.Errorf("params = %v", r.Params)
	}
	if r.Rows[0].Line <= r.Line {
		t.Errorf("row line %d not after results line %d", r.Rows[0].Line, r.Line)
	}
	// average_bus_bandwidth.bandwidth 237.2196 written into the fixture
	if !near(r.AvgBusBW, 237.2196) {
		t.Errorf("avg = %g", r.AvgBusBW)
	}
	if len(a.Findings) != 0 {
		t.Errorf("findings = %v", a.Findings)
	}
}

func TestNCCLTestsJSONVariants(t *testing.T) {
	// Key variants (algbw/busbw, wrong), a top-level array of runs, a wrong count.
	doc := `[{"collective":"all_gather_perf","results":[
	  {"size":1048576,"count":16384,"type":"half","redop":"none","root":-1,
	   "oop":{"time_us":50.1,"algbw":20.9,"busbw":19.6,"#wrong":0},"inplace":{"time":49.0,"algBw":21.4,"busBw":20.1,"wrong":2}}],
	  "avg_busbw": 19.85, "out_of_bounds": 2},
	 {"results":[{"size":4096,"count":1024,"type":"float","redop":"sum","root":"-1",
	   "out_of_place":{"time":10,"alg_bw":0.41,"bus_bw":0.41,"nwrong":null}}]}]`
	a, err := Parse("variants.json", strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Runs) != 2 {
		t.Fatalf("runs = %d", len(a.Runs))
	}
	r := a.Runs[0]
	if r.CollectiveName != "all_gather" || r.Rows[0].OOP.BusBW != 19.6 || r.Rows[0].IP.Wrong != 2 || r.AvgBusBW != 19.85 || r.OutOfBounds != 2 || r.DTypeSize != 2 {
		t.Errorf("run 0 = %+v rows %+v", r, r.Rows)
	}
	if w := a.Runs[1].Rows[0].OOP.Wrong; w != -1 {
		t.Errorf("nwrong null -> %d, want -1", w)
	}
	if got := findingSet(a.Findings); strings.Join(got, ",") != "error:validation-errors" {
		t.Errorf("findings = %v", got)
	}
}

func TestNVBandwidthJSON(t *testing.T) {
	a := mustParse(t, "testdata/nvbandwidth_h800_1x8.json")
	// three passed tests with matrices, one waived
	if a.Kind != KindNVBandwidth || len(a.Matrices) != 3 || a.Machine["gpus"] != "8x NVIDIA H800" || a.Machine["version"] != "v0.2" {
		t.Fatalf("kind %s matrices %d machine %v", a.Kind, len(a.Matrices), a.Machine)
	}
	d2d := a.Matrices[2]
	// same figures as the text sample: row 7 column 5 172.57, diagonal N/A
	if d2d.Path != "d2d" || d2d.Values[7][5] != 172.57 || !math.IsNaN(d2d.Values[3][3]) || len(d2d.Cols) != 8 {
		t.Errorf("d2d = %+v", d2d)
	}
	if len(a.Skipped) != 1 || !strings.Contains(a.Skipped[0].Reason, "Waived") {
		t.Errorf("skipped = %+v", a.Skipped)
	}
	b, err := json.Marshal(d2d)
	if err != nil || !strings.Contains(string(b), `[null,172.16,`) {
		t.Errorf("matrix JSON = %s, %v", b, err)
	}
	var back Matrix
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(back.Values[0][0]) || back.Values[0][1] != 172.16 {
		t.Errorf("round trip: %v %v", err, back.Values)
	}
}

func TestTopoXML(t *testing.T) {
	tests := []struct {
		file       string
		gpu, cpu   string
		links      int
		nics       int
		speed      string
		gen        int
		noteSubstr string
	}{
		// DGX A100-like dump: sm 80, 6 NVSwitch targets x 2 links, 200000 Mb/s NICs, 16 GT/s switches, AMD
		{"testdata/topo_dgx-a100_nccl-dump.xml", "A100-SXM4", "amd", 12, 8, "200G", 4, "A100-SXM4"},
		// HGX H100-like dump: sm 90, 5+4+4+5 links, 400000 Mb/s, 32 GT/s, Intel; H200 models the same
		{"testdata/topo_hgx-h100_nccl-dump.xml", "H100-SXM", "intel", 18, 8, "400G", 5, "H200-SXM"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			ti, err := LoadTopology(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			n := ti.Node
			if n.GPU != tc.gpu || n.CPU != tc.cpu || n.NVLink.Kind != "nvswitch" || n.NVLink.Links != tc.links ||
				n.NICs.Count != tc.nics || ti.NICSpeed != tc.speed || len(n.Sockets) != 2 || n.GPUs != 8 {
				t.Fatalf("node = %+v speed %s", n, ti.NICSpeed)
			}
			if sw := n.Sockets[0].HostBridges[0].Switches[0]; sw.Gen != tc.gen || sw.Width != 16 {
				t.Errorf("switch gen %d width %d", sw.Gen, sw.Width)
			}
			if !strings.Contains(strings.Join(ti.Notes, " "), tc.noteSubstr) {
				t.Errorf("notes = %v", ti.Notes)
			}
			// Each GPU shares a switch with its NIC: GPU0-NIC0 is PIX.
			if ti.Labels[8] != "NIC0" || ti.Matrix[0][8] != "PIX" || ti.Matrix[0][1] != "NV"+itoa(tc.links) {
				t.Errorf("matrix row 0 = %v", ti.Matrix[0])
			}
			spec, err := ti.NodeSpec("", "", model.NICIB)
			if err != nil {
				t.Fatal(err)
			}
			if spec.NICs.Speed != tc.speed || spec.NICs.Kind != "ib" {
				t.Errorf("spec NICs = %+v", spec.NICs)
			}
		})
	}
}

func TestTopoXMLErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"graph without channels", `<graphs version="1"><graph id="0" pattern="4"/></graphs>`, "graph 0 lists no <channel>"},
		{"graph without graph", `<graphs version="1"></graphs>`, "without any <graph>"},
		{"graph bad dev", "<graphs version=\"1\">\n<graph id=\"0\" pattern=\"4\" nchannels=\"1\">\n<channel><gpu dev=\"x\"/></channel></graph></graphs>", `x.xml:3: <gpu dev="x"> in graph 0`},
		{"graph bad pattern", `<graphs version="1"><graph id="0" pattern="-1"><channel><gpu dev="0"/></channel></graph></graphs>`, `pattern="-1"`},
		{"truncated", "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"0\" class=\"0x030200\">\n<gpu dev=\"0\" sm=\"80\">", ":4:"},
		{"no gpu", `<system version="1"><cpu numaid="0"></cpu></system>`, "without any <gpu>"},
		{"deep", "<system><cpu><gpu/>" + strings.Repeat("<pci>", 100) + strings.Repeat("</pci>", 100) + "</cpu></system>", "deeper"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.xml", strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPerftest(t *testing.T) {
	tests := []struct {
		file           string
		test, dev, lnk string
		mtu, rows      int
		lastAvgGbs     float64
		lastLatTyp     float64
	}{
		// --report_gbits: last row 8388608 bytes, BW average 394.66 Gb/s
		{"testdata/perftest_ib_write_bw_ndr.txt", "ib_write_bw", "mlx5_0", "IB", 4096, 10, 394.66, 0},
		// MB/sec is MiB/s (0.023302 Mpps x 1 MiB = 23302 MiB/s): 23302.26 x 2^20 x 8 / 1e9 Gb/s
		{"testdata/perftest_ib_read_bw_hdr_mbsec.txt", "ib_read_bw", "mlx5_2", "Ethernet", 4096, 2, 23302.26 * 1048576 * 8 / 1e9, 0},
		// latency: last row t_typical 2.26 us
		{"testdata/perftest_ib_send_lat.txt", "ib_send_lat", "mlx5_0", "IB", 4096, 3, 0, 2.26},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			a := mustParse(t, tc.file)
			if a.Kind != KindPerftest || len(a.Perftest) != 1 {
				t.Fatalf("kind %s results %d", a.Kind, len(a.Perftest))
			}
			p := a.Perftest[0]
			if p.Test != tc.test || p.Device != tc.dev || p.LinkType != tc.lnk || p.MTU != tc.mtu || len(p.Rows) != tc.rows {
				t.Fatalf("result = %+v", p)
			}
			last := p.Rows[len(p.Rows)-1]
			if !near(last.AvgGbs, tc.lastAvgGbs) || !near(last.LatTypUs, tc.lastLatTyp) {
				t.Errorf("last row = %+v", last)
			}
			b, _ := json.Marshal(last)
			if tc.lastLatTyp > 0 && !strings.Contains(string(b), `"lat_typical_us":2.26`) {
				t.Errorf("row JSON = %s", b)
			}
		})
	}
}

func TestIBStatFull(t *testing.T) {
	a := mustParse(t, "testdata/ibstat_full_h100_node.txt")
	// CA 'mlx5_0', 'mlx5_1': Active 400 InfiniBand; 'mlx5_2': Down 10 Ethernet
	if len(a.Ports) != 3 || a.Ports[0].Device != "mlx5_0" || a.Ports[0].RateGbps != 400 || a.Ports[0].LinkLayer != "InfiniBand" ||
		a.Ports[2].State != "Down" || a.Ports[2].LinkLayer != "Ethernet" {
		t.Fatalf("ports = %+v", a.Ports)
	}
	if n, g := activeNICs(a.Ports); n != 2 || g != 400 {
		t.Errorf("active = %d x %d", n, g)
	}
}

// TestNCCLLogFeatures checks the synthetic 2x8 H100 file that exercises
// every transport spelling and the findings each one triggers.
func TestNCCLLogFeatures(t *testing.T) {
	a := mustParse(t, "testdata/nccltests_allgather_h100_2x8_degraded.txt")
	l := a.Log
	count := map[string]int{}
	for _, c := range l.Connections {
		count[c.Transport+" "+c.Detail]++
	}
	for _, k := range []string{
		"SHM direct/direct", "SHM direct", "SHM direct shared memory", // 2.13-2.29, 2.30, <=2.12
		"P2P IPC", "P2P CUMEM/read", "P2P direct pointer",
		"NET IB/2/GDRDMA", "NET IB/3(5)/GDRDMA", "NET IB/0/GDRDMA", "NET IB/1",
	} {
		if count[k] == 0 {
			t.Errorf("no %q connection (have %v)", k, count)
		}
	}
	// old busId peer form "2[3a000] -> 3[5d000]"
	for _, c := range l.Connections {
		if c.Detail == "direct shared memory" && (c.From != 2 || c.To != 3) {
			t.Errorf("old form parsed as %d -> %d", c.From, c.To)
		}
	}
	if l.Tuning["AllReduce"]["Ring/Simple"] != [2]float64{34.7, 80.0} || l.Tuning["AllReduce"]["Tree/LL"] != [2]float64{14.4, 4.8} || len(l.Tuning["Broadcast"]) != 18 {
		t.Errorf("tuning = %v", l.Tuning)
	}
	if l.RingPXN == nil || !*l.RingPXN || l.RingGDR == nil || !*l.RingGDR { // "Connected all rings, use ring PXN 1 GDR 1"
		t.Errorf("ring PXN %v GDR %v", l.RingPXN, l.RingGDR)
	}
	if len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "status=12") || len(l.Fallbacks) != 1 {
		t.Errorf("warnings %v fallbacks %v", l.Warnings, l.Fallbacks)
	}
	if l.Channels != 16 || l.LocalRanks != 8 || l.Nodes != 2 || len(l.HCAs) != 9 || l.Env["NCCL_P2P_LEVEL"] != "LOC" {
		t.Errorf("channels %d local %d nodes %d hcas %d env %v", l.Channels, l.LocalRanks, l.Nodes, len(l.HCAs), l.Env)
	}
	want := []string{
		"error:validation-errors",           // in-place #wrong 3 at 256 MiB, "Out of bounds values : 3 FAILED"
		"warning:bandwidth-cliff",           // 27.11 GB/s at 16 MiB -> 12.40 at 32 MiB (-54%)
		"warning:fewer-nics-than-installed", // 8 IB HCAs, NET devices 0-3 used
		"warning:nccl-warning",
		"warning:net-within-node", // 6 -> 7 on gpu-a01 via NET/IB/2
		"warning:net-without-gdr", // NET/IB/1 lines
		"warning:no-nvls",         // H100 x 8 per node, NVLS not available
		"warning:shm-instead-of-p2p",
		"warning:topology-search-fallback",
	}
	if got := findingSet(a.Findings); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("findings = %v\nwant %v", got, want)
	}
	if a.Findings[0].Severity != SevError {
		t.Errorf("findings not sorted by severity: %v", a.Findings[0])
	}
}

func TestIFlagAndNA(t *testing.T) {
	a := mustParse(t, "testdata/nccltests_reducescatter_h100_1x8_iflag_na.txt")
	r := a.Runs[0]
	// srun "0: " prefixes; -I columns after each group; #wrong N/A (-c 0)
	if r.CollectiveName != "reduce_scatter" || r.Ranks != 8 || len(r.Rows) != 4 || r.Params["unalign"] != "0" || r.NCCLVersion != "2.25.3" {
		t.Fatalf("run = %s ranks %d rows %d params %v nccl %s", r.CollectiveName, r.Ranks, len(r.Rows), r.Params, r.NCCLVersion)
	}
	row := r.Rows[3] // 268435456 written with busbw 326.30 in both groups
	if row.OOP.BusBW != 326.30 || row.IP.BusBW != 326.30 || row.OOP.Wrong != -1 || row.IP.Wrong != -1 || !row.IP.Valid {
		t.Errorf("row = %+v", row)
	}
	if len(a.Findings) != 0 || len(a.Skipped) != 0 {
		t.Errorf("findings %v skipped %v", a.Findings, a.Skipped)
	}
}

func TestCrossCheckPlateau(t *testing.T) {
	ib := mustParse(t, "testdata/raw/ibstat_snellius_h100_node.txt")
	ag := mustParse(t, "testdata/raw/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt")
	ar := mustParse(t, "testdata/raw/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt")
	bcm := mustParse(t, "testdata/raw/nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt")
	CrossCheck([]*Artifact{ag, ib, ar, bcm})
	// all_gather plateau 97.65 GB/s = 3.9 x 25 GB/s: all 4 NICs carry traffic (info);
	// all_reduce 156.14 GB/s exceeds 4 x 25 (2-node tree): nothing; BCM lists no IB HCA: not applied.
	has := func(a *Artifact, sev string) bool {
		for _, f := range a.Findings {
			if f.Code == FindNICPlateau && f.Severity == sev {
				return true
			}
		}
		return false
	}
	if !has(ag, SevInfo) || has(ar, SevInfo) || has(ar, SevWarning) || len(findingSet(bcm.Findings)) != 2 {
		t.Errorf("plateau findings: allgather %v allreduce %v bcm %v", findingSet(ag.Findings), findingSet(ar.Findings), findingSet(bcm.Findings))
	}
	// One of four 200G NICs: a plateau near 25 GB/s is flagged.
	r := &Run{CollectiveName: "all_reduce", Hosts: []string{"a", "b"}, Rows: []Row{{Size: 1 << 30, OOP: Result{BusBW: 23.5, Valid: true}, Line: 7}}}
	if f := NICPlateau(r, nil, 4, 200, "test"); f == nil || f.Severity != SevWarning || !strings.Contains(f.Message, "1 of the 4") {
		t.Errorf("one-NIC plateau: %+v", f)
	}
	if f := NICPlateau(r, nil, 4, 800, "test"); f == nil || f.Code != FindLowNetBW {
		t.Errorf("far below one NIC: %+v", f)
	}
}

func TestBandwidthCliffs(t *testing.T) {
	row := func(size int64, bw float64) Row { return Row{Size: size, OOP: Result{BusBW: bw, Valid: true}} }
	r := &Run{Rows: []Row{row(512<<10, 10), row(1<<20, 2), row(2<<20, 20), row(4<<20, 14.9), row(8<<20, 11.3)}}
	// 512 KiB -> 1 MiB is below CliffMinSize; 20 -> 14.9 is -25.5%; 14.9 -> 11.3 is -24.2%
	got := BandwidthCliffs(r, 0.25)
	if len(got) != 1 || !strings.Contains(got[0].Evidence, "20 GB/s at 2M") {
		t.Errorf("cliffs = %+v", got)
	}
	if n := len(BandwidthCliffs(r, 0.2)); n != 2 {
		t.Errorf("cliffs at 20%% = %d, want 2", n)
	}
}

// TestJobLog checks a job log that prints nvidia-smi topo -m before the
// nccl-tests output: both are kept.
func TestJobLog(t *testing.T) {
	topo, _ := os.ReadFile("testdata/raw/topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt")
	tests, _ := os.ReadFile("testdata/raw/nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt")
	a, err := Parse("job.log", bytes.NewReader(append(append(topo, '\n'), tests...)))
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind != KindNCCLTests || len(a.Runs) != 6 || a.Topo == nil || a.Topo.Node.GPUs != 2 {
		t.Fatalf("kind %s runs %d topo %v", a.Kind, len(a.Runs), a.Topo != nil)
	}
	// the -p2p "NS" matrix and the low PCIe bandwidth both say P2P is unavailable
	n := 0
	for _, f := range a.Findings {
		if f.Code == FindP2PUnavailable {
			n++
		}
	}
	if n != 2 {
		t.Errorf("p2p-unavailable findings = %d, want 2", n)
	}
}

// TestOldFormats covers nccl-tests <= 2.11 layouts: all_gather without a
// redop column, broadcast with a root column, the "error" column, no
// device lines (ranks from busbw/algbw), and a GIB network line.
func TestOldFormats(t *testing.T) {
	tests := []struct {
		name, text string
		coll       string
		ranks      int
		root       int
		maxErr     float64
	}{
		{"all_gather without redop", `#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)             (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576         32768   float    50.10   20.93   18.31  0e+00    49.80   21.06   18.42  0e+00
     2097152         65536   float    80.40   26.08   22.82  0e+00    80.10   26.18   22.91  0e+00
`, "all_gather", 8, -1, 0}, // 18.31 / 20.93 = 0.875 = 7/8
		{"broadcast with root", `#       size         count    type   root     time   algbw   busbw  error     time   algbw   busbw  error
     1048576        262144   float      0    40.00   26.21   26.21  0e+00    39.00   26.89   26.89  0e+00
`, "broadcast", 0, 0, 0}, // busbw = algbw says nothing about n
		{"all_reduce error column", `#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
    33554432       8388608   float     sum   1887.3   17.78   33.34  5e-07   1885.6   17.80   33.37  5e-07
`, "all_reduce", 16, -1, 5e-07}, // the ABCI 2x8 32 MB row: 33.34 / 17.78 = 1.875 = 2*15/16
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Parse(tc.name, strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			r := a.Runs[0]
			row := r.Rows[0]
			if r.CollectiveName != tc.coll || r.Ranks != tc.ranks || row.Root != tc.root || row.OOP.MaxErr != tc.maxErr || row.OOP.Wrong != -1 {
				t.Errorf("%s ranks %d root %d maxerr %g wrong %d", r.CollectiveName, r.Ranks, row.Root, row.OOP.MaxErr, row.OOP.Wrong)
			}
		})
	}
	log := "node1:10:11 [0] NCCL INFO NCCL version 2.27.5+cuda12.8\nnode1:10:11 [0] NCCL INFO Using network GIB\n"
	a, err := Parse("gib.log", strings.NewReader(log))
	if err != nil || a.Kind != KindNCCLLog || a.Log.Network != "GIB" || a.Log.Version != "2.27.5" || a.Machine["nccl_build"] != "2.27.5+cuda12.8" {
		t.Errorf("GIB log: %v %+v", err, a)
	}
}

// TestLongLogBeforeTable checks that a results table after more than the
// detection window of NCCL INFO lines is still read.
func TestLongLogBeforeTable(t *testing.T) {
	var b strings.Builder
	for b.Len() < DetectWindow+1000 {
		b.WriteString("node7:4242:4300 [3] NCCL INFO Channel 05/0 : 3[3] -> 4[4] via P2P/CUMEM/read\n")
	}
	tail, err := os.ReadFile("testdata/raw/nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt")
	if err != nil {
		t.Fatal(err)
	}
	b.Write(tail)
	a, err := Parse("long.log", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if a.Kind != KindNCCLTests || len(a.Runs) != 5 || a.Log == nil || len(a.Log.Connections) == 0 {
		t.Errorf("kind %s runs %d", a.Kind, len(a.Runs))
	}
}

// TestDetectHWBench checks that the detector hands collsim hwbench reports
// to hwbench.go's converter.
func TestDetectHWBench(t *testing.T) {
	a := mustParse(t, "testdata/hwbench_fake.json")
	if a.Kind != KindHWBench || a.File != "testdata/hwbench_fake.json" {
		t.Errorf("kind %s file %s", a.Kind, a.File)
	}
}
