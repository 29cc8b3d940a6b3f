package ingest

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/model"
)

// nccl-tests text output: nccl-facts §1.3 (2.13+ and the older layouts).
var (
	reDevice      = regexp.MustCompile(`^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$`)
	reAvgBW       = regexp.MustCompile(`^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?`)
	reOutOfBounds = regexp.MustCompile(`^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?`)
	reTestsVer    = regexp.MustCompile(`^#\s*nccl-tests version (\S+)(.*)$`)
	reStarting    = regexp.MustCompile(`^#\s*Collective test starting:\s*(\S+)`)
	reConcluded   = regexp.MustCompile(`^#\s*Collective test concluded:\s*(\S+)`)
	// collsim's own tables (internal/cli predict, compare and scale) start
	// "# collsim 0.1.0 prediction (engine analytic): alltoall_perf, 16 ranks".
	reCollsim     = regexp.MustCompile(`^#\s*collsim\s+(\S+\s+(?:prediction|compare|scale)\s+\(engine\s+[^)]*\)):\s*(.*)$`)
	reStatedRanks = regexp.MustCompile(`(?:^|[\s,;(])(\d+)\s+ranks\b`)
	reBinary      = regexp.MustCompile(`(?:^|[/\s])((?:all_reduce|all_gather|reduce_scatter|broadcast|reduce|alltoall|sendrecv|gather|scatter|hypercube)_perf(?:_mpi)?)\b`)
	reDriverVer   = regexp.MustCompile(`cudaDriverVersion (\d+)`)
)

// table is the column layout of an nccl-tests results table.
type table struct {
	lead   []string // columns before the first timing group
	group  []string // columns of one timing group
	groups int      // 1 or 2 timing groups
	// indexes of the named columns in lead (-1 when absent)
	iSize, iCount, iType, iRedop, iRoot int
	// indexes within a group
	gTime, gAlg, gBus, gWrong int
	wrongIsError              bool // old "error" column
}

func (t *table) width() int { return len(t.lead) + t.groups*len(t.group) }

func indexOf(list []string, names ...string) int {
	for i, s := range list {
		for _, n := range names {
			if strings.EqualFold(s, n) {
				return i
			}
		}
	}
	return -1
}

// parseHeader reads "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time ...".
func parseHeader(fields []string) (*table, error) {
	var times []int
	for i, f := range fields {
		if f == "time" || f == "cputime" {
			times = append(times, i)
		}
	}
	if len(times) == 0 {
		return nil, fmt.Errorf("table header has no time column")
	}
	t := &table{lead: fields[:times[0]], groups: 1}
	if len(times) >= 2 {
		t.group = fields[times[0]:times[1]]
		t.groups = 2
	} else {
		t.group = fields[times[0]:]
	}
	t.iSize, t.iCount = indexOf(t.lead, "size"), indexOf(t.lead, "count")
	t.iType, t.iRedop, t.iRoot = indexOf(t.lead, "type"), indexOf(t.lead, "redop"), indexOf(t.lead, "root")
	t.gTime, t.gAlg, t.gBus = 0, indexOf(t.group, "algbw"), indexOf(t.group, "busbw")
	t.gWrong = indexOf(t.group, "#wrong", "wrong")
	if t.gWrong < 0 {
		if t.gWrong = indexOf(t.group, "error"); t.gWrong >= 0 {
			t.wrongIsError = true
		}
	}
	if t.iSize < 0 || t.gAlg < 0 || t.gBus < 0 {
		return nil, fmt.Errorf("table header lacks a size, algbw or busbw column")
	}
	return t, nil
}

// runState is a run being built.
type runState struct {
	run                           *Run
	tab                           *table
	closed                        bool
	sawVersion, sawStart, sawParm bool
	sawCollsim                    bool      // collsim's own first line
	prec                          []rowPrec // printed precision of run.Rows, row by row
	pending                       []string  // tokens of an incomplete row
	pendingLine                   int
	tabLine                       int // line of the column header
	failed                        []Finding
}

// testsParser builds nccl-tests runs from the non-log lines of a file.
type testsParser struct {
	name       string
	runs       []*runState
	cur        *runState
	lastBinary string
	skips      *skipper
	machine    map[string]string
	dropped    int
	records    int // rows and device lines kept, at most maxRecords
	notes      []Note
	strs       interner
	cut        *cutRow // the file ends inside this table row
}

// cutRow is a table row the file ends inside.
type cutRow struct{ line, got, want int }

// truncatedError refuses a file that ends inside a results row. It wraps
// ErrUnrecognized like every refusal of the input, and no other reading
// of the file (as a plain NCCL log) may take its place.
type truncatedError struct{ msg string }

func (e *truncatedError) Error() string { return e.msg }
func (e *truncatedError) Unwrap() error { return ErrUnrecognized }

// Plausibility limits on measured values; a row beyond them is refused
// with a note. Assumptions, chosen far outside anything real: the fastest
// published AllReduce busbw is under 1 TB/s (GB200 NVL72, nccl-facts §8),
// so 100 TB/s is two orders of magnitude above it; 1e10 us (almost three
// hours for one operation) is far above the slowest nccl-tests size on a
// 1 Gb/s socket network.
const (
	maxPlausibleGBps   = 100e3
	maxPlausibleTimeUs = 1e10
)

// note records a Note (capped like skipped lines).
func (p *testsParser) note(num int, format string, a ...any) {
	if len(p.notes) >= maxSkipped {
		return
	}
	p.notes = append(p.notes, Note{Line: num, Message: fmt.Sprintf(format, a...)})
}

