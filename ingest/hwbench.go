package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/collsim/collsim/model"
)

// HWBenchFormat is the top-level "format" value of a collsim hwbench report.
const HWBenchFormat = "collsim-hwbench/1"

// Finding codes of hwbench reports.
const (
	// FindHWBenchProbeFailed: a probe of the run failed; its sections may be partial.
	FindHWBenchProbeFailed = "hwbench-probe-failed"
	// FindHWBenchProbeSkipped: a probe did not run (library missing, another rank ran it).
	FindHWBenchProbeSkipped = "hwbench-probe-skipped"
	// FindHWBenchNodeInvalid: the node spec the topo probe built does not validate.
	FindHWBenchNodeInvalid = "hwbench-node-invalid"
)

// IsHWBench reports whether data starts a collsim hwbench report: a JSON
// object whose top-level "format" is HWBenchFormat. It reads only as far
// as that field (hwbench writes it first), so a truncated head will do.
func IsHWBench(data []byte) bool {
	f, ok := hwbenchFormatOf(data)
	return ok && f == HWBenchFormat
}

// hwbenchFormatOf returns the top-level "format" of a JSON object when it
// names a collsim hwbench format of any version ("collsim-hwbench/N").
func hwbenchFormatOf(data []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", false
		}
		if k == "format" {
			var v string
			if dec.Decode(&v) != nil || !strings.HasPrefix(v, "collsim-hwbench/") {
				return "", false
			}
			return v, true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return "", false
		}
	}
	return "", false
}

// isHWBenchAnyVersion is the detector: a report of any hwbench format
// version, so that one this collsim cannot read is refused as such rather
// than read as the NCCL log lines it embeds.
func isHWBenchAnyVersion(data []byte) bool {
	_, ok := hwbenchFormatOf(data)
	return ok
}

// The hwbench report schema, as far as ingest reads it (hwbench's
// report.go is the reference; ingest does not import hwbench).
type hbNum float64

func (n *hbNum) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*n = hbNum(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = hbNum(f)
	return nil
}

type hbMachine struct {
	Hostname    string            `json:"hostname"`
	Kernel      string            `json:"kernel"`
	CPU         string            `json:"cpu"`
	Driver      string            `json:"driver"`
	CUDADriver  string            `json:"cuda_driver"`
	CUDARuntime string            `json:"cuda_runtime"`
	NCCL        string            `json:"nccl"`
	Libraries   map[string]string `json:"libraries"`
	Rank        int               `json:"rank"`
	NRanks      int               `json:"nranks"`
}

type hbStamp struct {
	Machine hbMachine `json:"machine"`
	Time    string    `json:"time"`
}

