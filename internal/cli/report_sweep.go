package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/collsim/collsim/reports"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/study"
)

// sweepReport builds the report of a sweep: the recommendation (fastest,
// cheapest within the tolerance, best value, the Pareto frontier) with the
// price notice, cost against throughput with the frontier marked, the
// cost breakdown of the frontier designs, every design in a table, and
// the model terms, the cost model and every price used with its source.
func sweepReport(e *env, r *sweepResult) (*reports.Document, error) {
	if len(r.Designs) == 0 {
		return nil, fmt.Errorf("sweep: --report: no results to report")
	}
	name := r.Sweep.Name
	if name == "" {
		name = strings.TrimSuffix(r.Sweep.File, ".yaml")
	}
	doc := e.newReport("What-if sweep " + name + ": cost against " + r.metricLabel())
	doc.Subtitle = fmt.Sprintf("collsim model of %d designs around %s (%s engine); prices: %s", len(r.Designs), r.Sweep.BaseFrom, r.Engine, r.Prices.Label())
	doc.Verdict = &reports.Verdict{Status: reports.StatusInfo, Label: fmt.Sprintf("recommended: #%d (%s), %s %s for %s", r.Pick.Index, r.Pick.Name, num(r.Pick.Throughput), r.Unit, usd(r.Pick.Cost.TotalUSD))}
	summary := r.recommendation
	if r.Prices.Example {
		summary = "Costs use EXAMPLE list prices (" + scenarios.ExampleNotice + "). " + summary
	}
	doc.Summary = summary

	doc.Inputs = []reports.KV{
		{Key: "sweep file", Value: r.Sweep.File},
		{Key: "base", Value: r.Sweep.BaseFrom + ": " + scenarios.Describe(r.Sweep.Base)},
	}
	for _, a := range r.Sweep.Axes {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "axis " + a.Key, Value: strings.Join(a.Values, ", ")})
	}
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "designs", Value: strconv.Itoa(len(r.Designs))},
		reports.KV{Key: "metric", Value: r.Sweep.Metric.Describe() + "; throughput in " + r.Unit},
		reports.KV{Key: "engine", Value: string(r.Engine)},
		reports.KV{Key: "prices", Value: r.Prices.Label()},
		reports.KV{Key: "recommendation tolerance", Value: "cheapest design within " + pct(r.Within) + " of the best throughput"},
	)
	if r.profile != "" {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "calibration profile", Value: r.profile})
	}
	doc.Assumptions = r.assumptions()

	points := make([]reports.DesignPoint, len(r.Designs))
	var frontier []study.DesignPoint
	for i, d := range r.Designs {
		points[i] = reports.DesignPoint{Name: "#" + strconv.Itoa(d.Index), Cost: d.Cost.TotalUSD, Throughput: d.Throughput}
		frontier = append(frontier, study.DesignPoint(points[i]))
	}
	doc.Sections = append(doc.Sections, reports.Section{Title: "Cost against throughput", Blocks: []reports.Block{
		reports.Paragraph{Text: "Every design as a point. The Pareto frontier (coloured and connected) holds the designs no other design beats on both cost and throughput: buy on the frontier, at the throughput you need. " +
			"#N numbers the designs as in the table below."},
		reports.ParetoPlot{Title: "Cost against " + r.metricLabel(), CostLabel: "total cost (" + r.Prices.Currency + ")", ThroughputLabel: r.metricLabel() + " (" + r.Unit + ")", Points: points, Frontier: study.ParetoFrontier(frontier),
			Caption: "Total cost = hardware + energy over the period, at " + r.priceWords() + "."},
	}})
	doc.Sections = append(doc.Sections, r.recommendationSection(), r.breakdownSection(), reports.Section{Title: "All designs", Blocks: []reports.Block{r.designsTable()}})
	return doc, nil
}

// metricLabel names the throughput: "AllReduce 1G busbw" or "training
// throughput".
func (r *sweepResult) metricLabel() string {
	m := r.Sweep.Metric
	if m.Workload != nil {
		return "training throughput"
	}
	return collectiveTitle(m.Coll) + " " + strings.SplitN(m.Describe(), " ", 3)[1] + " busbw"
}

