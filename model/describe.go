package model

import (
	"fmt"
	"sort"
	"strings"
)

// TransportSummary says which transports the ring channels use.
type TransportSummary struct {
	// Intra lists the distinct intra-node transports ("P2P/NVLink",
	// "P2P/PCIe", "SHM", "NET"), in order of first use.
	Intra []string
	// Net is the network ("IB", "Socket", "Libfabric"), empty on one node.
	Net string
	// GDR reports GPUDirect RDMA on every NET hop; PXN whether sends go
	// through an NVLink peer.
	GDR, PXN bool
	// StagedSends reports that sends are staged through host memory while
	// receives use GPUDirect RDMA (NetPath.SendGDR).
	StagedSends bool
	// NICsUsed and NICsInstalled count NICs per node.
	NICsUsed, NICsInstalled int
	// Reasons explains fallbacks (SHM instead of P2P, no GDR).
	Reasons []string
}

// Summarize reports the transports of the ring graph's channels on node 0.
func (r *Resolution) Summarize(g *Graph) TransportSummary {
	var s TransportSummary
	c := r.c
	gpus := c.Nodes[0].GPUs
	seen := map[string]bool{}
	reason := map[string]bool{}
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			s.Intra = append(s.Intra, k)
		}
	}
	multi := c.NumNodes() > 1
	used := map[int]bool{}
	s.GDR = true
	for _, ch := range g.Channels {
		for i := range ch.GPUs {
			if multi && i+1 == len(ch.GPUs) {
				break
			}
			a, b := gpus[ch.GPUs[i]], gpus[ch.GPUs[(i+1)%len(ch.GPUs)]]
			if a == b {
				continue
			}
			p := r.GPU(a, b)
			switch {
			case p.Transport == TransportP2P && (p.Type == PathNVL || p.Type == PathNVB):
				add("P2P/NVLink")
			case p.Transport == TransportP2P:
				add("P2P/PCIe")
			case p.Transport == TransportSHM:
				add("SHM")
			default:
				add("NET")
			}
			if p.Reason != "" && !reason[p.Reason] {
				reason[p.Reason] = true
				s.Reasons = append(s.Reasons, fmt.Sprintf("%s: %s", p.Transport, p.Reason))
			}
		}
		if multi {
			used[ch.NetIn], used[ch.NetOut] = true, true
			last := gpus[ch.GPUs[len(ch.GPUs)-1]]
			if ch.NetOut >= 0 && ch.NetOut < len(r.NICUsable[0]) {
				np := r.NetTo(last, r.NICUsable[0][ch.NetOut])
				in := r.NetTo(gpus[ch.GPUs[0]], r.NICUsable[0][ch.NetIn])
				if np.Via != None {
					s.PXN = true
				}
				if np.GDR && !np.SendGDR && !np.Socket {
					s.StagedSends = true
					if !reason[np.SendReason] {
						reason[np.SendReason] = true
						s.Reasons = append(s.Reasons, "GPUDirect RDMA on receives only: "+np.SendReason)
					}
				}
				for _, x := range []*NetPath{np, in} {
					if !x.GDR {
						s.GDR = false
						if x.Reason != "" && !reason[x.Reason] {
							reason[x.Reason] = true
							s.Reasons = append(s.Reasons, "no GPUDirect RDMA: "+x.Reason)
						}
					}
				}
			}
		}
	}
	if multi {
		s.Net = r.Net
		s.NICsUsed = len(used)
		s.NICsInstalled = len(c.Nodes[0].NICs)
		if s.NICsUsed < s.NICsInstalled {
			s.Reasons = append(s.Reasons, r.sharedUplinks(used)...)
		}
	}
	return s
}

