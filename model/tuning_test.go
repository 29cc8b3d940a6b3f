package model_test

import (
	"math"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

func tunerFor(t *testing.T, node string, nodes int, version string, set ...string) *model.Tuner {
	t.Helper()
	_, r := resolved(t, scenarios.Overrides{Node: node, Nodes: nodes, NCCLVersion: version, Set: set})
	return r.Tuner()
}

// resolved builds the cluster that CLI-style overrides describe and
// NCCL's view of it.
func resolved(t *testing.T, o scenarios.Overrides) (*model.Cluster, *model.Resolution) {
	t.Helper()
	return resolvedWith(t, o, nil)
}

// resolvedWith is resolved with the cluster spec changed by edit (if not
// nil) before it is built.
func resolvedWith(t *testing.T, o scenarios.Overrides, edit func(*model.ClusterSpec)) (*model.Cluster, *model.Resolution) {
	t.Helper()
	spec, err := o.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&spec)
	}
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}

// TestTunerSnellius222: 2 nodes x 4 H100 (4x NDR200, AMD CPUs) with NCCL
// 2.22.3, the snellius_h100_2x4_all_reduce case
// (raw/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt). NCCL 2.22
// connects trees before the first row and rings only within the 2 MiB row
// ("Connected all rings"): trees up to 1 MiB, a ring at 2 MiB. The 64-256
// MiB rows measure 102-119 GB/s busbw, above the ~100 GB/s a ring can reach
// through 4 NDR200 NICs per node, so they are trees too; the jump to 151
// GB/s at 512 MiB is the tree going from LL128 to Simple where the tree
// correction table ends.
func TestTunerSnellius222(t *testing.T) {
	tu := tunerFor(t, "hgx-h100-4gpu", 2, "2.22.3")
	// tuning.cc v2.22.3-1: Tree Simple has no base latency and 28 us per
	// hop on every class; trees do not pay the rings' network overhead.
	for _, c := range []struct {
		a    model.Algo
		p    model.Proto
		want float64
	}{
		{model.AlgoTree, model.ProtoSimple, 2 * (3*28 + 28)},
		{model.AlgoTree, model.ProtoLL, 6.8 + 2*(3*0.6+5.0)},
		{model.AlgoTree, model.ProtoLL128, 14 + 2*(3*1.25+8.5)},
		// nInterSteps = 2 nNodes in 2.12-2.22; intra steps floored at 3 x 2 us (AMD).
		{model.AlgoRing, model.ProtoSimple, 8.4 + 10*6 + 4*14},
	} {
		if got := tu.Lat[model.AllReduce][c.a][c.p]; math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s/%s latency %g us, NCCL 2.22 has %g", c.a, c.p, got, c.want)
		}
	}
	for _, c := range []struct {
		size model.Bytes
		a    model.Algo
		p    model.Proto
	}{
		{8, model.AlgoTree, model.ProtoLL},
		{1 << 20, model.AlgoTree, model.ProtoLL128},
		{2 << 20, model.AlgoRing, model.ProtoLL128},
		{64 << 20, model.AlgoTree, model.ProtoLL128},
		{256 << 20, model.AlgoTree, model.ProtoLL128},
		{512 << 20, model.AlgoTree, model.ProtoSimple},
	} {
		ch, err := tu.Select(model.AllReduce, c.size, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ch.Algo != c.a || ch.Proto != c.p {
			t.Errorf("%s: %s/%s, NCCL 2.22 picks %s/%s", model.FormatBytes(c.size), ch.Algo, ch.Proto, c.a, c.p)
		}
	}
}

// TestTunerRelease: the same cluster tuned as two releases. NCCL 2.8.4
// (the ABCI cases) has the older base latencies, LL hops x1.8 across
// nodes, nInterSteps 2(nNodes-1) and Ampere's 235 GB/s bus cap; 2.30 has
// the newest table.
func TestTunerRelease(t *testing.T) {
	old := tunerFor(t, "dgx-a100", 2, "2.8.4", "NCCL_NET_GDR_LEVEL=2")
	// Ring LL: 3.6 + (30-2) x 0.47 x 1.8 + 2 x 2.7 (tuning.cc v2.8.4-1).
	if got, want := old.Lat[model.AllReduce][model.AlgoRing][model.ProtoLL], 3.6+28*0.47*1.8+2*2.7; math.Abs(got-want) > 1e-9 {
		t.Errorf("2.8 ring LL latency %g, want %g", got, want)
	}
	// Tree LL: 4.4 + 2 (7 x 0.52 x 1.8 + 5.0).
	if got, want := old.Lat[model.AllReduce][model.AlgoTree][model.ProtoLL], 4.4+2*(7*0.52*1.8+5.0); math.Abs(got-want) > 1e-9 {
		t.Errorf("2.8 tree LL latency %g, want %g", got, want)
	}
	newer := tunerFor(t, "dgx-a100", 2, "2.30", "NCCL_NET_GDR_LEVEL=2")
	if o, n := old.Lat[model.AllReduce][model.AlgoTree][model.ProtoSimple], newer.Lat[model.AllReduce][model.AlgoTree][model.ProtoSimple]; o <= n {
		t.Errorf("tree Simple latency %g us in 2.8 (28 us hops), %g in 2.30 (4/14 us): want the older higher", o, n)
	}
}

// TestNVLSGatherAboveArity: NCCL skips NVLS for AllGather and
// ReduceScatter when a node holds more local ranks than
// NCCL_MAX_NVLS_ARITY (32; enqueue.cc's algorithm loop), so the 72-GPU
// NVL72 rack runs them as rings while AllReduce keeps NVLS; an 8-GPU
// NVSwitch node keeps NVLS for both.
func TestNVLSGatherAboveArity(t *testing.T) {
	for _, tc := range []struct {
		node string
		coll model.Collective
		nvls bool
	}{
		{"gb200-nvl72", model.AllGather, false}, {"gb200-nvl72", model.ReduceScatter, false},
		{"gb200-nvl72", model.AllReduce, true}, {"dgx-h100", model.AllGather, true},
	} {
		tu := tunerFor(t, tc.node, 1, "")
		a := model.AlgoNVLS
		_, err := tu.Select(tc.coll, 64<<20, &a, nil)
		if got := err == nil; got != tc.nvls {
			t.Errorf("%s %s: NVLS runs %v (%v), want %v", tc.node, tc.coll, got, err, tc.nvls)
		}
	}
}
