package sim

import (
	"encoding/binary"
	"math"
	"slices"

	"github.com/collsim/collsim/model"
)

// Bundling channels that the fabric treats alike.
//
// A builder that runs several channel groups with the same structure (the
// same tree, the same number of member channels, hop for hop the same
// ceilings and latencies) may run them as one: every op of the bundle
// stands for the corresponding op of each group, and each of its flows
// crosses the links of all the flows it stands for (their routes one after
// another; a link two of them share is listed twice). The bundle is exact,
// not an approximation, when the groups' flows would get equal rates at
// every instant of the full simulation, and that is what equitable checks.
//
// Put the flows of one unit of the call (every unit has the same routes)
// in cells: the corresponding flows of the groups of a bundle share a cell,
// every other flow has its own. Give each link a class from its capacity
// and how many flows of each cell cross it. The partition is equitable when
// the flows of a cell cross the same multiset of link classes. Then
// progressive filling keeps it: if the flows of each cell have one rate,
// links of one class have one residual capacity and one unfrozen weight, so
// they reach the same level at the same step, and the flows of a cell, which
// see the same classes, freeze together at the same level. Flows of a cell
// start together (their dependencies correspond, op for op, in groups of the
// same structure), have equal sizes and rates, and so end together: by
// induction over the events, the full simulation gives the flows of a cell
// one rate throughout, which is the rate of the bundle, whose flow loads
// each link exactly as the flows it stands for do. What is left is rounding:
// sums of the same terms in another order (TestBundlesExact holds the two
// within 1e-9; the 128- and 1,024-node sweeps are byte-identical).
//
// A link that carries less than its capacity when every flow that crosses
// it runs at its cap never sets a rate, and is left out of the check: a
// group's flows on one hop follow each other unit after unit, so one
// unit's flows bound what a link carries at any instant.
//
// The check needs no symmetry of the topology itself (a DGX H100's PCIe
// pairs are not invariant under a rotation of its GPUs, but the links the
// channels use are alike), and it fails where the fabric treats the groups
// differently (ECMP hashing each channel's flows, a degraded link), which
// is where the bundle would not be exact.

// symCells collects the flows of one unit for equitable: cell[i] is flow
// i's cell and routes[i] its links.
type symCells struct {
	cell   []int32
	routes [][]model.LinkID
	load   []float64 // per flow: rate cap x weight, +Inf without a cap
}

func (s *symCells) add(cell int32, route []model.LinkID, load float64) {
	s.cell = append(s.cell, cell)
	s.routes = append(s.routes, route)
	s.load = append(s.load, load)
}

// equitable returns the cells whose flows do not all cross the same
// multiset of link classes (see above), in ascending order: none when the
// partition is equitable. caps are the links' capacities.
func equitable(s *symCells, caps []float64) []int32 {
	// Links that cannot fill (see above) play no part in the rates and
	// are left out.
	sum := make([]float64, len(caps))
	for i, r := range s.routes {
		for _, l := range r {
			sum[l] += s.load[i]
		}
	}
	binds := func(l model.LinkID) bool { return !(sum[l] < caps[l]) }
	// Traversals (link, cell) of the links that may limit a flow, sorted:
	// each link's run gives its class.
	var trav []uint64
	for i, r := range s.routes {
		for _, l := range r {
			if binds(l) {
				trav = append(trav, uint64(l)<<32|uint64(uint32(s.cell[i])))
			}
		}
	}
	slices.Sort(trav)
	class := make([]int32, len(caps)) // link -> class
	ids := map[string]int32{}         // signature -> class
	var sig []byte
	for i := 0; i < len(trav); {
		l := int32(trav[i] >> 32)
		sig = binary.LittleEndian.AppendUint64(sig[:0], math.Float64bits(caps[l]))
		for i < len(trav) && int32(trav[i]>>32) == l {
			c, n := uint32(trav[i]), uint32(0)
			for ; i < len(trav) && trav[i] == uint64(l)<<32|uint64(c); i++ {
				n++
			}
			sig = binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(sig, c), n)
		}
		id, ok := ids[string(sig)]
		if !ok {
			id = int32(len(ids))
			ids[string(sig)] = id
		}
		class[l] = id
	}
	// Each flow's multiset of link classes, against the first flow of its
	// cell.
	first := map[int32]string{}
	var bad []int32
	var cls []int32
	for i, r := range s.routes {
		cls = cls[:0]
		for _, l := range r {
			if binds(l) {
				cls = append(cls, class[l])
			}
		}
		slices.Sort(cls)
		sig = sig[:0]
		for _, c := range cls {
			sig = binary.LittleEndian.AppendUint32(sig, uint32(c))
		}
		c := s.cell[i]
		if f, ok := first[c]; !ok {
			first[c] = string(sig)
		} else if f != string(sig) {
			bad = append(bad, c)
		}
	}
	slices.Sort(bad)
	return slices.Compact(bad)
}

