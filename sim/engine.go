package sim

import (
	"context"
	"fmt"
	"math/bits"
	"strings"

	"github.com/collsim/collsim/model"
)

// Handler is an event callback: it runs at simulated time now and returns an
// error to stop the run. A Handler is also an Actor (its arg is ignored), so
// Engine.Schedule stores it without further allocation; creating a closure
// may allocate, which is why hot paths use Actor with an integer argument.
type Handler func(now model.Time) error

// Act calls h(now); arg is ignored. It makes every Handler an Actor.
func (h Handler) Act(now model.Time, _ int64) error { return h(now) }

// Actor receives events that carry an integer argument (an op ID, a flow ID,
// a generation counter). One long-lived Actor value (a pointer to the
// component's state) serves all its events, so scheduling allocates nothing.
type Actor interface {
	// Act handles one event at simulated time now (picoseconds) with the
	// argument given when the event was scheduled. A non-nil error stops
	// Engine.Run.
	Act(now model.Time, arg int64) error
}

// EventError is the error Engine.Run returns when a handler fails or an
// event is scheduled in the past: Time is the simulated time of the event
// that was running, Err what went wrong.
type EventError struct {
	Time model.Time
	Err  error
}

// Error prints "sim: at <time>: <cause>" (the cause's own "sim: " prefix is
// dropped so it is not repeated).
func (e *EventError) Error() string {
	return "sim: at " + e.Time.String() + ": " + strings.TrimPrefix(e.Err.Error(), "sim: ")
}

// Unwrap returns the handler's error.
func (e *EventError) Unwrap() error { return e.Err }

// lateBit is the tier bit of an event key: late events run after every
// normal event of the same timestamp.
const lateBit = uint64(1) << 63

// ctxCheckMask sets how often Run polls the context: every ctxCheckMask+1
// events.
const ctxCheckMask = 1023

// event is one heap entry: a run of events with the same time and tier,
// scheduled one after another, kept as a FIFO list through the payload slab
// starting at head. key is tier<<63 | the insertion sequence of the run's
// first event, so (at, key) is a total order that matches insertion order:
// only the most recently created run is ever extended, so every event of an
// earlier run with the same (at, tier) was inserted before every event of a
// later one. The entry is pointer-free (handlers live in the slab), so
// moving entries costs no GC write barriers. Runs make the thousands of
// events a symmetric collective schedules for one instant cost one heap
// operation instead of thousands.
type event struct {
	at   model.Time
	key  uint64
	head int32
}

// payload is what an event calls; next links a run's events (and, for free
// slots, the free list); -1 ends a list.
type payload struct {
	actor Actor
	arg   int64
	next  int32
}

// less orders events by (at, key) as one 128-bit unsigned comparison (at is
// never negative in the heap): a < b exactly when a - b borrows.
func (a *event) less(b *event) bool {
	_, borrow := bits.Sub64(a.key, b.key, 0)
	_, borrow = bits.Sub64(uint64(a.at), uint64(b.at), borrow)
	return borrow != 0
}

// Engine is a serial discrete-event engine. Events are ordered by (time,
// tier, sequence): at one timestamp every normal event runs before every late
// event, and events of the same tier run in the order they were scheduled,
// so a run is fully deterministic. The zero value is not ready; use
// NewEngine. An Engine is not safe for concurrent use.
//
// Pending events live in a binary min-heap of runs: events scheduled one
// after another for the same time and tier share one heap entry, so an
// event costs O(1) inside such a run and O(log runs) otherwise, with no
// allocation once the heap and payload slab have grown.
type Engine struct {
	heap    []event
	slab    []payload // event payloads, indexed by event.head and payload.next
	free    int32     // head of the free slab slot list, -1 if none
	pending int
	// The most recently created run, while it is still queued: pushes with
	// the same (at, tier) append to it.
	lastOK   bool
	lastAt   model.Time
	lastTier uint64
	lastKey  uint64
	lastTail int32
	seq      uint64
	now      model.Time
	tier     uint64 // lateBit while a late event runs, else 0
	events   int64
	err      error // first scheduling error; stops Run
	run      bool
}

// NewEngine returns an engine at time 0 with no pending events.
func NewEngine() *Engine { return &Engine{free: -1} }

// Now returns the current simulated time in picoseconds: the time of the
// event being run, or of the last one run. O(1).
func (e *Engine) Now() model.Time { return e.now }

// Events returns how many events Run has processed (stale events that
// handlers ignore included). O(1).
func (e *Engine) Events() int64 { return e.events }

// Pending returns how many events are queued. O(1).
func (e *Engine) Pending() int { return e.pending }

// Schedule queues h to run at time at (picoseconds) in the normal tier.
// Scheduling before the current time, at the current time from a late
// handler (that slot has passed), or a nil h is a caller bug: it records an
// error that stops Run after the running handler, and nothing is queued or
// reordered. O(log pending).
func (e *Engine) Schedule(at model.Time, h Handler) {
	if h == nil {
		e.fail(fmt.Errorf("sim: nil handler scheduled at %v", at))
		return
	}
	e.push(at, 0, h, 0)
}

