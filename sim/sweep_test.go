package sim_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// sweepCase is one sweep the parallel tests run both ways.
type sweepCase struct {
	name  string
	env   func(t *testing.T) *sim.Env
	coll  model.Collective
	algo  string
	sizes []model.Bytes
}

// sweepSizes spans a latency-bound size, the protocol switches and the
// pipelined sizes whose windows repeat (the runs a sweep reuses).
var sweepSizes = []model.Bytes{8, 4 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20, 512 << 20, 1 << 30}

func sweepCases() []sweepCase {
	leafSpine := func(nodes, perLeaf int, nics string, set ...string) func(t *testing.T) *sim.Env {
		return func(t *testing.T) *sim.Env {
			spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: nodes, NICs: nics, Set: set})
			spec.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: perLeaf, Radix: 256, Oversubscription: 1}
			return specEnv(t, spec)
		}
	}
	preset := func(o scenarios.Overrides) func(t *testing.T) *sim.Env {
		return func(t *testing.T) *sim.Env { return newEnv(t, o) }
	}
	return []sweepCase{
		{"dgx-h100 x4 leaf-spine, NCCL's choice", leafSpine(4, 2, "8x400G-ib"), model.AllReduce, "", sweepSizes},
		{"dgx-h100 x4 leaf-spine, ring", leafSpine(4, 2, "8x400G-ib"), model.AllReduce, "ring", sweepSizes},
		{"dgx-a100 x2, tree", preset(scenarios.Overrides{Node: "dgx-a100", Nodes: 2}), model.AllReduce, "tree", sweepSizes},
		{"dgx-a100 x2, allgather", preset(scenarios.Overrides{Node: "dgx-a100", Nodes: 2}), model.AllGather, "", sweepSizes},
		{"hgx-h100-4gpu, reducescatter", preset(scenarios.Overrides{Node: "hgx-h100-4gpu"}), model.ReduceScatter, "", sweepSizes},
		{"pcie-gpu-server, broadcast", preset(scenarios.Overrides{Node: "pcie-gpu-server"}), model.Broadcast, "", sweepSizes},
		{"dgx-h100 x4 fat-tree, dead uplink, static routes", func(t *testing.T) *sim.Env {
			f := model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "static"}
			f.Degraded = []model.DegradedLink{{Link: "leaf0/up0", Down: true}}
			return fabricEnv(t, 4, f, "NCCL_ALGO=Ring")
		}, model.AllReduce, "", sweepSizes},
		{"dgx-h100 x4 RoCE 2:1, background alltoall", func(t *testing.T) *sim.Env {
			f := model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Oversubscription: 2, Routing: "adaptive"}
			f.Background = []model.BackgroundJob{{Collective: "alltoall", Nodes: 2, Size: "64M"}}
			return fabricEnv(t, 4, f)
		}, model.AllReduce, "", sweepSizes},
		{"dgx-h100 x4 RoCE ECMP, alltoall", func(t *testing.T) *sim.Env {
			return fabricEnv(t, 4, model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Routing: "ecmp"})
		}, model.AlltoAll, "", []model.Bytes{8, 1 << 20, 64 << 20, 256 << 20}},
	}
}

func (c sweepCase) request(t *testing.T, workers int) sim.Request {
	req := sim.Request{Coll: c.coll, Engine: sim.EngineDES, ElemSize: 4, Sizes: c.sizes, Workers: workers}
	if c.algo != "" {
		a, err := model.ParseAlgo(c.algo)
		if err != nil {
			t.Fatal(err)
		}
		req.Algo = &a
	}
	return req
}

// TestParallelSweepMatchesSequential: a sweep on several workers gives the
// points of the same sweep one size after another, every field bit for bit
// (Events included: a size counts none exactly where the sequential sweep
// reused the run before it), on presets, forced and chosen algorithms, a
// leaf-spine, a fabric with a dead link and static routes, background
// traffic and ECMP; and SweepEach hands them over in sweep order.
func TestParallelSweepMatchesSequential(t *testing.T) {
	cases := sweepCases()
	if testing.Short() {
		// The cheap ones: a leaf-spine, a fabric with a dead link,
		// background traffic, three presets.
		cases = []sweepCase{cases[0], cases[3], cases[4], cases[5], cases[6], cases[7]}
	}
	reused := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := c.env(t)
			seq, err := e.Sweep(context.Background(), c.request(t, 1))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range seq {
				if p.Size > 0 && p.Engine != sim.EngineDES {
					t.Fatalf("%s timed by %s", model.FormatBytes(p.Size), p.Engine)
				}
				if p.Events == 0 {
					reused++
				}
			}
			for _, w := range []int{2, 3} {
				var got []sim.Point
				err := e.SweepEach(context.Background(), c.request(t, w), func(i int, p sim.Point) error {
					if i != len(got) {
						t.Errorf("%d workers: point %d handed over after %d points", w, i, len(got))
					}
					got = append(got, p)
					return nil
				})
				if err != nil {
					t.Fatalf("%d workers: %v", w, err)
				}
				if len(got) != len(seq) {
					t.Fatalf("%d workers: %d points, sequential %d", w, len(got), len(seq))
				}
				for i := range seq {
					if !reflect.DeepEqual(got[i], seq[i]) {
						t.Errorf("%d workers, %s:\n parallel   %+v\n sequential %+v", w, model.FormatBytes(seq[i].Size), got[i], seq[i])
					}
				}
			}
		})
	}
	if reused == 0 {
		t.Errorf("no sequential sweep reused a run: the cases do not exercise the memo")
	}
}

