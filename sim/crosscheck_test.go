package sim_test

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// crossCase is one row of the DES/analytic table.
type crossCase struct {
	preset string
	nodes  int
	coll   model.Collective
	algo   model.Algo
}

// gap names the effect the closed form cannot see in a row and bounds its
// size (the largest |DES - analytic| / analytic the row may show); rows
// without one are held to 5%. The bounds are the largest differences the
// table showed on 1, 2 and 16 nodes, rounded up; both effects are latency
// and pipeline-fill terms that shrink as the size grows (at 8 GiB on 16-128
// dgx-h100 nodes the engines agree within 0.3%, TestScaleCurve). A row
// beyond its bound still passes when the difference lies inside the
// envelope computed from the row (crossEnvelope): at 128 nodes the closed
// form's serial latency and fill grow past the bounds of the small tables.
func gap(c crossCase, size model.Bytes, ranks int) (effect string, bound float64) {
	const ringLat = "ring step latency: the closed form pays each step's slice and hop latency in series; the DES overlaps hop latency with the other slices' sends and the next loop"
	const fill = "pipeline fill: the closed form fills the chain or tree hop by hop at the rate one channel group gets on an idle hop; the DES shares each hop with the groups that reach it at once"
	ring := c.algo == model.AlgoRing && c.coll != model.Broadcast
	chain := c.coll == model.Broadcast
	longChain := c.algo == model.AlgoTree && ranks/max(c.nodes, 1) >= 64
	if size >= 1<<30 {
		switch {
		case ring && ranks >= 128:
			return ringLat, 0.20
		case chain && ranks >= 128:
			return fill, 0.16
		case longChain && c.nodes > 1:
			// The 72-GPU chains below, with the tree's hops between
			// racks after them: +4.3% on 2 racks, +7.5% on 16.
			return fill, 0.10
		}
		return "", 0.05
	}
	switch {
	case chain && c.nodes > 1:
		return fill, 0.45
	case longChain && c.nodes == 1:
		// A chain of 72 GPUs (one NVL72 rack): each edge runs on its share
		// of the CTA (treeSplit, 30% down for LL128), and the DES fills the
		// 71 down hops unit by unit at that share where the closed form
		// fills at the steady rate: +34% at 64 MiB, -0.1% at 1 GiB.
		return fill, 0.36
	case longChain:
		// The same chains in every rack, the inter-rack tree after them:
		// +41% on 2 racks and +42.5% on 16 at 64 MiB (+40% on 2 before
		// tree.eff, which both engines apply alike).
		return fill, 0.45
	case c.algo == model.AlgoTree || c.algo == model.AlgoNVLSTree || chain:
		return fill, 0.27
	case ring && c.nodes > 1:
		return ringLat, 0.25 // dgx-b200 x2 AllGather 64 MiB: -22.6%
	}
	return "", 0.05
}

func (c crossCase) key() string {
	return fmt.Sprintf("%s/%d/%s/%s", c.preset, c.nodes, c.coll, c.algo)
}

// crossCases lists every preset x algorithm NCCL can run on it x node
// count: ring and tree AllReduce, NVLS (one node) and NVLSTree (several)
// where the node has NVLink SHARP, ring Broadcast, direct AlltoAll.
func crossCases(t *testing.T, nodes []int) []crossCase {
	var out []crossCase
	only := os.Getenv("COLLSIM_CROSS_PRESETS") // comma-separated preset names, to rerun a few rows
	for _, p := range scenarios.Presets() {
		if testing.Short() && p.Name == "gb200-nvl72" {
			continue // 72 GPUs per node: the full run covers it
		}
		if only != "" && !slices.Contains(strings.Split(only, ","), p.Name) {
			continue
		}
		for _, n := range nodes {
			o := scenarios.Overrides{Node: p.Name, Nodes: n}
			if n > 1 {
				o.NICs = ""
			}
			e := newEnv(t, o)
			for _, tc := range []struct {
				coll model.Collective
				algo model.Algo
			}{
				{model.AllReduce, model.AlgoRing}, {model.AllReduce, model.AlgoTree},
				{model.AllReduce, model.AlgoNVLS}, {model.AllReduce, model.AlgoNVLSTree},
				{model.AllGather, model.AlgoRing}, {model.Broadcast, model.AlgoRing},
				{model.AlltoAll, model.AlgoDirect},
			} {
				a := tc.algo
				if _, err := e.Tuner.Select(tc.coll, 64<<20, &a, nil); err != nil {
					continue // NCCL cannot run it here
				}
				out = append(out, crossCase{p.Name, n, tc.coll, tc.algo})
			}
		}
	}
	return out
}

