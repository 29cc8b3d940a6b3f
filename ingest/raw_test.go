package ingest

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// rawDir is the testdata copy of the validation corpus (shared/data/raw,
// provenance in testdata/raw/MANIFEST.md); sharedRawDir is the original,
// present in the development tree but not in CI clones.
const (
	rawDir       = "testdata/raw"
	sharedRawDir = "../../shared/data/raw"
)

// wantRun is what one nccl-tests table of a raw file must yield. Every
// figure is read off the file: peak is the largest out-of-place busbw
// printed, avg the "# Avg bus bandwidth" footer.
type wantRun struct {
	coll  string
	ranks int
	rows  int
	peak  float64
	avg   float64
}

type rawCase struct {
	file string
	kind Kind
	runs []wantRun
	// findings is the exact set of "severity:code" the file yields: the
	// problems it shows, and nothing for healthy runs.
	findings []string
	check    func(t *testing.T, a *Artifact)
}

// rawCases names every file of the corpus.
var rawCases = []rawCase{
	{file: "ibstat_snellius_h100_node.txt", kind: KindIBStat,
		check: func(t *testing.T, a *Artifact) {
			// six port sections: 25G active, 40G down/disabled, four 200G active
			if len(a.Ports) != 6 {
				t.Fatalf("ports = %d, want 6", len(a.Ports))
			}
			if p := a.Ports[1]; p.State != "Down" || p.Physical != "Disabled" || p.RateGbps != 40 {
				t.Errorf("port 2 = %+v, want Down/Disabled/40", p)
			}
			if n, g := activeNICs(a.Ports); n != 4 || g != 200 {
				t.Errorf("active NICs = %d x %d Gb/s, want 4 x 200", n, g)
			}
		}},
	{file: "ibstatus_a100sxm80_hgx8_roce100x8_deepep13.txt", kind: KindIBStat,
		check: func(t *testing.T, a *Artifact) {
			// mlx5_0..mlx5_7, "rate: 100 Gb/sec (4X EDR)", "link_layer: Ethernet"
			if len(a.Ports) != 8 {
				t.Fatalf("ports = %d, want 8", len(a.Ports))
			}
			for i, p := range a.Ports {
				if p.Device != "mlx5_"+itoa(i) || p.RateGbps != 100 || p.LinkLayer != "Ethernet" || p.State != "Active" {
					t.Errorf("port %d = %+v", i, p)
				}
			}
		}},
	{file: "nccldebug_a100sxm40_aws-p4d_4pods-x1gpu_efa_trainingoneks.txt", kind: KindNCCLLog,
		check: func(t *testing.T, a *Artifact) {
			l := a.Log
			// "NCCL version 2.27.3+cuda12.9", "Using network Libfabric",
			// "nRanks 4 nNodes 4 localRanks 1", "Channel 00/02 : 0 1 2 3"
			if l.Version != "2.27.3" || l.Network != "Libfabric" || l.Ranks != 4 || l.Nodes != 4 || l.LocalRanks != 1 || l.Channels != 2 {
				t.Errorf("log = version %q network %q ranks %d nodes %d local %d channels %d", l.Version, l.Network, l.Ranks, l.Nodes, l.LocalRanks, l.Channels)
			}
			if len(l.Rings) != 2 || len(l.Rings[0]) != 4 {
				t.Errorf("rings = %v, want two rings of 4", l.Rings)
			}
			// NET/Libfabric/0/GDRDMA lines, although "Connected all rings ... GDR 0"
			if l.GDR == nil || !*l.GDR || l.RingGDR == nil || *l.RingGDR {
				t.Errorf("GDR = %v, ring GDR = %v; want true (NET lines) and false (ring line)", l.GDR, l.RingGDR)
			}
			// Enabled matrix: NCCL_PROTO=simple leaves only Simple on
			if e := l.Enabled["AllReduce"]; e["Simple"] != 1 || e["LL"] != 0 || e["Ring"] != 1 {
				t.Errorf("enabled AllReduce = %v", e)
			}
			if l.Env["NCCL_PROTO"] != "simple" {
				t.Errorf("env NCCL_PROTO = %q", l.Env["NCCL_PROTO"])
			}
		}},
	{file: "nccltests_a100pcie40_2x1_ib-hdr200x1-gdr-sys_ncclTests293_1.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_reduce", 2, 28, 6.44, 2.36313}}, // 536870912 row: 6.44; footer 2.36313
		findings: []string{"warning:gdr-level-raised", "warning:net-bandwidth-low"},
		check: func(t *testing.T, a *Artifact) {
			l := a.Log
			if l.Env["NCCL_NET_GDR_LEVEL"] != "SYS" || l.Env["NCCL_SHM_DISABLE"] != "1" || l.Network != "IBext_v8" {
				t.Errorf("env %v network %q", l.Env, l.Network)
			}
			if len(l.HCAs) != 1 || l.HCAs[0].Name != "mlx5_0" || l.HCAs[0].LinkLayer != "IB" {
				t.Errorf("HCAs = %+v, want [0]mlx5_0:1/IB", l.HCAs)
			}
		}},
	{file: "nccltests_a100sxm40_2x8_aws-p4d-efa4x100_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 30, 43.81, 11.2432}}, // 4294967296 row: 43.81; footer 11.2432
		check: func(t *testing.T, a *Artifact) {
			l := a.Log
			if l.Network != "AWS Libfabric" || l.Version != "2.9.9" || len(l.Rings) != 8 || len(l.Rings[0]) != 16 {
				t.Errorf("network %q version %q rings %d", l.Network, l.Version, len(l.Rings))
			}
			// old peer form "1[101d0] -> 8[101c0] [send] via NET/AWS Libfabric/1/GDRDMA"
			found := false
			for _, c := range l.Connections {
				if c.Transport == "NET" && c.Net == "AWS Libfabric" && c.GDR && c.From == 1 && c.To == 8 && c.Dir == "send" {
					found = true
				}
			}
			if !found {
				t.Error("no NET/AWS Libfabric send connection 1 -> 8")
			}
			if a.Runs[0].Params["collective"] == "" {
				t.Error("collective should be marked as inferred (no test binary named)")
			}
		}},
	{file: "nccltests_a100sxm40_2x8_ib-hdr200x4_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 24, 33.34, 7.41855}}}, // 33554432 row: 33.34
	{file: "nccltests_a100sxm40_4x8_ib-hdr200x4_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 32, 24, 31.33, 6.74639}}}, // 33554432 row: 31.33
	{file: "nccltests_a100sxm40_8x8_ib-hdr200x4_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 64, 24, 16.24, 4.11476}}}, // 16777216 row: 16.24 (32 MiB gives 15.21)
	{file: "nccltests_a100sxm40_16x8_ib-hdr200x4_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 128, 24, 26.63, 5.52162}}}, // 33554432 row: 26.63
	// nccl-tests#331 (held-out corpus): sendrecv_perf -t 2 on 2 GPUs of a
	// Leonardo node; the test is named only in the sentence above the output,
	// which must be read for the 2-rank table (busbw = algbw for both
	// sendrecv and a 2-rank all_reduce).
	{file: "nccltests_a100sxm64_1x2_nvlink-nv4_ncclTests331_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"sendrecv", 2, 29, 73.44, 24.3607}}}, // 268435456 row: 73.44
	// oracle-japan/ocitutorials (held-out corpus): one 10 GiB row each.
	{file: "nccltests_a100sxm40_1x8_nvswitch_ocitutorials_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 8, 1, 232.20, 232.167}}},
	{file: "nccltests_a100sxm40_2x8_roce100x16_ocitutorials_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 1, 191.76, 191.752}}},
	// Its Oracle Linux edition (NCCL 2.25.1, 4 QPs per connection on 2 nodes).
	{file: "nccltests_a100sxm40_1x8_nvswitch_ocitutorials-ol_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 8, 1, 233.00, 233.168}}},
	{file: "nccltests_a100sxm40_2x8_roce100x16-qps4_ocitutorials-ol_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 1, 222.88, 220.921}}},
	{file: "nccltests_a100sxm80_1x8_nvswitch_blog-thanos_1.txt", kind: KindNCCLTests,
		runs: []wantRun{
			{"all_reduce", 8, 30, 232.44, 66.2058}, // -g 8 run, 4294967296 row
			{"all_reduce", 8, 30, 232.81, 72.7724}, // mpirun -np 8 run, 4294967296 row after the interleaved help message
		},
		check: func(t *testing.T, a *Artifact) {
			// "8 more processes have sent help message ..." lines 67 and 97 sit inside the second table
			if len(a.Skipped) != 2 || a.Skipped[0].Line != 67 || a.Skipped[1].Line != 97 {
				t.Errorf("skipped = %+v, want lines 67 and 97", a.Skipped)
			}
		}},
	{file: "nccltests_h100sxm_1x4_nvlink_snellius_1.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_reduce", 4, 26, 323.99, 67.3623}}, // 134217728 row: 323.99
		findings: []string{"info:no-nvls"},                          // 4-GPU NVLink mesh: expected
		check: func(t *testing.T, a *Artifact) {
			l := a.Log
			// "24 coll channels, 24 collnet channels, 0 nvls channels", "via P2P/direct pointer"
			if l.Channels != 24 || l.NVLSChannels != 0 || len(l.Rings) != 24 || l.LocalRanks != 4 {
				t.Errorf("channels %d nvls %d rings %d local %d", l.Channels, l.NVLSChannels, len(l.Rings), l.LocalRanks)
			}
			for _, c := range l.Connections {
				if c.Transport != "P2P" || c.Detail != "direct pointer" {
					t.Fatalf("connection %+v, want P2P/direct pointer", c)
				}
			}
		}},
	{file: "nccltests_h100sxm_1x4_nvlink_snellius_allgather_2.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_gather", 4, 26, 305.29, 53.979}}, // 134217728 row: 305.29; 4 rows of size 0 included
		findings: []string{"info:no-nvls"}},
	{file: "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt", kind: KindNCCLTests,
		runs: []wantRun{ // 17179869184 rows; dtype double
			{"all_reduce", 8, 10, 482.27, 437.957},
			{"all_gather", 8, 10, 361.86, 328.618},
			{"reduce_scatter", 8, 10, 364.76, 330.721},
			{"alltoall", 8, 10, 348.03, 313.838},
			{"sendrecv", 8, 10, 367.25, 279.874},
		},
		check: func(t *testing.T, a *Artifact) {
			r := a.Runs[0]
			// "# nccl-tests version 2.17.8 nccl-headers=22902 nccl-library=22902"
			if r.TestsVersion != "2.17.8" || r.NCCLVersion != "2.29.2" || r.DType != "double" || r.DTypeSize != 8 {
				t.Errorf("versions %q %q dtype %q/%d", r.TestsVersion, r.NCCLVersion, r.DType, r.DTypeSize)
			}
			if !strings.HasPrefix(r.Params["note"], "Reducing maxBytes") || r.Params["maxBytes"] != "68719476736" {
				t.Errorf("params = %v", r.Params)
			}
			// alltoall in-place #wrong is N/A: Wrong -1
			if w := a.Runs[3].Rows[0].IP.Wrong; w != -1 {
				t.Errorf("alltoall in-place wrong = %d, want -1 (N/A)", w)
			}
		}},
	{file: "nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_reduce", 2, 13, 15.18, 15.0418}}, // 3221225472 row: 15.18
		findings: []string{"warning:net-without-gdr"},
		check: func(t *testing.T, a *Artifact) {
			l := a.Log
			if l.GDR == nil || *l.GDR || l.RingGDR == nil || *l.RingGDR || l.Env["NCCL_IB_HCA"] != "mlx5_5" || l.Env["NCCL_ALGO"] != "RING" {
				t.Errorf("GDR %v ring GDR %v env %v", l.GDR, l.RingGDR, l.Env)
			}
			if l.Enabled["AllReduce"]["Ring"] != 1 || l.Enabled["AllReduce"]["Tree"] != 0 || l.Enabled["AllReduce"]["LL128"] != 2 {
				t.Errorf("enabled = %v", l.Enabled["AllReduce"])
			}
			if r := a.Runs[0]; r.Params["step"] != "2147483648(bytes)" {
				t.Errorf("step = %q", r.Params["step"])
			}
		}},
	{file: "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_reduce", 8, 31, 156.14, 48.8121}}, // 8589934592 row: 156.14
		findings: []string{"info:no-nvls"},
		check: func(t *testing.T, a *Artifact) {
			// The 2 MB row starts on line 334, where a log line cuts it, and
			// continues on line 396: 87.18 24.05 42.10 0 85.11 24.64 43.12 0.
			var row *Row
			for i := range a.Runs[0].Rows {
				if a.Runs[0].Rows[i].Size == 2097152 {
					row = &a.Runs[0].Rows[i]
				}
			}
			if row == nil {
				t.Fatal("2 MB row missing")
			}
			if row.Line != 334 || row.OOP.TimeUs != 87.18 || row.OOP.BusBW != 42.10 || row.IP.BusBW != 43.12 || row.IP.AlgBW != 24.64 {
				t.Errorf("2 MB row = %+v", *row)
			}
			l := a.Log
			if len(l.HCAs) != 5 || l.HCAs[0].LinkLayer != "RoCE" || l.HCAs[1].LinkLayer != "IB" || l.Nodes != 2 || l.LocalRanks != 4 {
				t.Errorf("HCAs %+v nodes %d local %d", l.HCAs, l.Nodes, l.LocalRanks)
			}
			pxn := false
			for _, c := range l.Connections {
				if c.Detail == "IB/2(0)/GDRDMA" {
					if d, ok := c.NetDevice(); !ok || d != 2 {
						t.Errorf("PXN NET device = %d %v, want 2", d, ok)
					}
					pxn = true
				}
			}
			if !pxn {
				t.Error("no PXN connection NET/IB/2(0)/GDRDMA")
			}
		}},
	{file: "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_gather", 8, 31, 97.65, 35.9967}}, // 8589934592 row: 97.65
		findings: []string{"info:no-nvls"}},
	// nccl-tests#309 (held-out corpus): H100 8-GPU nodes on IB 400G.
	{file: "nccltests_h100sxm_2x8_ib-ndr400x8_ncclTests309_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 32, 469.21, 139.56}}}, // 17179869184 row: 469.21; MPI help lines inside the device list
	{file: "nccltests_h100sxm_4x8_ib-ndr400x8-vm_ncclTests309_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 32, 32, 365.84, 107.51}}}, // 17179869184 row: 365.84
	{file: "nccltests_h100sxm_2x8_ib-ndr400_ncclTests309-aion_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 14, 466.73, 276.999}}}, // 8589934592 row: 466.73; collective inferred (no command)
	{file: "nccltests_h100sxm_4x8_ib-ndr400_ncclTests309-aion_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 32, 14, 324.99, 191.212}}}, // 4294967296 row: 324.99
	{file: "nccltests_h100sxm_8x8_ib-ndr400_ncclTests309-aion_1.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_reduce", 64, 14, 320.70, 183.055}}, // 8589934592 row: 320.70
		findings: []string{"warning:bandwidth-cliff"}},               // 40.52 GB/s at 4M, 12.98 at 8M (in-place 51.38)
	{file: "nccltests_h100sxm_8x8_ib-ndr400-ctas24-qps2_ncclTests309-aion_1.txt", kind: KindNCCLTests,
		runs:     []wantRun{{"all_reduce", 64, 14, 391.37, 192.573}}, // 8589934592 row: 391.37
		findings: []string{"warning:bandwidth-cliff"}},               // 45.64 GB/s at 4M, 18.58 at 8M (in-place 42.24)
	{file: "nccltests_h100sxm_2x8_ib-ndr400-ring-ctas24-qps2_ncclTests309-aion_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 14, 392.69, 248.186}}}, // 8589934592 row: 392.69; command split over two lines
	{file: "nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt", kind: KindNCCLTests,
		runs: []wantRun{
			{"all_reduce", 2, 28, 4.00, 2.05774},
			{"all_gather", 2, 28, 3.79, 1.6651},
			{"broadcast", 2, 28, 11.09, 5.07658},
			{"reduce", 2, 28, 11.14, 5.23248},
			{"reduce", 1, 28, 267.37, 202818}, // single-GPU run: local copies
			{"alltoall", 2, 28, 4.61, 2.06935},
		},
		findings: []string{"warning:p2p-unavailable"}},
	{file: "nccltests_v100sxm2_1x4_nvlink_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 4, 24, 112.52, 18.8014}}}, // 33554432 row: 112.52
	{file: "nccltests_v100sxm2_2x4_ib-edr100x2_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 8, 24, 19.77, 4.85188}}}, // 33554432 row: 19.77
	{file: "nccltests_v100sxm2_4x4_ib-edr100x2_abci_1.txt", kind: KindNCCLTests,
		runs: []wantRun{{"all_reduce", 16, 24, 19.93, 4.25971}}}, // 33554432 row: 19.93
	{file: "nccltests_v100sxm3_2x1_tcp-socket_bcm-manual_1.txt", kind: KindNCCLTests,
		// ranks from the one device line (rank 1) and busbw/algbw = 1 -> n = 2
		runs:     []wantRun{{"all_reduce", 2, 13, 0.96, 0.810575}}, // 16777216 row: 0.96
		findings: []string{"warning:bandwidth-cliff", "warning:socket-instead-of-ib"},
		check: func(t *testing.T, a *Artifact) {
			if len(a.Skipped) != 1 || a.Skipped[0].Line != 99 || !strings.Contains(a.Skipped[0].Text, "Workload Management") {
				t.Errorf("skipped = %+v, want the page-break line 99", a.Skipped)
			}
			if r := a.Runs[0]; len(r.Devices) != 1 || r.Devices[0].Rank != 1 || r.Rows[0].OOP.MaxErr != 0 || r.Rows[0].OOP.Wrong != -1 {
				t.Errorf("devices %+v row0 %+v", r.Devices, r.Rows[0])
			}
		}},
	{file: "nvbandwidth_h800_1x8_nvswitch-400GBps_cn-readme.txt", kind: KindNVBandwidth,
		check: func(t *testing.T, a *Artifact) {
			if len(a.Matrices) != 7 || a.Machine["gpus"] != "8x NVIDIA H800" || a.Machine["sum:device_to_device_memcpy_read_ce"] != "9643.22" {
				t.Fatalf("matrices %d machine %v", len(a.Matrices), a.Machine)
			}
			h2d := a.Matrices[0]
			if h2d.Path != "h2d" || h2d.Metric != "bandwidth-uni" || len(h2d.Rows) != 1 || h2d.Values[0][0] != 55.28 {
				t.Errorf("h2d = %+v", h2d)
			}
			d2d := a.Matrices[4]
			if d2d.Path != "d2d" || !math.IsNaN(d2d.Values[0][0]) || d2d.Values[0][1] != 172.16 || d2d.Values[7][5] != 172.57 {
				t.Errorf("d2d read = %v", d2d.Values[0])
			}
			if a.Matrices[6].Metric != "bandwidth-bidi" {
				t.Errorf("matrix 7 metric %q", a.Matrices[6].Metric)
			}
		}},
	{file: "p2pbw_a100sxm80_1x8_nvswitch_distserve3.txt", kind: KindP2PBandwidth,
		check: func(t *testing.T, a *Artifact) {
			// connectivity, 4 bandwidth matrices, 2 latency sections of GPU + CPU
			if len(a.Matrices) != 9 {
				t.Fatalf("matrices = %d, want 9", len(a.Matrices))
			}
			uni := a.Matrices[2] // Unidirectional P2P=Enabled: row 0 "1528.86 268.94"
			if uni.Metric != "bandwidth-uni" || uni.P2P == nil || !*uni.P2P || uni.Values[0][1] != 268.94 {
				t.Errorf("uni enabled = %s %v %v", uni.Metric, uni.P2P, uni.Values[0])
			}
			bidi := a.Matrices[4] // Bidirectional P2P=Enabled: row 4 col 5 517.80
			if bidi.Metric != "bandwidth-bidi" || bidi.Values[4][5] != 517.80 {
				t.Errorf("bidi enabled [4][5] = %v", bidi.Values[4][5])
			}
			cpu := a.Matrices[6] // P2P=Disabled Latency, CPU part: row 0 col 1 7.27 us
			if cpu.Metric != "latency" || cpu.Path != "cpu" || cpu.Unit != "us" || cpu.Values[0][1] != 7.27 {
				t.Errorf("cpu latency = %+v", cpu)
			}
		}},
	{file: "p2pbw_rtx2080ti_1x2_pcie-nop2p_autodl.txt", kind: KindP2PBandwidth,
		findings: []string{"warning:p2p-unavailable"}, // "Device=0 CANNOT Access Peer Device=1"
		check: func(t *testing.T, a *Artifact) {
			if c := a.Matrices[0]; c.Metric != "p2p-connectivity" || c.Values[0][1] != 0 {
				t.Errorf("connectivity = %v", c.Values)
			}
			if u := a.Matrices[2]; u.Values[0][1] != 5.72 { // P2P=Enabled writes, still 5.72 GB/s
				t.Errorf("uni enabled [0][1] = %v", u.Values[0][1])
			}
		}},
	{file: "summary_maintainer_and_user_statements.txt", kind: KindSummary,
		check: func(t *testing.T, a *Artifact) {
			if len(a.Figures) != 22 {
				t.Errorf("figures = %d, want 22", len(a.Figures))
			}
			want := map[string]float64{ // section prefix -> a figure in GB/s it quotes
				"NVIDIA/nccl-tests#212": 480, "NVIDIA/nccl#1576": 192, "NVIDIA/nccl-tests#290": 50, // 400Gbps
				"deepseek-ai/DeepEP#13": 193, "oracle-quickstart/oci-hpc#48": 390,
			}
			for sec, v := range want {
				ok := false
				for _, f := range a.Figures {
					ok = ok || (strings.HasPrefix(f.Section, sec) && f.GBps == v)
				}
				if !ok {
					t.Errorf("no %g GB/s figure under %s", v, sec)
				}
			}
		}},
	{file: "topo_a100pcie40_r7525_1x2_hdr-sys_ncclTests293.txt", kind: KindTopoMatrix,
		findings: []string{"warning:nic-far-from-gpu"}, // every GPU-NIC cell is SYS
		check:    topoCheck(2, 1, "none", "", 3)},      // SYS between the GPUs despite the same NUMA node: 3 domains
	{file: "topo_a100sxm40_aws-p4d24xl_1x8_nvswitch_trainingoneks.txt", kind: KindTopoMatrix,
		check: topoCheck(8, 0, "nvswitch", "A100-SXM4", 2)}, // NV12 everywhere; NUMA 0 and 1
	{file: "topo_a100sxm40_hgx4_nv4_hdr200x2_nccl595.txt", kind: KindTopoMatrix,
		check: topoCheck(4, 2, "pairs", "", 4)}, // NV4 mesh; NUMA 1, 0, 3, 2; tab separated
	{file: "topo_a100sxm80_1x8_nvswitch_distserve3.txt", kind: KindTopoMatrix,
		findings: []string{"warning:nic-far-from-gpu"},
		check:    topoCheck(8, 4, "nvswitch", "A100-SXM4", 4)}, // NIC pairs are SYS to every GPU: two more domains
	{file: "topo_a100sxm80_hgx8_roce100x8_deepep13.txt", kind: KindTopoMatrix,
		check: topoCheck(8, 8, "nvswitch", "A100-SXM4", 2)},
	{file: "topo_h100sxm_aws-p5-48xl_1x8_nvswitch_trainingoneks.txt", kind: KindTopoMatrix,
		check: topoCheck(8, 0, "nvswitch", "", 2)}, // NV18 fits H100, H200, B200: not inferred
	{file: "topo_l40s_aws-g6e12xl_1x4_pcie-node_trainingoneks.txt", kind: KindTopoMatrix,
		check: topoCheck(4, 0, "none", "", 1)},
	{file: "topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt", kind: KindTopoMatrix,
		findings: []string{"warning:p2p-unavailable"}, // nvidia-smi topo -p2p p: NS
		check: func(t *testing.T, a *Artifact) {
			topoCheck(2, 0, "none", "", 1)(t, a)
			if got := bridgeShape(a.Topo.Node.Sockets[0].HostBridges[0]); got != "[sw[GPU0 GPU1]]" {
				t.Errorf("PCIe tree = %s, want both GPUs on one switch (PIX)", got)
			}
		}},
}

// topoCheck checks GPU and NIC counts, the NVLink kind, the inferred GPU
// model and the number of sockets (NUMA domains), and that the layout
// reproduces the printed PCIe path types and validates once completed.
func topoCheck(gpus, nics int, nvlink, gpu string, sockets int) func(t *testing.T, a *Artifact) {
	return func(t *testing.T, a *Artifact) {
		t.Helper()
		n := a.Topo.Node
		if n.GPUs != gpus || n.NICs.Count != nics || n.NVLink.Kind != nvlink || n.GPU != gpu || len(n.Sockets) != sockets {
			t.Errorf("node: %d GPUs, %d NICs, nvlink %q, gpu %q, %d sockets; want %d, %d, %q, %q, %d",
				n.GPUs, n.NICs.Count, n.NVLink.Kind, n.GPU, len(n.Sockets), gpus, nics, nvlink, gpu, sockets)
		}
		checkRoundTrip(t, a.Topo)
		g := gpu
		if g == "" {
			switch nvlink { // a GPU with enough NVLinks for the layout
			case "none":
				g = "L40S"
			case "nvswitch":
				g = "H100-SXM"
			default:
				g = "A100-SXM4"
			}
		}
		if _, err := a.Topo.NodeSpec(g, "HDR", model.NICIB); err != nil {
			t.Errorf("NodeSpec: %v", err)
		}
	}
}

// checkRoundTrip compares the PCIe path types the layout implies with the
// ones the file printed (cells that are not NV#).
func checkRoundTrip(t *testing.T, ti *TopoInfo) {
	t.Helper()
	_, m := specMatrix(&ti.Node)
	for i := range ti.Matrix {
		for j := range ti.Matrix[i] {
			want := ti.Matrix[i][j]
			if pathLevel(want) == 0 {
				continue
			}
			if m[i][j] != want {
				t.Errorf("%s-%s: layout gives %s, file says %s", ti.Labels[i], ti.Labels[j], m[i][j], want)
			}
		}
	}
}

func bridgeShape(b model.BridgeSpec) string {
	var p []string
	for _, g := range b.GPUs {
		p = append(p, "GPU"+itoa(g))
	}
	for _, n := range b.NICs {
		p = append(p, "NIC"+itoa(n))
	}
	for _, s := range b.Switches {
		p = append(p, "sw"+bridgeShape(s))
	}
	return "[" + strings.Join(p, " ") + "]"
}

func findingSet(fs []Finding) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range fs {
		k := f.Severity + ":" + f.Code
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func TestRawCorpus(t *testing.T) {
	for _, tc := range rawCases {
		t.Run(tc.file, func(t *testing.T) {
			a, err := ParseFile(filepath.Join(rawDir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if a.Kind != tc.kind {
				t.Fatalf("kind = %s, want %s", a.Kind, tc.kind)
			}
			if len(a.Runs) != len(tc.runs) {
				t.Fatalf("runs = %d, want %d", len(a.Runs), len(tc.runs))
			}
			for i, w := range tc.runs {
				r := a.Runs[i]
				peak := 0.0
				for _, row := range r.Rows {
					peak = math.Max(peak, row.OOP.BusBW)
				}
				if r.CollectiveName != w.coll || r.Ranks != w.ranks || len(r.Rows) != w.rows ||
					math.Abs(peak-w.peak) > 1e-9 || math.Abs(r.AvgBusBW-w.avg) > 1e-9 {
					t.Errorf("run %d: %s, %d ranks, %d rows, peak %g, avg %g; want %s, %d, %d, %g, %g",
						i, r.CollectiveName, r.Ranks, len(r.Rows), peak, r.AvgBusBW, w.coll, w.ranks, w.rows, w.peak, w.avg)
				}
				if r.OutOfBounds != 0 {
					t.Errorf("run %d: out of bounds = %d, want 0", i, r.OutOfBounds)
				}
			}
			got := findingSet(a.Findings)
			want := append([]string(nil), tc.findings...)
			sort.Strings(want)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("findings = %v, want %v", got, want)
				for _, f := range a.Findings {
					t.Logf("  %s %s line %d: %s | %s", f.Severity, f.Code, f.Line, f.Message, f.Evidence)
				}
			}
			for _, f := range a.Findings {
				if f.Code == FindP2PUnavailable || f.Code == FindNICFarFromGPU || f.Severity == SevInfo {
					continue
				}
				if f.Line <= 0 {
					t.Errorf("finding %s has no line", f.Code)
				}
			}
			if tc.check != nil {
				tc.check(t, a)
			}
		})
	}
}

// TestRawCorpusComplete checks that the table names every file of the corpus
// and that the testdata copy is identical to shared/data/raw.
func TestRawCorpusComplete(t *testing.T) {
	named := map[string]bool{}
	for _, tc := range rawCases {
		named[tc.file] = true
	}
	copies, err := os.ReadDir(rawDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range copies {
		if e.Name() != "MANIFEST.md" && !named[e.Name()] {
			t.Errorf("%s/%s is not in rawCases", rawDir, e.Name())
		}
	}
	shared, err := os.ReadDir(sharedRawDir)
	if err != nil {
		t.Skipf("%s is not present (CI clones only the repository); the testdata copy was checked", sharedRawDir)
	}
	for _, e := range shared {
		if !named[e.Name()] {
			t.Errorf("%s/%s is not in rawCases", sharedRawDir, e.Name())
			continue
		}
		a, err1 := os.ReadFile(filepath.Join(sharedRawDir, e.Name()))
		b, err2 := os.ReadFile(filepath.Join(rawDir, e.Name()))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: testdata copy differs from %s (%v, %v)", e.Name(), sharedRawDir, err1, err2)
		}
	}
}

// TestInferP2PCollectives: a table whose file names no test binary (older
// nccl-tests, or a pasted table) is read from its columns. AlltoAll and
// SendRecv leave their in-place results unchecked (#wrong N/A in place, a
// count out of place), SendRecv prints "sum" and root -1 with busbw equal
// to algbw: the xxrjun file's AlltoAll and SendRecv tables, cut without
// their "Collective test starting" lines, read as those collectives, not
// as AllGather and AllReduce. A 2-rank AllReduce (busbw = algbw too)
// stays AllReduce, and a table checked in place with busbw = algbw on 8
// ranks is SendRecv.
func TestInferP2PCollectives(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "raw", "nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	header := text[:strings.Index(text, "# Collective test starting")]
	table := func(name string) string {
		i := strings.Index(text, "# Collective test starting: "+name)
		j := strings.Index(text[i:], "# Collective test concluded")
		body := text[i:][:j]
		return body[strings.Index(body, "\n")+1:]
	}
	parse := func(t *testing.T, s string) *Run {
		t.Helper()
		a, err := Parse("cut.txt", strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Runs) != 1 {
			t.Fatalf("%d runs", len(a.Runs))
		}
		return a.Runs[0]
	}
	for _, tc := range []struct {
		name string
		want model.Collective
	}{
		{"alltoall_perf", model.AlltoAll}, {"sendrecv_perf", model.SendRecv},
		{"all_gather_perf", model.AllGather}, {"all_reduce_perf", model.AllReduce}, {"reduce_scatter_perf", model.ReduceScatter},
	} {
		r := parse(t, header+table(tc.name))
		if r.Collective != tc.want || r.Params["collective"] == "" || r.Ranks != 8 {
			t.Errorf("%s without its name: read as %s on %d ranks (inferred: %q), want %s on 8", tc.name, r.Collective, r.Ranks, r.Params["collective"], tc.want)
		}
	}
	// SendRecv checked in place (as a -c 1 build that checks it would
	// print): busbw = algbw on 8 ranks still says SendRecv.
	sr := strings.ReplaceAll(table("sendrecv_perf"), "N/A", "  0")
	if r := parse(t, header+sr); r.Collective != model.SendRecv {
		t.Errorf("SendRecv with in-place counts: read as %s", r.Collective)
	}
	// A 2-rank AllReduce has busbw = algbw: it stays AllReduce.
	two, err := os.ReadFile(filepath.Join("testdata", "raw", "nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(two)
	s = s[strings.Index(s, "\n")+1:] // the shell line naming ./build/all_reduce_perf
	s = s[:strings.Index(s, "root@")]
	if r := parse(t, s); r.Collective != model.AllReduce || r.Ranks != 2 {
		t.Errorf("the 2-GPU AllReduce without its name: read as %s on %d ranks", r.Collective, r.Ranks)
	}
}

// TestLauncherPrefixesAndTabs: the 2-node H100 nccl-tests file reads the
// same (rows, ranks, NCCL version, average busbw, parameters) when Intel
// MPI or MPICH -l prefixed every line with "[rank] ", and when a copy
// turned the spaces of its comment and version lines into tabs.
func TestLauncherPrefixesAndTabs(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(rawDir, "nccltests_h100sxm_2x8_ib-ndr400x8_ncclTests309_1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse("orig.txt", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	w := want.Runs[0]
	lines := strings.Split(string(raw), "\n")
	prefixed := make([]string, len(lines))
	tabbed := make([]string, len(lines))
	for i, l := range lines {
		prefixed[i] = "[0] " + l
		tabbed[i] = l
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "#") || strings.HasPrefix(t, "NCCL version") {
			tabbed[i] = strings.Join(strings.Fields(l), "\t")
		}
	}
	for name, text := range map[string]string{"[0] prefix": strings.Join(prefixed, "\n"), "tabs": strings.Join(tabbed, "\n")} {
		a, err := Parse("copy.txt", strings.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(a.Runs) != 1 {
			t.Errorf("%s: %d runs", name, len(a.Runs))
			continue
		}
		g := a.Runs[0]
		if len(g.Rows) != len(w.Rows) || g.Ranks != w.Ranks || g.NCCLVersion != w.NCCLVersion || g.AvgBusBW != w.AvgBusBW || g.Params["nThread"] != w.Params["nThread"] || g.Collective != w.Collective {
			t.Errorf("%s: %d rows, %d ranks, NCCL %q, avg %g, nThread %q, %s; the original %d, %d, %q, %g, %q, %s", name,
				len(g.Rows), g.Ranks, g.NCCLVersion, g.AvgBusBW, g.Params["nThread"], g.Collective,
				len(w.Rows), w.Ranks, w.NCCLVersion, w.AvgBusBW, w.Params["nThread"], w.Collective)
		}
	}
}
