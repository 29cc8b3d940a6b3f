package scenarios

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func build(t *testing.T, preset string, nodes int, mut func(*model.ClusterSpec)) *model.Cluster {
	t.Helper()
	p, err := LookupPreset(preset)
	if err != nil {
		t.Fatal(err)
	}
	spec := model.ClusterSpec{Node: p.Node, Nodes: nodes}
	if mut != nil {
		mut(&spec)
	}
	c, err := spec.Build()
	if err != nil {
		t.Fatalf("%s: %v", preset, err)
	}
	return c
}

func resolve(t *testing.T, c *model.Cluster) *model.Resolution {
	t.Helper()
	r, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestPresetsBuildAndValidate(t *testing.T) {
	want := []string{"dgx-a100", "dgx-h100", "hgx-h200", "dgx-b200", "hgx-h100-4gpu", "hgx-a100-4gpu", "v100-4gpu-nvlink", "dgx1-v100", "pcie-gpu-server", "gb200-nvl72"}
	ps := Presets()
	if len(ps) != len(want) {
		t.Fatalf("%d presets, want %d", len(ps), len(want))
	}
	for i, p := range ps {
		if p.Name != want[i] {
			t.Errorf("preset %d = %s, want %s", i, p.Name, want[i])
		}
		if p.Node.Description == "" || p.Node.Source == "" {
			t.Errorf("%s: missing description or source", p.Name)
		}
		for _, nodes := range []int{1, 2} {
			c := build(t, p.Name, nodes, nil)
			if err := c.Topo.Validate(); err != nil {
				t.Errorf("%s: %v", p.Name, err)
			}
			if got := c.NumRanks(); got != nodes*p.Node.GPUs {
				t.Errorf("%s x%d: %d ranks", p.Name, nodes, got)
			}
			resolve(t, c)
		}
	}
	if _, err := LookupPreset("dgx-a1000"); err == nil || !strings.Contains(err.Error(), "known: dgx-a100") {
		t.Errorf("unknown preset error = %v", err)
	}
}

// TestTransports checks path types and transports per template against
// NCCL's rules (nccl-facts §3.2-3.6) and the topo -m files in shared/data.
func TestTransports(t *testing.T) {
	tests := []struct {
		name    string
		preset  string
		nodes   int
		env     map[string]string
		gpu     string
		a, b    int
		typ     model.PathType
		tr      model.Transport
		smiName string // nvidia-smi name of the PCIe path between GPUs a and b, "" to skip
	}{
		// NVSwitch: every pair NVL, P2P.
		{"dgx-a100 nvswitch", "dgx-a100", 1, nil, "", 0, 7, model.PathNVL, model.TransportP2P, "SYS"},
		// DGX A100: GPU0/1 share a switch complex (PXB), GPU0/2 the socket (NODE), 0/4 SYS, as in topo_a100sxm80_hgx8_roce100x8_deepep13.txt.
		{"dgx-a100 complex", "dgx-a100", 1, nil, "", 0, 1, model.PathNVL, model.TransportP2P, "PXB"},
		{"dgx-a100 socket", "dgx-a100", 1, nil, "", 0, 2, model.PathNVL, model.TransportP2P, "NODE"},
		// Hybrid cube-mesh: 0-5 has no direct link, goes through GPU 1 or 4 (NVB).
		{"dgx1 nvb", "dgx1-v100", 1, nil, "", 0, 5, model.PathNVB, model.TransportP2P, ""},
		{"dgx1 nvb disabled", "dgx1-v100", 1, map[string]string{"NCCL_NVB_DISABLE": "1"}, "", 0, 5, model.PathSYS, model.TransportSHM, ""},
		// PCIe server: same switch PIX -> P2P; across switches PHB -> SHM at the default P2P level PXB.
		{"pcie pix", "pcie-gpu-server", 1, nil, "", 0, 1, model.PathPIX, model.TransportP2P, "PIX"},
		{"pcie phb", "pcie-gpu-server", 1, nil, "", 1, 2, model.PathPHB, model.TransportSHM, "NODE"},
		{"pcie sys", "pcie-gpu-server", 1, nil, "", 3, 4, model.PathSYS, model.TransportSHM, "SYS"},
		{"pcie p2p level sys", "pcie-gpu-server", 1, map[string]string{"NCCL_P2P_LEVEL": "SYS"}, "", 3, 4, model.PathSYS, model.TransportP2P, "SYS"},
		{"pcie p2p disabled", "pcie-gpu-server", 1, map[string]string{"NCCL_P2P_DISABLE": "1"}, "", 0, 1, model.PathPIX, model.TransportSHM, "PIX"},
		// GeForce without PCIe P2P: SHM even under one switch (topo_rtx2080ti_1x2_pcie-nop2p_autodl.txt shows NS).
		{"2080ti no p2p", "pcie-gpu-server", 1, nil, "RTX-2080TI", 0, 1, model.PathPIX, model.TransportSHM, "PIX"},
		// SHM disabled with a NIC: NET inside the node.
		{"shm disabled", "pcie-gpu-server", 1, map[string]string{"NCCL_SHM_DISABLE": "1"}, "", 1, 2, model.PathPHB, model.TransportNET, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := build(t, tc.preset, tc.nodes, func(s *model.ClusterSpec) {
				s.Env = tc.env
				if tc.gpu != "" {
					s.Node.GPU = tc.gpu
				}
			})
			r := resolve(t, c)
			ga, gb := c.Nodes[0].GPUs[tc.a], c.Nodes[0].GPUs[tc.b]
			p := r.GPU(ga, gb)
			if p.Type != tc.typ || p.Transport != tc.tr {
				t.Errorf("GPU%d-GPU%d: %s via %s (%s); want %s via %s", tc.a, tc.b, p.Type, p.Transport, p.Reason, tc.typ, tc.tr)
			}
			if tc.tr != model.TransportP2P && p.Reason == "" {
				t.Error("a fallback without a reason")
			}
			if tc.smiName != "" {
				_, _, name, err := r.PCIePath(ga, gb)
				if err != nil || name != tc.smiName {
					t.Errorf("PCIe path = %s %v, want %s", name, err, tc.smiName)
				}
			}
		})
	}
}