// capLoad is the most n flows capped at rate (0: no cap) can put on a
// link, for equitable.
func capLoad(rate float64, n int32) float64 {
	if !(rate > 0) {
		return math.Inf(1)
	}
	return rate * float64(max(n, 1))
}

// concatRoutes returns the routes one after another in a new slice.
func concatRoutes(rs ...[]model.LinkID) []model.LinkID {
	n := 0
	for _, r := range rs {
		n += len(r)
	}
	out := make([]model.LinkID, 0, n)
	for _, r := range rs {
		out = append(out, r...)
	}
	return out
}

// treeHops are the hops of one channel group of a tree, per node: its
// chain edges up and down, its tree edges up and down (zero at the root),
// and a tree edge's routes when its flows take several (edgeFlows).
type treeHops struct {
	up, down           [][]hopInfo
	netUp, netDown     []hopInfo
	splitUp, splitDown [][]pathShare
}

// flows calls f with each flow of one unit of the group, in an order that
// groups of the same shape share.
func (h *treeHops) flows(w int32, qps float64, f func(route []model.LinkID, load float64)) {
	net := func(ed hopInfo, split []pathShare) {
		switch {
		case len(split) > 0:
			for _, p := range split {
				f(p.route, capLoad(ed.cap.rate/qps, p.n))
			}
		case ed.route != nil:
			f(ed.route, capLoad(ed.cap.rate, w))
		}
	}
	for v := range h.up {
		for _, ed := range h.up[v] {
			f(ed.route, capLoad(ed.cap.rate, w))
		}
		for _, ed := range h.down[v] {
			f(ed.route, capLoad(ed.cap.rate, w))
		}
		net(h.netUp[v], h.splitUp[v])
		net(h.netDown[v], h.splitDown[v])
	}
}

// treeRIDs are the route IDs (Op.rid) of a bundle's hops in the schedule
// being built: up and down per node and chain edge, node v's edge k at
// v*(G-1)+k; netUp and netDown per node (0 at the root).
type treeRIDs struct {
	up, down       []int32
	netUp, netDown []int32
}

// intern interns every hop's route in s once and returns their IDs, so
// that the ops of every unit skip the lookup. The hops are left as they
// are (a sweep's sizes share them, Env.treeEdges).
func (h *treeHops) intern(s *Schedule) treeRIDs {
	one := func(ed *hopInfo) int32 {
		if ed.route == nil {
			return 0
		}
		return s.routeID(ed.route)
	}
	N := len(h.up)
	var r treeRIDs
	r.netUp, r.netDown = make([]int32, N), make([]int32, N)
	for v := range h.up {
		for k := range h.up[v] {
			r.up = append(r.up, one(&h.up[v][k]))
		}
		for k := range h.down[v] {
			r.down = append(r.down, one(&h.down[v][k]))
		}
		r.netUp[v] = one(&h.netUp[v])
		r.netDown[v] = one(&h.netDown[v])
	}
	return r
}

// shape is what groups must share, besides their tree and weight, to be
// bundled: hop for hop the ceiling and latency, which hops exist, and the
// members of each route of a split hop.
func (h *treeHops) shape() string {
	var b []byte
	hop := func(ed hopInfo) {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(ed.cap.rate))
		b = append(b, byte(ed.cap.kind))
		b = binary.LittleEndian.AppendUint64(b, uint64(ed.lat))
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ed.route)))
	}
	split := func(ps []pathShare) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(ps)))
		for _, p := range ps {
			b = binary.LittleEndian.AppendUint32(b, uint32(p.n))
			b = binary.LittleEndian.AppendUint32(b, uint32(len(p.route)))
		}
	}
	for v := range h.up {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(h.up[v])))
		for _, ed := range h.up[v] {
			hop(ed)
		}
		for _, ed := range h.down[v] {
			hop(ed)
		}
		hop(h.netUp[v])
		hop(h.netDown[v])
		split(h.splitUp[v])
		split(h.splitDown[v])
	}
	return string(b)
}

