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
// and receives at once (AllReduce, AlltoAll) at about a third of it. The
// measured 1 GiB busbw of nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt
// (out of place: all_reduce line 35, broadcast line 122, reduce line 165,
// alltoall line 249) holds both engines within 10%. The file's ring
// AllGather (3.2-3.8 GB/s) is below what the model gives it and is not
// asserted here.
func TestSHMOneWayTwoWay(t *testing.T) {
	e := newEnv(t, shm2080())
	tests := []struct {
		coll     model.Collective
		measured float64
	}{
		{model.Broadcast, 11.09},
		{model.Reduce, 11.14},
		{model.AllReduce, 4.00},
		{model.AlltoAll, 4.61},
	}
	for _, tc := range tests {
		for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
			got := predict(t, e, tc.coll, eng, "", 1<<30)
			if rel := got.BusBW/tc.measured - 1; math.Abs(rel) > 0.10 {
				t.Errorf("%s %s 1G: busbw %.2f GB/s vs measured %.2f: %+.1f%%", tc.coll, eng, got.BusBW, tc.measured, 100*rel)
			}
			if !strings.Contains(got.Bottleneck, "SHM") {
				t.Errorf("%s %s 1G: bottleneck %q, want the SHM links", tc.coll, eng, got.Bottleneck)
			}
		}
	}
	// Both ways is slower than one way by the ratio of the two terms.
	p := sim.DefaultParams()
	bc := predict(t, e, model.Broadcast, sim.EngineAnalytic, "", 1<<30)
	ar := predict(t, e, model.AllReduce, sim.EngineAnalytic, "", 1<<30)
	want := p.SHMTwoWayEff / p.SHMOneWayEff
	if r := ar.BusBW / bc.BusBW; math.Abs(r/want-1) > 0.02 {
		t.Errorf("AllReduce/Broadcast busbw %.3f, want shm.eff.twoway/shm.eff.oneway = %.3f", r, want)
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
