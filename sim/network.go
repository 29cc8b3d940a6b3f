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

// Slack links. A link is slack while the capped loads of the flows that
// cross it (member cap x weight x flows, summed over traversals) come to at
// most 1 - slackMargin of its capacity and no uncapped flow crosses it:
// then it cannot saturate whatever the rates, so it bottlenecks nobody, and
// a flow whose links are all slack runs at its cap. The loads are summed in
// integers of 1/capUnits bytes per picosecond, each rounded up, so that
// the sum stays an upper bound and never drifts however many flows come and
// go; a load of maxLoadU or more counts as uncapped. slackMargin (1e-9) is
// above levelTol, so a slack link's level stays more than levelTol above
// every cap on it and never freezes a class in a fill either.
const (
	capUnits    = 1 << 30
	maxLoadU    = 1 << 40
	slackMargin = 1e-9
)

// Network is a flow-level network over directed links. Concurrent flows
// share each link by weighted max-min fairness with per-member rate caps.
// Rates are recomputed once per instant at which flows start or end (a late
// event, so all starts and ends of one picosecond share one recompute) unless
// that instant's changes can move no rate (see Slack links below), and a
// single completion event is kept for the earliest finishing flow;
// completion times are rounded up to whole picoseconds.
//
// # Cost per event is what changed
//
// Flow classes. Flows started at the same instant with the same route
// (element by element), weight, rate cap and size are one class: max-min
// treats them symmetrically (they cross the same links, so every filling
// step freezes all or none of them at the same level), they get equal rates
// at every instant, move the same bytes and complete at the same event, so
// a class never has to split. A class of n flows counts as n x Weight
// members on each link of its route and costs one entry in the rate
// computation and the completion heaps; its members keep their own IDs,
// Done and Arg.
//
// Incremental max-min. The weighted max-min allocation with caps is unique
// and is characterised by its bottlenecks: an allocation is the max-min one
// exactly when it is feasible and every class is at its cap or crosses a
// saturated link on which no class has a higher member rate (Bertsekas and
// Gallager, Data Networks, 2nd ed., section 6.5.2; weights count members).
// The fill records, for every class, the link (or cap) that froze it. At a
// recompute the affected set S starts from the links whose traversals
// changed and grows, to a fixed point, by every new class on a link of the
// set, every class whose recorded bottleneck is a link of the set, and the
// links of each class added; a link on which the classes outside S leave
// no capacity for S brings all its classes in. Classes outside S keep
// their rates; S is filled over the capacity they leave. The result is
// then checked against the characterisation: classes in S have a
// bottleneck by construction if
// no class outside S runs faster on a link that froze a class of S (checked;
// a violator joins S and S is filled again), and classes outside S keep
// theirs because their bottleneck link is untouched (it is not a link of S,
// or they would be in it) and their caps do not change. So the combined
// allocation is the max-min one, by uniqueness. A departure from links
// that bottleneck nobody therefore costs a scan of those links; an arrival
// on such links costs the scan and a fill of the one class. S never leaves
// the connected component of the changed links, so the worst case is a
// refill of that component, never of unrelated flows.
// TestNetworkMatchesReference holds the result to the previous
// implementation, which progressive-filled every flow at every instant.
//
// Progressive filling (fill): all unfrozen classes' member rates rise
// together; a link freezes its classes when its residual capacity is used
// up, a class freezes at its cap. Levels within levelTol of the lowest are
// frozen in one step, as before (the lowest level is kept in a heap, or
// found by a scan when S is small); because only S is filled, levels inside
// and outside S no longer merge (and a class outside S may stay up to
// levelTol above a level of S), which moves rates by at most levelTol
// relative.
//
// Slack links. Each link keeps the sum of the caps of the flows that cross
// it (capUnits) and the count of classes whose recorded bottleneck it is
// (lBotN). A link whose capped flows cannot fill it is slack: it
// bottlenecks nobody once an instant's changes are in, so a new class whose
// links are all slack gets its cap at once (fastStart), with no recompute
// queued for it; and a departure from links that bottleneck no class moves
// no rate, so it queues none either (only the next completion event). A
// recompute starts its affected set from the changed links that bottleneck
// some class, and from the new classes without a rate. These skip work,
// never change a rate: the recompute they skip would find an empty
// affected set, or fill a new class at its cap.
//
// Lazy progress. A class's remaining bytes are stored as of the instant its
// rate last changed, with that instant; nothing is advanced per event. Two
// indexed heaps hold every class's completion event time (remaining - absTol/2
// over the rate, rounded up, as before) and the instant at which it comes
// within the completion tolerance; the earliest of the first is the one
// queued completion event, and at that event every class whose second is
// due completes (so flows finishing within tolerance of each other still
// complete together). Link busy time is accounted per interval in which a
// link carries a flow.
//
// Complexity per recompute: O(D + I log I) per round of the check (almost
// always one), where D is the sum of the degrees (class traversals) of the
// links of S and I the class-link incidences of S, plus O(C log A) heap
// updates for the C classes whose rate changed among A active classes.
// Per flow start O(len(Route)) (hashing the route for class lookup); per
// completed class O(log A + len(Route)), per completed flow O(len(Route))
// plus putting the completions of one instant in flow-ID order (see
// mergeDone). The worst case (S the whole component, and one component
// holding every flow) is the cost of a full recompute, as before.
//
// A Network is driven by its Engine and, like it, is not safe for
// concurrent use. Memory is O(links + peak active flows + peak classes);
// no allocation happens per event once slices have grown.
type Network struct {
	eng      *Engine
	capacity []float64

	// Class slots, structure of arrays, indexed by slot; ch holds the
	// fields the affected-set search and the fill touch per traversal.
	ch     []classHot
	cRoute [][]model.LinkID
	cPos   [][]int32 // cPos[c][k]: index of traversal (c, k) in lFlows[cRoute[c][k]]
	cSize  []float64 // bytes per member
	cW     []float64 // weight per flow
	cN     []int32   // flows in the class
	cCap   []float64 // per-member cap, +Inf if none
	cNew   []float64 // fill scratch: the new rate
	cRem   []float64 // remaining bytes per member at cAt
	cAt    []model.Time
	cStart []model.Time
	cFin   []model.Time // completion event time
	cTol   []float64    // time at which the class is within completion tolerance
	cHead  []int32      // first member (in flow-ID order)
	cTail  []int32      // last member
	cIdx   []int32      // index in act
	cLoadU []int64      // per-flow capped load in capUnits (Weight x cap, rounded up), -1 if uncapped
	free   []int32
	act    []int32 // active class slots

	// Member flows of classes: a slab with a free list.
	mID   []FlowID
	mDone []Actor
	mArg  []int64
	mNext []int32
	mFree []int32

	// Per link.
	lFlows [][]linkRef // active class traversals
	lSince []model.Time
	lBusy  []model.Time
	lBytes []float64
	lRes   []float64 // progressive filling: residual capacity
	lW     []float64 // progressive filling: unfrozen weight
	lSeen  []uint64  // affected-set stamp
	lBot   []uint64  // stamp of the last fill in which the link froze a class
	lLvl   []float64 // the level at which it did
	lDirty []bool
	lCapU  []int64 // sum of the capped loads of the capped traversals, in capUnits
	lUncap []int32 // traversals by uncapped classes
	lSlack []int64 // the most lCapU may be for the link to be slack
	lBotN  []int32 // filled classes whose recorded bottleneck is the link

	dirtyLinks []int32 // links whose traversals changed since the last recompute
	newCls     []int32 // classes created since the last recompute
	comp       []int32 // affected classes
	compLinks  []int32 // affected links (the search queue)
	lh         []level
	hFin       timeHeap
	hTol       floatHeap
	join       joinTable
	done       []doneItem
	doneRuns   []doneRun // done is one ID-sorted run per completed class
	doneOrd    []int32   // done in flow-ID order
	doneKeys   []doneKey // mergeDone scratch
	doneSlot   []int32   // mergeDone scratch

	stamp      uint64
	nextID     FlowID
	last       model.Time // time of the last start, recompute or completion
	dirty      bool
	gen        int64
	pending    bool // a completion event of generation gen is queued
	pendingAt  model.Time
	flows      int64
	active     int
	recomputes int64
	classes    int64 // classes created
	fastStarts int64 // classes given their cap at their start (fastStart)
	quietEnds  int64 // completion events that queued no recompute
	noJoin     bool  // never join flows into classes (for measurements)
	scanFill   int   // fill by scanning when S has at most this many classes + links
}

