package ingest

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// nvidia-smi topo -m: a header of device labels (GPU0.., NIC0.. or device
// names such as mlx5_0) followed by "CPU Affinity", "NUMA Affinity" and
// "GPU NUMA ID", one row per device with a path type per column (X, PIX,
// PXB, PHB, NODE, SYS, NV#), then a legend and a "NIC Legend" mapping NIC
// labels to device names. Tabs or spaces separate cells; shell prompts and
// other text may surround it. nvidia-smi topo -p2p prints the same shape of
// matrix with OK, NS, CNS, GNS, TNS, U cells.

var (
	reGPULabel  = regexp.MustCompile(`^GPU\d+$`)
	reNICLegend = regexp.MustCompile(`^(NIC\d+):\s*(\S+)$`)
	reAffinity  = strings.NewReplacer("CPU Affinity", "CPU_Affinity", "NUMA Affinity", "NUMA_Affinity", "GPU NUMA ID", "GPU_NUMA_ID")
)

// topoCell reports whether s is a path-type cell and whether it is a P2P status cell.
func topoCell(s string) (path, p2p bool) {
	switch s {
	case "X", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC":
		return true, s == "X"
	case "OK", "NS", "CNS", "GNS", "TNS", "U", "NA":
		return false, true
	}
	if nvLinks(s) > 0 {
		return true, false
	}
	return false, false
}

// topoHeader returns the device labels of a matrix header line, or nil.
// A UTF-8 byte order mark before the labels (a listing saved by a Windows
// editor) is ignored.
func topoHeader(s string) []string {
	s = strings.TrimPrefix(strings.TrimLeft(s, " \t"), "\ufeff")
	f := strings.Fields(reAffinity.Replace(s))
	if len(f) == 0 || !reGPULabel.MatchString(f[0]) {
		return nil
	}
	var labels []string
	for _, t := range f {
		if strings.HasSuffix(t, "_Affinity") || t == "GPU_NUMA_ID" {
			break
		}
		labels = append(labels, t)
	}
	if len(labels) > maxMatrixDim {
		return nil
	}
	return labels
}

func detectTopoMatrix(h *head) bool {
	for i, s := range h.lines {
		labels := topoHeader(s)
		if labels == nil || i+1 >= len(h.lines) {
			continue
		}
		f := strings.Fields(h.lines[i+1])
		if len(f) >= 2 && f[0] == labels[0] && (f[1] == "X" || (len(f) > 2 && f[2] == "X")) {
			return true
		}
		if len(f) >= 2 && f[0] == labels[0] {
			if path, _ := topoCell(f[1]); path {
				return true
			}
		}
	}
	return false
}

// symmetric checks that a path matrix reads the same both ways: a path
// type is a property of a pair (nvidia-smi prints each pair twice), so a
// difference means an edited or corrupted listing. The error names both
// cells and the line of the first row.
func symmetric(name string, labels []string, rows [][]string, rowLine []int) error {
	norm := func(c string) string {
		if c == "SOC" {
			return "SYS"
		}
		return c
	}
	for i := range rows {
		for j := i + 1; j < len(rows); j++ {
			a, b := norm(rows[i][j]), norm(rows[j][i])
			if a != b {
				return errNoData(name, rowLine[i], "topology matrix is not symmetric: row %s column %s is %s but row %s column %s (line %d) is %s",
					labels[i], labels[j], rows[i][j], labels[j], labels[i], rowLine[j], rows[j][i])
			}
		}
	}
	return nil
}

// looksLikeRow reports whether the fields of a line are a matrix row of n
// cells (a label, then at least n cells of which one is a path or P2P
// status), not the header of a next matrix (labels only).
func looksLikeRow(f []string, n int) bool {
	if len(f) <= n {
		return false
	}
	for _, c := range f[1 : n+1] {
		if p, q := topoCell(c); p || q || badNVCell(c) {
			return true
		}
	}
	return false
}

// checkNVCells refuses NV# cells nvidia-smi does not print (NV0, NV-3,
// NV999, NVx): read as "no NVLink" they would silently rebuild an NVLink
// node as a PCIe one. The error names the line, the row and column and the cell.
func checkNVCells(name string, labels []string, rows [][]string, rowLine []int) error {
	for i, r := range rows {
		for j, c := range r {
			if badNVCell(c) {
				return errNoData(name, rowLine[i], "topology matrix %s row, %s column: %q is not an NVLink count (NV1..NV%d, the number of bonded NVLinks between the two GPUs)",
					labels[i], labels[j], c, maxNVLinkCount)
			}
		}
	}
	return nil
}

