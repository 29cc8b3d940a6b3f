package ingest

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// nccl-tests -J output (src/util.cu, nccl-facts §1.3 item 10): one object
// with version, args, env, nccl_version, config{..., devices[...]},
// results[{size, count, type, redop, root, out_of_place{time, alg_bw,
// bus_bw, nwrong}, in_place{...}}], out_of_bounds{count}, and
// average_bus_bandwidth{bandwidth}. Keys are matched loosely (alg_bw, algbw,
// algBw; nwrong, wrong, #wrong; cpu_time for time), and a top-level array of
// such objects is read as several runs.

func detectNCCLTestsJSON(h *head) bool {
	c := firstJSONChar(h.raw)
	if c != '{' && c != '[' {
		return false
	}
	r := h.raw
	return (bytes.Contains(r, []byte(`"results"`)) || bytes.Contains(r, []byte(`"out_of_place"`))) &&
		(bytes.Contains(r, []byte(`bus_bw"`)) || bytes.Contains(r, []byte(`busbw"`)) || bytes.Contains(r, []byte(`"average_bus_bandwidth"`)))
}

func parseNCCLTestsJSON(name string, data []byte) (*Artifact, error) {
	v, err := decodeJSON(name, data)
	if err != nil {
		return nil, err
	}
	docs := jlist(v)
	if docs == nil {
		docs = []any{v}
	}
	a := &Artifact{Kind: KindNCCLTestsJSON}
	sk := &skipper{}
	resultsAt, records := 0, 0
	for di, doc := range docs {
		if len(a.Runs) >= maxRuns {
			break
		}
		if _, ok := doc.(map[string]any); !ok {
			sk.add(0, fmt.Sprintf("top-level element %d is not an object", di), "")
			continue
		}
		if i := bytes.Index(data[resultsAt:], []byte(`"results"`)); i >= 0 {
			resultsAt += i + 1
		}
		if records >= maxRecords {
			sk.add(0, fmt.Sprintf("more than %d results; the rest is ignored", maxRecords), "")
			break
		}
		r := jsonRun(doc, data, resultsAt, sk)
		if r == nil {
			continue
		}
		records += len(r.Rows) + len(r.Devices)
		a.Runs = append(a.Runs, r)
	}
	a.Skipped = sk.result()
	if len(a.Runs) == 0 {
		return nil, errNoData(name, 1, "nccl-tests JSON without any result with a size and bandwidth")
	}
	for _, r := range a.Runs {
		if r.OutOfBounds > 0 {
			a.Findings = append(a.Findings, Finding{Code: FindWrongResults, Severity: SevError,
				Message: fmt.Sprintf("nccl-tests found %d out-of-bounds values", r.OutOfBounds), Line: r.Line})
		}
	}
	return a, nil
}

