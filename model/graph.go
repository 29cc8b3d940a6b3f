package model

import "sort"

// Pattern is the shape of an NCCL graph.
type Pattern uint8

// Graph patterns (nccl-facts §6 pattern ids: 4 ring, 1-3 trees, 5 NVLS).
const (
	PatternRing Pattern = iota
	PatternTree
	PatternNVLS
)

var patternNames = [...]string{"ring", "tree", "nvls"}

// String returns the pattern name.
func (p Pattern) String() string { return patternNames[p] }

// GraphChannel is one channel of a graph inside a node.
type GraphChannel struct {
	// GPUs are local GPU indices in channel order. For a ring on one node
	// the ring closes from the last back to the first; across nodes data
	// enters at GPUs[0] from NetIn and leaves from the last GPU through
	// NetOut to the next node. For a tree it is the intra-node chain, head
	// first.
	GPUs []int
	// NetIn and NetOut are local NIC indices (into Resolution.NICUsable of
	// the node), -1 on a single node.
	NetIn, NetOut int
}

// Graph is the result of NCCL's topology search for one pattern, as
// collsim emulates it (search.cc, nccl-facts §3.7).
type Graph struct {
	Pattern Pattern
	// NChannels is the number of channels the search found (before the
	// communicator duplicates them).
	NChannels int
	// BWIntra and BWInter are the per-channel bandwidths (GB/s).
	BWIntra, BWInter GBps
	// TypeIntra and TypeInter are the farthest path types the channels use.
	TypeIntra, TypeInter PathType
	// Channels lists each channel's order and NICs (len == NChannels).
	Channels []GraphChannel
	// Fallback is true when nothing fitted and NCCL would fall back to one
	// channel in simple order at 0.1 GB/s ("Could not find a path").
	Fallback bool
	// CrossNIC is true for a multi-node ring whose channels may leave a
	// node by another NIC than they entered by (NCCL_CROSS_NIC).
	CrossNIC bool
}

// Speed ladders of the search, GB/s per channel (search.cc; nccl-facts §3.7).
var (
	speedIntraSM80  = []GBps{40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3}
	speedInterSM80  = []GBps{48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12}
	speedIntraSM90  = []GBps{60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3}
	speedInterSM90  = []GBps{48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12}
	speedIntraSM100 = []GBps{90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18}
	speedInterSM100 = []GBps{96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12}
)

func speedLadder(sm int, inter bool) []GBps {
	switch {
	case sm >= 100 && inter:
		return speedInterSM100
	case sm >= 100:
		return speedIntraSM100
	case sm >= 90 && inter:
		return speedInterSM90
	case sm >= 90:
		return speedIntraSM90
	case inter:
		return speedInterSM80
	}
	return speedIntraSM80
}

// intelP2POverhead is NCCL's 1.2x bandwidth charge on PCIe links of PHB
// paths through an Intel root complex (topo.h INTEL_P2P_OVERHEAD).
const intelP2POverhead = 1.2

// maxGraphChannels caps the search (MAXCHANNELS/2).
const maxGraphChannels = 32

// searchBudget bounds DFS steps per channel attempt (NCCL: 2^14).
const searchBudget = 1 << 14

// Graphs holds the ring, tree and NVLS graphs of a cluster.
type Graphs struct {
	Ring, Tree *Graph
	// NVLS is nil when NVLS is impossible (no multicast NVSwitch, pre-SM90, disabled).
	NVLS *Graph
}

// SearchGraphs runs collsim's emulation of NCCL's graph search on node 0
// (all nodes of a cluster are identical).
func (r *Resolution) SearchGraphs() *Graphs {
	ring := r.searchRing()
	tree := *ring
	tree.Pattern = PatternTree
	if ring.CrossNIC {
		// Trees are symmetric: a node's head GPU talks to its parent and
		// children through one NIC (search.cc: "Trees are symmetric"), the
		// one next to it, where the ring enters.
		tree.CrossNIC = false
		tree.Channels = append([]GraphChannel(nil), ring.Channels...)
		for i := range tree.Channels {
			tree.Channels[i].NetOut = tree.Channels[i].NetIn
		}
	}
	if r.c.NumNodes() > 1 && !ring.Fallback && r.c.Version.AtLeast(12) {
		// Trees keep the ring's channels; pass 2 of the search raises the
		// intra-node speed, which only the chain inside the node must carry
		// (nccl-facts §3.7: for trees only bwIntra/bwInter are raised).
		// Assumption: releases before 2.12 did not, so their tuning kept
		// the ring on 2 nodes for large sizes: NCCL 2.9.9 on 2x p4d plateaus
		// at the NIC-bound ring rate (aws_p4d_a100_2x8_efa case), NCCL
		// 2.22 on 2x Snellius reaches the tree's 150+ GB/s.
		gpus := r.c.Nodes[0].GPUs
		var maxIntra GBps
		for _, a := range gpus {
			for _, b := range gpus {
				if a != b {
					maxIntra = max(maxIntra, r.GPU(a, b).NCCLBW)
				}
			}
		}
		if len(gpus) == 1 {
			maxIntra = localBW
		}
		limit := min(maxIntra, r.totalBW(gpus[0])/GBps(ring.NChannels))
		for _, s := range speedLadder(r.c.GPUModel().SM, false) {
			if s <= limit && s > tree.BWIntra {
				tree.BWIntra = s
				break
			}
		}
	}
	return &Graphs{Ring: ring, Tree: &tree, NVLS: r.searchNVLS()}
}

