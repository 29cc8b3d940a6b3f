package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// This file gives every network hop of a schedule the routes its real
// flows take. NCCL opens one connection per (channel, peer, direction) and
// NCCL_IB_QPS_PER_CONNECTION RC QPs per connection (fabric-facts §2.3,
// NCCL src/transport/net_ib/connect.cc); an ECMP fabric hashes each QP on its own (RoCEv2
// entropy is the UDP source port the NIC derives per QP). So a hop that a
// schedule models as one op of w channels becomes w x Q member flows, each
// carrying 1/Q of the channel's bytes, grouped by the route they hash to.
//
// With NCCL_IB_SPLIT_DATA_ON_QPS=1 every message is cut into Q pieces, one
// per QP; with 0 (the default from 2.20) whole messages go round-robin over
// the QPs. With NCCL's 8 steps in flight per connection both keep every QP
// busy with 1/Q of the bytes, which is how the flow model treats them
// (assumption: the round-robin's granularity, one 512 KiB step, is far
// below a collective's bytes per channel, so the time-average is the
// flow's rate).

// pathShare is one distinct route of a hop's member flows: n members take
// it.
type pathShare struct {
	route []model.LinkID
	n     int32
}

// qps is the QP count per connection the flow model splits a network hop
// into: NCCL_IB_QPS_PER_CONNECTION per NIC port on RDMA NICs (IB, RoCE), 1
// on EFA and TCP (no verbs RC QPs; NCCL's socket transport uses its own
// streams).
func (e *Env) qps() int {
	c := e.Cluster
	if c.Knobs.IBDisable || c.Fabric == nil {
		return 1
	}
	if k := c.Fabric.LinkLayer; k != model.NICIB && k != model.NICRoCE {
		return 1
	}
	// A connection over a multi-port NIC opens NCCL_IB_QPS_PER_CONNECTION
	// QPs on each of its ports (NET/IB's merged device: nqps = QPs per
	// device x devices, connect.cc); model.Fabric.Route puts QP i on port
	// i mod ports.
	return max(c.Knobs.IBQPsPerConn, 1) * max(c.Spec.Node.NICs.Ports, 1)
}

// netPaths routes the member flows of a network hop from GPU x (NIC index
// outNIC of its node) to GPU a (NIC inNIC of its node) for the runtime
// channels chans, QPs 0..qps-1 each, and groups them by route. The first
// route is that of channel chans[0], QP 0.
func (e *Env) netPaths(x model.ElemID, outNIC int, a model.ElemID, inNIC int, chans []int) ([]pathShare, error) {
	q := e.qps()
	var out []pathShare
	idx := map[string]int{}
	for _, ch := range chans {
		for qp := 0; qp < q; qp++ {
			r, err := e.netRouteFlow(x, outNIC, a, inNIC, ch, qp)
			if err != nil {
				return nil, err
			}
			k := fmt.Sprint(r)
			if i, ok := idx[k]; ok {
				out[i].n++
				continue
			}
			idx[k] = len(out)
			out = append(out, pathShare{route: r, n: 1})
		}
	}
	return out, nil
}

// channelMembers returns, for each channel group channelGroups(g, nc)
// builds, the runtime channels in it.
func channelMembers(g *model.Graph, nc int) [][]int {
	return groupBy(nc, func(i int) string {
		ch := g.Channels[i%len(g.Channels)]
		return fmt.Sprint(ch.GPUs, ch.NetIn, ch.NetOut)
	})
}

// groupBy returns 0..n-1 grouped by key, the groups in the order of their
// first member, each in ascending order.
func groupBy(n int, key func(i int) string) [][]int {
	var out [][]int
	idx := map[string]int{}
	for i := 0; i < n; i++ {
		k := key(i)
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], i)
	}
	return out
}

// multiHop is one hop of a schedule whose members take several routes (or
// whose channels are split over QPs): the DES runs one op per route and a
// join, the analytic engine one class per route.
type multiHop struct {
	paths []pathShare
	// split is the QP count each channel's bytes are divided over.
	split int
}

// fan is the number of ops the hop costs in the DES per push.
func (m *multiHop) fan() int {
	if m == nil {
		return 1
	}
	return len(m.paths) + 1
}

