package sim

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestScheduleKeepsOps: a schedule returns every op as it was added, bit
// for bit (sizes of 0 and -0 and a NaN rate cap kept apart), whatever the
// ops share: random ops drawn from few shapes and routes, as builders
// make them, and a few of their own.
func TestScheduleKeepsOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	routes := [][]model.LinkID{{0}, {1, 2}, {2, 3, 4}, {4}}
	sizes := []float64{0, math.Copysign(0, -1), 1, 1e6, 3.5}
	// Twenty shapes, each op one of them with its own rank.
	var protos []Op
	for range 20 {
		protos = append(protos, Op{
			Kind:    OpKind(rng.IntN(2)),
			Bytes:   sizes[rng.IntN(len(sizes))],
			Weight:  int32(rng.IntN(3)),
			Latency: model.Time(rng.IntN(4)),
			RateCap: float64(rng.IntN(2)),
			Channel: int32(rng.IntN(4)),
			Step:    int32(rng.IntN(3)),
			Unit:    int32(rng.IntN(8)),
		})
	}
	var want []Op
	s := &Schedule{}
	for i := range 5000 {
		op := protos[rng.IntN(len(protos))]
		op.Rank = int32(rng.IntN(64) - 1)
		if op.Kind == OpTransfer && rng.IntN(4) > 0 {
			op.Route = routes[rng.IntN(len(routes))]
		}
		if rng.IntN(100) == 0 {
			op.Route = []model.LinkID{model.LinkID(rng.IntN(5))} // a route of its own
			op.RateCap = math.NaN()
		}
		for range rng.IntN(4) {
			if i > 0 {
				op.Deps = append(op.Deps, OpID(rng.IntN(i)))
			}
		}
		want = append(want, op)
		if id := s.Add(op); int(id) != i {
			t.Fatalf("op %d got ID %d", i, id)
		}
	}
	// Two ops alike but for the sign of a zero size.
	for _, b := range []float64{0, math.Copysign(0, -1), 0} {
		op := Op{Kind: OpTransfer, Route: routes[0], Bytes: b, Rank: 1}
		want = append(want, op)
		s.Add(op)
	}
	if s.Len() != len(want) {
		t.Fatalf("%d ops, want %d", s.Len(), len(want))
	}
	if len(s.shapes) >= len(want)/2 {
		t.Errorf("%d shapes for %d ops drawn from few: nothing shared", len(s.shapes), len(want))
	}
	for i, w := range want {
		g := s.Op(i)
		if g.Kind != w.Kind || math.Float64bits(g.Bytes) != math.Float64bits(w.Bytes) || g.Weight != w.Weight ||
			g.Latency != w.Latency || math.Float64bits(g.RateCap) != math.Float64bits(w.RateCap) ||
			g.Channel != w.Channel || g.Step != w.Step || g.Rank != w.Rank || g.Unit != w.Unit ||
			!slices.Equal(g.Route, w.Route) || !slices.Equal(g.Deps, w.Deps) {
			t.Fatalf("op %d: got %+v, want %+v", i, g, w)
		}
	}
	// A changed latency is the op's alone.
	s.addLatency(1, 7)
	if g := s.Op(1); g.Latency != want[1].Latency+7 {
		t.Errorf("op 1 latency %v, want %v", g.Latency, want[1].Latency+7)
	}
	for i := range want {
		if i != 1 && s.Op(i).Latency != want[i].Latency {
			t.Fatalf("lengthening op 1 changed op %d", i)
		}
	}
}
