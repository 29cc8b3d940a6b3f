package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func TestEngineOrder(t *testing.T) {
	e := NewEngine()
	var got []string
	rec := func(name string) Handler {
		return func(now model.Time) error {
			got = append(got, fmt.Sprintf("%s@%d", name, now))
			return nil
		}
	}
	// Scheduled out of order on purpose: the engine must sort by time, then
	// put late events after normal ones, then keep insertion order.
	e.ScheduleLate(10, rec("late1"))
	e.Schedule(10, rec("a"))
	e.Schedule(5, rec("early"))
	e.ScheduleLate(10, rec("late2"))
	e.Schedule(10, rec("b"))
	e.Schedule(20, func(now model.Time) error {
		got = append(got, fmt.Sprintf("spawn@%d", now))
		e.ScheduleLate(now, rec("spawnLate"))
		e.Schedule(now, rec("spawnNormal"))
		return nil
	})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"early@5", "a@10", "b@10", "late1@10", "late2@10", "spawn@20", "spawnNormal@20", "spawnLate@20"}
	if !slices.Equal(got, want) {
		t.Errorf("order = %v, want %v", got, want)
	}
	if e.Events() != int64(len(want)) || e.Now() != 20 || e.Pending() != 0 {
		t.Errorf("Events=%d Now=%d Pending=%d, want %d 20 0", e.Events(), e.Now(), e.Pending(), len(want))
	}
}

// TestEngineHeapOrder pushes many events at random times (many ties) and
// checks they pop in (time, tier, insertion) order.
func TestEngineHeapOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e := NewEngine()
	type key struct {
		at   model.Time
		late bool
		seq  int
	}
	var want, got []key
	for i := range 5000 {
		k := key{at: model.Time(rng.IntN(100)), late: rng.IntN(3) == 0, seq: i}
		want = append(want, k)
		h := Handler(func(now model.Time) error { got = append(got, k); return nil })
		if k.late {
			e.ScheduleLate(k.at, h)
		} else {
			e.Schedule(k.at, h)
		}
	}
	slices.SortStableFunc(want, func(a, b key) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		if a.late != b.late {
			if a.late {
				return 1
			}
			return -1
		}
		return 0
	})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatal("events did not run in (time, tier, sequence) order")
	}
}

// refEngine is an obviously correct O(n^2) scheduler: it runs the pending
// event with the smallest (time, tier, insertion sequence).
type refEngine struct {
	seq int
	q   []refEvent
}

type refEvent struct {
	at   model.Time
	late bool
	seq  int
	id   int64
}

func (r *refEngine) push(at model.Time, late bool, id int64) {
	r.q = append(r.q, refEvent{at, late, r.seq, id})
	r.seq++
}

func (r *refEngine) pop() refEvent {
	best := 0
	for i, e := range r.q {
		b := r.q[best]
		if e.at < b.at || e.at == b.at && (!e.late && b.late || e.late == b.late && e.seq < b.seq) {
			best = i
		}
	}
	e := r.q[best]
	r.q = slices.Delete(r.q, best, best+1)
	return e
}

// spawner decides, from an event's id and a counter of ids handed out,
// which children it schedules and when: few distinct times, both tiers, many
// same-instant children, so the engine's same-(time, tier) runs are created,
// extended while being consumed, and interleaved. Ids depend on execution
// order, so any ordering difference shows in the traces.
type spawner struct{ next, fanout, spread int64 }

func (sp *spawner) children(id int64, now model.Time, late bool) (cs []refEvent) {
	if sp.next >= 10000 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(id), 77))
	for range rng.Int64N(sp.fanout + 1) {
		sp.next++
		c := refEvent{at: now + model.Time(rng.Int64N(sp.spread)), late: rng.IntN(3) == 0, id: sp.next}
		if c.at == now && late {
			c.late = true // a normal event at the current time from a late one is illegal
		}
		cs = append(cs, c)
	}
	return cs
}

type traceActor struct {
	e     *Engine
	sp    spawner
	trace []int64
}

