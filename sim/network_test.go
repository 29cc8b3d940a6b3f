package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// doneLog records flow completions (arg, time) in callback order.
type doneLog struct {
	args  []int64
	times []model.Time
}

func (d *doneLog) Act(now model.Time, arg int64) error {
	d.args = append(d.args, arg)
	d.times = append(d.times, now)
	return nil
}

func mustNetwork(t testing.TB, e *Engine, capacity []float64) *Network {
	t.Helper()
	n, err := NewNetwork(e, capacity)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustStart(t testing.TB, n *Network, f Flow) FlowID {
	t.Helper()
	id, err := n.Start(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func near(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))+1e-15
}

func TestNetworkRates(t *testing.T) {
	type fl struct {
		route  []model.LinkID
		weight int32
		cap    float64
	}
	tests := []struct {
		name     string
		capacity []float64
		flows    []fl
		want     []float64 // per-member rates, bytes/ps
		why      string
	}{
		{"single flow", []float64{2}, []fl{{route: []model.LinkID{0}}},
			[]float64{2}, "alone on the link: the full capacity"},
		{"two share", []float64{2}, []fl{{route: []model.LinkID{0}}, {route: []model.LinkID{0}}},
			[]float64{1, 1}, "2 / 2 flows"},
		{"weights 3:1", []float64{4}, []fl{{route: []model.LinkID{0}, weight: 3}, {route: []model.LinkID{0}, weight: 1}},
			[]float64{1, 1}, "4 members share 4 B/ps: 1 each, so totals 3 and 1"},
		{"classic max-min", []float64{1, 2, 3}, []fl{
			{route: []model.LinkID{0, 1, 2}}, // A
			{route: []model.LinkID{0}},       // B
			{route: []model.LinkID{1}},       // C
			{route: []model.LinkID{2}},       // D
		}, []float64{0.5, 0.5, 1.5, 2.5},
			"link 0 (A,B) saturates first at 1/2; then C = 2-0.5 on link 1, D = 3-0.5 on link 2"},
		{"classic, two-link textbook", []float64{1, 2}, []fl{
			{route: []model.LinkID{0, 1}}, {route: []model.LinkID{0}}, {route: []model.LinkID{1}},
		}, []float64{0.5, 0.5, 1.5}, "link 0 bottleneck 1/2 for A,B; C gets the rest of link 1"},
		{"cap binds", []float64{2}, []fl{{route: []model.LinkID{0}, cap: 0.5}, {route: []model.LinkID{0}}},
			[]float64{0.5, 1.5}, "A capped at 0.5 < fair 1; B takes the remaining 1.5"},
		{"cap above share", []float64{2}, []fl{{route: []model.LinkID{0}, cap: 1.5}, {route: []model.LinkID{0}}},
			[]float64{1, 1}, "cap 1.5 > fair share 1: does not bind"},
		{"weighted cap", []float64{2}, []fl{{route: []model.LinkID{0}, weight: 2, cap: 0.25}, {route: []model.LinkID{0}}},
			[]float64{0.25, 1.5}, "A's 2 members capped at 0.25 (total 0.5); B gets 2-0.5"},
		{"weighted bottleneck", []float64{3, 10}, []fl{
			{route: []model.LinkID{0, 1}, weight: 2}, {route: []model.LinkID{0}}, {route: []model.LinkID{1}, weight: 4},
		}, []float64{1, 1, 2}, "link 0: 3 members -> 1 each; link 1: 10 - 2x1 = 8 over C's 4 members"},
		{"loop route", []float64{3}, []fl{{route: []model.LinkID{0, 0}}, {route: []model.LinkID{0}}},
			[]float64{1, 1}, "a route crossing link 0 twice counts twice: 3 / (2+1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine()
			n := mustNetwork(t, e, tc.capacity)
			var ids []FlowID
			for _, f := range tc.flows {
				ids = append(ids, mustStart(t, n, Flow{Route: f.route, Bytes: 1e12, Weight: f.weight, RateCap: f.cap}))
			}
			var got []float64
			// Late at 0, queued after the network's recompute: rates are set.
			e.ScheduleLate(0, func(model.Time) error {
				for _, id := range ids {
					r, ok := n.Rate(id)
					if !ok {
						t.Errorf("flow %d not active", id)
					}
					got = append(got, r)
				}
				return context.Canceled // stop; the flows are huge
			})
			_ = e.Run(context.Background())
			for i := range tc.want {
				if i >= len(got) || !near(got[i], tc.want[i], 1e-9) {
					t.Fatalf("rates %v, want %v (%s)", got, tc.want, tc.why)
				}
			}
		})
	}
}