type hbReport struct {
	Format  string    `json:"format"`
	Tool    string    `json:"tool"`
	Backend string    `json:"backend"`
	Machine hbMachine `json:"machine"`
	Started string    `json:"started"`
	Probes  []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Error  string `json:"error"`
	} `json:"probes"`
	Topo *struct {
		hbStamp
		Node      json.RawMessage `json:"node"`
		NodeError string          `json:"node_error"`
		GPUModel  string          `json:"gpu_model"`
		NICs      []struct {
			Name  string `json:"name"`
			Ports []struct {
				Port      int     `json:"port"`
				State     string  `json:"state"`
				PhysState string  `json:"phys_state"`
				LinkLayer string  `json:"link_layer"`
				RateGbps  float64 `json:"rate_gbps"`
				ActiveMTU int     `json:"active_mtu"`
			} `json:"ports"`
		} `json:"nics"`
		Matrix struct {
			Labels   []string          `json:"labels"`
			Cells    [][]string        `json:"cells"`
			NICNames map[string]string `json:"nic_names"`
			NUMA     []int             `json:"numa"`
		} `json:"matrix"`
	} `json:"topo"`
	Copy *struct {
		hbStamp
		Bytes int64       `json:"bytes"`
		GPUs  []hbCopyGPU `json:"gpus"`
	} `json:"copy"`
	// NVBW is the nvbw probe: nvbandwidth's copy-engine testcases.
	NVBW *struct {
		hbStamp
		GPUs  []int `json:"gpus"`
		Tests []struct {
			Name   string    `json:"name"`
			Title  string    `json:"title"`
			Values [][]hbNum `json:"values"`
		} `json:"tests"`
	} `json:"nvbw"`
	P2P *struct {
		hbStamp
		GPUs     int      `json:"gpus"`
		Access   [][]bool `json:"access"`
		Matrices []struct {
			Title  string    `json:"title"`
			Metric string    `json:"metric"`
			Unit   string    `json:"unit"`
			P2P    bool      `json:"p2p"`
			Values [][]hbNum `json:"values"`
		} `json:"matrices"`
	} `json:"p2p"`
	NCCL *struct {
		hbStamp
		Mode    string   `json:"mode"`
		Ranks   int      `json:"ranks"`
		Hosts   []string `json:"hosts"`
		Devices []struct {
			Rank   int    `json:"rank"`
			Host   string `json:"host"`
			Device int    `json:"device"`
			BusID  string `json:"bus_id"`
			Name   string `json:"name"`
		} `json:"devices"`
		MinBytes   int64    `json:"min_bytes"`
		MaxBytes   int64    `json:"max_bytes"`
		StepFactor int      `json:"step_factor"`
		Iters      int      `json:"iters"`
		Warmup     int      `json:"warmup_iters"`
		DType      string   `json:"dtype"`
		Timing     string   `json:"timing"`
		Notes      []string `json:"notes"`
		Sweeps     []struct {
			Collective string `json:"collective"`
			Test       string `json:"test"`
			Redop      string `json:"redop"`
			Root       *int   `json:"root"` // absent before hwbench swept Broadcast and Reduce: -1
			Rows       []struct {
				Size  int64    `json:"size_bytes"`
				Count int64    `json:"count"`
				OOP   hbTiming `json:"out_of_place"`
				IP    hbTiming `json:"in_place"`
			} `json:"rows"`
			AvgBusBW hbNum `json:"avg_busbw_gbps"`
			Complete bool  `json:"complete"`
		} `json:"sweeps"`
		// DebugLog is NCCL's NCCL_DEBUG=INFO output during the probe.
		DebugLog []string `json:"debug_log"`
	} `json:"nccl"`
	GDR *struct {
		hbStamp
		Ports []struct {
			HCA           string  `json:"hca"`
			Port          int     `json:"port"`
			LinkLayer     string  `json:"link_layer"`
			RateGbps      float64 `json:"rate_gbps"`
			GPU           int     `json:"gpu"`
			Path          string  `json:"path"`
			Route         string  `json:"route"`
			GPUDirect     bool    `json:"gpudirect"`
			RegisterError string  `json:"register_error"`
			Bandwidth     []struct {
				Src   string `json:"src"`
				Dst   string `json:"dst"`
				Bytes int64  `json:"bytes"`
				Iters int64  `json:"iters"`
				GBps  hbNum  `json:"gbps"`
			} `json:"bandwidth"`
			Latency []struct {
				Src   string `json:"src"`
				Dst   string `json:"dst"`
				Bytes int64  `json:"bytes"`
				Iters int64  `json:"iters"`
				Us    hbNum  `json:"us"`
			} `json:"latency"`
			Error string `json:"error"`
		} `json:"ports"`
	} `json:"gdr"`
	// RDMA is the rdma probe: RDMA WRITE between two nodes.
	RDMA *struct {
		Writer struct {
			Host     string  `json:"host"`
			HCA      string  `json:"hca"`
			MTU      int     `json:"mtu"`
			GID      string  `json:"gid"`
			RateGbps float64 `json:"rate_gbps"`
		} `json:"writer"`
		Bandwidth []struct {
			Src   string `json:"src"`
			Dst   string `json:"dst"`
			Bytes int64  `json:"bytes"`
			Iters int    `json:"iters"`
			GBps  hbNum  `json:"gbps"`
		} `json:"bandwidth"`
		Latency []struct {
			Src   string `json:"src"`
			Dst   string `json:"dst"`
			Bytes int64  `json:"bytes"`
			Iters int    `json:"iters"`
			Us    hbNum  `json:"us"`
		} `json:"latency"`
	} `json:"rdma"`
}

