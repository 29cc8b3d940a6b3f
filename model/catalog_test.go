package model

import (
	"math"
	"strings"
	"testing"
)

func TestLookupGPU(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"H100-SXM", "H100-SXM"},
		{"h100-sxm", "H100-SXM"},
		{"NVIDIA H100 80GB HBM3", "H100-SXM"},        // nccl-tests device line in nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt
		{"Tesla V100-SXM2-16GB", "V100-SXM2"},        // ABCI files
		{"A100-SXM4-40GB", "A100-SXM4"},              // ABCI A files
		{"NVIDIA GeForce RTX 2080 Ti", "RTX-2080TI"}, // autodl files
		{"A100-PCIE-40GB", "A100-PCIE"},              // nccl-tests#293
	}
	for _, tc := range tests {
		g, err := LookupGPU(tc.in)
		if err != nil || g.Name != tc.want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", tc.in, g.Name, err, tc.want)
		}
	}
	_, err := LookupGPU("H1000")
	if err == nil || !strings.Contains(err.Error(), "known: V100-SXM2, A100-SXM4") {
		t.Errorf("unknown GPU error should list the catalog, got %v", err)
	}
	for _, name := range []string{"V100-SXM2", "A100-SXM4", "A100-PCIE", "H100-SXM", "H100-PCIE", "H200-SXM", "H800-SXM", "B200", "GB200", "L40S", "RTX-4090", "RTX-2080TI"} {
		if _, err := LookupGPU(name); err != nil {
			t.Errorf("catalog is missing %s: %v", name, err)
		}
	}
}

func TestMatchGPU(t *testing.T) {
	g, ok := MatchGPU("NVIDIA A100-SXM4-80GB extra words")
	if !ok || g.Name != "A100-SXM4" {
		t.Fatalf("MatchGPU = %v %v", g.Name, ok)
	}
	if _, ok := MatchGPU("Radeon MI300X"); ok {
		t.Fatal("MatchGPU matched a non-NVIDIA part")
	}
}

func TestNVLinkPerGPU(t *testing.T) {
	// Per-GPU one-way NVLink line rate: V100 150, A100 300, H100 450, B200 900 GB/s (nccl-facts §8).
	want := map[string]GBps{"V100-SXM2": 150, "A100-SXM4": 300, "H100-SXM": 450, "B200": 900, "H800-SXM": 200}
	for name, w := range want {
		g, _ := LookupGPU(name)
		nv, err := LookupNVLink(g.NVLinkGen)
		if err != nil {
			t.Fatal(err)
		}
		if got := nv.LineGBps * GBps(g.NVLinkLinks); math.Abs(float64(got-w)) > 1e-9 {
			t.Errorf("%s NVLink = %v, want %v", name, got, w)
		}
	}
}

func TestPCIeBandwidth(t *testing.T) {
	// NCCL models x16 as 12/24/48/96 GB/s for Gen3..6 (nccl-facts §3.3).
	for gen, want := range map[int]GBps{3: 12, 4: 24, 5: 48, 6: 96} {
		_, nccl, err := PCIeBandwidth(gen, 16)
		if err != nil || nccl != want {
			t.Errorf("Gen%d x16 NCCL bw = %v %v, want %v", gen, nccl, err, want)
		}
	}
	if _, nccl, _ := PCIeBandwidth(4, 8); nccl != 12 {
		t.Errorf("Gen4 x8 = %v, want 12", nccl)
	}
	if _, _, err := PCIeBandwidth(7, 16); err == nil {
		t.Error("Gen7 accepted")
	}
	if _, _, err := PCIeBandwidth(4, 3); err == nil {
		t.Error("x3 accepted")
	}
}

