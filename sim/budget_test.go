package sim_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// heapPeak runs f while it samples the bytes of heap objects (live and not
// yet swept, what the process's memory follows) and returns the largest
// sample above the heap before f, after a collection.
func heapPeak(f func()) int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := int64(s[0].Value.Uint64())
	var peak int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, int64(s[0].Value.Uint64())-base)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	s2 := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s2)
	return max(peak, int64(s2[0].Value.Uint64())-base)
}

// TestMemoryEstimateBoundsHeap: the memory estimate the budget refuses a
// DES run by is an upper bound of the heap that building and executing
// its schedule really takes (the Go heap's peak, sampled, and the
// execution state mapped outside it), on mid-size calls of each schedule shape
// (tree and NVLSTree of NCCL's choice on a 64-node leaf-spine, every
// pipeline unit built), and not so loose that it refuses runs that fit
// by far: at most 4x the heap measured.
func TestMemoryEstimateBoundsHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs schedules of a few million ops")
	}
	spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 64, NICs: "8x400G-ib"})
	spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 16, Radix: 256, Oversubscription: 1}
	e := specEnv(t, spec)
	caps := e.Capacity()
	// The Env fills caches of its own (routes, physics) on its first
	// calls; they are the Env's, not a run's, so a first build fills them
	// before the heap is measured.
	if _, err := e.DESSchedule(sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4}, 64<<10); err != nil {
		t.Fatal(err)
	}
	for _, size := range []model.Bytes{64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 1 << 30} {
		req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4}
		// The estimate before building: the budget's refusal names it.
		pre := req
		pre.Budget = sim.Budget{MaxMemory: 1}
		_, err := e.DESSchedule(pre, size)
		var be *sim.BudgetError
		if !errors.As(err, &be) || be.Budget != "memory" {
			t.Fatalf("%s: a 1-byte budget gave %v, want a memory refusal", model.FormatBytes(size), err)
		}
		var s *sim.Schedule
		var res *sim.Result
		peak := heapPeak(func() {
			if s, err = e.DESSchedule(req, size); err != nil {
				return
			}
			res, err = sim.Execute(context.Background(), s, caps, sim.ExecOptions{RecordOpEnds: true})
		})
		if err != nil {
			t.Fatal(err)
		}
		est := s.MemEstimate(len(caps))
		raw := s.ExecStateBytes()
		peak += raw
		t.Logf("%s: %d ops, makespan %v: estimate %.1f MB before building, %.1f MB built, heap peak %.1f MB with %.1f MB mapped",
			model.FormatBytes(size), s.Len(), res.Makespan, float64(be.Estimate)/1e6, float64(est)/1e6, float64(peak)/1e6, float64(raw)/1e6)
		for _, c := range []struct {
			what string
			est  int64
		}{{"before building", be.Estimate}, {"built", est}} {
			if peak > c.est {
				t.Errorf("%s: the heap peaked at %d B, above the estimate %s of %d B", model.FormatBytes(size), peak, c.what, c.est)
			}
			if c.est > 4*peak {
				t.Errorf("%s: the estimate %s of %d B is above 4x the heap peak of %d B", model.FormatBytes(size), c.what, c.est, peak)
			}
		}
	}
}

// TestReserveBoundsSchedule: the op and dependency counts a builder
// reserves before building, which the memory estimate counts, bound what
// it builds, for every algorithm and protocol on one, two and sixteen
// nodes (tree and chain fan-ins differ at the root and the leaves).
func TestReserveBoundsSchedule(t *testing.T) {
	envs := map[string]*sim.Env{
		"dgx-h100 x1":             newEnv(t, scenarios.Overrides{Node: "dgx-h100"}),
		"dgx-h100 x2":             newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2}),
		"dgx-h100 x16":            newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 16}),
		"pcie x2":                 newEnv(t, scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2}),
		"dgx-h100 x5, 1 GPU each": newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 5, GPUsPerNode: 1}),
	}
	// ECMP splits a network hop's channels over several routes
	// (edgeFlows), which the tree builders reserve for apart.
	ecmp := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_IB_QPS_PER_CONNECTION=4"}})
	ecmp.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "ecmp"}
	envs["dgx-h100 x8 ecmp"] = specEnv(t, ecmp)
	checked := 0
	for name, e := range envs {
		for _, tc := range everyCollAlgo {
			for _, p := range []model.Proto{model.ProtoLL, model.ProtoLL128, model.ProtoSimple} {
				for _, size := range []model.Bytes{4 << 10, 4 << 20} {
					res, built, err := e.Reserved(tc.coll, tc.algo, size, &p)
					if err != nil {
						continue // not applicable on this node or protocol
					}
					checked++
					if built[0] > res[0] || built[1] > res[1] {
						t.Errorf("%s %s %s %s %s: built %d ops and %d dependencies, reserved %d and %d",
							name, tc.coll, tc.algo, p, model.FormatBytes(size), built[0], built[1], res[0], res[1])
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d calls built", checked)
	}
}