// TestParallelSweepFirstErrorWins: with a memory budget that the first
// sizes fit and a later one does not, the parallel sweep fails with the
// error the sequential one gives (the first failing size's), after handing
// over exactly the sizes before it.
func TestParallelSweepFirstErrorWins(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2})
	req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sweepSizes}
	sweep := func(w int) ([]model.Bytes, error) {
		req.Workers = w
		var got []model.Bytes
		err := e.SweepEach(context.Background(), req, func(i int, p sim.Point) error {
			got = append(got, p.Size)
			return nil
		})
		return got, err
	}
	// The least budget (to a factor 2) the first two sizes fit.
	var want []model.Bytes
	var wantErr error
	for req.Budget.MaxMemory = 64 << 10; ; req.Budget.MaxMemory *= 2 {
		if want, wantErr = sweep(1); len(want) >= 2 {
			break
		}
	}
	var be *sim.BudgetError
	if !errors.As(wantErr, &be) || be.Budget != "memory" || len(want) == len(sweepSizes) {
		t.Fatalf("budget %d B: sequential sweep handed over %d of %d sizes, then %v; want a memory budget error", req.Budget.MaxMemory, len(want), len(sweepSizes), wantErr)
	}
	for _, w := range []int{2, 4} {
		got, err := sweep(w)
		if !reflect.DeepEqual(got, want) || err == nil || err.Error() != wantErr.Error() {
			t.Errorf("%d workers: sizes %v then %v; sequential %v then %q", w, got, err, want, wantErr)
		}
	}
	// An error of the callback stops the sweep there.
	stop := fmt.Errorf("stop")
	req.Budget.MaxMemory, req.Workers = 0, 2
	n := 0
	err := e.SweepEach(context.Background(), req, func(i int, p sim.Point) error {
		n++
		if i == 2 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("callback error at point 2: %d points handed over, error %v", n, err)
	}
}

// TestParallelSweepMemoryBudget: a memory budget that the largest run of a
// sweep fits alone, but not beside another run, makes the parallel sweep
// run its large sizes one at a time: the same points, no error.
func TestParallelSweepMemoryBudget(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2})
	req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sweepSizes, Workers: 1}
	want, err := e.Sweep(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// The least budget (to a factor 2) the sequential sweep passes.
	req.Budget.MaxMemory = 1 << 30
	for {
		req.Budget.MaxMemory /= 2
		if _, err := e.Sweep(context.Background(), req); err != nil {
			req.Budget.MaxMemory *= 2
			break
		}
	}
	req.Workers = 3
	got, err := e.Sweep(context.Background(), req)
	if err != nil {
		t.Fatalf("budget %d B: parallel sweep failed: %v", req.Budget.MaxMemory, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("budget %d B: parallel points differ from the sequential ones", req.Budget.MaxMemory)
	}
}

// TestParallelSweepCancelled: a cancelled sweep returns the context's
// error from every worker count, and hands over nothing.
func TestParallelSweepCancelled(t *testing.T) {
	e := newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, w := range []int{1, 2} {
		req := sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sweepSizes, Workers: w}
		n := 0
		err := e.SweepEach(ctx, req, func(int, sim.Point) error { n++; return nil })
		if !errors.Is(err, context.Canceled) || n != 0 {
			t.Errorf("%d workers: %d points, error %v; want none and context.Canceled", w, n, err)
		}
	}
}

// TestSweepGroupMatchesAlone: sweeps of three ECMP seeds run at once on one
// SweepGroup of two slots (and a budget that holds one large run at a
// time, beside nothing else) give each seed's points of its sweep alone, bit for bit, and the
// seeds differ; a size beyond the group's budget is refused as it is alone.
func TestSweepGroupMatchesAlone(t *testing.T) {
	sizes := []model.Bytes{8, 1 << 20, 64 << 20, 256 << 20}
	envs := make([]*sim.Env, 3)
	alone := make([][]sim.Point, 3)
	for i := range envs {
		spec := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-roce", Set: []string{"NCCL_ALGO=Ring"}})
		spec.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, Oversubscription: 2, Routing: "ecmp"}
		spec.Seed = uint64(i)
		envs[i] = specEnv(t, spec)
		var err error
		if alone[i], err = envs[i].Sweep(context.Background(), sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sizes, Workers: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if reflect.DeepEqual(alone[0], alone[1]) && reflect.DeepEqual(alone[1], alone[2]) {
		t.Fatal("three ECMP seeds gave the same points: the test cannot tell the sweeps apart")
	}
	// 16 MiB of budget: a run reserves twice its estimate (4.1 MB here,
	// 6.8 for 256 MiB), so the 256 MiB runs go one at a time and wait for
	// the runs beside them.
	g := sim.NewSweepGroup(2, 16<<20)
	got := make([][]sim.Point, 3)
	errs := make([]error, 3)
	done := make(chan int)
	for i := range envs {
		go func() {
			got[i], errs[i] = envs[i].Sweep(context.Background(), sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sizes, Group: g})
			done <- i
		}()
	}
	for range envs {
		<-done
	}
	for i := range envs {
		if errs[i] != nil {
			t.Fatalf("seed %d in the group: %v", i, errs[i])
		}
		if !reflect.DeepEqual(got[i], alone[i]) {
			t.Errorf("seed %d: in the group\n %+v\nalone\n %+v", i, got[i], alone[i])
		}
	}
	// A budget below one run: refused with the budget's error, as alone.
	_, err := envs[0].Sweep(context.Background(), sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES, ElemSize: 4, Sizes: sizes, Group: sim.NewSweepGroup(2, 1<<20)})
	var be *sim.BudgetError
	if !errors.As(err, &be) || be.Budget != "memory" || be.Limit != 1<<20 {
		t.Errorf("1 MiB group budget: %v, want the memory budget's error", err)
	}
}