// scanFillMax is the default Network.scanFill: below it a fill step's scan
// of every link and cap is cheaper than keeping them in a heap (measured on
// the ring benchmarks, where S is a handful of classes and a few distinct
// levels).
const scanFillMax = 48

// classHot is the part of a class slot read per link traversal.
type classHot struct {
	seen   uint64  // affected-set stamp
	rate   float64 // rate per member, bytes/ps, since cAt
	nw     float64 // Weight x flows: the class's members on each traversal
	bot    int32   // the link that froze the class in its last fill, -1 for its cap
	filled bool    // has a rate and is in the heaps
	frozen bool    // fill scratch
	botN   bool    // bot >= 0 is counted in lBotN
	fast   bool    // given its cap at its start, on slack links (see capUnits): it may take joins this instant
	refill bool    // a join left a fast class's links not all slack: the next recompute fills it
}

// linkRef is one traversal of a link by a class: class slot c, route index k.
type linkRef struct{ c, k int32 }

// doneItem is one member flow completing at the current event.
type doneItem struct {
	id    FlowID
	arg   int64
	done  Actor
	route []model.LinkID
	bytes float64 // Bytes x Weight per traversal
}

// doneRun is the part done[pos:end] of the completions still to merge; id
// is done[pos].id.
type doneRun struct {
	id       FlowID
	pos, end int32
}