func TestPCIeGenOfSpeed(t *testing.T) {
	// Forms as Linux sysfs prints them ("%s PCIe" after the rate, or a bare
	// rate) and as NCCL copies them into its topology XML link_speed; the
	// nominal per-lane rates are 2.5, 5, 8, 16, 32 and 64 GT/s for Gen1..6.
	speeds := map[string]int{
		"32.0 GT/s PCIe": 5, "16 GT/s": 4, "8.0 GT/s PCIe": 3, "64.0 GT/s PCIe": 6,
		"5.0 GT/s PCIe": 2, "2.5 GT/s PCIe": 1, "16.0 GT/s PCIe": 4,
		"1.0 GT/s": 0, "Unknown": 0, "Unknown speed": 0, "": 0,
	}
	for in, want := range speeds {
		if got := PCIeGenOfSpeed(in); got != want {
			t.Errorf("PCIeGenOfSpeed(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestNICSpeeds(t *testing.T) {
	tests := []struct {
		name string
		kind NICKind
		gbps int
		ok   bool
	}{
		{"NDR", NICIB, 400, true},
		{"400G", NICIB, 400, true},
		{"400", NICRoCE, 400, true},
		{"NDR200", NICIB, 200, true},
		{"HDR", NICIB, 200, true},
		{"10G", NICTCP, 10, true},
		{"10G", NICIB, 0, false}, // no 10G InfiniBand in the catalog
		{"999G", NICIB, 0, false},
		{"100G", NICEFA, 100, true},
	}
	for _, tc := range tests {
		s, err := LookupNICSpeed(tc.name, tc.kind)
		if (err == nil) != tc.ok || (tc.ok && s.Gbps != tc.gbps) {
			t.Errorf("LookupNICSpeed(%q,%s) = %v, %v", tc.name, tc.kind, s.Gbps, err)
		}
		if !tc.ok && err != nil && !strings.Contains(err.Error(), "known:") {
			t.Errorf("error does not list known speeds: %v", err)
		}
	}
	s, _ := LookupNICSpeed("NDR", NICIB)
	if s.LineGBps() != 50 { // NCCL: speed in Mb/s / 8000 (nccl-facts §3.3)
		t.Errorf("NDR = %v GB/s, want 50", s.LineGBps())
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want Bytes
		ok   bool
	}{
		{"8", 8, true}, {"1K", 1024, true}, {"64k", 65536, true}, {"1M", 1 << 20, true},
		{"8G", 8 << 30, true}, {"1T", 1 << 40, true}, {"1MiB", 1 << 20, true}, {"16B", 16, true},
		{"", 0, false}, {"-1", 0, false}, {"1X", 0, false}, {"99999999999G", 0, false}, {"1.5M", 0, false},
	}
	for _, tc := range tests {
		got, err := ParseBytes(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, b := range []Bytes{8, 1024, 1 << 20, 3 << 30, 1000} {
		back, err := ParseBytes(FormatBytes(b))
		if err != nil || back != b {
			t.Errorf("FormatBytes round trip %d -> %s -> %d", b, FormatBytes(b), back)
		}
	}
}

func TestTransferTime(t *testing.T) {
	// 1 GB at 100 GB/s is 10 ms.
	if got := TransferTime(1e9, 100); got != 10*Millisecond {
		t.Errorf("TransferTime = %v", got)
	}
	if TransferTime(0, 1) != 0 {
		t.Error("zero bytes take time")
	}
}

func TestBusBWFactor(t *testing.T) {
	// nccl-tests doc/PERFORMANCE.md: 2(n-1)/n, (n-1)/n, 1.
	if f := AllReduce.BusBWFactor(8); math.Abs(f-1.75) > 1e-12 {
		t.Errorf("allreduce 8 = %v", f)
	}
	if f := AllGather.BusBWFactor(4); math.Abs(f-0.75) > 1e-12 {
		t.Errorf("allgather 4 = %v", f)
	}
	if f := Broadcast.BusBWFactor(16); f != 1 {
		t.Errorf("broadcast = %v", f)
	}
	// AllGather per-rank count is rounded to 16 bytes; size = count*n*elem.
	size, count := AllGather.TestSize(1000, 4, 8)
	if count != 28 || size != 896 {
		t.Errorf("TestSize = %d, %d; want 896, 28", size, count)
	}
}

func TestParseCollective(t *testing.T) {
	for in, want := range map[string]Collective{"allreduce": AllReduce, "all_reduce_perf": AllReduce, "all_gather_perf_mpi": AllGather, "ReduceScatter": ReduceScatter, "alltoall": AlltoAll} {
		if got, err := ParseCollective(in); err != nil || got != want {
			t.Errorf("ParseCollective(%q) = %v %v", in, got, err)
		}
	}
	if _, err := ParseCollective("allscatter"); err == nil {
		t.Error("bogus collective accepted")
	}
}
