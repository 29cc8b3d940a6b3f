package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/collsim/collsim/model"
)

// TraceOptions bound a trace.
type TraceOptions struct {
	// MaxEvents bounds the slices written (0 = DefaultTraceEvents); beyond
	// it every k-th op is kept and the trace's otherData says so.
	MaxEvents int
	// Links is how many of the busiest links get a utilisation counter
	// track (0 = DefaultTraceLinks).
	Links int
}

// Trace bounds by default.
const (
	DefaultTraceEvents = 1_000_000
	DefaultTraceLinks  = 8
)

// TraceInfo says what a trace holds.
type TraceInfo struct {
	// Ops is the schedule's op count; Slices how many were written; Every
	// the sampling stride (1 = every op).
	Ops, Slices, Every int
	// Counters is the number of counter samples written.
	Counters int
}

// Trace simulates one call of req at the requested size with the DES and
// writes its timeline to w as Chrome/Perfetto trace-event JSON
// ({"traceEvents": [...]}, ts and dur in microseconds): one process per GPU
// (pid = global rank) with one thread per channel group (tid = group), each
// transfer the GPU sends and each step latency or reduction it waits as an
// "X" slice, and a "links" process whose counter ("C") tracks give the
// utilisation of the busiest links over time (each transfer's bytes spread
// evenly over its duration). Metadata ("M") events name every track. When
// the DES simulates a prefix of a long pipeline (see Point.Note) the trace
// shows that prefix. It returns the point as Predict would and what the
// trace holds. Memory is O(ops); the output is bounded by opts.MaxEvents.
func (e *Env) Trace(ctx context.Context, req Request, requested model.Bytes, w io.Writer, opts TraceOptions) (Point, TraceInfo, error) {
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = DefaultTraceEvents
	}
	if opts.Links <= 0 {
		opts.Links = DefaultTraceLinks
	}
	req.Engine = EngineDES
	if req.ElemSize <= 0 {
		req.ElemSize = 4
	}
	pt, err := e.Predict(ctx, req, requested)
	if err != nil {
		return pt, TraceInfo{}, err
	}
	if pt.Size == 0 {
		return pt, TraceInfo{}, fmt.Errorf("sim: a call of 0 bytes has no timeline to trace")
	}
	call := Call{Coll: req.Coll, Bytes: pt.Size, Choice: pt.Choice}
	_, ph, _, err := e.physicalForm(call)
	if err != nil {
		return pt, TraceInfo{}, err
	}
	// Every GPU of the cluster has a track: the run simulates every node,
	// not node 0 standing for a symmetric cluster (whose times are the
	// same, TestBundlesExact and the symmetric-reduction tests).
	full := req
	full.Full = true
	run, err := e.runDES(ctx, full, call, true, ph)
	if err != nil {
		return pt, TraceInfo{}, err
	}
	info, err := e.writeTrace(w, req, pt, run, opts)
	return pt, info, err
}