type searcher struct {
	r        *Resolution
	gpus     []ElemID
	nics     []ElemID
	multi    bool
	residual map[LinkID]GBps
	nicUse   []int
	steps    int
	intel    bool
	found    []int
	// budget overrides searchBudget when set (the joint search of all of
	// a graph's channels).
	budget int
	// cross lets a ring leave a node by another NIC than it entered by;
	// entryNIC is the NIC the channel being searched enters by.
	cross    crossMode
	entryNIC int
	reach    map[[2]int]bool // fabricReaches, memoised per search
	exitMemo map[[2]int]int  // exitNIC by (exit GPU, entry NIC)
	// journal records what committed reservations overwrote while
	// journaling is set (findChannel's undo of one walk).
	journal    []snap
	journaling bool
	spent      *int // DFS steps of the NIC-crossing searches of all speeds so far
	attempt    int  // DFS steps of this NIC-crossing search, all its channels
}

// NCCL bounds each search attempt (one speed and NIC mode, all its
// channels) to NCCL_SEARCH_TIMEOUT = 2^14 DFS steps and all attempts
// together to NCCL_SEARCH_GLOBAL_TIMEOUT = 2^19, then keeps what it has
// found (search.cc). The NIC-crossing retry is held to both. Assumption:
// charging the global bound to the crossing retries alone, where NCCL
// charges every attempt, leaves the same-NIC search as it was; without the
// bounds the crossing walks on a 72-GPU NVL72 node cost seconds per speed.
const (
	crossAttemptBudget = 1 << 14
	crossSearchBudget  = 1 << 19
)

// crossMode is how a ring may use the NICs of a node (NCCL_CROSS_NIC).
type crossMode uint8

const (
	// crossSame: a ring enters and leaves a node by one NIC (NET n -> GPU a
	// ... GPU x -> NET n), the last GPU sending through an NVLink peer next
	// to the NIC (PXN) when it is not next to it itself.
	crossSame crossMode = iota
	// crossAny: a ring leaves by the NIC closest to its last GPU.
	crossAny
	// crossPaired: as crossAny, and channels come in pairs, the second
	// entering by the NIC the first left by and leaving by the one it
	// entered by (search.cc ncclTopoSearchCheckNet, NCCL_CROSS_NIC=2 from
	// 2.20), so every rail carries as much in as out.
	crossPaired
)

// crossNICModes returns how the ring search first uses the NICs and what
// it retries at each speed before lowering it (search.cc ncclTopoCompute,
// checked from v2.8.4-1 to v2.30.7-1): NCCL_CROSS_NIC=0 never crosses, 1
// crosses from the start, 2 (the default) searches same-NIC rings first
// and then NIC-crossing ones, paired from 2.20.
func (r *Resolution) crossNICModes(multi bool) (first, retry crossMode) {
	if !multi || len(r.NICUsable[0]) < 2 || len(r.c.Nodes[0].GPUs) < 2 {
		// One GPU enters and leaves by its own NIC: crossing gains nothing.
		return crossSame, crossSame
	}
	switch r.c.Knobs.CrossNIC {
	case 0:
		return crossSame, crossSame
	case 1:
		return crossAny, crossSame
	}
	if r.c.Version.AtLeast(20) {
		return crossSame, crossPaired
	}
	return crossSame, crossAny
}