func (p *testsParser) newRun(num int) *runState {
	p.flushPending()
	if len(p.runs) >= maxRuns {
		p.dropped++
		p.cur = &runState{run: &Run{Line: num, OutOfBounds: -1, Params: map[string]string{}}}
		return p.cur
	}
	rs := &runState{run: &Run{Line: num, OutOfBounds: -1, Params: map[string]string{}, Binary: p.lastBinary}}
	p.lastBinary = ""
	p.runs = append(p.runs, rs)
	p.cur = rs
	return rs
}

// runFor returns the current run, or a new one when the current one already
// has rows, is closed, or already saw this kind of preamble line.
func (p *testsParser) runFor(num int, again bool) *runState {
	if p.cur == nil || p.cur.closed || len(p.cur.run.Rows) > 0 || again {
		return p.newRun(num)
	}
	return p.cur
}

func (p *testsParser) flushPending() {
	if p.cur != nil && p.cur.pending != nil {
		c := p.cur
		want := c.tab.width()
		// A refused row is a note (validate and calibrate print them), not a skip.
		p.note(c.pendingLine, "incomplete table row: %d of %d columns (truncated or missing columns): %q; row refused", len(c.pending), want, strings.Join(c.pending, " "))
		c.pending = nil
	}
}

// line handles one non-log line.
func (p *testsParser) line(num int, s string) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "#") {
		p.comment(num, t)
		return
	}
	f := strings.Fields(t)
	c := p.cur
	if c != nil && c.pending != nil && c.tab != nil {
		if allNumeric(f) && len(c.pending)+len(f) >= c.tab.width() {
			joined := append(c.pending, f...)
			line := c.pendingLine
			c.pending = nil
			p.row(line, joined, t)
			return
		}
		p.flushPending()
	}
	if len(f) > 0 && isInt(f[0]) && len(f) >= 2 && (isInt(f[1]) || allNumeric(f)) {
		if c != nil && c.tab != nil && !c.closed {
			p.row(num, f, t)
			return
		}
		if len(f) >= 6 && allNumeric(f[:2]) {
			p.skips.add(num, "data row outside a results table (no header above it)", t)
			return
		}
	}
	if strings.Contains(t, "_perf") {
		if m := reBinary.FindStringSubmatch(t); m != nil {
			p.lastBinary = m[1]
			return
		}
	}
	if c != nil && c.tab != nil && !c.closed {
		p.skips.add(num, "not a table row", t)
	}
}

// partial handles the text before a log line that was written into the
// middle of a line: the start of a table row whose rest comes later.
func (p *testsParser) partial(num int, s string) {
	f := strings.Fields(s)
	c := p.cur
	if c == nil || c.tab == nil || c.closed || len(f) == 0 {
		return
	}
	if !isInt(f[0]) {
		p.skips.add(num, "text before an interleaved log line", s)
		return
	}
	p.flushPending()
	if len(f) >= c.tab.width() {
		p.row(num, f, s)
		return
	}
	c.pending, c.pendingLine = f, num
}

func allNumeric(f []string) bool {
	if len(f) == 0 {
		return false
	}
	for _, s := range f {
		if s == "N/A" {
			continue
		}
		if _, ok := parseNum(s); !ok {
			return false
		}
	}
	return true
}

func (p *testsParser) comment(num int, t string) {
	p.flushPending()
	if strings.IndexByte(t, '\t') >= 0 {
		// nccl-tests separates a comment's words with spaces; a copy that
		// turned them into tabs reads the same.
		t = strings.ReplaceAll(t, "\t", " ")
	}
	body := strings.TrimSpace(strings.TrimPrefix(t, "#"))
	// Each case's expression is tried only when the body starts with its
	// first word, so a long comment costs a few prefix checks.
	first := body
	if i := strings.IndexAny(body, " \t"); i >= 0 {
		first = body[:i]
	}
	switch first {
	case "nccl-tests", "Collective", "Rank", "Out", "Avg", "Reducing", "nThread":
	case "collsim":
		if p.collsimHeader(num, t) {
			return
		}
		p.header(num, t, body)
		return
	default:
		p.header(num, t, body)
		return
	}
	switch {
	case reTestsVer.MatchString(t):
		m := reTestsVer.FindStringSubmatch(t)
		rs := p.runFor(num, p.cur != nil && p.cur.sawVersion)
		rs.sawVersion = true
		rs.run.TestsVersion = m[1]
		for _, kv := range strings.Fields(m[2]) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				rs.run.Params[k] = v
			}
		}
	case reStarting.MatchString(t):
		m := reStarting.FindStringSubmatch(t)
		rs := p.runFor(num, p.cur != nil && p.cur.sawStart)
		rs.sawStart = true
		rs.run.Binary = m[1]
	case reConcluded.MatchString(t):
		if p.cur != nil {
			if p.cur.run.Binary == "" {
				p.cur.run.Binary = reConcluded.FindStringSubmatch(t)[1]
			}
			p.cur.closed = true
		}
	case strings.HasPrefix(body, "nThread "):
		rs := p.runFor(num, p.cur != nil && p.cur.sawParm)
		rs.sawParm = true
		parseParams(body, rs.run.Params)
	case reDevice.MatchString(t):
		m := reDevice.FindStringSubmatch(t)
		rs := p.runFor(num, false)
		if len(rs.run.Devices) >= maxListItems || p.records >= maxRecords {
			return
		}
		p.records++
		r, _ := strconv.Atoi(m[1])
		d, _ := strconv.Atoi(m[5])
		rs.run.Devices = append(rs.run.Devices, Device{Rank: r, Host: m[4], Dev: d, BusID: m[6], Name: m[7]})
	case reOutOfBounds.MatchString(t):
		if p.cur == nil {
			return
		}
		m := reOutOfBounds.FindStringSubmatch(t)
		p.cur.run.OutOfBounds, _ = strconv.Atoi(m[1])
		if m[2] == "FAILED" || p.cur.run.OutOfBounds > 0 {
			p.cur.failed = append(p.cur.failed, Finding{Code: FindWrongResults, Severity: SevError,
				Message: fmt.Sprintf("nccl-tests found %d out-of-bounds values", p.cur.run.OutOfBounds), Evidence: t, Line: num})
		}
	case reAvgBW.MatchString(t):
		if p.cur == nil {
			return
		}
		m := reAvgBW.FindStringSubmatch(t)
		if v, ok := parseNum(m[1]); ok {
			p.cur.run.AvgBusBW = v
		}
		if m[2] == "FAILED" {
			p.cur.failed = append(p.cur.failed, Finding{Code: FindWrongResults, Severity: SevError,
				Message: "nccl-tests reports FAILED: the average bus bandwidth is below NCCL_TESTS_MIN_BW", Evidence: t, Line: num})
		}
		p.cur.closed = true
	case strings.HasPrefix(body, "Reducing maxBytes"):
		if p.cur != nil {
			p.cur.run.Params["note"] = body
		}
	default:
		p.header(num, t, body)
	}
}