func parseTopoMatrix(name string, data []byte) (*Artifact, error) {
	sk := &skipper{}
	lines := collectLines(data, sk)
	a := &Artifact{Kind: KindTopoMatrix}
	t := &TopoInfo{Source: string(KindTopoMatrix)}
	var pathLabels []string
	var pathRows [][]string
	var cpuAff []string
	var numa []int
	headerLine, p2pLine := 0, 0
	nicNames := map[string]string{}
	for i := 0; i < len(lines); i++ {
		if m := reNICLegend.FindStringSubmatch(strings.TrimSpace(lines[i].text)); m != nil {
			nicNames[m[1]] = m[2]
			continue
		}
		labels := topoHeader(lines[i].text)
		if labels == nil {
			continue
		}
		hdrNum := lines[i].num
		rows := make([][]string, len(labels))
		aff := make([]string, len(labels))
		nm := make([]int, len(labels))
		rowLine := make([]int, len(labels))
		isPath, isP2P, got := false, false, 0
		j := i + 1
		for ; j < len(lines) && got < len(labels); j++ {
			f := strings.Fields(lines[j].text)
			if len(f) == 0 {
				break
			}
			k := indexOf(labels, f[0])
			if k >= 0 && rows[k] != nil && (isPath || isP2P) && looksLikeRow(f, len(labels)) {
				return nil, errNoData(name, lines[j].num, "topology matrix row %s appears twice (lines %d and %d)", f[0], rowLine[k], lines[j].num)
			}
			if k < 0 || rows[k] != nil {
				break
			}
			cells := f[1:]
			if len(cells) < len(labels) {
				// NIC rows in some versions stop at the last device column;
				// anything shorter is a truncated row.
				sk.add(lines[j].num, fmt.Sprintf("row %s has %d of %d cells", f[0], len(cells), len(labels)), lines[j].text)
				rows[k] = nil
				got = -1
				break
			}
			rows[k] = cells[:len(labels)]
			rowLine[k] = lines[j].num
			for _, c := range rows[k] {
				p, q := topoCell(c)
				// A garbled NV# cell still marks a path matrix, to be
				// refused below rather than skipped as unknown text.
				isPath = isPath || (p && c != "X") || badNVCell(c)
				isP2P = isP2P || (q && c != "X")
			}
			rest := cells[len(labels):]
			nm[k] = -1
			if len(rest) >= 1 {
				aff[k] = rest[0]
			}
			if len(rest) >= 2 {
				if v, err := strconv.Atoi(rest[1]); err == nil && v >= 0 && v < 1<<16 {
					nm[k] = v
				}
			}
			got++
		}
		if got < 0 {
			return nil, errNoData(name, sk.list[len(sk.list)-1].Line, "topology matrix with a truncated row (%s)", sk.list[len(sk.list)-1].Reason)
		}
		if got < len(labels) {
			missing := ""
			for k, r := range rows {
				if r == nil {
					missing = labels[k]
					break
				}
			}
			if isPath || isP2P {
				return nil, errNoData(name, hdrNum, "topology matrix header lists %d devices but row %s is missing", len(labels), missing)
			}
			continue
		}
		if got == len(labels) && (isPath || isP2P) && j < len(lines) {
			// A row repeated right after the last one.
			if f := strings.Fields(lines[j].text); looksLikeRow(f, len(labels)) {
				if k := indexOf(labels, f[0]); k >= 0 {
					return nil, errNoData(name, lines[j].num, "topology matrix row %s appears twice (lines %d and %d)", f[0], rowLine[k], lines[j].num)
				}
			}
		}
		switch {
		case isPath && pathLabels == nil:
			if err := checkNVCells(name, labels, rows, rowLine); err != nil {
				return nil, err
			}
			if err := symmetric(name, labels, rows, rowLine); err != nil {
				return nil, err
			}
			pathLabels, pathRows, cpuAff, numa, headerLine = labels, rows, aff, nm, hdrNum
		case isP2P && !isPath && t.P2P == nil:
			t.P2PLabels, t.P2P, p2pLine = labels, rows, hdrNum
		}
		i = j - 1
	}
	a.Skipped = sk.result()
	if pathLabels == nil {
		return nil, errNoData(name, 1, "no nvidia-smi topo -m path matrix (rows of X, PIX, PXB, PHB, NODE, SYS, NV#)")
	}
	// GPUs first, then NICs, as the model numbers them.
	var gpus, nics []int
	for k, l := range pathLabels {
		if reGPULabel.MatchString(l) {
			gpus = append(gpus, k)
		} else {
			nics = append(nics, k)
		}
	}
	order := append(append([]int(nil), gpus...), nics...)
	g := &topoGraph{nGPU: len(gpus), nNIC: len(nics)}
	g.rel = make([][]string, len(order))
	for a2, oa := range order {
		g.rel[a2] = make([]string, len(order))
		for b2, ob := range order {
			c := pathRows[oa][ob]
			if c == "SOC" {
				c = "SYS" // older drivers
			}
			g.rel[a2][b2] = c
		}
	}
	for _, k := range gpus {
		g.numa = append(g.numa, numa[k])
		if cpuAff[k] != "" {
			t.CPUAffinity = append(t.CPUAffinity, cpuAff[k])
		}
	}
	if len(t.CPUAffinity) != len(gpus) {
		t.CPUAffinity = nil
	}
	t.NUMA = g.numa
	for _, k := range order {
		t.Labels = append(t.Labels, pathLabels[k])
	}
	t.Matrix = g.rel
	for _, k := range nics {
		l := pathLabels[k]
		if n, ok := nicNames[l]; ok {
			if t.NICNames == nil {
				t.NICNames = map[string]string{}
			}
			t.NICNames[l] = n
		}
	}
	var notes []string
	t.Node, notes = g.buildNode()
	t.Node.Name = "topo"
	t.Node.Source = fmt.Sprintf("%s (nvidia-smi topo -m, line %d)", name, headerLine)
	t.Notes = append(t.Notes, notes...)
	if t.Node.NVLink.Kind == "nvswitch" {
		gpu, note := inferGPU(t.Node.NVLink.Links, 0)
		t.Node.GPU = gpu
		if note != "" {
			t.Notes = append(t.Notes, note)
		}
	}
	a.Topo = t
	a.Findings = append(a.Findings, topoFindings(t, headerLine, p2pLine)...)
	if bytes.Contains(data, []byte(" NCCL ")) {
		// a job log that prints the topology, then NCCL_DEBUG lines
		if l, err := parseText(name, data, false); err == nil {
			a.Log, a.Machine = l.Log, l.Machine
		}
	}
	return a, nil
}