// betterRing reports whether ring graph cand replaces best, as NCCL's
// ncclTopoCompareGraphs decides: more channels x bandwidth wins. From 2.18
// to 2.20 a graph that crosses NICs had to beat one that does not by 15%
// ("Give a 15% perf bonus to paths not crossing nics", search.cc v2.18.1-1
// .. v2.20.5-1), and one that does not replaced a crossing one from 85%.
func (r *Resolution) betterRing(cand, best *Graph) bool {
	if cand == nil {
		return false
	}
	if best == nil {
		return true
	}
	target := 1.0
	if v := r.c.Version; v.AtLeast(18) && !v.AtLeast(21) {
		target = 1 - (b2f(best.CrossNIC)-b2f(cand.CrossNIC))*0.15
	}
	return float64(GBps(cand.NChannels)*cand.BWIntra) > float64(GBps(best.NChannels)*best.BWIntra)*target
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// crossExits orders a NIC-crossing channel's candidate last GPUs, those
// closest to the NIC they would leave by first, and returns each one's
// exit NIC alongside.
func (s *searcher) crossExits(exits []int, prev *GraphChannel) (out, nics []int) {
	type cand struct {
		exit, nic int
		typ       PathType
	}
	cs := make([]cand, len(exits))
	for k, x := range exits {
		no := s.exitNIC(x, prev)
		cs[k] = cand{x, no, s.r.NetTo(s.gpus[x], s.nics[no]).DirectType}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].typ < cs[j].typ })
	out, nics = make([]int, len(cs)), make([]int, len(cs))
	for k, c := range cs {
		out[k], nics[k] = c.exit, c.nic
	}
	return out, nics
}

// exitNIC is the NIC a NIC-crossing channel whose last GPU is exit leaves
// by: the one prev entered by for the second of a pair, else the NIC
// closest to exit that the fabric joins to the entry NIC (NCCL tries the
// nets of the last GPU in its order of preference, local first); memoised
// per exit and entry NIC.
func (s *searcher) exitNIC(exit int, prev *GraphChannel) int {
	if prev != nil {
		return prev.NetIn
	}
	k := [2]int{exit, s.entryNIC}
	if no, ok := s.exitMemo[k]; ok {
		return no
	}
	best := s.entryNIC
	for i := range s.nics {
		if i != best && s.reaches(i, s.entryNIC) && netLess(s.r.NetTo(s.gpus[exit], s.nics[i]), s.r.NetTo(s.gpus[exit], s.nics[best])) {
			best = i
		}
	}
	if s.exitMemo == nil {
		s.exitMemo = map[[2]int]int{}
	}
	s.exitMemo[k] = best
	return best
}

// reaches is fabricReaches, asked of the fabric once per pair and search.
func (s *searcher) reaches(out, in int) bool {
	k := [2]int{out, in}
	ok, seen := s.reach[k]
	if !seen {
		if s.reach == nil {
			s.reach = map[[2]int]bool{}
		}
		ok = s.r.fabricReaches(out, in)
		s.reach[k] = ok
	}
	return ok
}

// fabricReaches reports whether local NIC out of one node reaches local
// NIC in of the next through the fabric: NCCL never pairs NICs of
// different network planes (search.cc ncclTopoSearchCheckNet), and a
// rail-only fabric has no path between rails.
func (r *Resolution) fabricReaches(out, in int) bool {
	fb := r.c.Fabric
	if fb == nil || out == in || len(r.NICUsable) < 2 {
		return true
	}
	_, err := fb.Route(FlowKey{SrcNIC: r.NICUsable[0][out], DstNIC: r.NICUsable[1][in], SrcGPU: None, DstGPU: None})
	return err == nil
}

func (s *searcher) stepBudget() int {
	if s.budget > 0 {
		return s.budget
	}
	return searchBudget
}

// totalBW is a GPU's total NVLink bandwidth, or its PCIe bandwidth if larger.
func (r *Resolution) totalBW(g ElemID) GBps {
	t := r.c.Topo
	var nvl, pci GBps
	for _, l := range t.Out[g] {
		switch t.Links[l].Kind {
		case LinkNVLink:
			nvl += t.Links[l].NCCLBW
		case LinkPCIe:
			pci = max(pci, t.Links[l].NCCLBW)
		}
	}
	return max(nvl, pci)
}