// doneKey is a completion's flow ID and index in done.
type doneKey struct {
	id FlowID
	i  int32
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
		lFlows:   make([][]linkRef, nl),
		lSince:   make([]model.Time, nl),
		lBusy:    make([]model.Time, nl),
		lBytes:   make([]float64, nl),
		lRes:     make([]float64, nl),
		lW:       make([]float64, nl),
		lSeen:    make([]uint64, nl),
		lBot:     make([]uint64, nl),
		lLvl:     make([]float64, nl),
		lDirty:   make([]bool, nl),
		lCapU:    make([]int64, nl),
		lUncap:   make([]int32, nl),
		lSlack:   make([]int64, nl),
		lBotN:    make([]int32, nl),
		last:     eng.Now(),
		scanFill: scanFillMax,
	}
	for l, c := range capacity {
		n.lSlack[l] = int64(math.Min(math.Floor(c*(1-slackMargin)*capUnits), maxLoadU))
	}
	return n, nil
}

// Flows returns how many flows Start has accepted. O(1).
func (n *Network) Flows() int64 { return n.flows }

// Active returns how many flows are in progress. O(1).
func (n *Network) Active() int { return n.active }

// Classes returns how many flow classes are in progress (each holds one or
// more of the Active flows). O(1).
func (n *Network) Classes() int { return len(n.act) }

// Recomputes returns how many times rates were recomputed (instants whose
// changes could move no rate are not counted: see Network). O(1).
func (n *Network) Recomputes() int64 { return n.recomputes }

// LinkBytes returns a new slice with the bytes each link has carried for
// flows that have completed (Bytes x Weight per traversal), indexed by
// model.LinkID. O(links).
func (n *Network) LinkBytes() []float64 { return slices.Clone(n.lBytes) }

// LinkBusy returns a new slice with the time each link has carried at least
// one active flow, up to the last start or completion, indexed by
// model.LinkID. O(links).
func (n *Network) LinkBusy() []model.Time {
	b := slices.Clone(n.lBusy)
	for l, fl := range n.lFlows {
		if len(fl) > 0 {
			b[l] += n.last - n.lSince[l]
		}
	}
	return b
}

// Rate returns the current per-member rate of active flow id in bytes per
// picosecond, as of the last recompute (0 for a flow started at this instant
// whose recompute is still pending), and false if the flow is not active.
// O(active flows); meant for tests and inspection.
func (n *Network) Rate(id FlowID) (float64, bool) {
	for _, c := range n.act {
		for m := n.cHead[c]; m >= 0; m = n.mNext[m] {
			if n.mID[m] == id {
				return n.ch[c].rate, true
			}
		}
	}
	return 0, false
}

func tolerance(size float64) float64 { return max(relTol*size, absTol) }

// loadUnits is a flow's capped load w x cp in capUnits, rounded up, or -1
// if it is uncapped (cp infinite) or too large to sum (maxLoadU).
func loadUnits(w, cp float64) int64 {
	u := math.Ceil(w * cp * capUnits)
	if !(u < maxLoadU) {
		return -1
	}
	return int64(u)
}

// addLoad adds k flows of class c to the capped loads of its route's links
// (k < 0 takes them off). O(len(route)).
func (n *Network) addLoad(c int32, k int64) {
	u := n.cLoadU[c]
	if u < 0 {
		return
	}
	for _, l := range n.cRoute[c] {
		n.lCapU[l] += k * u
	}
}

// slackRoute reports whether every link of class c's route is slack (see
// capUnits). O(len(route)).
func (n *Network) slackRoute(c int32) bool {
	if n.cLoadU[c] < 0 {
		return false
	}
	for _, l := range n.cRoute[c] {
		if n.lUncap[l] > 0 || n.lCapU[l] > n.lSlack[l] {
			return false
		}
	}
	return true
}

// Start begins flow f at the current engine time and returns its ID. It
// fails, starting nothing, if a route link is out of range or has zero
// capacity, or Bytes, Weight or RateCap is negative or NaN. A flow of zero
// bytes or with an empty route completes at the current time through a
// queued event (never by calling Done from inside Start). A flow identical
// to one started at this instant (route, weight, cap, size) joins its
// class. Amortised O(len(Route)) plus one queued recompute per instant.
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
	return n.start(&f), nil
}

