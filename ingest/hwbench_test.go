package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// hwbench_fake.json is what `go test ./hwbench -run TestFakeFixture -update`
// writes: the probes run against hwbench's fake machine (4 x H100 SXM on
// NVSwitch in two sockets, 2 NDR InfiniBand NICs), nccl sweep 8 B..16 MiB by
// 4, copy size 16 MiB. hwbench_fake.nccl-tests.txt is the nccl-tests text
// the same run wrote.
func readHWBenchFixture(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/hwbench_fake.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestIsHWBench(t *testing.T) {
	fixture := readHWBenchFixture(t)
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"fixture", string(fixture), true},
		{"truncated head", string(fixture[:200]), true},
		{"format not first", `{"tool": "x", "nested": {"format": "no"}, "format": "collsim-hwbench/1"}`, true},
		{"other version", `{"format": "collsim-hwbench/2"}`, false},
		{"nested only", `{"x": {"format": "collsim-hwbench/1"}}`, false},
		{"nccl-tests json", `{"results": [{"out_of_place": {"bus_bw": 1}}]}`, false},
		{"array", `[{"format": "collsim-hwbench/1"}]`, false},
		{"text", "# nccl-tests version 2.19.6\n", false},
		{"empty", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsHWBench([]byte(tc.data)); got != tc.want {
				t.Errorf("IsHWBench = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseHWBenchFixture(t *testing.T) {
	a, err := ParseHWBench("hwbench_fake.json", readHWBenchFixture(t))
	if err != nil {
		t.Fatalf("ParseHWBench: %v", err)
	}
	if a.Kind != KindHWBench || a.File != "hwbench_fake.json" {
		t.Errorf("kind %q file %q", a.Kind, a.File)
	}
	for k, want := range map[string]string{"hostname": "fakehost", "nccl": "2.21.5", "driver": "550.90.07", "cuda_runtime": "12.4", "backend": "fake", "lib_cudart": "libcudart.so.12"} {
		if a.Machine[k] != want {
			t.Errorf("Machine[%s] = %q, want %q", k, a.Machine[k], want)
		}
	}

	t.Run("runs", func(t *testing.T) {
		want := []model.Collective{model.AllReduce, model.AllGather, model.ReduceScatter, model.Broadcast, model.Reduce, model.AlltoAll, model.SendRecv}
		if len(a.Runs) != len(want) {
			t.Fatalf("%d runs", len(a.Runs))
		}
		for i, r := range a.Runs {
			if r.Collective != want[i] || r.CollectiveName != want[i].TestName() || r.Binary != want[i].TestName()+"_perf" || r.Ranks != 4 || len(r.Devices) != 4 {
				t.Errorf("run %d: %s %q %q ranks %d devices %d", i, r.Collective, r.CollectiveName, r.Binary, r.Ranks, len(r.Devices))
			}
			// 8 B to 16 MiB by 4: 8, 32, ..., 8 MiB is 11 sizes.
			if len(r.Rows) != 11 || r.Params["iters"] != "20" || r.Params["step"] != "4(factor)" || r.NCCLVersion != "2.21.5" {
				t.Errorf("run %d: %d rows, params %v", i, len(r.Rows), r.Params)
			}
			last := r.Rows[len(r.Rows)-1]
			// nccl-tests factors (nccl-facts §1.1) on 4 ranks: 1.5 for AllReduce, 0.75 for
			// AllGather, ReduceScatter and AlltoAll, 1 otherwise. The fixture ran the data
			// check (#wrong 0); Broadcast and Reduce have root 0.
			f := want[i].BusBWFactor(4)
			root := -1
			if want[i].HasRoot() {
				root = 0
			}
			if !last.OOP.Valid || math.Abs(last.OOP.BusBW-f*last.OOP.AlgBW) > 1e-3*last.OOP.BusBW || last.OOP.Wrong != 0 || last.Root != root {
				t.Errorf("run %d last row %+v (factor %g)", i, last, f)
			}
		}
		if d := a.Runs[0].Devices[3]; d.Host != "fakehost" || d.BusID != "0000:94:00.0" || d.Name != "NVIDIA H100 80GB HBM3" {
			t.Errorf("device 3 %+v", d)
		}
	})

	t.Run("matrices", func(t *testing.T) {
		// 1 connectivity + 6 p2pBandwidthLatencyTest matrices + 5 copy
		// rows + 2 copy rows from another NUMA node + 6 nvbandwidth
		// testcases (nvbw probe).
		if len(a.Matrices) != 20 {
			t.Fatalf("%d matrices", len(a.Matrices))
		}
		for i, want := range map[int]string{12: "hwbench copy host (pinned, another NUMA node) to device", 14: "hwbench nvbw host_to_device_memcpy_ce", 19: "hwbench nvbw device_to_device_memcpy_write_ce"} {
			if m := a.Matrices[i]; !strings.HasPrefix(m.Title, want) {
				t.Errorf("matrix %d is %q, want %q", i, m.Title, want)
			}
		}
		if m := a.Matrices[14]; m.Path != "h2d" || m.Metric != "bandwidth-uni" || len(m.Rows) != 1 || m.Rows[0] != "CPU" || len(m.Cols) != 4 || m.Values[0][0] < 50 {
			t.Errorf("nvbw host to device %+v", m)
		}
		m := a.Matrices[4] // Unidirectional P2P=Enabled
		if m.Metric != "bandwidth-uni" || m.P2P == nil || !*m.P2P || len(m.Values) != 4 || m.Values[0][1] < 300 {
			t.Errorf("p2p enabled matrix %+v", m)
		}
		h2d := a.Matrices[7]
		if h2d.Path != "h2d" || len(h2d.Cols) != 4 || h2d.Values[0][0] < 40 || h2d.Values[0][0] > 55 {
			t.Errorf("h2d matrix %+v", h2d)
		}
	})

	t.Run("topo", func(t *testing.T) {
		if a.Topo == nil {
			t.Fatal("no topo")
		}
		n := a.Topo.Node
		if err := n.Validate(); err != nil {
			t.Fatalf("node spec: %v", err)
		}
		if n.GPU != "H100-SXM" || n.GPUs != 4 || n.NVLink.Kind != "nvswitch" || n.NICs.Count != 2 || n.NICs.Kind != "ib" || n.NICs.Speed != "NDR" {
			t.Errorf("node %+v", n)
		}
		var topo model.Topology
		if _, err := n.Build(&topo, 0); err != nil {
			t.Errorf("Build: %v", err)
		}
		if len(a.Topo.Labels) != 6 || a.Topo.Matrix[0][4] != "PIX" || a.Topo.Matrix[0][5] != "SYS" || a.Topo.NICNames["NIC1"] != "mlx5_1" {
			t.Errorf("matrix %v %v", a.Topo.Labels, a.Topo.Matrix)
		}
	})

	t.Run("ports and gdr", func(t *testing.T) {
		if len(a.Ports) != 2 || a.Ports[0] != (IBPort{Device: "mlx5_0", Port: 1, State: "Active", Physical: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand", MTU: 4096}) {
			t.Errorf("ports %+v", a.Ports)
		}
		// Per port: 4 bandwidth directions and 2 latency pairs.
		if len(a.Perftest) != 12 {
			t.Fatalf("%d perftest results", len(a.Perftest))
		}
		p := a.Perftest[1] // gpu->gpu bandwidth of mlx5_0
		if !p.GPUDirect || p.LinkType != "IB" || len(p.Rows) != 3 || p.Rows[2].AvgGbs < 300 || p.Rows[2].AvgGbs > 400 {
			t.Errorf("perftest %+v", p)
		}
	})
	for _, f := range a.Findings {
		if f.Severity != SevInfo {
			t.Errorf("clean fixture has finding %+v", f)
		}
	}
}

// TestHWBenchTextParses reads the nccl-tests text hwbench wrote with
// collsim's own nccl-tests parser and checks it says what the JSON says.
func TestHWBenchTextParses(t *testing.T) {
	text, err := os.ReadFile("testdata/hwbench_fake.nccl-tests.txt")
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := Parse("hwbench_fake.nccl-tests.txt", bytes.NewReader(text))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	fromJSON, err := ParseHWBench("hwbench_fake.json", readHWBenchFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if fromText.Kind != KindNCCLTests || len(fromText.Runs) != len(fromJSON.Runs) {
		t.Fatalf("text: kind %q, %d runs; JSON: %d runs", fromText.Kind, len(fromText.Runs), len(fromJSON.Runs))
	}
	for i, rt := range fromText.Runs {
		rj := fromJSON.Runs[i]
		if rt.Collective != rj.Collective || rt.Ranks != rj.Ranks || len(rt.Rows) != len(rj.Rows) || rt.Binary != rj.Binary {
			t.Errorf("run %d: text %s/%d ranks/%d rows, JSON %s/%d/%d", i, rt.Collective, rt.Ranks, len(rt.Rows), rj.Collective, rj.Ranks, len(rj.Rows))
			continue
		}
		if math.Abs(rt.AvgBusBW-rj.AvgBusBW) > 1e-3*math.Max(1, rj.AvgBusBW) {
			t.Errorf("run %d avg busbw text %g JSON %g", i, rt.AvgBusBW, rj.AvgBusBW)
		}
		for k := range rt.Rows {
			a, b := rt.Rows[k], rj.Rows[k]
			// The text rounds to 2 decimals (or fewer for large values).
			if a.Size != b.Size || a.Count != b.Count || math.Abs(a.OOP.BusBW-b.OOP.BusBW) > 0.006+1e-4*b.OOP.BusBW ||
				math.Abs(a.IP.TimeUs-b.IP.TimeUs) > 0.006+1e-4*b.IP.TimeUs || a.OOP.Wrong != b.OOP.Wrong || a.Root != b.Root {
				t.Errorf("run %d row %d: text %+v JSON %+v", i, k, a, b)
			}
		}
	}
}

func TestParseHWBenchThroughDetector(t *testing.T) {
	hooked := false
	for _, f := range formats() {
		hooked = hooked || f.kind == KindHWBench
	}
	if !hooked {
		t.Skip("ParseHWBench is not in the detector list yet")
	}
	a, err := Parse("hwbench_fake.json", bytes.NewReader(readHWBenchFixture(t)))
	if err != nil || a.Kind != KindHWBench || len(a.Runs) != 7 {
		t.Fatalf("Parse: %v, %+v", err, a)
	}
}

func TestParseHWBenchErrorsAndFindings(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(readHWBenchFixture(t), &doc); err != nil {
		t.Fatal(err)
	}
	edit := func(fn func(d map[string]any)) []byte {
		var d map[string]any
		b, _ := json.Marshal(doc)
		json.Unmarshal(b, &d)
		fn(d)
		out, _ := json.Marshal(d)
		return out
	}
	t.Run("errors", func(t *testing.T) {
		tests := []struct {
			name string
			data []byte
		}{
			{"not hwbench", []byte(`{"format": "something-else"}`)},
			{"broken json", []byte(`{"format": "collsim-hwbench/1", "nccl": {`)},
			{"no measurements", []byte(`{"format": "collsim-hwbench/1", "probes": [{"name": "nccl", "status": "skipped", "error": "libnccl.so.2: not found"}]}`)},
			{"bad node spec", edit(func(d map[string]any) { d["topo"].(map[string]any)["node"] = "[[[" })},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, err := ParseHWBench("x.json", tc.data)
				if err == nil || !strings.HasPrefix(err.Error(), "calibrate: x.json") {
					t.Fatalf("error %v", err)
				}
				if tc.name != "bad node spec" && !errors.Is(err, ErrUnrecognized) {
					t.Errorf("error %v does not wrap ErrUnrecognized", err)
				}
			})
		}
	})
	t.Run("findings", func(t *testing.T) {
		data := edit(func(d map[string]any) {
			port := d["gdr"].(map[string]any)["ports"].([]any)[1].(map[string]any)
			port["gpudirect"] = false
			port["register_error"] = "verbs: ibv_reg_mr: Bad address"
			port["path"] = "SYS"
			probes := d["probes"].([]any)
			probes[3].(map[string]any)["status"] = "failed"
			probes[3].(map[string]any)["error"] = "nccl: ncclCommInitAll: unhandled system error"
			probes[4].(map[string]any)["status"] = "running"
			p2p := d["p2p"].(map[string]any)
			p2p["access"].([]any)[0].([]any)[2] = false
		})
		a, err := ParseHWBench("x.json", data)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{FindNoGDR: "Bad address", FindHWBenchProbeFailed: "ncclCommInitAll", FindNICFarFromGPU: "GPU", FindP2PUnavailable: "0-2"}
		for code, ev := range want {
			found := false
			for _, f := range a.Findings {
				found = found || (f.Code == code && strings.Contains(f.Evidence+f.Message, ev))
			}
			if !found {
				t.Errorf("no %s finding mentioning %q in %+v", code, ev, a.Findings)
			}
		}
		if a.Findings[0].Severity != SevError {
			t.Errorf("findings not sorted by severity: %+v", a.Findings[0])
		}
	})
}

// Read a collsim hwbench report and list its nccl sweeps.
func ExampleParseHWBench() {
	data, err := os.ReadFile("testdata/hwbench_fake.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := ParseHWBench("hwbench_fake.json", data)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range a.Runs {
		last := r.Rows[len(r.Rows)-1]
		fmt.Printf("%s, %d ranks: %d rows, busbw %.0f GB/s at %d bytes\n", r.Binary, r.Ranks, len(r.Rows), last.OOP.BusBW, last.Size)
	}
	fmt.Println(a.Topo.Node.GPU, a.Topo.Node.NVLink.Kind)
	// Output:
	// all_reduce_perf, 4 ranks: 11 rows, busbw 268 GB/s at 8388608 bytes
	// all_gather_perf, 4 ranks: 11 rows, busbw 213 GB/s at 8388608 bytes
	// reduce_scatter_perf, 4 ranks: 11 rows, busbw 213 GB/s at 8388608 bytes
	// broadcast_perf, 4 ranks: 11 rows, busbw 238 GB/s at 8388608 bytes
	// reduce_perf, 4 ranks: 11 rows, busbw 238 GB/s at 8388608 bytes
	// alltoall_perf, 4 ranks: 11 rows, busbw 213 GB/s at 8388608 bytes
	// sendrecv_perf, 4 ranks: 11 rows, busbw 238 GB/s at 8388608 bytes
	// H100-SXM nvswitch
}

// TestParseHWBenchDebugLog: the NCCL_DEBUG=INFO lines hwbench captured go
// through the NCCL log parser, so validate sees the transports and NVLS.
func TestParseHWBenchDebugLog(t *testing.T) {
	a, err := ParseHWBench("hwbench_fake.json", readHWBenchFixture(t))
	if err != nil {
		t.Fatal(err)
	}
	if a.Log == nil || a.Log.NVLSAvailable == nil || !*a.Log.NVLSAvailable || len(a.Log.Connections) == 0 || a.Log.Version != "2.21.5" {
		t.Fatalf("log %+v", a.Log)
	}
}

// TestParseHWBenchRDMA: the rdma probe's writes between nodes become
// perftest-style results ("hwbench rdma_write bw host->host", Gb/s).
func TestParseHWBenchRDMA(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(readHWBenchFixture(t), &doc); err != nil {
		t.Fatal(err)
	}
	doc["rdma"] = map[string]any{
		"writer":    map[string]any{"host": "alpha", "hca": "mlx5_0", "mtu": 4096, "rate_gbps": 400},
		"bandwidth": []any{map[string]any{"src": "host", "dst": "host", "bytes": 8388608, "iters": 512, "gbps": 48.1}, map[string]any{"src": "gpu", "dst": "gpu", "bytes": 8388608, "iters": 512, "gbps": 46.5}},
		"latency":   []any{map[string]any{"src": "host", "dst": "host", "bytes": 8, "iters": 1000, "us": 3.1}},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseHWBench("hw.json", data)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*PerftestResult{}
	for _, p := range a.Perftest {
		got[p.Test] = p
	}
	hh, gg, lat := got["hwbench rdma_write bw host->host"], got["hwbench rdma_write bw gpu->gpu"], got["hwbench rdma_write completion-lat host->host"]
	if hh == nil || gg == nil || lat == nil || hh.GPUDirect || !gg.GPUDirect || hh.LinkType != "IB" ||
		math.Abs(hh.Rows[0].AvgGbs-48.1*8) > 1e-9 || lat.Rows[0].LatAvgUs != 3.1 {
		t.Errorf("perftest results %v", got)
	}
}

// TestHWBenchImplausibleResults: hwbench writes null for a failed
// measurement; a hand-edited or damaged report can hold negative times or
// impossible bandwidths. The fixture with a null and a negative nccl time,
// a busbw of 1e12 GB/s, a row of negative size and a null GDR bandwidth
// reads with those results invalid (a note each), the negative row left
// out, the GDR row dropped, and still encodes as JSON (no NaN); the data
// check's counts give the run's validation and out-of-bounds fields, as
// the nccl-tests text hwbench writes beside it states them.
func TestHWBenchImplausibleResults(t *testing.T) {
	raw, err := os.ReadFile("testdata/hwbench_fake.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	rows := doc["nccl"].(map[string]any)["sweeps"].([]any)[0].(map[string]any)["rows"].([]any)
	nRows := len(rows)
	oop := func(i int) map[string]any { return rows[i].(map[string]any)["out_of_place"].(map[string]any) }
	oop(5)["time_us"] = nil
	oop(6)["time_us"] = -5
	oop(7)["busbw_gbps"] = 1e12
	oop(8)["wrong"] = 3
	rows[9].(map[string]any)["size_bytes"] = -8
	port := doc["gdr"].(map[string]any)["ports"].([]any)[0].(map[string]any)
	bw := port["bandwidth"].([]any)
	nBW := len(bw)
	bw[0].(map[string]any)["gbps"] = nil
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseHWBench("edited.json", data)
	if err != nil {
		t.Fatal(err)
	}
	r := a.Runs[0]
	if len(r.Rows) != nRows-1 {
		t.Errorf("%d rows, want %d (the negative size left out)", len(r.Rows), nRows-1)
	}
	for i := 5; i <= 7; i++ {
		if r.Rows[i].OOP.Valid {
			t.Errorf("row %d (size %d): out-of-place %+v read as valid", i, r.Rows[i].Size, r.Rows[i].OOP)
		}
	}
	if !r.Rows[8].OOP.Valid || r.Rows[8].OOP.Wrong != 3 || r.OutOfBounds != 3 || r.Params["validation"] != "1" {
		t.Errorf("the checked run: row 8 %+v, out of bounds %d, validation %q; want valid with 3 wrong, 3, \"1\"", r.Rows[8].OOP, r.OutOfBounds, r.Params["validation"])
	}
	notes := 0
	for _, n := range a.Notes {
		if strings.Contains(n.Message, "the result is not used") {
			notes++
		}
	}
	if notes != 3 {
		t.Errorf("%d notes on unused results, want 3: %v", notes, a.Notes)
	}
	hca := port["hca"].(string)
	got := 0
	for _, p := range a.Perftest {
		if p.Device == hca && strings.HasPrefix(p.Test, "hwbench loopback rdma_write bw ") {
			got += len(p.Rows)
		}
	}
	if got != nBW-1 {
		t.Errorf("%s: %d GDR bandwidth rows, want %d (the null one dropped)", hca, got, nBW-1)
	}
	for _, p := range a.Perftest {
		for _, row := range p.Rows {
			if !plausibleRow(row) {
				t.Errorf("%s kept an implausible row %+v", p.Test, row)
			}
		}
	}
	if _, err := json.Marshal(a); err != nil {
		t.Errorf("the artifact does not encode as JSON: %v", err)
	}
}

// TestHWBenchErrorsNameLineAndElement: a damaged hwbench report is refused
// with the line and the element (a string where the schema has a number,
// a trailing comma), and a report of another format version is refused as
// such, not read as the NCCL log lines it embeds.
func TestHWBenchErrorsNameLineAndElement(t *testing.T) {
	raw, err := os.ReadFile("testdata/hwbench_fake.json")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i := strings.Index(text, `"size_bytes": 8192`)
	if i < 0 {
		t.Fatal("the fixture has no 8192-byte row")
	}
	line := strings.Count(text[:i], "\n") + 1
	for _, tc := range []struct{ name, text, want string }{
		{"string for a number", strings.Replace(text, `"size_bytes": 8192`, `"size_bytes": "x"`, 1), fmt.Sprintf("x.json:%d: hwbench report: nccl.sweeps.rows.size_bytes: a JSON string where the schema has a int64", line)},
		{"trailing comma", strings.Replace(text, `"size_bytes": 8192,`, `"size_bytes": 8192,}`, 1), fmt.Sprintf("x.json:%d: hwbench report: invalid JSON", line)},
		{"format 2", strings.Replace(text, HWBenchFormat, "collsim-hwbench/2", 1), `x.json:1: hwbench report format "collsim-hwbench/2": this collsim reads "collsim-hwbench/1"`},
	} {
		_, err := Parse("x.json", strings.NewReader(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