// runCross holds DES and analytic within 5% (or a named gap) at the sizes
// for every case.
func runCross(t *testing.T, nodes []int, sizes []model.Bytes) (refused int) {
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-34s %6s %12s %12s %8s\n", "case", "size", "des us", "analytic us", "diff")
	for _, c := range crossCases(t, nodes) {
		e := newEnv(t, scenarios.Overrides{Node: c.preset, Nodes: c.nodes})
		for _, size := range sizes {
			a := c.algo
			req := sim.Request{Coll: c.coll, Algo: &a, ElemSize: 4}
			req.Engine = sim.EngineDES
			d, err := e.Predict(t.Context(), req, size)
			var be *sim.BudgetError
			if errors.As(err, &be) {
				// A documented limit, not a disagreement: the row is listed
				// as refused with the estimate, and the caller counts it.
				fmt.Fprintf(&table, "%-34s %6s refused by the %s budget: %s\n", c.key(), model.FormatBytes(size), be.Budget, err)
				refused++
				continue
			}
			if err != nil {
				t.Errorf("%s %s: DES: %v", c.key(), model.FormatBytes(size), err)
				continue
			}
			req.Engine = sim.EngineAnalytic
			an := predictReq(t, e, req, size)
			rel := (d.TimeUs - an.TimeUs) / an.TimeUs
			env := envelope(c, e, an, d)
			fmt.Fprintf(&table, "%-34s %6s %12.1f %12.1f %+7.2f%%  %s\n", c.key(), model.FormatBytes(size), d.TimeUs, an.TimeUs, 100*rel, env.words())
			if env.tbw > 0 && d.TimeUs < env.tbw*(1-1e-3) {
				t.Errorf("%s %s: DES %.1f us is faster than the busiest link allows (%.1f us)", c.key(), model.FormatBytes(size), d.TimeUs, env.tbw)
			}
			effect, bound := gap(c, size, e.Cluster.NumRanks())
			if math.Abs(rel) <= bound || env.holds(effect, rel) {
				continue
			}
			if effect == "" {
				t.Errorf("%s %s: DES %.1f us vs analytic %.1f us (%+.1f%%)", c.key(), model.FormatBytes(size), d.TimeUs, an.TimeUs, 100*rel)
				continue
			}
			t.Errorf("%s %s: DES %.1f us vs analytic %.1f (%+.1f%%), beyond the %.0f%% bound of the named effect (%s) and its envelope (%s)",
				c.key(), model.FormatBytes(size), d.TimeUs, an.TimeUs, 100*rel, 100*bound, effect, env.words())
		}
	}
	t.Log(table.String())
	return refused
}

// crossEnvelope is the size of the effects the closed form cannot see in
// one row, computed from the row itself rather than measured on a table:
//   - tbw is the busiest link's busy time in the analytic traffic (its
//     bytes over its rate), which no schedule can beat;
//   - share is the part of the closed form's time above tbw: the latency
//     and fill it charges in series. The DES overlaps them with other
//     slices and loops (ring step latency), so it can be faster by at most
//     that share;
//   - groups is the number of channel groups that share one NIC: the
//     closed form fills a chain or tree hop at one group's idle-hop rate,
//     the DES shares the hop among the groups that reach it at once, so
//     its fill can be up to groups times the closed form's.
type crossEnvelope struct {
	tbw, share float64
	groups     int
}

func envelope(c crossCase, e *sim.Env, an, d sim.Point) crossEnvelope {
	var env crossEnvelope
	if len(an.Utilisation) > 0 && an.TimeUs > 0 {
		env.tbw = an.Utilisation[0].Busy * an.TimeUs
		env.share = math.Max(0, 1-env.tbw/an.TimeUs)
	}
	env.groups = 1
	if nics := len(e.Cluster.Nodes[0].NICs); c.nodes > 1 && nics > 0 && d.Choice.Channels > nics {
		env.groups = (d.Choice.Channels + nics - 1) / nics
	}
	return env
}

// holds says whether a difference rel (DES/analytic - 1) of a row whose
// named effect is effect lies in the envelope, with 5% for everything else.
func (env crossEnvelope) holds(effect string, rel float64) bool {
	if effect == "" || env.tbw <= 0 {
		return false
	}
	lo := -env.share - 0.05
	hi := 0.05
	if strings.HasPrefix(effect, "pipeline fill") {
		hi += float64(env.groups-1) * env.share
	}
	return rel >= lo && rel <= hi
}

func (env crossEnvelope) words() string {
	if env.tbw <= 0 {
		return ""
	}
	return fmt.Sprintf("(closed form above its busiest link: %.0f%%; %d channel group(s) per NIC)", 100*env.share, env.groups)
}

// TestDESMatchesAnalyticTable: one node of every preset at 64 MiB (and
// 1 GiB without -short); 2, 16 and 128 nodes in
// TestDESMatchesAnalyticTableLarge.
func TestDESMatchesAnalyticTable(t *testing.T) {
	sizes := []model.Bytes{64 << 20, 1 << 30}
	if testing.Short() {
		sizes = sizes[:1]
	}
	if n := runCross(t, []int{1}, sizes); n > 0 {
		t.Errorf("%d rows refused by a DES budget on one node", n)
	}
}