func TestNetPaths(t *testing.T) {
	tests := []struct {
		name   string
		preset string
		env    map[string]string
		nics   string
		gpu    int
		gdr    bool
		socket bool
		pxn    bool
		typ    model.PathType
	}{
		// DGX A100: GPU0 and NIC0 under one switch complex (PXB) -> GDR at the default level.
		{"a100 gdr", "dgx-a100", nil, "", 0, true, false, false, model.PathPXB},
		{"a100 gdr level loc", "dgx-a100", map[string]string{"NCCL_NET_GDR_LEVEL": "LOC"}, "", 0, false, false, false, model.PathPXB},
		{"a100 gdr level 1 (PIX)", "dgx-a100", map[string]string{"NCCL_NET_GDR_LEVEL": "1"}, "", 0, false, false, false, model.PathPXB},
		// DGX H100: GPU-NIC PIX.
		{"h100 pix", "dgx-h100", nil, "", 0, true, false, false, model.PathPIX},
		// IB disabled: NET/Socket, no GDR.
		{"ib disabled", "dgx-h100", map[string]string{"NCCL_IB_DISABLE": "1"}, "", 0, false, true, false, model.PathPIX},
		// TCP NICs: sockets.
		{"tcp", "dgx-h100", nil, "8x100G-tcp", 0, false, true, false, model.PathPIX},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := build(t, tc.preset, 2, func(s *model.ClusterSpec) {
				s.Env = tc.env
				if tc.nics != "" {
					n, sp, k, err := ParseNICs(tc.nics)
					if err != nil {
						t.Fatal(err)
					}
					s.Node = s.Node.WithNICs(n, sp, k)
				}
			})
			r := resolve(t, c)
			g := c.Nodes[0].GPUs[tc.gpu]
			np := r.LocalNICs(g)[0]
			if np.GDR != tc.gdr || np.Socket != tc.socket || (np.Via != model.None) != tc.pxn || np.DirectType != tc.typ {
				t.Errorf("GPU%d -> %s: type %s gdr %v socket %v via %d (%s)", tc.gpu, c.Topo.Elem(np.NIC).Name, np.DirectType, np.GDR, np.Socket, np.Via, np.Reason)
			}
			if !tc.gdr && np.Reason == "" {
				t.Error("no GDR without a reason")
			}
		})
	}
	// PXN: on a DGX H100 a GPU reaches another GPU's NIC through that GPU (NVLink + PIX).
	c := build(t, "dgx-h100", 2, nil)
	r := resolve(t, c)
	np := r.NetTo(c.Nodes[0].GPUs[1], c.Nodes[0].NICs[0])
	if np.Type != model.PathPXN || np.Via != c.Nodes[0].GPUs[0] || !np.GDR {
		t.Errorf("GPU1 -> NIC0 = %s via %d gdr %v, want PXN via GPU0", np.Type, np.Via, np.GDR)
	}
	c = build(t, "dgx-h100", 2, func(s *model.ClusterSpec) { s.Env = map[string]string{"NCCL_PXN_DISABLE": "1"} })
	r = resolve(t, c)
	if np := r.NetTo(c.Nodes[0].GPUs[1], c.Nodes[0].NICs[0]); np.Via != model.None {
		t.Error("PXN used with NCCL_PXN_DISABLE=1")
	}
}

