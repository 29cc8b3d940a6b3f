package sim

import (
	"context"
	"slices"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestDESMemoMatchesOnlyEqualRuns: the memo returns its run only for a
// schedule equal to its own in every field, over the same capacities and
// event budget, and the run it returns is what Execute gives.
func TestDESMemoMatchesOnlyEqualRuns(t *testing.T) {
	const links = 8
	caps := make([]float64, links)
	for i := range caps {
		caps[i] = 0.05 * float64(i+1)
	}
	s := randomSchedule(7, 400, links)
	res, err := Execute(context.Background(), s, caps, ExecOptions{RecordOpEnds: true})
	if err != nil {
		t.Fatal(err)
	}
	var m desMemo
	m.store(s, caps, 1000, res)
	same := randomSchedule(7, 400, links) // equal, built again
	got, ran := m.lookup(same, caps, 1000)
	if got == nil || ran != 0 || got.Makespan != res.Makespan || !slices.Equal(got.OpEnd, res.OpEnd) {
		t.Fatalf("equal schedule: got %v (ran %d), want the stored run", got, ran)
	}
	again, err := Execute(context.Background(), same, caps, ExecOptions{RecordOpEnds: true})
	if err != nil {
		t.Fatal(err)
	}
	if again.Makespan != got.Makespan || !slices.Equal(again.OpEnd, got.OpEnd) {
		t.Fatalf("the memo's run differs from executing the equal schedule")
	}
	// A transfer and a delay with dependencies and a route to mutate.
	tr, dl := -1, -1
	for i, op := range s.ops() {
		if op.Kind == OpTransfer && len(op.Route) > 0 && len(op.Deps) > 0 && tr < 0 {
			tr = i
		}
		if op.Kind == OpDelay && len(op.Deps) > 0 && dl < 0 {
			dl = i
		}
	}
	if tr < 0 || dl < 0 {
		t.Fatal("random schedule lacks a transfer or delay with dependencies")
	}
	muts := map[string]func(*Schedule) *Schedule{
		"kind":     func(x *Schedule) *Schedule { return x.editOp(dl, func(o *Op) { o.Kind = OpTransfer }) },
		"bytes":    func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Bytes++ }) },
		"weight":   func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Weight++ }) },
		"latency":  func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Latency++ }) },
		"rate cap": func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.RateCap += 0.01 }) },
		"route": func(x *Schedule) *Schedule {
			return x.editOp(tr, func(o *Op) { o.Route = []model.LinkID{(o.Route[0] + 1) % links} })
		},
		"deps":    func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Deps = o.Deps[:len(o.Deps)-1] }) },
		"unit":    func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Unit++ }) },
		"channel": func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Channel++ }) },
		"rank":    func(x *Schedule) *Schedule { return x.editOp(tr, func(o *Op) { o.Rank++ }) },
		"one more": func(x *Schedule) *Schedule {
			x.Add(Op{Kind: OpDelay})
			return x
		},
	}
	for name, mut := range muts {
		m.store(s, caps, 1000, res)
		x := randomSchedule(7, 400, links)
		x = mut(x)
		if got, _ := m.lookup(x, caps, 1000); got != nil {
			t.Errorf("%s changed: the memo still matched", name)
		}
		if m.sched != nil {
			t.Errorf("%s changed: the memo kept its schedule after a miss", name)
		}
	}
	m.store(s, caps, 1000, res)
	other := slices.Clone(caps)
	other[3] *= 2
	if got, _ := m.lookup(same, other, 1000); got != nil {
		t.Error("other capacities: the memo matched")
	}
	m.store(s, caps, 1000, res)
	if got, _ := m.lookup(same, caps, 2000); got != nil {
		t.Error("another event budget: the memo matched")
	}
	var none *desMemo
	none.store(s, caps, 1000, res)
	if got, _ := none.lookup(same, caps, 1000); got != nil {
		t.Error("a nil memo matched")
	}
}