// sharedUplinks explains NICs of node 0 left unused because they sit
// under one PCIe switch with a used NIC (PIX to each other: one switch or
// a dual-port adapter) whose uplink carries less than their ports
// together: a second NIC there adds no bandwidth.
func (r *Resolution) sharedUplinks(used map[int]bool) []string {
	t := r.c.Topo
	type rates struct{ up, one GBps } // as NCCL rates the uplink and one port
	var order []rates
	groups := map[rates][]string{}
	seen := map[ElemID]bool{}
	for i, nicU := range r.NICUsable[0] {
		sw, ok := r.parent[nicU]
		if used[i] || !ok || t.Elem(sw).Kind != KindPCIeSwitch || seen[sw] {
			continue
		}
		seen[sw] = true
		// The NICs whose parent is the switch, and its link up the tree.
		var nics []string
		var one GBps
		for _, nic := range r.c.Nodes[0].NICs {
			if r.parent[nic] == sw {
				nics = append(nics, t.Elem(nic).Name)
				one = max(one, t.Elem(nic).NIC.Speed.LineGBps())
			}
		}
		up := t.Links[r.parentLink[sw]].NCCLBW
		if len(nics) < 2 || up <= 0 || up > one {
			continue
		}
		k := rates{up, one}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], strings.Join(nics, " and "))
	}
	var out []string
	for _, k := range order {
		each := ""
		if len(groups[k]) > 1 {
			each = " each"
		}
		out = append(out, fmt.Sprintf("%s%s share one PCIe uplink (one switch, or one dual-port adapter: PIX to each other) that NCCL rates at %.0f GB/s, no more than one port's %.0f: a second NIC there adds nothing NCCL's search can use, so it takes one",
			strings.Join(groups[k], "; "), each, float64(k.up), float64(k.one)))
	}
	return out
}

// String renders the summary as a sentence fragment, e.g. "intra-node
// P2P/NVLink; inter-node NET/IB with GPUDirect RDMA over 8 of 8 NICs".
func (s TransportSummary) String() string {
	intra := "none (one GPU per node)"
	if len(s.Intra) > 0 {
		intra = strings.Join(s.Intra, " + ")
	}
	out := "intra-node " + intra
	if s.Net != "" {
		gdr := "with GPUDirect RDMA"
		if !s.GDR {
			gdr = "without GPUDirect RDMA (staged through host memory)"
		} else if s.StagedSends {
			gdr = "with GPUDirect RDMA on receives (sends staged through host memory)"
		}
		switch s.Net {
		case "Socket":
			gdr = "(TCP sockets, no RDMA)"
		case StackTCPX.NCCLNet(), StackTCPXO.NCCLNet():
			if s.GDR {
				// TCPX and TCPXO move the payload between GPU memory and
				// the NIC over TCP: GPUDirect, not RDMA.
				gdr = "with GPUDirect over TCP (GPU memory to the NIC, no RDMA)"
			}
		}
		out += fmt.Sprintf("; inter-node NET/%s %s over %d of %d NICs per node", s.Net, gdr, s.NICsUsed, s.NICsInstalled)
		if s.PXN {
			out += " (PXN: sends through an NVLink peer next to the NIC)"
		}
	}
	return out
}

// MatrixLabels and Matrix print a node like `nvidia-smi topo -m`: GPUs then
// NICs, cells X, NV#, PIX, PXB, PHB, NODE, SYS.
func (r *Resolution) Matrix(node int) (labels []string, cells [][]string, affinity []string) {
	c := r.c
	t := c.Topo
	ne := c.Nodes[node]
	elems := append(append([]ElemID(nil), ne.GPUs...), ne.NICs...)
	for i := range ne.GPUs {
		labels = append(labels, fmt.Sprintf("GPU%d", i))
	}
	for i := range ne.NICs {
		labels = append(labels, fmt.Sprintf("NIC%d", i))
	}
	cells = make([][]string, len(elems))
	for i, a := range elems {
		cells[i] = make([]string, len(elems))
		for j, b := range elems {
			if a == b {
				cells[i][j] = "X"
				continue
			}
			if t.Elem(a).Kind == KindGPU && t.Elem(b).Kind == KindGPU {
				if l, ok := t.LinkBetween(a, b); ok && t.Links[l].Kind == LinkNVLink {
					cells[i][j] = fmt.Sprintf("NV%d", t.Links[l].Lanes)
					continue
				}
				if ne.NVSwitch != None {
					if l, ok := t.LinkBetween(a, ne.NVSwitch); ok {
						cells[i][j] = fmt.Sprintf("NV%d", t.Links[l].Lanes)
						continue
					}
				}
			}
			_, _, name, err := r.PCIePath(a, b)
			if err != nil {
				name = "SYS"
			}
			cells[i][j] = name
		}
	}
	for _, g := range ne.GPUs {
		affinity = append(affinity, fmt.Sprint(t.Elem(g).Socket))
	}
	return labels, cells, affinity
}