func (r *Resolution) searchRing() *Graph {
	c := r.c
	gpus := c.Nodes[0].GPUs
	sm := c.GPUModel().SM
	multi := c.NumNodes() > 1
	g := &Graph{Pattern: PatternRing}
	if len(gpus) == 1 && !multi {
		g.NChannels, g.BWIntra, g.BWInter = 1, localBW, localBW
		g.Channels = []GraphChannel{{GPUs: []int{0}, NetIn: -1, NetOut: -1}}
		return g
	}
	// maxBw: best GPU->GPU path (intra) or GPU->NET path (inter).
	var maxBW GBps
	if multi {
		for _, np := range r.LocalNICs(gpus[0]) {
			maxBW = max(maxBW, min(np.NCCLBW, r.nicBW(np.NIC)))
		}
		for _, gi := range gpus[1:] {
			for _, np := range r.LocalNICs(gi) {
				maxBW = max(maxBW, min(np.NCCLBW, r.nicBW(np.NIC)))
			}
		}
	} else {
		for _, a := range gpus {
			for _, b := range gpus {
				if a != b {
					maxBW = max(maxBW, r.GPU(a, b).NCCLBW)
				}
			}
		}
	}
	total := r.totalBW(gpus[0])
	ladder := speedLadder(sm, multi)
	first, retry := r.crossNICModes(multi)
	var crossSteps int
	var best *Graph
	for _, speed := range ladder {
		if speed > maxBW {
			continue
		}
		if best != nil && (GBps(best.NChannels)*best.BWIntra >= total || speed*maxGraphChannels < GBps(best.NChannels)*best.BWIntra || speed < 0.49*best.BWIntra) {
			break
		}
		if cand := r.ringAtSpeed(gpus, multi, speed, total, first, &crossSteps); r.betterRing(cand, best) {
			best = cand
		}
		// NCCL tries the NIC-crossing rings at the same speed before it
		// lowers the speed, unless the same-NIC graph already reaches the
		// GPU's total bandwidth (search.cc ncclTopoCompute).
		if retry != crossSame && (best == nil || GBps(best.NChannels)*best.BWIntra < total) {
			if cand := r.ringAtSpeed(gpus, multi, speed, total, retry, &crossSteps); r.betterRing(cand, best) {
				best = cand
			}
		}
	}
	if best == nil {
		// NCCL: "Could not find a path for pattern 4, falling back to simple order".
		best = &Graph{Pattern: PatternRing, NChannels: 1, BWIntra: 0.1, BWInter: 0.1, Fallback: true}
		order := make([]int, len(gpus))
		for i := range order {
			order[i] = i
		}
		ch := GraphChannel{GPUs: order, NetIn: -1, NetOut: -1}
		if multi {
			ch.NetIn, ch.NetOut = 0, 0
		}
		best.Channels = []GraphChannel{ch}
		best.TypeIntra, best.TypeInter = PathSYS, PathNET
	}
	return best
}

func (r *Resolution) nicBW(nic ElemID) GBps {
	return r.c.Topo.Elem(nic).NIC.Speed.LineGBps()
}

// ringAtSpeed finds as many ring channels as fit at the given per-channel
// speed, leaving each node by the NIC it entered by or, with cross set,
// by another (see crossMode).
func (r *Resolution) ringAtSpeed(gpus []ElemID, multi bool, speed, total GBps, cross crossMode, spent *int) *Graph {
	s := &searcher{r: r, gpus: gpus, multi: multi, residual: map[LinkID]GBps{}, cross: cross}
	if cross != crossSame {
		s.spent = spent
	}
	if multi {
		s.nics = r.NICUsable[0]
		s.nicUse = make([]int, len(s.nics))
	}
	if cpu := r.c.Topo.Elem(r.c.Nodes[0].CPUs[0]).CPU; cpu != nil {
		s.intel = cpu.Vendor == CPUIntel
	}
	g := &Graph{Pattern: PatternRing, BWIntra: speed, BWInter: speed, CrossNIC: multi && cross != crossSame}
	for g.NChannels < maxGraphChannels && GBps(g.NChannels)*speed < total {
		var prev *GraphChannel
		if cross == crossPaired && g.NChannels%2 == 1 {
			prev = &g.Channels[g.NChannels-1]
		}
		ch, ok := s.findChannel(speed, prev)
		if !ok {
			break
		}
		g.Channels = append(g.Channels, ch)
		g.NChannels++
	}
	if !multi && g.NChannels > 0 && g.NChannels < maxGraphChannels && GBps(g.NChannels)*speed < total && r.unevenNVLink(gpus) {
		// The greedy walk fixes each channel before it looks for the next,
		// and on an uneven NVLink mesh (the DGX-1 hybrid cube-mesh: two
		// links to some peers, one to others) its early channels can mix
		// single and double links so that no later ring closes. NCCL's
		// search recurses across channels (search.cc: a completed ring
		// starts the search of the next channel, and a dead end backtracks
		// into the previous one), so it finds rings over the single links
		// too; search all channels jointly and keep the larger graph.
		chans := r.jointRings(gpus, speed, total)
		if len(chans) > g.NChannels {
			g.Channels, g.NChannels = chans, len(chans)
		}
	}
	if g.NChannels == 0 {
		return nil
	}
	g.TypeIntra, g.TypeInter = PathNVL, PathNET
	worstIntra := PathLOC
	for _, ch := range g.Channels {
		for i := range ch.GPUs {
			if i+1 < len(ch.GPUs) || !multi {
				a, b := gpus[ch.GPUs[i]], gpus[ch.GPUs[(i+1)%len(ch.GPUs)]]
				if a != b {
					worstIntra = max(worstIntra, r.GPU(a, b).Type)
				}
			}
		}
	}
	if worstIntra != PathLOC {
		g.TypeIntra = worstIntra
	}
	if multi {
		worst := PathLOC
		for _, ch := range g.Channels {
			last := gpus[ch.GPUs[len(ch.GPUs)-1]]
			worst = max(worst, r.NetTo(last, s.nics[ch.NetOut]).Type, r.NetTo(gpus[ch.GPUs[0]], s.nics[ch.NetIn]).DirectType)
		}
		g.TypeInter = worst
	}
	return g
}

