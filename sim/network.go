package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/collsim/collsim/model"
)

// FlowID identifies a flow in a Network. IDs are assigned in start order
// from 0 and never reused, so they order completion callbacks.
type FlowID int64

// Flow is a transfer handed to Network.Start.
type Flow struct {
	// Route is the sequence of directed links the flow crosses; the network
	// keeps the slice until the flow completes, so it must not be modified
	// meanwhile. An empty route completes immediately.
	Route []model.LinkID
	// Bytes is what each member flow carries, in bytes. Zero (or less than
	// the completion tolerance of 1e-3 bytes) completes immediately.
	Bytes float64
	// Weight is the number of identical member flows this flow stands for;
	// each member gets its own fair share, so the flow's total rate is
	// Weight x the member rate. 0 is read as 1.
	Weight int32
	// RateCap bounds each member's rate in bytes per picosecond; 0 = no cap.
	RateCap float64
	// Done, if not nil, receives Done.Act(t, Arg) when the flow completes
	// at time t.
	Done Actor
	// Arg is passed to Done.
	Arg int64
}

// Completion tolerance: a flow is complete when its remaining bytes are at
// most max(relTol x size, absTol). It absorbs floating-point drift from
// advancing many flows by elapsed x rate.
const (
	relTol = 1e-9
	absTol = 1e-3
)

// levelTol groups links whose fair-share levels differ by less than this
// relative amount into one progressive-filling step. It bounds the rate
// error at 1e-10 relative (0.1 ps per millisecond) and keeps rounding noise
// from splitting symmetric links into separate steps.
const levelTol = 1e-10

// Network is a flow-level network over directed links. Concurrent flows
// share each link by weighted max-min fairness with per-member rate caps,
// computed by progressive filling. Rates are recomputed once per instant at
// which flows start or end (a late event, so all starts and ends of one
// picosecond share one recompute), and a single completion event is kept
// for the earliest finishing flow; completion times are rounded up to whole
// picoseconds.
//
// A Network is driven by its Engine and, like it, is not safe for
// concurrent use. Memory is O(links + peak active flows); no allocation
// happens per recompute once scratch space has grown.
type Network struct {
	eng      *Engine
	capacity []float64

	// Flow slots, structure of arrays, indexed by slot.
	fID     []FlowID
	fRoute  [][]model.LinkID
	fSize   []float64
	fRem    []float64 // remaining bytes per member
	fRate   []float64 // rate per member, bytes/ps
	fCap    []float64 // per-member cap, +Inf if none
	fW      []float64
	fDone   []Actor
	fArg    []int64
	fPos    []int32 // index in act
	fFrozen []bool  // progressive-filling scratch
	free    []int32

	act []int32 // active slots

	// Per link.
	lCount   []int32 // active flow traversals
	lPos     []int32 // index in actLinks, -1 if idle
	actLinks []int32
	lBusy    []model.Time
	lBytes   []float64
	lRes     []float64 // progressive filling: residual capacity
	lW       []float64 // progressive filling: unfrozen weight
	lOff     []int32   // offset of the link's flows in inc

	inc    []int32 // link -> flow incidence, grouped by link
	ul     []int32 // links with unfrozen flows
	capped []int32 // unfrozen flows with a cap

	doneSlots []int32
	cbActor   []Actor
	cbArg     []int64

	nextID     FlowID
	last       model.Time // time progress was last advanced to
	dirty      bool
	gen        int64
	pending    bool // a completion event of generation gen is queued
	pendingAt  model.Time
	flows      int64
	recomputes int64
}

// NewNetwork returns a network driven by eng over links with the given
// capacities in bytes per picosecond, indexed by model.LinkID (GB/s x 1e-3;
// see model.GBps.BytesPerPs). The slice is copied. A capacity may be 0 (an
// absent link; routing a flow over it is an error) but not negative, NaN or
// infinite. eng must not be nil. O(links).
func NewNetwork(eng *Engine, capacity []float64) (*Network, error) {
	if eng == nil {
		return nil, fmt.Errorf("sim: NewNetwork with a nil engine")
	}
	for l, c := range capacity {
		if !(c >= 0) || math.IsInf(c, 1) {
			return nil, fmt.Errorf("sim: link %d has capacity %v bytes/ps (want finite and >= 0)", l, c)
		}
	}
	nl := len(capacity)
	n := &Network{
		eng:      eng,
		capacity: slices.Clone(capacity),
		lCount:   make([]int32, nl),
		lPos:     make([]int32, nl),
		lBusy:    make([]model.Time, nl),
		lBytes:   make([]float64, nl),
		lRes:     make([]float64, nl),
		lW:       make([]float64, nl),
		lOff:     make([]int32, nl),
		last:     eng.Now(),
	}
	for i := range n.lPos {
		n.lPos[i] = -1
	}
	return n, nil
}