// NCCLLog renders NCCL_DEBUG=INFO-style lines for the channels and
// transports collsim's model of NCCL chose: ring orders, per-hop transports
// of the first ring channel, trees and the channel summary.
func (r *Resolution) NCCLLog(tu *Tuner) []string {
	c := r.c
	t := c.Topo
	g := tu.Graphs.Ring
	n := c.NumRanks()
	G := c.GPUsPerNode()
	var out []string
	ver := fmt.Sprintf("NCCL version %s (modelled by collsim)", c.Version)
	out = append(out, ver)
	if c.NumNodes() > 1 {
		var hcas []string
		for i, nic := range r.NICUsable[0] {
			info := t.Elem(nic).NIC
			layer := "IB"
			switch info.Kind {
			case NICRoCE:
				layer = "RoCE"
			case NICTCP:
				layer = "Socket"
			case NICEFA:
				layer = "EFA"
			}
			hcas = append(hcas, fmt.Sprintf("[%d]%s:1/%s", i, info.Device, layer))
		}
		if r.Net == "Socket" {
			out = append(out, "NET/IB : No device found.", "Using network Socket")
		} else {
			out = append(out, fmt.Sprintf("NET/%s : Using %s", r.Net, strings.Join(hcas, " ")), "Using network "+r.Net)
		}
	}
	out = append(out, fmt.Sprintf("comm rank 0 nRanks %d nNodes %d localRanks %d localRank 0", n, c.NumNodes(), G))
	if g.Fallback {
		out = append(out, "Could not find a path for pattern 4, falling back to simple order")
	}
	comm := tu.CommChannels
	rankOf := func(node, local int) int { return node*G + local }
	for ch := 0; ch < comm; ch++ {
		gc := g.Channels[ch%len(g.Channels)]
		var ranks []string
		for node := 0; node < c.NumNodes(); node++ {
			for _, l := range gc.GPUs {
				ranks = append(ranks, fmt.Sprint(rankOf(node, l)))
			}
		}
		out = append(out, fmt.Sprintf("Channel %02d/%02d : %s", ch, comm, strings.Join(ranks, " ")))
	}
	if c.NumNodes() > 1 {
		out = append(out, treesLine(tu, G, comm))
	}
	// Transports of every distinct hop on channel 0 and its duplicates.
	gpus := c.Nodes[0].GPUs
	p2pName := "P2P/IPC"
	if c.Version.AtLeast(19) {
		p2pName = "P2P/CUMEM"
	}
	for ch := 0; ch < len(g.Channels) && ch < comm; ch++ {
		gc := g.Channels[ch]
		for i := range gc.GPUs {
			a, b := gc.GPUs[i], gc.GPUs[(i+1)%len(gc.GPUs)]
			if c.NumNodes() > 1 && i+1 == len(gc.GPUs) {
				nic := r.NICUsable[0][gc.NetOut]
				np := r.NetTo(gpus[a], nic)
				via := fmt.Sprintf("NET/%s/%d", r.Net, gc.NetOut)
				if np.Via != None {
					via = fmt.Sprintf("NET/%s/%d(%d)", r.Net, gc.NetOut, r.LocalIndex(np.Via))
				}
				if np.GDR && np.SendGDR && !np.Socket {
					via += "/GDRDMA"
				}
				out = append(out, fmt.Sprintf("Channel %02d/0 : %d[%d] -> %d[%d] [send] via %s", ch, a, a, G+gc.GPUs[0], gc.GPUs[0], via))
				in := r.NetTo(gpus[gc.GPUs[0]], r.NICUsable[0][gc.NetIn])
				rv := fmt.Sprintf("NET/%s/%d", r.Net, gc.NetIn)
				if in.GDR && !in.Socket {
					rv += "/GDRDMA"
				}
				out = append(out, fmt.Sprintf("Channel %02d/0 : %d[%d] -> %d[%d] [receive] via %s", ch, n-G+a, a, gc.GPUs[0], gc.GPUs[0], rv))
				continue
			}
			if a == b {
				continue
			}
			p := r.GPU(gpus[a], gpus[b])
			via := ""
			switch p.Transport {
			case TransportP2P:
				via = p2pName
				if p.P2PRead {
					via += "/read"
				}
			case TransportSHM:
				via = "SHM/direct/direct"
			default:
				via = fmt.Sprintf("NET/%s/0", r.Net)
			}
			out = append(out, fmt.Sprintf("Channel %02d/0 : %d[%d] -> %d[%d] via %s", ch, a, a, b, b, via))
		}
	}
	if c.NumNodes() > 1 {
		s := r.Summarize(g)
		out = append(out, fmt.Sprintf("Connected all rings, use ring PXN %d GDR %d", b2i(s.PXN), b2i(s.GDR)))
	} else {
		out = append(out, "Connected all rings")
	}
	nvls := 0
	if tu.Graphs.NVLS != nil {
		nvls = tu.NVLSChannels
		out = append(out, "NVLS multicast support is available on dev 0")
	} else if c.GPUModel().SM >= 90 {
		out = append(out, "NVLS multicast support is not available on dev 0")
	}
	p2p := tu.P2PChannels()
	out = append(out, fmt.Sprintf("%d coll channels, %d collnet channels, %d nvls channels, %d p2p channels, %d p2p channels per peer",
		comm, 0, nvls, p2p.Total, p2p.PerPeer))
	return out
}

