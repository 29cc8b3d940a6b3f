package hwbench

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/collsim/collsim/model"
)

var fixedTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fakeOptions are small, fast settings for runs on the fake.
func fakeOptions(dir string) Options {
	o := DefaultOptions()
	o.Out = filepath.Join(dir, "hwbench.json")
	o.NCCLText = o.Out + ".nccl-tests.txt"
	o.MinBytes, o.MaxBytes = 8, 64*model.MiB
	o.CopyBytes = 32 * model.MiB
	o.Now = func() time.Time { return fixedTime }
	o.Pid = 4242
	o.Tool = "collsim hwbench test"
	o.BackendName = "fake"
	o.Getenv = func(string) string { return "" } // not this test process's launcher
	o.Check = 0                                  // the data check has its own tests
	return o
}

func statusOf(rep *Report) map[string]string {
	m := map[string]string{}
	for _, p := range rep.Probes {
		m[p.Name] = p.Status
	}
	return m
}

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// copyGBps is what the fake's model gives for n-byte copies at bw GB/s with
// a fixed latency per copy: n / (lat + n/bw).
func copyGBps(n int64, bw float64, lat time.Duration) float64 {
	return float64(n) / (lat.Seconds() + float64(n)/(bw*1e9)) / 1e9
}

func TestRunFakeAllProbes(t *testing.T) {
	dir := t.TempDir()
	o := fakeOptions(dir)
	rep, err := Run(context.Background(), NewFake(FakeConfig{}), o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, p := range Probes {
		want := StatusOK
		if p == "rdma" {
			want = StatusSkipped // needs ranks on two hosts
		}
		if statusOf(rep)[p] != want {
			t.Errorf("probe %s: %+v", p, rep.Probes)
		}
	}
	// The file on disk is the returned report.
	data, err := os.ReadFile(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	disk, err := DecodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if disk.Machine.Hostname != "fakehost" || disk.Machine.NCCL != "2.21.5" || disk.Machine.Driver != "550.90.07" {
		t.Errorf("machine = %+v", disk.Machine)
	}
	for name, st := range map[string]Stamp{"topo": disk.Topo.Stamp, "copy": disk.Copy.Stamp, "p2p": disk.P2P.Stamp, "nccl": disk.NCCL.Stamp, "gdr": disk.GDR.Stamp} {
		if st.Machine.Hostname != "fakehost" || st.Machine.CUDARuntime == "" || st.Machine.NCCL == "" || !st.Time.Equal(fixedTime) {
			t.Errorf("%s record lacks machine or time: %+v", name, st)
		}
	}

	t.Run("copy", func(t *testing.T) {
		n := int64(o.CopyBytes)
		if len(rep.Copy.GPUs) != 4 {
			t.Fatalf("%d GPUs", len(rep.Copy.GPUs))
		}
		row := rep.Copy.GPUs[2]
		for name, c := range map[string]struct {
			got Num
			bw  float64
		}{"h2d pinned": {row.H2DPinned, fakeH2DPinned}, "d2h pageable": {row.D2HPageable, fakeD2HPageable}, "d2d": {row.D2D, fakeD2D}} {
			if want := copyGBps(n, c.bw, fakeCopyLatency); !near(float64(c.got), want, 1e-3) {
				t.Errorf("%s = %.3f GB/s, want %.3f (fake model)", name, c.got, want)
			}
		}
	})

	t.Run("p2p", func(t *testing.T) {
		p := rep.P2P
		if len(p.Matrices) != 6 || p.GPUs != 4 {
			t.Fatalf("%d matrices for %d GPUs", len(p.Matrices), p.GPUs)
		}
		n := int64(o.CopyBytes)
		off, on := p.Matrices[0], p.Matrices[3]
		if off.P2P || !on.P2P || off.Metric != "bandwidth-uni" || p.Matrices[1].Metric != "bandwidth-bidi" || p.Matrices[2].Unit != "us" {
			t.Errorf("matrix metadata: %+v", p.Matrices)
		}
		if want := copyGBps(n, fakeP2PStaged, fakeStagedLatency); !near(float64(off.Values[0][1]), want, 1e-3) {
			t.Errorf("uni P2P off 0->1 = %.3f, want %.3f", off.Values[0][1], want)
		}
		if want := copyGBps(n, fakeP2PNVLink, fakeCopyLatency); !near(float64(on.Values[0][3]), want, 1e-3) {
			t.Errorf("uni P2P on 0->3 = %.3f, want %.3f", on.Values[0][3], want)
		}
		// Both directions at once, independent in the fake: twice the uni figure.
		if bidi := p.Matrices[4].Values[1][2]; !near(float64(bidi), 2*float64(on.Values[1][2]), 1e-3) {
			t.Errorf("bidi 1<->2 = %.3f, want 2 x %.3f", bidi, on.Values[1][2])
		}
		// Latency of a 4-byte copy: the fixed latency plus 4 bytes' worth.
		if lat := p.Matrices[5].Values[0][1]; !near(float64(lat), fakeCopyLatency.Seconds()*1e6, 1e-2) {
			t.Errorf("latency P2P on = %.3f us", lat)
		}
		if !p.Access[0][1] || p.Access[2][2] {
			t.Errorf("access matrix %v", p.Access)
		}
	})

	t.Run("nccl", func(t *testing.T) {
		nr := rep.NCCL
		if nr.Ranks != 4 || nr.Mode != "single-process" || len(nr.Devices) != 4 || len(nr.Sweeps) != len(NCCLCollectives) {
			t.Fatalf("nccl result %+v", nr)
		}
		sizes := SweepSizes(o.MinBytes, o.MaxBytes, o.StepFactor)
		for _, sw := range nr.Sweeps {
			if !sw.Complete || len(sw.Rows) != len(sizes) {
				t.Errorf("%s: %d rows, complete %v", sw.Collective, len(sw.Rows), sw.Complete)
			}
		}
		// AllReduce of S bytes on n ranks in the fake: t = lat + S*2(n-1)/n / busbw,
		// so busbw = S*2(n-1)/n / t.
		ar := nr.Sweeps[0]
		last := ar.Rows[len(ar.Rows)-1]
		S := float64(last.Size)
		tt := fakeNCCLLatency.Seconds() + S*1.5/(fakeNCCLBusBW*1e9)
		if !near(float64(last.OOP.TimeUs), tt*1e6, 1e-3) || !near(float64(last.OOP.BusBW), S*1.5/tt/1e9, 1e-3) {
			t.Errorf("allreduce %g B: %+v, want %.3f us", S, last.OOP, tt*1e6)
		}
		if !near(float64(last.OOP.BusBW), float64(last.OOP.AlgBW)*1.5, 1e-6) {
			t.Errorf("busbw/algbw = %g, want 2(n-1)/n = 1.5", float64(last.OOP.BusBW)/float64(last.OOP.AlgBW))
		}
		// AllGather counts per rank, rounded to 16 bytes: 8 bytes on 4 ranks is 0.
		ag := nr.Sweeps[1]
		if ag.Redop != "none" || ag.Rows[0].Size != 0 || ag.Rows[0].Count != 0 || ag.Rows[3].Count != 4 || ag.Rows[3].Size != 64 {
			t.Errorf("allgather rows %+v", ag.Rows[:4])
		}
		var sum float64
		for _, r := range ag.Rows {
			sum += float64(r.OOP.BusBW) + float64(r.IP.BusBW)
		}
		if !near(float64(ag.AvgBusBW), sum/float64(2*len(ag.Rows)), 1e-4) {
			t.Errorf("avg busbw %g, want mean of all %g", ag.AvgBusBW, sum/float64(2*len(ag.Rows)))
		}
		text, err := os.ReadFile(o.NCCLText)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(text), "# Collective test concluded:"); n != len(NCCLCollectives) {
			t.Errorf("nccl-tests text has %d tests, want %d", n, len(NCCLCollectives))
		}
	})

	t.Run("gdr", func(t *testing.T) {
		g := rep.GDR
		if len(g.Ports) != 2 || !g.GPUDirectModule {
			t.Fatalf("gdr %+v", g)
		}
		p := g.Ports[1]
		if !p.GPUDirect || p.Path != "PIX" || p.GPU != 2 || p.Route != "LID 2, MTU 4096" {
			t.Errorf("port %+v", p)
		}
		if len(p.Bandwidth) != 4*len(gdrBWSizes) || len(p.Latency) != 2*len(gdrLatSizes) {
			t.Errorf("%d bandwidth and %d latency rows", len(p.Bandwidth), len(p.Latency))
		}
		for _, b := range p.Bandwidth {
			eff := fakeRDMAEff
			if b.Src == "gpu" || b.Dst == "gpu" {
				eff = fakeRDMAGPUEff
			}
			if float64(b.GBps) > 50*eff || float64(b.GBps) < 0.9*50*eff {
				t.Errorf("%+v: not near %.1f GB/s", b, 50*eff)
			}
		}
	})

	t.Run("topo", func(t *testing.T) {
		tp := rep.Topo
		if tp.Node == nil || tp.NodeError != "" {
			t.Fatalf("node spec: %v", tp.NodeError)
		}
		want := [][]string{
			{"X", "NV18", "NV18", "NV18", "PIX", "SYS"},
			{"NV18", "X", "NV18", "NV18", "PIX", "SYS"},
			{"NV18", "NV18", "X", "NV18", "SYS", "PIX"},
			{"NV18", "NV18", "NV18", "X", "SYS", "PIX"},
			{"PIX", "PIX", "SYS", "SYS", "X", "SYS"},
			{"SYS", "SYS", "PIX", "PIX", "SYS", "X"},
		}
		for i := range want {
			if strings.Join(tp.Matrix.Cells[i], " ") != strings.Join(want[i], " ") {
				t.Errorf("matrix row %s = %v, want %v", tp.Matrix.Labels[i], tp.Matrix.Cells[i], want[i])
			}
		}
		spec := tp.Node.NodeSpec
		if spec.GPU != "H100-SXM" || spec.GPUs != 4 || spec.NVLink.Kind != "nvswitch" || spec.NICs.Count != 2 || spec.NICs.Speed != "NDR" || len(spec.Sockets) != 2 {
			t.Errorf("spec %+v", spec)
		}
		var topo model.Topology
		if _, err := spec.Build(&topo, 0); err != nil {
			t.Fatalf("Build: %v", err)
		}
		if err := topo.Validate(); err != nil {
			t.Errorf("topology: %v", err)
		}
		if len(topo.GPUs()) != 4 || len(topo.NICs()) != 2 {
			t.Errorf("built %d GPUs, %d NICs", len(topo.GPUs()), len(topo.NICs()))
		}
	})
}

func TestRunFakeVariants(t *testing.T) {
	tests := []struct {
		name   string
		cfg    FakeConfig
		probes []string
		check  func(t *testing.T, rep *Report)
	}{
		{"nvlink mesh", FakeConfig{GPUs: 4, NVLinks: 12, Mesh: true}, []string{"topo"}, func(t *testing.T, rep *Report) {
			nv := rep.Topo.Node.NVLink
			if nv.Kind != "mesh" || nv.Links != 4 || rep.Topo.Matrix.Cells[0][1] != "NV4" {
				t.Errorf("nvlink %+v, cell %s", nv, rep.Topo.Matrix.Cells[0][1])
			}
		}},
		{"no nvlink", FakeConfig{GPUs: 2, NVLinks: -1, GPUName: "NVIDIA L40S"}, []string{"topo", "p2p"}, func(t *testing.T, rep *Report) {
			if rep.Topo.Node.NVLink.Kind != "none" || rep.Topo.NodeError != "" || rep.Topo.Matrix.Cells[0][1] != "SYS" {
				t.Errorf("topo %+v %v", rep.Topo.Node.NVLink, rep.Topo.NodeError)
			}
			on := rep.P2P.Matrices[3].Values[0][1]
			if want := copyGBps(32<<20, fakeP2PPCIe, fakeCopyLatency); !near(float64(on), want, 1e-3) {
				t.Errorf("PCIe P2P = %.2f, want %.2f", on, want)
			}
		}},
		{"roce", FakeConfig{Ethernet: true, NICRate: 200}, []string{"topo", "gdr"}, func(t *testing.T, rep *Report) {
			if n := rep.Topo.Node.NICs; n.Kind != "roce" || n.Speed != "200G" {
				t.Errorf("nics %+v", n)
			}
			if r := rep.GDR.Ports[0].Route; !strings.HasPrefix(r, "GID 3 (::ffff:10.0.1.0)") {
				t.Errorf("route %q, want the IPv4 RoCE v2 GID", r)
			}
		}},
		{"no gpudirect", FakeConfig{NoGPUDirect: true}, []string{"gdr"}, func(t *testing.T, rep *Report) {
			p := rep.GDR.Ports[0]
			if p.GPUDirect || !strings.Contains(p.RegisterError, "Bad address") || len(p.Bandwidth) != len(gdrBWSizes) || rep.GDR.GPUDirectModule {
				t.Errorf("port %+v", p)
			}
		}},
		{"one gpu", FakeConfig{GPUs: 1, NICs: -1}, nil, func(t *testing.T, rep *Report) {
			if rep.NCCL.Ranks != 1 || float64(rep.NCCL.Sweeps[0].Rows[0].OOP.BusBW) != 0 {
				t.Errorf("1-rank busbw should be 0 (factor 0): %+v", rep.NCCL.Sweeps[0].Rows[0])
			}
			if statusOf(rep)["gdr"] != StatusSkipped || rep.Topo.Node.NICs.Count != 0 {
				t.Errorf("statuses %v", rep.Probes)
			}
		}},
		{"missing libraries are skipped", FakeConfig{Missing: []string{"nvml", "nccl", "ibverbs"}}, nil, func(t *testing.T, rep *Report) {
			st := statusOf(rep)
			if st["topo"] != StatusSkipped || st["nccl"] != StatusSkipped || st["gdr"] != StatusSkipped || st["copy"] != StatusOK || st["p2p"] != StatusOK {
				t.Errorf("statuses %+v", rep.Probes)
			}
			for _, p := range rep.Probes {
				if p.Status == StatusSkipped && !strings.Contains(p.Error, "not found") {
					t.Errorf("%s skipped without naming the library: %q", p.Name, p.Error)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := fakeOptions(t.TempDir())
			o.MaxBytes = model.MiB
			if tc.probes != nil {
				o.Probes = tc.probes
			}
			rep, err := Run(context.Background(), NewFake(tc.cfg), o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			tc.check(t, rep)
		})
	}
}

// spyBackend wraps a Fake to look at the report file in the middle of a run
// and to make NCCL fail.
type spyBackend struct {
	*Fake
	out      string
	midway   *Report
	failNCCL bool
}

func (s *spyBackend) Collectives() (Collectives, error) {
	if data, err := os.ReadFile(s.out); err == nil {
		s.midway, _ = DecodeReport(data)
	}
	c, err := s.Fake.Collectives()
	if err != nil || !s.failNCCL {
		return c, err
	}
	return failingNCCL{c}, nil
}

type failingNCCL struct{ Collectives }

func (failingNCCL) InitAll([]int) ([]Comm, error) {
	return nil, errors.New("nccl: ncclCommInitAll: unhandled system error (ncclResult 2)")
}

func TestRunWritesAsItGoes(t *testing.T) {
	o := fakeOptions(t.TempDir())
	o.MaxBytes = model.MiB
	spy := &spyBackend{Fake: NewFake(FakeConfig{}), out: o.Out, failNCCL: true}
	rep, err := Run(context.Background(), spy, o)
	var pe *ProbeError
	if !errors.As(err, &pe) || len(pe.Failed) != 1 || pe.Failed[0].Name != "nccl" || !strings.Contains(err.Error(), "ncclCommInitAll") {
		t.Fatalf("Run error %v, want a ProbeError for nccl", err)
	}
	// When the nccl probe started, the earlier probes were already on disk.
	if spy.midway == nil || spy.midway.Topo == nil || spy.midway.Copy == nil || spy.midway.P2P == nil {
		t.Fatalf("report on disk before nccl: %+v", spy.midway)
	}
	if st := statusOf(spy.midway); st["copy"] != StatusOK || st["nccl"] != StatusRunning || st["gdr"] != StatusPending {
		t.Errorf("statuses on disk mid-run: %v", st)
	}
	st := statusOf(rep)
	if st["nccl"] != StatusFailed || st["gdr"] != StatusOK {
		t.Errorf("final statuses %v", st)
	}
	data, _ := os.ReadFile(o.Out)
	disk, err := DecodeReport(data)
	if err != nil || statusOf(disk)["nccl"] != StatusFailed {
		t.Errorf("final file: %v %+v", err, disk)
	}
	if _, err := os.Stat(o.NCCLText); !os.IsNotExist(err) {
		t.Errorf("nccl-tests text written for a failed probe: %v", err)
	}
	// No temporary files are left behind.
	ents, _ := os.ReadDir(filepath.Dir(o.Out))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("left %s", e.Name())
		}
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := fakeOptions(t.TempDir())
	rep, err := Run(ctx, NewFake(FakeConfig{}), o)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error %v, want context.Canceled", err)
	}
	for _, p := range rep.Probes {
		if p.Status != StatusSkipped {
			t.Errorf("%s: %s", p.Name, p.Status)
		}
	}
}

func TestNodeJSONRoundTrip(t *testing.T) {
	o := fakeOptions(t.TempDir())
	o.Probes = []string{"topo"}
	rep, err := Run(context.Background(), NewFake(FakeConfig{GPUs: 8, NICs: 4}), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rep.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"host_bridges"`) || strings.Contains(string(b), `"HostBridges"`) {
		t.Error("node spec not in YAML field names")
	}
	back, err := DecodeReport(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := back.Encode()
	if string(b) != string(b2) {
		t.Error("report does not survive a decode/encode round trip")
	}
	if err := back.Topo.Node.Validate(); err != nil {
		t.Errorf("decoded spec: %v", err)
	}
}
