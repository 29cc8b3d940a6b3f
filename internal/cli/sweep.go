package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

// defaultWithin is the recommendation's tolerance when neither --within
// nor the sweep gives one: the cheapest design within 10% of the best
// throughput.
const defaultWithin = 0.10

func sweepCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "sweep",
		Usage:     "what-if grid: cost, performance, cost per throughput, scaling efficiency and the Pareto-optimal designs",
		ArgsUsage: "SWEEP.yaml",
		UsageText: "collsim sweep SWEEP.yaml [--prices FILE] [--engine analytic|des] [--profile FILE] [--within 10%] [--format table|json|csv] [--report FILE.html|.md]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "prices", Usage: "price catalog `FILE` (default: the embedded EXAMPLE prices; docs/sweep.md has the schema)"},
			engineFlag(sim.EngineAnalytic),
			profileFlag(),
			&cli.StringFlag{Name: "within", Usage: "recommend the cheapest design within `FRACTION` of the best throughput (default: the sweep's within, else 10%)"},
			formatFlag(),
			reportFlag(),
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() != 1 {
				return badInputf("sweep: give one sweep YAML file (collsim sweep SWEEP.yaml), got %d arguments", c.Args().Len())
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			engine, err := sim.ParseEngine(c.String("engine"))
			if err != nil {
				return badInputf("--engine: %v", err)
			}
			rpath, err := reportPath(c, "sweep")
			if err != nil {
				return err
			}
			s, err := scenarios.LoadSweepFile(c.Args().First())
			if err != nil {
				return badInput(err)
			}
			within := s.Within
			if c.IsSet("within") {
				if within, err = scenarios.ParseFraction(c.String("within")); err != nil || within <= 0 || within >= 1 {
					return badInputf("sweep: --within: want a fraction between 0 and 1 such as 10%% or 0.1, got %q", c.String("within"))
				}
			}
			if within == 0 {
				within = defaultWithin
			}
			cat, err := loadPrices(c.String("prices"))
			if err != nil {
				return err
			}
			params, err := profileParams(c.String("profile"))
			if err != nil {
				return err
			}
			res, err := runSweep(c, s, cat, params, engine)
			if err != nil {
				return err
			}
			res.within, res.profile = within, c.String("profile")
			res.recommend()
			return printResult(e, res, format, "sweep", rpath, func() (*reports.Document, error) { return sweepReport(e, res) })
		},
	}
}

// loadPrices reads --prices, or the embedded example catalog.
func loadPrices(path string) (*scenarios.PriceCatalog, error) {
	if path == "" {
		cat, err := scenarios.ExamplePrices()
		if err != nil {
			return nil, fmt.Errorf("sweep: embedded prices: %w", err)
		}
		return cat, nil
	}
	cat, err := scenarios.LoadPricesFile(path)
	if err != nil {
		return nil, badInput(err)
	}
	return cat, nil
}

// sweepDesign is one design of a sweep with its cost and results.
type sweepDesign struct {
	scenarios.Design
	cost scenarios.Cost
	modelled
	// throughput is the metric's throughput (busbw, samples/s, ...).
	throughput float64
	eff        float64
	effOK      bool
	pareto     bool
}

// costPer is the cost per unit of throughput (NaN without throughput).
func (d *sweepDesign) costPer() float64 {
	if d.throughput <= 0 {
		return math.NaN()
	}
	return d.cost.TotalUSD / d.throughput
}

// sweepResult is a sweep run ready to print.
type sweepResult struct {
	spec    *scenarios.Sweep
	cat     *scenarios.PriceCatalog
	engine  sim.EngineKind
	req     sim.Request
	params  sim.Params
	profile string
	within  float64
	designs []*sweepDesign
	// unit names the throughput ("GB/s busbw", "samples/s").
	unit string
	// best is the design with the highest throughput, pick the cheapest
	// within the tolerance of it, value the lowest cost per throughput.
	best, pick, value *sweepDesign
	recommendation    string
}

