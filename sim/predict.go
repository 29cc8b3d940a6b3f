package sim

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/collsim/collsim/model"
)

// EngineKind selects how a call is timed.
type EngineKind string

// Engines.
const (
	// EngineDES executes the schedule DAG in the discrete-event flow simulator.
	EngineDES EngineKind = "des"
	// EngineAnalytic evaluates the same schedule in closed form: NCCL's
	// latency + size/bandwidth form, with the bandwidth of the most loaded
	// link and the per-step pipeline bubbles of the schedule.
	EngineAnalytic EngineKind = "analytic"
)

// ParseEngine reads an engine name.
func ParseEngine(s string) (EngineKind, error) {
	switch EngineKind(s) {
	case EngineDES, EngineAnalytic:
		return EngineKind(s), nil
	}
	return "", fmt.Errorf("unknown engine %q (known: des, analytic)", s)
}

// Point is the prediction for one size, in nccl-tests terms.
type Point struct {
	// Size is nccl-tests' size column in bytes; Count its count column.
	Size  model.Bytes
	Count int64
	// TimeUs is the predicted time of one call in microseconds.
	TimeUs float64
	// AlgBW and BusBW are in GB/s (1e9 B/s) as nccl-tests computes them.
	AlgBW, BusBW float64
	// Choice is NCCL's algorithm, protocol and channel choice for the size.
	Choice model.Choice
	// Bottleneck names the most loaded link and its class; Utilisation is
	// the busiest links' share of the call time (0..1), busiest first.
	Bottleneck      string
	BottleneckClass string
	Utilisation     []LinkUse
	// Events and Ops are DES statistics (0 for the analytic engine).
	Events int64
	Ops    int
	// Note explains a simulation shortcut taken, empty otherwise.
	Note string
}

// LinkUse is one link's load during a call.
type LinkUse struct {
	Link string
	// Busy is the link's bytes divided by its capacity, over the call time.
	Busy float64
}

// Request is what to predict.
type Request struct {
	Coll model.Collective
	// Sizes are requested sizes in bytes (nccl-tests -b/-e/-f).
	Sizes []model.Bytes
	// ElemSize is the datatype size (4 for float).
	ElemSize int
	Engine   EngineKind
	// Algo and Proto force a choice (NCCL_ALGO/NCCL_PROTO style); nil = NCCL's.
	Algo  *model.Algo
	Proto *model.Proto
}

