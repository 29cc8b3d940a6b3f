package sim

import (
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
	pr := &prog{}
	if n == 1 {
		return pr, nil
	}
	chans, weights := channelGroups(e.Tuner.Graphs.Ring, nc)
	chunk := stepChunk(proto)
	D := float64(call.Bytes) / float64(nc)
	nChunks := int(math.Ceil(D / chunk))
	nChunks = max(nChunks, 1)
	ccap := e.channelCeiling(proto)
	for u := 0; u < nChunks; u++ {
		pr.units = append(pr.units, math.Min(chunk, D-float64(u)*chunk))
	}
	hops := make([][]hopInfo, len(chans))
	G := c.GPUsPerNode()
	ways := e.chainWays(call.Coll, chans)
	for g, ch := range chans {
		for j := 0; j < n-1; j++ {
			pos := chainPos(call.Coll, j)
			route, capv, err := b.hopWays(ch, pos%n, n, false, &ways)
			if err != nil {
				return nil, err
			}
			lat := e.stepLat(e.routeClass(route), proto)
			hops[g] = append(hops[g], hopInfo{route: route, cap: minCeiling(capv, ccap), lat: lat})
		}
	}
	if !b.des {
		return pr, nil
	}
	sim, skipped := b.simUnits(pr.units)
	pr.skipped = skipped
	nops := int64(len(chans)) * int64(len(sim)) * int64(n-1) * 2
	if err := b.reserve(nops, nops*3/2); err != nil {
		return nil, err
	}
	for g, ch := range chans {
		prevT := make([]OpID, n-1)
		for j := range prevT {
			prevT[j] = b.base
		}
		for ui, u := range sim {
			b.unit = int32(ui)
			arr := b.base
			for j := 0; j < n-1; j++ {
				pos := chainPos(call.Coll, j)
				node, gpu := ringRank(ch, G, pos%n)
				h := &hops[g][j]
				t := b.add(Op{Kind: OpTransfer, Route: h.route, Bytes: u / model.ProtoPayload(proto), Weight: weights[g], RateCap: h.cap.rate, Channel: int32(g), Step: int32(j), Rank: int32(node*G + gpu)}, prevT[j], arr)
				prevT[j] = t
				node, gpu = ringRank(ch, G, (pos+1)%n)
				arr = b.add(Op{Kind: OpDelay, Latency: h.lat, Channel: int32(g), Step: int32(j), Rank: int32(node*G + gpu)}, t)
			}
		}
	}
	return pr, nil
}

// chainPos is the ring position hop j of a chain leaves from: Broadcast
// from rank 0 forward; Reduce towards rank 0 along the same ring, i.e. from
// position 1 onwards ending at 0.
func chainPos(coll model.Collective, j int) int {
	if coll == model.Reduce {
		return j + 1
	}
	return j
}

// chainWays records every hop of the chains of coll over the ring channels
// chans: the chain's ends move traffic one way, the first GPU only sends
// and the last only receives (decorateWays). Both engines derive it from
// the chain's definition.
func (e *Env) chainWays(coll model.Collective, chans []model.GraphChannel) oneWay {
	c := e.Cluster
	n, G := c.NumRanks(), c.GPUsPerNode()
	var ways oneWay
	for _, ch := range chans {
		for j := 0; j < n-1; j++ {
			pos := chainPos(coll, j)
			na, ga := ringRank(ch, G, pos%n)
			nb, gb := ringRank(ch, G, (pos+1)%n)
			ways.add(c.Nodes[na].GPUs[ga], c.Nodes[nb].GPUs[gb])
		}
	}
	return ways
}
