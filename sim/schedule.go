package sim

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/collsim/collsim/model"
)

// OpID identifies an operation in a Schedule (an index into Schedule.Ops).
type OpID int32

// OpKind is what an operation does.
type OpKind uint8

// Operation kinds.
const (
	// OpTransfer moves Bytes over Route once Latency has elapsed after its
	// dependencies completed.
	OpTransfer OpKind = iota
	// OpDelay takes Latency and moves nothing (a reduction, a kernel launch,
	// a proxy hand-off).
	OpDelay
)

// Op is one node of a schedule DAG.
type Op struct {
	Kind OpKind
	// Route is the sequence of directed links a transfer crosses. A transfer
	// with an empty route is a local copy that completes after Latency.
	Route []model.LinkID
	// Bytes is what each member flow carries over the wire (payload plus
	// protocol overhead), in bytes.
	Bytes float64
	// Weight is the number of identical member flows this op stands for
	// (channels that share the route); each member gets its own fair share.
	// 0 is read as 1.
	Weight int32
	// Latency is the fixed time before bytes start to flow (transfer) or the
	// whole duration (delay).
	Latency model.Time
	// After is the fixed time from a transfer's last byte to its
	// completion: a hop's arrival latency folded into the transfer when
	// nothing but the arrival waits on the transfer (builder.addThen).
	// Delays take none.
	After model.Time
	// RateCap bounds each member flow's rate in bytes per picosecond (a
	// per-channel limit such as one CTA's copy rate); 0 means no cap.
	RateCap float64
	// Deps are the operations that must complete before this one starts.
	// Every dependency must have a smaller ID (schedules are built in
	// topological order).
	Deps []OpID
	// Channel, Step and Rank label the op for traces and tests: the channel
	// group, the algorithm step and the global rank of the GPU that sends
	// (transfer) or works (delay); Rank is -1 when no single GPU does.
	Channel, Step, Rank int32
	// Unit is the pipeline unit (chunk or loop) the op belongs to, counted
	// from 0 in the order the schedule processes them.
	Unit int32
	// rid is Route's index in the schedule it is added to plus one, when
	// the builder has interned Route there (Schedule.routeID), so that an
	// op of a route used unit after unit skips the lookup; 0: look it up.
	// Code that copies an op and changes its Route clears it.
	rid int32
}

// Schedule is a DAG of operations in topological order.
//
// It stores its ops compactly, in 16 bytes each: what many ops share (a
// transfer's size, weight, latency and rate cap with its labels, and its
// route) is kept once in a table and each op holds indices into the
// tables, with its dependencies in one arena. A builder adds ops with Add
// and reads them back with Op; the values are those it added, bit for bit.
// A large schedule holds tens of millions of ops but few distinct shapes
// and routes (one per pipeline unit and hop class), so the tables are
// small beside the ops.
type Schedule struct {
	recs   []opRec
	shapes []opShape
	routes [][]model.LinkID
	deps   []OpID
	// shapeOf and routeOf find a shape's and a route's index while ops
	// are added; last caches the latest shape of each kind.
	shapeOf map[opShape]int32
	routeOf map[routeKey]int32
	last    [2]struct {
		shape opShape
		id    int32
		ok    bool
	}
	lastRoute   routeKey
	lastRouteID int32
}

// opRec is one op: its shape, its route (0 is the empty route), the end
// of its dependencies in Schedule.deps (they start where the op before
// ends them) and its rank label.
type opRec struct {
	shape, route, depEnd, rank int32
}

// opShape is what an op shares with others: every field of Op but its
// route, dependencies and rank. Floats are kept as their bits, so that
// shapes are equal exactly when every bit is (0 and -0 differ, NaN equals
// itself).
type opShape struct {
	bytes, rateCap              uint64
	latency, after              model.Time
	weight, channel, step, unit int32
	kind                        OpKind
}

// routeKey identifies a route by its first element's address and its
// length: two routes with the same key are the same links.
type routeKey struct {
	p *model.LinkID
	n int
}

// Sizes of the schedule's parts, for the memory estimate (budget.go).
const (
	bytesPerRec   = int64(unsafe.Sizeof(opRec{}))
	bytesPerShape = int64(unsafe.Sizeof(opShape{}))
	bytesPerRoute = int64(unsafe.Sizeof([]model.LinkID{}))
)