func TestNetworkFinishTimes(t *testing.T) {
	type fl struct {
		start model.Time
		route []model.LinkID
		bytes float64
		w     int32
	}
	tests := []struct {
		name     string
		capacity []float64
		flows    []fl
		want     []model.Time // completion time per flow (index = arg)
		why      string
	}{
		{"bytes/rate rounded up", []float64{0.3}, []fl{{0, []model.LinkID{0}, 1000, 1}},
			[]model.Time{3334}, "1000 / 0.3 = 3333.3 ps, ceil"},
		{"two equal", []float64{1}, []fl{{0, []model.LinkID{0}, 1000, 1}, {0, []model.LinkID{0}, 1000, 1}},
			[]model.Time{2000, 2000}, "each at 0.5 B/ps: 1000/0.5"},
		{"short then long", []float64{1}, []fl{{0, []model.LinkID{0}, 300, 1}, {0, []model.LinkID{0}, 1000, 1}},
			[]model.Time{600, 1300}, "both 0.5 until 600 (300 B each); then 700 B at 1 B/ps"},
		{"arrival mid-way", []float64{1}, []fl{{0, []model.LinkID{0}, 1000, 1}, {400, []model.LinkID{0}, 1000, 1}},
			[]model.Time{1600, 2000}, "A alone to 400 (600 left); shared 0.5 each: A done at 400+1200; B has 400 left at 1 B/ps"},
		{"weighted arrival", []float64{1}, []fl{{0, []model.LinkID{0}, 1000, 1}, {500, []model.LinkID{0}, 250, 3}},
			[]model.Time{1750, 1500}, "A alone to 500 (500 left); then 4 members at 0.25: B's 250 B take 1000 ps (done 1500), A moved 250; A's last 250 at 1 B/ps end at 1750"},
		{"zero bytes", []float64{1}, []fl{{5, []model.LinkID{0}, 0, 1}}, []model.Time{5}, "nothing to move"},
		{"empty route", []float64{1}, []fl{{5, nil, 100, 1}}, []model.Time{5}, "local: no link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := NewEngine()
			n := mustNetwork(t, e, tc.capacity)
			log := &doneLog{}
			for i, f := range tc.flows {
				e.Schedule(f.start, func(model.Time) error {
					_, err := n.Start(Flow{Route: f.route, Bytes: f.bytes, Weight: f.w, Done: log, Arg: int64(i)})
					return err
				})
			}
			if err := e.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := make([]model.Time, len(tc.flows))
			for i, a := range log.args {
				got[a] = log.times[i]
			}
			if len(log.args) != len(tc.flows) || !slices.Equal(got, tc.want) {
				t.Errorf("finish %v, want %v (%s)", got, tc.want, tc.why)
			}
		})
	}
}