// runSweep prices every design, then models the metric on each (and on
// the reference of its scaling efficiency) in parallel. A design that
// cannot be priced or built is an error naming it.
func runSweep(c *cli.Context, s *scenarios.Sweep, cat *scenarios.PriceCatalog, params sim.Params, engine sim.EngineKind) (*sweepResult, error) {
	ds, err := s.Designs()
	if err != nil {
		return nil, badInput(err)
	}
	res := &sweepResult{spec: s, cat: cat, engine: engine, params: params, req: sim.Request{Engine: engine}}
	m := s.Metric
	if m.Workload == nil {
		es, ok := model.DatatypeSize(m.Datatype)
		if !ok {
			return nil, badInputf("%s: metric.datatype: unknown %q (known: int8, half, bfloat16, float, int32, double, int64, ...)", m.DatatypeAt, m.Datatype)
		}
		res.req = sim.Request{Coll: m.Coll, Sizes: []model.Bytes{m.Size}, ElemSize: es, Engine: engine, Algo: m.Algo, Proto: m.Proto}
		res.unit = "GB/s busbw"
	} else {
		_, res.unit = m.Workload.Throughput(scenarios.WorkloadStep{})
	}
	name := func(d scenarios.Design) string { return fmt.Sprintf("sweep: design %d (%s)", d.Index, d.Name) }
	for _, d := range ds {
		cost, err := cat.Cost(d.Spec)
		if err != nil {
			return nil, badInputf("%s: %v", name(d), err)
		}
		res.designs = append(res.designs, &sweepDesign{Design: d, cost: cost})
	}
	eval := func(spec model.ClusterSpec) (modelled, error) {
		return modelDesign(c.Context, spec, params, res.req, m.Workload)
	}
	err = forEach(c.Context, len(res.designs), func(i int) error {
		d := res.designs[i]
		md, err := eval(d.Spec)
		if err != nil {
			return wrapKeep(name(d.Design), err)
		}
		d.modelled = md
		if m.Workload != nil {
			d.throughput, _ = m.Workload.Throughput(md.step.Step)
		} else {
			d.throughput = md.pt.BusBW
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := res.efficiencies(c, eval); err != nil {
		return nil, err
	}
	points := make([]reports.DesignPoint, len(res.designs))
	for i, d := range res.designs {
		points[i] = reports.DesignPoint{Name: d.Name, Cost: d.cost.TotalUSD, Throughput: d.throughput}
	}
	for _, i := range reports.ParetoFrontier(points) {
		res.designs[i].pareto = true
	}
	return res, nil
}

// refSpec is the reference of a design's scaling efficiency: the same
// design on one node for a workload, on two for a collective (none for a
// single-node collective).
func (r *sweepResult) refSpec(d *sweepDesign) (model.ClusterSpec, bool) {
	s := d.Spec
	switch {
	case r.spec.Metric.Workload != nil:
		s.Nodes = 1
	case s.Nodes < 2:
		return s, false
	default:
		s.Nodes = 2
	}
	return s, true
}

// efficiencies models each distinct reference once and sets every
// design's scaling efficiency against it.
func (r *sweepResult) efficiencies(c *cli.Context, eval func(model.ClusterSpec) (modelled, error)) error {
	var keys []string
	refs := map[string]model.ClusterSpec{}
	keyOf := make([]string, len(r.designs))
	for i, d := range r.designs {
		s, ok := r.refSpec(d)
		if !ok {
			continue
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		k := string(b)
		keyOf[i] = k
		if _, dup := refs[k]; !dup {
			refs[k] = s
			keys = append(keys, k)
		}
	}
	out := make([]modelled, len(keys))
	err := forEach(c.Context, len(keys), func(i int) error {
		m, err := eval(refs[keys[i]])
		if err != nil {
			return wrapKeep(fmt.Sprintf("sweep: reference of the scaling efficiency (%d node(s))", refs[keys[i]].Nodes), err)
		}
		out[i] = m
		return nil
	})
	if err != nil {
		return err
	}
	at := map[string]modelled{}
	for i, k := range keys {
		at[k] = out[i]
	}
	for i, d := range r.designs {
		ref, ok := at[keyOf[i]]
		if keyOf[i] == "" || !ok {
			continue
		}
		d.eff, d.effOK = d.efficiency(&ref, r.spec.Metric.Workload != nil)
	}
	return nil
}

// effDefinition states the efficiency of a sweep.
func (r *sweepResult) effDefinition() string {
	if r.spec.Metric.Workload != nil {
		return "efficiency = step time of the design on 1 node / its step time (weak scaling)"
	}
	return "efficiency = busbw / busbw of the same design on 2 nodes (none for 1 node)"
}

// recommend picks the fastest design, the cheapest within the tolerance
// of it and the best value, and writes the recommendation. Ties go to the
// cheaper, then the earlier design.
func (r *sweepResult) recommend() {
	ds := r.designs
	for _, d := range ds {
		if r.best == nil || d.throughput > r.best.throughput || (d.throughput == r.best.throughput && d.cost.TotalUSD < r.best.cost.TotalUSD) {
			r.best = d
		}
	}
	floor := r.best.throughput * (1 - r.within)
	for _, d := range ds {
		if d.throughput >= floor && (r.pick == nil || d.cost.TotalUSD < r.pick.cost.TotalUSD || (d.cost.TotalUSD == r.pick.cost.TotalUSD && d.throughput > r.pick.throughput)) {
			r.pick = d
		}
		if v := d.costPer(); !math.IsNaN(v) && (r.value == nil || v < r.value.costPer()) {
			r.value = d
		}
	}
	var b strings.Builder
	ref := func(d *sweepDesign) string { return fmt.Sprintf("#%d (%s)", d.Index, d.Name) }
	if r.best.throughput <= 0 {
		b.WriteString("No design delivers any throughput; check the metric.")
		r.recommendation = b.String()
		return
	}
	fmt.Fprintf(&b, "Fastest: %s at %s %s for %s.", ref(r.best), num(r.best.throughput), r.unit, usd(r.best.cost.TotalUSD))
	if r.pick != r.best {
		fmt.Fprintf(&b, " Cheapest within %s of it: %s at %s %s (%s%%) for %s, %s%% less.", pct(r.within), ref(r.pick), num(r.pick.throughput), r.unit,
			fmtF(100*(r.pick.throughput/r.best.throughput-1), 1), usd(r.pick.cost.TotalUSD), fmtF(100*(1-r.pick.cost.TotalUSD/r.best.cost.TotalUSD), 1))
	} else {
		fmt.Fprintf(&b, " No design within %s of it costs less.", pct(r.within))
	}
	switch {
	case r.value == r.best:
		fmt.Fprintf(&b, " It is also the best value at %s per %s.", usd(r.value.costPer()), strings.TrimSuffix(r.unit, " busbw"))
	case r.value != nil:
		fmt.Fprintf(&b, " Best value: %s at %s per %s.", ref(r.value), usd(r.value.costPer()), strings.TrimSuffix(r.unit, " busbw"))
	}
	var front []string
	for _, d := range ds {
		if d.pareto {
			front = append(front, "#"+strconv.Itoa(d.Index))
		}
	}
	fmt.Fprintf(&b, " Pareto-optimal (no other design is both cheaper and faster): %s.", strings.Join(front, ", "))
	if r.spec.Metric.Workload == nil && r.variesNodes() {
		b.WriteString(" Note: busbw is per GPU, so a larger cluster costs more for a similar busbw; judge node counts with a workload metric.")
	}
	if r.cat.Example {
		b.WriteString(" Costs use " + scenarios.ExampleNotice + ".")
	}
	r.recommendation = b.String()
}

// variesNodes reports whether the designs differ in node count.
func (r *sweepResult) variesNodes() bool {
	for _, d := range r.designs {
		if d.Spec.Nodes != r.designs[0].Spec.Nodes {
			return true
		}
	}
	return false
}

// num formats a throughput: thousands separators from 1000 up, else
// three significant digits.
func num(v float64) string {
	if math.Abs(v) >= 1000 {
		return money(v)
	}
	return sig3(v)
}

// tput formats a throughput for tables: two decimals below 1000,
// thousands separators above.
func tput(v float64) string {
	if math.Abs(v) >= 1000 {
		return money(v)
	}
	return fmtF(v, 2)
}

// usd formats dollars with thousands separators: "$1,234,567"; amounts
// under $100 keep cents.
func usd(v float64) string { return "$" + money(v) }

// money formats an amount with thousands separators, without a currency.
func money(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	if math.Abs(v) < 100 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	s := strconv.FormatFloat(math.Round(math.Abs(v)), 'f', 0, 64)
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

// metricValue is the label and the value of the metric column of the
// table: the collective's time or the workload's step time.
func (r *sweepResult) metricValue(d *sweepDesign) (label string, value string) {
	if r.spec.Metric.Workload != nil {
		return "step (ms)", fmtMs(d.step.Step.StepMs)
	}
	return "time (us)", fmtF(d.pt.TimeUs, 1)
}

func (r *sweepResult) header() []string {
	name := r.spec.Name
	if name != "" {
		name = " " + strconv.Quote(name)
	}
	return []string{
		fmt.Sprintf("collsim %s sweep%s (engine %s): %d designs from %s", Version, name, r.engine, len(r.designs), r.spec.File),
		fmt.Sprintf("Base: %s: %s", r.spec.BaseFrom, scenarios.Describe(r.spec.Base)),
		"Metric: " + r.spec.Metric.Describe() + "; throughput in " + r.unit,
		"Prices: " + r.cat.Label(),
		capitalize(r.effDefinition()),
	}
}

func effString(ok bool, v float64) string {
	if !ok {
		return "-"
	}
	return fmtF(100*v, 1) + "%"
}

func (r *sweepResult) writeTable(w io.Writer) error {
	writeComments(w, 110, r.header()...)
	fmt.Fprintln(w, "#")
	nameW := len("design")
	for _, d := range r.designs {
		nameW = max(nameW, len(d.Name))
	}
	mlabel, _ := r.metricValue(r.designs[0])
	tunit := strings.TrimSuffix(r.unit, " busbw")
	if r.spec.Metric.Workload == nil {
		tunit = "busbw (GB/s)"
	}
	perUnit := "USD per " + strings.TrimSuffix(r.unit, " busbw")
	fmt.Fprintf(w, "# %4s  %-*s  %5s  %6s  %14s  %10s  %14s  %14s  %10s  %s\n", "#", nameW, "design", "nodes", "GPUs", "cost (USD)", mlabel, tunit, perUnit, "efficiency", "pareto")
	for _, d := range r.designs {
		_, mv := r.metricValue(d)
		par := ""
		if d.pareto {
			par = "*"
		}
		line := fmt.Sprintf("%6d  %-*s  %5d  %6d  %14s  %10s  %14s  %14s  %10s  %s", d.Index, nameW, d.Name, d.Spec.Nodes, d.env.Cluster.NumRanks(),
			money(d.cost.TotalUSD), mv, tput(d.throughput), money(d.costPer()), effString(d.effOK, d.eff), par)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w, "#")
	writeComments(w, 110, "Recommendation: "+r.recommendation)
	return nil
}

// sweepCostJSON is one line of a design's cost.
type sweepCostJSON struct {
	Item    string  `json:"item"`
	Qty     float64 `json:"qty"`
	UnitUSD float64 `json:"unit_usd"`
	USD     float64 `json:"usd"`
	Source  string  `json:"source"`
}

// sweepDesignJSON is one design of sweep's JSON.
type sweepDesignJSON struct {
	Index             int             `json:"index"`
	Name              string          `json:"name"`
	Values            []string        `json:"values"`
	Description       string          `json:"description"`
	Nodes             int             `json:"nodes"`
	GPUs              int             `json:"gpus"`
	CostUSD           float64         `json:"cost_usd"`
	CapexUSD          float64         `json:"capex_usd"`
	EnergyUSD         float64         `json:"energy_usd"`
	Fabric            string          `json:"fabric_ports"`
	Cost              []sweepCostJSON `json:"cost_items"`
	TimeUs            float64         `json:"time_us,omitempty"`
	BusBW             float64         `json:"busbw_gbps,omitempty"`
	StepMs            float64         `json:"step_ms,omitempty"`
	ExposedMs         float64         `json:"exposed_comm_ms,omitempty"`
	Throughput        float64         `json:"throughput"`
	CostPerThroughput *float64        `json:"cost_per_throughput"`
	Efficiency        *float64        `json:"efficiency"`
	Pareto            bool            `json:"pareto"`
	BottleneckClass   string          `json:"bottleneck_class,omitempty"`
	Bottleneck        string          `json:"bottleneck,omitempty"`
}

func (r *sweepResult) jsonDesigns() []sweepDesignJSON {
	var out []sweepDesignJSON
	for _, d := range r.designs {
		j := sweepDesignJSON{Index: d.Index, Name: d.Name, Values: append([]string{}, d.Values...), Description: scenarios.Describe(d.Spec),
			Nodes: d.Spec.Nodes, GPUs: d.env.Cluster.NumRanks(), CostUSD: round(d.cost.TotalUSD, 2), CapexUSD: round(d.cost.CapexUSD, 2),
			EnergyUSD: round(d.cost.EnergyUSD, 2), Fabric: d.cost.Fabric, Throughput: round(d.throughput, 4), Pareto: d.pareto}
		for _, it := range d.cost.Items {
			j.Cost = append(j.Cost, sweepCostJSON{Item: it.Item, Qty: round(it.Qty, 3), UnitUSD: it.Unit.Value, USD: round(it.USD, 2), Source: it.Unit.Cite()})
		}
		cpt := d.costPer()
		j.CostPerThroughput, j.Efficiency = optRound(cpt, !math.IsNaN(cpt), 4), optRound(d.eff, d.effOK, 4)
		if r.spec.Metric.Workload != nil {
			j.StepMs, j.ExposedMs = round(d.step.Step.StepMs, 4), round(d.step.Step.ExposedMs, 4)
		} else {
			j.TimeUs, j.BusBW = round(d.pt.TimeUs, 3), round(d.pt.BusBW, 3)
		}
		bp := d.bottleneck(r.spec.Metric.Workload != nil)
		j.BottleneckClass, j.Bottleneck = bp.BottleneckClass, bp.Bottleneck
		out = append(out, j)
	}
	return out
}

func (r *sweepResult) writeJSON(w io.Writer) error {
	type prices struct {
		File    string `json:"file"`
		Title   string `json:"title,omitempty"`
		Date    string `json:"date,omitempty"`
		Example bool   `json:"example"`
		Notice  string `json:"notice,omitempty"`
	}
	type doc struct {
		Name           string            `json:"name,omitempty"`
		File           string            `json:"file"`
		Base           string            `json:"base"`
		Engine         string            `json:"engine"`
		Metric         string            `json:"metric"`
		ThroughputUnit string            `json:"throughput_unit"`
		Efficiency     string            `json:"efficiency_definition"`
		Axes           []string          `json:"axes"`
		Prices         prices            `json:"prices"`
		Within         float64           `json:"within"`
		Designs        []sweepDesignJSON `json:"designs"`
		Recommendation string            `json:"recommendation"`
	}
	d := doc{Name: r.spec.Name, File: r.spec.File, Base: r.spec.BaseFrom + ": " + scenarios.Describe(r.spec.Base), Engine: string(r.engine),
		Metric: r.spec.Metric.Describe(), ThroughputUnit: r.unit, Efficiency: r.effDefinition(), Within: r.within,
		Prices:  prices{File: r.cat.File, Title: r.cat.Title, Date: r.cat.Date, Example: r.cat.Example},
		Designs: r.jsonDesigns(), Recommendation: r.recommendation}
	if r.cat.Example {
		d.Prices.Notice = scenarios.ExampleNotice
	}
	for _, a := range r.spec.Axes {
		d.Axes = append(d.Axes, a.Key)
	}
	return writeJSONDoc(w, d)
}

func (r *sweepResult) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"index", "design"}
	for _, a := range r.spec.Axes {
		head = append(head, a.Key)
	}
	metric := []string{"time_us", "busbw_gbps"}
	if r.spec.Metric.Workload != nil {
		metric = []string{"step_ms", "exposed_comm_ms"}
	}
	head = append(head, "nodes", "gpus", "cost_usd", "capex_usd", "energy_usd")
	head = append(head, metric...)
	head = append(head, "throughput", "throughput_unit", "cost_per_throughput", "efficiency", "pareto", "bottleneck_class")
	_ = cw.Write(head)
	for _, j := range r.jsonDesigns() {
		row := []string{strconv.Itoa(j.Index), j.Name}
		row = append(row, j.Values...)
		row = append(row, strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), fmtF(j.CostUSD, 2), fmtF(j.CapexUSD, 2), fmtF(j.EnergyUSD, 2))
		if r.spec.Metric.Workload != nil {
			row = append(row, fmtF(j.StepMs, 4), fmtF(j.ExposedMs, 4))
		} else {
			row = append(row, fmtF(j.TimeUs, 3), fmtF(j.BusBW, 3))
		}
		cpt, eff := optCell(j.CostPerThroughput, 4), optCell(j.Efficiency, 4)
		row = append(row, fmtF(j.Throughput, 4), r.unit, cpt, eff, strconv.FormatBool(j.Pareto), j.BottleneckClass)
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// paretoOrder returns the Pareto-optimal designs in order of cost.
func (r *sweepResult) paretoOrder() []*sweepDesign {
	var out []*sweepDesign
	for _, d := range r.designs {
		if d.pareto {
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].cost.TotalUSD < out[j].cost.TotalUSD })
	return out
}
