package sim

import (
	"math/bits"

	"github.com/collsim/collsim/model"
)

// patAlgo schedules PAT AllGather and ReduceScatter: NCCL's algorithm for
// one rank per node from 2.23 (the tuner offers it only there: Simple, one
// GPU per node, at least 2 nodes).
type patAlgo struct{}

func (patAlgo) name() string { return "PAT AllGather and ReduceScatter" }

func (patAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoPAT && (coll == model.AllGather || coll == model.ReduceScatter)
}

func (patAlgo) build(b *builder) (*prog, error) { return b.pat() }

// PAT ("parallel aggregated trees", NCCL include/collectives.h
// PatAGAlgorithm and PatRSAlgorithm) moves every rank's block along a
// binomial tree rooted at that rank; the n trees are aggregated so that a
// rank talks to one peer per dimension d, the rank 2^d away, and sends
// there every block whose path to its destination crosses that dimension.
// As a schedule that is Bruck's: per chunk of a block, AllGather takes the
// dimensions 0, 1, ..., L-1 (L = ceil(log2 n)), and in dimension d rank r
// sends to rank r-2^d what it holds, min(2^d, n-2^d) blocks, its own and
// those the lower dimensions brought it, after which it holds twice as
// many; ReduceScatter runs the same steps in reverse (dimension L-1 first,
// partial sums that halve each step). Each rank sends and receives n-1
// blocks per chunk, as in a ring, over L network steps instead of n-1.
// What this leaves out: NCCL's aggregation of several chunks into one
// step for small messages (aggFactor), which changes the step count below
// a stepSize per channel, not the bytes.

// patDims returns, per network step of a PAT call of collective coll over
// n ranks, its dimension (the peer is 2^dim away) and the blocks it moves,
// in the order the steps run.
func patDims(coll model.Collective, n int) (dims, blocks []int) {
	if n < 2 {
		return nil, nil
	}
	L := bits.Len(uint(n - 1))
	for d := 0; d < L; d++ {
		dims = append(dims, d)
		blocks = append(blocks, min(1<<d, n-1<<d))
	}
	if coll == model.ReduceScatter {
		for i, j := 0, len(dims)-1; i < j; i, j = i+1, j-1 {
			dims[i], dims[j] = dims[j], dims[i]
			blocks[i], blocks[j] = blocks[j], blocks[i]
		}
	}
	return dims, blocks
}

// patPeer is the rank rank sends to in dimension d: 2^d below it for
// AllGather (it receives from 2^d above), 2^d above for ReduceScatter.
func patPeer(coll model.Collective, rank, d, n int) int {
	if coll == model.ReduceScatter {
		return (rank + 1<<d) % n
	}
	return ((rank-1<<d)%n + n) % n
}

// patChunk is the payload of one PAT pipeline unit of a call of nBytes
// (the whole buffer, n blocks) on nc channels: the Simple step, halved
// while chunk x nc x 32 (AllGather; 16 for ReduceScatter) exceeds the
// call and the chunk is above 64 KiB (enqueue.cc, the PAT cases of the
// chunk size).
func patChunk(coll model.Collective, nBytes model.Bytes, nc int) float64 {
	chunk := int64(stepChunk(model.ProtoSimple))
	f := int64(32)
	if coll == model.ReduceScatter {
		f = 16
	}
	for chunk*int64(nc)*f > int64(nBytes) && chunk > 65536 {
		chunk /= 2
	}
	return float64(chunk)
}

// patSlots is how many chunks one PAT connection holds before its
// receiver sends them on: NCCL_STEPS (8) buffer steps of a Simple
// connection, one chunk each. An assumption: PAT's own step accounting
// (stepDepth, postFreq in collectives.h) is not modelled, only that a
// sender cannot run more than a buffer ahead of its receiver.
const patSlots = 8

// patEff is the default of pat.eff (its source is in the term table).
const patEff = 0.75

// patWire is the link bytes a PAT step moves for u bytes of payload: NCCL's
// own model takes PAT at 0.75 of its graph's bandwidth (tuning.cc: busBw
// *= .75), which the wire bytes carry as tree.eff does for the tree, its
// per-CTA ceiling scaled alike (patCeiling).
func patWire(u, eff float64) float64 { return u / eff }

