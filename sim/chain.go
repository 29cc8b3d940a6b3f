package sim

import (
	"fmt"
	"math"

	"github.com/collsim/collsim/model"
)

// chainAlgo schedules ring Broadcast and Reduce.
type chainAlgo struct{}

func (chainAlgo) name() string { return "ring Broadcast and Reduce" }

func (chainAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoRing && (coll == model.Broadcast || coll == model.Reduce)
}

func (chainAlgo) build(b *builder) (*prog, error) { return b.chain() }

// chain builds ring Broadcast and Reduce: chunks flow along the ring from the
// root (Broadcast) or towards it (Reduce), n-1 hops, pipelined by chunk.
func (b *builder) chain() (*prog, error) {
	e, call := b.e, b.call
	c := e.Cluster
	n := c.NumRanks()
	proto := call.Choice.Proto
	nc := max(call.Choice.Channels, 1)
	pr := &prog{kind: "chain", steps: n - 1}
	if n == 1 {
		return pr, nil
	}
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	chunk := stepChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	nChunks := int(math.Ceil(D / chunk))
	for b.des && len(chans)*nChunks*(n-1)*2 > opBudget && nChunks > 1 {
		chunk *= 2
		nChunks = int(math.Ceil(D / chunk))
		pr.Note = "pipeline units coarsened to fit the simulation budget"
	}
	nChunks = max(nChunks, 1)
	if b.des && len(chans)*nChunks*(n-1)*2 > opBudget {
		b.des, b.sched = false, nil
		pr.Note = fmt.Sprintf("%s timed analytically: %d ranks x %d channel groups is beyond the DES budget", call.Coll, n, len(chans))
	}
	ccap := e.channelCeiling(proto)
	pr.perMemb = D / model.ProtoPayload(proto)
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	pr.slices = 1
	hops := make([][]hopInfo, len(chans))
	for g, ch := range chans {
		for j := 0; j < n-1; j++ {
			// Broadcast from rank 0 forward; Reduce towards rank 0 along the
			// same ring, i.e. from position 1 onwards ending at 0.
			pos := j
			if call.Coll == model.Reduce {
				pos = j + 1
			}
			route, capv, err := b.hop(ch, pos%n, n, false)
			if err != nil {
				return nil, err
			}
			lat := e.stepLat(e.routeClass(route), proto)
			hops[g] = append(hops[g], hopInfo{route, minCeiling(capv, ccap), lat})
			pr.latHop = max(pr.latHop, lat)
			if g == 0 {
				pr.latPath += lat
			}
			pr.classes = append(pr.classes, flowClass{route: route, bytes: pr.perMemb, weight: weights[g], ceil: minCeiling(capv, ccap)})
		}
	}
	if !b.des {
		return pr, nil
	}
	for g := range chans {
		prevT := make([]OpID, n-1)
		for j := range prevT {
			prevT[j] = b.base
		}
		for _, u := range pr.units {
			arr := b.base
			for j := 0; j < n-1; j++ {
				h := &hops[g][j]
				t := b.add(Op{Kind: OpTransfer, Route: h.route, Bytes: u / model.ProtoPayload(proto), Weight: weights[g], RateCap: h.cap.rate, Channel: int32(g), Rank: int32(j)}, prevT[j], arr)
				prevT[j] = t
				arr = b.add(Op{Kind: OpDelay, Latency: h.lat}, t)
			}
		}
	}
	return pr, nil
}
