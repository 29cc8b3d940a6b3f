package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collsim/collsim/model"
)

// flowNet is what the property test drives: the incremental Network and
// the reference progressive filling (network_ref_test.go) both satisfy it.
type flowNet interface {
	Start(Flow) (FlowID, error)
	Rate(FlowID) (float64, bool)
	Active() int
	Flows() int64
	Recomputes() int64
	LinkBytes() []float64
	LinkBusy() []model.Time
}

// propFlow is one flow of a random scenario: started at time at if parent
// is -1, else when flow parent completes (at the same instant).
type propFlow struct {
	f      Flow
	at     model.Time
	parent int
}

type propScenario struct {
	caps  []float64
	flows []propFlow
}

// randomScenario draws links with random capacities (often from a few
// discrete values, so levels tie), a pool of random routes (1-4 hops,
// repeats allowed), and flows over them: random or discrete sizes, weights
// 0-4, caps on a third, arrivals at a handful of instants (so many are
// simultaneous), exact copies of the previous flow (one class) or copies
// with an equal but separate route slice, and follow-up flows started by a
// completion.
func randomScenario(rng *rand.Rand) propScenario {
	nl := 1 + rng.IntN(16)
	caps := make([]float64, nl)
	// A few capacities drawn per scenario and reused make levels tie across
	// links. They are random rather than round: with round values (0.05,
	// 0.5, ...) rates such as 1/80 B/ps put (rem - absTol/2) / rate exactly
	// on a whole picosecond, where the rounding noise of either
	// implementation picks one of the two neighbours (both within the 1 ps
	// of Network's completion aim), and the runs legitimately part by 1 ps.
	discrete := make([]float64, 1+rng.IntN(4))
	for i := range discrete {
		discrete[i] = 0.2 + rng.Float64()
	}
	for i := range caps {
		if rng.IntN(2) == 0 {
			caps[i] = discrete[rng.IntN(len(discrete))]
		} else {
			caps[i] = 0.2 + rng.Float64()
		}
	}
	routes := make([][]model.LinkID, 1+rng.IntN(12))
	for i := range routes {
		r := make([]model.LinkID, 1+rng.IntN(4))
		for j := range r {
			r[j] = model.LinkID(rng.IntN(nl))
		}
		routes[i] = r
	}
	times := make([]model.Time, 1+rng.IntN(6))
	for i := range times {
		times[i] = model.Time(rng.IntN(50000))
	}
	nf := 1 + rng.IntN(60)
	var flows []propFlow
	for i := range nf {
		if i > 0 && rng.IntN(4) == 0 {
			p := flows[len(flows)-1] // an identical flow
			if rng.IntN(3) == 0 {
				p.f.Route = slices.Clone(p.f.Route)
			}
			flows = append(flows, p)
			continue
		}
		f := Flow{Route: routes[rng.IntN(len(routes))], Weight: int32(rng.IntN(5))}
		switch rng.IntN(4) {
		case 0:
			f.Bytes = float64([]int{1000, 4096, 65536}[rng.IntN(3)])
		case 1:
			f.Bytes = 1e5 * rng.Float64()
		case 2:
			f.Bytes = math.Floor(1e4 * rng.Float64())
		default:
			f.Bytes = []float64{0, absTol, 2 * absTol, 1}[rng.IntN(4)]
		}
		switch rng.IntN(6) {
		case 0:
			f.RateCap = 0.01 + 0.3*rng.Float64()
		case 1:
			f.RateCap = discrete[rng.IntN(len(discrete))] / 4
		}
		pf := propFlow{f: f, at: times[rng.IntN(len(times))], parent: -1}
		if i > 0 && rng.IntN(3) == 0 {
			pf.parent = rng.IntN(len(flows))
		}
		flows = append(flows, pf)
	}
	return propScenario{caps: caps, flows: flows}
}

// propRun is the observable outcome of running a scenario.
type propRun struct {
	done       []model.Time // completion time per flow, -1 if none
	order      []int        // flows in completion order
	probes     []model.Time // instants at which rates were read
	rates      [][]float64  // per probe: rate of every active flow, by flow index
	ids        [][]int
	recomputes int64
	events     int64
	linkBytes  []float64
	linkBusy   []model.Time
	maxShared  int // largest Active - Classes seen (Network only)
	fastStarts int64
	quietEnds  int64
}