// searchGlobalBudget bounds the joint search of all channels at one speed.
// NCCL allows 2^14 steps per attempt and 2^19 in all (nccl-facts §3.7);
// assumption: one attempt's 2^14 is enough here, as the joint search runs
// only after the greedy walk fell short, over direct NVLinks only (it finds
// the DGX-1's 6 rings in under 100 steps), and it keeps prediction fast.
const searchGlobalBudget = searchBudget

// unevenNVLink reports whether the GPUs' direct NVLinks differ in
// bandwidth from pair to pair (a hybrid cube-mesh), the case where the
// greedy ring walk can strand links.
func (r *Resolution) unevenNVLink(gpus []ElemID) bool {
	var first GBps
	for _, a := range gpus {
		for _, b := range gpus {
			if a == b {
				continue
			}
			p := r.GPU(a, b)
			if p.Type != PathNVL || len(p.Route) != 1 {
				continue
			}
			if first == 0 {
				first = p.NCCLBW
			} else if p.NCCLBW != first {
				return true
			}
		}
	}
	return false
}

// jointRings searches the rings of one node at speed together, backtracking
// from a channel that cannot close into the channels before it, and returns
// the most channels it found (up to the search's cap) within the global
// step budget.
func (r *Resolution) jointRings(gpus []ElemID, speed, total GBps) []GraphChannel {
	s := &searcher{r: r, gpus: gpus, residual: map[LinkID]GBps{}, budget: searchGlobalBudget}
	if cpu := r.c.Topo.Elem(r.c.Nodes[0].CPUs[0]).CPU; cpu != nil {
		s.intel = cpu.Vendor == CPUIntel
	}
	var cur, best []GraphChannel
	n := len(gpus)
	var next func() bool
	next = func() bool {
		if len(cur) > len(best) {
			best = append([]GraphChannel(nil), cur...)
		}
		if len(cur) >= maxGraphChannels || GBps(len(cur))*speed >= total || s.steps > s.budget {
			return true
		}
		used := make([]bool, n)
		used[0] = true
		return s.dfsThen([]int{0}, used, speed, -1, func() bool {
			cur = append(cur, GraphChannel{GPUs: append([]int(nil), s.found...), NetIn: -1, NetOut: -1})
			stop := next()
			cur = cur[:len(cur)-1]
			return stop
		})
	}
	next()
	return best
}

// linkCost returns the links a hop reserves and the multiplier to charge.
func (s *searcher) reserve(route []LinkID, bw GBps, typ PathType, commit bool) bool {
	t := s.r.c.Topo
	for _, l := range route {
		lk := &t.Links[l]
		if lk.Kind == LinkMem || lk.Kind == LinkCPU {
			continue
		}
		need := bw
		if s.intel && typ == PathPHB && lk.Kind == LinkPCIe {
			need *= intelP2POverhead
		}
		res, ok := s.residual[l]
		if !ok {
			res = lk.NCCLBW
		}
		if res+1e-9 < need {
			return false
		}
		if commit {
			if s.journaling {
				prev, had := s.residual[l]
				s.journal = append(s.journal, snap{l, prev, had})
			}
			s.residual[l] = res - need
		}
	}
	return true
}

func (s *searcher) hopRoute(a, b int) ([]LinkID, PathType) {
	p := s.r.GPU(s.gpus[a], s.gpus[b])
	return p.Route, p.Type
}

