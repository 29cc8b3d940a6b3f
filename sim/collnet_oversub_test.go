package sim_test

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// sharpOversubEnv builds 8 DGX H100 nodes with 8 x NDR InfiniBand on a
// SHARP-capable 2-tier fat-tree, npl nodes per leaf at leaf
// oversubscription o, with algo forced; down names leaf uplinks that are
// down.
func sharpOversubEnv(t *testing.T, algo string, npl int, o float64, routing string, down ...string) *sim.Env {
	t.Helper()
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, NICs: "8x400G-ib",
		Set: []string{"NCCL_COLLNET_ENABLE=1", "NCCL_ALGO=" + algo}})
	spec.Fabric = model.FabricSpec{Kind: "fat-tree", Tiers: 2, NodesPerLeaf: npl, Oversubscription: o, Routing: routing, SHARP: true}
	for _, l := range down {
		spec.Fabric.Degraded = append(spec.Fabric.Degraded, model.DegradedLink{Link: l, Down: true})
	}
	return specEnv(t, spec)
}

// leafUpGBps is the capacity of leaf0's live uplinks in one direction.
func leafUpGBps(e *sim.Env) float64 {
	t := e.Cluster.Topo
	sum := 0.0
	for _, l := range t.Links {
		if t.Elem(l.From).Name == "fabric/leaf0" && strings.HasPrefix(t.Elem(l.To).Name, "fabric/spine") {
			sum += float64(l.BW)
		}
	}
	return sum
}

// TestCollNetLeafOversubscription: with SHARP a leaf reduces its nodes'
// streams and sends one reduced stream per head up to the spine and takes
// the result back, so its uplinks carry the buffer once each way whatever
// its node count. With 4 nodes of 8 NDR NICs under a leaf, oversubscription
// 8 leaves 4 uplinks: algbw is at most their capacity (busbw ~ 2(R-1)/R of
// it, just under the NVLink bound); 16:1 leaves 2 and halves busbw against
// 1:1; a downed uplink of the 8:1 leaf slows it to the 3 that remain. A
// non-blocking fabric is unchanged: as fast as all nodes under one leaf.
func TestCollNetLeafOversubscription(t *testing.T) {
	const size = 1 << 30
	ranks := 64.0
	busOf := func(algbw float64) float64 { return algbw * 2 * (ranks - 1) / ranks }
	for _, eng := range []sim.EngineKind{sim.EngineDES, sim.EngineAnalytic} {
		run := func(e *sim.Env) sim.Point {
			p := predict(t, e, model.AllReduce, eng, "", size)
			if p.Choice.Algo != model.AlgoCollNetChain {
				t.Fatalf("ran %s, want CollNetChain", p.Choice.Algo)
			}
			return p
		}
		one := run(sharpOversubEnv(t, "CollNetChain", 8, 1, "adaptive"))
		full := run(sharpOversubEnv(t, "CollNetChain", 4, 1, "adaptive"))
		if d := full.BusBW/one.BusBW - 1; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: 1:1 two leaves %.2f GB/s, one leaf %.2f: a non-blocking fabric must not change SHARP", eng, full.BusBW, one.BusBW)
		}
		if full.BottleneckClass != "NVLink" {
			t.Errorf("%s: 1:1 bottleneck %s (%s), want NVLink", eng, full.Bottleneck, full.BottleneckClass)
		}
		e8 := sharpOversubEnv(t, "CollNetChain", 4, 8, "adaptive")
		o8 := run(e8)
		if b := busOf(leafUpGBps(e8)); o8.BusBW > b*1.01 {
			t.Errorf("%s: 8:1 busbw %.2f GB/s above its uplinks' bound %.2f", eng, o8.BusBW, b)
		}
		e16 := sharpOversubEnv(t, "CollNetChain", 4, 16, "adaptive")
		o16 := run(e16)
		if b := busOf(leafUpGBps(e16)); o16.BusBW > b*1.01 {
			t.Errorf("%s: 16:1 busbw %.2f GB/s above its uplinks' bound %.2f", eng, o16.BusBW, b)
		}
		ratioWithin(t, string(eng)+" 16:1 over 1:1", o16.BusBW/full.BusBW, 0.4, 0.56)
		eDown := sharpOversubEnv(t, "CollNetChain", 4, 8, "adaptive", "leaf0/up0")
		dn := run(eDown)
		if b := busOf(leafUpGBps(eDown)); dn.BusBW > b*1.01 {
			t.Errorf("%s: 8:1 with leaf0/up0 down: busbw %.2f GB/s above the 3 live uplinks' bound %.2f", eng, dn.BusBW, b)
		}
		ratioWithin(t, string(eng)+" 8:1 leaf0/up0 down over healthy", dn.BusBW/o8.BusBW, 0.7, 0.8)
		// One uplink per leaf (2 nodes per leaf at 16:1).
		e1 := sharpOversubEnv(t, "CollNetChain", 2, 16, "adaptive")
		p1 := run(e1)
		ratioWithin(t, string(eng)+" 2 nodes per leaf at 16:1 against its uplink", p1.BusBW/busOf(leafUpGBps(e1)), 0.9, 1.01)
		t.Logf("%s: 1 leaf %.2f, 1:1 %.2f, 8:1 %.2f, 16:1 %.2f, 8:1 up0 down %.2f, npl 2 16:1 %.2f GB/s", eng, one.BusBW, full.BusBW, o8.BusBW, o16.BusBW, dn.BusBW, p1.BusBW)
	}
}

