package sim_test

import (
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// TestP2PChannels checks NCCL's point-to-point channel rules (enqueue.cc,
// paths.cc; worked values in the p2p research notes) on an 8x H100
// NVSwitch node and on 8-GPU nodes with one 400G NIC per GPU.
func TestP2PChannels(t *testing.T) {
	one := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 1, NCCLVersion: "2.29"})
	pc := one.Tuner.P2PChannels()
	// 24 coll channels -> 32 p2p channels; NVLink peers 2 x 18 links = 36
	// -> capped at 32.
	if pc.Total != 32 || pc.PerPeer != 32 {
		t.Errorf("1 node: %d p2p channels, %d per peer; want 32, 32", pc.Total, pc.PerPeer)
	}
	if c := one.Tuner.P2PChunkBytes(); c != 512<<10 {
		t.Errorf("1 node all-NVLink chunk %d, want 512 KiB", c)
	}
	// Channels of one 8-rank operation: 4 up to 64 MiB (4 x 16 MiB parts),
	// then doubling while parts exceed 16 MiB, up to 32.
	for _, tc := range []struct {
		bytes int64
		want  int
	}{{64 << 10, 1}, {128 << 10, 2}, {256 << 10, 4}, {32 << 20, 4}, {64 << 20, 4}, {128 << 20, 8}, {256 << 20, 16}, {512 << 20, 32}, {1 << 30, 32}} {
		if got := one.Tuner.P2POpFor(tc.bytes).Channels; got != tc.want {
			t.Errorf("1 node, %d B: %d channels, want %d", tc.bytes, got, tc.want)
		}
	}
	// NCCL 2.13-2.19 caps one 8-rank operation at 16 channels.
	old := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 1, NCCLVersion: "2.18"})
	if got := old.Tuner.P2POpFor(1 << 30).Channels; got != 16 {
		t.Errorf("2.18, 1 GiB: %d channels, want 16", got)
	}
	// Across nodes with one 400G NIC per GPU behind Gen5 the communicator
	// has 16 coll channels (nccl#1453: "Channel 00/16" on 3 x 8 H100), so
	// 16 p2p channels. 2.29+ starts at ceil(50/14) = 4 per network peer and
	// halves while perPeer x ceil(ranks/8) > 16; 2.20-2.28 gives 2, and 1
	// once 2 x ranks > 4 x 16; 2.12-2.19 2; 2.11 1.
	for _, tc := range []struct {
		version string
		nodes   int
		want    int
	}{{"2.29", 2, 4}, {"2.29", 8, 2}, {"2.29", 16, 1}, {"2.29", 32, 1}, {"2.21", 2, 2}, {"2.21", 8, 1}, {"2.21", 16, 1}, {"2.19", 16, 2}, {"2.11", 2, 1}} {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: tc.nodes, NICs: "8x400G-ib", NCCLVersion: tc.version})
		if got := e.Tuner.P2PChannels().Total; got != 16 {
			t.Errorf("%s, %d nodes: %d p2p channels, want 16", tc.version, tc.nodes, got)
		}
		if got := e.Tuner.P2PChannels().PerPeer; got != tc.want {
			t.Errorf("%s, %d nodes: %d p2p channels per peer, want %d", tc.version, tc.nodes, got, tc.want)
		}
		if c := e.Tuner.P2PChunkBytes(); c != 128<<10 {
			t.Errorf("%s, %d nodes: chunk %d, want 128 KiB", tc.version, tc.nodes, c)
		}
	}
	// NCCL_NCHANNELS_PER_NET_PEER overrides the default.
	set := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, NICs: "8x400G-ib", NCCLVersion: "2.21", Set: []string{"NCCL_NCHANNELS_PER_NET_PEER=4"}})
	if got := set.Tuner.P2PChannels().PerPeer; got != 4 {
		t.Errorf("NCCL_NCHANNELS_PER_NET_PEER=4: %d per peer", got)
	}
}

// TestP2PProto checks the protocol of one operation (enqueue.cc
// addP2pToPlan): LL while the operation fits NCCL_P2P_LL_THRESHOLD
// (16 KiB) per channel, from 2.19 over the whole operation, in 2.14-2.18
// per channel part, never before 2.14.
func TestP2PProto(t *testing.T) {
	for _, tc := range []struct {
		version string
		bytes   int64
		want    model.Proto
	}{
		{"2.29", 0, model.ProtoLL}, {"2.29", 8, model.ProtoLL}, {"2.29", 16 << 10, model.ProtoLL},
		// 2 channels from 128 KiB (one per 64 KiB part): 32 KiB fits 2 x 16 KiB.
		{"2.29", 16<<10 + 1, model.ProtoSimple}, {"2.29", 128 << 10, model.ProtoSimple},
		{"2.18", 16 << 10, model.ProtoLL}, {"2.18", 32 << 10, model.ProtoSimple},
		{"2.13", 8, model.ProtoSimple},
	} {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", NCCLVersion: tc.version})
		if got := e.Tuner.P2POpFor(tc.bytes).Proto; got != tc.want {
			t.Errorf("%s, %d B: %s, want %s", tc.version, tc.bytes, got, tc.want)
		}
	}
}

// TestP2PSmallLatency: 2x RTX 2080 Ti over SHM (shared/data raw/
// nccltests_rtx2080ti_1x2_pcie-nop2p_autodl_1.txt) measures 12.9-13.5 us
// for alltoall_perf at 32 B-1 KiB, against 12.3 for all_reduce_perf at 8 B
// (LL ring). NCCL runs such operations LL, so the model's AlltoAll stays
// within the launch and base-latency gap of its LL AllReduce (2 us), not the
// ~5 us more a Simple step costs.
func TestP2PSmallLatency(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: "RTX-2080TI", GPUsPerNode: 2, Set: []string{"NCCL_P2P_DISABLE=1"}})
	a2a := predict(t, e, model.AlltoAll, sim.EngineDES, "", 64)
	ar := predict(t, e, model.AllReduce, sim.EngineDES, "", 8)
	if d := a2a.TimeUs - ar.TimeUs; d > 2 {
		t.Errorf("AlltoAll 64 B %.1f us against AllReduce 8 B %.1f: %.1f us more (measured 13.1 and 12.3)", a2a.TimeUs, ar.TimeUs, d)
	}
}
