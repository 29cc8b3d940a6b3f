package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func route(ls ...model.LinkID) []model.LinkID { return ls }

func TestExecuteMakespan(t *testing.T) {
	ns := model.Nanosecond
	tests := []struct {
		name     string
		capacity []float64
		build    func(s *Schedule)
		want     model.Time
		why      string
	}{
		{"empty", []float64{1}, func(*Schedule) {}, 0, "nothing to do"},
		{"chain of transfers", []float64{0.5, 0.25}, func(s *Schedule) {
			a := s.Add(Op{Route: route(0), Bytes: 1000, Latency: ns})
			b := s.Add(Op{Route: route(1), Bytes: 1000, Latency: 2 * ns, Deps: []OpID{a}})
			s.Add(Op{Route: route(0, 1), Bytes: 500, Latency: 3 * ns, Deps: []OpID{b}})
		}, (1000 + 2000) + (4000 + 2000) + (3000 + 2000),
			"sum of latency + bytes/min-capacity: (1ns+1000/0.5) + (2ns+1000/0.25) + (3ns+500/0.25)"},
		{"fan-in takes the max", []float64{1, 1, 1}, func(s *Schedule) {
			a := s.Add(Op{Route: route(0), Bytes: 1000})
			b := s.Add(Op{Route: route(1), Bytes: 3000, Latency: ns})
			c := s.Add(Op{Route: route(2), Bytes: 2000})
			s.Add(Op{Kind: OpDelay, Latency: 500, Deps: []OpID{a, b, c}})
		}, 4000 + 500, "max(1000, 1000+3000, 2000) on separate links, then a 500 ps delay"},
		{"shared link", []float64{1}, func(s *Schedule) {
			s.Add(Op{Route: route(0), Bytes: 1000})
			s.Add(Op{Route: route(0), Bytes: 1000})
		}, 2000, "two concurrent 1000 B flows on a 1 B/ps link"},
		{"weight and cap", []float64{1}, func(s *Schedule) {
			s.Add(Op{Route: route(0), Bytes: 100, Weight: 4})
			s.Add(Op{Route: route(0), Bytes: 100, RateCap: 0.1})
		}, 1000, "5 members, cap 0.1 < 1/5 binds: the 4 others get 0.9/4 = 0.225 (100 B in 444.4 ps); then the capped flow finishes 100 B at 0.1 -> 1000 ps"},
		{"zero-latency delays chain", []float64{1}, func(s *Schedule) {
			prev := s.Add(Op{Kind: OpDelay})
			for range 1000 {
				prev = s.Add(Op{Kind: OpDelay, Deps: []OpID{prev}})
			}
			s.Add(Op{Route: route(0), Bytes: 7, Deps: []OpID{prev}})
		}, 7, "zero-time delays take no time (and must not recurse)"},
		{"local copy and empty transfer", []float64{1}, func(s *Schedule) {
			a := s.Add(Op{Bytes: 1e6, Latency: 10})
			s.Add(Op{Route: route(0), Latency: 5, Deps: []OpID{a}})
		}, 15, "an empty route and zero bytes move nothing: latencies only"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Schedule
			tc.build(&s)
			res, err := Execute(context.Background(), &s, tc.capacity, ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// Each flow's finish is rounded up to a whole picosecond.
			if d := res.Makespan - tc.want; d < 0 || d > model.Time(s.Len()) {
				t.Errorf("makespan %d ps, want %d (%s)", res.Makespan, tc.want, tc.why)
			}
			if res.OpStart != nil || res.OpEnd != nil {
				t.Error("op times recorded without RecordOpTimes")
			}
			if load := s.LinkLoad(len(tc.capacity)); !slices.Equal(res.LinkBytes, load) {
				t.Errorf("LinkBytes %v, want LinkLoad %v", res.LinkBytes, load)
			}
		})
	}
}

// ringSchedule builds N ranks x S steps x C channels: at each step rank r
// sends bytes to rank r+1 over link r (channels share it), after receiving
// the previous step's chunk from rank r-1 and finishing its own previous send.
func ringSchedule(n, steps, channels int, bytes float64, lat model.Time) *Schedule {
	s := &Schedule{}
	deps := make([]OpID, 0, 2*n*steps*channels)
	prev := make([]OpID, n*channels) // last op of (rank, channel)
	cur := make([]OpID, n*channels)
	routes := make([][]model.LinkID, n)
	for r := range routes {
		routes[r] = []model.LinkID{model.LinkID(r)}
	}
	for st := range steps {
		for c := range channels {
			for r := range n {
				op := Op{Route: routes[r], Bytes: bytes, Latency: lat, Channel: int32(c), Step: int32(st), Rank: int32(r)}
				if st > 0 {
					k := len(deps)
					deps = append(deps, prev[((r+n-1)%n)*channels+c], prev[r*channels+c])
					op.Deps = deps[k:len(deps):len(deps)]
				}
				cur[r*channels+c] = s.Add(op)
			}
		}
		prev, cur = cur, prev
	}
	return s
}

