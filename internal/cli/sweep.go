package cli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
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
		UsageText: "collsim sweep SWEEP.yaml [--prices FILE] [--engine analytic|des] [--profile FILE] [--within 10%] [-j N] [--shard I/N] [--quiet] [--rank-check N]\n" +
			"   [--format table|json|csv] [--report FILE.html|.md]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "prices", Usage: "price catalog `FILE` (default: the embedded EXAMPLE prices; docs/sweep.md has the schema)"},
			engineFlag(sim.EngineAnalytic),
			profileFlag(),
			&cli.StringFlag{Name: "within", Usage: "recommend the cheapest design within `FRACTION` of the best throughput (default: the sweep's within, else 10%)"},
			&cli.IntFlag{Name: "jobs", Aliases: []string{"j"}, Usage: "model `N` designs at once (default: all cores); results are the same for any N"},
			&cli.StringFlag{Name: "shard", Usage: "run only slice `I/N` (1-based) of the grid and write it as JSON for collsim merge"},
			&cli.BoolFlag{Name: "quiet", Usage: "no progress bar on stderr (it is shown only when stderr is a terminal)"},
			&cli.IntFlag{Name: "rank-check", Usage: "also model `N` designs spread over the grid with the DES and report Spearman's rho between the engines' rankings"},
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
			shard, shards, err := parseShard(c)
			if err != nil {
				return err
			}
			if shards > 0 && (rpath != "" || (c.IsSet("format") && format != "json") || c.IsSet("rank-check")) {
				return badInputf("sweep: --shard writes a JSON slice for collsim merge; --report, --rank-check and --format table/csv belong to the merge")
			}
			if c.IsSet("jobs") && c.Int("jobs") < 1 {
				return badInputf("sweep: -j %d: want at least 1 worker", c.Int("jobs"))
			}
			if c.IsSet("rank-check") && c.Int("rank-check") < 3 {
				return badInputf("sweep: --rank-check %d: want at least 3 designs to rank", c.Int("rank-check"))
			}
			file := c.Args().First()
			s, err := scenarios.LoadSweepFile(file)
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
			o := study.SweepOptions{Sweep: s, Prices: cat, Params: params, Engine: engine, Within: within, Workers: c.Int("jobs"), Shard: shard, Shards: shards}
			total := s.Size()
			if shards > 0 {
				lo, hi := study.ShardRange(total, shard, shards)
				total = hi - lo
			}
			bar := newProgress(e.stderr, total, isTerminal(e.stderr) && !c.Bool("quiet"), nil)
			o.Progress = bar.update
			res, err := runSweep(c, o)
			bar.finish()
			if err != nil {
				return err
			}
			res.profile = c.String("profile")
			fp, err := sweepFingerprint(file, c.String("prices"), c.String("profile"), engine, within)
			if err != nil {
				return badInput(err)
			}
			res.hdr = headerOf(res.SweepResult, res.profile, fp)
			if shards > 0 {
				return writeJSONDoc(e.stdout, sweepPart{Format: sweepPartFormat, Header: res.hdr, Shard: shard, Shards: shards, Designs: res.Designs})
			}
			if n := c.Int("rank-check"); n > 0 {
				rc, err := study.RankCheck(c.Context, o, res.SweepResult, n)
				if err != nil {
					return err
				}
				res.rank = &rc
			}
			res.recommend()
			return printResult(e, res, format, "sweep", rpath, func() (*reports.Document, error) { return sweepReport(e, res) })
		},
	}
}

// parseShard reads --shard I/N (1-based); 0, 0 without it.
func parseShard(c *cli.Context) (int, int, error) {
	v := c.String("shard")
	if v == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n || n > scenarios.MaxDesigns {
		return 0, 0, badInputf("sweep: --shard %q: want I/N with 1 <= I <= N, e.g. 3/8", v)
	}
	return i, n, nil
}