// writeTrace writes the trace of a recorded run.
func (e *Env) writeTrace(w io.Writer, req Request, pt Point, run *desRun, opts TraceOptions) (TraceInfo, error) {
	s, res := run.pr.sched, run.res
	n := e.Cluster.NumRanks()
	G := e.Cluster.GPUsPerNode()
	info := TraceInfo{Ops: s.Len()}
	slicesTotal := 0
	for i := range s.Len() {
		if op := s.Op(i); traced(&op, res, i) {
			slicesTotal++
		}
	}
	info.Every = max(1, (slicesTotal+opts.MaxEvents-1)/opts.MaxEvents)

	bw := bufio.NewWriterSize(w, 1<<16)
	first := true
	ev := func(parts ...string) {
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		bw.WriteString("{")
		for i, p := range parts {
			if i > 0 {
				bw.WriteString(",")
			}
			bw.WriteString(p)
		}
		bw.WriteString("}")
	}
	q := strconv.Quote
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	us := func(t model.Time) string { return num(float64(t) / 1e6) }
	bw.WriteString("{\"displayTimeUnit\":\"ns\",\"otherData\":{")
	fmt.Fprintf(bw, "\"generator\":\"collsim\",\"collective\":%s,\"size_bytes\":%d,\"algo\":%s,\"proto\":%s,\"channels\":%d,\"ranks\":%d,\"ops\":%d,\"time_us\":%s,\"sampled\":%t,\"sample_every\":%d",
		q(req.Coll.String()), pt.Size, q(pt.Choice.Algo.String()), q(pt.Choice.Proto.String()), pt.Choice.Channels, n, s.Len(), num(pt.TimeUs), info.Every > 1, info.Every)
	if info.Every > 1 {
		fmt.Fprintf(bw, ",\"sampling\":%s", q(fmt.Sprintf("%d slices exceed the bound of %d: every %d-th op is written", slicesTotal, opts.MaxEvents, info.Every)))
	}
	if run.note != "" || run.pr.skipped > 0 {
		fmt.Fprintf(bw, ",\"note\":%s", q(run.note))
	}
	bw.WriteString("},\"traceEvents\":[\n")

	// Track names: every GPU that appears, its channel threads, the links.
	seenGPU := make([]bool, n)
	type thread struct{ pid, tid int32 }
	seenThread := map[thread]bool{}
	for i := range s.Len() {
		op := new(s.Op(i))
		if !traced(op, res, i) {
			continue
		}
		pid := tracePid(op, n)
		if pid < int32(n) && !seenGPU[pid] {
			seenGPU[pid] = true
		}
		seenThread[thread{pid, op.Channel}] = true
	}
	for r := 0; r < n; r++ {
		if !seenGPU[r] {
			continue
		}
		name := fmt.Sprintf("GPU %d (node %d gpu %d)", r, r/G, r%G)
		ev(`"name":"process_name"`, `"ph":"M"`, `"pid":`+strconv.Itoa(r), `"args":{"name":`+q(name)+`}`)
		ev(`"name":"process_sort_index"`, `"ph":"M"`, `"pid":`+strconv.Itoa(r), `"args":{"sort_index":`+strconv.Itoa(r)+`}`)
	}
	ev(`"name":"process_name"`, `"ph":"M"`, `"pid":`+strconv.Itoa(n), `"args":{"name":"switch reductions"}`)
	ev(`"name":"process_name"`, `"ph":"M"`, `"pid":`+strconv.Itoa(n+1), `"args":{"name":"links (utilisation of the busiest)"}`)
	threads := make([]thread, 0, len(seenThread))
	for t := range seenThread {
		threads = append(threads, t)
	}
	sort.Slice(threads, func(i, j int) bool {
		if threads[i].pid != threads[j].pid {
			return threads[i].pid < threads[j].pid
		}
		return threads[i].tid < threads[j].tid
	})
	for _, t := range threads {
		ev(`"name":"thread_name"`, `"ph":"M"`, `"pid":`+strconv.Itoa(int(t.pid)), `"tid":`+strconv.Itoa(int(t.tid)), `"args":{"name":`+q(fmt.Sprintf("channel group %d", t.tid))+`}`)
	}

	// Slices.
	k := 0
	for i := range s.Len() {
		op := new(s.Op(i))
		if !traced(op, res, i) {
			continue
		}
		k++
		if (k-1)%info.Every != 0 {
			continue
		}
		start, end := res.OpStart[i], res.OpEnd[i]
		name := "step latency"
		args := fmt.Sprintf(`"args":{"op":%d,"unit":%d,"step":%d`, i, op.Unit, op.Step)
		switch {
		case op.Kind == OpTransfer:
			start += op.Latency
			name = "transfer"
			to := "local"
			if len(op.Route) > 0 {
				to = e.LinkName(op.Route[len(op.Route)-1])
			}
			args += fmt.Sprintf(`,"bytes":%s,"members":%d,"last_link":%s`, num(op.Bytes), max(op.Weight, 1), q(to))
		case i == 0:
			name = "launch (base latency)"
		case op.Rank < 0:
			name = "switch reduction"
		}
		args += "}"
		ev(`"name":`+q(name), `"cat":`+q(name), `"ph":"X"`, `"pid":`+strconv.Itoa(int(tracePid(op, n))), `"tid":`+strconv.Itoa(int(op.Channel)),
			`"ts":`+us(start), `"dur":`+us(end-start), args)
		info.Slices++
	}

	// Counters: the busiest links by bytes over capacity.
	type rateStep struct {
		t    model.Time
		rate float64
	}
	load := make([]float64, len(e.caps))
	for i := range s.Len() {
		op := new(s.Op(i))
		if op.Kind != OpTransfer {
			continue
		}
		for _, l := range op.Route {
			load[l] += op.Bytes * float64(max(op.Weight, 1))
		}
	}
	links := make([]int, 0, len(load))
	for l, ld := range load {
		if ld > 0 && e.caps[l] > 0 {
			links = append(links, l)
		}
	}
	sort.SliceStable(links, func(i, j int) bool { return load[links[i]]/e.caps[links[i]] > load[links[j]]/e.caps[links[j]] })
	links = links[:min(len(links), opts.Links)]
	idx := map[model.LinkID]int{}
	for j, l := range links {
		idx[model.LinkID(l)] = j
	}
	steps := make([][]rateStep, len(links))
	for i := range s.Len() {
		op := new(s.Op(i))
		if op.Kind != OpTransfer {
			continue
		}
		t0, t1 := res.OpStart[i]+op.Latency, res.OpEnd[i]
		if t1 <= t0 {
			continue
		}
		r := op.Bytes * float64(max(op.Weight, 1)) / float64(t1-t0)
		for _, l := range op.Route {
			if j, ok := idx[l]; ok {
				steps[j] = append(steps[j], rateStep{t0, r}, rateStep{t1, -r})
			}
		}
	}
	perLink := max(1, opts.MaxEvents/10/max(1, len(links)))
	for j, l := range links {
		st := steps[j]
		slices.SortStableFunc(st, func(a, b rateStep) int { return int(a.t - b.t) })
		name := q("util " + e.LinkName(model.LinkID(l)))
		// Merge steps of one instant, then thin to perLink samples.
		var ts []model.Time
		var vs []float64
		cur := 0.0
		for x := 0; x < len(st); {
			t := st[x].t
			for ; x < len(st) && st[x].t == t; x++ {
				cur += st[x].rate
			}
			ts = append(ts, t)
			// A transfer's fair share changes over its life, so its
			// mean rate can overlap another's peak: at most the link.
			vs = append(vs, math.Min(1, math.Max(0, cur/e.caps[l])))
		}
		every := max(1, (len(ts)+perLink-1)/perLink)
		for x := 0; x < len(ts); x += every {
			ev(`"name":`+name, `"ph":"C"`, `"pid":`+strconv.Itoa(n+1), `"ts":`+us(ts[x]), `"args":{"utilisation":`+strconv.FormatFloat(math.Round(vs[x]*1e4)/1e4, 'f', -1, 64)+`}`)
			info.Counters++
		}
		if last := len(ts) - 1; last >= 0 && last%every != 0 {
			ev(`"name":`+name, `"ph":"C"`, `"pid":`+strconv.Itoa(n+1), `"ts":`+us(ts[last]), `"args":{"utilisation":0}`)
			info.Counters++
		}
	}
	bw.WriteString("\n]}\n")
	return info, bw.Flush()
}

// traced reports whether op i becomes a slice: transfers, and delays that
// take time.
func traced(op *Op, res *Result, i int) bool {
	if op.Kind == OpTransfer {
		return true
	}
	return res.OpEnd[i] > res.OpStart[i]
}

// tracePid is the process of an op: its GPU, or the switch-reduction
// process for work no single GPU does.
func tracePid(op *Op, n int) int32 {
	if op.Rank < 0 || int(op.Rank) >= n {
		return int32(n)
	}
	return op.Rank
}