// treeBundle is a set of channel groups run as one (groups[0] stands for
// them) and its hops, whose routes are the groups' routes one after another.
type treeBundle struct {
	groups []int
	hops   treeHops
}

// treeBundles sorts a tree's channel groups into bundles: groups of the
// same tree, weight and shape whose flows the fabric treats alike
// (equitable), every other group on its own. Without bundle capacities
// (b.bundleCaps nil: a full simulation, a recorded timeline, background
// traffic or congestion physics) every group is its own bundle. Under the
// Env's own capacities the bundles, merged hops included, are found once
// per set of edges and shared; callers only read them.
func (b *builder) treeBundles(te *treeEdges) []treeBundle {
	if b.bundleCaps == nil || b.full || len(te.hops) < 2 {
		out := make([]treeBundle, len(te.hops))
		for gi := range te.hops {
			out[gi] = treeBundle{[]int{gi}, te.hops[gi]}
		}
		return out
	}
	if b.envCaps() {
		te.bundleOnce.Do(func() { te.bundled = b.mergeBundles(te) })
		return te.bundled
	}
	return b.mergeBundles(te)
}

// mergeBundles finds the bundles of te's groups (treeBundles) and merges
// each bundle's hops.
func (b *builder) mergeBundles(te *treeEdges) []treeBundle {
	hops := te.hops
	wOf := func(gi int) int32 { return te.groups[gi].w }
	orbits := b.cachedBundles(bundleKey{model.AlgoTree, b.call.Choice.Channels, b.call.Choice.Proto}, func() [][]int {
		cands := groupBy(len(hops), func(gi int) string {
			return string(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, uint32(wOf(gi))), uint64(te.groups[gi].tree))) + hops[gi].shape()
		})
		return b.equitableOrbits(cands, wOf, hops)
	})
	out := make([]treeBundle, 0, len(orbits))
	for _, orb := range orbits {
		h := hops[orb[0]]
		if len(orb) > 1 {
			h = mergeTreeHops(orb, hops)
		}
		out = append(out, treeBundle{orb, h})
	}
	return out
}

// equitableOrbits splits every candidate orbit whose flows the check
// finds unlike into single groups, until the partition is equitable.
func (b *builder) equitableOrbits(orbits [][]int, wOf func(int) int32, hops []treeHops) [][]int {
	for {
		if !slices.ContainsFunc(orbits, func(o []int) bool { return len(o) > 1 }) {
			return orbits // single groups: nothing to check
		}
		var s symCells
		cellOrbit := []int{} // cell -> orbit
		for oi, orb := range orbits {
			base := int32(len(cellOrbit))
			for _, gi := range orb {
				pos := base
				hops[gi].flows(wOf(gi), float64(b.e.qps()), func(r []model.LinkID, load float64) {
					s.add(pos, r, load)
					if int(pos) == len(cellOrbit) {
						cellOrbit = append(cellOrbit, oi)
					}
					pos++
				})
			}
		}
		bad := equitable(&s, b.bundleCaps)
		if len(bad) == 0 {
			return orbits
		}
		split := map[int]bool{}
		for _, c := range bad {
			split[cellOrbit[c]] = true
		}
		var next [][]int
		for oi, orb := range orbits {
			if split[oi] {
				for _, gi := range orb {
					next = append(next, []int{gi})
				}
			} else {
				next = append(next, orb)
			}
		}
		orbits = next
	}
}

// mergeTreeHops is the hops of a bundle: each hop's routes those of the
// groups one after another, its ceiling and latency those they share.
func mergeTreeHops(orb []int, hops []treeHops) treeHops {
	r := hops[orb[0]]
	N := len(r.up)
	m := treeHops{up: make([][]hopInfo, N), down: make([][]hopInfo, N), netUp: make([]hopInfo, N), netDown: make([]hopInfo, N),
		splitUp: make([][]pathShare, N), splitDown: make([][]pathShare, N)}
	hop := func(get func(h *treeHops) hopInfo) hopInfo {
		ed := get(&hops[orb[0]])
		if ed.route == nil {
			return ed
		}
		rs := make([][]model.LinkID, len(orb))
		for i, gi := range orb {
			rs[i] = get(&hops[gi]).route
		}
		ed.route = concatRoutes(rs...)
		return ed
	}
	split := func(get func(h *treeHops) []pathShare) []pathShare {
		return mergeSplit(orb, func(gi int) []pathShare { return get(&hops[gi]) })
	}
	for v := 0; v < N; v++ {
		for k := range r.up[v] {
			m.up[v] = append(m.up[v], hop(func(h *treeHops) hopInfo { return h.up[v][k] }))
			m.down[v] = append(m.down[v], hop(func(h *treeHops) hopInfo { return h.down[v][k] }))
		}
		m.netUp[v] = hop(func(h *treeHops) hopInfo { return h.netUp[v] })
		m.netDown[v] = hop(func(h *treeHops) hopInfo { return h.netDown[v] })
		m.splitUp[v] = split(func(h *treeHops) []pathShare { return h.splitUp[v] })
		m.splitDown[v] = split(func(h *treeHops) []pathShare { return h.splitDown[v] })
	}
	return m
}

