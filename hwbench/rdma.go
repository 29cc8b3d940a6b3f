package hwbench

import (
	"context"
	"encoding/json"
	"fmt"
)

// RDMAResult is the rdma probe: RDMA WRITE bandwidth and latency between
// two nodes of a multi-process run, after perftest's ib_write_bw and
// ib_write_lat: rank 0 (the writer) and the first rank of another host
// (the target) each open the first active RDMA port (closest to their
// GPU), connect QPs queue pairs to each other and register host memory
// (pinned on the HCA's NUMA node) and GPU memory (DMA-BUF, else
// nvidia-peermem); the writer then writes host and GPU buffers into the
// target's, Depth writes in flight over all queue pairs, and times them
// with the host clock from the first post to the last completion.
// Latency is the mean time from posting one write to its completion on
// one queue pair, which includes the target's acknowledgement (about a
// round trip; ib_write_lat reports half of a ping-pong instead).
type RDMAResult struct {
	Stamp
	Writer EndpointInfo `json:"writer"`
	Target EndpointInfo `json:"target"`
	QPs    int          `json:"qps"`
	Depth  int          `json:"depth"`
	// Mechanism is how each side registered GPU memory ("dmabuf",
	// "peermem", "none"), writer first.
	Mechanism [2]string       `json:"gpudirect_mechanism"`
	Bandwidth []RDMABandwidth `json:"bandwidth"`
	Latency   []RDMALatency   `json:"latency"`
	Notes     []string        `json:"notes,omitempty"`
}

// rdmaQPs is perftest's -q for the bandwidth runs: several queue pairs
// spread the writes, as NCCL's NCCL_IB_QPS_PER_CONNECTION would.
const rdmaQPs = 4

// rdmaSide is one side's offer: where to connect and what to write to.
type rdmaSide struct {
	Info    EndpointInfo            `json:"info"`
	Regions map[string]RemoteRegion `json:"regions"` // "host", "gpu"
	Mech    string                  `json:"mech"`
	Error   string                  `json:"error,omitempty"`
}

func (r *runner) probeRDMA(ctx context.Context) (err error) {
	if r.boot == nil {
		if _, err := r.b.RDMA(); err != nil {
			return err
		}
		return fmt.Errorf("needs ranks on two hosts (a multi-process run): %w", errSkip)
	}
	// Rank 0 writes to the first rank of the first other host.
	hosts, err := r.boot.AllGather(ctx, []byte(r.machine.Hostname))
	if err != nil {
		return err
	}
	target := -1
	for i, h := range hosts {
		if string(h) != string(hosts[0]) {
			target = i
			break
		}
	}
	role := ""
	switch {
	case target < 0:
		return fmt.Errorf("every rank is on %s: %w", hosts[0], errSkip)
	case r.rank == 0:
		role = "writer"
	case r.rank == target:
		role = "target"
	}
	// Every rank takes part in every exchange (the bootstrap is
	// collective); the others send nothing.
	var mine rdmaSide
	var ep Endpoint
	var regs map[string]Region
	var a *allocator
	cleanup := func() {
		for _, reg := range regs {
			reg.Close()
		}
		if ep != nil {
			ep.Close()
		}
		if a != nil {
			a.freeAll()
		}
	}
	defer cleanup()
	if role != "" {
		var perr error
		ep, regs, a, mine, perr = r.rdmaOpen()
		if perr != nil {
			mine = rdmaSide{Error: oneLine(perr.Error())}
		}
	}
	b, _ := json.Marshal(mine)
	all, err := r.boot.AllGather(ctx, b)
	if err != nil {
		return err
	}
	var sides [2]rdmaSide
	for k, rank := range []int{0, target} {
		if err := json.Unmarshal(all[rank], &sides[k]); err != nil {
			return fmt.Errorf("rank %d sent a bad endpoint: %w", rank, err)
		}
		if sides[k].Error != "" {
			// Both sides still pass the final barrier below.
			err = fmt.Errorf("rank %d (%s): %s", rank, []string{"writer", "target"}[k], sides[k].Error)
			r.boot.AllGather(ctx, nil)
			return err
		}
	}
	// Connect every queue pair to the peer's.
	var werr error
	if role != "" {
		peer := sides[1]
		if role == "target" {
			peer = sides[0]
		}
		werr = r.rdmaConnect(ep, mine.Info, peer.Info)
	}
	b, _ = json.Marshal(errText(werr))
	if all, err = r.boot.AllGather(ctx, b); err != nil {
		return err
	}
	for _, rank := range []int{0, target} {
		var s string
		json.Unmarshal(all[rank], &s)
		if s != "" {
			r.boot.AllGather(ctx, nil)
			return fmt.Errorf("rank %d: connect: %s", rank, s)
		}
	}
	if role == "writer" {
		res := &RDMAResult{Writer: sides[0].Info, Target: sides[1].Info, QPs: rdmaQPs, Depth: gdrDepth,
			Mechanism: [2]string{sides[0].Mech, sides[1].Mech}}
		r.rep.RDMA = res
		werr = r.rdmaWrite(ctx, ep, regs, sides[1].Regions, res)
		res.Stamp = r.stamp()
	}
	// The target keeps its memory registered until the writer is done.
	if _, err := r.boot.AllGather(ctx, []byte(errText(werr))); err != nil {
		return err
	}
	if role == "" {
		return fmt.Errorf("rank 0 writes to rank %d; this rank only joined the exchange: %w", target, errSkip)
	}
	return werr
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return oneLine(err.Error())
}