// jsonRun reads one nccl-tests JSON document.
func jsonRun(doc any, data []byte, resultsAt int, sk *skipper) *Run {
	results, ok := jget(doc, "results", "rows", "data")
	list := jlist(results)
	if !ok || len(list) == 0 {
		return nil
	}
	r := &Run{OutOfBounds: -1, Params: map[string]string{}, Line: lineAt(data, resultsAt)}
	lines := keyLines(data, resultsAt, "size", min(len(list), maxRowsPerRun))
	for i, it := range list {
		if len(r.Rows) >= maxRowsPerRun {
			break
		}
		ln := 0
		if i < len(lines) {
			ln = lines[i]
		}
		row, why := jsonRow(it, ln)
		if why != "" {
			sk.add(ln, fmt.Sprintf("result %d: %s", i, why), "")
			continue
		}
		r.Rows = append(r.Rows, row)
	}
	if len(r.Rows) == 0 {
		return nil
	}
	if cfg, ok := jget(doc, "config"); ok {
		if m, ok := cfg.(map[string]any); ok {
			for k, x := range m {
				if s := jstr(x); s != "" && len(r.Params) < 64 {
					r.Params[k] = s
				}
			}
		}
	}
	devs, ok := jget(doc, "devices")
	if !ok {
		if cfg, ok2 := jget(doc, "config"); ok2 {
			devs, ok = jget(cfg, "devices")
		}
	}
	if ok {
		for _, d := range jlist(devs) {
			if len(r.Devices) >= maxListItems {
				break
			}
			var dv Device
			if x, ok := jget(d, "rank"); ok {
				n, _ := jint(x)
				dv.Rank = int(n)
			}
			if x, ok := jget(d, "hostname", "host"); ok {
				dv.Host = jstr(x)
			}
			if x, ok := jget(d, "device", "dev"); ok {
				n, _ := jint(x)
				dv.Dev = int(n)
			}
			if x, ok := jget(d, "device_hex", "busid", "bus_id"); ok {
				dv.BusID = jstr(x)
			}
			if x, ok := jget(d, "device_info", "name"); ok {
				dv.Name = jstr(x)
			}
			r.Devices = append(r.Devices, dv)
		}
	}
	if x, ok := jget(doc, "nccl_version"); ok {
		if s := jstr(x); s != "" {
			if strings.Contains(s, ".") {
				r.NCCLVersion = s
			} else {
				r.NCCLVersion = ncclCodeVersion(s)
			}
		}
	}
	if x, ok := jget(doc, "nccl_tests_version", "tests_version"); ok {
		r.TestsVersion = jstr(x)
	}
	if x, ok := jget(doc, "collective", "test", "program"); ok {
		r.Binary = jstr(x)
	} else if args := jlist(mustGet(doc, "args")); len(args) > 0 {
		if m := reBinary.FindStringSubmatch(" " + jstr(args[0])); m != nil {
			r.Binary = m[1]
		}
	}
	if x, ok := jget(doc, "average_bus_bandwidth", "avg_bus_bandwidth", "avg_busbw"); ok {
		if f, ok := jnum(x); ok {
			r.AvgBusBW = f
		} else if y, ok := jget(x, "bandwidth", "value"); ok {
			r.AvgBusBW, _ = jnum(y)
		}
	}
	if x, ok := jget(doc, "out_of_bounds"); ok {
		if n, ok := jint(x); ok {
			r.OutOfBounds = int(n)
		} else if y, ok := jget(x, "count"); ok {
			n, _ := jint(y)
			r.OutOfBounds = int(n)
		}
	}
	finishRun(r, nil)
	return r
}

func mustGet(v any, names ...string) any {
	x, _ := jget(v, names...)
	return x
}

// jsonRow reads one result object; why says what is missing.
func jsonRow(it any, ln int) (Row, string) {
	row := Row{Line: ln, Root: -1}
	sz, ok := jget(it, "size", "bytes")
	if !ok {
		return row, "no size"
	}
	n, ok := jint(sz)
	if !ok || n < 0 {
		return row, fmt.Sprintf("size %v is not a byte count", sz)
	}
	row.Size = n
	if x, ok := jget(it, "count", "elements"); ok {
		row.Count, _ = jint(x)
	}
	if x, ok := jget(it, "type", "dtype", "datatype"); ok {
		row.Type = jstr(x)
	}
	if x, ok := jget(it, "redop", "op"); ok {
		row.Redop = jstr(x)
	}
	if x, ok := jget(it, "root"); ok {
		if v, err := strconv.Atoi(jstr(x)); err == nil {
			row.Root = v
		}
	}
	oop, hasO := jget(it, "out_of_place", "outofplace", "oop")
	ip, hasI := jget(it, "in_place", "inplace", "ip")
	if hasO {
		row.OOP = jsonResult(oop)
	}
	if hasI {
		row.IP = jsonResult(ip)
	}
	if !row.OOP.Valid && !row.IP.Valid {
		// Flat layout: bus_bw etc. directly in the row.
		if f := jsonResult(it); f.Valid {
			row.OOP = f
		}
	}
	if !row.OOP.Valid && row.IP.Valid {
		// trace replay writes only in-place results; keep them as the group
		// that exists
		return row, ""
	}
	if !row.OOP.Valid {
		return row, "no out_of_place bus_bw/alg_bw/time"
	}
	return row, ""
}

func jsonResult(v any) Result {
	var res Result
	if v == nil {
		return res
	}
	t, okT := jget(v, "time", "cpu_time", "time_us")
	a, okA := jget(v, "alg_bw", "algbw")
	b, okB := jget(v, "bus_bw", "busbw")
	if !okA || !okB {
		return res
	}
	var ok1, ok2, ok3 bool
	res.AlgBW, ok1 = jnum(a)
	res.BusBW, ok2 = jnum(b)
	ok3 = true
	if okT {
		res.TimeUs, ok3 = jnum(t)
	}
	res.Wrong = -1
	if w, ok := jget(v, "nwrong", "wrong", "#wrong"); ok {
		if n, ok := jnum(w); ok && n >= 0 && n < 1<<62 {
			res.Wrong = int64(n)
		}
	}
	res.Valid = ok1 && ok2 && ok3
	return res
}