func TestIBHCAFilter(t *testing.T) {
	c := build(t, "dgx-h100", 2, func(s *model.ClusterSpec) { s.Env = map[string]string{"NCCL_IB_HCA": "=mlx5_0"} })
	r := resolve(t, c)
	if len(r.NICUsable[0]) != 1 {
		t.Fatalf("NCCL_IB_HCA==mlx5_0 leaves %d NICs", len(r.NICUsable[0]))
	}
	g := r.SearchGraphs().Ring
	for _, ch := range g.Channels {
		if ch.NetIn != 0 || ch.NetOut != 0 {
			t.Fatal("a channel uses a filtered NIC")
		}
	}
	// A filter that matches no NIC builds, but NCCL cannot use the network.
	c2, err := model.ClusterSpec{Node: c.Spec.Node, Nodes: 2, Env: map[string]string{"NCCL_IB_HCA": "mlx9"}}.Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Resolve(); err == nil {
		t.Error("an HCA filter matching nothing was accepted")
	}
}

// TestChannelCounts checks the emulated graph search against NCCL logs and
// the worked examples: DGX A100 and DGX H100 get 24 coll channels
// (nccl-facts §2.7, §3.8); the Snellius 4x H100 NVLink-mesh node logs 24
// (nccltests_h100sxm_1x4_nvlink_snellius_1.txt). On the DGX-1 hybrid
// cube-mesh NCCL's rings use the single links too (the rings exist "to
// maximize the link utilization of the physical topology (e.g. cube mesh in
// a DGX1)", NVIDIA/nccl#299; a 6-link V100 node's graph file holds 6 rings,
// NVIDIA/nccl#713): 6 graph channels at 20 GB/s fill all 6 NVLinks of a
// GPU, and bwIntra < 25 is not duplicated, so 12 coll channels.
func TestChannelCounts(t *testing.T) {
	for _, tc := range []struct {
		preset string
		comm   int
		ringBW model.GBps // busBw = graph channels x bw after duplication
	}{
		{"dgx-a100", 24, 240},
		{"dgx-h100", 24, 360},
		{"hgx-h100-4gpu", 24, 360},
		{"dgx1-v100", 12, 120},
	} {
		c := build(t, tc.preset, 1, nil)
		r := resolve(t, c)
		tu := r.Tuner()
		if tu.CommChannels != tc.comm {
			t.Errorf("%s: %d coll channels, want %d", tc.preset, tu.CommChannels, tc.comm)
		}
		if got := model.GBps(tu.RingGraphCh) * tu.RingBW; got != tc.ringBW {
			t.Errorf("%s: ring busBw %v, want %v", tc.preset, got, tc.ringBW)
		}
	}
}

