package ingest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// predictTable is the start of `collsim predict --node dgx-h100 --nodes 2
// -c COLL --engine analytic -b 1K` output (internal/cli/predict.go
// writeTableHeader), with rows.
func predictTable(first string, rows ...string) string {
	return first + "\n" +
		"# Cluster: 2 node(s): 16x H100-SXM, 16x NIC (NDR ib), 2x NVSwitch; 2 node(s) x 8 H100-SXM, NICs 8xNDR-ib, fabric single-switch, NCCL 2.30 model\n" +
		"#\n" +
		"#                                                                       predicted\n" +
		"#       size         count      type   redop    root     time   algbw   busbw  algo    proto   channels  engine\n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n" +
		strings.Join(rows, "\n") + "\n" +
		"# Avg bus bandwidth    : 0.5\n"
}

// TestCollsimHeader: collsim's own predict table names its binary and rank
// count on its first line; without them an alltoall table (count x element
// size below the size) read as all_gather and a sendrecv one had 0 ranks.
func TestCollsimHeader(t *testing.T) {
	cases := []struct {
		name  string
		text  string
		coll  model.Collective
		bin   string
		ranks int
	}{
		{"alltoall", predictTable("# collsim 0.1.0 prediction (engine analytic): alltoall_perf, 16 ranks",
			"        1024            16     float    none      -1    18.12    0.06    0.05  direct  ll            15  analytic",
			"        2048            32     float    none      -1    18.14    0.11    0.11  direct  ll            15  analytic",
			"        4096            64     float    none      -1    18.19    0.23    0.21  direct  ll            15  analytic"),
			model.AlltoAll, "alltoall_perf", 16},
		{"sendrecv", predictTable("# collsim 0.1.0 prediction (engine analytic): sendrecv_perf, 16 ranks",
			"        1024           256     float     sum      -1    10.10    0.10    0.10  ring    ll             2  analytic",
			"        2048           512     float     sum      -1    10.20    0.20    0.20  ring    ll             2  analytic"),
			model.SendRecv, "sendrecv_perf", 16},
		{"allreduce-streamed", predictTable("# collsim 0.2.0-dev prediction (engine des): all_reduce_perf, 64 ranks",
			"        1024           256     float     sum      -1    30.00    0.03    0.07  ring    ll             2  des"),
			model.AllReduce, "all_reduce_perf", 64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, err := parseNCCLTests(c.name+".txt", []byte(c.text))
			if err != nil {
				t.Fatal(err)
			}
			if len(a.Runs) != 1 {
				t.Fatalf("%d runs, want 1", len(a.Runs))
			}
			r := a.Runs[0]
			if r.Collective != c.coll || r.Binary != c.bin || r.Ranks != c.ranks {
				t.Errorf("got %s (%q), %d ranks; want %s (%q), %d ranks", r.CollectiveName, r.Binary, r.Ranks, c.coll.TestName(), c.bin, c.ranks)
			}
			if r.Params["collective"] != "" {
				t.Errorf("collective %q: the header names it", r.Params["collective"])
			}
			if len(r.Rows) == 0 {
				t.Error("no rows")
			}
		})
	}
}

// TestCollsimHeaderNotTable: a "# collsim" comment that is not a table's
// first line changes nothing.
func TestCollsimHeaderNotTable(t *testing.T) {
	text := "# collsim was here, 8 ranks\n" + nccltestsPreamble("all_reduce_perf") + strings.Join(tableRows(t, "pcie")[:2], "\n") + "\n"
	a, err := parseNCCLTests("x.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if r := a.Runs[0]; r.Params[statedRanksKey] != "" || r.Ranks == 8 {
		t.Errorf("ranks %d, params %v", r.Ranks, r.Params)
	}
}

func nccltestsPreamble(bin string) string {
	return "# Collective test starting: " + bin + "\n" +
		"# nThread 1 nGpus 1 minBytes 8388608 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"#\n" +
		"#                                                              out-of-place                       in-place\n" +
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
}

