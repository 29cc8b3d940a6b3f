package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// This file puts other jobs on the fabric (fabric background:). A
// background job runs its collective back to back for as long as the
// job's call, over the NICs of the last Nodes nodes of the cluster
// (assumption: the other tenant's servers sit in those fabric slots and
// share their NIC cables and leaves; the switches see the same flows
// either way). Its traffic is one flow per rail between its nodes: for
// AlltoAll from every node to every other (PXN puts cross-rail bytes on
// the destination's rail), for the ring collectives from each node to
// the next. Each flow competes in the network as one member, for the whole
// call, throttled to the job's duty cycle: the share of an iteration its
// bytes keep the NIC busy against its step latencies (lat.step.net per
// ring step), so a small-message job loads the fabric lightly.

// bgFlow is one background flow: its route and per-member rate cap.
type bgFlow struct {
	route []model.LinkID
	cap   float64
	duty  float64
}

// backgroundFlows lays out the fabric's background jobs.
func (e *Env) backgroundFlows() ([]bgFlow, error) {
	c := e.Cluster
	jobs := c.Fabric.Background()
	if len(jobs) == 0 {
		return nil, nil
	}
	N := c.NumNodes()
	rails := min(len(e.Res.NICUsable[0]), c.GPUsPerNode())
	line := 50.0
	if n := c.Nodes[0].NICs; len(n) > 0 {
		line = float64(c.Topo.Elem(n[0]).NIC.Speed.LineGBps())
	}
	var out []bgFlow
	for j, b := range jobs {
		coll, err := model.ParseCollective(b.Collective)
		if err != nil {
			return nil, fmt.Errorf("sim: background[%d]: %w", j, err)
		}
		size, err := model.ParseBytes(b.Size)
		if err != nil {
			return nil, fmt.Errorf("sim: background[%d]: %w", j, err)
		}
		k := min(b.Nodes, N)
		if k < 2 {
			continue // one node: NVLink only, nothing on the fabric
		}
		first := N - k
		var pairs [][2]int
		steps := 1
		if coll == model.AlltoAll {
			for a := 0; a < k; a++ {
				for bb := 0; bb < k; bb++ {
					if a != bb {
						pairs = append(pairs, [2]int{first + a, first + bb})
					}
				}
			}
		} else {
			for a := 0; a < k; a++ {
				pairs = append(pairs, [2]int{first + a, first + (a+1)%k})
			}
			steps = k - 1
			if coll == model.AllReduce {
				steps = 2 * (k - 1)
			}
		}
		// Bytes each NIC moves per iteration, over its flows.
		ranks := k * c.GPUsPerNode()
		perNIC := float64(size) * coll.BusBWFactor(ranks) * float64(c.GPUsPerNode()) / float64(rails)
		tBW := perNIC / (line * 1e-3) // ps at line rate (1 GB/s = 1e-3 B/ps)
		lat := float64(steps) * float64(e.stepLat(model.LatNet, model.ProtoSimple))
		duty := 1.0
		if tBW+lat > 0 {
			duty = tBW / (tBW + lat)
		}
		flowsPerNIC := float64(max(len(pairs)/k, 1))
		for _, p := range pairs {
			for r := 0; r < rails; r++ {
				x, a := c.Nodes[p[0]].GPUs[r], c.Nodes[p[1]].GPUs[r]
				rt, err := e.netRouteFlow(x, r, a, r, 1000+j, 0)
				if err != nil {
					return nil, fmt.Errorf("sim: background[%d]: %w", j, err)
				}
				rt, _ = e.decorate(rt)
				out = append(out, bgFlow{route: rt, cap: duty * line * 1e-3 / flowsPerNIC, duty: duty})
			}
		}
	}
	return out, nil
}

// addBackground adds the background flows to a call's analytic form: one
// demand each, as long as one member of the call. It returns the flows, for
// addBackgroundOps to put in every DES schedule of the call, and the note
// that says they share the fabric.
func (e *Env) addBackground(f *form) (bg []bgFlow, note string, err error) {
	bg, err = e.backgroundFlows()
	if err != nil || len(bg) == 0 {
		return nil, "", err
	}
	bytes := f.perMemb
	if bytes <= 0 {
		return nil, "", nil
	}
	f.bgCaps = make([]float64, 0, len(bg))
	for _, b := range bg {
		// The analytic engine sees the duty cycle as a share of one
		// member's bytes on every link of the flow.
		f.demands = append(f.demands, demand{route: b.route, bytes: bytes * b.duty, weight: 1})
		f.bgCaps = append(f.bgCaps, b.cap)
	}
	return bg, fmt.Sprintf("%d background flow(s) of %d job(s) share the fabric", len(bg), len(e.Cluster.Fabric.Background())), nil
}

// addBackgroundOps adds one transfer op per background flow to a DES
// schedule, each outlasting the call; it returns how many ops the call's
// own schedule holds (the makespan is taken over those, Result.CallEnd),
// or -1 when there are no background flows.
func addBackgroundOps(s *Schedule, bg []bgFlow) (ours int) {
	if len(bg) == 0 || s == nil {
		return -1
	}
	ours = s.Len()
	for _, f := range bg {
		// 100 s at its rate cap: it outlasts any call it shares the fabric
		// with (it never runs faster than the cap).
		s.Add(Op{Kind: OpTransfer, Route: f.route, Bytes: f.cap * 1e14, RateCap: f.cap, Rank: -1, Unit: -1})
	}
	return ours
}

// ownDemands reports how many of a form's demands are the call's own: the
// background flows addBackground appended come last, and it returns their
// per-member rate caps in order.
func ownDemands(f *form) (int, []float64) {
	return len(f.demands) - len(f.bgCaps), f.bgCaps
}
