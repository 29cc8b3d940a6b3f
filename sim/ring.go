package sim

import (
	"fmt"
	"math"

	"github.com/collsim/collsim/model"
)

// ringAlgo schedules ring AllReduce, AllGather and ReduceScatter.
type ringAlgo struct{}

func (ringAlgo) name() string { return "ring AllReduce, AllGather and ReduceScatter" }

func (ringAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoRing && coll != model.Broadcast && coll != model.Reduce
}

func (ringAlgo) build(b *builder) (*prog, error) { return b.ring() }

// ring builds ring AllReduce, AllGather and ReduceScatter: per channel the
// buffer block is processed in loops of n chunks; each loop takes 2(n-1)
// (AllReduce) or n-1 steps in which every rank sends one chunk to the next,
// pipelined slice by slice (nccl-facts §4.1-4.2).
func (b *builder) ring() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	n := c.NumRanks()
	G := c.GPUsPerNode()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	steps := n - 1
	if call.Coll == model.AllReduce {
		steps = 2 * (n - 1)
	}
	pr := &prog{kind: "ring", steps: steps}
	if n == 1 {
		return pr, nil
	}
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	chunk, slices := ringChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	units := ringLoops(D, n, chunk)
	reduced := e.symmetric()
	nsim := n
	if reduced {
		nsim = G
	}
	ccap := e.channelCeiling(proto)
	members := channelMembers(e.Tuner.Graphs.Ring, nc)
	hops := make([][]hopInfo, len(chans))
	multi := make([][]*multiHop, len(chans))
	fan := 0 // DES ops per push, summed over one group's ranks
	for g, ch := range chans {
		hops[g] = make([]hopInfo, nsim)
		multi[g] = make([]*multiHop, nsim)
		for j := 0; j < nsim; j++ {
			route, capv, m, err := b.hopPaths(ch, members[g], j, n, reduced)
			if err != nil {
				return nil, err
			}
			hops[g][j] = hopInfo{route, minCeiling(capv, ccap), e.stepLat(e.routeClass(route), proto)}
			multi[g][j] = m
			fan += m.fan()
		}
	}
	// DES ops: per (loop, step, slice) every rank's push (fan ops) and arrival.
	opCount := func() int { return len(units) * steps * slices * (fan + len(chans)*nsim) }
	// Coarsen pipeline units until the DES fits the op budget.
	for b.des && opCount() > opBudget && (len(units) > 1 || slices > 1) {
		if slices > 1 {
			slices = 1
		} else {
			chunk *= 2
			units = ringLoops(D, n, chunk)
		}
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	if b.des && opCount() > opBudget {
		// 2(n-1) steps per loop are inherent; beyond the budget the closed
		// form stands in.
		b.des, b.sched = false, nil
		pr.Note = fmt.Sprintf("ring timed analytically: %d ranks x %d channel groups is beyond the DES budget", n, len(chans))
	}
	pr.units, pr.slices = units, slices
	var total float64
	for _, u := range units {
		total += u * float64(steps)
	}
	pr.perMemb = total / model.ProtoPayload(proto)
	hopLat := model.Time(0)
	pr.syncAfterStep = true
	for g := range chans {
		for j := 0; j < nsim; j++ {
			h := &hops[g][j]
			if g == 0 {
				// A step's data dependency walks one hop around the ring, so
				// over a loop the latency paid is the ring's mean hop latency.
				hopLat += h.lat / model.Time(nsim)
			}
			if m := multi[g][j]; m != nil {
				pr.classes = append(pr.classes, m.classesOf(pr.perMemb, h.cap)...)
				continue
			}
			pr.classes = append(pr.classes, flowClass{route: h.route, bytes: pr.perMemb, weight: weights[g], ceil: h.cap})
		}
	}
	pr.latHop = hopLat
	if !b.des {
		return pr, nil
	}
	// DES: ops T (push) and A (arrival) per (group, loop, step, slice, rank).
	for g := range chans {
		prevT := make([]OpID, nsim) // last push by each rank
		for j := range prevT {
			prevT[j] = b.base
		}
		lastA := make([]OpID, nsim*slices) // arrival of (rank, slice) of the previous step
		for _, u := range units {
			sb := u / float64(slices) / model.ProtoPayload(proto)
			for s := 0; s < steps; s++ {
				for k := 0; k < slices; k++ {
					// A push waits for the rank's previous push and, after the
					// first step, for this slice's arrival from the previous
					// rank one step earlier.
					for j := 0; j < nsim; j++ {
						h := &hops[g][j]
						op := Op{Kind: OpTransfer, Route: h.route, Bytes: sb, Weight: weights[g], RateCap: h.cap.rate, Channel: int32(g), Step: int32(s), Rank: int32(j)}
						if s == 0 {
							prevT[j] = b.addHop(op, multi[g][j], prevT[j])
						} else {
							prevT[j] = b.addHop(op, multi[g][j], prevT[j], lastA[((j-1+nsim)%nsim)*slices+k])
						}
					}
					// Arrivals are recorded after every push of the slice, so
					// the loop above always reads the previous step's.
					for j := 0; j < nsim; j++ {
						lastA[j*slices+k] = b.add(Op{Kind: OpDelay, Latency: hops[g][j].lat, Channel: int32(g), Step: int32(s), Rank: int32(j)}, prevT[j])
					}
				}
				// The step's synchronisation follows its last slice: the
				// rank's next push waits for it (see the analytic ring).
				for j := 0; pr.syncAfterStep && j < nsim; j++ {
					prevT[j] = lastA[j*slices+slices-1]
				}
			}
		}
	}
	return pr, nil
}

// ringChunk returns the ring chunk payload and slices per chunk by protocol.
func ringChunk(p model.Proto) (float64, int) {
	if p == model.ProtoSimple {
		return model.RingChunkSteps * model.StepPayloadSimple, model.RingChunkSteps / model.RingSliceSteps
	}
	return model.StepPayload(p), 1
}

// ringLoops returns the per-rank chunk payload of each loop for a channel
// block of D bytes on n ranks: full chunks, then the remainder spread over
// the n ranks (NCCL's realChunkSize).
func ringLoops(D float64, n int, chunk float64) []float64 {
	if D <= 0 {
		return []float64{0}
	}
	var out []float64
	for off := 0.0; off < D; {
		rem := D - off
		real := math.Min(chunk, math.Ceil(rem/float64(n)))
		out = append(out, real)
		off += real * float64(n)
	}
	return out
}