// findChannel searches one channel at speed and reserves its bandwidth.
// With s.cross the channel may leave by a NIC other than the one it
// entered by: the exit GPU's closest NIC, or, for the second channel of a
// pair (prev not nil), the NIC prev entered by, while the channel enters by
// the one prev left by.
func (s *searcher) findChannel(speed GBps, prev *GraphChannel) (GraphChannel, bool) {
	n := len(s.gpus)
	if !s.multi {
		s.steps = 0
		order := []int{0}
		used := make([]bool, n)
		used[0] = true
		if s.dfs(order, used, speed, -1) {
			return GraphChannel{GPUs: append([]int(nil), s.found...), NetIn: -1, NetOut: -1}, true
		}
		return GraphChannel{}, false
	}
	// Multi-node: pick the least-used NIC that still has room, enter at the
	// GPU closest to it and leave from the next closest (NET n -> a ... x -> NET n).
	idx := make([]int, len(s.nics))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return s.nicUse[idx[i]] < s.nicUse[idx[j]] })
	if prev != nil {
		idx = []int{prev.NetOut}
	}
	total := 0
	for _, ni := range idx {
		nic := s.nics[ni]
		s.entryNIC = ni
		netLink := s.netLink(nic)
		if !s.reserve([]LinkID{netLink, s.r.c.Topo.Links[netLink].Reverse}, speed, PathNET, false) {
			continue
		}
		byDist := make([]int, n)
		for i := range byDist {
			byDist[i] = i
		}
		sort.SliceStable(byDist, func(i, j int) bool {
			return netLess(s.r.NetTo(s.gpus[byDist[i]], nic), s.r.NetTo(s.gpus[byDist[j]], nic))
		})
		for ei, entry := range byDist {
			exits := append(append([]int(nil), byDist[:ei]...), byDist[ei+1:]...)
			if n == 1 {
				exits = []int{entry}
			}
			in := s.r.NetTo(s.gpus[entry], nic)
			if !s.reserve(in.Recv, speed, in.DirectType, false) {
				continue
			}
			var exitNICs []int
			if s.cross != crossSame {
				exits, exitNICs = s.crossExits(exits, prev)
			}
			for k, exit := range exits {
				no := ni
				if exitNICs != nil {
					no = exitNICs[k]
				}
				out := s.r.NetTo(s.gpus[exit], s.nics[no])
				if !s.reserve(out.Send, speed, out.Type, false) {
					continue
				}
				used := make([]bool, n)
				used[entry] = true
				total += s.steps
				s.steps = 0
				// The hops a walk keeps are journaled, so a walk whose
				// ends no longer fit afterwards is undone exactly.
				s.journal, s.journaling = s.journal[:0], true
				ok := s.dfs([]int{entry}, used, speed, exit) && s.reserve(out.Send, speed, out.Type, false) && s.reserve(in.Recv, speed, in.DirectType, false)
				s.journaling = false
				if s.spent != nil {
					*s.spent += s.steps
					s.attempt += s.steps
				}
				if !ok {
					s.restore(s.journal)
				}
				if ok {
					s.reserve(in.Recv, speed, in.DirectType, true)
					s.reserve(out.Send, speed, out.Type, true)
					s.reserve([]LinkID{netLink, s.r.c.Topo.Links[netLink].Reverse}, speed, PathNET, true)
					s.nicUse[ni]++
					return GraphChannel{GPUs: append([]int(nil), s.found...), NetIn: ni, NetOut: no}, true
				}
				if total+s.steps >= 16*searchBudget || s.spent != nil && (*s.spent > crossSearchBudget || s.attempt > crossAttemptBudget) {
					return GraphChannel{}, false
				}
			}
		}
	}
	return GraphChannel{}, false
}

// netLink returns the NIC's cable to the fabric (NIC -> switch direction).
func (s *searcher) netLink(nic ElemID) LinkID {
	t := s.r.c.Topo
	for _, l := range t.Out[nic] {
		if t.Links[l].Kind == LinkNet {
			return l
		}
	}
	// Single-node clusters have no cable; charge the NIC's PCIe link.
	return t.Out[nic][0]
}

// dfs extends order to a Hamiltonian cycle (exit < 0) or path ending at
// exit, trying the index neighbour first as NCCL does, and reserves the
// hops it keeps. The result is left in s.found.
func (s *searcher) dfs(order []int, used []bool, speed GBps, exit int) bool {
	return s.dfsThen(order, used, speed, exit, nil)
}