// start is Start for a flow known to pass Start's checks (the executor
// checks every op once, before the run). *f is not kept.
func (n *Network) start(f *Flow) FlowID {
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
		return id
	}
	now := n.eng.Now()
	n.last = now
	c := math.Inf(1)
	if f.RateCap > 0 {
		c = f.RateCap
	}
	m := n.newMember(id, f.Done, f.Arg)
	n.active++
	cl, slot := int32(-1), -1
	if !n.noJoin {
		cl, slot = n.join.find(n, now, f.Route, w, c, f.Bytes)
	}
	if cl >= 0 {
		// Same instant, route, weight, cap and size as class cl, which has
		// no rate yet or runs at its cap on slack links: the flow joins it.
		n.mNext[n.cTail[cl]] = m
		n.cTail[cl] = m
		n.cN[cl]++
		n.ch[cl].nw = n.cW[cl] * float64(n.cN[cl])
		n.addLoad(cl, 1)
		if h := &n.ch[cl]; h.fast {
			if n.slackRoute(cl) {
				return id // still slack: the same rate, the same completion
			}
			h.fast, h.refill = false, true
			n.newCls = append(n.newCls, cl)
		}
		for _, l := range f.Route {
			n.markLink(int32(l))
		}
		n.markDirty()
		return id
	}
	cl = n.newClass()
	n.classes++
	if slot >= 0 {
		n.join.put(slot, cl)
	}
	n.cRoute[cl], n.cSize[cl], n.cW[cl], n.cN[cl], n.cCap[cl] = f.Route, f.Bytes, w, 1, c
	n.ch[cl].rate, n.ch[cl].nw = 0, w
	n.cRem[cl], n.cAt[cl], n.cStart[cl] = f.Bytes, now, now
	n.cHead[cl], n.cTail[cl] = m, m
	h := &n.ch[cl]
	h.filled, h.botN, h.fast, h.refill = false, false, false, false
	n.cLoadU[cl] = loadUnits(w, c)
	n.cIdx[cl] = int32(len(n.act))
	n.act = append(n.act, cl)
	n.addLoad(cl, 1)
	pos := n.cPos[cl][:0]
	for k, l := range f.Route {
		if n.cLoadU[cl] < 0 {
			n.lUncap[l]++
		}
		fl := n.lFlows[l]
		if len(fl) == 0 {
			n.lSince[l] = now
		}
		pos = append(pos, int32(len(fl)))
		n.lFlows[l] = append(fl, linkRef{cl, int32(k)})
	}
	n.cPos[cl] = pos
	if n.fastStart(cl, now) {
		return id
	}
	for _, l := range f.Route {
		n.markLink(int32(l))
	}
	n.newCls = append(n.newCls, cl)
	n.markDirty()
	return id
}

// fastStart gives new class c its cap at once when every link of its route
// is slack (see capUnits), and reports whether it did. No other class's
// rate changes: a slack link bottlenecks nobody once the instant's
// changes are in (the last fill froze classes only on saturated links, and
// any class on a link whose load then fell was filled again), and a class
// that the instant's other changes take below its cap is brought in by the
// recompute they queue, as any class outside its affected set is. So
// neither the links nor a recompute are queued for c; its completion event
// is, unless a recompute is already due this instant.
func (n *Network) fastStart(c int32, now model.Time) bool {
	cp := n.cCap[c]
	if !n.slackRoute(c) || !((n.cRem[c]-absTol/2)/cp < float64(math.MaxInt64/2)) {
		return false
	}
	n.ch[c].bot = -1
	if err := n.setRate(c, cp, now); err != nil {
		// Unreachable: cp > 0 and the time was checked above.
		panic(err)
	}
	n.ch[c].fast = true
	n.fastStarts++
	if !n.dirty {
		n.arm()
	}
	return true
}

// arm queues the completion event of the earliest-finishing class unless
// it is queued already. There must be a class in the heaps.
func (n *Network) arm() {
	at := n.hFin.k[0]
	if n.pending && n.pendingAt == at {
		return
	}
	n.gen++
	n.pending = true
	n.pendingAt = at
	n.eng.ScheduleActor(at, (*netComplete)(n), n.gen)
}

// newMember takes a member slot for flow id.
func (n *Network) newMember(id FlowID, done Actor, arg int64) int32 {
	var m int32
	if k := len(n.mFree); k > 0 {
		m = n.mFree[k-1]
		n.mFree = n.mFree[:k-1]
	} else {
		m = int32(len(n.mID))
		n.mID = append(n.mID, 0)
		n.mDone = append(n.mDone, nil)
		n.mArg = append(n.mArg, 0)
		n.mNext = append(n.mNext, 0)
	}
	n.mID[m], n.mDone[m], n.mArg[m], n.mNext[m] = id, done, arg, -1
	return m
}

// newClass takes a class slot.
func (n *Network) newClass() int32 {
	if k := len(n.free); k > 0 {
		c := n.free[k-1]
		n.free = n.free[:k-1]
		return c
	}
	c := int32(len(n.cRoute))
	n.cRoute = append(n.cRoute, nil)
	n.cPos = append(n.cPos, nil)
	n.cSize = append(n.cSize, 0)
	n.cW = append(n.cW, 0)
	n.cN = append(n.cN, 0)
	n.cCap = append(n.cCap, 0)
	n.cNew = append(n.cNew, 0)
	n.ch = append(n.ch, classHot{bot: -1})
	n.cRem = append(n.cRem, 0)
	n.cAt = append(n.cAt, 0)
	n.cStart = append(n.cStart, 0)
	n.cFin = append(n.cFin, 0)
	n.cTol = append(n.cTol, 0)
	n.cHead = append(n.cHead, -1)
	n.cTail = append(n.cTail, -1)
	n.cIdx = append(n.cIdx, 0)
	n.cLoadU = append(n.cLoadU, 0)
	n.hFin.pos = append(n.hFin.pos, -1)
	n.hTol.pos = append(n.hTol.pos, -1)
	return c
}

// markLink records that link l's traversals changed, for the next recompute.
func (n *Network) markLink(l int32) {
	if !n.lDirty[l] {
		n.lDirty[l] = true
		n.dirtyLinks = append(n.dirtyLinks, l)
	}
}

func (n *Network) markDirty() {
	if !n.dirty {
		n.dirty = true
		n.eng.ScheduleActorLate(n.eng.Now(), (*netRecompute)(n), 0)
	}
}