// patCeiling is the per-CTA ceiling of a PAT step in the wire bytes
// patWire counts: NCCL runs PAT with every thread of the CTA
// (enqueue.cc: nt = NCCL_MAX_NTHREADS), one step at a time.
func (e *Env) patCeiling() ceiling {
	c := e.channelCeiling(model.ProtoSimple)
	c.rate /= e.params.PATEff
	return c
}

// patUnits are the pipeline units of a PAT call: chunks of one rank's
// block per channel.
func (e *Env) patUnits(call Call, nc int) []float64 {
	n := e.Cluster.NumRanks()
	block := float64(call.Bytes) / float64(n) / float64(nc)
	return chunked(block, patChunk(call.Coll, call.Bytes, nc))
}

// pat builds PAT AllGather and ReduceScatter on one GPU per node: per
// channel group and chunk, every rank's steps in patDims order, each the
// transfer of its blocks to its peer (over the channel's NICs, split over
// the routes its QPs take, edgeFlows) and the arrival there; a step waits
// for the rank's previous step to have arrived (its data, or for
// ReduceScatter the partial sums it adds to), for the same step of the
// previous chunk to have left, and, patSlots chunks on, for its receiver
// to have sent on what it holds from this dimension.
func (b *builder) pat() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	n := c.NumRanks()
	nc := max(call.Choice.Channels, 1)
	pr := &prog{}
	if n == 1 {
		return pr, nil
	}
	pr.units = e.patUnits(call, nc)
	dims, blocks := patDims(call.Coll, n)
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	members := channelMembers(e.Tuner.Graphs.Ring, nc)
	ccap := e.patCeiling()
	type step struct {
		h     hopInfo
		split []pathShare
	}
	// steps[g][r][k]: rank r's k-th step on channel group g.
	steps := make([][][]step, len(chans))
	for g, ch := range chans {
		steps[g] = make([][]step, n)
		for r := 0; r < n; r++ {
			x := c.Nodes[r].GPUs[ch.GPUs[0]]
			for _, d := range dims {
				p := patPeer(call.Coll, r, d, n)
				y := c.Nodes[p].GPUs[ch.GPUs[0]]
				route, capv, err := e.gpuHop(x, y, ch.NetOut, ch.NetIn)
				if err != nil {
					return nil, err
				}
				split, err := e.edgeFlows(x, ch.NetOut, y, ch.NetIn, members[g])
				if err != nil {
					return nil, err
				}
				lat := e.stepLat(e.routeClass(route), model.ProtoSimple)
				steps[g][r] = append(steps[g][r], step{hopInfo{route: route, cap: minCeiling(capv, ccap), lat: lat}, split})
			}
		}
	}
	if !b.des {
		return pr, nil
	}
	sim, skipped := b.simUnits(pr.units)
	pr.skipped = skipped
	L := len(dims)
	fan := 0
	for g := range chans {
		fan += e.splitFan(int(weights[g]))
	}
	// Per push a transfer and its arrival: the transfer waits on the
	// previous step's arrival, the receiver's slot and its own previous
	// push, the arrival on the transfer (4 dependencies). A split hop's
	// route ops wait on as many and its join on every route.
	pushes := int64(len(chans)) * int64(len(sim)) * int64(n) * int64(L)
	nops := pushes*2 + int64(len(sim))*int64(n)*int64(L)*int64(fan)
	if err := b.reserve(nops, pushes*4+5*int64(len(sim))*int64(n)*int64(L)*int64(fan)); err != nil {
		return nil, err
	}
	for g := range chans {
		// prev[r][k]: the ops, one per route, of rank r's k-th step of the
		// chunk before (addSplit).
		prev := make([][][]OpID, n)
		for r := range prev {
			prev[r] = make([][]OpID, L)
			for k := range prev[r] {
				prev[r][k] = splitPrev(steps[g][r][k].split, b.base)
			}
		}
		arrived := make([][]OpID, n) // arrived[r][k]: rank r's k-th step of this chunk at its peer
		// sent[r][k][u mod patSlots]: rank r's k-th step of chunk u, which
		// frees the buffer slot its data arrived in.
		sent := make([][][]OpID, n)
		for r := range arrived {
			arrived[r] = make([]OpID, L)
			sent[r] = make([][]OpID, L)
			for k := range sent[r] {
				sent[r][k] = fill(patSlots, b.base)
			}
		}
		for ui, u := range sim {
			b.unit = int32(ui)
			for k := 0; k < L; k++ {
				for r := 0; r < n; r++ {
					deps := make([]OpID, 0, 2)
					if k > 0 {
						// What rank r sends in step k came to it in step
						// k-1, from the rank that sends to it then.
						deps = append(deps, arrived[patFrom(call.Coll, r, dims[k-1], n)][k-1])
					}
					if k+1 < L && ui >= patSlots {
						// The peer holds what it received until it sends
						// it on in the next step: patSlots chunks ahead
						// at most.
						deps = append(deps, sent[patPeer(call.Coll, r, dims[k], n)][k+1][ui%patSlots])
					}
					st := &steps[g][r][k]
					bytes := patWire(float64(blocks[k])*u, e.params.PATEff)
					t := b.addSplit(Op{Kind: OpTransfer, Route: st.h.route, Bytes: bytes, Weight: weights[g], RateCap: st.h.cap.rate, Channel: int32(g), Step: int32(k), Rank: int32(r)}, st.split, prev[r][k], deps...)
					sent[r][k][ui%patSlots] = t
					arrived[r][k] = b.add(Op{Kind: OpDelay, Latency: st.h.lat, Channel: int32(g), Step: int32(k), Rank: int32(patPeer(call.Coll, r, dims[k], n))}, t)
				}
			}
		}
	}
	return pr, nil
}

