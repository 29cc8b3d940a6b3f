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
	var out [][]int
	key := func(ch model.GraphChannel) string { return fmt.Sprint(ch.GPUs, ch.NetIn, ch.NetOut) }
	idx := map[string]int{}
	for i := 0; i < nc; i++ {
		k := key(g.Channels[i%len(g.Channels)])
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
		o.Route = p.route
		o.Bytes = op.Bytes / float64(m.split)
		o.Weight = p.n
		o.RateCap = op.RateCap / float64(m.split)
		parts = append(parts, b.add(o, deps...))
	}
	return b.add(Op{Kind: OpDelay, Channel: op.Channel, Step: op.Step, Rank: op.Rank}, parts...)
}

// classesOf returns the analytic flow classes of a hop: one per route.
func (m *multiHop) classesOf(bytes float64, ceil ceiling) []demand {
	out := make([]demand, 0, len(m.paths))
	c := ceil
	c.rate /= float64(m.split)
	for _, p := range m.paths {
		out = append(out, demand{route: p.route, bytes: bytes / float64(m.split), weight: p.n, ceil: c})
	}
	return out
}

// portSplit returns the routes a network hop from GPU x (NIC index outNIC)
// to GPU a (NIC inNIC) takes when the NICs have several ports: NCCL opens a
// connection's QPs on every port of its device (qps), so one channel's
// bytes split over the port pairs, each path share n of the qps() QPs.
// Nil with single-port NICs, where netRoute's one route carries the hop.
// The algorithms that give every channel of a hop one route (tree,
// NVLSTree) use it; the ring spreads each channel itself (netPaths).
func (e *Env) portSplit(x model.ElemID, outNIC int, a model.ElemID, inNIC int) ([]pathShare, error) {
	if e.Cluster.Spec.Node.NICs.Ports <= 1 || e.qps() <= 1 {
		return nil, nil
	}
	ps, err := e.netPaths(x, outNIC, a, inNIC, []int{0})
	if err != nil {
		return nil, err
	}
	for k := range ps {
		ps[k].route, _ = e.decorate(ps[k].route)
	}
	return ps, nil
}

// addSplit adds a transfer over a hop whose bytes split over port pairs
// (portSplit): one op per pair, each 1/Q of the bytes for its n QPs of
// every one of the op's channels, at 1/Q of the rate cap, and a join the
// next step waits for. Without a split it is the one op.
func (b *builder) addSplit(op Op, split []pathShare, deps ...OpID) OpID {
	if len(split) == 0 {
		return b.add(op, deps...)
	}
	q := float64(b.e.qps())
	parts := make([]OpID, 0, len(split))
	for _, p := range split {
		o := op
		o.Route = p.route
		o.Bytes = op.Bytes / q
		o.Weight = op.Weight * p.n
		o.RateCap = op.RateCap / q
		parts = append(parts, b.add(o, deps...))
	}
	return b.add(Op{Kind: OpDelay, Channel: op.Channel, Step: op.Step, Rank: op.Rank}, parts...)
}

// splitDemands is the analytic form's demands of a hop that splits over
// port pairs: per pair the n QPs of each of w channels, each 1/Q of the
// member's bytes at 1/Q of its ceiling.
func (e *Env) splitDemands(split []pathShare, perMemb float64, w int32, ceil ceiling) []demand {
	q := float64(e.qps())
	c := ceil
	c.rate /= q
	out := make([]demand, 0, len(split))
	for _, p := range split {
		out = append(out, demand{p.route, perMemb / q, w * p.n, c})
	}
	return out
}

// splitFan is the extra DES ops a split network hop costs per push: one per
// QP's port pair and the join (0 with single-port NICs).
func (e *Env) splitFan() int {
	if e.Cluster.Spec.Node.NICs.Ports <= 1 || e.qps() <= 1 {
		return 0
	}
	return e.qps() + 1
}