// hbCopyGPU is one GPU of the copy probe. The far rows are pinned host
// memory bound to another NUMA node than the GPU's (absent or null on a
// one-node machine).
type hbCopyGPU struct {
	GPU         int   `json:"gpu"`
	H2DPinned   hbNum `json:"h2d_pinned_gbps"`
	D2HPinned   hbNum `json:"d2h_pinned_gbps"`
	H2DPageable hbNum `json:"h2d_pageable_gbps"`
	D2HPageable hbNum `json:"d2h_pageable_gbps"`
	D2D         hbNum `json:"d2d_gbps"`
	FarNUMA     int   `json:"far_numa"`
	H2DFar      hbNum `json:"h2d_pinned_far_gbps"`
	D2HFar      hbNum `json:"d2h_pinned_far_gbps"`
}

type hbTiming struct {
	TimeUs hbNum `json:"time_us"`
	AlgBW  hbNum `json:"algbw_gbps"`
	BusBW  hbNum `json:"busbw_gbps"`
	// Wrong is the data check's #wrong; absent when not checked.
	Wrong *int64 `json:"wrong"`
}

// result is the timing as a Result and, when it is not a valid
// measurement, why: a failed one (null, hwbench's NaN), a time that is not
// positive, or a time or bandwidth beyond the bounds the nccl-tests text
// parser applies (maxPlausibleTimeUs, maxPlausibleGBps). An invalid
// result keeps no NaN (JSON cannot hold one).
func (t hbTiming) result() (Result, string) {
	wrong := int64(-1)
	if t.Wrong != nil {
		wrong = *t.Wrong
	}
	tm, alg, bus := float64(t.TimeUs), float64(t.AlgBW), float64(t.BusBW)
	why := ""
	switch {
	case math.IsNaN(tm) || math.IsNaN(bus) || math.IsNaN(alg):
		why = "a failed measurement (null)"
	case math.IsInf(tm, 0) || math.IsInf(bus, 0) || math.IsInf(alg, 0):
		why = "an infinite value"
	case tm <= 0:
		why = fmt.Sprintf("time %g us is not positive", tm)
	case tm > maxPlausibleTimeUs:
		why = fmt.Sprintf("time %g us is not a plausible measurement", tm)
	case bus < 0 || alg < 0:
		why = "a negative bandwidth"
	case bus > maxPlausibleGBps || alg > maxPlausibleGBps:
		why = fmt.Sprintf("bandwidth %g GB/s is above %g GB/s (100 TB/s), not a plausible measurement", max(bus, alg), float64(maxPlausibleGBps))
	}
	if why != "" {
		clean := func(v float64) float64 {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0
			}
			return v
		}
		return Result{TimeUs: clean(tm), AlgBW: clean(alg), BusBW: clean(bus), Wrong: wrong}, why
	}
	return Result{TimeUs: tm, AlgBW: alg, BusBW: bus, Wrong: wrong, Valid: true}, ""
}