type propDriver struct {
	sc       *propScenario
	eng      *Engine
	net      flowNet
	children [][]int
	id       []FlowID
	live     []bool
	run      *propRun
	probeAt  model.Time
	err      error
}

func (d *propDriver) start(i int) error {
	f := d.sc.flows[i].f
	f.Done, f.Arg = d, int64(i)
	id, err := d.net.Start(f)
	if err != nil {
		return err
	}
	d.id[i] = id
	d.live[i] = true
	if d.probeAt != d.eng.Now() {
		d.probeAt = d.eng.Now()
		d.eng.ScheduleLate(d.eng.Now(), d.probe)
	}
	return nil
}

// Act is a completion: record it and start the flow's children.
func (d *propDriver) Act(now model.Time, arg int64) error {
	i := int(arg)
	if !d.live[i] {
		return fmt.Errorf("flow %d completed twice", i)
	}
	d.live[i] = false
	d.run.done[i] = now
	d.run.order = append(d.run.order, i)
	if d.probeAt != now {
		d.probeAt = now
		d.eng.ScheduleLate(now, d.probe)
	}
	for _, c := range d.children[i] {
		if err := d.start(c); err != nil {
			return err
		}
	}
	return nil
}

// probe runs late, after the network's recompute of the instant.
func (d *propDriver) probe(now model.Time) error {
	pending := false
	switch nw := d.net.(type) {
	case *Network:
		pending = nw.dirty
	case *refNetwork:
		pending = nw.dirty
	}
	if pending {
		// The instant's recompute was queued after this probe (by a start
		// after the probe's event, or in a completion callback): read the
		// rates after it.
		d.eng.ScheduleLate(now, d.probe)
		return nil
	}
	var rs []float64
	var ids []int
	for i, ok := range d.live {
		if !ok {
			continue
		}
		r, active := d.net.Rate(d.id[i])
		if !active {
			// Zero-byte and empty-route flows complete through a queued
			// event without ever being active.
			continue
		}
		rs = append(rs, r)
		ids = append(ids, i)
	}
	d.run.probes = append(d.run.probes, now)
	d.run.rates = append(d.run.rates, rs)
	d.run.ids = append(d.run.ids, ids)
	if nw, ok := d.net.(*Network); ok {
		d.run.maxShared = max(d.run.maxShared, nw.Active()-nw.Classes())
	}
	return nil
}

