package sim_test

import (
	"math"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// shm2080 is the 2x RTX 2080 Ti box of shared/data raw/
// nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt: P2P refused, so SHM.
func shm2080(set ...string) scenarios.Overrides {
	return scenarios.Overrides{Node: "pcie-gpu-server", GPU: "RTX-2080TI", GPUsPerNode: 2, Set: append([]string{"NCCL_P2P_DISABLE=1"}, set...)}
}

// TestSHMOneWayTwoWay: over SHM a GPU that only sends or only receives
// (Broadcast and Reduce on 2 GPUs) runs near its PCIe link, one that sends
// and receives at once (AlltoAll) at about a third of it, and the ring
// collectives in between by their steps: on 2 GPUs AllGather's loop is one
// send-only and one receive-only step (shm.eff.lockstep), AllReduce's adds
// one step that does both. The measured busbw of
// nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt (out of place: all_reduce
// line 38 at 1 GiB, all_gather line 79 at 512 MiB, broadcast line 122,
// reduce line 165, alltoall line 249 at 1 GiB) holds both engines within
// 10%. The file's AllGather at 1 GiB (3.79, against 3.23-3.39 at 64-512
// MiB) is not asserted.
func TestSHMOneWayTwoWay(t *testing.T) {
	e := newEnv(t, shm2080())
	tests := []struct {
		coll     model.Collective
		bytes    model.Bytes
		measured float64
	}{
		{model.Broadcast, 1 << 30, 11.09},
		{model.Reduce, 1 << 30, 11.14},
		{model.AllReduce, 1 << 30, 4.00},
		{model.AllGather, 512 << 20, 3.39},
		{model.AlltoAll, 1 << 30, 4.61},
	}
	for _, tc := range tests {
		for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
			got := predict(t, e, tc.coll, eng, "", tc.bytes)
			if rel := got.BusBW/tc.measured - 1; math.Abs(rel) > 0.10 {
				t.Errorf("%s %s %d MiB: busbw %.2f GB/s vs measured %.2f: %+.1f%%", tc.coll, eng, tc.bytes>>20, got.BusBW, tc.measured, 100*rel)
			}
			if !strings.Contains(got.Bottleneck, "SHM") {
				t.Errorf("%s %s: bottleneck %q, want the SHM links", tc.coll, eng, got.Bottleneck)
			}
		}
	}
	// The ratios follow the terms: AlltoAll/Broadcast is twoway/oneway;
	// AllGather runs at lockstep/2 and AllReduce at 2/(1/twoway +
	// 2/lockstep), per direction.
	p := sim.DefaultParams()
	bc := predict(t, e, model.Broadcast, sim.EngineAnalytic, "", 1<<30)
	ratios := []struct {
		coll model.Collective
		want float64
	}{
		{model.AlltoAll, p.SHMTwoWayEff / p.SHMOneWayEff},
		{model.AllGather, p.SHMLockstepEff / 2 / p.SHMOneWayEff},
		{model.AllReduce, 2 / (1/p.SHMTwoWayEff + 2/p.SHMLockstepEff) / p.SHMOneWayEff},
	}
	for _, r := range ratios {
		got := predict(t, e, r.coll, sim.EngineAnalytic, "", 1<<30)
		if q := got.BusBW / bc.BusBW; math.Abs(q/r.want-1) > 0.02 {
			t.Errorf("%s/Broadcast busbw %.3f, want %.3f from the shm.eff terms", r.coll, q, r.want)
		}
	}
}

// TestSHMPerGPU: the SHM rate is the GPU's, not the channel's: nccl#384
// measures AllReduce 3.9 and Broadcast 10.3 GB/s over SHM on PCIe Gen3 x16
// with NCCL_MAX_NCHANNELS=1, the autodl run 4.0 and 11.1 on 2 channels.
// One channel and two give the same bandwidth-regime busbw.
func TestSHMPerGPU(t *testing.T) {
	two := newEnv(t, shm2080())
	one := newEnv(t, shm2080("NCCL_MAX_NCHANNELS=1"))
	for _, coll := range []model.Collective{model.AllReduce, model.Broadcast} {
		a := predict(t, two, coll, sim.EngineAnalytic, "", 1<<30)
		b := predict(t, one, coll, sim.EngineAnalytic, "", 1<<30)
		if a.Choice.Channels != 2 || b.Choice.Channels != 1 {
			t.Fatalf("%s: %d and %d channels, want 2 and 1", coll, a.Choice.Channels, b.Choice.Channels)
		}
		if r := b.BusBW / a.BusBW; math.Abs(r-1) > 0.01 {
			t.Errorf("%s 1G: 1 channel %.2f GB/s, 2 channels %.2f: ratio %.3f, want 1", coll, b.BusBW, a.BusBW, r)
		}
	}
}

// TestSHMChainMiddle: in a Broadcast chain over more than 2 GPUs the
// middle GPUs receive and send at once, so the chain runs at the both-ways
// rate; only on 2 GPUs does it run one way.
func TestSHMChainMiddle(t *testing.T) {
	p := sim.DefaultParams()
	two := predict(t, newEnv(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: "L40S", GPUsPerNode: 2, Set: []string{"NCCL_P2P_DISABLE=1"}}), model.Broadcast, sim.EngineAnalytic, "", 1<<30)
	four := predict(t, newEnv(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: "L40S", GPUsPerNode: 4, Set: []string{"NCCL_P2P_DISABLE=1"}}), model.Broadcast, sim.EngineAnalytic, "", 1<<30)
	want := p.SHMTwoWayEff / p.SHMOneWayEff
	if r := four.BusBW / two.BusBW; r > want*1.05 {
		t.Errorf("Broadcast busbw on 4 GPUs %.2f, on 2 %.2f: ratio %.3f, want at most the both-ways/one-way ratio %.3f", four.BusBW, two.BusBW, r, want)
	}
}