// collsimHeader reads the first line of a table collsim itself printed
// (predict, compare, scale): the binary name gives the collective and
// "N ranks" the communicator size, as nccl-tests' "# Collective test
// starting" and device lines do. It reports whether t was such a line.
func (p *testsParser) collsimHeader(num int, t string) bool {
	m := reCollsim.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	rs := p.runFor(num, p.cur != nil && p.cur.sawCollsim)
	rs.sawCollsim = true
	rs.run.Params["source"] = "collsim " + m[1]
	if b := reBinary.FindStringSubmatch(m[2]); b != nil && rs.run.Binary == "" {
		rs.run.Binary = b[1]
	}
	if r := reStatedRanks.FindStringSubmatch(m[2]); r != nil {
		if n, err := strconv.Atoi(r[1]); err == nil && n > 0 {
			rs.run.Params[statedRanksKey] = r[1]
		}
	}
	return true
}

// statedRanksKey is the Params entry of a rank count the file states in
// words (collsim's own header line); runRanks prefers it to a guess.
const statedRanksKey = "ranks"

// header handles a "# size count type ... busbw" column header line.
func (p *testsParser) header(num int, t, body string) {
	f := strings.Fields(body)
	if indexOf(f, "size") != 0 || indexOf(f, "busbw") <= 0 {
		return
	}
	tab, err := parseHeader(f)
	if err != nil {
		p.skips.add(num, err.Error(), t)
		return
	}
	rs := p.runFor(num, false)
	rs.tab, rs.tabLine = tab, num
}

// parseParams reads "nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step:
// 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0".
func parseParams(body string, out map[string]string) {
	f := strings.Fields(body)
	for i := 0; i+1 < len(f); i++ {
		k := f[i]
		switch k {
		case "nThread", "nGpus", "minBytes", "maxBytes":
			out[k] = f[i+1]
			i++
		case "step:":
			out["step"] = f[i+1]
			i++
		case "iters:":
			key := "iters"
			if i > 0 && (f[i-1] == "warmup" || f[i-1] == "agg") {
				key = f[i-1] + "Iters"
			}
			out[key] = f[i+1]
			i++
		case "validation:", "graph:", "unalign:":
			out[strings.TrimSuffix(k, ":")] = f[i+1]
			i++
		}
	}
}

func (p *testsParser) row(num int, f []string, text string) {
	c := p.cur
	tab := c.tab
	if len(f) < tab.width() {
		// Keep it: the rest may follow on a later line (a log line was
		// written into it), otherwise it is reported as incomplete.
		c.pending, c.pendingLine = f, num
		return
	}
	if len(c.run.Rows) >= maxRowsPerRun || p.records >= maxRecords {
		p.skips.add(num, fmt.Sprintf("more than %d rows in one table or %d in the file", maxRowsPerRun, maxRecords), "")
		return
	}
	r := Row{Line: num, Root: -1}
	var rp rowPrec
	size, err := strconv.ParseInt(f[tab.iSize], 10, 64)
	if err != nil || size < 0 {
		p.note(num, "column size: %q is not a byte count; row refused", f[tab.iSize])
		return
	}
	r.Size = size
	if tab.iCount >= 0 {
		if r.Count, err = strconv.ParseInt(f[tab.iCount], 10, 64); err != nil || r.Count < 0 {
			p.note(num, "column count: %q is not an element count; row refused", f[tab.iCount])
			return
		}
	}
	if tab.iType >= 0 {
		r.Type = p.strs.get(f[tab.iType])
	}
	if tab.iRedop >= 0 {
		r.Redop = p.strs.get(f[tab.iRedop])
	}
	if tab.iRoot >= 0 {
		if v, err := strconv.Atoi(f[tab.iRoot]); err == nil {
			r.Root = v
		}
	}
	for g := 0; g < tab.groups; g++ {
		off := len(tab.lead) + g*len(tab.group)
		gf := f[off : off+len(tab.group)]
		res, bad := parseGroup(tab, gf)
		rp[g] = resPrec{time: printedHalfULP(gf[tab.gTime]), alg: printedHalfULP(gf[tab.gAlg]), bus: printedHalfULP(gf[tab.gBus])}
		if g == 0 {
			if bad != "" {
				p.note(num, "out-of-place %s; row refused", bad)
				return
			}
			r.OOP = res
		} else {
			r.IP = res
		}
	}
	if !p.plausible(num, &r) {
		return
	}
	c.run.Rows = append(c.run.Rows, r)
	c.prec = append(c.prec, rp)
	p.records++
}

