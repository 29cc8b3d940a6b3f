package sim_test

import (
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestAlltoAllXxrjun holds both engines to the 8x H100 NVSwitch run of
// shared/data raw/nccltests_h100sxm_1x8_nvswitch_xxrjun_1.txt (NCCL 2.29.2,
// alltoall_perf and sendrecv_perf out-of-place busbw): AlltoAll within 10%
// at 64 MiB-1 GiB, where an all-to-all through the switch gets less than
// the permutation traffic of SendRecv and each part is only a few p2p steps
// long, and SendRecv, whose channels grow with the size, within 10% at
// 64 MiB-16 GiB.
func TestAlltoAllXxrjun(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", NCCLVersion: "2.29.2"})
	tests := []struct {
		coll   model.Collective
		points [][2]float64 // size bytes, measured busbw GB/s
	}{
		{model.AlltoAll, [][2]float64{{64 << 20, 272.47}, {128 << 20, 298.58}, {256 << 20, 301.95}, {512 << 20, 310.85}, {1 << 30, 331.99}}},
		{model.SendRecv, [][2]float64{{64 << 20, 81.82}, {128 << 20, 162.54}, {256 << 20, 299.46}, {512 << 20, 355.75}, {1 << 30, 360.98}, {16 << 30, 367.25}}},
	}
	for _, tc := range tests {
		for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
			for _, p := range tc.points {
				got := predict(t, e, tc.coll, eng, "", model.Bytes(p[0]))
				if rel := got.BusBW/p[1] - 1; math.Abs(rel) > 0.10 {
					t.Errorf("%s %s at %s: model %.1f GB/s, measured %.1f (xxrjun file): %+.1f%%", eng, tc.coll, model.FormatBytes(model.Bytes(p[0])), got.BusBW, p[1], 100*rel)
				}
			}
		}
	}
}

// TestAlltoAllSwitchEff: at 16 GiB, where every p2p term but the links has
// faded, AlltoAll through an NVSwitch reaches p2p.a2a.switch.eff of the
// busbw SendRecv reaches on the same links, while on a 4-GPU NVLink mesh
// (no switch: every pair has its own links) the two are NVLink-bound alike.
func TestAlltoAllSwitchEff(t *testing.T) {
	eff := sim.DefaultParams().A2ASwitchEff
	for _, tc := range []struct {
		node string
		want float64
	}{{"dgx-h100", eff}, {"dgx-a100", eff}} {
		e := newEnv(t, scenarios.Overrides{Node: tc.node})
		a := predict(t, e, model.AlltoAll, sim.EngineAnalytic, "", 16<<30)
		s := predict(t, e, model.SendRecv, sim.EngineAnalytic, "", 16<<30)
		if r := a.BusBW / s.BusBW; math.Abs(r-tc.want) > 0.01 {
			t.Errorf("%s: AlltoAll/SendRecv busbw at 16 GiB = %.1f/%.1f = %.3f, want %.3f", tc.node, a.BusBW, s.BusBW, r, tc.want)
		}
	}
	// On the mesh a GPU's AlltoAll blocks use three disjoint NVLink
	// bundles, SendRecv one: the switch term must not apply there.
	e := newEnv(t, scenarios.Overrides{Node: "hgx-h100-4gpu"})
	p := sim.DefaultParams()
	p.A2ASwitchEff = 0.5
	c, err := resolve(t, scenarios.Overrides{Node: "hgx-h100-4gpu"}).Build()
	if err != nil {
		t.Fatal(err)
	}
	e2, err := sim.NewEnv(c, p)
	if err != nil {
		t.Fatal(err)
	}
	a := predict(t, e, model.AlltoAll, sim.EngineAnalytic, "", 4<<30)
	b := predict(t, e2, model.AlltoAll, sim.EngineAnalytic, "", 4<<30)
	if a.TimeUs != b.TimeUs {
		t.Errorf("hgx-h100-4gpu (NVLink mesh) AlltoAll 4 GiB: %.1f us with p2p.a2a.switch.eff %.2f, %.1f us with 0.5; the term is for switches only", a.TimeUs, eff, b.TimeUs)
	}
}

// TestP2PReceiveLag: SendRecv on 8x H100 uses 4 p2p channels at both 32
// and 64 MiB (P2POpFor), so the time between them is the 8 MiB more each
// channel moves at its p2p rate, and what stays at 32 MiB beyond the data
// is the base and step latency plus one 512 KiB step the receiver copies
// after the sender's last (NCCL_P2P_NVL_CHUNKSIZE on an all-NVLink node).
func TestP2PReceiveLag(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", NCCLVersion: "2.29.2"})
	p := sim.DefaultParams()
	cta, ok := p.Get("chan.cap.simple.hopper")
	if !ok {
		t.Fatal("no term chan.cap.simple.hopper")
	}
	perChan := cta * p.P2PChanShare // GB/s one p2p send gets
	a := predict(t, e, model.SendRecv, sim.EngineDES, "", 32<<20)
	b := predict(t, e, model.SendRecv, sim.EngineDES, "", 64<<20)
	wantStep := float64(8<<20) / (perChan * 1e3) // us for 8 MiB at perChan GB/s
	if d := b.TimeUs - a.TimeUs; math.Abs(d/wantStep-1) > 0.01 {
		t.Errorf("SendRecv 32 -> 64 MiB adds %.1f us, want %.1f (8 MiB per channel at %.2f GB/s)", d, wantStep, perChan)
	}
	data := float64(8<<20) / (perChan * 1e3)
	lag := float64(512<<10) / (perChan * 1e3)
	fixed := a.TimeUs - data
	if fixed < lag || fixed > lag+40 {
		t.Errorf("SendRecv 32 MiB: %.1f us beyond the data, want the %.1f us receive lag plus a few tens of us of latency", fixed, lag)
	}
}

// TestP2PRowProtocol: a row reports the protocol its point-to-point
// operations run, LL below NCCL_P2P_LL_THRESHOLD per channel and Simple
// above (model.Tuner.P2POpFor), not the Simple the tuner's placeholder row
// names.
func TestP2PRowProtocol(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-h100"})
	for _, tc := range []struct {
		size model.Bytes
		want model.Proto
	}{{2048, model.ProtoLL}, {64 << 20, model.ProtoSimple}} {
		p := predict(t, e, model.AlltoAll, sim.EngineDES, "", tc.size)
		if p.Choice.Proto != tc.want {
			t.Errorf("AlltoAll %s: row says %s, want %s", model.FormatBytes(tc.size), p.Choice.Proto, tc.want)
		}
	}
}
