package hwbench

import (
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func TestSweepSizes(t *testing.T) {
	tests := []struct {
		name          string
		min, max      model.Bytes
		factor, count int
		last          model.Bytes
	}{
		// nccl-tests -b 8 -e 128M -f 2: 8, 16, ..., 2^27 = 25 sizes.
		{"8B to 128M by 2", 8, 128 * model.MiB, 2, 25, 128 * model.MiB},
		{"one size", model.MiB, model.MiB, 2, 1, model.MiB},
		{"max not on the grid", 1, 100, 4, 4, 64}, // 1, 4, 16, 64
		{"factor 1 refused", 8, 64, 1, 0, 0},
		{"min 0 refused", 0, 64, 2, 0, 0},
		{"max below min", 64, 8, 2, 0, 0},
		{"no overflow near the top", 1 << 61, 1<<63 - 1, 2, 2, 1 << 62},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := SweepSizes(tc.min, tc.max, tc.factor)
			if len(got) != tc.count {
				t.Fatalf("SweepSizes = %v (%d sizes), want %d", got, len(got), tc.count)
			}
			if tc.count > 0 && got[len(got)-1] != tc.last {
				t.Errorf("last size %d, want %d", got[len(got)-1], tc.last)
			}
		})
	}
}

func TestFitNum(t *testing.T) {
	// nccl-tests prints time in 7 and bandwidth in 6 characters, with 2, 1
	// or 0 decimals, then %.1e (nccl-facts §1.3); these mirror values in
	// shared/data nccl-tests files ("15668.1", "182.87", "0.00").
	tests := []struct {
		v     float64
		width int
		want  string
	}{
		{182.87, 7, "182.87"},
		{15668.123, 7, "15668.1"},
		{156681.2, 7, "156681"},
		{12345678, 7, "1.2e+07"},
		{0.004, 6, "0.00"},
		{481.39, 6, "481.39"},
		{1234.5, 6, "1234.5"},
		{math.NaN(), 6, "nan"},
	}
	for _, tc := range tests {
		if got := fitNum(tc.v, tc.width); got != tc.want {
			t.Errorf("fitNum(%v, %d) = %q, want %q", tc.v, tc.width, got, tc.want)
		}
	}
}

// TestNCCLTestsLayout checks the text against nccl-tests' own bytes: the
// three header lines are those of nccl-tests 2.17/2.18 output (shared/data
// nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt), and a data line built from
// the values of a 2.18.2 line lands every column where nccl-tests puts it.
func TestNCCLTestsLayout(t *testing.T) {
	res := &NCCLResult{
		Mode: "multi-process", Ranks: 2, MinBytes: 1048576, MaxBytes: 1048576, StepFactor: 2, Iters: 20, Warmup: 1, DType: "float",
		Devices: []NCCLDevice{{Rank: 0, Host: "nid007106", Pid: 15784, Device: 0, BusID: "0009:01:00.0", Name: "NVIDIA GH200 120GB"}},
		Sweeps: []Sweep{{Collective: "allreduce", Test: "all_reduce_perf", Redop: "sum", Root: -1, Wrong: -1, AvgBusBW: 3.105,
			Rows: []SweepRow{{Size: 1048576, Count: 262144,
				OOP: Timing{TimeUs: 339.61, AlgBW: 3.09, BusBW: 3.09}, IP: Timing{TimeUs: 335.85, AlgBW: 3.12, BusBW: 3.12}}}}},
	}
	res.Machine.NCCL = "2.30.7"
	var sb strings.Builder
	if err := WriteNCCLTests(&sb, res, "collsim hwbench test"); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	want := []string{
		"# Collective test starting: all_reduce_perf",
		"# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 0 graph: 0 unalign: 0",
		"#  Rank  0 Group  0 Pid  15784 on  nid007106 device  0 [0009:01:00] NVIDIA GH200 120GB",
		"#                                                              out-of-place                       in-place          ",
		"#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
		// nccl-tests 2.18.2 prints "       0" for #wrong where validation is
		// on; with validation off the same 8 characters hold "     N/A".
		"     1048576        262144     float     sum      -1   339.61    3.09    3.09     N/A   335.85    3.12    3.12     N/A",
		"# Out of bounds values : 0 OK",
		"# Avg bus bandwidth    : 3.105 ",
		"# Collective test concluded: all_reduce_perf",
	}
	lines := strings.Split(out, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			if l == w {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("output lacks line\n%q\ngot:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "NCCL version 2.30.7") {
		t.Errorf("header does not name the NCCL version:\n%s", out)
	}
}

func TestNumJSON(t *testing.T) {
	tests := []struct {
		in   Num
		want string
	}{
		{Num(math.NaN()), "null"},
		{1.23456789, "1.23457"},
		{0, "0"},
		{123456789, "123457000"}, // six significant digits
	}
	for _, tc := range tests {
		b, err := tc.in.MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("MarshalJSON(%v) = %s, %v; want %s", float64(tc.in), b, err, tc.want)
		}
	}
	var n Num
	if err := n.UnmarshalJSON([]byte("null")); err != nil || !math.IsNaN(float64(n)) {
		t.Errorf("null -> %v, %v; want NaN", n, err)
	}
}

func TestRanksFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		ok      bool
		rank, n int
		source  string
		wantErr bool
	}{
		{"none", nil, false, 0, 0, "", false},
		{"slurm", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "8"}, true, 3, 8, "SLURM", false},
		{"open mpi", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, true, 1, 2, "Open MPI", false},
		{"slurm wins", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}, true, 0, 4, "SLURM", false},
		{"salloc shell: size without rank", map[string]string{"SLURM_NTASKS": "8"}, false, 0, 0, "", false},
		{"rank out of range", map[string]string{"SLURM_PROCID": "4", "SLURM_NTASKS": "4"}, false, 0, 0, "", true},
		{"garbage", map[string]string{"OMPI_COMM_WORLD_RANK": "x", "OMPI_COMM_WORLD_SIZE": "2"}, false, 0, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ri, ok, err := RanksFromEnv(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr || ok != tc.ok || ri.Rank != tc.rank || ri.NRanks != tc.n || ri.Source != tc.source {
				t.Errorf("RanksFromEnv = %+v, %v, %v; want rank %d of %d from %q, ok %v, error %v", ri, ok, err, tc.rank, tc.n, tc.source, tc.ok, tc.wantErr)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Options)
		want string // "" means valid
	}{
		{"defaults", func(*Options) {}, ""},
		{"unknown probe", func(o *Options) { o.Probes = []string{"topo", "bogus"} }, `unknown probe "bogus"`},
		{"duplicate probe", func(o *Options) { o.Probes = []string{"copy", "copy"} }, "given twice"},
		{"no probe", func(o *Options) { o.Probes = nil }, "no probe"},
		{"min 0", func(o *Options) { o.MinBytes = 0 }, "minbytes"},
		{"max < min", func(o *Options) { o.MinBytes, o.MaxBytes = 64, 8 }, "below minbytes"},
		{"factor 1", func(o *Options) { o.StepFactor = 1 }, "stepfactor"},
		{"iters 0", func(o *Options) { o.Iters = 0 }, "iters"},
		{"ranks without coordinator", func(o *Options) { o.Rank, o.NRanks = 0, 2 }, "--coordinator"},
		{"rank out of range", func(o *Options) { o.Rank, o.NRanks, o.Coordinator = 2, 2, "h:1" }, "not in 0..1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.mod(&o)
			err := ValidateOptions(o)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