// plausible checks a row's measured values. An out-of-place time or
// bandwidth beyond the plausibility limits refuses the row (false); beyond
// them in the in-place group only (an in-place Reduce on one rank copies
// nothing and prints millions of GB/s), that group is dropped. A zero or
// negative time or a negative bandwidth keeps the row but marks its group
// invalid, so that fits leave it out. Each case adds a note.
func (p *testsParser) plausible(num int, r *Row) bool {
	groups := []struct {
		name string
		res  *Result
	}{{"out-of-place", &r.OOP}, {"in-place", &r.IP}}
	for gi, g := range groups {
		res := g.res
		if !res.Valid {
			continue
		}
		what := "row refused"
		if gi > 0 {
			what = "the in-place result is dropped"
		}
		bad := true
		switch {
		case res.TimeUs > maxPlausibleTimeUs:
			p.note(num, "%s time %g us is not a plausible measurement (above %g us); %s", g.name, res.TimeUs, float64(maxPlausibleTimeUs), what)
		case res.BusBW > maxPlausibleGBps || res.AlgBW > maxPlausibleGBps:
			p.note(num, "%s bandwidth %g GB/s (algbw %g) is above %g GB/s (100 TB/s), not a plausible measurement; %s", g.name, res.BusBW, res.AlgBW, float64(maxPlausibleGBps), what)
		case res.TimeUs <= 0:
			p.note(num, "%s time %g us is not a measurement (zero or negative); the row is kept but left out of fits", g.name, res.TimeUs)
			res.Valid = false
			bad = false
		case res.BusBW < 0 || res.AlgBW < 0:
			p.note(num, "%s bandwidth is negative (algbw %g, busbw %g GB/s); the row is kept but left out of fits", g.name, res.AlgBW, res.BusBW)
			res.Valid = false
			bad = false
		default:
			bad = false
		}
		if bad {
			if gi == 0 {
				return false
			}
			*res = Result{Wrong: -1}
		}
	}
	return true
}

// parseGroup reads one "time algbw busbw #wrong" group. bad names what failed.
func parseGroup(tab *table, g []string) (Result, string) {
	var res Result
	var ok bool
	if res.TimeUs, ok = parseNum(g[tab.gTime]); !ok {
		return res, fmt.Sprintf("column time: %q is not a number", g[tab.gTime])
	}
	if res.AlgBW, ok = parseNum(g[tab.gAlg]); !ok {
		return res, fmt.Sprintf("column algbw: %q is not a number", g[tab.gAlg])
	}
	if res.BusBW, ok = parseNum(g[tab.gBus]); !ok {
		return res, fmt.Sprintf("column busbw: %q is not a number", g[tab.gBus])
	}
	if bad := math.IsNaN(res.TimeUs) || math.IsNaN(res.AlgBW) || math.IsNaN(res.BusBW) || math.IsInf(res.BusBW, 0) || math.IsInf(res.AlgBW, 0) || math.IsInf(res.TimeUs, 0); bad {
		return res, "has a NaN or infinite value"
	}
	res.Wrong = -1
	if tab.gWrong >= 0 {
		w := g[tab.gWrong]
		if tab.wrongIsError {
			res.MaxErr, _ = parseNum(w)
		} else if v, ok := parseNum(w); ok && v >= 0 && v < math.MaxInt64/2 {
			res.Wrong = int64(v)
		}
	}
	res.Valid = true
	return res, ""
}

// finish completes the runs: collective, ranks, dtype, hosts.
func (p *testsParser) finish(log *NCCLLog) []*Run {
	if c := p.cur; c != nil && c.pending != nil && c.tab != nil && !c.closed {
		// The file ends inside a table row: the log was cut (a copy
		// interrupted, a job killed while writing). Its last complete rows
		// would judge the run without the sizes that were lost.
		p.cut = &cutRow{line: c.pendingLine, got: len(c.pending), want: c.tab.width()}
	}
	p.flushPending()
	var out []*Run
	for _, rs := range p.runs {
		r := rs.run
		if len(r.Rows) == 0 {
			continue
		}
		finishRunPrec(r, log, rs.prec)
		p.checkCounts(r)
		out = append(out, r)
	}
	return out
}

func finishRun(r *Run, log *NCCLLog) { finishRunPrec(r, log, nil) }