// priceWords says which prices were used, for captions.
func (r *sweepResult) priceWords() string {
	if r.Prices.Example {
		return "EXAMPLE prices (" + scenarios.ExampleNotice + ")"
	}
	return "prices from " + r.Prices.File
}

// assumptions are the model terms, the efficiency, the cost model and
// every price the designs use, with their sources.
func (r *sweepResult) assumptions() []reports.Assumption {
	as := modelAssumptions(r.Params, r.NCCLVersion, versionSource(r.Sweep.Base, ""), r.Engine, r.profile, nil)
	as = append(as,
		reports.Assumption{Term: "scaling efficiency", Value: strings.TrimPrefix(r.effDefinition(), "efficiency = "),
			Source: "collectives: against 2 nodes, the smallest multi-node count; workloads: against one GPU doing the same per-GPU work with no communication (docs/sweep.md)"},
		reports.Assumption{Term: "cost: prices", Value: r.Prices.Label(), Source: "every price below with its source; " + r.priceWords()},
		reports.Assumption{Term: "cost: hardware", Value: "GPUs + NICs + switch ports + servers", Source: "quantities from the design; servers priced without their GPUs and NICs; optics, cables, racks, storage and support are not priced (assumption)"},
		reports.Assumption{Term: "cost: switch ports", Value: "per fabric", Source: "single-switch: one port per NIC while one switch holds them, else a non-blocking fat tree (2t-1 ports per NIC for t tiers); leaf-spine: downlinks plus uplinks on leaf and spine (ceil(downlinks / oversubscription) each)"},
	)
	if r.Prices.PowerKW != nil {
		as = append(as, reports.Assumption{Term: "cost: energy", Value: "nodes x kW x 8760 h x years x price per kWh", Source: "power per node as listed (maximum system power where a datasheet gives it: conservative); no cooling overhead (PUE 1), assumption"})
	}
	used := map[string]bool{}
	for _, d := range r.Designs {
		for _, it := range d.Cost.Items {
			used[it.Key] = true
		}
	}
	as = append(as, termAssumptions(r.Prices.Terms(used))...)
	if w := r.Sweep.Metric.Workload; w != nil {
		as = append(as, termAssumptions(w.Terms())...)
	}
	return as
}

// recommendationSection explains the recommendation with the designs it
// names.
func (r *sweepResult) recommendationSection() reports.Section {
	t := reports.Table{Caption: "The designs the recommendation names", Columns: []string{"role", "#", "design", "cost (" + r.Prices.Currency + ")", r.Unit, "cost per unit", "efficiency", "bottleneck"}}
	add := func(role string, d *study.SweepDesign) {
		if d == nil {
			return
		}
		t.Rows = append(t.Rows, []string{role, strconv.Itoa(d.Index), d.Name, money(d.Cost.TotalUSD), tput(d.Throughput), money(d.CostPer()), effString(d.EffOK, d.Eff), sweepLimitPhrase(d)})
	}
	add("fastest", r.Best)
	add("cheapest within "+pct(r.Within), r.Pick)
	add("best value (lowest cost per unit)", r.Value)
	for _, d := range r.ParetoOrder() {
		add("Pareto-optimal", d)
	}
	return reports.Section{Title: "Recommendation", Blocks: []reports.Block{reports.Paragraph{Text: r.recommendation}, t}}
}

// maxBreakdown bounds the designs whose cost is broken down in a report.
const maxBreakdown = 20