// ScheduleLate queues h to run at time at (picoseconds) after every normal
// event of that timestamp (use it to batch work that many events at one
// instant make necessary). Errors as for Schedule. O(log pending).
func (e *Engine) ScheduleLate(at model.Time, h Handler) {
	if h == nil {
		e.fail(fmt.Errorf("sim: nil handler scheduled at %v", at))
		return
	}
	e.push(at, lateBit, h, 0)
}

// ScheduleActor queues a.Act(at, arg) in the normal tier. It allocates
// nothing beyond amortised heap growth. A nil a or a time before the current
// one records an error that stops Run. O(log pending).
func (e *Engine) ScheduleActor(at model.Time, a Actor, arg int64) {
	e.push(at, 0, a, arg)
}

// ScheduleActorLate queues a.Act(at, arg) in the late tier (after every
// normal event of that timestamp). Errors as for ScheduleActor.
// O(log pending).
func (e *Engine) ScheduleActorLate(at model.Time, a Actor, arg int64) {
	e.push(at, lateBit, a, arg)
}

// ScheduleNow queues a.Act(now, arg) at the current time in the tier of the
// running event, that is after every event already queued for this instant
// and tier. It is always legal, from normal and late handlers alike.
// A nil a records an error that stops Run. O(log pending).
func (e *Engine) ScheduleNow(a Actor, arg int64) {
	e.push(e.now, e.tier, a, arg)
}

func (e *Engine) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *Engine) push(at model.Time, tier uint64, a Actor, arg int64) {
	if a == nil {
		e.fail(fmt.Errorf("sim: nil actor scheduled at %v", at))
		return
	}
	if at < e.now || (at == e.now && tier < e.tier) {
		if at == e.now {
			e.fail(fmt.Errorf("sim: normal event scheduled at the current time %v from a late event", at))
		} else {
			e.fail(fmt.Errorf("sim: event scheduled at %v, before the current time %v", at, e.now))
		}
		return
	}
	slot := e.free
	if slot >= 0 {
		e.free = e.slab[slot].next
	} else {
		slot = int32(len(e.slab))
		e.slab = append(e.slab, payload{})
	}
	e.slab[slot] = payload{actor: a, arg: arg, next: -1}
	e.pending++
	if e.lastOK && at == e.lastAt && tier == e.lastTier {
		e.slab[e.lastTail].next = slot
		e.lastTail = slot
		return
	}
	ev := event{at: at, key: tier | e.seq, head: slot}
	e.seq++
	e.lastOK, e.lastAt, e.lastTier, e.lastKey, e.lastTail = true, at, tier, ev.key, slot
	// Sift up with a hole instead of swaps.
	h := append(e.heap, ev)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !ev.less(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = ev
	e.heap = h
}

// pop removes the earliest run from the heap. The heap must not be empty.
// It uses Floyd's bottom-up deletion: the hole left by the root descends to
// a leaf along the smaller children (one comparison per level), and the last
// element then rises from there; since the last element usually belongs
// near the bottom, this halves the comparisons of a textbook sift-down.
func (e *Engine) pop() {
	h := e.heap
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	if n > 0 {
		i := 0
		for {
			c := 2*i + 1
			if c+1 >= n {
				if c < n { // a lone last child
					h[i] = h[c]
					i = c
				}
				break
			}
			// Branch-free choice of the smaller child (compiles to SETcc).
			d := 0
			if h[c+1].less(&h[c]) {
				d = 1
			}
			c += d
			h[i] = h[c]
			i = c
		}
		for i > 0 {
			p := (i - 1) / 2
			if !last.less(&h[p]) {
				break
			}
			h[i] = h[p]
			i = p
		}
		h[i] = last
	}
	e.heap = h
}

// Run processes events in order until none are left and returns nil. It
// stops at the first handler error or scheduling error and returns it as an
// *EventError carrying the simulated time, and returns ctx.Err() if ctx is
// cancelled (polled every 1024 events). Events still queued when Run stops
// stay queued. Calling Run from a handler is an error. Each event costs
// O(log pending).
func (e *Engine) Run(ctx context.Context) error {
	if e.run {
		return fmt.Errorf("sim: Engine.Run called from a handler")
	}
	if e.err != nil {
		return e.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	e.run = true
	defer func() { e.run = false; e.tier = 0 }()
	done := ctx.Done()
	for len(e.heap) > 0 {
		if done != nil && e.events&ctxCheckMask == ctxCheckMask {
			select {
			case <-done:
				return ctx.Err()
			default:
			}
		}
		top := &e.heap[0]
		at, key, slot := top.at, top.key, top.head
		p := e.slab[slot]
		if p.next >= 0 {
			top.head = p.next
		} else {
			e.pop()
			if e.lastOK && key == e.lastKey {
				e.lastOK = false
			}
		}
		e.slab[slot] = payload{next: e.free} // drop the actor reference
		e.free = slot
		e.pending--
		e.now = at
		e.tier = key & lateBit
		e.events++
		if err := p.actor.Act(at, p.arg); err != nil {
			return &EventError{Time: at, Err: err}
		}
		if e.err != nil {
			return &EventError{Time: at, Err: e.err}
		}
	}
	return nil
}