func TestDESMatchesAnalyticTableLarge(t *testing.T) {
	if testing.Short() || os.Getenv("COLLSIM_LONG_TESTS") == "" {
		// Tens of minutes on two cores, past go test's default timeout:
		// run with COLLSIM_LONG_TESTS=1 go test -timeout 2h ./sim
		// (COLLSIM_CROSS_PRESETS=dgx-a100,dgx1-v100 for a few presets).
		t.Skip("2, 16 and 128 nodes of every preset through the DES; set COLLSIM_LONG_TESTS=1 to run")
	}
	for _, n := range []int{2, 16, 128} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			if r := runCross(t, []int{n}, []model.Bytes{64 << 20, 1 << 30}); r > 0 {
				// The limit today (72-GPU nodes at 128 nodes need
				// 9-20 GiB): listed in the table, counted here.
				t.Logf("%d rows refused by a DES budget (listed above)", r)
			}
		})
	}
}

// TestTrafficMatchesSchedule: the analytic engine's traffic matrix and the
// DES schedule of every unit and node (built independently) put the same
// bytes on every link, for every algorithm on one and two nodes and on a
// leaf-spine fabric.
func TestTrafficMatchesSchedule(t *testing.T) {
	ls := resolve(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 4, NICs: "8x400G-ib"})
	ls.Fabric = model.FabricSpec{Kind: "leaf-spine", NodesPerLeaf: 2, Oversubscription: 1}
	envs := map[string]*sim.Env{
		"dgx-h100 x1":             newEnv(t, scenarios.Overrides{Node: "dgx-h100"}),
		"dgx-h100 x2":             newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2}),
		"dgx-a100 x2":             newEnv(t, scenarios.Overrides{Node: "dgx-a100", Nodes: 2}),
		"dgx-h100 x4 leaf-spine":  specEnv(t, ls),
		"pcie-gpu-server x2":      newEnv(t, scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2}),
		"hgx-h100-4gpu x2 4x200G": newEnv(t, scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 2, NICs: "4x200G-ib"}),
		"dgx-h100 x5, 1 GPU each": newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 5, GPUsPerNode: 1}),
	}
	for name, e := range envs {
		for _, tc := range everyCollAlgo {
			a := tc.algo
			if _, err := e.Tuner.Select(tc.coll, 16<<20, &a, nil); err != nil {
				continue
			}
			des, an, err := e.Loads(tc.coll, tc.algo, 16<<20)
			if err != nil {
				t.Errorf("%s %s %s: %v", name, tc.coll, tc.algo, err)
				continue
			}
			if e.Symmetric() && tc.algo == model.AlgoDirect {
				// The closed form routes only what node 0 sends or receives:
				// node 0's links and the most loaded link must agree.
				var md, ma float64
				for l := range des {
					if c := e.Capacity()[l]; c > 0 {
						md, ma = math.Max(md, des[l]/c), math.Max(ma, an[l]/c)
					}
				}
				if math.Abs(md-ma) > 1e-6*md {
					t.Errorf("%s %s: most loaded link %.0f ps in the schedule, %.0f ps in the traffic matrix", name, tc.coll, md, ma)
				}
				continue
			}
			for l := range des {
				if d := math.Abs(des[l] - an[l]); d > 1e-6*math.Max(des[l], an[l])+1 {
					t.Errorf("%s %s %s: link %s carries %.0f B in the schedule, %.0f B in the traffic matrix", name, tc.coll, tc.algo, e.LinkName(model.LinkID(l)), des[l], an[l])
					break
				}
			}
		}
	}
}