// Flows returns how many flows Start has accepted. O(1).
func (n *Network) Flows() int64 { return n.flows }

// Active returns how many flows are in progress. O(1).
func (n *Network) Active() int { return len(n.act) }

// Recomputes returns how many times rates were recomputed. O(1).
func (n *Network) Recomputes() int64 { return n.recomputes }

// LinkBytes returns a new slice with the bytes each link has carried for
// flows that have completed (Bytes x Weight per traversal), indexed by
// model.LinkID. O(links).
func (n *Network) LinkBytes() []float64 { return slices.Clone(n.lBytes) }

// LinkBusy returns a new slice with the time each link has carried at least
// one active flow, up to the last start or completion, indexed by
// model.LinkID. O(links).
func (n *Network) LinkBusy() []model.Time { return slices.Clone(n.lBusy) }

// Rate returns the current per-member rate of active flow id in bytes per
// picosecond, as of the last recompute (0 for a flow started at this instant
// whose recompute is still pending), and false if the flow is not active.
// O(active flows); meant for tests and inspection.
func (n *Network) Rate(id FlowID) (float64, bool) {
	for _, s := range n.act {
		if n.fID[s] == id {
			return n.fRate[s], true
		}
	}
	return 0, false
}

func tolerance(size float64) float64 { return max(relTol*size, absTol) }

// Start begins flow f at the current engine time and returns its ID. It
// fails, starting nothing, if a route link is out of range or has zero
// capacity, or Bytes, Weight or RateCap is negative or NaN. A flow of zero
// bytes or with an empty route completes at the current time through a
// queued event (never by calling Done from inside Start). Amortised
// O(len(Route)) plus one queued recompute per instant.
func (n *Network) Start(f Flow) (FlowID, error) {
	if !(f.Bytes >= 0) || math.IsInf(f.Bytes, 1) {
		return -1, fmt.Errorf("sim: flow of %v bytes (want finite and >= 0)", f.Bytes)
	}
	if f.Weight < 0 {
		return -1, fmt.Errorf("sim: flow weight %d is negative", f.Weight)
	}
	if !(f.RateCap >= 0) {
		return -1, fmt.Errorf("sim: flow rate cap %v is negative or NaN", f.RateCap)
	}
	for _, l := range f.Route {
		if l < 0 || int(l) >= len(n.capacity) {
			return -1, fmt.Errorf("sim: flow routed over link %d of %d", l, len(n.capacity))
		}
		if n.capacity[l] <= 0 {
			return -1, fmt.Errorf("sim: flow routed over link %d, which has zero capacity", l)
		}
	}
	id := n.nextID
	n.nextID++
	n.flows++
	w := float64(max(f.Weight, 1))
	if len(f.Route) == 0 || f.Bytes <= absTol {
		for _, l := range f.Route {
			n.lBytes[l] += f.Bytes * w
		}
		if f.Done != nil {
			n.eng.ScheduleNow(f.Done, f.Arg)
		}
		return id, nil
	}
	n.advance(n.eng.Now())

	var s int32
	if k := len(n.free); k > 0 {
		s = n.free[k-1]
		n.free = n.free[:k-1]
	} else {
		s = int32(len(n.fID))
		n.fID = append(n.fID, 0)
		n.fRoute = append(n.fRoute, nil)
		n.fSize = append(n.fSize, 0)
		n.fRem = append(n.fRem, 0)
		n.fRate = append(n.fRate, 0)
		n.fCap = append(n.fCap, 0)
		n.fW = append(n.fW, 0)
		n.fDone = append(n.fDone, nil)
		n.fArg = append(n.fArg, 0)
		n.fPos = append(n.fPos, 0)
		n.fFrozen = append(n.fFrozen, false)
	}
	c := math.Inf(1)
	if f.RateCap > 0 {
		c = f.RateCap
	}
	n.fID[s], n.fRoute[s], n.fSize[s], n.fRem[s] = id, f.Route, f.Bytes, f.Bytes
	n.fRate[s], n.fCap[s], n.fW[s] = 0, c, w
	n.fDone[s], n.fArg[s] = f.Done, f.Arg
	n.fPos[s] = int32(len(n.act))
	n.act = append(n.act, s)
	for _, l := range f.Route {
		if n.lCount[l] == 0 {
			n.lPos[l] = int32(len(n.actLinks))
			n.actLinks = append(n.actLinks, int32(l))
		}
		n.lCount[l]++
	}
	n.markDirty()
	return id, nil
}