// dfsThen is dfs with a continuation: when a cycle or path is complete,
// then (if not nil) decides whether to keep it; returning false undoes the
// closing hop and the walk goes on to the next candidate, so a caller can
// search several channels together as NCCL's recursion does.
func (s *searcher) dfsThen(order []int, used []bool, speed GBps, exit int, then func() bool) bool {
	n := len(s.gpus)
	s.steps++
	if s.steps > s.stepBudget() {
		return false
	}
	last := order[len(order)-1]
	if len(order) == n {
		if exit >= 0 {
			if last != exit {
				return false
			}
			s.found = order
			return then == nil || then()
		}
		route, typ := s.hopRoute(last, order[0])
		var sn []snap
		if then != nil {
			sn = s.snapshot(route)
		}
		if n > 1 && !s.reserve(route, speed, typ, true) {
			return false
		}
		s.found = order
		if then == nil || then() {
			return true
		}
		s.restore(sn)
		return false
	}
	// Candidates in index-neighbour order, then by most residual bandwidth
	// first (NCCL sorts next GPUs by the bandwidth left on the path).
	cands := make([]int, 0, n-1)
	for k := 1; k < n; k++ {
		next := (last + k) % n
		if used[next] || (next == exit && len(order) != n-1) {
			continue
		}
		if s.budget > 0 && s.r.GPU(s.gpus[last], s.gpus[next]).Type > PathNVL {
			// The joint search keeps NCCL's first typeIntra, NVL: rings
			// over direct NVLinks only, no hop through a third GPU (NVB)
			// or the host.
			continue
		}
		cands = append(cands, next)
	}
	if n <= 16 {
		left := make(map[int]GBps, len(cands))
		for _, c := range cands {
			route, _ := s.hopRoute(last, c)
			left[c] = s.left(route)
		}
		if s.budget > 0 {
			// The joint search orders next GPUs by the path's bandwidth
			// first, as NCCL does (search.cc ncclTopoSearchNextGpuSort),
			// so double links are tried before single ones.
			static := make(map[int]GBps, len(cands))
			for _, c := range cands {
				static[c] = s.r.GPU(s.gpus[last], s.gpus[c]).NCCLBW
			}
			sort.SliceStable(cands, func(i, j int) bool {
				if static[cands[i]] != static[cands[j]] {
					return static[cands[i]] > static[cands[j]]
				}
				return left[cands[i]] > left[cands[j]]
			})
		} else {
			sort.SliceStable(cands, func(i, j int) bool { return left[cands[i]] > left[cands[j]] })
		}
	}
	for _, next := range cands {
		route, typ := s.hopRoute(last, next)
		if !s.reserve(route, speed, typ, false) {
			continue
		}
		snap := s.snapshot(route)
		s.reserve(route, speed, typ, true)
		used[next] = true
		if s.dfsThen(append(order, next), used, speed, exit, then) {
			return true
		}
		used[next] = false
		s.restore(snap)
		if s.steps > s.stepBudget() {
			return false
		}
	}
	return false
}

// left returns the smallest residual bandwidth along a route.
func (s *searcher) left(route []LinkID) GBps {
	t := s.r.c.Topo
	best := GBps(1e18)
	for _, l := range route {
		lk := &t.Links[l]
		if lk.Kind == LinkMem || lk.Kind == LinkCPU {
			continue
		}
		res, ok := s.residual[l]
		if !ok {
			res = lk.NCCLBW
		}
		best = min(best, res)
	}
	return best
}

type snap struct {
	l   LinkID
	v   GBps
	had bool
}

func (s *searcher) snapshot(route []LinkID) []snap {
	out := make([]snap, len(route))
	for i, l := range route {
		v, ok := s.residual[l]
		out[i] = snap{l, v, ok}
	}
	return out
}

func (s *searcher) restore(sn []snap) {
	for i := len(sn) - 1; i >= 0; i-- {
		if sn[i].had {
			s.residual[sn[i].l] = sn[i].v
		} else {
			delete(s.residual, sn[i].l)
		}
	}
}

// searchNVLS emulates the NVLS graph: one channel per GPU (up to 32) at the
// highest intra speed the GPU's NVSwitch links hold, bwInter raised to the
// top of the ladder on one node or to the NIC rate across nodes
// (nccl-facts §2.7, §3.7).
func (r *Resolution) searchNVLS() *Graph {
	c := r.c
	gm := c.GPUModel()
	if gm.SM < 90 || c.Knobs.NVLSEnable == 0 || c.Version.Minor < 17 {
		return nil
	}
	sw := c.Nodes[0].NVSwitch
	if sw == None || !c.Topo.Elem(sw).Multicast || c.GPUsPerNode() < 2 {
		return nil
	}
	gpus := c.Nodes[0].GPUs
	l, ok := c.Topo.LinkBetween(gpus[0], sw)
	if !ok {
		return nil
	}
	link := c.Topo.Links[l].NCCLBW
	nch := min(len(gpus), maxGraphChannels)
	var intra GBps
	for _, s := range speedLadder(gm.SM, false) {
		if GBps(nch)*s <= link {
			intra = s
			break
		}
	}
	if intra == 0 {
		return nil
	}
	inter := speedLadder(gm.SM, false)[0]
	if c.NumNodes() > 1 {
		inter = 0
		for _, np := range r.LocalNICs(gpus[0]) {
			inter = max(inter, min(np.NCCLBW, r.nicBW(np.NIC)))
		}
	}
	g := &Graph{Pattern: PatternNVLS, NChannels: nch, BWIntra: intra, BWInter: inter, TypeIntra: PathNVL, TypeInter: PathNET}
	for i := 0; i < nch; i++ {
		g.Channels = append(g.Channels, GraphChannel{GPUs: []int{i % len(gpus)}, NetIn: -1, NetOut: -1})
	}
	return g
}

