package sim

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/collsim/collsim/model"
)

// refNetwork is the reference flow-level network: the original
// implementation, which advances and progressive-fills every active flow at
// every instant, kept as the oracle for the incremental Network (see
// TestNetworkMatchesReference). Concurrent flows share each link by weighted max-min fairness with per-member rate caps,
// computed by progressive filling. Rates are recomputed once per instant at
// which flows start or end (a late event, so all starts and ends of one
// picosecond share one recompute), and a single completion event is kept
// for the earliest finishing flow; completion times are rounded up to whole
// picoseconds.
//
// A refNetwork is driven by its Engine and, like it, is not safe for
// concurrent use. Memory is O(links + peak active flows); no allocation
// happens per recompute once scratch space has grown.
type refNetwork struct {
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

	inc []int32    // link -> flow incidence, grouped by link
	lh  []refLevel // progressive filling: min-heap of link levels and flow caps

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

// newRefNetwork returns a reference network driven by eng over links with the given
// capacities in bytes per picosecond, indexed by model.LinkID (GB/s x 1e-3;
// see model.GBps.BytesPerPs). The slice is copied. A capacity may be 0 (an
// absent link; routing a flow over it is an error) but not negative, NaN or
// infinite. eng must not be nil. O(links).
func newRefNetwork(eng *Engine, capacity []float64) (*refNetwork, error) {
	if eng == nil {
		return nil, fmt.Errorf("sim: NewNetwork with a nil engine")
	}
	for l, c := range capacity {
		if !(c >= 0) || math.IsInf(c, 1) {
			return nil, fmt.Errorf("sim: link %d has capacity %v bytes/ps (want finite and >= 0)", l, c)
		}
	}
	nl := len(capacity)
	n := &refNetwork{
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
func (n *refNetwork) Flows() int64 { return n.flows }

// Active returns how many flows are in progress. O(1).
func (n *refNetwork) Active() int { return len(n.act) }

// Recomputes returns how many times rates were recomputed. O(1).
func (n *refNetwork) Recomputes() int64 { return n.recomputes }

// LinkBytes returns a new slice with the bytes each link has carried for
// flows that have completed (Bytes x Weight per traversal), indexed by
// model.LinkID. O(links).
func (n *refNetwork) LinkBytes() []float64 { return slices.Clone(n.lBytes) }

// LinkBusy returns a new slice with the time each link has carried at least
// one active flow, up to the last start or completion, indexed by
// model.LinkID. O(links).
func (n *refNetwork) LinkBusy() []model.Time { return slices.Clone(n.lBusy) }

// Rate returns the current per-member rate of active flow id in bytes per
// picosecond, as of the last recompute (0 for a flow started at this instant
// whose recompute is still pending), and false if the flow is not active.
// O(active flows); meant for tests and inspection.
func (n *refNetwork) Rate(id FlowID) (float64, bool) {
	for _, s := range n.act {
		if n.fID[s] == id {
			return n.fRate[s], true
		}
	}
	return 0, false
}

// Start begins flow f at the current engine time and returns its ID. It
// fails, starting nothing, if a route link is out of range or has zero
// capacity, or Bytes, Weight or RateCap is negative or NaN. A flow of zero
// bytes or with an empty route completes at the current time through a
// queued event (never by calling Done from inside Start). Amortised
// O(len(Route)) plus one queued recompute per instant.
func (n *refNetwork) Start(f Flow) (FlowID, error) {
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

func (n *refNetwork) markDirty() {
	if !n.dirty {
		n.dirty = true
		n.eng.ScheduleActorLate(n.eng.Now(), (*refRecompute)(n), 0)
	}
}

// advance moves every active flow forward to now at its current rate and
// accounts link busy time. O(active flows + active links); free when now has
// not moved.
func (n *refNetwork) advance(now model.Time) {
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
func (n *refNetwork) remove(s int32) {
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

// refRecompute is the Network's recompute actor.
type refRecompute refNetwork

func (r *refRecompute) Act(now model.Time, _ int64) error {
	return (*refNetwork)(r).recompute(now)
}

// refComplete is the Network's completion actor; arg is the generation.
type refComplete refNetwork

func (c *refComplete) Act(now model.Time, gen int64) error {
	return (*refNetwork)(c).complete(now, gen)
}

// recompute sets every active flow's rate by weighted progressive filling
// and queues the next completion. O(sum of route lengths x log(active links
// + capped flows)) for the filling plus O(active flows) for the completion.
func (n *refNetwork) recompute(now model.Time) error {
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
		// Aim absTol/2 bytes short of done: a transfer whose exact time is a
		// whole picosecond then finishes on it rather than one late through
		// rounding noise (at most 5e-4 B / rate early, under 1 ps above
		// 0.5 GB/s), and the completion check keeps tolerance/2 of slack.
		minDt = min(minDt, (n.fRem[s]-absTol/2)/r)
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
	n.eng.ScheduleActor(at, (*refComplete)(n), n.gen)
	return nil
}

// level is a progressive-filling heap entry: the fair-share level at which
// link id saturates (id >= 0), or the cap of flow slot ^id (id < 0).
type refLevel struct {
	lvl float64
	id  int32
}

// fill runs weighted max-min progressive filling: all unfrozen flows'
// member rates rise together; a link freezes its flows when its residual
// capacity is used up, a flow freezes at its cap.
//
// A link's level (residual / unfrozen weight) never falls when flows freeze
// at a level no higher than it ((R-wx)/(W-w) >= R/W when x <= R/W), so
// the min-heap of levels is updated lazily: a stale entry is corrected when
// it reaches the top. Each step freezes the flows of every link (and every
// capped flow) within levelTol of the lowest level.
func (n *refNetwork) fill() error {
	// Link state and the link -> flow incidence (CSR over active links).
	var off int32
	for _, l := range n.actLinks {
		n.lRes[l] = n.capacity[l]
		n.lW[l] = 0
		n.lOff[l] = off
		off += n.lCount[l]
	}
	if cap(n.inc) < int(off) {
		n.inc = make([]int32, off, 2*off)
	}
	n.inc = n.inc[:off]
	h := n.lh[:0]
	for _, s := range n.act {
		n.fFrozen[s] = false
		n.fRate[s] = 0
		w := n.fW[s]
		for _, l := range n.fRoute[s] {
			n.lW[l] += w
			n.inc[n.lOff[l]] = s
			n.lOff[l]++
		}
		if c := n.fCap[s]; !math.IsInf(c, 1) {
			h = append(h, refLevel{c, ^s})
		}
	}
	for _, l := range n.actLinks {
		n.lOff[l] -= n.lCount[l] // back to the group start
		h = append(h, refLevel{n.lRes[l] / n.lW[l], l})
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		refSiftDown(h, i)
	}
	unfrozen := len(n.act)
	for unfrozen > 0 {
		// Settle the top: drop spent entries, refresh a stale level. Once
		// the top is fresh it is the true minimum (other entries are at or
		// below their true levels).
		x := math.Inf(1)
		for len(h) > 0 {
			t := h[0]
			if t.id < 0 {
				if n.fFrozen[^t.id] {
					h = refPopLevel(h)
					continue
				}
				x = t.lvl
				break
			}
			w := n.lW[t.id]
			if w <= 0 {
				h = refPopLevel(h)
				continue
			}
			if cur := n.lRes[t.id] / w; cur != t.lvl {
				h[0].lvl = cur
				refSiftDown(h, 0)
				continue
			}
			x = t.lvl
			break
		}
		if !(x > 0) || math.IsInf(x, 1) {
			return fmt.Errorf("sim: max-min fair share degenerated to %v bytes/ps with %d flows unfrozen", x, unfrozen)
		}
		thr := x * (1 + levelTol)
		before := unfrozen
		for len(h) > 0 && h[0].lvl <= thr {
			t := h[0]
			if t.id < 0 {
				if s := ^t.id; !n.fFrozen[s] {
					n.freeze(s, x)
					unfrozen--
				}
				h = refPopLevel(h)
				continue
			}
			l := t.id
			w := n.lW[l]
			if w <= 0 {
				h = refPopLevel(h)
				continue
			}
			if cur := n.lRes[l] / w; cur > thr {
				h[0].lvl = cur
				refSiftDown(h, 0)
				continue
			}
			o := n.lOff[l]
			for _, s := range n.inc[o : o+n.lCount[l]] {
				if !n.fFrozen[s] {
					n.freeze(s, x)
					unfrozen--
				}
			}
			h = refPopLevel(h)
		}
		if unfrozen == before {
			return fmt.Errorf("sim: max-min filling made no progress at level %v bytes/ps", x)
		}
	}
	n.lh = h[:0]
	return nil
}

func (a refLevel) less(b refLevel) bool { return a.lvl < b.lvl || (a.lvl == b.lvl && a.id < b.id) }

func refSiftDown(h []refLevel, i int) {
	n := len(h)
	x := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].less(h[c]) {
			c = r
		}
		if !h[c].less(x) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = x
}

func refPopLevel(h []refLevel) []refLevel {
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	if n > 0 {
		refSiftDown(h, 0)
	}
	return h
}

func (n *refNetwork) freeze(s int32, x float64) {
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
func (n *refNetwork) complete(now model.Time, gen int64) error {
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