// nvlsEdge is one GPU's tree edge of NVLSTree: its routes up and down, and
// each way its several routes when its flows take several (edgeFlows).
type nvlsEdge struct {
	up, down           hopInfo
	splitUp, splitDown []pathShare
}

// nvlsLanes sorts the G GPUs (shards) of NVLSTree into lanes: every GPU in
// one lane when their hops have one shape and the fabric treats their flows
// alike (equitable), else every GPU on its own. pull and out are the rate
// caps of the NVLS pull and of the multicast delivery per tree and node;
// ups and downs are each node's NVLS links per GPU, edges its tree edges
// per tree and GPU.
func (b *builder) nvlsLanes(G int, half [2]int32, pull, out [2][]float64, ups, downs [][]model.LinkID, edges [][2][]nvlsEdge) [][]int {
	single := make([][]int, G)
	for i := range single {
		single[i] = []int{i}
	}
	if b.bundleCaps == nil || b.full || G < 2 {
		return single
	}
	return b.cachedBundles(bundleKey{model.AlgoNVLSTree, b.call.Choice.Channels, b.call.Choice.Proto}, func() [][]int {
		return nvlsLanesOf(G, half, pull, out, b.e.qps(), b.bundleCaps, ups, downs, edges, single)
	})
}

// nvlsLanesOf is nvlsLanes' decision, computed once per bundleKey.
func nvlsLanesOf(G int, half [2]int32, pull, out [2][]float64, qps int, caps []float64, ups, downs [][]model.LinkID, edges [][2][]nvlsEdge, single [][]int) [][]int {
	// One shape: the same hops exist, with the same ceilings, latencies
	// and split routes, for every GPU.
	hop := func(a, c hopInfo) bool {
		return a.cap == c.cap && a.lat == c.lat && (a.route == nil) == (c.route == nil)
	}
	split := func(a, c []pathShare) bool {
		if len(a) != len(c) {
			return false
		}
		for k := range a {
			if a[k].n != c[k].n {
				return false
			}
		}
		return true
	}
	for v := range edges {
		for tr := range edges[v] {
			if len(edges[v][tr]) == 0 {
				continue
			}
			e0 := edges[v][tr][0]
			for _, ed := range edges[v][tr][1:] {
				if !hop(ed.up, e0.up) || !hop(ed.down, e0.down) || !split(ed.splitUp, e0.splitUp) || !split(ed.splitDown, e0.splitDown) {
					return single
				}
			}
		}
	}
	// The flows of one unit; a cell per (tree, node, hop, route) with
	// every GPU in it.
	var s symCells
	q := float64(qps)
	cell := int32(0)
	for tr := 0; tr < 2; tr++ {
		w := half[tr]
		if w == 0 {
			continue
		}
		for v := range edges {
			// The reduce pull (capped), its push, the multicast's pull
			// (uncapped) and push (capped).
			for j, links := range [][]model.LinkID{ups[v], downs[v], ups[v], downs[v]} {
				c := math.Inf(1)
				switch j {
				case 0:
					c = capLoad(pull[tr][v], w)
				case 3:
					c = capLoad(out[tr][v], w)
				}
				for i := 0; i < G; i++ {
					s.add(cell, links[i:i+1], c)
				}
				cell++
			}
			if len(edges[v][tr]) == 0 || edges[v][tr][0].up.route == nil {
				continue
			}
			for _, way := range [2]bool{true, false} {
				e0 := edges[v][tr][0]
				ed0, sp0 := e0.up, e0.splitUp
				if !way {
					ed0, sp0 = e0.down, e0.splitDown
				}
				if len(sp0) == 0 {
					for i := 0; i < G; i++ {
						ed := edges[v][tr][i].up
						if !way {
							ed = edges[v][tr][i].down
						}
						s.add(cell, ed.route, capLoad(ed.cap.rate, w))
					}
					cell++
					continue
				}
				for k := range sp0 {
					for i := 0; i < G; i++ {
						sp := edges[v][tr][i].splitUp
						if !way {
							sp = edges[v][tr][i].splitDown
						}
						s.add(cell, sp[k].route, capLoad(ed0.cap.rate/q, sp[k].n))
					}
					cell++
				}
			}
		}
	}
	if len(equitable(&s, caps)) > 0 {
		return single
	}
	all := make([]int, G)
	for i := range all {
		all[i] = i
	}
	return [][]int{all}
}

