package ingest

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

// perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat): a dashed block
// with a title ("RDMA_Write BW Test") and "Key : value" settings (Device,
// Link type, Mtu, ...), then a column header
//
//	#bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]
//
// (MB/sec without --report_gbits; perftest's MB is 2^20 bytes, as its
// message-rate column confirms: MB/sec = MsgRate x size / 2^20), or for
// latency tests
//
//	#bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] ...
//
// and one row per message size.

var perftestTitles = []struct {
	title, test string
	bidir       bool
}{
	// perftest's -b runs print their own titles, with the two directions'
	// bandwidths summed in every BW column.
	{"RDMA_Write Bidirectional BW Test", "ib_write_bw", true},
	{"RDMA_Read Bidirectional BW Test", "ib_read_bw", true},
	{"Send Bidirectional BW Test", "ib_send_bw", true},
	{"RDMA_Write BW Test", "ib_write_bw", false},
	{"RDMA_Read BW Test", "ib_read_bw", false},
	{"Send BW Test", "ib_send_bw", false},
	{"Atomic FETCH_AND_ADD BW Test", "ib_atomic_bw", false},
	{"Atomic CMP_AND_SWAP BW Test", "ib_atomic_bw", false},
	{"RDMA_Write Latency Test", "ib_write_lat", false},
	{"RDMA_Read Latency Test", "ib_read_lat", false},
	{"Send Latency Test", "ib_send_lat", false},
	{"Atomic FETCH_AND_ADD Latency Test", "ib_atomic_lat", false},
}

var (
	reIBCommand = regexp.MustCompile(`\b(ib_(?:write|read|send|atomic)_(?:bw|lat))\b`)
	reKV        = regexp.MustCompile(`([A-Za-z][A-Za-z .*/_-]*?)\s*:\s*(\S+)`)
)

func detectPerftest(h *head) bool {
	if h.has(func(s string) bool {
		f := strings.Fields(s)
		return len(f) >= 3 && f[0] == "#bytes" && f[1] == "#iterations"
	}) {
		return true
	}
	for _, t := range perftestTitles {
		if bytes.Contains(h.raw, []byte(t.title)) {
			return true
		}
	}
	return false
}

// perftestColumns merges header tokens into column names ("BW" "peak[Gb/sec]" -> "BW peak[Gb/sec]").
func perftestColumns(f []string) []string {
	var out []string
	for i := 0; i < len(f); i++ {
		t := f[i]
		if (t == "BW" || strings.HasSuffix(t, "%")) && i+1 < len(f) {
			t += " " + f[i+1]
			i++
		}
		out = append(out, t)
	}
	return out
}

func parsePerftest(name string, data []byte) (*Artifact, error) {
	sk := &skipper{}
	lines := collectLines(data, sk)
	a := &Artifact{Kind: KindPerftest}
	var cur *PerftestResult
	var cols []string
	lastCmd, records := "", 0
	gpuDirect := false
	settings := map[string]string{}
	newResult := func(test string) {
		if len(a.Perftest) >= maxRuns {
			cur = &PerftestResult{}
			return
		}
		if test == "" {
			test = lastCmd
		}
		cur = &PerftestResult{Test: test}
		a.Perftest = append(a.Perftest, cur)
		cols = nil
		settings = map[string]string{}
	}
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" || strings.HasPrefix(t, "---") || strings.HasPrefix(t, "***") {
			continue
		}
		if m := reIBCommand.FindStringSubmatch(t); m != nil && !strings.HasPrefix(t, "#") {
			lastCmd = m[1]
		}
		if strings.Contains(t, "CUDA") || strings.Contains(t, "GPUDirect") || strings.Contains(t, "use_cuda") {
			gpuDirect = true
		}
		title, bidir := "", false
		for _, pt := range perftestTitles {
			if t == pt.title || strings.HasPrefix(t, pt.title) {
				title, bidir = pt.test, pt.bidir
				break
			}
		}
		if title != "" {
			newResult(title)
			cur.GPUDirect = gpuDirect
			cur.Bidirectional = bidir
			continue
		}
		f := strings.Fields(t)
		if len(f) >= 3 && f[0] == "#bytes" && f[1] == "#iterations" {
			if cur == nil || len(cur.Rows) > 0 {
				newResult("")
				cur.GPUDirect = gpuDirect
			}
			cols = perftestColumns(f)
			continue
		}
		if cols == nil {
			if cur != nil && strings.Contains(t, ":") {
				for _, kv := range reKV.FindAllStringSubmatch(t, -1) {
					k := strings.ToLower(strings.TrimSpace(kv[1]))
					settings[k] = kv[2]
					switch k {
					case "device":
						cur.Device = kv[2]
					case "link type":
						cur.LinkType = kv[2]
					case "mtu":
						cur.MTU, _ = strconv.Atoi(strings.TrimSuffix(kv[2], "[B]"))
					}
				}
			}
			continue
		}
		if len(f) < 2 || !isInt(f[0]) {
			continue
		}
		if len(f) < len(cols) && len(f) < 3 {
			sk.add(l.num, "perftest row with too few columns", t)
			continue
		}
		if len(cur.Rows) >= maxRowsPerRun || records >= maxRecords {
			continue
		}
		records++
		var row PerftestRow
		row.Bytes, _ = strconv.ParseInt(f[0], 10, 64)
		bad := false
		for ci := 1; ci < len(cols) && ci < len(f); ci++ {
			v, ok := parseNum(f[ci])
			if !ok {
				bad = true
				break
			}
			c := cols[ci]
			unitMB := strings.Contains(c, "[MB/sec]")
			if unitMB {
				v = v * 1048576 * 8 / 1e9
			}
			switch {
			case c == "#iterations":
				row.Iters = int64(v)
			case strings.HasPrefix(c, "BW peak"):
				row.PeakGbs = v
			case strings.HasPrefix(c, "BW average"):
				row.AvgGbs = v
			case strings.HasPrefix(c, "t_min"):
				row.LatMinUs = v
			case strings.HasPrefix(c, "t_typical"):
				row.LatTypUs = v
			case strings.HasPrefix(c, "t_avg"):
				row.LatAvgUs = v
			}
		}
		if bad {
			sk.add(l.num, "perftest row with a non-numeric value", t)
			continue
		}
		cur.Rows = append(cur.Rows, row)
	}
	var keep []*PerftestResult
	for _, r := range a.Perftest {
		if len(r.Rows) > 0 {
			keep = append(keep, r)
		}
	}
	a.Perftest = keep
	a.Skipped = sk.result()
	if len(a.Perftest) == 0 {
		return nil, errNoData(name, 1, "perftest output without any result row")
	}
	return a, nil
}