// finishRunPrec is finishRun for a table whose printed precision, row by
// row, is prec.
func finishRunPrec(r *Run, log *NCCLLog, prec []rowPrec) {
	for _, row := range r.Rows {
		if row.Type != "" {
			r.DType = row.Type
			r.DTypeSize, _ = model.DatatypeSize(row.Type)
			break
		}
	}
	seen := map[string]bool{}
	for _, d := range r.Devices {
		if !seen[d.Host] {
			seen[d.Host] = true
			r.Hosts = append(r.Hosts, d.Host)
		}
	}
	if log != nil && r.NCCLVersion == "" {
		r.NCCLVersion = log.Version
	}
	if r.NCCLVersion == "" {
		if v := r.Params["nccl-library"]; v != "" {
			r.NCCLVersion = ncclCodeVersion(v)
		}
	}
	stem := ""
	if r.Binary != "" {
		stem = r.Binary
		if i := strings.LastIndexByte(stem, '/'); i >= 0 {
			stem = stem[i+1:]
		}
		r.Binary = stem
	}
	coll, err := model.ParseCollective(stem)
	known := stem != "" && err == nil
	if !known {
		coll = inferCollective(r)
		r.Params["collective"] = "inferred from the columns"
	}
	r.Collective = coll
	r.CollectiveName = coll.TestName()
	if stem != "" && !known {
		r.CollectiveName = strings.TrimSuffix(strings.TrimSuffix(stem, "_mpi"), "_perf")
	}
	r.Ranks = runRanks(r, log, prec)
}

// RepeatedSizes returns the rows of r whose size, datatype, redop and root
// an earlier row already has, in file order. Size-0 rows (nccl-tests
// prints every size below one element per rank as 0) are not repeats.
func (r *Run) RepeatedSizes() []RepeatedSize {
	type key struct {
		size    int64
		typ, op string
		root    int
	}
	first := map[key]int{}
	byFactor := strings.Contains(r.Params["step"], "factor")
	var out []RepeatedSize
	for i, row := range r.Rows {
		if row.Size <= 0 {
			continue
		}
		k := key{row.Size, row.Type, row.Redop, row.Root}
		j, ok := first[k]
		if !ok {
			first[k] = i
			continue
		}
		prev := r.Rows[i-1]
		rounded := !byFactor && key{prev.Size, prev.Type, prev.Redop, prev.Root} == k && prev.Count == row.Count
		out = append(out, RepeatedSize{Size: row.Size, First: r.Rows[j].Line, Line: row.Line, Rounded: rounded})
	}
	return out
}

// repeatNotes are the notes on r's repeated sizes.
func repeatNotes(r *Run) []Note {
	var notes []Note
	for _, d := range r.RepeatedSizes() {
		if d.Rounded {
			notes = append(notes, Note{Line: d.Line, Message: fmt.Sprintf("size %d repeats line %d: nccl-tests rounds each requested size down to whole elements per rank, so two steps of %s bytes can print one size; both rows are kept", d.Size, d.First, r.Params["step"])})
			continue
		}
		notes = append(notes, Note{Line: d.Line, Message: fmt.Sprintf("size %d appears twice in the table, at lines %d and %d: two runs pasted together? validate and calibrate refuse this table", d.Size, d.First, d.Line)})
	}
	return notes
}

// checkCounts notes the rows of r whose count column does not give their
// size as the table's other rows do (size = k x count x element size, k 1
// for AllReduce, the rank count for AllGather): a row of another
// collective or datatype pasted in. Such a row is kept but left out of
// fits (both results marked invalid). The element size is the row's own
// datatype's (nccl-tests -d all prints several in one table), else the
// table's.
func (p *testsParser) checkCounts(r *Run) {
	ratio := make([]float64, len(r.Rows))
	counts := map[float64]int{}
	var order []float64
	for i, row := range r.Rows {
		ratio[i] = math.NaN()
		elem := r.DTypeSize
		if n, ok := model.DatatypeSize(row.Type); ok && n > 0 {
			elem = n
		}
		if elem <= 0 || (row.Size == 0 && row.Count == 0) {
			continue
		}
		if row.Count <= 0 {
			ratio[i] = math.Inf(1)
		} else {
			ratio[i] = float64(row.Size) / (float64(row.Count) * float64(elem))
		}
		if counts[ratio[i]] == 0 {
			order = append(order, ratio[i])
		}
		counts[ratio[i]]++
	}
	if len(order) < 2 {
		return
	}
	mode := order[0]
	for _, k := range order[1:] {
		if counts[k] > counts[mode] {
			mode = k
		}
	}
	if math.IsInf(mode, 0) {
		return
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		if math.IsNaN(ratio[i]) || ratio[i] == mode {
			continue
		}
		p.note(row.Line, "count %d does not give size %d as the table's other rows do (size = %g x count x element size for %s): a row of another collective or datatype pasted in? the row is kept but left out of fits",
			row.Count, row.Size, mode, row.Type)
		row.OOP.Valid, row.IP.Valid = false, false
	}
}

// ncclCodeVersion turns NCCL_VERSION_CODE 22902 into "2.29.2".
func ncclCodeVersion(code string) string {
	v, err := strconv.Atoi(code)
	if err != nil || v < 10000 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, (v/100)%100, v%100)
}