// treesLine renders rank 0's "Trees [ch] d0/d1/d2->rank->up" line: inside a
// node the tree is the channel's chain, its head links to the heads of the
// child and parent nodes of the double binary tree; channel c uses tree c%2.
func treesLine(tu *Tuner, G, comm int) string {
	trees := DoubleBinaryTree(tu.NNodes)
	var b strings.Builder
	b.WriteString("Trees")
	for ch := 0; ch < comm; ch++ {
		gc := tu.Graphs.Tree.Channels[ch%len(tu.Graphs.Tree.Channels)]
		pos := 0
		for i, l := range gc.GPUs {
			if l == 0 {
				pos = i
			}
		}
		up, downs := -1, []int{}
		if pos+1 < len(gc.GPUs) {
			downs = append(downs, gc.GPUs[pos+1])
		}
		if pos > 0 {
			up = gc.GPUs[pos-1]
		} else {
			t := trees[ch%2]
			if p := t[0]; p >= 0 {
				up = p*G + gc.GPUs[0]
			}
			for v, p := range t {
				if p == 0 {
					downs = append(downs, v*G+gc.GPUs[0])
				}
			}
		}
		for len(downs) < 3 {
			downs = append(downs, -1)
		}
		fmt.Fprintf(&b, " [%d] %d/%d/%d->0->%d", ch, downs[0], downs[1], downs[2], up)
	}
	return b.String()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func pow2Up(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// SortedEnv returns the knobs as NAME=VALUE in name order.
func (k Knobs) SortedEnv() []string {
	keys := make([]string, 0, len(k.Raw))
	for n := range k.Raw {
		keys = append(keys, n)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, n := range keys {
		out[i] = n + "=" + k.Raw[n]
	}
	return out
}
