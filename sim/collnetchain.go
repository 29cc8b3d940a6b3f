package sim

import "github.com/collsim/collsim/model"

// collNetChainAlgo schedules CollNetChain AllReduce: SHARP in-network
// reduction fed by a chain of the node's GPUs per channel.
type collNetChainAlgo struct{}

func (collNetChainAlgo) name() string { return "CollNetChain AllReduce (SHARP)" }

func (collNetChainAlgo) applies(a model.Algo, coll model.Collective) bool {
	return a == model.AlgoCollNetChain && coll == model.AllReduce
}

func (collNetChainAlgo) build(b *builder) (*prog, error) { return b.collNet(false) }

// chainGPU is the local GPU at position k of chain h: the chains are the
// node's GPUs rotated so that chain h starts at (is headed by) GPU h
// (assumption: NCCL's CollNet chain graph puts a different GPU next to
// each NIC; the rotation gives each head its own NIC).
func (e *Env) chainGPU(h, k, G int) int { return (h + k) % G }

// collNetChainDES adds the Chain schedule: per chunk each chain reduces
// its part from the tail to the head over NVLink, the head sends it up to
// the SHARP tree, and the result comes back down the chain.
func (b *builder) collNetChainDES(units []float64, ports [][]sharpPort, nvl func(v, i, j int) hopInfo, sharpLat model.Time, heads int) {
	c := b.e.Cluster
	N, G := c.NumNodes(), c.GPUsPerNode()
	e := b.e
	type edge struct {
		up, down hopInfo
	}
	edges := make([][]edge, N*heads) // per (node, chain): hop k links positions k+1 -> k
	for v := 0; v < N; v++ {
		for h := 0; h < heads; h++ {
			for k := 0; k+1 < G; k++ {
				a, bb := e.chainGPU(h, k, G), e.chainGPU(h, k+1, G)
				edges[v*heads+h] = append(edges[v*heads+h], edge{nvl(v, bb, a), nvl(v, a, bb)})
			}
		}
	}
	prevUp := make([][]OpID, N*heads)
	prevDn := make([][]OpID, N*heads)
	for i := range prevUp {
		prevUp[i], prevDn[i] = fill(G, b.base), fill(G, b.base)
	}
	for ui, u := range units {
		b.unit = int32(ui)
		s := u / float64(heads)
		for h := 0; h < heads; h++ {
			ups := make([]OpID, 0, N)
			for v := 0; v < N; v++ {
				x := v*heads + h
				dep := b.base
				for k := G - 2; k >= 0; k-- {
					ed := &edges[x][k]
					prevUp[x][k] = b.add(Op{Kind: OpTransfer, Route: ed.up.route, Bytes: s, RateCap: ed.up.cap.rate, Latency: ed.up.lat, Rank: int32(v*G + e.chainGPU(h, k+1, G))}, dep, prevUp[x][k])
					dep = prevUp[x][k]
				}
				p := ports[v][h]
				prevUp[x][G-1] = b.add(Op{Kind: OpTransfer, Route: p.up, Bytes: s, RateCap: p.cap, Rank: int32(v*G + e.chainGPU(h, 0, G))}, dep, prevUp[x][G-1])
				ups = append(ups, prevUp[x][G-1])
			}
			agg := b.add(Op{Kind: OpDelay, Latency: sharpLat, Rank: -1}, ups...) // the switches' reduction
			for v := 0; v < N; v++ {
				x := v*heads + h
				p := ports[v][h]
				dep := b.add(Op{Kind: OpTransfer, Route: p.down, Bytes: s, RateCap: p.cap, Rank: int32(v*G + e.chainGPU(h, 0, G))}, agg, prevDn[x][G-1])
				prevDn[x][G-1] = dep
				for k := 0; k+1 < G; k++ {
					ed := &edges[x][k]
					prevDn[x][k] = b.add(Op{Kind: OpTransfer, Route: ed.down.route, Bytes: s, RateCap: ed.down.cap.rate, Latency: ed.down.lat, Rank: int32(v*G + e.chainGPU(h, k, G))}, dep, prevDn[x][k])
					dep = prevDn[x][k]
				}
			}
		}
	}
}