func runScenario(sc *propScenario, mk func(*Engine, []float64) (flowNet, error)) (*propRun, error) {
	e := NewEngine()
	net, err := mk(e, sc.caps)
	if err != nil {
		return nil, err
	}
	nf := len(sc.flows)
	d := &propDriver{sc: sc, eng: e, net: net, children: make([][]int, nf), id: make([]FlowID, nf), live: make([]bool, nf), probeAt: -1}
	d.run = &propRun{done: make([]model.Time, nf)}
	for i := range d.run.done {
		d.run.done[i] = -1
	}
	byTime := map[model.Time][]int{}
	var times []model.Time
	for i, pf := range sc.flows {
		if pf.parent >= 0 {
			d.children[pf.parent] = append(d.children[pf.parent], i)
			continue
		}
		if _, ok := byTime[pf.at]; !ok {
			times = append(times, pf.at)
		}
		byTime[pf.at] = append(byTime[pf.at], i)
	}
	for _, t := range times {
		e.Schedule(t, func(model.Time) error {
			for _, i := range byTime[t] {
				if err := d.start(i); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := e.Run(context.Background()); err != nil {
		return nil, err
	}
	if net.Active() != 0 {
		return nil, fmt.Errorf("%d flows still active", net.Active())
	}
	d.run.recomputes, d.run.events = net.Recomputes(), e.Events()
	d.run.linkBytes, d.run.linkBusy = net.LinkBytes(), net.LinkBusy()
	if nw, ok := net.(*Network); ok {
		d.run.fastStarts, d.run.quietEnds = nw.fastStarts, nw.quietEnds
	}
	return d.run, nil
}

func relNear(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// comparePropRuns returns the first difference between two runs.
func comparePropRuns(got, want *propRun) error {
	for i := range want.done {
		if !relNear(float64(got.done[i]), float64(want.done[i])) {
			return fmt.Errorf("flow %d completes at %d, reference %d", i, got.done[i], want.done[i])
		}
	}
	if !slices.Equal(got.order, want.order) {
		return fmt.Errorf("completion order %v, reference %v", got.order, want.order)
	}
	if !slices.Equal(got.probes, want.probes) {
		return fmt.Errorf("recompute instants %v, reference %v", got.probes, want.probes)
	}
	for p := range want.rates {
		if !slices.Equal(got.ids[p], want.ids[p]) {
			return fmt.Errorf("at %d active flows %v, reference %v", want.probes[p], got.ids[p], want.ids[p])
		}
		for k, r := range want.rates[p] {
			if !relNear(got.rates[p][k], r) {
				return fmt.Errorf("at %d flow %d rate %v, reference %v", want.probes[p], want.ids[p][k], got.rates[p][k], r)
			}
		}
	}
	for l := range want.linkBytes {
		if !relNear(got.linkBytes[l], want.linkBytes[l]) || !relNear(float64(got.linkBusy[l]), float64(want.linkBusy[l])) {
			return fmt.Errorf("link %d bytes %v busy %v, reference %v %v", l, got.linkBytes[l], got.linkBusy[l], want.linkBytes[l], want.linkBusy[l])
		}
	}
	// The reference recomputes at every instant a flow starts or ends; the
	// Network skips the instants whose changes move no rate (slack links,
	// departures from links that bottleneck nobody), never adds one.
	if got.recomputes > want.recomputes {
		return fmt.Errorf("recomputes %d, reference %d", got.recomputes, want.recomputes)
	}
	return nil
}

// TestNetworkMatchesReference runs thousands of random flow sets (random
// links, routes, weights, caps, sizes, simultaneous arrivals, arrivals
// triggered by departures, identical flows that form classes) through the
// incremental Network and the reference that progressive-fills every flow
// at every instant, and requires the same rates at every recompute, the
// same completion times and order, link bytes and busy time within 1e-9
// relative, and no more recomputes.
func TestNetworkMatchesReference(t *testing.T) {
	trials := 4000
	if testing.Short() {
		trials = 1500
	}
	rng := rand.New(rand.NewPCG(2026, 10))
	mkNew := func(e *Engine, c []float64) (flowNet, error) { return NewNetwork(e, c) }
	mkHeap := func(e *Engine, c []float64) (flowNet, error) {
		n, err := NewNetwork(e, c)
		if err == nil {
			n.scanFill = 0 // always fill through the level heap
		}
		return n, err
	}
	mkRef := func(e *Engine, c []float64) (flowNet, error) { return newRefNetwork(e, c) }
	shared, multiProbe, fast, quiet := 0, 0, 0, 0
	for trial := range trials {
		sc := randomScenario(rng)
		want, err := runScenario(&sc, mkRef)
		if err != nil {
			t.Fatalf("trial %d: reference: %v", trial, err)
		}
		got, err := runScenario(&sc, mkNew)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if err := comparePropRuns(got, want); err != nil {
			t.Fatalf("trial %d (%d links, %d flows): %v", trial, len(sc.caps), len(sc.flows), err)
		}
		viaHeap, err := runScenario(&sc, mkHeap)
		if err != nil {
			t.Fatalf("trial %d, heap fill: %v", trial, err)
		}
		if err := comparePropRuns(viaHeap, want); err != nil {
			t.Fatalf("trial %d (%d links, %d flows), heap fill: %v", trial, len(sc.caps), len(sc.flows), err)
		}
		if got.maxShared > 0 {
			shared++
		}
		if len(got.probes) > 2 {
			multiProbe++
		}
		if got.fastStarts > 0 {
			fast++
		}
		if got.quietEnds > 0 {
			quiet++
		}
	}
	// The scenarios must exercise classes and changing flow sets, or the
	// comparison proves little.
	if shared < trials/10 || multiProbe < trials/2 {
		t.Errorf("only %d of %d trials formed a class and %d had more than 2 recomputes", shared, trials, multiProbe)
	}
	// And the paths that skip work: a start on slack links, a departure
	// from links that bottleneck nobody.
	if fast < trials/10 || quiet < trials/10 {
		t.Errorf("only %d of %d trials started a flow on slack links and %d ended one without a recompute", fast, trials, quiet)
	}
}