func TestNetworkFinishWithinAPicosecond(t *testing.T) {
	// A lone flow of b bytes on a link of c bytes/ps must finish within 1 ps
	// of b / c, for sizes from 1 B to 10 GB and 1 to 900 GB/s; overlapping
	// flows on other links force many recomputes (and rounding) on the way.
	rng := rand.New(rand.NewPCG(11, 12))
	for range 300 {
		b := math.Floor(math.Exp(rng.Float64() * math.Log(1e10)))
		c := model.GBps(1 + 899*rng.Float64()).BytesPerPs()
		e := NewEngine()
		n := mustNetwork(t, e, []float64{c, 1})
		log := &doneLog{}
		mustStart(t, n, Flow{Route: []model.LinkID{0}, Bytes: b, Done: log})
		for k := range 20 {
			e.Schedule(model.Time(rng.IntN(int(b/c)+1)), func(model.Time) error {
				_, err := n.Start(Flow{Route: []model.LinkID{1}, Bytes: float64(k + 1)})
				return err
			})
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(log.times) != 1 || math.Abs(float64(log.times[0])-b/c) > 1 {
			t.Fatalf("%v B at %v B/ps finished at %v, want %v +- 1 ps", b, c, log.times, b/c)
		}
	}
}

func TestNetworkAccounting(t *testing.T) {
	// Flow 1: 1000 B over links 0,1 at 1 B/ps, [0, 1000). Flow 2: 500 B with
	// weight 2 over link 1 from 3000: 2 members at 0.5 -> [3000, 4000).
	e := NewEngine()
	n := mustNetwork(t, e, []float64{1, 1, 1})
	mustStart(t, n, Flow{Route: []model.LinkID{0, 1}, Bytes: 1000})
	e.Schedule(3000, func(model.Time) error {
		_, err := n.Start(Flow{Route: []model.LinkID{1}, Bytes: 500, Weight: 2})
		return err
	})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := n.LinkBytes(), []float64{1000, 2000, 0}; !slices.Equal(got, want) {
		t.Errorf("LinkBytes %v, want %v", got, want)
	}
	if got, want := n.LinkBusy(), []model.Time{1000, 2000, 0}; !slices.Equal(got, want) {
		t.Errorf("LinkBusy %v, want %v", got, want)
	}
	if e.Now() != 4000 || n.Flows() != 2 || n.Active() != 0 {
		t.Errorf("now %d flows %d active %d", e.Now(), n.Flows(), n.Active())
	}
}

func TestNetworkBatching(t *testing.T) {
	// 1000 flows started at one instant over 10 links, all finishing
	// together: one recompute at the start; the common completion leaves
	// no flow whose rate it could move, so it queues none.
	e := NewEngine()
	caps := make([]float64, 10)
	for i := range caps {
		caps[i] = 1
	}
	n := mustNetwork(t, e, caps)
	log := &doneLog{}
	for i := range 1000 {
		mustStart(t, n, Flow{Route: []model.LinkID{model.LinkID(i % 10)}, Bytes: 10, Done: log, Arg: int64(i)})
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 100 flows x 10 B per link at 1 B/ps: all done at 1000 ps.
	if n.Recomputes() != 1 || e.Now() != 1000 || len(log.args) != 1000 {
		t.Errorf("recomputes %d, end %d, done %d; want 1, 1000, 1000", n.Recomputes(), e.Now(), len(log.args))
	}
	// Events: 1 recompute + 1 completion.
	if e.Events() != 2 {
		t.Errorf("events %d, want 2", e.Events())
	}
}

func TestNetworkCallbackOrder(t *testing.T) {
	// Flow i runs alone on link i at 1 B/ps. Flows 0 and 2 (10 B) end at
	// 10 ps; their swap-removal scrambles the active set to [5 1 4 3]. Flows
	// 6 and 7 (50 B from 50 ps) reuse freed slots. Flows 1 and 3-5 (100 B)
	// and 6-7 all end at 100 ps; callbacks must still come in flow-ID order.
	e := NewEngine()
	caps := []float64{1, 1, 1, 1, 1, 1, 1, 1}
	n := mustNetwork(t, e, caps)
	log := &doneLog{}
	for i := range 6 {
		b := 100.0
		if i == 0 || i == 2 {
			b = 10
		}
		mustStart(t, n, Flow{Route: []model.LinkID{model.LinkID(i)}, Bytes: b, Done: log, Arg: int64(i)})
	}
	e.Schedule(50, func(model.Time) error {
		for i := 6; i < 8; i++ {
			if _, err := n.Start(Flow{Route: []model.LinkID{model.LinkID(i)}, Bytes: 50, Done: log, Arg: int64(i)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := []int64{0, 2, 1, 3, 4, 5, 6, 7}; !slices.Equal(log.args, want) {
		t.Errorf("callback order %v, want %v", log.args, want)
	}
	if want := []model.Time{10, 10, 100, 100, 100, 100, 100, 100}; !slices.Equal(log.times, want) {
		t.Errorf("callback times %v, want %v", log.times, want)
	}
}

func TestNetworkImmediateIsQueued(t *testing.T) {
	e := NewEngine()
	n := mustNetwork(t, e, []float64{1})
	log := &doneLog{}
	e.Schedule(7, func(model.Time) error {
		if _, err := n.Start(Flow{Bytes: 0, Route: []model.LinkID{0}, Done: log, Arg: 1}); err != nil {
			return err
		}
		if len(log.args) != 0 {
			t.Error("Done called from inside Start")
		}
		return nil
	})
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(log.times, []model.Time{7}) {
		t.Errorf("completed at %v, want [7]", log.times)
	}
}

func TestNetworkErrors(t *testing.T) {
	if _, err := NewNetwork(NewEngine(), []float64{1, -1}); err == nil || !strings.Contains(err.Error(), "link 1") {
		t.Errorf("negative capacity: %v", err)
	}
	if _, err := NewNetwork(NewEngine(), []float64{math.Inf(1)}); err == nil {
		t.Error("infinite capacity accepted")
	}
	if _, err := NewNetwork(nil, nil); err == nil {
		t.Error("nil engine accepted")
	}
	n := mustNetwork(t, NewEngine(), []float64{1, 0})
	for _, tc := range []struct {
		f    Flow
		want string
	}{
		{Flow{Route: []model.LinkID{0, 1}, Bytes: 1}, "link 1, which has zero capacity"},
		{Flow{Route: []model.LinkID{2}, Bytes: 1}, "link 2 of 2"},
		{Flow{Route: []model.LinkID{0}, Bytes: -1}, "bytes"},
		{Flow{Route: []model.LinkID{0}, Bytes: math.NaN()}, "bytes"},
		{Flow{Route: []model.LinkID{0}, Bytes: 1, Weight: -1}, "weight"},
		{Flow{Route: []model.LinkID{0}, Bytes: 1, RateCap: -1}, "rate cap"},
	} {
		if _, err := n.Start(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sim: ") {
			t.Errorf("Start(%+v) = %v, want error containing %q", tc.f, err, tc.want)
		}
	}
	if n.Flows() != 0 || n.Active() != 0 {
		t.Error("a refused flow was counted")
	}
}

// runRandomFlows starts seeded random flows at random times and returns the
// completion log, the engine and the network.
func runRandomFlows(t testing.TB, seed uint64) (*doneLog, *Engine, *Network) {
	rng := rand.New(rand.NewPCG(seed, 99))
	const links = 12
	caps := make([]float64, links)
	for i := range caps {
		caps[i] = 0.05 + rng.Float64()
	}
	e := NewEngine()
	n := mustNetwork(t, e, caps)
	log := &doneLog{}
	for i := range 300 {
		route := make([]model.LinkID, 1+rng.IntN(3))
		for j := range route {
			route[j] = model.LinkID(rng.IntN(links))
		}
		f := Flow{Route: route, Bytes: float64(rng.IntN(1 << 16)), Weight: int32(1 + rng.IntN(4)), Done: log, Arg: int64(i)}
		if rng.IntN(3) == 0 {
			f.RateCap = 0.01 + 0.2*rng.Float64()
		}
		e.Schedule(model.Time(rng.IntN(200000)), func(model.Time) error {
			_, err := n.Start(f)
			return err
		})
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return log, e, n
}

func TestNetworkDeterminism(t *testing.T) {
	l1, e1, n1 := runRandomFlows(t, 7)
	l2, e2, n2 := runRandomFlows(t, 7)
	if len(l1.args) != 300 {
		t.Fatalf("%d of 300 flows completed", len(l1.args))
	}
	if !slices.Equal(l1.args, l2.args) || !slices.Equal(l1.times, l2.times) ||
		e1.Events() != e2.Events() || n1.Recomputes() != n2.Recomputes() ||
		!slices.Equal(n1.LinkBytes(), n2.LinkBytes()) || !slices.Equal(n1.LinkBusy(), n2.LinkBusy()) {
		t.Error("two runs of the same flows differ")
	}
}

// TestNetworkConservation checks, on random flows, that no link is ever
// oversubscribed and that every flow's rate is limited by a saturated link
// or its cap (the max-min optimality condition).
func TestNetworkConservation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		links := 1 + rng.IntN(30)
		caps := make([]float64, links)
		for i := range caps {
			caps[i] = 0.1 + rng.Float64()
		}
		e := NewEngine()
		n := mustNetwork(t, e, caps)
		var flows []Flow
		var ids []FlowID
		for range 1 + rng.IntN(200) {
			route := make([]model.LinkID, 1+rng.IntN(4))
			for j := range route {
				route[j] = model.LinkID(rng.IntN(links))
			}
			f := Flow{Route: route, Bytes: 1e12, Weight: int32(1 + rng.IntN(3))}
			if rng.IntN(4) == 0 {
				f.RateCap = 0.01 + 0.1*rng.Float64()
			}
			flows = append(flows, f)
			ids = append(ids, mustStart(t, n, f))
		}
		e.ScheduleLate(0, func(model.Time) error { return context.Canceled })
		_ = e.Run(context.Background())
		load := make([]float64, links)
		rates := make([]float64, len(flows))
		for i, f := range flows {
			rates[i], _ = n.Rate(ids[i])
			for _, l := range f.Route {
				load[l] += rates[i] * float64(f.Weight)
			}
		}
		for l := range load {
			if load[l] > caps[l]*(1+1e-9) {
				t.Fatalf("trial %d: link %d carries %v > capacity %v", trial, l, load[l], caps[l])
			}
		}
		for i, f := range flows {
			if f.RateCap > 0 && rates[i] >= f.RateCap*(1-1e-9) {
				continue // cap-limited
			}
			// Must cross a saturated link on which it has the largest rate.
			ok := false
			for _, l := range f.Route {
				if load[l] < caps[l]*(1-1e-8) {
					continue
				}
				maxRate := 0.0
				for j, g := range flows {
					if slices.Contains(g.Route, l) {
						maxRate = max(maxRate, rates[j])
					}
				}
				if rates[i] >= maxRate*(1-1e-8) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("trial %d: flow %d rate %v has no bottleneck link", trial, i, rates[i])
			}
		}
	}
}

// TestNetworkClassesExact runs a lockstep ring (32 channels of identical
// flows per link, which form classes) with and without flow classes: every
// op must end at the same picosecond, with the same event and recompute
// counts, while classes hold far fewer entries than flows.
func TestNetworkClassesExact(t *testing.T) {
	s := ringSchedule(8, 40, 32, 512<<10, 2*model.Microsecond)
	caps := make([]float64, 8)
	for i := range caps {
		caps[i] = model.GBps(150).BytesPerPs() * (1 + 0.1*float64(i))
	}
	with, err := ExecuteNetStats(context.Background(), s, caps, true)
	if err != nil {
		t.Fatal(err)
	}
	without, err := ExecuteNetStats(context.Background(), s, caps, false)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(with.OpEnd, without.OpEnd) || with.Events != without.Events || with.Recomputes != without.Recomputes {
		t.Errorf("classes change the run: makespan %v vs %v, events %d vs %d, recomputes %d vs %d",
			with.Makespan, without.Makespan, with.Events, without.Events, with.Recomputes, without.Recomputes)
	}
	// 8 links x 40 steps, 32 identical flows each.
	if with.Flows != 8*40*32 || with.Classes != 8*40 || without.Classes != with.Flows {
		t.Errorf("flows %d in %d classes (without classes %d), want %d in %d", with.Flows, with.Classes, without.Classes, 8*40*32, 8*40)
	}
}

// batchActor restarts a flow with the same parameters when one completes,
// until left runs out, keeping 256 flows in flight.
type batchActor struct {
	n      *Network
	routes [][]model.LinkID
	bytes  []float64
	left   int
}

func (a *batchActor) Act(now model.Time, arg int64) error {
	if a.left <= 0 {
		return nil
	}
	a.left--
	_, err := a.n.Start(Flow{Route: a.routes[arg], Bytes: a.bytes[arg], Done: a, Arg: arg})
	return err
}

// BenchmarkNetwork keeps 256 flows over 64 links in flight; flow sizes fall
// in 4 classes so flows start and end in batches. One op is one completed
// flow. A first run of 4096 completions grows every slice, so the timed run
// is the steady state and must not allocate (0 allocs/op).
func BenchmarkNetwork(b *testing.B) {
	b.ReportAllocs()
	const links, flows = 64, 256
	caps := make([]float64, links)
	for i := range caps {
		caps[i] = 0.1 * float64(1+i%4)
	}
	e := NewEngine()
	n := mustNetwork(b, e, caps)
	a := &batchActor{n: n}
	for i := range flows {
		a.routes = append(a.routes, []model.LinkID{model.LinkID(i % links), model.LinkID((i*7 + 3) % links)})
		a.bytes = append(a.bytes, float64(1<<16)*float64(1+i%4))
	}
	run := func(left int) {
		a.left = left
		for i := range flows {
			mustStart(b, n, Flow{Route: a.routes[i], Bytes: a.bytes[i], Done: a, Arg: int64(i)})
		}
		if err := e.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	run(4096)
	f0, r0, e0 := n.Flows(), n.Recomputes(), e.Events()
	b.ResetTimer()
	run(b.N)
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(n.Flows()-f0)/s, "flows/s")
	b.ReportMetric(2*float64(n.Flows()-f0)/s, "flow-events/s")
	b.ReportMetric(float64(n.Recomputes()-r0)/s, "recomputes/s")
	b.ReportMetric(float64(e.Events()-e0)/s, "events/s")
}

// TestMergeDone checks each way completions are put in flow-ID order: runs
// already in order, a merge of few runs, placement of dense IDs and a sort
// of sparse ones, on random ID-sorted runs.
func TestMergeDone(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 400 {
		n := &Network{}
		runs := 1 + rng.IntN(20)
		spread := []int{1, 3, 1000}[trial%3] // ID gaps: dense to sparse
		var ids []FlowID
		next := FlowID(rng.IntN(100))
		for range 10 * runs {
			next += FlowID(1 + rng.IntN(spread))
			ids = append(ids, next)
		}
		// Deal the IDs into runs, each kept in ID order.
		perm := make([]int, len(ids))
		for i := range perm {
			perm[i] = rng.IntN(runs)
		}
		if trial%5 == 0 {
			slices.Sort(perm) // runs that follow each other
		}
		for r := range runs {
			start := int32(len(n.done))
			for i, id := range ids {
				if perm[i] == r {
					n.done = append(n.done, doneItem{id: id})
				}
			}
			if end := int32(len(n.done)); end > start {
				n.doneRuns = append(n.doneRuns, doneRun{n.done[start].id, start, end})
			}
		}
		n.mergeDone()
		var got []FlowID
		for _, i := range n.doneOrd {
			got = append(got, n.done[i].id)
		}
		if !slices.Equal(got, ids) {
			t.Fatalf("trial %d (%d runs, spread %d): order %v, want %v", trial, len(n.doneRuns), spread, got, ids)
		}
	}
}