// breakdownSection shows what the Pareto-optimal designs' money goes to.
func (r *sweepResult) breakdownSection() reports.Section {
	front := r.ParetoOrder()
	note := ""
	if len(front) > maxBreakdown {
		note = fmt.Sprintf(" The %d cheapest of the %d Pareto-optimal designs are shown.", maxBreakdown, len(front))
		front = front[:maxBreakdown]
	}
	groups := []string{"GPUs", "servers", "NICs", "switch ports", "energy"}
	series := make([]reports.BarSeries, len(groups))
	for i, g := range groups {
		series[i].Name = g
	}
	var cats []string
	for _, d := range front {
		cats = append(cats, "#"+strconv.Itoa(d.Index))
		sums := make([]float64, len(groups))
		for _, it := range d.Cost.Items {
			switch {
			case strings.HasPrefix(it.Item, "GPU "):
				sums[0] += it.USD
			case strings.HasPrefix(it.Item, "server "):
				sums[1] += it.USD
			case strings.HasPrefix(it.Item, "NIC "):
				sums[2] += it.USD
			case strings.HasPrefix(it.Item, "switch port "):
				sums[3] += it.USD
			default:
				sums[4] += it.USD
			}
		}
		for i := range groups {
			series[i].Values = append(series[i].Values, sums[i])
		}
	}
	if r.Prices.PowerKW == nil {
		series = series[:4]
	}
	t := reports.Table{Caption: "Cost items of the Pareto-optimal designs", Columns: []string{"#", "item", "quantity", "unit price", "amount (" + r.Prices.Currency + ")", "source"}}
	for _, d := range front {
		for _, it := range d.Cost.Items {
			t.Rows = append(t.Rows, []string{strconv.Itoa(d.Index), it.Item, strconv.FormatFloat(math.Round(it.Qty*100)/100, 'f', -1, 64), strconv.FormatFloat(it.Unit.Value, 'f', -1, 64), money(it.USD), it.Unit.Cite()})
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(d.Index), "total (" + d.Cost.Fabric + ")", "", "", money(d.Cost.TotalUSD), ""})
	}
	return reports.Section{Title: "Where the money goes", Blocks: []reports.Block{
		reports.BarPlot{Title: "Cost breakdown of the Pareto-optimal designs", CategoryLabel: "design", ValueLabel: "cost (" + r.Prices.Currency + ")", Categories: cats, Series: series, Stacked: true,
			Caption: "Hardware and energy of each design on the frontier, stacked to its total, at " + r.priceWords() + "." + note},
		t,
	}}
}

// designsTable lists every design.
func (r *sweepResult) designsTable() reports.Table {
	mlabel, _ := r.metricValue(r.Designs[0])
	t := reports.Table{Caption: "Every design in grid order (" + r.effDefinition() + ")",
		Columns: []string{"#", "design", "nodes", "GPUs", "cost (" + r.Prices.Currency + ")", "hardware", "energy", mlabel, r.Unit, "cost per unit", "efficiency", "Pareto", "bottleneck"}}
	for _, d := range r.Designs {
		_, mv := r.metricValue(d)
		par := ""
		if d.Pareto {
			par = "yes"
		}
		bp := d.Bottleneck(r.Sweep.Metric.Workload != nil)
		t.Rows = append(t.Rows, []string{strconv.Itoa(d.Index), d.Name, strconv.Itoa(d.Nodes), strconv.Itoa(d.GPUs), money(d.Cost.TotalUSD),
			money(d.Cost.CapexUSD), money(d.Cost.EnergyUSD), mv, tput(d.Throughput), money(d.CostPer()), effString(d.EffOK, d.Eff), par, bp.BottleneckClass})
	}
	if r.Prices.Example {
		t.Notes = append(t.Notes, "Costs at EXAMPLE list prices: "+scenarios.ExampleNotice+".")
	}
	return t
}

// sweepLimitPhrase is a design's bottleneck as the sweep keeps it: its
// class and what limits it. A sweep keeps neither the link's utilisation
// nor the algorithm, so none is printed (bottleneckPhrase would print them
// as 0% busy and tree/LL, the zero values).
func sweepLimitPhrase(d *study.SweepDesign) string {
	switch {
	case d.BottleneckClass == "" && d.Limit == "":
		return "no link load"
	case d.BottleneckClass == "":
		return d.Limit
	case d.Limit == "":
		return d.BottleneckClass
	}
	return d.BottleneckClass + " (" + d.Limit + ")"
}