// TestTunerDGXH100 reproduces the worked example of nccl-facts §2.7: ring
// Simple busBw 360, LL128 ~331, LL 141, NVLS ~476 GB/s; latencies ring LL
// 15.0, LL128 40.6, Simple 56, NVLS 25 us.
func TestTunerDGXH100(t *testing.T) {
	c := build(t, "dgx-h100", 1, nil)
	tu := resolve(t, c).Tuner()
	busFactor := 2 * 7.0 / 8
	checks := []struct {
		a     model.Algo
		p     model.Proto
		busBW float64
		latUs float64
	}{
		{model.AlgoRing, model.ProtoSimple, 360, 56},
		{model.AlgoRing, model.ProtoLL128, 331.2, 40.6},
		{model.AlgoRing, model.ProtoLL, 141, 15.0},
		{model.AlgoNVLS, model.ProtoSimple, 476, 25},
	}
	for _, ch := range checks {
		bw := tu.BW[model.AllReduce][ch.a][ch.p] * busFactor
		if d := bw - ch.busBW; d > 0.5 || d < -0.5 {
			t.Errorf("%s/%s busBw %.1f, want %.1f", ch.a, ch.p, bw, ch.busBW)
		}
		if d := tu.Lat[model.AllReduce][ch.a][ch.p] - ch.latUs; d > 0.05 || d < -0.05 {
			t.Errorf("%s/%s latency %.2f, want %.2f", ch.a, ch.p, tu.Lat[model.AllReduce][ch.a][ch.p], ch.latUs)
		}
	}
	// LL wins small messages and NVLS takes over at a few MB (nccl-facts §2.7).
	small, _ := tu.Select(model.AllReduce, 1024, nil, nil)
	large, _ := tu.Select(model.AllReduce, 1<<30, nil, nil)
	if small.Algo != model.AlgoRing || small.Proto != model.ProtoLL || large.Algo != model.AlgoNVLS {
		t.Errorf("selection small %s/%s large %s/%s", small.Algo, small.Proto, large.Algo, large.Proto)
	}
	// NCCL_ALGO=Ring removes NVLS; a forced unavailable algorithm is an error.
	c2 := build(t, "dgx-h100", 1, func(s *model.ClusterSpec) { s.Env = map[string]string{"NCCL_ALGO": "Ring"} })
	tu2 := resolve(t, c2).Tuner()
	if ch, _ := tu2.Select(model.AllReduce, 1<<30, nil, nil); ch.Algo != model.AlgoRing {
		t.Errorf("NCCL_ALGO=Ring chose %s", ch.Algo)
	}
	nvls := model.AlgoNVLS
	a100 := resolve(t, build(t, "dgx-a100", 1, nil)).Tuner()
	if _, err := a100.Select(model.AllReduce, 1<<20, &nvls, nil); err == nil {
		t.Error("NVLS selected on A100")
	}
	// Small sizes run on few channels (nccl-facts §2.6).
	if small.Channels >= tu.CommChannels {
		t.Errorf("1 KiB uses %d channels", small.Channels)
	}
}