// Sweep predicts every size of req. Sizes are adjusted as nccl-tests does
// (per-rank counts rounded for AllGather, ReduceScatter, AlltoAll).
func (e *Env) Sweep(ctx context.Context, req Request) ([]Point, error) {
	if req.ElemSize <= 0 {
		req.ElemSize = 4
	}
	out := make([]Point, 0, len(req.Sizes))
	for _, s := range req.Sizes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := e.Predict(ctx, req, s)
		if err != nil {
			return nil, fmt.Errorf("size %s: %w", model.FormatBytes(s), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Predict times one requested size.
func (e *Env) Predict(ctx context.Context, req Request, requested model.Bytes) (Point, error) {
	c := e.Cluster
	n := c.NumRanks()
	size, count := req.Coll.TestSize(requested, req.ElemSize, n)
	pt := Point{Size: size, Count: count}
	algo := req.Algo
	if algo == nil && (req.Coll == model.AlltoAll || req.Coll == model.SendRecv) {
		d := model.AlgoDirect
		algo = &d
	}
	choice, err := e.Tuner.Select(req.Coll, size, algo, req.Proto)
	if err != nil {
		return pt, err
	}
	pt.Choice = choice
	if size == 0 {
		return pt, nil
	}
	call := Call{Coll: req.Coll, Bytes: size, Choice: choice}
	pr, err := e.program(call, req.Engine == EngineDES)
	if err != nil {
		return pt, err
	}
	ours, err := e.addBackground(pr)
	if err != nil {
		return pt, err
	}
	at, loads, capBound := e.analytic(pr)
	if cg := e.physics(pr, at); cg != nil {
		// Congestion physics (physics_congestion.go): per-call capacities
		// and latencies for both engines.
		pr.caps = cg.caps
		pr.latHop += cg.maxExtraLat()
		cg.apply(pr.sched)
		pr.Note = strings.Join(append(nonEmpty(pr.Note), cg.notes...), "; ")
		at, loads, capBound = e.analytic(pr)
	}
	pt.Note = e.withFabricNotes(pr.Note)
	t := at
	if req.Engine == EngineDES && pr.sched != nil && len(pr.sched.Ops) > 1 {
		res, err := Execute(ctx, pr.sched, e.capsOf(pr), ExecOptions{RecordOpTimes: ours >= 0})
		if err != nil {
			return pt, err
		}
		t = res.Makespan
		if ours >= 0 {
			t = callMakespan(res, ours)
		}
		pt.Events, pt.Ops = res.Events, len(pr.sched.Ops)
	}
	pt.TimeUs = t.Microseconds()
	if pt.TimeUs > 0 {
		pt.AlgBW = float64(size) / (pt.TimeUs * 1e3)
		pt.BusBW = pt.AlgBW * req.Coll.BusBWFactor(n)
	}
	e.bottleneck(&pt, loads, t)
	if len(pt.Utilisation) > 0 {
		// Name the fabric mechanism behind a fabric bottleneck.
		for l := range loads {
			if e.LinkName(model.LinkID(l)) == pt.Bottleneck {
				if m := e.fabricMechanism(pr, model.LinkID(l)); m != "" {
					pt.Bottleneck += " (" + m + ")"
				}
				break
			}
		}
	}
	if capBound.rate > 0 {
		pt.BottleneckClass = "channel ceiling"
		pt.Bottleneck = e.capLabel(capBound, choice.Proto)
	}
	return pt, nil
}

// analytic returns the closed-form time of a program, the per-link load
// (bytes) it implies, and the binding per-member rate cap when a cap rather
// than a link limits the call (0 otherwise).
func (e *Env) analytic(pr *prog) (model.Time, []float64, ceiling) {
	caps := e.capsOf(pr)
	loads := make([]float64, len(caps))
	var tCap float64
	var bindCap ceiling
	for _, fc := range pr.classes {
		w := float64(max(fc.weight, 1))
		for _, l := range fc.route {
			loads[l] += fc.bytes * w
		}
		if c := fc.ceil; c.rate > 0 && fc.bytes/c.rate > tCap {
			tCap, bindCap = fc.bytes/c.rate, c
		}
	}
	var tBW float64
	for l, ld := range loads {
		if ld > 0 && caps[l] > 0 {
			tBW = math.Max(tBW, ld/caps[l])
		}
	}
	tData := math.Max(tBW, tCap) // ps for one member's bytes
	if tCap <= tBW*1.001 {
		bindCap = ceiling{}
	}
	if pr.perMemb <= 0 || tData <= 0 {
		return pr.base + pr.latHop, loads, ceiling{}
	}
	rate := pr.perMemb / tData // wire bytes per ps per member
	lat := float64(pr.latHop)
	eff := unitEff(pr)
	var total float64
	switch pr.kind {
	case "ring":
		// Each step moves its slices, then pays the step's synchronisation
		// (the sender's fence and flag, the receiver's poll before it
		// forwards; across nodes the proxy's completion): the next step
		// waits for it, so it adds to the transfer instead of hiding under
		// the other slices, as NCCL's own model adds nsteps x hwLat to
		// bytes/bw (tuning.cc ncclTopoGetAlgoTime). It shows at mid sizes:
		// 8x H100 AllGather at 64 MiB takes 205 us where the transfer
		// alone takes 174 (xxrjun file); 8x A100 AllReduce at 32 MiB 378
		// against 253 (thanos file).
		for _, u := range pr.units {
			st := u / float64(pr.slices) / eff / rate
			step := math.Max(float64(pr.slices)*st, st+lat)
			if pr.syncAfterStep {
				step = float64(pr.slices)*st + lat
			}
			total += float64(pr.steps) * step
		}
	case "chain", "tree":
		// Steady state at the bottleneck rate for all but the first unit;
		// the first unit fills the pipeline hop by hop at the rate a single
		// channel gets on an otherwise idle hop (the phases of a deep
		// pipeline do not all load the links at once while it fills).
		alone := math.Inf(1)
		for _, fc := range pr.classes {
			r := math.Inf(1)
			if fc.ceil.rate > 0 {
				r = fc.ceil.rate
			}
			for _, l := range fc.route {
				r = math.Min(r, caps[l]/float64(max(fc.weight, 1)))
			}
			alone = math.Min(alone, r)
		}
		alone = math.Max(alone, rate)
		first := pr.units[0] / eff
		path := float64(pr.latPath)
		if path == 0 {
			path = float64(pr.steps) * lat
		}
		total = (sumUnits(pr.units)/eff-first)/rate + float64(pr.steps)*first/alone + path
	case "nvls":
		// Each unit moves u*perMemb/sum(units) wire bytes per GPU each way;
		// one extra unit time fills the reduce/multicast pipeline.
		wirePerPayload := pr.perMemb / sumUnits(pr.units)
		for _, u := range pr.units {
			total += u * wirePerPayload / rate
		}
		total += 2*lat + pr.units[0]*wirePerPayload/rate
	default: // direct
		total = tData + lat
	}
	return pr.base + model.Time(math.Ceil(total)), loads, bindCap
}

// unitEff converts pipeline-unit payload to wire bytes: perMemb is wire
// bytes, units are payload, so their ratio is the protocol efficiency.
func unitEff(pr *prog) float64 {
	s := sumUnits(pr.units)
	if pr.kind == "ring" {
		s *= float64(pr.steps)
	}
	if s <= 0 || pr.perMemb <= 0 {
		return 1
	}
	return s / pr.perMemb
}

func sumUnits(u []float64) float64 {
	var s float64
	for _, x := range u {
		s += x
	}
	return s
}

// bottleneck fills the most loaded links of a call.
func (e *Env) bottleneck(pt *Point, loads []float64, t model.Time) {
	if t <= 0 {
		return
	}
	type lu struct {
		id   int
		busy float64
	}
	var us []lu
	for l, ld := range loads {
		if ld > 0 && e.caps[l] > 0 {
			us = append(us, lu{l, ld / e.caps[l] / float64(t)})
		}
	}
	sort.SliceStable(us, func(i, j int) bool {
		if us[i].busy != us[j].busy {
			return us[i].busy > us[j].busy
		}
		return us[i].id < us[j].id
	})
	for i, u := range us {
		if i >= 8 {
			break
		}
		pt.Utilisation = append(pt.Utilisation, LinkUse{Link: e.LinkName(model.LinkID(u.id)), Busy: math.Min(u.busy, 1)})
	}
	if len(us) > 0 {
		pt.Bottleneck = e.LinkName(model.LinkID(us[0].id))
		pt.BottleneckClass = e.linkClassName(model.LinkID(us[0].id))
	}
}

// linkClassName names the class of a link for summaries: "NVLink",
// "PCIe", "NIC", "fabric", "inter-socket", "host memory", "cross-socket P2P".
func (e *Env) linkClassName(id model.LinkID) string {
	t := e.Cluster.Topo
	if id >= e.xsockBase {
		return "cross-socket P2P"
	}
	if int(id) >= len(t.Links) {
		return "fabric" // a bundle of parallel fabric links
	}
	l := &t.Links[id]
	switch l.Kind {
	case model.LinkNVLink:
		return "NVLink"
	case model.LinkPCIe:
		return "PCIe"
	case model.LinkSMP:
		return "inter-socket"
	case model.LinkMem:
		return "host memory"
	case model.LinkNet:
		if t.Elem(l.From).Kind == model.KindNIC || t.Elem(l.To).Kind == model.KindNIC {
			return "NIC"
		}
		return "fabric"
	}
	return l.Kind.String()
}
