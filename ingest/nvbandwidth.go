package ingest

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// nvbandwidth text output: a version block, "Device N: NAME" lines, then per
// test "Running NAME." and a heading such as "memcpy CE GPU(row) -> GPU(column)
// bandwidth (GB/s)", a matrix with numeric labels, and "SUM NAME value".
// With -j the same data is a JSON object {"nvbandwidth": {..., "testcases":
// [{"name", "status", "bandwidth_description", "bandwidth_matrix": [[...]],
// "sum", ...}]}} whose cells are strings or numbers ("N/A" for none).

var (
	reNVBDevice  = regexp.MustCompile(`^Device (\d+): (.+)$`)
	reNVBRunning = regexp.MustCompile(`^Running (\S+?)\.?$`)
	reNVBSum     = regexp.MustCompile(`^SUM (\S+) (\S+)`)
)

func detectNVBandwidth(h *head) bool {
	return bytes.Contains(h.raw, []byte("nvbandwidth Version")) ||
		(h.has(func(s string) bool { return reNVBRunning.MatchString(strings.TrimSpace(s)) }) &&
			h.has(func(s string) bool { return strings.HasPrefix(strings.TrimSpace(s), "SUM ") }))
}

func detectNVBandwidthJSON(h *head) bool {
	c := firstJSONChar(h.raw)
	return c == '{' && (bytes.Contains(h.raw, []byte(`"nvbandwidth"`)) ||
		(bytes.Contains(h.raw, []byte(`"testcases"`)) && bytes.Contains(h.raw, []byte(`"bandwidth_matrix"`))))
}

// nvbMeta returns the matrix metadata of an nvbandwidth test.
func nvbMeta(test, desc string) Matrix {
	m := Matrix{Title: test, Metric: "bandwidth-uni", Unit: "GB/s"}
	if desc != "" {
		m.Title = test + ": " + desc
	}
	if strings.Contains(test, "bidirectional") || strings.Contains(desc, "<->") {
		m.Metric = "bandwidth-bidi"
	}
	switch {
	case strings.Contains(desc, "(ns)"):
		m.Metric, m.Unit = "latency", "ns"
	case strings.Contains(desc, "(us)"):
		m.Metric, m.Unit = "latency", "us"
	case strings.Contains(test, "latency"):
		m.Metric, m.Unit = "latency", "ns"
	}
	for _, p := range [][2]string{
		{"host_to_device", "h2d"}, {"device_to_host", "d2h"}, {"device_to_device", "d2d"},
		{"all_to_host", "all2h"}, {"host_to_all", "h2all"}, {"all_to_one", "all2one"}, {"one_to_all", "one2all"},
	} {
		if strings.HasPrefix(test, p[0]) {
			m.Path = p[1]
			break
		}
	}
	return m
}

func parseNVBandwidth(name string, data []byte) (*Artifact, error) {
	sk := &skipper{}
	lines := collectLines(data, sk)
	a := &Artifact{Kind: KindNVBandwidth, Machine: map[string]string{}}
	var gpus []string
	test, desc := "", ""
	cells := 0
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i].text)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "nvbandwidth Version:"):
			a.Machine["nvbandwidth"] = strings.TrimSpace(strings.TrimPrefix(t, "nvbandwidth Version:"))
		case strings.HasPrefix(t, "CUDA Runtime Version:"), strings.HasPrefix(t, "CUDA Driver Version:"), strings.HasPrefix(t, "Driver Version:"):
			k, v, _ := strings.Cut(t, ":")
			a.Machine[strings.ToLower(strings.ReplaceAll(k, " ", "_"))] = strings.TrimSpace(v)
		case reNVBDevice.MatchString(t):
			gpus = appendCapped(gpus, reNVBDevice.FindStringSubmatch(t)[2])
		case reNVBRunning.MatchString(t):
			test, desc = reNVBRunning.FindStringSubmatch(t)[1], ""
		case reNVBSum.MatchString(t):
			m := reNVBSum.FindStringSubmatch(t)
			if len(a.Machine) < 256 {
				a.Machine["sum:"+m[1]] = m[2]
			}
		case test != "" && desc == "" && (strings.Contains(t, "(GB/s)") || strings.Contains(t, "(ns)") || strings.Contains(t, "(us)")):
			desc = t
			j := nonEmptyFrom(lines, i+1)
			cols, rows, vals, next, ok := readMatrix(lines, j, false, &cells)
			if !ok {
				sk.add(lines[i].num, "test heading without a matrix below it", t)
				continue
			}
			if len(a.Matrices) >= maxMatrices {
				sk.add(lines[i].num, "too many matrices", "")
				i = len(lines)
				break
			}
			m := nvbMeta(test, desc)
			m.Cols, m.Rows, m.Values = cols, rows, vals
			a.Matrices = append(a.Matrices, &m)
			i = next - 1
		}
	}
	if err := finishMatrices(a, gpus, sk, name, "nvbandwidth output without any complete result matrix"); err != nil {
		return nil, err
	}
	return a, nil
}