func (n *Network) markDirty() {
	if !n.dirty {
		n.dirty = true
		n.eng.ScheduleActorLate(n.eng.Now(), (*netRecompute)(n), 0)
	}
}

// advance moves every active flow forward to now at its current rate and
// accounts link busy time. O(active flows + active links); free when now has
// not moved.
func (n *Network) advance(now model.Time) {
	if now == n.last {
		return
	}
	dt := now - n.last
	fdt := float64(dt)
	for _, s := range n.act {
		n.fRem[s] -= n.fRate[s] * fdt
	}
	for _, l := range n.actLinks {
		n.lBusy[l] += dt
	}
	n.last = now
}

// remove takes slot s out of the active set and frees it.
func (n *Network) remove(s int32) {
	i := n.fPos[s]
	last := n.act[len(n.act)-1]
	n.act[i] = last
	n.fPos[last] = i
	n.act = n.act[:len(n.act)-1]
	w := n.fW[s]
	for _, l := range n.fRoute[s] {
		n.lBytes[l] += n.fSize[s] * w
		n.lCount[l]--
		if n.lCount[l] == 0 {
			j := n.lPos[l]
			ll := n.actLinks[len(n.actLinks)-1]
			n.actLinks[j] = ll
			n.lPos[ll] = j
			n.actLinks = n.actLinks[:len(n.actLinks)-1]
			n.lPos[l] = -1
		}
	}
	n.fRoute[s] = nil
	n.fDone[s] = nil
	n.free = append(n.free, s)
}

// netRecompute is the Network's recompute actor.
type netRecompute Network

func (r *netRecompute) Act(now model.Time, _ int64) error {
	return (*Network)(r).recompute(now)
}

// netComplete is the Network's completion actor; arg is the generation.
type netComplete Network

func (c *netComplete) Act(now model.Time, gen int64) error {
	return (*Network)(c).complete(now, gen)
}

// recompute sets every active flow's rate by weighted progressive filling
// and queues the next completion. O(iterations x (active links + capped
// flows) + sum of route lengths).
func (n *Network) recompute(now model.Time) error {
	n.dirty = false
	n.recomputes++
	n.advance(now)
	if len(n.act) == 0 {
		n.gen++
		n.pending = false
		return nil
	}
	if err := n.fill(); err != nil {
		return err
	}
	minDt := math.Inf(1)
	for _, s := range n.act {
		r := n.fRate[s]
		if !(r > 0) {
			return fmt.Errorf("sim: flow %d gets no bandwidth (rate %v)", n.fID[s], r)
		}
		minDt = min(minDt, n.fRem[s]/r)
	}
	if !(minDt < float64(math.MaxInt64/2)) {
		return fmt.Errorf("sim: next flow completion %v ps away overflows simulated time", minDt)
	}
	dt := max(model.Time(math.Ceil(minDt)), 1)
	at := now + dt
	if n.pending && n.pendingAt == at {
		return nil // the queued completion event is still right
	}
	n.gen++
	n.pending = true
	n.pendingAt = at
	n.eng.ScheduleActor(at, (*netComplete)(n), n.gen)
	return nil
}