// NewSchedule returns a schedule of ops, added in order.
func NewSchedule(ops ...Op) *Schedule {
	s := &Schedule{}
	s.grow(len(ops), 0)
	for _, op := range ops {
		s.Add(op)
	}
	return s
}

// Len is the number of ops.
func (s *Schedule) Len() int { return len(s.recs) }

// Op returns op i as it was added (Route and Deps share the schedule's
// memory: the caller must not modify them).
func (s *Schedule) Op(i int) Op {
	r := &s.recs[i]
	sh := &s.shapes[r.shape]
	op := Op{
		Kind:    sh.kind,
		Route:   s.routes[r.route],
		Bytes:   math.Float64frombits(sh.bytes),
		Weight:  sh.weight,
		Latency: sh.latency,
		After:   sh.after,
		RateCap: math.Float64frombits(sh.rateCap),
		Channel: sh.channel,
		Step:    sh.step,
		Rank:    r.rank,
		Unit:    sh.unit,
	}
	if lo := s.depStart(i); lo < int(r.depEnd) {
		op.Deps = s.deps[lo:r.depEnd:r.depEnd]
	}
	return op
}

// depStart is where op i's dependencies start in s.deps.
func (s *Schedule) depStart(i int) int {
	if i == 0 {
		return 0
	}
	return int(s.recs[i-1].depEnd)
}

// opDeps returns op i's dependencies.
func (s *Schedule) opDeps(i int) []OpID { return s.deps[s.depStart(i):s.recs[i].depEnd] }

// opRoute returns op i's route.
func (s *Schedule) opRoute(i int) []model.LinkID { return s.routes[s.recs[i].route] }

// shape returns op i's shape.
func (s *Schedule) shape(i int) *opShape { return &s.shapes[s.recs[i].shape] }

// depCount is the number of dependency entries of s.
func (s *Schedule) depCount() int { return len(s.deps) }

// grow makes room for ops more ops and deps more dependency entries.
func (s *Schedule) grow(ops, deps int) {
	s.recs = growFresh(s.recs, ops)
	s.deps = growFresh(s.deps, deps)
}

// growFresh is slices.Grow for the large arrays of a schedule, which are
// filled by appending: the room it makes is not cleared first (make
// leaves memory the system has just mapped as it is, already zero, where
// slices.Grow writes zeros over all of it), and where it spans huge
// pages it is advised to take them (adviseHuge), so that the appends
// that fill it fault once per 2 MiB, not per 4 KiB.
func growFresh[T any](s []T, n int) []T {
	if n <= cap(s)-len(s) {
		return s
	}
	out := make([]T, len(s), len(s)+n)
	copy(out, s)
	adviseHugeRange(unsafe.Pointer(unsafe.SliceData(out)), uintptr(cap(out))*unsafe.Sizeof(*new(T)))
	return out
}

// Add appends op and returns its ID.
func (s *Schedule) Add(op Op) OpID { return s.add(&op, op.Deps) }

// add appends op with dependencies deps (op.Deps is not read). The
// dependencies are copied, so a builder's variadic list stays on its
// stack (op's route is kept, so op escapes; deps, passed apart, does not).
func (s *Schedule) add(op *Op, deps []OpID) OpID {
	s.deps = append(s.deps, deps...)
	s.recs = append(s.recs, opRec{
		shape:  s.internShape(shapeOf(op)),
		route:  s.opRouteID(op),
		depEnd: int32(len(s.deps)),
		rank:   op.Rank,
	})
	return OpID(len(s.recs) - 1)
}

// shapeOf is op's shape.
func shapeOf(op *Op) opShape {
	return opShape{
		bytes: math.Float64bits(op.Bytes), rateCap: math.Float64bits(op.RateCap), latency: op.Latency, after: op.After,
		weight: op.Weight, channel: op.Channel, step: op.Step, unit: op.Unit, kind: op.Kind,
	}
}

