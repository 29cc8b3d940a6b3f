package ingest

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// CUDA sample p2pBandwidthLatencyTest: "Device: 0, NAME, pciBusID: ..."
// lines, "Device=0 CAN(NOT) Access Peer Device=1" lines, the P2P
// connectivity matrix, uni- and bidirectional bandwidth matrices with P2P
// disabled and enabled (GB/s), and latency matrices (us) for GPU and CPU.

var (
	reP2PDevice = regexp.MustCompile(`^Device: (\d+), (.*?), pciBusID: ([0-9a-fA-F]+)`)
	reP2PAccess = regexp.MustCompile(`^Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+)`)
)

func detectP2P(h *head) bool {
	return bytes.Contains(h.raw, []byte("P2P (Peer-to-Peer) GPU Bandwidth Latency Test")) ||
		bytes.Contains(h.raw, []byte("P2P Connectivity Matrix")) ||
		(bytes.Contains(h.raw, []byte("P2P=Disabled")) && bytes.Contains(h.raw, []byte("Matrix")))
}

func parseP2P(name string, data []byte) (*Artifact, error) {
	sk := &skipper{}
	lines := collectLines(data, sk)
	a := &Artifact{Kind: KindP2PBandwidth, Machine: map[string]string{}}
	var gpus []string
	var cannot []line
	cells := 0
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i].text)
		if m := reP2PDevice.FindStringSubmatch(t); m != nil {
			gpus = appendCapped(gpus, m[2])
			continue
		}
		if m := reP2PAccess.FindStringSubmatch(t); m != nil {
			if m[2] == "CANNOT" {
				cannot = append(cannot, lines[i])
			}
			continue
		}
		title, ok := p2pTitle(t)
		if !ok {
			continue
		}
		if len(a.Matrices) >= maxMatrices {
			sk.add(lines[i].num, "too many matrices", "")
			break
		}
		// Latency sections hold a GPU matrix, then a CPU matrix.
		j := i + 1
		for part := 0; part < 2; part++ {
			j = nonEmptyFrom(lines, j)
			if j >= len(lines) {
				break
			}
			hdr := strings.Fields(lines[j].text)
			if len(hdr) == 0 {
				break
			}
			cols, rows, vals, next, ok := readMatrix(lines, j, true, &cells)
			if !ok {
				if part == 0 {
					sk.add(lines[j].num, "matrix heading without a matrix below it", t)
				}
				break
			}
			m := title
			m.Cols, m.Rows, m.Values = cols, rows, vals
			if m.Metric == "latency" {
				m.Path = strings.ToLower(hdr[0])
			}
			if part == 1 && m.Metric != "latency" {
				break
			}
			a.Matrices = append(a.Matrices, &m)
			j = next
			if m.Metric != "latency" {
				break
			}
		}
		i = j - 1
	}
	if err := finishMatrices(a, gpus, sk, name, "p2pBandwidthLatencyTest output without any complete matrix"); err != nil {
		return nil, err
	}
	a.Findings = append(a.Findings, p2pFindings(a, cannot)...)
	return a, nil
}

// p2pTitle recognises a matrix heading and returns the matrix metadata.
func p2pTitle(t string) (Matrix, bool) {
	m := Matrix{Title: t}
	switch {
	case strings.HasPrefix(t, "P2P Connectivity Matrix"):
		m.Metric, m.Unit = "p2p-connectivity", ""
	case strings.Contains(t, "Bandwidth") && strings.Contains(t, "Matrix"):
		m.Metric, m.Unit = "bandwidth-uni", "GB/s"
		if strings.HasPrefix(t, "Bidirectional") {
			m.Metric = "bandwidth-bidi"
		}
	case strings.Contains(t, "Latency") && strings.Contains(t, "Matrix"):
		m.Metric, m.Unit = "latency", "us"
	default:
		return m, false
	}
	switch {
	case strings.Contains(t, "P2P=Enabled"):
		m.P2P = boolPtr(true)
	case strings.Contains(t, "P2P=Disabled"):
		m.P2P = boolPtr(false)
	}
	return m, true
}

func p2pFindings(a *Artifact, cannot []line) []Finding {
	if len(cannot) > 0 {
		ev := make([]string, 0, 4)
		for _, l := range cannot {
			if len(ev) == 4 {
				ev = append(ev, "...")
				break
			}
			ev = append(ev, strings.TrimSpace(l.text))
		}
		msg := fmt.Sprintf("%d GPU pairs cannot use peer-to-peer access: copies between them are staged through host memory, and NCCL falls back to SHM (or NET) instead of P2P", len(cannot))
		if bw := p2pBW(a); bw != "" {
			msg += "; " + bw
		}
		return []Finding{{Code: FindP2PUnavailable, Severity: SevWarning, Message: msg, Evidence: strings.Join(ev, "; "), Line: cannot[0].num}}
	}
	for _, m := range a.Matrices {
		if m.Metric != "p2p-connectivity" {
			continue
		}
		for i := range m.Values {
			for j, v := range m.Values[i] {
				if i != j && v == 0 {
					return []Finding{{Code: FindP2PUnavailable, Severity: SevWarning,
						Message:  "the P2P connectivity matrix has pairs without peer access",
						Evidence: fmt.Sprintf("row %s column %s is 0", m.Rows[i], m.Cols[j])}}
				}
			}
		}
	}
	return nil
}

// p2pBW summarises the off-diagonal unidirectional bandwidth with P2P enabled.
func p2pBW(a *Artifact) string {
	for _, m := range a.Matrices {
		if m.Metric != "bandwidth-uni" || m.P2P == nil || !*m.P2P {
			continue
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := range m.Values {
			for j, v := range m.Values[i] {
				if i != j && !math.IsNaN(v) {
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
		}
		if hi >= lo {
			return fmt.Sprintf("GPU-to-GPU bandwidth with P2P requested is only %s-%s GB/s", fmtG(lo), fmtG(hi))
		}
	}
	return ""
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func itoa(n int) string { return strconv.Itoa(n) }