// ParseHWBench converts a collsim hwbench report into an Artifact: the nccl
// sweeps become Runs (Collective, Ranks, Devices, Rows as nccl-tests would
// print them, #wrong from the data check or -1 where it did not run), the p2p and copy
// probes Matrices, the gdr loopback measurements Perftest results, the RDMA
// ports Ports, the topology Topo (the node spec and the path matrix), the
// machine and versions Machine; failed, skipped and notable results become
// Findings. name is used in errors and as Artifact.File. A file that is not
// a hwbench report, or holds no measurement at all, is an error wrapping
// ErrUnrecognized.
func ParseHWBench(name string, data []byte) (*Artifact, error) {
	if f, ok := hwbenchFormatOf(data); ok && f != HWBenchFormat {
		return nil, fmt.Errorf("calibrate: %s:1: hwbench report format %q: this collsim reads %q; use the collsim that wrote it, or a newer one: %w", name, f, HWBenchFormat, ErrUnrecognized)
	}
	if !IsHWBench(data) {
		return nil, fmt.Errorf("calibrate: %s:1: not a collsim hwbench report (no top-level \"format\": %q): %w", name, HWBenchFormat, ErrUnrecognized)
	}
	var r hbReport
	if err := json.Unmarshal(data, &r); err != nil {
		// Name the line and the element, as the other JSON readers do.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, errNoData(name, lineAt(data, int(se.Offset)), "hwbench report: invalid JSON: %v", se)
		case errors.As(err, &te):
			return nil, errNoData(name, lineAt(data, int(te.Offset)), "hwbench report: %s: a JSON %s where the schema has a %s", te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("calibrate: %s: hwbench report: %v: %w", name, err, ErrUnrecognized)
	}
	a := &Artifact{File: name, Kind: KindHWBench, Machine: hbMachineMap(r)}
	for _, p := range r.Probes {
		switch p.Status {
		case "failed":
			a.Findings = append(a.Findings, Finding{Code: FindHWBenchProbeFailed, Severity: SevError,
				Message: fmt.Sprintf("hwbench probe %s failed; its results may be partial", p.Name), Evidence: p.Error})
		case "skipped":
			a.Findings = append(a.Findings, Finding{Code: FindHWBenchProbeSkipped, Severity: SevInfo,
				Message: fmt.Sprintf("hwbench probe %s did not run", p.Name), Evidence: p.Error})
		case "pending", "running":
			a.Findings = append(a.Findings, Finding{Code: FindHWBenchProbeFailed, Severity: SevWarning,
				Message: fmt.Sprintf("hwbench probe %s did not finish (the run stopped: crash or interrupt)", p.Name)})
		}
	}
	if err := hbTopo(a, &r); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", name, err)
	}
	hbRuns(a, &r)
	if r.NCCL != nil && len(r.NCCL.DebugLog) > 0 {
		// The NCCL log parser reads the captured lines as it reads a log
		// file: transports, GDRDMA, channels, NVLS.
		if la, err := parseText(name, []byte(strings.Join(r.NCCL.DebugLog, "\n")), false); err == nil && la.Log != nil {
			a.Log = la.Log
		}
	}
	hbMatrices(a, &r)
	hbGDR(a, &r)
	hbRDMA(a, &r)
	if len(a.Runs) == 0 && len(a.Matrices) == 0 && a.Topo == nil && len(a.Perftest) == 0 && len(a.Ports) == 0 {
		return nil, fmt.Errorf("calibrate: %s:1: hwbench report without any measurement (probes: %s): %w", name, hbProbeList(&r), ErrUnrecognized)
	}
	sortFindings(a.Findings)
	return a, nil
}