// inferCollective guesses the collective of a table without a binary name
// (nccl-tests <= 2.11 printed none): count x element size equals the printed
// size for AllReduce, Broadcast, Reduce and SendRecv, and is the per-rank
// share for AllGather, ReduceScatter and AlltoAll (nccl-facts §1.1); a real
// redop marks a reduction and a root >= 0 a rooted collective.
func inferCollective(r *Run) model.Collective {
	elem := r.DTypeSize
	reduces, rooted := false, false
	var perRank *bool
	// nccl-tests checks no in-place result of AlltoAll and SendRecv: their
	// in-place #wrong prints N/A where the out-of-place one is counted
	// (every other collective counts both; -c 0 prints N/A in both).
	checked, ipUnchecked := 0, 0
	for _, row := range r.Rows {
		if row.Redop != "" && row.Redop != "none" {
			reduces = true
		}
		if row.Root >= 0 {
			rooted = true
		}
		if perRank == nil && row.Size > 0 && row.Count > 0 && elem > 0 {
			v := row.Count*int64(elem) < row.Size
			perRank = &v
		}
		if row.OOP.Valid && row.OOP.Wrong >= 0 && row.IP.Valid {
			checked++
			if row.IP.Wrong < 0 {
				ipUnchecked++
			}
		}
	}
	p2p := checked > 0 && ipUnchecked == checked && !rooted
	switch {
	case perRank != nil && *perRank && reduces:
		return model.ReduceScatter
	case perRank != nil && *perRank && p2p:
		return model.AlltoAll
	case perRank != nil && *perRank:
		return model.AllGather
	case rooted && reduces:
		return model.Reduce
	case rooted:
		return model.Broadcast
	case reduces && !p2p && !(deviceRanks(r) > 2 && unitRatio(r)):
		return model.AllReduce
	}
	// SendRecv prints the reduction op of the generic printer ("sum") and
	// root -1, and its busbw is its algbw: an unrooted table whose in-place
	// results go unchecked, or whose busbw equals algbw on every row on
	// more than 2 ranks (where AllReduce's is 2(n-1)/n of it), is SendRecv.
	return model.SendRecv
}

// deviceRanks is the rank count the device lines give when they list
// every rank from 0, else 0.
func deviceRanks(r *Run) int {
	maxRank, ranks := -1, map[int]bool{}
	for _, d := range r.Devices {
		ranks[d.Rank] = true
		maxRank = max(maxRank, d.Rank)
	}
	if maxRank >= 0 && len(ranks) == maxRank+1 {
		return maxRank + 1
	}
	return 0
}

// unitRatio reports whether every row of r with both bandwidths positive
// prints busbw equal to algbw (within the last printed digit), and at
// least one row large enough to tell (algbw of at least 1 GB/s) does.
func unitRatio(r *Run) bool {
	told := false
	for _, row := range r.Rows {
		for _, res := range []Result{row.OOP, row.IP} {
			if !res.Valid || res.AlgBW <= 0 || res.BusBW <= 0 {
				continue
			}
			if math.Abs(res.BusBW-res.AlgBW) > valueHalfULP(res.AlgBW)+valueHalfULP(res.BusBW) {
				return false
			}
			told = told || res.AlgBW >= 1
		}
	}
	return told
}

// runRanks returns the communicator size: from complete device lines, else
// the count the file states (collsim's own header line), else from busbw
// against algbw and size/time (nccl-facts §1.1), else the largest device
// rank + 1, else the NCCL log's nranks. prec is the printed precision of
// each row (nil when unknown: JSON).
func runRanks(r *Run, log *NCCLLog, prec []rowPrec) int {
	if n := deviceRanks(r); n > 0 {
		return n
	}
	maxRank := -1
	for _, d := range r.Devices {
		maxRank = max(maxRank, d.Rank)
	}
	if n, err := strconv.Atoi(r.Params[statedRanksKey]); err == nil && n > 0 {
		return n
	}
	if n := ranksFromRatio(r, prec); n > 0 {
		return n
	}
	if maxRank >= 0 {
		return maxRank + 1
	}
	if log != nil && log.Ranks > 0 {
		return log.Ranks
	}
	return 0
}

// resPrec is the rounding error of one printed result: half a unit in the
// last printed digit of its time, algbw and busbw (0: not known, taken
// from the value).
type resPrec struct{ time, alg, bus float64 }

// rowPrec is the rounding error of a row's out-of-place and in-place results.
type rowPrec [2]resPrec

// printedHalfULP returns half a unit in the last digit of a printed number
// ("12.34" 0.005, "1234.5" 0.05, "1.2e+07" 5e5), 0 when s is not one.
func printedHalfULP(s string) float64 {
	s = strings.TrimLeft(s, "+-")
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil {
			return 0
		}
		s, exp = s[:i], e
	}
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return 0
	}
	dec := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		dec = len(s) - i - 1
	}
	return 0.5 * math.Pow(10, float64(exp-dec))
}

// valueHalfULP is printedHalfULP for a number known only by its value: the
// fewest decimals (up to 9) that write v exactly, which is never tighter
// than the precision it was printed with.
func valueHalfULP(v float64) float64 {
	v = math.Abs(v)
	for d := 0; d <= 9; d++ {
		x := v * math.Pow(10, float64(d))
		if math.Abs(x-math.Round(x)) <= 1e-6*max(1, x) {
			return 0.5 * math.Pow(10, float64(-d))
		}
	}
	return 0.5e-9 * max(1, v)
}

// factorRange is the interval of busbw factors that every constraint met
// so far allows.
type factorRange struct {
	lo, hi float64
	n      int // constraints met
}

func (f *factorRange) add(lo, hi float64) {
	if f.n == 0 {
		f.lo, f.hi = lo, hi
	} else {
		f.lo, f.hi = max(f.lo, lo), min(f.hi, hi)
	}
	f.n++
}