// rdmaOpen opens this side's endpoint on the first active port and
// registers its buffers.
func (r *runner) rdmaOpen() (Endpoint, map[string]Region, *allocator, rdmaSide, error) {
	var side rdmaSide
	rd, err := r.b.RDMA()
	if err != nil {
		return nil, nil, nil, side, err
	}
	rt, err := r.b.Runtime()
	if err != nil {
		return nil, nil, nil, side, err
	}
	devs, err := rt.Devices()
	if err != nil || len(devs) == 0 {
		return nil, nil, nil, side, fmt.Errorf("no GPU: %v", err)
	}
	hcas, err := rd.HCAs()
	if err != nil {
		return nil, nil, nil, side, err
	}
	sys, _ := readHCAs(r.b.Files())
	var h HCA
	var port HCAPort
	found := false
	for _, x := range hcas {
		for _, p := range x.Ports {
			if p.State == "Active" && !found {
				h, port, found = x, p, true
			}
		}
	}
	if !found {
		return nil, nil, nil, side, fmt.Errorf("no active RDMA port")
	}
	route, err := chooseRoute(port)
	if err != nil {
		return nil, nil, nil, side, err
	}
	numa := -1
	for _, s := range sys {
		if s.Name == h.Name && s.pci != nil {
			numa = s.pci.NUMA
		}
	}
	ep, err := rd.Endpoint(h.Name, port.Port, rdmaQPs)
	if err != nil {
		return nil, nil, nil, side, err
	}
	side.Info = EndpointInfo{Host: r.machine.Hostname, HCA: h.Name, Port: port.Port, LID: route.LID, GID: route.GID, GIDIndex: route.GIDIndex,
		QPNs: ep.QPNs(), MTU: route.MTU, RateGbps: port.RateGbps}
	a := &allocator{rt: rt}
	size := gdrBWSizes[len(gdrBWSizes)-1]
	regs := map[string]Region{}
	side.Regions = map[string]RemoteRegion{}
	hb, err := a.allocPinned(size, numa)
	if err != nil {
		return ep, regs, a, side, err
	}
	reg, err := ep.Register(hb)
	if err != nil {
		return ep, regs, a, side, err
	}
	regs["host"] = reg
	side.Mech = "none"
	gb, err := a.alloc(DeviceMem, devs[0].Index, size)
	if err != nil {
		return ep, regs, a, side, err
	}
	for _, mech := range []string{"dmabuf", "peermem"} {
		var g Region
		var gerr error
		if mech == "peermem" {
			g, gerr = ep.Register(gb)
		} else if d, derr := rt.ExportDMABuf(gb); derr == nil {
			g, gerr = ep.RegisterDMABuf(gb, d)
			rt.CloseDMABuf(d)
		} else {
			gerr = derr
		}
		if gerr == nil {
			regs["gpu"], side.Mech = g, mech
			break
		}
	}
	for k, reg := range regs {
		rr := ep.Remote(reg)
		rr.Size = size
		side.Regions[k] = rr
	}
	return ep, regs, a, side, nil
}

// rdmaConnect connects queue pair i to the peer's queue pair i.
func (r *runner) rdmaConnect(ep Endpoint, mine, peer EndpointInfo) error {
	if len(peer.QPNs) != len(mine.QPNs) {
		return fmt.Errorf("peer has %d queue pairs, this side %d", len(peer.QPNs), len(mine.QPNs))
	}
	rt := Route{Port: mine.Port, LID: peer.LID, GIDIndex: -1, MTU: min(mine.MTU, peer.MTU)}
	if peer.GID != "" && mine.GIDIndex >= 0 {
		rt.GIDIndex, rt.GID = mine.GIDIndex, peer.GID
	}
	for i, q := range peer.QPNs {
		if err := ep.Connect(i, q, rt); err != nil {
			return err
		}
	}
	return nil
}

// rdmaWrite measures the writer's side.
func (r *runner) rdmaWrite(ctx context.Context, ep Endpoint, regs map[string]Region, remote map[string]RemoteRegion, res *RDMAResult) error {
	for _, c := range [][2]string{{"host", "host"}, {"gpu", "gpu"}, {"host", "gpu"}, {"gpu", "host"}} {
		src, ok := regs[c[0]]
		dst, ok2 := remote[c[1]]
		if !ok || !ok2 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s to %s not measured: no GPUDirect RDMA on one side", c[0], c[1]))
			continue
		}
		for _, sz := range gdrBWSizes {
			if err := ctx.Err(); err != nil {
				return err
			}
			it := gdrIters(sz)
			el, err := ep.WriteBandwidth(src, dst, sz, it, gdrDepth)
			if err != nil {
				return fmt.Errorf("%s to %s, %d bytes: %w", c[0], c[1], sz, err)
			}
			res.Bandwidth = append(res.Bandwidth, RDMABandwidth{Src: c[0], Dst: c[1], Bytes: sz, Iters: it, Depth: gdrDepth, GBps: gbps(float64(sz)*float64(it), el)})
		}
		if c[0] == c[1] {
			for _, sz := range gdrLatSizes {
				el, err := ep.WriteLatency(src, dst, sz, gdrLatIters)
				if err != nil {
					return fmt.Errorf("latency %s to %s, %d bytes: %w", c[0], c[1], sz, err)
				}
				res.Latency = append(res.Latency, RDMALatency{Src: c[0], Dst: c[1], Bytes: sz, Iters: gdrLatIters, Us: Num(el.Seconds() * 1e6 / gdrLatIters)})
			}
		}
		r.progressf("rdma %s->%s %s -> %s: done", c[0], c[1], res.Writer.Host, res.Target.Host)
	}
	return nil
}