// TestScaleCurve: dgx-h100 with 8x400G IB, AllReduce 8 GiB at 16, 32, 64
// and 128 nodes, NCCL's choice: the NIC-crossing ring at 16 nodes (its
// graph's 8 x 48 GB/s beats NVLSTree in NCCL's tuning model), NVLSTree
// from 32, where the ring's latency has grown with its rank count. The DES
// is within 5% of the analytic engine at every count but where a ring is
// bound by its NICs: the closed form pays each ring step's synchronisation
// after the step's slices (formRing), where the DES overlaps it with the
// slices still in flight, which costs the closed form 5.3% at 16 nodes
// (360.6 against 379.8 GB/s), so the ring is held within 6%. From one
// count to the next with the same algorithm, busbw changes by no more than
// the closed form says it should plus 2%: the tree deepens by one level
// per doubling, which costs a little pipeline fill and nothing else; where
// the algorithm changes the DES still moves by at most 2%.
func TestScaleCurve(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 8 GiB on up to 1,024 GPUs")
	}
	var prevD, prevA float64
	var prevAlgo model.Algo
	for _, n := range []int{16, 32, 64, 128} {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, NICs: "8x400G-ib"})
		d := predictReq(t, e, sim.Request{Coll: model.AllReduce, Engine: sim.EngineDES}, 8<<30)
		a := predictReq(t, e, sim.Request{Coll: model.AllReduce, Engine: sim.EngineAnalytic}, 8<<30)
		rel := (d.BusBW - a.BusBW) / a.BusBW
		t.Logf("%4d nodes: %s DES %.1f GB/s, analytic %.1f GB/s (%+.2f%%); %s", n, d.Choice.Algo, d.BusBW, a.BusBW, 100*rel, d.Note)
		tol := 0.05
		if d.Choice.Algo == model.AlgoRing && d.BottleneckClass == "NIC" {
			tol = 0.06
		}
		if d.Engine != sim.EngineDES || d.Choice.Algo != a.Choice.Algo || math.Abs(rel) > tol {
			t.Errorf("%d nodes: DES (%s, %s) %.1f GB/s vs analytic (%s) %.1f (%+.1f%%, bound %.0f%%)", n, d.Engine, d.Choice.Algo, d.BusBW, a.Choice.Algo, a.BusBW, 100*rel, 100*tol)
		}
		if prevD > 0 {
			step, want := d.BusBW/prevD, a.BusBW/prevA
			if d.Choice.Algo != prevAlgo {
				want = 1
			}
			if math.Abs(step-want) > 0.02 {
				t.Errorf("%d nodes: DES busbw moves by %.3fx from the previous count (%s to %s), want %.3fx", n, step, prevAlgo, d.Choice.Algo, want)
			}
		}
		prevD, prevA, prevAlgo = d.BusBW, a.BusBW, d.Choice.Algo
	}
}

// TestNVLSTreeFillMatchesDES: NVLSTree AllReduce on dgx-h100 with 8x400G
// IB, where the pipeline fill is most of the call. At 8 MiB a channel's
// block is one pipeline unit (NVLSTree's 64 KiB chunk from 4 nodes, 8
// heads), so the call is all fill; at 64 MiB eight units. In NCCL's double
// binary tree the children of a node send their partial sums into its NIC
// together and it sends the result to all of them at once (device/
// all_reduce.h, NVLS_TREE: FanAsymmetric<3, 1> up, <1, 3> down); the DES
// runs every edge, the closed form fills each network hop of the deepest
// chain with the siblings that share it (treePathFans). Before it filled
// each hop alone and was 10-11% faster than the DES at 8 MiB on 4-16 nodes.
func TestNVLSTreeFillMatchesDES(t *testing.T) {
	nvlsTree := model.AlgoNVLSTree
	for _, n := range []int{4, 8, 16} {
		e := newEnv(t, scenarios.Overrides{Node: "dgx-h100", Nodes: n, NICs: "8x400G-ib"})
		for _, tc := range []struct {
			size model.Bytes
			tol  float64
		}{{8 << 20, 0.01}, {64 << 20, 0.05}} {
			req := sim.Request{Coll: model.AllReduce, Algo: &nvlsTree}
			req.Engine = sim.EngineDES
			d := predictReq(t, e, req, tc.size)
			req.Engine = sim.EngineAnalytic
			a := predictReq(t, e, req, tc.size)
			rel := (d.TimeUs - a.TimeUs) / a.TimeUs
			t.Logf("%2d nodes %s: DES %.1f us, analytic %.1f us (%+.2f%%)", n, model.FormatBytes(tc.size), d.TimeUs, a.TimeUs, 100*rel)
			if math.Abs(rel) > tc.tol {
				t.Errorf("%d nodes %s: DES %.1f us vs analytic %.1f us (%+.1f%%, bound %.0f%%)", n, model.FormatBytes(tc.size), d.TimeUs, a.TimeUs, 100*rel, 100*tc.tol)
			}
		}
	}
}

// everyCollAlgo is every collective with each algorithm that schedules it,
// the rows the table tests walk.
var everyCollAlgo = []struct {
	coll model.Collective
	algo model.Algo
}{
	{model.AllReduce, model.AlgoRing}, {model.AllReduce, model.AlgoTree}, {model.AllReduce, model.AlgoNVLS},
	{model.AllReduce, model.AlgoNVLSTree}, {model.AllGather, model.AlgoRing}, {model.ReduceScatter, model.AlgoRing},
	{model.Broadcast, model.AlgoRing}, {model.Reduce, model.AlgoRing}, {model.AlltoAll, model.AlgoDirect}, {model.SendRecv, model.AlgoDirect},
	{model.AllGather, model.AlgoPAT}, {model.ReduceScatter, model.AlgoPAT},
}