func TestExecuteRing(t *testing.T) {
	// Every step moves bytes over N distinct links at once, so each step takes
	// latency + bytes/capacity: 1 us + 1 MB / (0.1 B/ps) = 1 us + 10 us.
	const n, steps = 8, 14
	s := ringSchedule(n, steps, 1, 1e6, model.Microsecond)
	caps := make([]float64, n)
	for i := range caps {
		caps[i] = 0.1
	}
	res, err := Execute(context.Background(), s, caps, ExecOptions{RecordOpTimes: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := steps * 11 * model.Microsecond; res.Makespan != want {
		t.Errorf("makespan %v, want %v", res.Makespan, want)
	}
	for l, busy := range res.LinkBusy {
		if want := steps * 10 * model.Microsecond; busy != want {
			t.Errorf("link %d busy %v, want %v", l, busy, want)
		}
	}
	// Op times: step st of any rank is ready at st x 11 us and ends 11 us later.
	for i, op := range s.ops() {
		st := model.Time(op.Step)
		if res.OpStart[i] != st*11*model.Microsecond || res.OpEnd[i] != (st+1)*11*model.Microsecond {
			t.Fatalf("op %d (step %d): [%v, %v]", i, st, res.OpStart[i], res.OpEnd[i])
		}
	}
	// One recompute per step start; a step's end leaves no flow whose rate
	// it could move (each link carried one flow), so it queues none.
	if res.Flows != n*steps || res.Recomputes != steps {
		t.Errorf("flows %d recomputes %d, want %d %d", res.Flows, res.Recomputes, n*steps, steps)
	}
}

func TestExecuteErrors(t *testing.T) {
	tests := []struct {
		name string
		s    *Schedule
		caps []float64
		want string
	}{
		{"nil", nil, nil, "nil schedule"},
		{"zero capacity", NewSchedule(Op{Route: route(0), Bytes: 1}, Op{Route: route(1, 2), Bytes: 1}), []float64{1, 1, 0}, "op 1 routes over link 2, which has zero capacity"},
		{"invalid", NewSchedule(Op{Kind: OpDelay, Deps: []OpID{0}}), nil, "op 0 depends on op 0"},
		{"bad link", NewSchedule(Op{Route: route(3)}), []float64{1}, "routes over link 3 of 1"},
		{"bad kind", NewSchedule(Op{Kind: 9}), nil, "unknown kind"},
		{"negative capacity", &Schedule{}, []float64{-1}, "link 0 has capacity -1"},
		{"NaN bytes (passes Validate)", NewSchedule(Op{Route: route(0), Bytes: math.NaN()}), []float64{1}, "op 0 has size NaN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Execute(context.Background(), tc.s, tc.caps, ExecOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "sim: ") {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestExecuteCancel(t *testing.T) {
	s := ringSchedule(4, 100, 4, 1000, 10)
	caps := []float64{1, 1, 1, 1}
	if _, err := Execute(newFlakyCtx(), s, caps, ExecOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("mid-run cancel: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Execute(ctx, s, caps, ExecOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("pre-cancelled: err = %v", err)
	}
}

// randomSchedule is a seeded random DAG mixing transfers (with weights,
// caps, multi-hop routes) and delays.
func randomSchedule(seed uint64, nops, links int) *Schedule {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := &Schedule{}
	for i := range nops {
		op := Op{Latency: model.Time(rng.IntN(2000))}
		for range rng.IntN(4) {
			if i > 0 {
				op.Deps = append(op.Deps, OpID(max(0, i-1-rng.IntN(30))))
			}
		}
		if rng.IntN(5) == 0 {
			op.Kind = OpDelay
		} else {
			op.Bytes = float64(rng.IntN(1 << 20))
			op.Weight = int32(rng.IntN(4))
			if rng.IntN(4) == 0 {
				op.RateCap = 0.01 + 0.05*rng.Float64()
			}
			for range 1 + rng.IntN(3) {
				op.Route = append(op.Route, model.LinkID(rng.IntN(links)))
			}
		}
		s.Add(op)
	}
	return s
}

func TestExecuteDeterminism(t *testing.T) {
	const links = 16
	caps := make([]float64, links)
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range caps {
		caps[i] = 0.02 + 0.3*rng.Float64()
	}
	var outs [2][]byte
	var res *Result
	for k := range outs {
		s := randomSchedule(42, 3000, links)
		var err error
		res, err = Execute(context.Background(), s, caps, ExecOptions{RecordOpTimes: true})
		if err != nil {
			t.Fatal(err)
		}
		if outs[k], err = json.Marshal(res); err != nil {
			t.Fatal(err)
		}
		// Causality: no op is ready before its dependencies end, none ends
		// before it is ready plus its latency.
		for i, op := range s.ops() {
			for _, d := range op.Deps {
				if res.OpStart[i] < res.OpEnd[d] {
					t.Fatalf("op %d ready at %v before dep %d ended at %v", i, res.OpStart[i], d, res.OpEnd[d])
				}
			}
			if res.OpEnd[i] < res.OpStart[i]+op.Latency || res.OpEnd[i] > res.Makespan {
				t.Fatalf("op %d: [%v, %v], latency %v, makespan %v", i, res.OpStart[i], res.OpEnd[i], op.Latency, res.Makespan)
			}
		}
		if load := s.LinkLoad(links); !slices.Equal(res.LinkBytes, load) {
			t.Fatalf("LinkBytes %v != LinkLoad %v", res.LinkBytes, load)
		}
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Error("two runs of the same schedule differ")
	}
	if res.Makespan <= 0 || res.Flows == 0 {
		t.Errorf("degenerate run: %+v", res)
	}
	// RecordOpEnds alone gives the same end times and no start times.
	ends, err := Execute(context.Background(), randomSchedule(42, 3000, links), caps, ExecOptions{RecordOpEnds: true})
	if err != nil {
		t.Fatal(err)
	}
	if ends.OpStart != nil || !slices.Equal(ends.OpEnd, res.OpEnd) || ends.Events != res.Events {
		t.Errorf("RecordOpEnds: start times %v, end times equal %v, events %d (want %d)",
			ends.OpStart != nil, slices.Equal(ends.OpEnd, res.OpEnd), ends.Events, res.Events)
	}
}

// BenchmarkExecuteRing runs a ring of 8 ranks x 2046 steps x 32 channels
// (523,776 ops; the shape of an 8-GPU ring AllReduce with many chunks), each
// step 512 KiB per channel over 8 links of 150 GB/s.
func BenchmarkExecuteRing(b *testing.B) {
	b.ReportAllocs()
	s := ringSchedule(8, 2046, 32, 512<<10, 2*model.Microsecond)
	caps := make([]float64, 8)
	for i := range caps {
		caps[i] = model.GBps(150).BytesPerPs()
	}
	var events int64
	b.ResetTimer()
	for b.Loop() {
		res, err := Execute(context.Background(), s, caps, ExecOptions{})
		if err != nil {
			b.Fatal(err)
		}
		events += res.Events
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(s.Len())*float64(b.N)/sec, "ops/s")
	b.ReportMetric(float64(events)/sec, "events/s")
}

// TestExecuteNumbering: the executor runs ops in its own numbering (by
// dependency depth, then ID), so a schedule whose IDs are out of depth
// order (a deep chain first, then a shallow root and its successor, then
// an op of depth 1 after one of depth 3) must still report every op's
// times under its own ID, and the call's end must leave out the op after
// CallOps (background work that ends last).
func TestExecuteNumbering(t *testing.T) {
	ns := model.Nanosecond
	var s Schedule
	a := s.Add(Op{Kind: OpDelay, Latency: 1 * ns})                       // 0: depth 0
	b := s.Add(Op{Kind: OpDelay, Latency: 2 * ns, Deps: []OpID{a}})      // 1: depth 1
	c := s.Add(Op{Kind: OpDelay, Latency: 3 * ns, Deps: []OpID{b}})      // 2: depth 2
	d := s.Add(Op{Kind: OpDelay, Latency: 10 * ns})                      // 3: depth 0, ends at 10
	e := s.Add(Op{Route: route(0), Bytes: 1000, Deps: []OpID{d}})        // 4: depth 1, 10..11 ns
	s.Add(Op{Kind: OpDelay, Latency: 4 * ns, Deps: []OpID{c, e}})        // 5: depth 3, 11..15 ns
	s.Add(Op{Kind: OpDelay, Latency: 50 * ns, Deps: []OpID{a}, Unit: 0}) // 6: background, 1..51 ns
	res, err := Execute(context.Background(), &s, []float64{1}, ExecOptions{RecordOpTimes: true, UnitEnds: true, CallOps: 6})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]model.Time{{0, 1 * ns}, {1 * ns, 3 * ns}, {3 * ns, 6 * ns}, {0, 10 * ns}, {10 * ns, 11 * ns}, {11 * ns, 15 * ns}, {1 * ns, 51 * ns}}
	for i, w := range want {
		if res.OpStart[i] != w[0] || res.OpEnd[i] != w[1] {
			t.Errorf("op %d: [%v, %v], want [%v, %v]", i, res.OpStart[i], res.OpEnd[i], w[0], w[1])
		}
	}
	if res.Makespan != 51*ns || res.CallEnd != 15*ns {
		t.Errorf("makespan %v, call end %v; want 51 ns and 15 ns (op 6 is not the call's)", res.Makespan, res.CallEnd)
	}
}