// internShape returns the index of shape sh, adding it if it is new.
func (s *Schedule) internShape(sh opShape) int32 {
	c := &s.last[sh.kind&1]
	if c.ok && c.shape == sh {
		return c.id
	}
	id, ok := s.shapeOf[sh]
	if !ok {
		if s.shapeOf == nil {
			s.shapeOf = map[opShape]int32{}
		}
		id = int32(len(s.shapes))
		s.shapes = append(s.shapes, sh)
		s.shapeOf[sh] = id
	}
	c.shape, c.id, c.ok = sh, id, true
	return id
}

// routeID is what Op.rid holds for route r in s: its index plus one.
func (s *Schedule) routeID(r []model.LinkID) int32 { return s.internRoute(r) + 1 }

// opRouteID is op's route index: its rid's, or the lookup of its Route.
func (s *Schedule) opRouteID(op *Op) int32 {
	if op.rid > 0 {
		return op.rid - 1
	}
	return s.internRoute(op.Route)
}

// internRoute returns the index of route r (0 for an empty one), adding it
// if it is new.
func (s *Schedule) internRoute(r []model.LinkID) int32 {
	if len(s.routes) == 0 {
		s.routes = append(s.routes, nil)
	}
	if len(r) == 0 {
		return 0
	}
	k := routeKey{&r[0], len(r)}
	if k == s.lastRoute {
		return s.lastRouteID
	}
	id, ok := s.routeOf[k]
	if !ok {
		if s.routeOf == nil {
			s.routeOf = map[routeKey]int32{}
		}
		id = int32(len(s.routes))
		s.routes = append(s.routes, r)
		s.routeOf[k] = id
	}
	s.lastRoute, s.lastRouteID = k, id
	return id
}

// addLatency lengthens op i's latency by extra.
func (s *Schedule) addLatency(i int, extra model.Time) {
	if extra == 0 {
		return
	}
	sh := *s.shape(i)
	sh.latency += extra
	s.recs[i].shape = s.internShape(sh)
}

// tableBytes is what the shape and route tables and their indices take.
// Assumption: a map entry costs its key and value plus about as much
// again in buckets and free slots.
func (s *Schedule) tableBytes() int64 {
	var links int64
	for _, r := range s.routes {
		links += int64(len(r))
	}
	ns, nr := int64(len(s.shapes)), int64(len(s.routes))
	return ns*bytesPerShape + nr*bytesPerRoute + 2*(ns*(bytesPerShape+4)+nr*(int64(unsafe.Sizeof(routeKey{}))+4)) + 4*links
}

// Validate checks that dependencies point backwards, weights and sizes are
// sane and routes use links below numLinks. The error names the op.
func (s *Schedule) Validate(numLinks int) error {
	for i := range s.recs {
		for _, d := range s.opDeps(i) {
			if d < 0 || int(d) >= i {
				return fmt.Errorf("sim: op %d depends on op %d (dependencies must come first)", i, d)
			}
		}
		op := s.shape(i)
		if op.weight < 0 || math.Float64frombits(op.bytes) < 0 || op.latency < 0 || op.after < 0 || math.Float64frombits(op.rateCap) < 0 {
			return fmt.Errorf("sim: op %d has a negative weight, size, latency or rate cap", i)
		}
		if op.kind == OpDelay && op.after != 0 {
			return fmt.Errorf("sim: delay op %d has an arrival latency (After); a delay's time is its Latency", i)
		}
		route := s.opRoute(i)
		for _, l := range route {
			if l < 0 || int(l) >= numLinks {
				return fmt.Errorf("sim: op %d routes over link %d of %d", i, l, numLinks)
			}
		}
		if op.kind == OpDelay && len(route) > 0 {
			return fmt.Errorf("sim: delay op %d has a route", i)
		}
	}
	return nil
}

// LinkLoad returns, for every link, the bytes the schedule's transfers put
// on it (Bytes x Weight summed over the ops that cross it). It is the
// schedule's own accounting, independent of timing, used by the analytic
// engine and by tests that check an algorithm moves what its formula says.
func (s *Schedule) LinkLoad(numLinks int) []float64 {
	load := make([]float64, numLinks)
	for i := range s.recs {
		sh := s.shape(i)
		b := math.Float64frombits(sh.bytes)
		w := float64(max(sh.weight, 1))
		for _, l := range s.opRoute(i) {
			load[l] += b * w
		}
	}
	return load
}