// tableRows are the largest rows of `collsim predict --engine analytic -b 1K
// -e 1G` for clusters whose rank count the 2-decimal busbw/algbw ratio got
// wrong, as nccl-tests rows (the out-of-place group repeated in place).
func tableRows(t *testing.T, which string) []string {
	raw := map[string][]string{
		// --node pcie-gpu-server --nodes 4 (32 ranks), allreduce: was 30.
		"pcie": {
			"8388608 2097152 float sum -1 2306.71 3.64 7.05",
			"16777216 4194304 float sum -1 4180.30 4.01 7.78",
			"33554432 8388608 float sum -1 7927.47 4.23 8.20",
			"67108864 16777216 float sum -1 15421.8 4.35 8.43",
			"134217728 33554432 float sum -1 30410.5 4.41 8.55",
			"268435456 67108864 float sum -1 60805.6 4.41 8.55",
			"536870912 134217728 float sum -1 121596 4.42 8.55",
			"1073741824 268435456 float sum -1 243176 4.42 8.56",
		},
		// --node dgx1-v100 --nodes 4 --nics 1x10G-tcp (32 ranks), allgather: was 33.
		// The small rows bound it too: busbw 0.30 of 0.31 GB/s at 32 KB.
		"v100tcp": {
			"1024 8 float none -1 42.40 0.02 0.02",
			"2048 16 float none -1 44.46 0.05 0.04",
			"4096 32 float none -1 48.58 0.08 0.08",
			"8192 64 float none -1 56.83 0.14 0.14",
			"16384 128 float none -1 73.32 0.22 0.22",
			"32768 256 float none -1 106.30 0.31 0.30",
			"65536 512 float none -1 158.40 0.41 0.40",
			"131072 1024 float none -1 228.76 0.57 0.56",
			"262144 2048 float none -1 369.47 0.71 0.69",
			"524288 4096 float none -1 650.91 0.81 0.78",
			"1048576 8192 float none -1 1217.26 0.86 0.83",
			"2097152 16384 float none -1 2272.64 0.92 0.89",
			"4194304 32768 float none -1 4383.41 0.96 0.93",
			"8388608 65536 float none -1 8604.95 0.97 0.94",
			"16777216 131072 float none -1 17048.0 0.98 0.95",
			"33554432 262144 float none -1 33934.2 0.99 0.96",
			"67108864 524288 float none -1 67706.5 0.99 0.96",
			"134217728 1048576 float none -1 135251 0.99 0.96",
			"268435456 2097152 float none -1 270487 0.99 0.96",
			"536870912 4194304 float none -1 540958 0.99 0.96",
			"1073741824 8388608 float none -1 1081901 0.99 0.96",
		},
		// --node dgx-h100 --nodes 8 --nics 1x25G-tcp (64 ranks), allreduce:
		// was 59; a 2-decimal busbw near 2 GB/s fits 60 to 70 ranks alike.
		"h100tcp": {
			"8388608 2097152 float sum -1 17619.9 0.48 0.94",
			"16777216 4194304 float sum -1 24592.2 0.68 1.34",
			"33554432 8388608 float sum -1 38536.9 0.87 1.71",
			"67108864 16777216 float sum -1 66426.3 1.01 1.99",
			"134217728 33554432 float sum -1 122205 1.10 2.16",
			"268435456 67108864 float sum -1 233763 1.15 2.26",
			"536870912 134217728 float sum -1 456878 1.18 2.31",
			"1073741824 268435456 float sum -1 903108 1.19 2.34",
		},
	}[which]
	if raw == nil {
		t.Fatalf("no rows %q", which)
	}
	var out []string
	for _, l := range raw {
		f := strings.Fields(l)
		g := strings.Join(f[5:8], " ")
		out = append(out, strings.Join(f[:5], " ")+" "+g+" 0 "+g+" 0")
	}
	return out
}

// TestRanksFromPrintedBandwidth: without device lines the rank count comes
// from busbw against size/time over every row, and only when exactly one n
// fits the printed precision.
func TestRanksFromPrintedBandwidth(t *testing.T) {
	cases := []struct {
		rows, bin string
		want      int
	}{
		{"pcie", "all_reduce_perf", 32},
		{"v100tcp", "all_gather_perf", 32},
		{"h100tcp", "all_reduce_perf", 0},
	}
	for _, c := range cases {
		t.Run(c.rows, func(t *testing.T) {
			text := nccltestsPreamble(c.bin) + strings.Join(tableRows(t, c.rows), "\n") + "\n"
			a, err := parseNCCLTests(c.rows+".txt", []byte(text))
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Runs[0].Ranks; got != c.want {
				t.Errorf("ranks %d, want %d", got, c.want)
			}
		})
	}
}

// TestRanksUnknownFallsBack: when the bandwidths fit several rank counts,
// the NCCL log's nranks is taken, as before for a table that states none.
func TestRanksUnknownFallsBack(t *testing.T) {
	r := &Run{Collective: model.AllReduce, Params: map[string]string{}}
	text := nccltestsPreamble("all_reduce_perf") + strings.Join(tableRows(t, "h100tcp"), "\n") + "\n"
	a, err := parseNCCLTests("x.txt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	r.Rows = a.Runs[0].Rows
	if got := runRanks(r, &NCCLLog{Ranks: 64}, nil); got != 64 {
		t.Errorf("ranks %d, want the log's 64", got)
	}
}

// TestRanksWithoutDeviceLines: every real nccl-tests log in testdata/raw,
// its "#  Rank" lines removed, gives its true rank count or 0 (unknown),
// never another count; the 8-node ABCI A100 log gave 63 of 64.
func TestRanksWithoutDeviceLines(t *testing.T) {
	files, _ := filepath.Glob("testdata/raw/nccltests_*.txt")
	if len(files) == 0 {
		t.Skip("no testdata")
	}
	rankLine := regexp.MustCompile(`(?m)^#\s*Rank\s+\d+.*\n`)
	logLine := regexp.MustCompile(`(?m)^.*NCCL INFO.*\n`)
	known := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		full, err := ParseFile(f)
		if err != nil || len(full.Runs) == 0 {
			continue
		}
		stripped := logLine.ReplaceAll(rankLine.ReplaceAll(data, nil), nil)
		a, err := parseNCCLTests(filepath.Base(f), stripped)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(a.Runs) != len(full.Runs) {
			t.Errorf("%s: %d runs without the device lines, %d with", f, len(a.Runs), len(full.Runs))
			continue
		}
		for i, r := range a.Runs {
			want := full.Runs[i].Ranks
			if len(full.Runs[i].Devices) != want {
				continue
			}
			switch r.Ranks {
			case want:
				known++
			case 0:
			default:
				t.Errorf("%s run %d (%s): %d ranks without the device lines, %d with", f, i, r.CollectiveName, r.Ranks, want)
			}
		}
	}
	if known == 0 {
		t.Error("no rank count found from the bandwidths")
	}
}

func TestPrintedHalfULP(t *testing.T) {
	for s, want := range map[string]float64{"12.34": 0.005, "1234.5": 0.05, "121596": 0.5, "1.2e+07": 5e5, "-0.10": 0.005, "N/A": 0} {
		if got := printedHalfULP(s); got < want*0.999 || got > want*1.001 {
			t.Errorf("printedHalfULP(%q) = %g, want %g", s, got, want)
		}
	}
}