// removeClass takes class c out of the active set and off its links at the
// current time, and frees its slot (its members are freed by the caller).
func (n *Network) removeClass(c int32) {
	i := n.cIdx[c]
	last := n.act[len(n.act)-1]
	n.act[i] = last
	n.cIdx[last] = i
	n.act = n.act[:len(n.act)-1]
	if h := &n.ch[c]; h.botN {
		n.lBotN[h.bot]--
		h.botN = false
	}
	n.addLoad(c, -int64(n.cN[c]))
	uncapped := n.cLoadU[c] < 0
	pos := n.cPos[c]
	for k, l := range n.cRoute[c] {
		if uncapped {
			n.lUncap[l]--
		}
		fl := n.lFlows[l]
		j := pos[k]
		mv := fl[len(fl)-1]
		fl[j] = mv
		n.cPos[mv.c][mv.k] = j
		fl = fl[:len(fl)-1]
		n.lFlows[l] = fl
		if len(fl) == 0 {
			n.lBusy[l] += n.last - n.lSince[l]
		}
		n.markLink(int32(l))
	}
	n.active -= int(n.cN[c])
	n.cRoute[c] = nil
	n.cHead[c], n.cTail[c] = -1, -1
	n.free = append(n.free, c)
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

// recompute fills the classes the changes since the last recompute can
// affect, updates the completion heaps of those whose rate changed, and
// queues the earliest completion. O(D + I log I + C log A); see Network.
func (n *Network) recompute(now model.Time) error {
	n.dirty = false
	n.recomputes++
	n.last = now
	if len(n.act) == 0 {
		for _, l := range n.dirtyLinks {
			n.lDirty[l] = false
		}
		n.dirtyLinks = n.dirtyLinks[:0]
		n.newCls = n.newCls[:0]
		n.gen++
		n.pending = false
		return nil
	}
	// A new class whose links are all slack runs at its cap (see
	// capUnits), whatever the other classes do.
	for _, c := range n.newCls {
		if n.slackRoute(c) {
			n.ch[c].bot = -1
			if err := n.setRate(c, n.cCap[c], now); err != nil {
				return err
			}
		}
	}
	if err := n.affected(); err != nil {
		return err
	}
	for _, c := range n.comp {
		if err := n.setRate(c, n.cNew[c], now); err != nil {
			return err
		}
	}
	n.arm()
	return nil
}

// setRate gives class c per-member rate r from now on and updates its
// completion times; an unchanged rate leaves them as they are (they are
// exact for it).
func (n *Network) setRate(c int32, r float64, now model.Time) error {
	if n.ch[c].filled {
		if r == n.ch[c].rate {
			return nil
		}
		n.cRem[c] -= n.ch[c].rate * float64(now-n.cAt[c])
	}
	if !(r > 0) {
		return fmt.Errorf("sim: flow %d gets no bandwidth (rate %v)", n.mID[n.cHead[c]], r)
	}
	n.cAt[c] = now
	n.ch[c].rate, n.ch[c].fast = r, false
	rem := n.cRem[c]
	// Aim absTol/2 bytes short of done: a transfer whose exact time is a
	// whole picosecond then finishes on it rather than one late through
	// rounding noise (at most 5e-4 B / rate early, under 1 ps above
	// 0.5 GB/s), and the completion check keeps tolerance/2 of slack.
	dt := (rem - absTol/2) / r
	if !(dt < float64(math.MaxInt64/2)) {
		return fmt.Errorf("sim: next flow completion %v ps away overflows simulated time", dt)
	}
	fin := now + max(model.Time(math.Ceil(dt)), 1)
	// The flow is complete once rem - r x elapsed <= tolerance; never later
	// than its own completion event, so that event always completes it.
	tol := min(float64(now)+(rem-tolerance(n.cSize[c]))/r, float64(fin))
	n.cFin[c], n.cTol[c] = fin, tol
	if n.ch[c].filled {
		n.hFin.fix(c, fin)
		n.hTol.fix(c, tol)
	} else {
		n.ch[c].filled = true
		n.hFin.push(c, fin)
		n.hTol.push(c, tol)
	}
	return nil
}

// affected computes the classes whose rates the changes since the last
// recompute can move (comp) and the links they cross (compLinks), and
// fills them; see Network for the argument. It grows the set from the
// links whose traversals changed by adding every unfilled class on a link of
// the set and every class that link froze in its last fill (its
// bottleneck), and the links of each added class, to a fixed point; every
// other class on those links stays at its rate and takes its load off the
// links' residual capacity. A link left with no residual capacity for the
// set brings its other classes in. After the fill, a class outside the set
// on a link that froze a class of the set at level x must not run faster
// than x, or it is brought in and the set is filled again.
// O(degree sum of the links of the set) per round, plus the fill.
func (n *Network) affected() error {
	n.stamp++
	st := n.stamp
	n.comp = n.comp[:0]
	// A changed link matters only through the classes it bottlenecks: a
	// link that bottlenecks nobody (lBotN) can only take load from the
	// classes of S, which bring it in themselves.
	q := n.compLinks[:0]
	for _, l := range n.dirtyLinks {
		n.lDirty[l] = false
		if n.lBotN[l] > 0 && n.lSeen[l] != st {
			n.lSeen[l] = st
			q = append(q, l)
		}
	}
	n.dirtyLinks = n.dirtyLinks[:0]
	n.compLinks = q
	// New classes the slack test left without a rate, and fast classes
	// whose joins took their links out of slack.
	for _, c := range n.newCls {
		if h := &n.ch[c]; (!h.filled || h.refill) && h.seen != st {
			h.refill = false
			n.addAffected(c, st)
		}
	}
	n.newCls = n.newCls[:0]
	done := 0 // links of compLinks already scanned for bottlenecked classes
	for {
		for ; done < len(n.compLinks); done++ {
			l := n.compLinks[done]
			if n.lBotN[l] == 0 {
				continue
			}
			for _, e := range n.lFlows[l] {
				if c := e.c; n.ch[c].seen != st && n.ch[c].bot == l {
					n.addAffected(c, st)
				}
			}
		}
		// Residual capacity left by the classes that keep their rates.
		grew := false
		for _, l := range n.compLinks {
			res, w := n.capacity[l], 0.0
			for _, e := range n.lFlows[l] {
				if h := &n.ch[e.c]; h.seen == st {
					w += h.nw
				} else {
					res -= h.nw * h.rate
				}
			}
			if w > 0 && res <= 0 {
				for _, e := range n.lFlows[l] {
					if n.ch[e.c].seen != st {
						n.addAffected(e.c, st)
						grew = true
					}
				}
			}
			n.lRes[l], n.lW[l] = max(res, 0), w
		}
		if grew {
			continue
		}
		if len(n.comp) == 0 {
			return nil
		}
		if err := n.fill(st); err != nil {
			return err
		}
		// Every class outside the set must still be no faster than the
		// level of any link that now bottlenecks a class of the set.
		for _, l := range n.compLinks {
			if n.lBot[l] != st {
				continue
			}
			thr := n.lLvl[l] * (1 + levelTol)
			for _, e := range n.lFlows[l] {
				if c := e.c; n.ch[c].seen != st && n.ch[c].rate > thr {
					n.addAffected(c, st)
					grew = true
				}
			}
		}
		if !grew {
			return nil
		}
	}
}

// addAffected puts class c in the affected set with its links.
func (n *Network) addAffected(c int32, st uint64) {
	n.ch[c].seen = st
	n.comp = append(n.comp, c)
	for _, l := range n.cRoute[c] {
		if n.lSeen[l] != st {
			n.lSeen[l] = st
			n.compLinks = append(n.compLinks, int32(l))
		}
	}
}

// level is a progressive-filling heap entry: the fair-share level at which
// link id saturates (id >= 0), or the cap of class slot ^id (id < 0).
type level struct {
	lvl float64
	id  int32
}

// fill runs weighted max-min progressive filling over the classes in comp
// (those stamped st) and the links in compLinks, from the residual capacity
// lRes and weight lW that affected left, writing each class's member rate
// to cNew and the link or cap that froze it to cBot, and stamping the links
// that froze a class with st and their level.
//
// A link's level (residual / unfrozen weight) never falls when classes
// freeze at a level no higher than it ((R-wx)/(W-w) >= R/W when x <= R/W),
// so the min-heap of levels is updated lazily: a stale entry is corrected
// when it reaches the top. Each step freezes the classes of every link (and
// every capped class) within levelTol of the lowest level. O(I log I) for I
// class-link incidences.
func (n *Network) fill(st uint64) error {
	if len(n.comp)+len(n.compLinks) <= n.scanFill {
		return n.fillScan(st)
	}
	h := n.lh[:0]
	need := 0 // bounds the live entries: unfrozen classes' links and caps
	for _, c := range n.comp {
		n.ch[c].frozen = false
		n.cNew[c] = 0
		need += len(n.cRoute[c])
		if cp := n.cCap[c]; !math.IsInf(cp, 1) {
			h = append(h, level{cp, ^c})
			need++
		}
	}
	for _, l := range n.compLinks {
		if n.lW[l] > 0 {
			h = append(h, level{n.lRes[l] / n.lW[l], l})
		}
	}
	heapify(h)
	unfrozen := len(n.comp)
	for unfrozen > 0 {
		if len(h) > 2*need+16 {
			// Most entries are dead (frozen caps, links with no unfrozen
			// class): they would only be popped on reaching the top, so
			// dropping them now changes nothing but the cost.
			k := 0
			for _, t := range h {
				if t.id < 0 && !n.ch[^t.id].frozen || t.id >= 0 && n.lW[t.id] > 0 {
					h[k] = t
					k++
				}
			}
			h = h[:k]
			heapify(h)
		}
		// Settle the top: drop spent entries, refresh a stale level. Once
		// the top is fresh it is the true minimum (other entries are at or
		// below their true levels).
		x := math.Inf(1)
		for len(h) > 0 {
			t := h[0]
			if t.id < 0 {
				if n.ch[^t.id].frozen {
					h = popLevel(h)
					continue
				}
				x = t.lvl
				break
			}
			w := n.lW[t.id]
			if w <= 0 {
				h = popLevel(h)
				continue
			}
			if cur := n.lRes[t.id] / w; cur != t.lvl {
				h[0].lvl = cur
				siftDown(h, 0)
				continue
			}
			x = t.lvl
			break
		}
		if !(x > 0) || math.IsInf(x, 1) {
			n.lh = h[:0]
			return fmt.Errorf("sim: max-min fair share degenerated to %v bytes/ps with %d flow classes unfrozen", x, unfrozen)
		}
		thr := x * (1 + levelTol)
		before := unfrozen
		for len(h) > 0 && h[0].lvl <= thr {
			t := h[0]
			if t.id < 0 {
				if c := ^t.id; !n.ch[c].frozen {
					n.freeze(c, x, -1)
					unfrozen--
					need -= len(n.cRoute[c]) + 1
				}
				h = popLevel(h)
				continue
			}
			l := t.id
			w := n.lW[l]
			if w <= 0 {
				h = popLevel(h)
				continue
			}
			if cur := n.lRes[l] / w; cur > thr {
				h[0].lvl = cur
				siftDown(h, 0)
				continue
			}
			for _, e := range n.lFlows[l] {
				if c := e.c; n.ch[c].seen == st && !n.ch[c].frozen {
					n.freeze(c, x, l)
					unfrozen--
					need -= len(n.cRoute[c])
					if !math.IsInf(n.cCap[c], 1) {
						need--
					}
				}
			}
			n.lBot[l], n.lLvl[l] = st, x
			h = popLevel(h)
		}
		if unfrozen == before {
			n.lh = h[:0]
			return fmt.Errorf("sim: max-min filling made no progress at level %v bytes/ps", x)
		}
	}
	n.lh = h[:0]
	return nil
}

// fillScan is fill for a small S: each step scans every link and cap of S
// for the lowest level, then freezes the caps and the links within levelTol
// of it, in that order. The steps are those of fill; only the order in
// which one step's ties are frozen may differ. O(steps x (classes + links)
// of S + incidences).
func (n *Network) fillScan(st uint64) error {
	unfrozen := 0
	for _, c := range n.comp {
		n.ch[c].frozen = false
		n.cNew[c] = 0
		unfrozen++
	}
	for unfrozen > 0 {
		x := math.Inf(1)
		for _, c := range n.comp {
			if !n.ch[c].frozen {
				x = min(x, n.cCap[c])
			}
		}
		for _, l := range n.compLinks {
			if w := n.lW[l]; w > 0 {
				x = min(x, n.lRes[l]/w)
			}
		}
		if !(x > 0) || math.IsInf(x, 1) {
			return fmt.Errorf("sim: max-min fair share degenerated to %v bytes/ps with %d flow classes unfrozen", x, unfrozen)
		}
		thr := x * (1 + levelTol)
		before := unfrozen
		for _, c := range n.comp {
			if !n.ch[c].frozen && n.cCap[c] <= thr {
				n.freeze(c, x, -1)
				unfrozen--
			}
		}
		for _, l := range n.compLinks {
			if w := n.lW[l]; w <= 0 || n.lRes[l]/w > thr {
				continue
			}
			for _, e := range n.lFlows[l] {
				if n.ch[e.c].seen == st && !n.ch[e.c].frozen {
					n.freeze(e.c, x, l)
					unfrozen--
				}
			}
			n.lBot[l], n.lLvl[l] = st, x
		}
		if unfrozen == before {
			return fmt.Errorf("sim: max-min filling made no progress at level %v bytes/ps", x)
		}
	}
	return nil
}

func (a level) less(b level) bool { return a.lvl < b.lvl || (a.lvl == b.lvl && a.id < b.id) }

// lessBit is less as 0 or 1, computed without branches (flag sets and
// bitwise ops), for the heap's choice between two children, which the
// processor cannot predict.
func (a level) lessBit(b level) int {
	return b2i(a.lvl < b.lvl) | b2i(a.lvl == b.lvl)&b2i(a.id < b.id)
}

func b2i(b bool) int {
	var x int
	if b {
		x = 1
	}
	return x
}

func heapify(h []level) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i)
	}
}