func (a *traceActor) Act(now model.Time, id int64) error {
	a.trace = append(a.trace, id, int64(now))
	for _, c := range a.sp.children(id, now, a.e.tier != 0) {
		if c.late {
			a.e.ScheduleActorLate(c.at, a, c.id)
		} else {
			a.e.ScheduleActor(c.at, a, c.id)
		}
	}
	return nil
}

// TestEngineMatchesReference runs the same self-spawning event trees on the
// engine and on refEngine and compares the traces.
func TestEngineMatchesReference(t *testing.T) {
	for _, shape := range []struct{ fanout, spread int64 }{{3, 3}, {2, 1}, {2, 2}, {3, 1}, {5, 4}} {
		e := NewEngine()
		a := &traceActor{e: e, sp: spawner{next: 100, fanout: shape.fanout, spread: shape.spread}}
		r := &refEngine{}
		sp := a.sp
		for i := range 20 {
			c := refEvent{at: model.Time(i % 3), late: i%4 == 1, id: int64(i)}
			if c.late {
				e.ScheduleActorLate(c.at, a, c.id)
			} else {
				e.ScheduleActor(c.at, a, c.id)
			}
			r.push(c.at, c.late, c.id)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		var want []int64
		for len(r.q) > 0 {
			ev := r.pop()
			want = append(want, ev.id, int64(ev.at))
			for _, c := range sp.children(ev.id, ev.at, ev.late) {
				r.push(c.at, c.late, c.id)
			}
		}
		if len(want) < 200 {
			t.Fatalf("%+v: tree too small: %d events", shape, len(want)/2)
		}
		if !slices.Equal(a.trace, want) {
			t.Fatalf("%+v: engine order differs from the reference (%d vs %d events)", shape, len(a.trace)/2, len(want)/2)
		}
		if e.Pending() != 0 || e.Events() != int64(len(want)/2) {
			t.Errorf("%+v: pending %d events %d", shape, e.Pending(), e.Events())
		}
	}
}

type countActor struct {
	args []int64
	at   []model.Time
}

func (c *countActor) Act(now model.Time, arg int64) error {
	c.args = append(c.args, arg)
	c.at = append(c.at, now)
	return nil
}

func TestEngineActorAndNow(t *testing.T) {
	e := NewEngine()
	a := &countActor{}
	e.ScheduleActorLate(3, a, 30)
	e.ScheduleActor(3, a, 31)
	// From a late handler, ScheduleNow stays in the late tier and is legal.
	e.ScheduleLate(4, func(now model.Time) error { e.ScheduleNow(a, 40); return nil })
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.args, []int64{31, 30, 40}) || !slices.Equal(a.at, []model.Time{3, 3, 4}) {
		t.Errorf("args %v at %v", a.args, a.at)
	}
}

func TestEngineErrors(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		setup   func(e *Engine)
		wantAt  model.Time // -1: no EventError expected
		wantMsg string
		wantIs  error
	}{
		{"handler error", func(e *Engine) {
			e.Schedule(7, func(model.Time) error { return boom })
			e.Schedule(8, func(model.Time) error { panic("must not run") })
		}, 7, "sim: at 7ps: boom", boom},
		{"past", func(e *Engine) {
			e.Schedule(7, func(now model.Time) error { e.Schedule(now-1, func(model.Time) error { return nil }); return nil })
		}, 7, "before the current time", nil},
		{"normal from late at same time", func(e *Engine) {
			e.ScheduleLate(7, func(now model.Time) error { e.Schedule(now, func(model.Time) error { return nil }); return nil })
		}, 7, "from a late event", nil},
		{"nil handler", func(e *Engine) { e.Schedule(1, nil) }, -1, "nil handler", nil},
		{"nil actor", func(e *Engine) { e.ScheduleActor(1, nil, 0) }, -1, "nil actor", nil},
		{"negative time before run", func(e *Engine) { e.Schedule(-1, func(model.Time) error { return nil }) }, -1, "before the current time", nil},
		{"reentrant run", func(e *Engine) {
			e.Schedule(2, func(model.Time) error { return e.Run(context.Background()) })
		}, 2, "called from a handler", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine()
			tc.setup(e)
			err := e.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.wantMsg) || !strings.HasPrefix(err.Error(), "sim: ") {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantMsg)
			}
			var ee *EventError
			if got := errors.As(err, &ee); got != (tc.wantAt >= 0) || (got && ee.Time != tc.wantAt) {
				t.Errorf("EventError = %v (%v), want at %d", ee, got, tc.wantAt)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("err %v does not wrap %v", err, tc.wantIs)
			}
		})
	}
}