// mergeLanes returns each node's NVLS routes and tree edges per lane: a
// lane's routes are those of its GPUs one after another.
func mergeLanes(lanes [][]int, ups, downs [][]model.LinkID, edges [][2][]nvlsEdge) (laneUp, laneDown [][][]model.LinkID, laneEdges [][2][]nvlsEdge) {
	N := len(ups)
	laneUp, laneDown = make([][][]model.LinkID, N), make([][][]model.LinkID, N)
	laneEdges = make([][2][]nvlsEdge, N)
	for v := 0; v < N; v++ {
		laneUp[v], laneDown[v] = make([][]model.LinkID, len(lanes)), make([][]model.LinkID, len(lanes))
		for li, lane := range lanes {
			if len(lane) == 1 {
				i := lane[0]
				laneUp[v][li], laneDown[v][li] = ups[v][i:i+1], downs[v][i:i+1]
				continue
			}
			for _, i := range lane {
				laneUp[v][li] = append(laneUp[v][li], ups[v][i])
				laneDown[v][li] = append(laneDown[v][li], downs[v][i])
			}
		}
		for tr := range edges[v] {
			if len(edges[v][tr]) == 0 {
				continue
			}
			laneEdges[v][tr] = make([]nvlsEdge, len(lanes))
			for li, lane := range lanes {
				if len(lane) == 1 {
					laneEdges[v][tr][li] = edges[v][tr][lane[0]]
					continue
				}
				m := edges[v][tr][lane[0]]
				m.up.route, m.down.route = nil, nil
				if edges[v][tr][lane[0]].up.route != nil {
					for _, i := range lane {
						m.up.route = append(m.up.route, edges[v][tr][i].up.route...)
						m.down.route = append(m.down.route, edges[v][tr][i].down.route...)
					}
				}
				m.splitUp = mergeSplit(lane, func(i int) []pathShare { return edges[v][tr][i].splitUp })
				m.splitDown = mergeSplit(lane, func(i int) []pathShare { return edges[v][tr][i].splitDown })
				laneEdges[v][tr][li] = m
			}
		}
	}
	return laneUp, laneDown, laneEdges
}

// mergeSplit is a bundle's split routes: route k that of each member's
// (group's or GPU's) route k one after another, with the members of the
// first.
func mergeSplit(lane []int, get func(i int) []pathShare) []pathShare {
	ps := get(lane[0])
	if len(ps) == 0 {
		return nil
	}
	out := make([]pathShare, len(ps))
	for k := range ps {
		rs := make([][]model.LinkID, len(lane))
		for j, i := range lane {
			rs[j] = get(i)[k].route
		}
		out[k] = pathShare{route: concatRoutes(rs...), n: ps[k].n}
	}
	return out
}

// envCaps reports whether the bundle capacities are the Env's own (not a
// call's, from its physics), so that a bundling decision holds for every
// call with its key.
func (b *builder) envCaps() bool {
	e := b.e
	return len(e.caps) > 0 && len(b.bundleCaps) == len(e.caps) && &b.bundleCaps[0] == &e.caps[0]
}

// bundleKey names a bundling decision: for one algorithm, channel count
// and protocol the hops of a call, and so the bundles, are the same at
// every size.
type bundleKey struct {
	algo  model.Algo
	nc    int
	proto model.Proto
}

// cachedBundles returns the bundles compute finds, kept in the Env for the
// next call with the same key when they were checked against the Env's own
// capacities (a call's own, from its physics, are checked every time).
// Callers only read the result.
func (b *builder) cachedBundles(k bundleKey, compute func() [][]int) [][]int {
	e := b.e
	if !b.envCaps() {
		return compute()
	}
	if v, ok := e.bundles.Load(k); ok {
		return v.([][]int)
	}
	o := compute()
	e.bundles.Store(k, o)
	return o
}