// hopPaths is hop for a channel group with runtime channels chans: a
// network hop gets its per-channel, per-QP routes (nil multiHop when one
// route with one QP carries every member, as hop gives it).
func (b *builder) hopPaths(ch model.GraphChannel, chans []int, i, n int, reduced bool) ([]model.LinkID, ceiling, *multiHop, error) {
	route, capv, err := b.hop(ch, i, n, reduced)
	if err != nil {
		return nil, ceiling{}, nil, err
	}
	e := b.e
	c := e.Cluster
	G := len(ch.GPUs)
	if (i+1)%G != 0 || c.NumNodes() <= 1 || reduced {
		return route, capv, nil, nil
	}
	na, ga := ringRank(ch, G, i)
	nb, gb := ringRank(ch, G, (i+1)%n)
	x, a := c.Nodes[na].GPUs[ga], c.Nodes[nb].GPUs[gb]
	ps, err := e.netPaths(x, ch.NetOut, a, ch.NetIn, chans)
	if err != nil {
		return nil, ceiling{}, nil, err
	}
	q := e.qps()
	if len(ps) == 1 && q == 1 {
		return route, capv, nil, nil
	}
	for k := range ps {
		ps[k].route, _ = e.decorate(ps[k].route)
	}
	return route, capv, &multiHop{paths: ps, split: q}, nil
}

// addHop adds one push of a hop to the DES: the plain op, or with a
// multiHop one op per route (each member 1/split of the bytes, at 1/split
// of the channel's rate cap) and a zero-latency join the next step waits
// for. It returns the op later steps depend on.
func (b *builder) addHop(op Op, m *multiHop, deps ...OpID) OpID {
	if m == nil {
		return b.add(op, deps...)
	}
	parts := make([]OpID, 0, len(m.paths))
	for _, p := range m.paths {
		o := op
		o.Route, o.rid = p.route, 0
		o.Bytes = op.Bytes / float64(m.split)
		o.Weight = p.n
		o.RateCap = op.RateCap / float64(m.split)
		parts = append(parts, b.add(o, deps...))
	}
	return b.add(Op{Kind: OpDelay, Channel: op.Channel, Step: op.Step, Rank: op.Rank}, parts...)
}

// edgeFlows returns the routes the member flows of a network hop take, when
// they do not all take one. NCCL opens one connection per channel, each
// with qps() QPs (one on every port of a multi-port NIC, a merged NET/IB
// device), and an ECMP fabric hashes every QP on its own, so the channels
// of a tree or NVLSTree edge (its runtime channels chans) spread over routes
// as a ring's do (netPaths). Nil when every member takes one route, as on a
// single switch, with static or adaptive routing and single-port NICs.
func (e *Env) edgeFlows(x model.ElemID, outNIC int, a model.ElemID, inNIC int, chans []int) ([]pathShare, error) {
	if len(chans) == 0 || !e.routesMayDiverge() {
		return nil, nil
	}
	ps, err := e.netPaths(x, outNIC, a, inNIC, chans)
	if err != nil || len(ps) <= 1 {
		return nil, err
	}
	for k := range ps {
		ps[k].route, _ = e.decorate(ps[k].route)
	}
	return ps, nil
}

// addSplit adds a transfer over a hop whose member flows take several
// routes (edgeFlows): one op per route, each member 1/Q of a channel's
// bytes at 1/Q of its rate cap, and a join the data's consumer waits for.
// prev holds the hop's previous ops, one per route (one without a split):
// each route's op follows the one before it on that route only, so a
// route whose flows run faster does not wait for the others' previous
// unit (each QP progresses on its own, NCCL_STEPS steps ahead at most,
// which the unit's own data bounds here); addSplit updates prev to the new
// ops. Without a split it is the one op after prev[0].
func (b *builder) addSplit(op Op, split []pathShare, prev []OpID, deps ...OpID) OpID {
	return b.splitHop(op, split, prev, 0, deps)
}

// splitHop is addSplit whose hop completes lat after its last byte: the
// join of a split hop takes lat as its latency, an unsplit transfer as its
// After.
func (b *builder) splitHop(op Op, split []pathShare, prev []OpID, lat model.Time, deps []OpID) OpID {
	if len(split) == 0 {
		b.split = append(append(b.split[:0], deps...), prev[0])
		op.After = lat
		t := b.add(op, b.split...)
		prev[0] = t
		return t
	}
	q := float64(b.e.qps())
	b.parts = b.parts[:0]
	for k, p := range split {
		o := op
		o.Route, o.rid = p.route, 0
		o.Bytes = op.Bytes / q
		o.Weight = p.n
		o.RateCap = op.RateCap / q
		b.split = append(append(b.split[:0], deps...), prev[k])
		t := b.add(o, b.split...)
		prev[k] = t
		b.parts = append(b.parts, t)
	}
	return b.add(Op{Kind: OpDelay, Latency: lat, Channel: op.Channel, Step: op.Step, Rank: op.Rank}, b.parts...)
}