// CommChannels returns the coll channel count of the communicator for a ring
// graph: the graph's channels duplicated unless the per-channel bandwidth is
// low (bwIntra < 25, or SM > 80 with bwIntra < 50 and more than 4 channels),
// then doubled once more in ncclTopoPostset, capped at 64, and bounded by
// NCCL_MIN/MAX_NCHANNELS (nccl-facts §3.7-3.8). It also returns the graph
// channel count and per-channel bandwidth after duplication, which the
// tuning model uses.
func (r *Resolution) CommChannels(g *Graph) (comm, graphCh int, bw GBps) {
	sm := r.c.GPUModel().SM
	graphCh, bw = g.NChannels, g.BWIntra
	if !(g.BWIntra < 25 || (sm > 80 && g.BWIntra < 50 && g.NChannels > 4)) && !g.Fallback {
		graphCh = min(2*g.NChannels, maxGraphChannels)
		bw = g.BWIntra * GBps(g.NChannels) / GBps(graphCh)
	}
	comm = min(2*graphCh, 64)
	if sm >= 90 && r.c.NumNodes() > 1 && g.BWIntra > 45 && comm < 16 {
		comm = min(2*comm, 64)
	}
	k := r.c.Knobs
	lo, hi := r.CTABounds()
	if k.MaxChannels > 0 {
		hi = min(hi, k.MaxChannels)
	}
	comm = min(comm, hi)
	if k.MinChannels > 0 {
		lo = max(lo, k.MinChannels)
	}
	return max(comm, lo), graphCh, bw
}

// CTABounds returns the communicator's CTA bounds: NCCL_MIN_CTAS and
// NCCL_MAX_CTAS from 2.17 (init.cc; before it NCCL has no such variables),
// else 1 and 64. A minimum above the maximum is lowered to it, as NCCL
// does ("minCTAs %d is larger than maxCTAs %d, set both to %d"). NCCL caps
// the coll channels at the maximum and raises them to the minimum
// (connect.cc: min(NCCL_MAX_NCHANNELS, maxCTAs), max(NCCL_MIN_NCHANNELS,
// minCTAs)) and clamps the NVLS channels to both (transport/nvls.cc).
func (r *Resolution) CTABounds() (lo, hi int) {
	lo, hi = 1, 64
	if k := r.c.Knobs; r.c.Version.AtLeast(17) {
		if k.MaxCTAs > 0 {
			hi = k.MaxCTAs
		}
		if k.MinCTAs > 0 {
			lo = min(k.MinCTAs, hi)
		}
	}
	return lo, hi
}

// NVLSChannels returns the NVLS channel count: 16 on SM90, 24 on SM100 in
// one NVLink domain, 32 on SM100 across nodes, or NCCL_NVLS_NCHANNELS
// (transport/nvls.cc; nccl-facts §3.8), clamped to the CTA bounds.
func (r *Resolution) NVLSChannels() int {
	lo, hi := r.CTABounds()
	return max(lo, min(hi, r.nvlsChannelsWanted()))
}

func (r *Resolution) nvlsChannelsWanted() int {
	if r.c.Knobs.NVLSChannels > 0 {
		return r.c.Knobs.NVLSChannels
	}
	if r.c.GPUModel().SM >= 100 {
		if r.c.NumNodes() > 1 {
			return 32
		}
		return 24
	}
	return 16
}

// BinaryTree returns NCCL's binary tree over n node indices: parent of each
// index (-1 for the root) (graph/trees.cc: the root is 0 with a single child;
// odd indices are leaves). O(n log n).
func BinaryTree(n int) []int {
	parent := make([]int, n)
	for r := 0; r < n; r++ {
		if r == 0 {
			parent[r] = -1
			continue
		}
		bit := 1
		for bit < n && bit&r == 0 {
			bit <<= 1
		}
		up := (r ^ bit) | (bit << 1)
		if up >= n {
			up = r ^ bit
		}
		parent[r] = up
	}
	return parent
}

// DoubleBinaryTree returns the two trees of NCCL's double binary tree: the second is
// the first mirrored (n-1-i) for even n, shifted by one for odd n.
func DoubleBinaryTree(n int) [2][]int {
	t0 := BinaryTree(n)
	t1 := make([]int, n)
	for r := 0; r < n; r++ {
		var src int
		if n%2 == 0 {
			src = n - 1 - r
		} else {
			src = (r - 1 + n) % n
		}
		p := t0[src]
		switch {
		case p < 0:
			t1[r] = -1
		case n%2 == 0:
			t1[r] = n - 1 - p
		default:
			t1[r] = (p + 1) % n
		}
	}
	return [2][]int{t0, t1}
}
