package cli

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
	"github.com/collsim/collsim/study"
	"github.com/urfave/cli/v2"
)

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
				return badInputf("--engine: %w", err)
			}
			rpath, err := reportPath(c, "sweep")
			if err != nil {
				return err
			}
			s, err := scenarios.LoadSweepFile(c.Args().First())
			if err != nil {
				return badInput(err)
			}
			var within float64
			if c.IsSet("within") {
				if within, err = scenarios.ParseFraction(c.String("within")); err != nil || within <= 0 || within >= 1 {
					return badInputf("sweep: --within: want a fraction between 0 and 1 such as 10%% or 0.1, got %q", c.String("within"))
				}
			}
			cat, err := loadPrices(c.String("prices"))
			if err != nil {
				return err
			}
			params, err := profileParams(c.String("profile"))
			if err != nil {
				return err
			}
			res, err := runSweep(c, study.SweepOptions{Sweep: s, Prices: cat, Params: params, Engine: engine, Within: within})
			if err != nil {
				return err
			}
			res.profile = c.String("profile")
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

// sweepResult is a sweep run ready to print.
type sweepResult struct {
	*study.SweepResult
	profile        string
	recommendation string
}

// runSweep runs study.Sweep.
func runSweep(c *cli.Context, o study.SweepOptions) (*sweepResult, error) {
	res, err := study.Sweep(c.Context, o)
	if err != nil {
		return nil, err
	}
	return &sweepResult{SweepResult: res}, nil
}

// effDefinition states the efficiency of a sweep.
func (r *sweepResult) effDefinition() string {
	if r.Sweep.Metric.Workload != nil {
		return "efficiency = step time of the design on 1 node / its step time (weak scaling)"
	}
	return "efficiency = busbw / busbw of the same design on 2 nodes (none for 1 node)"
}