// addThen adds transfer op and its arrival, a delay of lat that only waits
// on it, and returns the arrival: with b.fold one op, the transfer
// completing lat after its last byte (Op.After), else two. It is for a
// transfer nothing else will wait on.
func (b *builder) addThen(op Op, lat model.Time, arrival Op, deps ...OpID) OpID {
	if b.fold {
		op.After = lat
		return b.add(op, deps...)
	}
	t := b.add(op, deps...)
	arrival.Kind, arrival.Latency = OpDelay, lat
	return b.add(arrival, t)
}

// addSplitThen is addSplit followed by an arrival of lat, and returns the
// arrival. alone says that nothing but the arrival will wait on the hop
// (the caller moves prev to the arrival); then, with b.fold, the hop and
// its arrival are one op (splitHop). prev[k] is left at the route's
// transfer, as addSplit leaves it.
func (b *builder) addSplitThen(op Op, split []pathShare, prev []OpID, lat model.Time, arrival Op, alone bool, deps ...OpID) OpID {
	if alone && b.fold {
		return b.splitHop(op, split, prev, lat, deps)
	}
	t := b.addSplit(op, split, prev, deps...)
	arrival.Kind, arrival.Latency = OpDelay, lat
	return b.add(arrival, t)
}

// splitPrev is the per-route sequencing addSplit keeps for a hop: one
// entry per route of split (one without a split), all starting at base.
func splitPrev(split []pathShare, base OpID) []OpID {
	return fill(max(len(split), 1), base)
}

// splitDemands is the analytic form's demands of a hop whose member flows
// take several routes: per route its n members, each 1/Q of a channel's
// bytes at 1/Q of the channel's ceiling.
func (e *Env) splitDemands(split []pathShare, perMemb float64, ceil ceiling) []demand {
	q := float64(e.qps())
	c := ceil
	c.rate /= q
	out := make([]demand, 0, len(split))
	for _, p := range split {
		out = append(out, demand{p.route, perMemb / q, p.n, c})
	}
	return out
}

// hopDemands is the analytic form's demands of a network hop from GPU x
// (NIC index outNIC) to GPU a (inNIC) whose runtime channels chans, w
// members, each carry bytes over route at ceil: one demand, or one per
// route the channels' QPs take where they take several (edgeFlows,
// splitDemands).
func (e *Env) hopDemands(x model.ElemID, outNIC int, a model.ElemID, inNIC int, chans []int, route []model.LinkID, bytes float64, w int32, ceil ceiling) ([]demand, error) {
	split, err := e.edgeFlows(x, outNIC, a, inNIC, chans)
	if err != nil {
		return nil, err
	}
	if split != nil {
		return e.splitDemands(split, bytes, ceil), nil
	}
	return []demand{{route, bytes, w, ceil}}, nil
}

// splitFan bounds the DES ops a network hop of w channels costs per push
// beyond its one op: a route per member flow and the join, where members
// may take several routes (edgeFlows), else 0.
func (e *Env) splitFan(w int) int {
	if !e.routesMayDiverge() {
		return 0
	}
	return w*e.qps() + 1
}

// routesMayDiverge reports whether the flows of one network hop can take
// different routes: over the ports of multi-port NICs, or hashed by ECMP.
// Static and adaptive routing give every channel and QP of a hop between
// single-port NICs the same route.
func (e *Env) routesMayDiverge() bool {
	c := e.Cluster
	return c.Fabric != nil && (c.Spec.Node.NICs.Ports > 1 || c.Fabric.Plan.Routing == model.RoutingECMP)
}

// treeMembers splits the runtime channels of the tree graph's channel
// groups between the two trees of the double binary tree as the builders
// weight them: the first (w+1)/2 of a group's channels on tree 0, the rest
// on tree 1 (all on tree 0 on one node).
func treeMembers(members []int, nodes int) [2][]int {
	w0 := (len(members) + 1) / 2
	if nodes == 1 {
		w0 = len(members)
	}
	return [2][]int{members[:w0], members[w0:]}
}

// nvlsTreeMembers are the runtime channels of each tree of NVLSTree's
// double binary tree: channel c on tree c mod 2 (connect.cc: treeUp[c %
// 2]).
func nvlsTreeMembers(nc int) [2][]int {
	var out [2][]int
	for c := 0; c < nc; c++ {
		out[c%2] = append(out[c%2], c)
	}
	return out
}
