package cli

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/hwbench"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/reports"
)

// hwbenchReport builds the report of a hwbench run: the status of every
// probe, the findings, and what the probes measured (NCCL sweeps as busbw
// against size, P2P matrices as heat maps, copy, RDMA and port tables),
// read back from the run's JSON as ingest.ParseHWBench reads it, so the
// report shows what calibrate and validate will use.
//
// v is the comparison with the model of --validate-against (nil without
// one): it sets the verdict and adds the series and the diagnosis.
func hwbenchReport(e *env, rep *hwbench.Report, o hwbench.Options, v *calibrate.Validation) (*reports.Document, error) {
	if rep == nil {
		return nil, fmt.Errorf("hwbench: --report: no results to report")
	}
	host := rep.Machine.Hostname
	if host == "" {
		host = "this machine"
	}
	doc := e.newReport("hwbench on " + host)
	doc.Subtitle = "measurements of the machine: topology, copies, peer-to-peer, NCCL, GPUDirect RDMA"
	if rep.Backend == "fake" {
		doc.Subtitle = "a simulated machine (hwbench --fake): the numbers are not measurements"
	}
	name := o.Out
	if name == "" {
		name = "hwbench"
	}
	data, err := rep.Encode()
	if err != nil {
		return nil, fmt.Errorf("hwbench: --report: %w", err)
	}
	// A run without any measurement (every probe skipped or failed) is not
	// an artifact; the report then shows the probes and their errors only.
	a, perr := ingest.ParseHWBench(name, data)

	probes := reports.Table{Caption: "Probes, in run order", Columns: []string{"probe", "status", "seconds", "error"}}
	failedProbes, okProbes := []string{}, []string{}
	for _, p := range rep.Probes {
		secs := "-"
		if p.Seconds > 0 {
			secs = strconv.FormatFloat(p.Seconds, 'f', 2, 64)
		}
		probes.Rows = append(probes.Rows, []string{p.Name, p.Status, secs, clipText(p.Error, 200)})
		switch p.Status {
		case hwbench.StatusOK:
			okProbes = append(okProbes, p.Name)
		case hwbench.StatusSkipped:
		default:
			failedProbes = append(failedProbes, p.Name)
		}
	}

	var all reports.Findings
	var arts []*ingest.Artifact
	if a != nil {
		arts = append(arts, a)
		all = reportFindings("", a.Findings)
	} else if perr != nil {
		all = append(all, reports.Finding{Severity: reports.SeverityCritical, Title: "The run holds no measurement", Evidence: perr.Error(),
			Fix: "Read the probes' errors; run collsim hwbench on a machine with the CUDA runtime and NCCL libraries on LD_LIBRARY_PATH."})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Severity > all[j].Severity })
	lead := fmt.Sprintf("%d of %d probes ran (%s)", len(okProbes), len(rep.Probes), strings.Join(okProbes, ", "))
	if len(okProbes) == 0 {
		lead = fmt.Sprintf("None of the %d probes ran", len(rep.Probes))
	}
	if len(failedProbes) > 0 {
		lead += fmt.Sprintf("; %s did not finish", strings.Join(failedProbes, ", "))
	}
	doc.Summary, doc.Verdict = findingsSummary(lead+".", arts, all)
	if len(failedProbes) > 0 {
		doc.Verdict = &reports.Verdict{Status: reports.StatusFail, Label: fmt.Sprintf("%d probe(s) failed", len(failedProbes))}
	}
	// A pass needs something that passed: measurements compared with a
	// model. Without one the run measured (or, on the fake, simulated)
	// and compared nothing, and the verdict says so.
	switch {
	case v != nil && len(failedProbes) == 0:
		// The comparison with the model is the verdict.
		sum, vd := validateSummary(v)
		doc.Summary, doc.Verdict = lead+". "+sum, vd
	case doc.Verdict != nil && doc.Verdict.Status == reports.StatusPass:
		doc.Verdict = hwbenchNothingCompared(rep, len(okProbes))
		doc.Summary += " " + doc.Verdict.Detail
	}

	m := rep.Machine
	doc.Inputs = []reports.KV{{Key: "machine", Value: host}}
	for _, kv := range []struct{ k, v string }{
		{"kernel", m.Kernel}, {"CPU", m.CPU}, {"driver", m.Driver}, {"CUDA driver", m.CUDADriver},
		{"CUDA runtime", m.CUDARuntime}, {"NCCL", m.NCCL}, {"backend", rep.Backend},
	} {
		if kv.v != "" {
			doc.Inputs = append(doc.Inputs, reports.KV{Key: kv.k, Value: kv.v})
		}
	}
	s := rep.Options
	doc.Inputs = append(doc.Inputs,
		reports.KV{Key: "probes", Value: strings.Join(s.Probes, ", ")},
		reports.KV{Key: "NCCL sweep", Value: fmt.Sprintf("%s to %s, x%d", model.FormatBytes(model.Bytes(s.MinBytes)), model.FormatBytes(model.Bytes(s.MaxBytes)), s.StepFactor)},
		reports.KV{Key: "iterations", Value: fmt.Sprintf("%d timed after %d warm-up", s.Iters, s.Warmup)},
		reports.KV{Key: "copy size", Value: model.FormatBytes(model.Bytes(s.CopyBytes))},
	)
	if m.NRanks > 1 {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "processes", Value: fmt.Sprintf("%d (this report: rank %d)", m.NRanks, m.Rank)})
	}
	if o.Out != "" {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "JSON report", Value: o.Out})
	}
	if o.NCCLText != "" && rep.NCCL != nil {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "nccl-tests text", Value: o.NCCLText})
	}
	if n := rep.NCCL; n != nil {
		if len(n.Transports) > 0 {
			doc.Inputs = append(doc.Inputs, reports.KV{Key: "NCCL transports", Value: strings.Join(n.Transports, ", ")})
		}
		if n.NVLS != "" {
			doc.Inputs = append(doc.Inputs, reports.KV{Key: "NVLS", Value: n.NVLS + " (NCCL_DEBUG=INFO)"})
		}
	}
	if g := rep.GDR; g != nil {
		var mech []string
		for _, p := range g.Ports {
			mech = append(mech, fmt.Sprintf("%s:%d %s", p.HCA, p.Port, p.Mechanism))
		}
		if len(mech) > 0 {
			doc.Inputs = append(doc.Inputs, reports.KV{Key: "GPUDirect RDMA", Value: strings.Join(mech, ", ")})
		}
	}
	if !rep.Started.IsZero() {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "started", Value: rep.Started.UTC().Format("2006-01-02 15:04:05 MST")})
	}
	doc.Assumptions = []reports.Assumption{
		{Term: "NCCL timing", Value: "CUDA events around --iters launches", Source: "as nccl-tests (nccl-facts §1.2); the slowest rank of a process, the mean over processes (docs/hwbench.md)"},
		{Term: "busbw", Value: "algbw x nccl-tests factor", Source: "nccl-tests doc/PERFORMANCE.md; 1 GB/s = 1e9 B/s"},
		{Term: "copies", Value: "cudaMemcpyAsync / cudaMemcpyPeerAsync of --copybytes", Source: "timed with CUDA events after --warmup copies; pinned memory bound to the GPU's NUMA node (docs/hwbench.md)"},
		{Term: "P2P latency", Value: "mean of 100 copies of 4 bytes", Source: "queued behind a spin kernel and timed back to back, as p2pBandwidthLatencyTest; the p2p result's latency_method says when it could not be (docs/hwbench.md)"},
		{Term: "data check", Value: "nccl-tests -c 1", Source: "one launch per size on a known pattern, compared on the host: #wrong (docs/hwbench.md)"},
		{Term: "GPUDirect RDMA", Value: "loopback on one port", Source: "measures the PCIe path between memory and NIC, capped by the port rate, not the wire; DMA-BUF tried before nvidia-peermem (docs/hwbench.md)"},
	}

	ps := reports.Section{Title: "Probes", Blocks: []reports.Block{probes}}
	fs := reports.Section{Title: "Findings"}
	if len(all) == 0 {
		fs.Blocks = append(fs.Blocks, reports.Paragraph{Text: "No problem found."})
	} else {
		fs.Blocks = append(fs.Blocks, all)
	}
	doc.Sections = append(doc.Sections, ps, fs)
	if v != nil {
		doc.Inputs = append(doc.Inputs, reports.KV{Key: "model", Value: v.Cluster},
			reports.KV{Key: "tolerance", Value: "±" + pct(v.Tolerance) + " on busbw in the gate regime"})
		for _, sc := range v.Series {
			doc.Sections = append(doc.Sections, seriesSection(sc, v.Tolerance))
		}
		ds := reports.Section{Title: "Diagnosis"}
		if len(v.Diagnoses) == 0 {
			ds.Blocks = append(ds.Blocks, reports.Paragraph{Text: "Nothing to report: no cause of a gap was found."})
		} else {
			ds.Blocks = append(ds.Blocks, diagnosisFindings(v.Diagnoses))
		}
		doc.Sections = append(doc.Sections, ds)
	}
	if a != nil {
		sec := artifactSection(a)
		sec.Title = "Measurements"
		doc.Sections = append(doc.Sections, sec)
	}
	return doc, nil
}

// hwbenchNothingCompared is the verdict of a run with no failure and no
// comparison with a model: informational, saying what was and was not
// done.
func hwbenchNothingCompared(rep *hwbench.Report, ok int) *reports.Verdict {
	if rep.Backend == "fake" {
		return &reports.Verdict{Status: reports.StatusInfo, Label: "simulated machine: nothing measured, nothing compared",
			Detail: "The numbers come from hwbench's simulated machine; nothing was measured or compared with a model."}
	}
	if ok == 0 {
		return &reports.Verdict{Status: reports.StatusInfo, Label: "nothing measured",
			Detail: "No probe ran, so nothing was measured or compared."}
	}
	return &reports.Verdict{Status: reports.StatusInfo, Label: "measured; nothing compared with a model",
		Detail: "Nothing was compared with a model: run collsim hwbench --validate-against CLUSTER.yaml, or collsim validate on this report, for a verdict."}
}
