package sim

import (
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
	pr := &prog{}
	if n == 1 {
		return pr, nil
	}
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	chunk, slices := ringChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	units := ringLoops(D, n, chunk)
	reduced := e.symmetric() && !b.full
	nsim := n
	if reduced {
		nsim = G
	}
	pr.units = units
	ccap := e.channelCeiling(proto)
	members := channelMembers(e.Tuner.Graphs.Ring, nc)
	hops := make([][]hopInfo, len(chans))
	multi := make([][]*multiHop, len(chans))
	fan := 0 // DES ops per push, summed over the groups' ranks
	for g, ch := range chans {
		hops[g] = make([]hopInfo, nsim)
		multi[g] = make([]*multiHop, nsim)
		for j := 0; j < nsim; j++ {
			route, capv, m, err := b.hopPaths(ch, members[g], j, n, reduced)
			if err != nil {
				return nil, err
			}
			hops[g][j] = hopInfo{route: route, cap: minCeiling(capv, ccap), lat: e.stepLat(e.routeClass(route), proto)}
			multi[g][j] = m
			fan += m.fan()
		}
	}
	if !b.des {
		return pr, nil
	}
	// DES: ops T (push) and A (arrival) per (group, loop, step, slice, rank).
	sim, skipped := b.simUnits(units)
	pr.skipped = skipped
	// Per (loop, step, slice) every rank's push (fan ops: one per QP route
	// and a join where a hop has several) and its arrival.
	nops := int64(len(sim)) * int64(steps) * int64(slices) * int64(fan+len(chans)*nsim)
	if err := b.reserve(nops, nops*2); err != nil {
		return nil, err
	}
	rank := make([]int32, nsim) // global rank at each ring position
	for g := range chans {
		for j := range rank {
			node, gpu := ringRank(chans[g], G, j)
			rank[j] = int32(node*G + gpu)
		}
		prevT := make([]OpID, nsim) // last push by each rank
		for j := range prevT {
			prevT[j] = b.base
		}
		lastA := make([]OpID, nsim*slices) // arrival of (rank, slice) of the previous step
		for ui, u := range sim {
			b.unit = int32(ui)
			sb := u / float64(slices) / model.ProtoPayload(proto)
			for s := 0; s < steps; s++ {
				for k := 0; k < slices; k++ {
					// A push waits for the rank's previous push and, after the
					// first step, for this slice's arrival from the previous
					// rank one step earlier.
					for j := 0; j < nsim; j++ {
						h := &hops[g][j]
						op := Op{Kind: OpTransfer, Route: h.route, Bytes: sb, Weight: weights[g], RateCap: h.cap.rate, Channel: int32(g), Step: int32(s), Rank: rank[j]}
						switch {
						case s == 0:
							prevT[j] = b.addHop(op, multi[g][j], prevT[j])
						case k == 0:
							// The step's synchronisation: a rank starts a
							// step once its predecessor's whole previous step
							// has arrived (the receiver's poll on the last
							// slice's flag before it forwards; across nodes
							// the proxy's completion). The first slice's own
							// data arrived no later.
							prevT[j] = b.addHop(op, multi[g][j], prevT[j], lastA[((j-1+nsim)%nsim)*slices+slices-1])
						default:
							prevT[j] = b.addHop(op, multi[g][j], prevT[j], lastA[((j-1+nsim)%nsim)*slices+k])
						}
					}
					// Arrivals are recorded after every push of the slice, so
					// the loop above always reads the previous step's.
					for j := 0; j < nsim; j++ {
						lastA[j*slices+k] = b.add(Op{Kind: OpDelay, Latency: hops[g][j].lat, Channel: int32(g), Step: int32(s), Rank: rank[(j+1)%nsim]}, prevT[j])
					}
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

// shmRingCaps returns the link capacities a ring AllReduce, AllGather or
// ReduceScatter with steps steps per loop runs with over SHM, nil (the
// Env's) when no GPU of the cluster talks over SHM. Per loop a rank's CTA
// runs the loop's steps one after the other (NCCL device/all_gather.h,
// reduce_scatter.h, all_reduce.h runRing): the first only sends (send or
// copySend), the last only receives (recv, recvReduceCopy), and each of the
// steps-1 between receives and forwards in one pass (recvCopySend,
// recvReduceSend, ...), moving host traffic both ways at once. Each step
// carries one chunk per direction, so a GPU's host traffic per direction
// over the loop takes (steps-1)/twoway + 2/lockstep chunk times of its link:
// the GPU's both-ways SHM links run at steps / ((steps-1)/twoway +
// 2/lockstep) of it. On 2 GPUs AllGather (1 step) gets half the lockstep
// rate; AllReduce (2 steps) a mix; on many GPUs the rate tends to twoway.
// Point-to-point traffic (AlltoAll) sends and receives at once in every
// step and keeps the Env's two-way rate. Both engines time the call with
// these capacities.
func (e *Env) shmRingCaps(steps int) []float64 {
	p := e.params
	if e.hostIdx == nil || steps < 1 || p.SHMTwoWayEff <= 0 || p.SHMLockstepEff <= 0 {
		return nil
	}
	f := float64(steps) / (float64(steps-1) + 2*p.SHMTwoWayEff/p.SHMLockstepEff)
	caps := append([]float64(nil), e.caps...)
	for g := range e.hostIdx {
		for _, k := range []int{shmReadTwoWay, shmWriteTwoWay} {
			if l, ok := e.shmLink(g, k); ok {
				caps[l] *= f
			}
		}
	}
	return caps
}