// ranksFromRatio derives n from the busbw factor: 2(n-1)/n for AllReduce,
// (n-1)/n for AllGather, ReduceScatter and AlltoAll. nccl-tests computes
// algbw = size/time and busbw = algbw x factor before rounding them for
// print, so every valid result bounds the factor twice, within the
// rounding of what was printed: busbw/algbw (algbw has 2 decimals, loose
// on small rows) and busbw/(size/time) (the time has more digits, tight on
// large rows). Those bounds are intersected over all rows, so the largest
// rows decide, and n is returned only when exactly one n >= 2 has its
// factor inside: 0 when several fit (a 2-decimal busbw cannot tell 30 from
// 32 ranks on a slow network) or none does. When the size/time bounds
// leave no n, the busbw/algbw bounds alone are used (the printed size is
// not the byte count the bandwidth was computed from).
func ranksFromRatio(r *Run, prec []rowPrec) int {
	var limit float64 // the factor as n grows without bound
	switch r.Collective {
	case model.AllReduce:
		limit = 2
	case model.AllGather, model.ReduceScatter, model.AlltoAll:
		limit = 1
	default:
		return 0
	}
	var byAlg, bySize factorRange
	for i, row := range r.Rows {
		for g, res := range []Result{row.OOP, row.IP} {
			if !res.Valid || res.TimeUs <= 0 || res.AlgBW < 0 || res.BusBW < 0 {
				continue
			}
			var p resPrec
			if i < len(prec) {
				p = prec[i][g]
			}
			if p.time <= 0 {
				p.time = valueHalfULP(res.TimeUs)
			}
			if p.alg <= 0 {
				p.alg = valueHalfULP(res.AlgBW)
			}
			if p.bus <= 0 {
				p.bus = valueHalfULP(res.BusBW)
			}
			bLo, bHi := max(0, res.BusBW-p.bus), res.BusBW+p.bus
			if aLo, aHi := res.AlgBW-p.alg, res.AlgBW+p.alg; aLo > 0 {
				byAlg.add(bLo/aHi, bHi/aLo)
			}
			// size/time in GB/s: bytes per us / 1e3.
			if row.Size > 0 && res.TimeUs-p.time > 0 {
				s := float64(row.Size) / 1e3
				bySize.add(bLo*(res.TimeUs-p.time)/s, bHi*(res.TimeUs+p.time)/s)
			}
		}
	}
	if byAlg.n == 0 {
		return 0
	}
	both := byAlg
	if bySize.n > 0 {
		both.add(bySize.lo, bySize.hi)
	}
	n, ok := onlyRanks(both, limit)
	if !ok && both.lo > both.hi {
		n, _ = onlyRanks(byAlg, limit)
	}
	return n
}

// onlyRanks returns the one n >= 2 whose factor limit x (n-1)/n lies in f
// (ok true when f leaves at least one n >= 1), 0 when none or several do.
func onlyRanks(f factorRange, limit float64) (int, bool) {
	if f.lo > f.hi || f.hi < 0 {
		return 0, false
	}
	if f.hi >= limit || f.lo <= 0 {
		// Unbounded n, or one rank (factor 0) fits as well.
		return 0, true
	}
	// factor(n) = limit(n-1)/n increases with n: n = limit/(limit-factor).
	inv := func(x float64) float64 { return limit / (limit - x) }
	lo, hi := math.Ceil(inv(f.lo)-1e-9), math.Floor(inv(f.hi)+1e-9)
	if hi > 1<<20 || lo != hi || lo < 2 {
		return 0, lo <= hi
	}
	return int(lo), true
}

// textPass is one pass over a text file of nccl-tests output and/or NCCL
// log lines: the tables found (tp, whose skips go to sk), the log (lp),
// lines cut for length (cuts, also in sk) and machine facts.
type textPass struct {
	tp      *testsParser
	lp      *logParser
	sk      *skipper
	cuts    *skipper
	machine map[string]string
}

// scanText reads r line by line (see scanLines) and feeds every line to the
// tables parser and the log parser; memory grows with the records found,
// not with the input. It fails only when r does.
func scanText(name string, r io.Reader) (*textPass, error) {
	p := &textPass{sk: &skipper{}, cuts: &skipper{}, lp: newLogParser(), machine: map[string]string{}}
	p.tp = &testsParser{name: name, skips: p.sk}
	lb := &lastByteReader{r: r}
	last := 0
	err := scanLines(lb, func(l line) bool {
		last = l.num
		if l.cut {
			why := fmt.Sprintf("line longer than %d bytes, truncated", MaxLineLength)
			p.sk.add(l.num, why, "")
			p.cuts.add(l.num, why, "")
		}
		s := stripRankPrefix(l.text)
		t := strings.TrimSpace(s)
		if t == "" || strings.HasPrefix(t, "```") {
			return true
		}
		if p.lp.isContinuation(s) {
			p.lp.continuation(s)
			return true
		}
		before, ll, isLog := splitLogLine(s)
		if isLog {
			p.lp.feedLine(l.num, ll)
			logText := ll.text
			if p.machine["cuda_driver"] == "" && strings.Contains(logText, "cudaDriverVersion ") {
				if m := reDriverVer.FindStringSubmatch(logText); m != nil {
					p.machine["cuda_driver"] = m[1]
				}
			}
			if p.machine["nccl_build"] == "" {
				if i := strings.Index(logText, "NCCL version "); i >= 0 {
					if m := reVersion.FindStringSubmatch(logText[i:]); m != nil {
						p.machine["nccl_build"] = m[1] + m[2]
					}
				}
			}
			if strings.TrimSpace(before) != "" {
				p.tp.partial(l.num, before)
			}
			return true
		}
		p.tp.line(l.num, s)
		return true
	})
	if err != nil {
		return nil, readError(name, err)
	}
	// A last line without a line break may be cut short (a copy
	// interrupted, a job killed while writing).
	p.lp.endInput(last, lb.n > 0 && lb.last != '\n')
	return p, nil
}

// lastByteReader remembers the last byte read and how many were read.
type lastByteReader struct {
	r    io.Reader
	last byte
	n    int64
}

