package ingest

import (
	"math"
	"strings"
)

// maxSmallFileLines bounds the lines the parsers of small formats (topology
// listings, p2pBandwidthLatencyTest, nvbandwidth, perftest, ibstat, free
// text) keep in memory; the rest is reported as skipped.
const maxSmallFileLines = 200000

// collectLines splits data into lines (prefixes stripped), at most
// maxSmallFileLines; cut lines and the truncation are recorded in sk.
func collectLines(data []byte, sk *skipper) []line {
	var out []line
	eachLine(data, func(l line) bool {
		if l.cut {
			sk.add(l.num, "line longer than 64 KiB, truncated", "")
		}
		if len(out) >= maxSmallFileLines {
			sk.add(l.num, "file has more lines than this format can have; the rest is ignored", "")
			return false
		}
		l.text = stripRankPrefix(l.text)
		out = append(out, l)
		return true
	})
	return out
}

// readMatrix reads a labelled matrix starting at lines[i]: a header line of
// column labels (after an optional corner label such as "D\D", "GPU" or
// "CPU"), then one row per label: "label v v v". Cells that are not numbers
// ("N/A") are NaN. It stops at the first line that is not a row of the
// right width and returns the index after the matrix. ok is false when
// lines[i] is not a matrix header.
func readMatrix(lines []line, i int, corner bool, cells *int) (cols []string, rows []string, vals [][]float64, next int, ok bool) {
	if i >= len(lines) {
		return nil, nil, nil, i, false
	}
	f := strings.Fields(lines[i].text)
	if corner {
		if len(f) < 2 {
			return nil, nil, nil, i, false
		}
		f = f[1:]
	}
	if len(f) == 0 || len(f) > maxMatrixDim {
		return nil, nil, nil, i, false
	}
	cols = f
	j := i + 1
	for ; j < len(lines) && len(rows) < maxMatrixDim && *cells+len(cols) <= maxCells; j++ {
		g := strings.Fields(lines[j].text)
		if len(g) != len(cols)+1 {
			break
		}
		row := make([]float64, len(cols))
		numeric := 0
		for k, s := range g[1:] {
			if v, ok := parseNum(s); ok {
				row[k] = v
				numeric++
			} else {
				row[k] = math.NaN()
			}
		}
		if numeric == 0 && !strings.EqualFold(g[1], "N/A") {
			break
		}
		rows = append(rows, g[0])
		vals = append(vals, row)
		*cells += len(row)
	}
	if len(rows) == 0 {
		return nil, nil, nil, i, false
	}
	return cols, rows, vals, j, true
}

// nonEmptyFrom returns the index of the first non-blank line at or after i.
func nonEmptyFrom(lines []line, i int) int {
	for i < len(lines) && strings.TrimSpace(lines[i].text) == "" {
		i++
	}
	return i
}

// finishMatrices completes an artifact of bandwidth matrices parsed from
// file name: the summary of the GPUs its device lines named, no empty
// Machine map, and the lines skipped. It is an error wrapping
// ErrUnrecognized, saying noMatrix, when no complete matrix was read.
func finishMatrices(a *Artifact, gpus []string, sk *skipper, name, noMatrix string) error {
	if len(gpus) > 0 {
		a.Machine["gpus"] = gpuSummary(gpus)
	}
	if len(a.Machine) == 0 {
		a.Machine = nil
	}
	a.Skipped = sk.result()
	if len(a.Matrices) == 0 {
		return errNoData(name, 1, "%s", noMatrix)
	}
	return nil
}

// gpuSummary turns a list of GPU names into "8x NVIDIA H800" or a joined list.
func gpuSummary(names []string) string {
	if len(names) == 0 {
		return ""
	}
	same := true
	for _, n := range names[1:] {
		same = same && n == names[0]
	}
	if same {
		return itoa(len(names)) + "x " + names[0]
	}
	return strings.Join(names, ", ")
}

func boolPtr(b bool) *bool { return &b }