func siftDown(h []level, i int) {
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n {
			c += h[c+1].lessBit(h[c])
		}
		if !h[c].less(x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

// popLevel removes the top of h by Floyd's bottom-up method: the hole left
// at the top moves down along the smaller children to a leaf, and the last
// entry, which nearly always belongs near the leaves, fills it and moves up
// (about half the comparisons of siftDown). The keys (lvl, id) are
// distinct, so the heap yields the same entries in the same order whatever
// its layout.
func popLevel(h []level) []level {
	n := len(h) - 1
	x := h[n]
	h = h[:n]
	if n == 0 {
		return h
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n {
			c += h[c+1].lessBit(h[c])
		}
		h[i] = h[c]
		i = c
	}
	for i > 0 {
		p := (i - 1) / 2
		if !x.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
	return h
}

// freeze fixes class c's member rate at x, records what froze it (link
// bot, or -1 for its cap) and takes its load off its links.
func (n *Network) freeze(c int32, x float64, bot int32) {
	h := &n.ch[c]
	h.frozen = true
	n.cNew[c] = x
	if h.botN {
		n.lBotN[h.bot]--
	}
	h.bot, h.botN = bot, bot >= 0
	if bot >= 0 {
		n.lBotN[bot]++
	}
	w := h.nw
	wx := w * x
	for _, l := range n.cRoute[c] {
		n.lRes[l] = max(n.lRes[l]-wx, 0)
		n.lW[l] -= w
	}
}

// complete handles a completion event: every class within tolerance of done
// is removed and its flows' Done called, in flow-ID order. O(completed
// classes x (log active classes + route length) + completed flows x log
// completed flows).
func (n *Network) complete(now model.Time, gen int64) error {
	if gen != n.gen {
		return nil // superseded by a later recompute
	}
	n.pending = false
	n.last = now
	n.done = n.done[:0]
	n.doneRuns = n.doneRuns[:0]
	ft := float64(now)
	for len(n.hTol.c) > 0 && n.hTol.k[0] <= ft {
		c := n.hTol.c[0]
		n.hTol.remove(c)
		n.hFin.remove(c)
		b := n.cSize[c] * n.cW[c]
		route := n.cRoute[c]
		start := int32(len(n.done))
		for m := n.cHead[c]; m >= 0; {
			n.done = append(n.done, doneItem{id: n.mID[m], arg: n.mArg[m], done: n.mDone[m], route: route, bytes: b})
			n.mDone[m] = nil
			n.mFree = append(n.mFree, m)
			m = n.mNext[m]
		}
		n.doneRuns = append(n.doneRuns, doneRun{n.done[start].id, start, int32(len(n.done))})
		n.ch[c].filled = false
		n.removeClass(c)
	}
	need := false // a departed class crossed a link that still bottlenecks a class
	for _, r := range n.doneRuns {
		for _, l := range n.done[r.pos].route {
			need = need || n.lBotN[l] > 0
		}
	}
	// A departure from links that bottleneck nobody moves no other rate:
	// the classes left keep their rates and completion times, and only
	// the completion event is queued again (after the callbacks, which
	// may start flows). Otherwise the recompute of the instant refills
	// those the departures affect.
	if need {
		n.markDirty()
	} else if !n.dirty {
		n.quietEnds++
		for _, l := range n.dirtyLinks {
			n.lDirty[l] = false
		}
		n.dirtyLinks = n.dirtyLinks[:0]
	}
	defer func() {
		if !n.dirty && len(n.hFin.c) > 0 {
			n.arm()
		}
	}()
	if len(n.done) == 0 {
		return nil
	}
	n.mergeDone()
	for _, i := range n.doneOrd {
		d := &n.done[i]
		for _, l := range d.route {
			n.lBytes[l] += d.bytes
		}
	}
	// Done may start flows (which never re-enter complete), so the done
	// scratch is stable while we iterate.
	for _, i := range n.doneOrd {
		d := &n.done[i]
		if d.done == nil {
			continue
		}
		if err := d.done.Act(now, d.arg); err != nil {
			return err
		}
	}
	return nil
}

// mergeDone sets doneOrd to the indices of done in flow-ID order by a
// k-way merge of the per-class runs (each class's members are in ID
// order). Runs that already follow each other are taken as they are; more
// than 8 runs are placed by ID when the IDs are dense (span at most 4 x
// completions + 64, O(span)) and sorted otherwise. O(completed flows x log
// completed classes) at most.
func (n *Network) mergeDone() {
	ord := n.doneOrd[:0]
	h := n.doneRuns
	inOrder := true
	for i := 1; i < len(h); i++ {
		if n.done[h[i-1].end-1].id > h[i].id {
			inOrder = false
			break
		}
	}
	if inOrder {
		for i := range n.done {
			ord = append(ord, int32(i))
		}
		n.doneOrd = ord
		return
	}
	if len(h) > 8 {
		lo, hi := n.done[0].id, n.done[0].id
		for i := range n.done {
			lo, hi = min(lo, n.done[i].id), max(hi, n.done[i].id)
		}
		if span := hi - lo + 1; span <= FlowID(4*len(n.done)+64) {
			// IDs are unique and dense: place each by its ID.
			slot := n.doneSlot[:0]
			for range span {
				slot = append(slot, -1)
			}
			for i := range n.done {
				slot[n.done[i].id-lo] = int32(i)
			}
			for _, i := range slot {
				if i >= 0 {
					ord = append(ord, i)
				}
			}
			n.doneSlot, n.doneOrd = slot, ord
			return
		}
		// Many classes, sparse IDs: a sort of compact keys beats the merge.
		keys := n.doneKeys[:0]
		for i := range n.done {
			keys = append(keys, doneKey{n.done[i].id, int32(i)})
		}
		slices.SortFunc(keys, func(a, b doneKey) int { return cmp.Compare(a.id, b.id) })
		for _, k := range keys {
			ord = append(ord, k.i)
		}
		n.doneKeys, n.doneOrd = keys, ord
		return
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		runDown(h, i)
	}
	for len(h) > 0 {
		r := &h[0]
		ord = append(ord, r.pos)
		r.pos++
		if r.pos < r.end {
			r.id = n.done[r.pos].id
		} else {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		runDown(h, 0)
	}
	n.doneOrd = ord
}

// runDown restores the min-heap order of runs by id below i.
func runDown(h []doneRun, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && h[r].id < h[c].id {
			c = r
		}
		if h[c].id >= h[i].id {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