func parseNVBandwidthJSON(name string, data []byte) (*Artifact, error) {
	v, err := decodeJSON(name, data)
	if err != nil {
		return nil, err
	}
	root := v
	if x, ok := jget(v, "nvbandwidth"); ok {
		root = x
	}
	a := &Artifact{Kind: KindNVBandwidth, Machine: map[string]string{}}
	sk := &skipper{}
	for _, k := range []string{"version", "git_version", "CUDA Runtime Version", "CUDA Driver Version", "Driver Version"} {
		if x, ok := jget(root, k); ok {
			if s := jstr(x); s != "" {
				a.Machine[strings.ToLower(strings.ReplaceAll(k, " ", "_"))] = s
			}
		}
	}
	if x, ok := jget(root, "GPU Device list", "gpu_device_list", "devices"); ok {
		var names []string
		for _, d := range jlist(x) {
			s := jstr(d)
			if _, n, ok := strings.Cut(s, ": "); ok {
				s = n
			}
			if i := strings.LastIndex(s, " ("); i > 0 {
				s = s[:i]
			}
			names = appendCapped(names, s)
		}
		if len(names) > 0 {
			a.Machine["gpus"] = gpuSummary(names)
		}
	}
	tcs, _ := jget(root, "testcases", "tests")
	cellCount := 0
	lines := keyLines(data, 0, "name", maxMatrices)
	for ti, tc := range jlist(tcs) {
		if len(a.Matrices) >= maxMatrices {
			break
		}
		ln := 0
		if ti < len(lines) {
			ln = lines[ti]
		}
		test := jstr(mustGet(tc, "name"))
		status := jstr(mustGet(tc, "status"))
		if x, ok := jget(tc, "sum"); ok && test != "" && len(a.Machine) < 256 {
			if f, ok := jnum(x); ok {
				a.Machine["sum:"+test] = fmtG(f)
			}
		}
		mx, ok := jget(tc, "bandwidth_matrix", "latency_matrix", "matrix")
		rowsV := jlist(mx)
		if !ok || len(rowsV) == 0 {
			if status != "" && !strings.EqualFold(status, "passed") {
				sk.add(ln, fmt.Sprintf("test %s: status %s", test, status), "")
			}
			continue
		}
		if len(rowsV) > maxMatrixDim || cellCount >= maxCells {
			sk.add(ln, fmt.Sprintf("test %s: matrix larger than %d rows", test, maxMatrixDim), "")
			continue
		}
		desc := jstr(mustGet(tc, "bandwidth_description", "latency_description", "description"))
		m := nvbMeta(test, desc)
		width := 0
		for ri, rv := range rowsV {
			cells := jlist(rv)
			if len(cells) > maxMatrixDim {
				cells = cells[:maxMatrixDim]
			}
			width = max(width, len(cells))
			cellCount += len(cells)
			row := make([]float64, len(cells))
			for ci, c := range cells {
				if f, ok := jnum(c); ok {
					row[ci] = f
				} else {
					row[ci] = math.NaN()
				}
			}
			m.Rows = append(m.Rows, itoa(ri))
			m.Values = append(m.Values, row)
		}
		for ci := 0; ci < width; ci++ {
			m.Cols = append(m.Cols, itoa(ci))
		}
		a.Matrices = append(a.Matrices, &m)
	}
	if len(a.Machine) == 0 {
		a.Machine = nil
	}
	a.Skipped = sk.result()
	if len(a.Matrices) == 0 {
		return nil, errNoData(name, 1, "nvbandwidth JSON without any test matrix")
	}
	return a, nil
}