func (l *lastByteReader) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	if n > 0 {
		l.last = b[n-1]
		l.n += int64(n)
	}
	return n, err
}

// tests completes the pass as nccl-tests output: an error when no table
// has a complete row.
func (p *textPass) tests(name string) (*Artifact, error) {
	tp, sk := p.tp, p.sk
	known := map[int]string{}
	for _, rs := range tp.runs {
		for _, d := range rs.run.Devices {
			if _, ok := known[d.Rank]; !ok {
				known[d.Rank] = d.Host
			}
		}
	}
	a := &Artifact{File: name}
	a.Log = p.lp.finish(known)
	a.Runs = tp.finish(a.Log)
	for _, rs := range tp.runs {
		if len(rs.run.Rows) > 0 {
			a.Findings = append(a.Findings, rs.failed...)
		}
	}
	if tp.dropped > 0 {
		sk.add(0, fmt.Sprintf("%d more results tables beyond the %d-table limit ignored", tp.dropped, maxRuns), "")
	}
	if len(a.Runs) == 0 {
		a.Skipped = sk.result()
		line, why := 1, "no complete nccl-tests result row"
		for _, rs := range tp.runs {
			if rs.tab != nil {
				line, why = rs.tabLine, "nccl-tests table header but no complete result row"
				break
			}
		}
		first := Skip{}
		if len(a.Skipped) > 0 {
			first = a.Skipped[0]
		}
		for _, n := range tp.notes {
			// A refused row is a note: the earliest reason names the line.
			if n.Line > 0 && (first.Line <= 0 || n.Line < first.Line) {
				first = Skip{Line: n.Line, Reason: n.Message}
			}
		}
		if first.Line > 0 {
			return nil, errNoData(name, first.Line, "%s (line %d: %s)", why, first.Line, first.Reason)
		}
		return nil, errNoData(name, line, "%s", why)
	}
	if c := tp.cut; c != nil {
		return nil, &truncatedError{fmt.Sprintf("calibrate: %s:%d: the file ends inside a results row (%d of its %d columns), before the table's closing summary: the log is truncated; give the whole log", name, c.line, c.got, c.want)}
	}
	a.Kind = KindNCCLTests
	a.Notes = append(tp.notes, p.lp.notes...)
	for _, r := range a.Runs {
		a.Notes = append(a.Notes, repeatNotes(r)...)
		if len(r.Rows) == 1 {
			a.Notes = append(a.Notes, Note{Line: r.Line, Message: fmt.Sprintf("the %s run has a single row (size %d B): one size cannot separate latency from bandwidth, so fits of it are underdetermined", r.CollectiveName, r.Rows[0].Size)})
		}
	}
	sort.SliceStable(a.Notes, func(i, j int) bool { return a.Notes[i].Line < a.Notes[j].Line })
	a.Skipped = sk.result()
	if len(p.machine) > 0 {
		a.Machine = p.machine
	}
	sort.SliceStable(a.Findings, func(i, j int) bool { return a.Findings[i].Line < a.Findings[j].Line })
	return a, nil
}

// log completes the pass as an NCCL log, ignoring any tables.
func (p *textPass) log(name string) *Artifact {
	a := &Artifact{File: name}
	a.Log = p.lp.finish(map[int]string{})
	a.Skipped = p.cuts.result()
	a.Notes = p.lp.notes
	if len(p.machine) > 0 {
		a.Machine = p.machine
	}
	return a
}

// parseText is the shared pass over a text file of nccl-tests output and/or
// NCCL log lines held in memory. With wantRuns false, tables are ignored.
func parseText(name string, data []byte, wantRuns bool) (*Artifact, error) {
	p, err := scanText(name, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	if wantRuns {
		return p.tests(name)
	}
	return p.log(name), nil
}

// parseNCCLTests parses nccl-tests text output (any version, any collective,
// several runs per file) and the NCCL log lines in it.
func parseNCCLTests(name string, data []byte) (*Artifact, error) {
	return streamNCCLTests(name, bytes.NewReader(data), data)
}

// streamNCCLTests is parseNCCLTests reading from r; head is the start of
// the input (all of it for small files), searched for an nvidia-smi topo -m
// listing: job scripts print one before running NCCL, so a listing further
// down a large log than head reaches is not looked for.
func streamNCCLTests(name string, r io.Reader, head []byte) (*Artifact, error) {
	p, err := scanText(name, r)
	if err != nil {
		return nil, err
	}
	a, err := p.tests(name)
	if err == nil {
		attachTopo(name, head, a)
	}
	return a, err
}

// attachTopo adds an nvidia-smi topo -m listing that a log also holds
// (job scripts often print it before running NCCL).
func attachTopo(name string, data []byte, a *Artifact) {
	if !bytes.Contains(data, []byte("GPU0")) {
		return
	}
	if t, err := parseTopoMatrix(name, data); err == nil {
		a.Topo = t.Topo
		a.Findings = append(a.Findings, t.Findings...)
	}
}

// detectNCCLTests accepts a results-table header ("# size count type ...
// busbw"), or nccl-tests preamble lines followed by rows.
func detectNCCLTests(h *head) bool {
	return h.has(func(s string) bool {
		t := strings.TrimSpace(s)
		if !strings.HasPrefix(t, "#") {
			return false
		}
		f := strings.Fields(strings.TrimPrefix(t, "#"))
		return indexOf(f, "size") == 0 && indexOf(f, "busbw") > 0 && indexOf(f, "algbw") > 0
	})
}