func hbProbeList(r *hbReport) string {
	var s []string
	for _, p := range r.Probes {
		s = append(s, p.Name+" "+p.Status)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func hbMachineMap(r hbReport) map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	mc := r.Machine
	set("hostname", mc.Hostname)
	set("kernel", mc.Kernel)
	set("cpu", mc.CPU)
	set("driver", mc.Driver)
	set("cuda_driver", mc.CUDADriver)
	set("cuda_runtime", mc.CUDARuntime)
	set("nccl", mc.NCCL)
	set("tool", r.Tool)
	set("backend", r.Backend)
	set("time", r.Started)
	for k, v := range mc.Libraries {
		set("lib_"+k, v)
	}
	if mc.NRanks > 1 {
		m["rank"] = strconv.Itoa(mc.Rank)
		m["nranks"] = strconv.Itoa(mc.NRanks)
	}
	return m
}

func hbTopo(a *Artifact, r *hbReport) error {
	t := r.Topo
	if t == nil {
		return nil
	}
	ti := &TopoInfo{Labels: t.Matrix.Labels, Matrix: t.Matrix.Cells, NICNames: t.Matrix.NICNames, NUMA: t.Matrix.NUMA}
	if len(t.Node) > 0 && string(t.Node) != "null" {
		// The node is model.NodeSpec under its YAML field names; JSON is YAML.
		if err := yaml.Unmarshal(t.Node, &ti.Node); err != nil {
			return fmt.Errorf("hwbench topo.node: %w", err)
		}
	}
	a.Topo = ti
	if t.NodeError != "" {
		a.Findings = append(a.Findings, Finding{Code: FindHWBenchNodeInvalid, Severity: SevWarning,
			Message: "the node spec hwbench built from this machine does not validate as a model node", Evidence: t.NodeError})
	}
	for _, nic := range t.NICs {
		for _, p := range nic.Ports {
			a.Ports = append(a.Ports, IBPort{Device: nic.Name, Port: p.Port, State: p.State, Physical: p.PhysState,
				RateGbps: int(math.Round(p.RateGbps)), LinkLayer: p.LinkLayer, MTU: p.ActiveMTU})
		}
	}
	return nil
}

// finiteOr0 is v, or 0 for NaN or an infinity (JSON holds neither).
func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func hbRuns(a *Artifact, r *hbReport) {
	n := r.NCCL
	if n == nil {
		return
	}
	for _, sw := range n.Sweeps {
		coll, err := model.ParseCollective(sw.Collective)
		if err != nil {
			a.Skipped = append(a.Skipped, Skip{Reason: fmt.Sprintf("nccl sweep of unknown collective %q", sw.Collective)})
			continue
		}
		run := &Run{Collective: coll, CollectiveName: coll.TestName(), Binary: sw.Test, Ranks: n.Ranks, Hosts: n.Hosts,
			DType: n.DType, DTypeSize: 4, NCCLVersion: n.Machine.NCCL, AvgBusBW: finiteOr0(float64(sw.AvgBusBW)),
			Params: map[string]string{
				"nThread": "1", "minBytes": strconv.FormatInt(n.MinBytes, 10), "maxBytes": strconv.FormatInt(n.MaxBytes, 10),
				"step": fmt.Sprintf("%d(factor)", n.StepFactor), "warmupIters": strconv.Itoa(n.Warmup), "iters": strconv.Itoa(n.Iters),
				"aggIters": "1", "validation": "0", "graph": "0", "timing": n.Timing, "mode": n.Mode, "source": "collsim hwbench",
			}}
		if run.DType == "" {
			run.DType = "float"
		}
		if n.Mode == "multi-process" {
			run.Params["nGpus"] = "1"
		} else {
			run.Params["nGpus"] = strconv.Itoa(n.Ranks)
		}
		if len(n.Notes) > 0 {
			run.Params["note"] = strings.Join(n.Notes, "; ")
		}
		if !sw.Complete {
			run.Params["incomplete"] = "true"
		}
		for _, d := range n.Devices {
			run.Devices = append(run.Devices, Device{Rank: d.Rank, Host: d.Host, Dev: d.Device, BusID: d.BusID, Name: d.Name})
		}
		root := -1
		if sw.Root != nil {
			root = *sw.Root
		}
		oob, checked := 0, false
		for i, row := range sw.Rows {
			where := fmt.Sprintf("nccl sweep %s, row %d (size %d)", sw.Collective, i, row.Size)
			if row.Size < 0 || row.Count < 0 {
				a.Skipped = append(a.Skipped, Skip{Reason: where + ": a negative size or count, row not used"})
				continue
			}
			// A size of 0 (every size below one element per rank) has no
			// call to time: nothing to say about its zero time.
			oop, why := row.OOP.result()
			if why != "" && row.Size > 0 {
				a.Notes = append(a.Notes, Note{Message: fmt.Sprintf("%s: out-of-place %s; the result is not used", where, why)})
			}
			ip, why := row.IP.result()
			if why != "" && row.Size > 0 && row.IP != (hbTiming{}) {
				a.Notes = append(a.Notes, Note{Message: fmt.Sprintf("%s: in-place %s; the result is not used", where, why)})
			}
			for _, w := range []*int64{row.OOP.Wrong, row.IP.Wrong} {
				if w != nil {
					checked = true
					oob += int(max(*w, 0))
				}
			}
			run.Rows = append(run.Rows, Row{Size: row.Size, Count: row.Count, Type: run.DType, Redop: sw.Redop, Root: root, OOP: oop, IP: ip})
		}
		// The nccl-tests text hwbench writes beside the JSON states the
		// data check and its out-of-bounds count; the run read from the
		// JSON says the same.
		run.OutOfBounds = -1
		if checked {
			run.OutOfBounds = oob
			run.Params["validation"] = "1"
		}
		if len(run.Rows) > 0 {
			a.Runs = append(a.Runs, run)
		}
	}
}

func hbLabels(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

func hbValues(v [][]hbNum) [][]float64 {
	out := make([][]float64, len(v))
	for i, row := range v {
		out[i] = make([]float64, len(row))
		for j, x := range row {
			out[i][j] = float64(x)
		}
	}
	return out
}

func hbMatrices(a *Artifact, r *hbReport) {
	if p := r.P2P; p != nil && p.GPUs > 0 {
		labels := hbLabels(p.GPUs)
		if len(p.Access) == p.GPUs {
			conn := make([][]float64, p.GPUs)
			var cannot []string
			for i := range conn {
				conn[i] = make([]float64, p.GPUs)
				for j := range conn[i] {
					if i == j || (j < len(p.Access[i]) && p.Access[i][j]) {
						conn[i][j] = 1
					} else if i < j {
						cannot = append(cannot, fmt.Sprintf("%d-%d", i, j))
					}
				}
			}
			a.Matrices = append(a.Matrices, &Matrix{Title: "P2P Connectivity Matrix", Metric: "p2p-connectivity", Rows: labels, Cols: labels, Values: conn})
			if len(cannot) > 0 {
				a.Findings = append(a.Findings, Finding{Code: FindP2PUnavailable, Severity: SevWarning,
					Message:  fmt.Sprintf("%d GPU pairs cannot use peer-to-peer access: copies between them are staged through host memory, and NCCL falls back to SHM (or NET) instead of P2P", len(cannot)),
					Evidence: "pairs " + strings.Join(cannot, ", ")})
			}
		}
		for _, m := range p.Matrices {
			on := m.P2P
			a.Matrices = append(a.Matrices, &Matrix{Title: m.Title, Metric: m.Metric, Unit: m.Unit, P2P: &on, Path: "d2d",
				Rows: labels, Cols: labels, Values: hbValues(m.Values)})
		}
	}
	if c := r.Copy; c != nil && len(c.GPUs) > 0 {
		cols := make([]string, len(c.GPUs))
		for i, g := range c.GPUs {
			cols[i] = strconv.Itoa(g.GPU)
		}
		for _, k := range []struct {
			title, path string
			get         func(i int) hbNum
		}{
			{"hwbench copy host (pinned) to device bandwidth (GB/s)", "h2d", func(i int) hbNum { return c.GPUs[i].H2DPinned }},
			{"hwbench copy device to host (pinned) bandwidth (GB/s)", "d2h", func(i int) hbNum { return c.GPUs[i].D2HPinned }},
			{"hwbench copy host (pageable) to device bandwidth (GB/s)", "h2d", func(i int) hbNum { return c.GPUs[i].H2DPageable }},
			{"hwbench copy device to host (pageable) bandwidth (GB/s)", "d2h", func(i int) hbNum { return c.GPUs[i].D2HPageable }},
			{"hwbench copy device-local bandwidth (GB/s)", "d2d", func(i int) hbNum { return c.GPUs[i].D2D }},
			{"hwbench copy host (pinned, another NUMA node) to device bandwidth (GB/s)", "h2d", func(i int) hbNum { return c.GPUs[i].H2DFar }},
			{"hwbench copy device to host (pinned, another NUMA node) bandwidth (GB/s)", "d2h", func(i int) hbNum { return c.GPUs[i].D2HFar }},
		} {
			if strings.Contains(k.title, "another NUMA node") && !slices.ContainsFunc(c.GPUs, func(g hbCopyGPU) bool {
				return float64(g.H2DFar) > 0 || float64(g.D2HFar) > 0
			}) {
				continue // a one-node machine, or a report from before the far rows
			}
			row := make([]float64, len(c.GPUs))
			for i := range row {
				row[i] = float64(k.get(i))
			}
			rowLabel := "CPU"
			if k.path == "d2d" {
				rowLabel = "local"
			}
			a.Matrices = append(a.Matrices, &Matrix{Title: k.title, Metric: "bandwidth-uni", Unit: "GB/s", Path: k.path,
				Rows: []string{rowLabel}, Cols: cols, Values: [][]float64{row}})
		}
	}
	if nv := r.NVBW; nv != nil {
		// nvbandwidth's testcases, as the nvbandwidth parsers read them
		// (nvbMeta): rows are the sources (the CPU, or the GPUs), columns
		// the GPUs.
		gpus := make([]string, len(nv.GPUs))
		for i, g := range nv.GPUs {
			gpus[i] = strconv.Itoa(g)
		}
		for _, t := range nv.Tests {
			if len(t.Values) == 0 {
				continue
			}
			m := nvbMeta(t.Name, t.Title)
			m.Title = "hwbench nvbw " + m.Title
			m.Values = hbValues(t.Values)
			m.Cols = hbLabels(len(t.Values[0]))
			if len(t.Values[0]) == len(gpus) {
				m.Cols = gpus
			}
			m.Rows = hbLabels(len(t.Values))
			switch {
			case len(t.Values) == 1:
				m.Rows = []string{"CPU"}
			case len(t.Values) == len(gpus):
				m.Rows = gpus
			}
			a.Matrices = append(a.Matrices, &m)
		}
	}
}

func hbGDR(a *Artifact, r *hbReport) {
	g := r.GDR
	if g == nil {
		return
	}
	haveTopoPorts := len(a.Ports) > 0
	for _, p := range g.Ports {
		link := "IB"
		if p.LinkLayer == "Ethernet" {
			link = "Ethernet"
		}
		if !haveTopoPorts {
			a.Ports = append(a.Ports, IBPort{Device: p.HCA, Port: p.Port, State: "Active", RateGbps: int(math.Round(p.RateGbps)), LinkLayer: p.LinkLayer})
		}
		if !p.GPUDirect {
			ev := p.RegisterError
			if ev == "" {
				ev = p.Error
			}
			a.Findings = append(a.Findings, Finding{Code: FindNoGDR, Severity: SevWarning,
				Message:  fmt.Sprintf("%s port %d cannot register GPU memory: no GPUDirect RDMA, so NCCL stages network traffic through host memory (neither DMA-BUF nor nvidia_peermem worked)", p.HCA, p.Port),
				Evidence: ev})
		}
		if p.Path == "SYS" || p.Path == "NODE" {
			a.Findings = append(a.Findings, Finding{Code: FindNICFarFromGPU, Severity: SevInfo,
				Message:  fmt.Sprintf("the GPU closest to %s is %s away (no GPU shares its PCIe switch)", p.HCA, p.Path),
				Evidence: fmt.Sprintf("GPU %d", p.GPU)})
		}
		a.Perftest = append(a.Perftest, loopbackByDirection("hwbench loopback rdma_write", len(p.Bandwidth), "bw", p.HCA, link, func(i int) (string, string, PerftestRow) {
			b := p.Bandwidth[i]
			gbits := float64(b.GBps) * 8
			return b.Src, b.Dst, PerftestRow{Bytes: b.Bytes, Iters: b.Iters, PeakGbs: gbits, AvgGbs: gbits}
		})...)
		a.Perftest = append(a.Perftest, loopbackByDirection("hwbench loopback rdma_write", len(p.Latency), "completion-lat", p.HCA, link, func(i int) (string, string, PerftestRow) {
			l := p.Latency[i]
			us := float64(l.Us)
			return l.Src, l.Dst, PerftestRow{Bytes: l.Bytes, Iters: l.Iters, LatTypUs: us, LatAvgUs: us}
		})...)
	}
}

// loopbackByDirection groups n hwbench loopback measurements of one port
// (measurement i is at(i): its source and destination memory, "host" or
// "gpu", and its row) into one perftest-style result per direction, in
// order of first appearance, named "<name> <what> src->dst" (name
// "hwbench loopback rdma_write" for the gdr probe, "hwbench rdma_write"
// for the rdma probe between nodes; what "bw", or "completion-lat": one
// RDMA write timed to its completion, about a round trip, where
// ib_write_lat reports half a ping-pong, so the two are not compared). A
// direction that touches GPU memory counts as GPUDirect.
func loopbackByDirection(name string, n int, what, hca, link string, at func(i int) (src, dst string, row PerftestRow)) []*PerftestResult {
	type key struct{ src, dst string }
	byDir := map[key]*PerftestResult{}
	var out []*PerftestResult
	for i := range n {
		src, dst, row := at(i)
		if !plausibleRow(row) {
			// A failed measurement (null) or one no port can give: left
			// out, as the text parsers leave such rows out.
			continue
		}
		res := byDir[key{src, dst}]
		if res == nil {
			res = &PerftestResult{Test: fmt.Sprintf("%s %s %s->%s", name, what, src, dst), Device: hca, LinkType: link,
				GPUDirect: src == "gpu" || dst == "gpu"}
			byDir[key{src, dst}] = res
			out = append(out, res)
		}
		res.Rows = append(res.Rows, row)
	}
	return out
}

// plausibleRow reports whether every figure of a perftest-style row is a
// finite, non-negative number, bandwidths under maxPlausibleGBps (in Gb/s
// here, so 8x) and latencies under maxPlausibleTimeUs.
func plausibleRow(r PerftestRow) bool {
	for _, v := range []float64{r.PeakGbs, r.AvgGbs, r.LatTypUs, r.LatAvgUs, r.LatMinUs} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return false
		}
	}
	return r.Bytes >= 0 && r.PeakGbs <= 8*maxPlausibleGBps && r.AvgGbs <= 8*maxPlausibleGBps && r.LatTypUs <= maxPlausibleTimeUs && r.LatAvgUs <= maxPlausibleTimeUs
}