func TestKnobs(t *testing.T) {
	k, err := model.ParseKnobs(map[string]string{"P2P_LEVEL": "phb", "NCCL_ALGO": "^tree", "NCCL_PROTO": "LL128,Simple", "NCCL_MAX_NCHANNELS": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if k.P2PLevel != model.PathPHB || k.Algos[model.AlgoTree] || !k.Algos[model.AlgoRing] || k.Protos[model.ProtoLL] || k.MaxChannels != 4 {
		t.Errorf("parsed %+v", k)
	}
	bad := []map[string]string{
		{"NCCL_P2P_LEVEL": "FAR"},
		{"NCCL_ALGO": "Bogus"},
		{"NCCL_MIN_NCHANNELS": "8", "NCCL_MAX_NCHANNELS": "4"},
		{"NCCL_FOO": "1"},
		{"NCCL_IB_DISABLE": "yes"},
	}
	for _, env := range bad {
		if _, err := model.ParseKnobs(env); err == nil {
			t.Errorf("%v accepted", env)
		}
	}
	// Legacy integers: 0 LOC, 1 PIX, 2 PXB, 3 PHB, 4-5 SYS (nccl-facts §3.4).
	for in, want := range map[string]model.PathType{"0": model.PathLOC, "1": model.PathPIX, "2": model.PathPXB, "3": model.PathPHB, "5": model.PathSYS, "NODE": model.PathPHB} {
		if got, err := model.ParsePathLevel(in); err != nil || got != want {
			t.Errorf("ParsePathLevel(%s) = %s %v", in, got, err)
		}
	}
}

func TestGPUsPerNodeAndNICs(t *testing.T) {
	c := build(t, "dgx1-v100", 1, func(s *model.ClusterSpec) { s.GPUsPerNode = 4 })
	if c.NumRanks() != 4 {
		t.Fatalf("%d ranks", c.NumRanks())
	}
	if _, err := (model.ClusterSpec{Node: Presets()[0].Node, Nodes: 1, GPUsPerNode: 9}).Build(); err == nil {
		t.Error("9 GPUs of an 8-GPU node accepted")
	}
	// Two NICs on an eight-slot DGX A100 land on both sockets.
	c = build(t, "dgx-a100", 2, func(s *model.ClusterSpec) { s.Node = s.Node.WithNICs(2, "100G", model.NICRoCE) })
	s0 := c.Topo.Elem(c.Nodes[0].NICs[0]).Socket
	s1 := c.Topo.Elem(c.Nodes[0].NICs[1]).Socket
	if s0 == s1 {
		t.Errorf("both NICs on socket %d", s0)
	}
}

// TestDGX1RingsUseEveryLink checks that the DGX-1 rings load every directed
// NVLink of the hybrid cube-mesh to its capacity: the double links carry two
// 20 GB/s channels each way, the single links one (NVIDIA/nccl#299).
func TestDGX1RingsUseEveryLink(t *testing.T) {
	c := build(t, "dgx1-v100", 1, nil)
	r := resolve(t, c)
	g := r.SearchGraphs().Ring
	if g.NChannels != 6 || g.BWIntra != 20 {
		t.Fatalf("ring graph %d channels at %v GB/s, want 6 at 20", g.NChannels, g.BWIntra)
	}
	gpus := c.Nodes[0].GPUs
	load := map[model.LinkID]model.GBps{}
	for _, ch := range g.Channels {
		for i := range ch.GPUs {
			a, b := gpus[ch.GPUs[i]], gpus[ch.GPUs[(i+1)%len(ch.GPUs)]]
			p := r.GPU(a, b)
			if p.Type != model.PathNVL {
				t.Fatalf("ring hop %d->%d is %s, want a direct NVLink", ch.GPUs[i], ch.GPUs[(i+1)%len(ch.GPUs)], p.Type)
			}
			for _, l := range p.Route {
				load[l] += g.BWIntra
			}
		}
	}
	for _, a := range gpus {
		for _, l := range c.Topo.Out[a] {
			lk := c.Topo.Links[l]
			if lk.Kind != model.LinkNVLink {
				continue
			}
			if load[l] != lk.NCCLBW {
				t.Errorf("NVLink %d carries %v GB/s of rings, capacity %v", l, load[l], lk.NCCLBW)
			}
		}
	}
}