// patFrom is the rank that sends to rank in dimension d.
func patFrom(coll model.Collective, rank, d, n int) int {
	if coll == model.ReduceScatter {
		return ((rank-1<<d)%n + n) % n
	}
	return (rank + 1<<d) % n
}

// formPAT is PAT's closed form: every rank's steps (patDims) as demands
// between it and its peers, each carrying its blocks of every chunk; the
// first chunk crosses the L steps one after the other (the chain form's
// fill, each step's share of a chunk's bytes), and each step pays its
// network step latency.
func (e *Env) formPAT(call Call) (*form, error) {
	c := e.Cluster
	n := c.NumRanks()
	nc := max(call.Choice.Channels, 1)
	dims, blocks := patDims(call.Coll, n)
	units := e.patUnits(call, nc)
	block := sumUnits(units)
	f := &form{shape: shape{kind: "chain", slices: 1, steps: len(dims), units: units}}
	f.perMemb = patWire(block*float64(n-1), e.params.PATEff)
	ccap := e.patCeiling()
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	members := channelMembers(e.Tuner.Graphs.Ring, nc)
	for g, ch := range chans {
		for r := 0; r < n; r++ {
			x := c.Nodes[r].GPUs[ch.GPUs[0]]
			for k, d := range dims {
				y := c.Nodes[patPeer(call.Coll, r, d, n)].GPUs[ch.GPUs[0]]
				route, capv, err := e.gpuHop(x, y, ch.NetOut, ch.NetIn)
				if err != nil {
					return nil, err
				}
				bytes := patWire(block*float64(blocks[k]), e.params.PATEff)
				ceil := minCeiling(capv, ccap)
				if g == 0 && r == 0 {
					lat := e.stepLat(e.routeClass(route), model.ProtoSimple)
					f.latHop = max(f.latHop, lat)
					f.latPath += lat
					f.path = append(f.path, len(f.demands))
					f.pathShare = append(f.pathShare, float64(blocks[k])/float64(n-1))
				}
				ds, err := e.hopDemands(x, ch.NetOut, y, ch.NetIn, members[g], route, bytes, weights[g], ceil)
				if err != nil {
					return nil, err
				}
				f.demands = append(f.demands, ds...)
			}
		}
	}
	return f, nil
}