// hbRDMA turns the rdma probe (RDMA WRITE from one node into another) into
// perftest-style results named "hwbench rdma_write bw|lat src->dst".
func hbRDMA(a *Artifact, r *hbReport) {
	x := r.RDMA
	if x == nil {
		return
	}
	link := "IB"
	if x.Writer.GID != "" {
		link = "Ethernet"
	}
	a.Perftest = append(a.Perftest, loopbackByDirection("hwbench rdma_write", len(x.Bandwidth), "bw", x.Writer.HCA, link, func(i int) (string, string, PerftestRow) {
		b := x.Bandwidth[i]
		gbits := float64(b.GBps) * 8
		return b.Src, b.Dst, PerftestRow{Bytes: b.Bytes, Iters: int64(b.Iters), PeakGbs: gbits, AvgGbs: gbits}
	})...)
	a.Perftest = append(a.Perftest, loopbackByDirection("hwbench rdma_write", len(x.Latency), "completion-lat", x.Writer.HCA, link, func(i int) (string, string, PerftestRow) {
		l := x.Latency[i]
		us := float64(l.Us)
		return l.Src, l.Dst, PerftestRow{Bytes: l.Bytes, Iters: int64(l.Iters), LatTypUs: us, LatAvgUs: us}
	})...)
}