// sweepFingerprint identifies what a sweep's result depends on: the grid
// file, the prices, the profile, the engine, the tolerance and collsim's
// version; slices with different fingerprints cannot be merged.
func sweepFingerprint(file, prices, profile string, engine sim.EngineKind, within float64) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "collsim %s\nengine %s\nwithin %v\n", Version, engine, within)
	for _, f := range []string{file, prices, profile} {
		if f == "" {
			fmt.Fprintf(h, "-\n")
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%d\n", len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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

// sweepHeader is everything a sweep's output says besides its designs.
// A slice carries it, so that collsim merge prints exactly what one run
// would.
type sweepHeader struct {
	Name        string   `json:"name,omitempty"`
	File        string   `json:"file"`
	BaseFrom    string   `json:"base_from"`
	Base        string   `json:"base"`
	Engine      string   `json:"engine"`
	Metric      string   `json:"metric"`
	Workload    bool     `json:"workload"`
	Unit        string   `json:"throughput_unit"`
	Axes        []string `json:"axes"`
	PricesFile  string   `json:"prices_file"`
	PricesTitle string   `json:"prices_title,omitempty"`
	PricesDate  string   `json:"prices_date,omitempty"`
	PricesLabel string   `json:"prices_label"`
	Example     bool     `json:"prices_example"`
	Within      float64  `json:"within"`
	Years       float64  `json:"years"`
	Total       int      `json:"designs_total"`
	Fingerprint string   `json:"fingerprint"`
}

// headerOf states the header of a sweep run.
func headerOf(r *study.SweepResult, profile, fingerprint string) sweepHeader {
	h := sweepHeader{Name: r.Sweep.Name, File: r.Sweep.File, BaseFrom: r.Sweep.BaseFrom, Base: scenarios.Describe(r.Sweep.Base), Engine: string(r.Engine),
		Metric: r.Sweep.Metric.Describe(), Workload: r.Sweep.Metric.Workload != nil, Unit: r.Unit, PricesFile: r.Prices.File, PricesTitle: r.Prices.Title,
		PricesDate: r.Prices.Date, PricesLabel: r.Prices.Label(), Example: r.Prices.Example, Within: r.Within, Years: r.Prices.Years.Value, Total: r.Total,
		Fingerprint: fingerprint}
	for _, a := range r.Sweep.Axes {
		h.Axes = append(h.Axes, a.Key)
	}
	return h
}

// sweepPartFormat names the format of a slice file.
const sweepPartFormat = "collsim sweep slice 1"

// sweepPart is the JSON a --shard run writes and collsim merge reads.
type sweepPart struct {
	Format  string               `json:"format"`
	Header  sweepHeader          `json:"header"`
	Shard   int                  `json:"shard"`
	Shards  int                  `json:"shards"`
	Designs []*study.SweepDesign `json:"designs"`
}

// sweepResult is a sweep run ready to print.
type sweepResult struct {
	*study.SweepResult
	hdr            sweepHeader
	profile        string
	recommendation string
	rank           *study.RankCheckResult
}

// runSweep runs study.Sweep; a design the prices cannot cover is bad input.
func runSweep(c *cli.Context, o study.SweepOptions) (*sweepResult, error) {
	res, err := study.Sweep(c.Context, o)
	if err != nil {
		var ie *study.InputError
		if errors.As(err, &ie) {
			return nil, badInput(err)
		}
		return nil, err
	}
	return &sweepResult{SweepResult: res}, nil
}

// effDefinition states the efficiency of a sweep.
func (r *sweepResult) effDefinition() string {
	if r.hdr.Workload {
		return "efficiency = compute time / step time, against one GPU doing the same per-GPU work with no communication"
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
	if r.Best == nil || r.Best.Throughput <= 0 {
		b.WriteString("No design delivers any throughput; check the metric.")
		r.recommendation = b.String()
		return
	}
	unit := r.hdr.Unit
	fmt.Fprintf(&b, "Fastest: %s at %s %s for %s.", ref(r.Best), num(r.Best.Throughput), unit, usd(r.Best.Cost.TotalUSD))
	if r.Pick != r.Best {
		fmt.Fprintf(&b, " Cheapest within %s of it: %s at %s %s (%s%%) for %s, %s%% less.", pct(r.hdr.Within), ref(r.Pick), num(r.Pick.Throughput), unit,
			fmtF(100*(r.Pick.Throughput/r.Best.Throughput-1), 1), usd(r.Pick.Cost.TotalUSD), fmtF(100*(1-r.Pick.Cost.TotalUSD/r.Best.Cost.TotalUSD), 1))
	} else {
		fmt.Fprintf(&b, " No design within %s of it costs less.", pct(r.hdr.Within))
	}
	switch {
	case r.Value == r.Best:
		fmt.Fprintf(&b, " It is also the best value at %s per %s.", usd(r.Value.CostPer()), strings.TrimSuffix(unit, " busbw"))
	case r.Value != nil:
		fmt.Fprintf(&b, " Best value: %s at %s per %s.", ref(r.Value), usd(r.Value.CostPer()), strings.TrimSuffix(unit, " busbw"))
	}
	var front []string
	refused := 0
	for _, d := range ds {
		if d.Pareto {
			front = append(front, "#"+strconv.Itoa(d.Index))
		}
		if d.Refused != "" {
			refused++
		}
	}
	if len(front) > 20 {
		front = append(front[:20], fmt.Sprintf("... (%d in all)", len(front)))
	}
	fmt.Fprintf(&b, " Pareto-optimal (no other design is both cheaper and faster): %s.", strings.Join(front, ", "))
	if refused > 0 {
		fmt.Fprintf(&b, " %d design(s) cannot run the workload (see refused).", refused)
	}
	if !r.hdr.Workload && r.VariesNodes() {
		b.WriteString(" Note: busbw is per GPU, so a larger cluster costs more for a similar busbw; judge node counts with a workload metric.")
	}
	if r.rank != nil {
		fmt.Fprintf(&b, " Engines agree on the ranking: Spearman's rho %s over %d designs modelled by both (analytic vs DES).", fmtF(r.rank.Rho, 3), r.rank.N)
	}
	if r.hdr.Example {
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
	if r.hdr.Workload {
		if d.Refused != "" {
			return "step (ms)", "refused"
		}
		return "step (ms)", fmtMs(d.StepMs)
	}
	return "time (us)", fmtF(d.TimeUs, 1)
}

func (r *sweepResult) header() []string {
	name := r.hdr.Name
	if name != "" {
		name = " " + strconv.Quote(name)
	}
	return []string{
		fmt.Sprintf("collsim %s sweep%s (engine %s): %d designs from %s", Version, name, r.hdr.Engine, len(r.Designs), r.hdr.File),
		fmt.Sprintf("Base: %s: %s", r.hdr.BaseFrom, r.hdr.Base),
		"Metric: " + r.hdr.Metric + "; throughput in " + r.hdr.Unit,
		"Prices: " + r.hdr.PricesLabel,
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
	bw := bufio.NewWriter(w)
	writeComments(bw, 110, r.header()...)
	fmt.Fprintln(bw, "#")
	nameW := len("design")
	for _, d := range r.Designs {
		nameW = max(nameW, len(d.Name))
	}
	mlabel, _ := r.metricValue(r.Designs[0])
	tunit := strings.TrimSuffix(r.hdr.Unit, " busbw")
	if !r.hdr.Workload {
		tunit = "busbw (GB/s)"
	}
	perUnit := "USD per " + strings.TrimSuffix(r.hdr.Unit, " busbw")
	extra := ""
	if r.hdr.Workload {
		extra = fmt.Sprintf("  %12s", "USD/M tokens")
	}
	fmt.Fprintf(bw, "# %4s  %-*s  %5s  %6s  %14s  %10s  %14s  %14s%s  %10s  %s\n", "#", nameW, "design", "nodes", "GPUs", "cost (USD)", mlabel, tunit, perUnit, extra, "efficiency", "pareto")
	for _, d := range r.Designs {
		_, mv := r.metricValue(d)
		par := ""
		if d.Pareto {
			par = "*"
		}
		ex := ""
		if r.hdr.Workload {
			ex = fmt.Sprintf("  %12s", sig3(d.USDPerMTokens(r.hdr.Years)))
		}
		line := fmt.Sprintf("%6d  %-*s  %5d  %6d  %14s  %10s  %14s  %14s%s  %10s  %s", d.Index, nameW, d.Name, d.Nodes, d.GPUs,
			money(d.Cost.TotalUSD), mv, tput(d.Throughput), money(d.CostPer()), ex, effString(d.EffOK, d.Eff), par)
		fmt.Fprintln(bw, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(bw, "#")
	writeComments(bw, 110, "Recommendation: "+r.recommendation)
	return bw.Flush()
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
	PowerKW           float64         `json:"power_kw,omitempty"`
	Fabric            string          `json:"fabric_ports"`
	Cost              []sweepCostJSON `json:"cost_items"`
	TimeUs            float64         `json:"time_us,omitempty"`
	BusBW             float64         `json:"busbw_gbps,omitempty"`
	StepMs            float64         `json:"step_ms,omitempty"`
	ExposedMs         float64         `json:"exposed_comm_ms,omitempty"`
	TokensPerSec      float64         `json:"tokens_per_s,omitempty"`
	MFU               float64         `json:"mfu,omitempty"`
	Throughput        float64         `json:"throughput"`
	CostPerThroughput *float64        `json:"cost_per_throughput"`
	USDPerMTokens     *float64        `json:"usd_per_million_tokens,omitempty"`
	JoulesPerToken    *float64        `json:"joules_per_token,omitempty"`
	Efficiency        *float64        `json:"efficiency"`
	Pareto            bool            `json:"pareto"`
	BottleneckClass   string          `json:"bottleneck_class,omitempty"`
	Bottleneck        string          `json:"bottleneck,omitempty"`
	Refused           string          `json:"refused,omitempty"`
}

func (r *sweepResult) jsonDesign(d *study.SweepDesign) sweepDesignJSON {
	j := sweepDesignJSON{Index: d.Index, Name: d.Name, Values: append([]string{}, d.Values...), Description: d.Description,
		Nodes: d.Nodes, GPUs: d.GPUs, CostUSD: round(d.Cost.TotalUSD, 2), CapexUSD: round(d.Cost.CapexUSD, 2),
		EnergyUSD: round(d.Cost.EnergyUSD, 2), PowerKW: round(d.PowerKW, 3), Fabric: d.Cost.Fabric, Throughput: round(d.Throughput, 4), Pareto: d.Pareto,
		Refused: d.Refused}
	for _, it := range d.Cost.Items {
		j.Cost = append(j.Cost, sweepCostJSON{Item: it.Item, Qty: round(it.Qty, 3), UnitUSD: it.Unit.Value, USD: round(it.USD, 2), Source: it.Unit.Cite()})
	}
	cpt := d.CostPer()
	j.CostPerThroughput, j.Efficiency = optRound(cpt, !math.IsNaN(cpt), 4), optRound(d.Eff, d.EffOK, 4)
	if r.hdr.Workload {
		j.StepMs, j.ExposedMs, j.TokensPerSec, j.MFU = round(d.StepMs, 4), round(d.ExposedMs, 4), round(d.TokensPerSec, 3), round(d.MFU, 4)
		if v := d.USDPerMTokens(r.hdr.Years); !math.IsNaN(v) {
			j.USDPerMTokens = optRound(v, true, 6)
		}
		if v := d.JoulesPerToken(); !math.IsNaN(v) {
			j.JoulesPerToken = optRound(v, true, 6)
		}
	} else {
		j.TimeUs, j.BusBW = round(d.TimeUs, 3), round(d.BusBW, 3)
	}
	j.BottleneckClass, j.Bottleneck = d.BottleneckClass, d.Limit
	return j
}

func (r *sweepResult) writeJSON(w io.Writer) error {
	type prices struct {
		File    string `json:"file"`
		Title   string `json:"title,omitempty"`
		Date    string `json:"date,omitempty"`
		Example bool   `json:"example"`
		Notice  string `json:"notice,omitempty"`
	}
	type rank struct {
		Designs int     `json:"designs"`
		Engines string  `json:"engines"`
		Rho     float64 `json:"spearman_rho"`
	}
	bw := bufio.NewWriter(w)
	pr := prices{File: r.hdr.PricesFile, Title: r.hdr.PricesTitle, Date: r.hdr.PricesDate, Example: r.hdr.Example}
	if r.hdr.Example {
		pr.Notice = scenarios.ExampleNotice
	}
	head := map[string]any{}
	put := func(k string, v any) { head[k] = v }
	if r.hdr.Name != "" {
		put("name", r.hdr.Name)
	}
	put("file", r.hdr.File)
	put("base", r.hdr.BaseFrom+": "+r.hdr.Base)
	put("engine", r.hdr.Engine)
	put("metric", r.hdr.Metric)
	put("throughput_unit", r.hdr.Unit)
	put("efficiency_definition", r.effDefinition())
	put("axes", r.hdr.Axes)
	put("prices", pr)
	put("within", r.hdr.Within)
	put("recommendation", r.recommendation)
	if r.rank != nil {
		put("rank_check", rank{Designs: r.rank.N, Engines: "analytic vs des", Rho: round(r.rank.Rho, 4)})
	}
	// The designs are written one at a time, so the output streams.
	b, err := marshalJSON(head)
	if err != nil {
		return err
	}
	bw.Write(b[:len(b)-2]) // drop the closing "}\n"
	bw.WriteString(",\n  \"designs\": [")
	for i, d := range r.Designs {
		if i > 0 {
			bw.WriteString(",")
		}
		db, err := json.MarshalIndent(r.jsonDesign(d), "    ", "  ")
		if err != nil {
			return err
		}
		bw.WriteString("\n    ")
		bw.Write(db)
	}
	bw.WriteString("\n  ]\n}\n")
	return bw.Flush()
}

// marshalJSON is writeJSONDoc into bytes.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	err := writeJSONDoc(&buf, v)
	return buf.Bytes(), err
}

func (r *sweepResult) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	metric := []string{"time_us", "busbw_gbps"}
	if r.hdr.Workload {
		metric = []string{"step_ms", "exposed_comm_ms", "tokens_per_s", "usd_per_million_tokens", "joules_per_token"}
	}
	fixed := []string{"nodes", "gpus", "cost_usd", "capex_usd", "energy_usd", "power_kw"}
	fixed = append(fixed, metric...)
	fixed = append(fixed, "throughput", "throughput_unit", "cost_per_throughput", "efficiency", "pareto", "bottleneck_class", "refused")
	head := []string{"index", "design"}
	// An axis named like a fixed column (nodes) is written axis.nodes: two
	// columns of one name break readers that key rows by the header.
	for _, a := range r.hdr.Axes {
		if slices.Contains(fixed, a) || a == "index" || a == "design" {
			a = "axis." + a
		}
		head = append(head, a)
	}
	head = append(head, fixed...)
	_ = cw.Write(head)
	for _, d := range r.Designs {
		j := r.jsonDesign(d)
		row := []string{strconv.Itoa(j.Index), j.Name}
		row = append(row, j.Values...)
		row = append(row, strconv.Itoa(j.Nodes), strconv.Itoa(j.GPUs), fmtF(j.CostUSD, 2), fmtF(j.CapexUSD, 2), fmtF(j.EnergyUSD, 2), fmtF(j.PowerKW, 3))
		if r.hdr.Workload {
			row = append(row, fmtF(j.StepMs, 4), fmtF(j.ExposedMs, 4), fmtF(j.TokensPerSec, 3), optCell(j.USDPerMTokens, 6), optCell(j.JoulesPerToken, 6))
		} else {
			row = append(row, fmtF(j.TimeUs, 3), fmtF(j.BusBW, 3))
		}
		cpt, eff := optCell(j.CostPerThroughput, 4), optCell(j.Efficiency, 4)
		row = append(row, fmtF(j.Throughput, 4), r.hdr.Unit, cpt, eff, strconv.FormatBool(j.Pareto), j.BottleneckClass, j.Refused)
		_ = cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}