// flakyCtx is a context whose Err is nil the first time (Run's entry check)
// and Canceled afterwards, with Done already closed: it makes a mid-run
// cancellation deterministic.
type flakyCtx struct {
	context.Context
	calls int
	done  chan struct{}
}

func (c *flakyCtx) Done() <-chan struct{} { return c.done }
func (c *flakyCtx) Err() error {
	c.calls++
	if c.calls == 1 {
		return nil
	}
	return context.Canceled
}

func newFlakyCtx() *flakyCtx {
	c := &flakyCtx{Context: context.Background(), done: make(chan struct{})}
	close(c.done)
	return c
}

func TestEngineCancel(t *testing.T) {
	// A handler that reschedules itself forever: only cancellation ends it.
	e := NewEngine()
	var tick Handler
	tick = func(now model.Time) error { e.Schedule(now+1, tick); return nil }
	e.Schedule(0, tick)
	err := e.Run(newFlakyCtx())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The poll happens every ctxCheckMask+1 events.
	if e.Events() != ctxCheckMask {
		t.Errorf("stopped after %d events, want %d", e.Events(), ctxCheckMask)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e = NewEngine()
	e.Schedule(0, tick)
	if err := e.Run(ctx); !errors.Is(err, context.Canceled) || e.Events() != 0 {
		t.Fatalf("pre-cancelled: err = %v after %d events", err, e.Events())
	}
}

// selfActor reschedules itself at pseudo-random future times.
type selfActor struct {
	e     *Engine
	state uint64
	left  int
}

func (a *selfActor) Act(now model.Time, arg int64) error {
	if a.left <= 0 {
		return nil
	}
	a.left--
	a.state = a.state*6364136223846793005 + 1442695040888963407
	a.e.ScheduleActor(now+model.Time(a.state>>54), a, arg)
	return nil
}

// BenchmarkEngine measures the event loop with 1024 pending events, each
// rescheduling itself at a random delay (the steady-state heap size of a
// large collective).
func BenchmarkEngine(b *testing.B) {
	b.ReportAllocs()
	e := NewEngine()
	a := &selfActor{e: e, state: 1, left: b.N}
	for i := range 1024 {
		e.ScheduleActor(model.Time(i), a, int64(i))
	}
	b.ResetTimer()
	if err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(e.Events())/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEngineHandler is BenchmarkEngine with a Handler closure
// (allocated once) instead of an Actor.
func BenchmarkEngineHandler(b *testing.B) {
	b.ReportAllocs()
	e := NewEngine()
	left := b.N
	state := uint64(1)
	var h Handler
	h = func(now model.Time) error {
		if left <= 0 {
			return nil
		}
		left--
		state = state*6364136223846793005 + 1442695040888963407
		e.Schedule(now+model.Time(state>>54), h)
		return nil
	}
	for i := range 1024 {
		e.Schedule(model.Time(i), h)
	}
	b.ResetTimer()
	if err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(e.Events())/b.Elapsed().Seconds(), "events/s")
}

// batchSelf reschedules 256 events at a time for one shared future instant,
// the pattern of a symmetric collective step.
type batchSelf struct {
	e    *Engine
	left int
}

func (a *batchSelf) Act(now model.Time, arg int64) error {
	if a.left <= 0 {
		return nil
	}
	a.left--
	a.e.ScheduleActor(now+1000, a, arg)
	return nil
}

// BenchmarkEngineBatch runs events in batches of 256 at the same instant.
func BenchmarkEngineBatch(b *testing.B) {
	b.ReportAllocs()
	e := NewEngine()
	a := &batchSelf{e: e, left: b.N}
	for i := range 256 {
		e.ScheduleActor(0, a, int64(i))
	}
	b.ResetTimer()
	if err := e.Run(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(e.Events())/b.Elapsed().Seconds(), "events/s")
}