// TestCollNetUplinkTraffic: both engines put the same bytes on every link
// for CollNet on oversubscribed, degraded and hashed fabrics, and a leaf's
// uplinks carry the buffer once each way (one reduced stream per head, not
// one per node); a job under one leaf loads no uplink.
func TestCollNetUplinkTraffic(t *testing.T) {
	const size = 16 << 20
	for _, tc := range []struct {
		name    string
		npl     int
		o       float64
		routing string
		down    []string
		upBytes float64 // per leaf and direction; 0: none
	}{
		{"8:1 adaptive", 4, 8, "adaptive", nil, size},
		{"1:1 adaptive", 4, 1, "adaptive", nil, size},
		{"8:1 adaptive leaf0/up0 down", 4, 8, "adaptive", []string{"leaf0/up0"}, size},
		{"8:1 static", 4, 8, "static", nil, size},
		{"8:1 ecmp", 4, 8, "ecmp", nil, size},
		{"16:1 2 per leaf", 2, 16, "adaptive", nil, size},
		{"one leaf", 8, 1, "adaptive", nil, 0},
	} {
		for _, algo := range []model.Algo{model.AlgoCollNetChain, model.AlgoCollNetDirect} {
			e := sharpOversubEnv(t, algo.String(), tc.npl, tc.o, tc.routing, tc.down...)
			des, an, err := e.Loads(model.AllReduce, algo, size)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.name, algo, err)
			}
			up, dn := 0.0, 0.0
			for l := range des {
				if d := des[l] - an[l]; d > 1e-6*des[l]+1 || -d > 1e-6*an[l]+1 {
					t.Errorf("%s %s: link %s carries %.0f B in the schedule, %.0f B in the traffic matrix", tc.name, algo, e.LinkName(model.LinkID(l)), des[l], an[l])
				}
				if l < len(e.Cluster.Topo.Links) {
					lk := e.Cluster.Topo.Links[l]
					from, to := e.Cluster.Topo.Elem(lk.From).Name, e.Cluster.Topo.Elem(lk.To).Name
					if from == "fabric/leaf0" && strings.HasPrefix(to, "fabric/spine") {
						up += des[l]
					}
					if to == "fabric/leaf0" && strings.HasPrefix(from, "fabric/spine") {
						dn += des[l]
					}
				}
			}
			if tc.routing == "adaptive" {
				// Adaptive routes load the bundles, not their members.
				for b, bu := range e.Cluster.Fabric.Bundles() {
					l := int(e.Cluster.Fabric.BundleBase()) + b
					if strings.HasPrefix(bu.Name, "fabric/leaf0 uplinks") {
						up += des[l]
					}
					if strings.HasPrefix(bu.Name, "links into fabric/leaf0 ") {
						dn += des[l]
					}
				}
			}
			for _, x := range []float64{up, dn} {
				if d := x - tc.upBytes; d > 1 || d < -1 {
					t.Errorf("%s %s: leaf0's uplinks carry %.0f B up and %.0f B down, want %.0f each", tc.name, algo, up, dn, tc.upBytes)
					break
				}
			}
		}
	}
}