// fill runs weighted max-min progressive filling: all unfrozen flows' member
// rates rise together; a link freezes its flows when its residual capacity
// is used up, a flow freezes at its cap.
func (n *Network) fill() error {
	// Link state and the link -> flow incidence (CSR over active links).
	var off int32
	n.ul = n.ul[:0]
	for _, l := range n.actLinks {
		n.lRes[l] = n.capacity[l]
		n.lW[l] = 0
		n.lOff[l] = off
		off += n.lCount[l]
		n.ul = append(n.ul, l)
	}
	if cap(n.inc) < int(off) {
		n.inc = make([]int32, off, 2*off)
	}
	n.inc = n.inc[:off]
	n.capped = n.capped[:0]
	for _, s := range n.act {
		n.fFrozen[s] = false
		n.fRate[s] = 0
		w := n.fW[s]
		for _, l := range n.fRoute[s] {
			n.lW[l] += w
			n.inc[n.lOff[l]] = s
			n.lOff[l]++
		}
		if !math.IsInf(n.fCap[s], 1) {
			n.capped = append(n.capped, s)
		}
	}
	for _, l := range n.actLinks {
		n.lOff[l] -= n.lCount[l] // back to the group start
	}
	unfrozen := len(n.act)
	for unfrozen > 0 {
		// The level at which the next link saturates or flow hits its cap.
		x := math.Inf(1)
		for i := 0; i < len(n.ul); {
			l := n.ul[i]
			if n.lW[l] <= 0 {
				n.ul[i] = n.ul[len(n.ul)-1]
				n.ul = n.ul[:len(n.ul)-1]
				continue
			}
			x = min(x, n.lRes[l]/n.lW[l])
			i++
		}
		for i := 0; i < len(n.capped); {
			s := n.capped[i]
			if n.fFrozen[s] {
				n.capped[i] = n.capped[len(n.capped)-1]
				n.capped = n.capped[:len(n.capped)-1]
				continue
			}
			x = min(x, n.fCap[s])
			i++
		}
		if !(x > 0) || math.IsInf(x, 1) {
			return fmt.Errorf("sim: max-min fair share degenerated to %v bytes/ps with %d flows unfrozen", x, unfrozen)
		}
		thr := x * (1 + levelTol)
		before := unfrozen
		for _, s := range n.capped {
			if !n.fFrozen[s] && n.fCap[s] <= thr {
				n.freeze(s, x)
				unfrozen--
			}
		}
		for _, l := range n.ul {
			if w := n.lW[l]; w > 0 && n.lRes[l] <= thr*w {
				o := n.lOff[l]
				for _, s := range n.inc[o : o+n.lCount[l]] {
					if !n.fFrozen[s] {
						n.freeze(s, x)
						unfrozen--
					}
				}
			}
		}
		if unfrozen == before {
			return fmt.Errorf("sim: max-min filling made no progress at level %v bytes/ps", x)
		}
	}
	return nil
}

func (n *Network) freeze(s int32, x float64) {
	n.fFrozen[s] = true
	n.fRate[s] = x
	w := n.fW[s]
	wx := w * x
	for _, l := range n.fRoute[s] {
		n.lRes[l] = max(n.lRes[l]-wx, 0)
		n.lW[l] -= w
	}
}

// complete handles a completion event: every flow within tolerance of done
// is removed and its Done called, in flow-ID order.
func (n *Network) complete(now model.Time, gen int64) error {
	if gen != n.gen {
		return nil // superseded by a later recompute
	}
	n.pending = false
	n.advance(now)
	n.doneSlots = n.doneSlots[:0]
	for _, s := range n.act {
		if n.fRem[s] <= tolerance(n.fSize[s]) {
			n.doneSlots = append(n.doneSlots, s)
		}
	}
	n.markDirty()
	if len(n.doneSlots) == 0 {
		return nil
	}
	slices.SortFunc(n.doneSlots, func(a, b int32) int { return cmp.Compare(n.fID[a], n.fID[b]) })
	n.cbActor = n.cbActor[:0]
	n.cbArg = n.cbArg[:0]
	for _, s := range n.doneSlots {
		n.cbActor = append(n.cbActor, n.fDone[s])
		n.cbArg = append(n.cbArg, n.fArg[s])
		n.remove(s)
	}
	// Done may start flows (which never re-enter complete), so the callback
	// scratch is stable while we iterate.
	for i, a := range n.cbActor {
		if a == nil {
			continue
		}
		if err := a.Act(now, n.cbArg[i]); err != nil {
			return err
		}
	}
	return nil
}