// recommend writes the recommendation: study's fastest design, the
// cheapest within the tolerance of it, the best value and the Pareto
// frontier.
func (r *sweepResult) recommend() {
	ds := r.Designs
	var b strings.Builder
	ref := func(d *study.SweepDesign) string { return fmt.Sprintf("#%d (%s)", d.Index, d.Name) }
	if r.Best.Throughput <= 0 {
		b.WriteString("No design delivers any throughput; check the metric.")
		r.recommendation = b.String()
		return
	}
	fmt.Fprintf(&b, "Fastest: %s at %s %s for %s.", ref(r.Best), num(r.Best.Throughput), r.Unit, usd(r.Best.Cost.TotalUSD))
	if r.Pick != r.Best {
		fmt.Fprintf(&b, " Cheapest within %s of it: %s at %s %s (%s%%) for %s, %s%% less.", pct(r.Within), ref(r.Pick), num(r.Pick.Throughput), r.Unit,
			fmtF(100*(r.Pick.Throughput/r.Best.Throughput-1), 1), usd(r.Pick.Cost.TotalUSD), fmtF(100*(1-r.Pick.Cost.TotalUSD/r.Best.Cost.TotalUSD), 1))
	} else {
		fmt.Fprintf(&b, " No design within %s of it costs less.", pct(r.Within))
	}
	switch {
	case r.Value == r.Best:
		fmt.Fprintf(&b, " It is also the best value at %s per %s.", usd(r.Value.CostPer()), strings.TrimSuffix(r.Unit, " busbw"))
	case r.Value != nil:
		fmt.Fprintf(&b, " Best value: %s at %s per %s.", ref(r.Value), usd(r.Value.CostPer()), strings.TrimSuffix(r.Unit, " busbw"))
	}
	var front []string
	for _, d := range ds {
		if d.Pareto {
			front = append(front, "#"+strconv.Itoa(d.Index))
		}
	}
	fmt.Fprintf(&b, " Pareto-optimal (no other design is both cheaper and faster): %s.", strings.Join(front, ", "))
	if r.Sweep.Metric.Workload == nil && r.VariesNodes() {
		b.WriteString(" Note: busbw is per GPU, so a larger cluster costs more for a similar busbw; judge node counts with a workload metric.")
	}
	if r.Prices.Example {
		b.WriteString(" Costs use " + scenarios.ExampleNotice + ".")
	}
	r.recommendation = b.String()
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
func (r *sweepResult) metricValue(d *study.SweepDesign) (label string, value string) {
	if r.Sweep.Metric.Workload != nil {
		return "step (ms)", fmtMs(d.Step.Step.StepMs)
	}
	return "time (us)", fmtF(d.Point.TimeUs, 1)
}

func (r *sweepResult) header() []string {
	name := r.Sweep.Name
	if name != "" {
		name = " " + strconv.Quote(name)
	}
	return []string{
		fmt.Sprintf("collsim %s sweep%s (engine %s): %d designs from %s", Version, name, r.Engine, len(r.Designs), r.Sweep.File),
		fmt.Sprintf("Base: %s: %s", r.Sweep.BaseFrom, scenarios.Describe(r.Sweep.Base)),
		"Metric: " + r.Sweep.Metric.Describe() + "; throughput in " + r.Unit,
		"Prices: " + r.Prices.Label(),
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
	for _, d := range r.Designs {
		nameW = max(nameW, len(d.Name))
	}
	mlabel, _ := r.metricValue(r.Designs[0])
	tunit := strings.TrimSuffix(r.Unit, " busbw")
	if r.Sweep.Metric.Workload == nil {
		tunit = "busbw (GB/s)"
	}
	perUnit := "USD per " + strings.TrimSuffix(r.Unit, " busbw")
	fmt.Fprintf(w, "# %4s  %-*s  %5s  %6s  %14s  %10s  %14s  %14s  %10s  %s\n", "#", nameW, "design", "nodes", "GPUs", "cost (USD)", mlabel, tunit, perUnit, "efficiency", "pareto")
	for _, d := range r.Designs {
		_, mv := r.metricValue(d)
		par := ""
		if d.Pareto {
			par = "*"
		}
		line := fmt.Sprintf("%6d  %-*s  %5d  %6d  %14s  %10s  %14s  %14s  %10s  %s", d.Index, nameW, d.Name, d.Spec.Nodes, d.Env.Cluster.NumRanks(),
			money(d.Cost.TotalUSD), mv, tput(d.Throughput), money(d.CostPer()), effString(d.EffOK, d.Eff), par)
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
	for _, d := range r.Designs {
		j := sweepDesignJSON{Index: d.Index, Name: d.Name, Values: append([]string{}, d.Values...), Description: scenarios.Describe(d.Spec),
			Nodes: d.Spec.Nodes, GPUs: d.Env.Cluster.NumRanks(), CostUSD: round(d.Cost.TotalUSD, 2), CapexUSD: round(d.Cost.CapexUSD, 2),
			EnergyUSD: round(d.Cost.EnergyUSD, 2), Fabric: d.Cost.Fabric, Throughput: round(d.Throughput, 4), Pareto: d.Pareto}
		for _, it := range d.Cost.Items {
			j.Cost = append(j.Cost, sweepCostJSON{Item: it.Item, Qty: round(it.Qty, 3), UnitUSD: it.Unit.Value, USD: round(it.USD, 2), Source: it.Unit.Cite()})
		}
		cpt := d.CostPer()
		j.CostPerThroughput, j.Efficiency = optRound(cpt, !math.IsNaN(cpt), 4), optRound(d.Eff, d.EffOK, 4)
		if r.Sweep.Metric.Workload != nil {
			j.StepMs, j.ExposedMs = round(d.Step.Step.StepMs, 4), round(d.Step.Step.ExposedMs, 4)
		} else {
			j.TimeUs, j.BusBW = round(d.Point.TimeUs, 3), round(d.Point.BusBW, 3)
		}
		bp := d.Bottleneck(r.Sweep.Metric.Workload != nil)
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
	d := doc{Name: r.Sweep.Name, File: r.Sweep.File, Base: r.Sweep.BaseFrom + ": " + scenarios.Describe(r.Sweep.Base), Engine: string(r.Engine),
		Metric: r.Sweep.Metric.Describe(), ThroughputUnit: r.Unit, Efficiency: r.effDefinition(), Within: r.Within,
		Prices:  prices{File: r.Prices.File, Title: r.Prices.Title, Date: r.Prices.Date, Example: r.Prices.Example},
		Designs: r.jsonDesigns(), Recommendation: r.recommendation}
	if r.Prices.Example {
		d.Prices.Notice = scenarios.ExampleNotice
	}
	for _, a := range r.Sweep.Axes {
		d.Axes = append(d.Axes, a.Key)
	}
	return writeJSONDoc(w, d)
}

func (r *sweepResult) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"index", "design"}
	for _, a := range r.Sweep.Axes {
		head = append(head, a.Key)
	}
	metric := []string{"time_us", "busbw_gbps"}
	if r.Sweep.Metric.Workload != nil {
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
		if r.Sweep.Metric.Workload != nil {
			row = append(row, fmtF(j.StepMs, 4), fmtF(j.ExposedMs, 4))
		} else {
			row = append(row, fmtF(j.TimeUs, 3), fmtF(j.BusBW, 3))
		}
		cpt, eff := optCell(j.CostPerThroughput, 4), optCell(j.Efficiency, 4)
		row = append(row, fmtF(j.Throughput, 4), r.Unit, cpt, eff, strconv.FormatBool(j.Pareto), j.BottleneckClass)
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
