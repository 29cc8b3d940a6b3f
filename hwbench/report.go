package hwbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/collsim/collsim/internal/atomicfile"
	"github.com/collsim/collsim/model"
)

// Format is the value of the top-level "format" field of every hwbench JSON
// file; ingest recognises the file by it.
const Format = "collsim-hwbench/1"

// Report is the JSON document hwbench writes. It is rewritten after every
// probe (and after every finished unit inside long probes), so a crash
// keeps what was measured. Sections of probes that did not run are absent.
type Report struct {
	// Written is the file this process wrote the report to: --out on rank
	// 0, <out>.rank<N><ext> on the first rank of each other host, empty on
	// the ranks that write none. Not part of the file.
	Written string `json:"-"`
	// Format is always Format.
	Format string `json:"format"`
	// Tool is "collsim hwbench <version>".
	Tool string `json:"tool"`
	// Backend is "native" for real hardware, "fake" for the simulated machine.
	Backend string `json:"backend"`
	// Machine is where and with what software the report was made.
	Machine Machine `json:"machine"`
	// Started and Updated are when the run began and when this file was
	// last written.
	Started time.Time `json:"started"`
	Updated time.Time `json:"updated"`
	// Options are the settings of the run.
	Options RunSettings `json:"options"`
	// Probes is the status of every requested probe, in run order.
	Probes []ProbeStatus      `json:"probes"`
	Topo   *TopoResult        `json:"topo,omitempty"`
	Copy   *CopyResult        `json:"copy,omitempty"`
	P2P    *P2PResult         `json:"p2p,omitempty"`
	NVBW   *NVBandwidthResult `json:"nvbw,omitempty"`
	NCCL   *NCCLResult        `json:"nccl,omitempty"`
	GDR    *GDRResult         `json:"gdr,omitempty"`
	RDMA   *RDMAResult        `json:"rdma,omitempty"`
}

// Machine identifies the machine and software of a record.
type Machine struct {
	Hostname string `json:"hostname"`
	// Kernel is the Linux release (/proc/sys/kernel/osrelease).
	Kernel string `json:"kernel,omitempty"`
	// CPU is the CPU vendor in model terms ("intel", "amd", "arm", "grace").
	CPU string `json:"cpu,omitempty"`
	Versions
	// Rank and NRanks place this process in a multi-process run (0 and 1
	// otherwise).
	Rank   int `json:"rank"`
	NRanks int `json:"nranks"`
}

// Stamp is carried by every probe result: the machine and versions it was
// measured with and when it finished.
type Stamp struct {
	Machine Machine   `json:"machine"`
	Time    time.Time `json:"time"`
}

// RunSettings are the options of a run as the report records them.
type RunSettings struct {
	Probes     []string `json:"probes"`
	MinBytes   int64    `json:"min_bytes"`
	MaxBytes   int64    `json:"max_bytes"`
	StepFactor int      `json:"step_factor"`
	Iters      int      `json:"iters"`
	Warmup     int      `json:"warmup_iters"`
	CopyBytes  int64    `json:"copy_bytes"`
	Check      int      `json:"check"`
}

// Probe statuses.
const (
	StatusPending = "pending"
	StatusRunning = "running"
	StatusOK      = "ok"
	// StatusSkipped means the probe could not run here (a library is
	// missing, or another rank runs it); it is not a failure.
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// ProbeStatus is how one probe went.
type ProbeStatus struct {
	Name    string  `json:"name"`
	Status  string  `json:"status"`
	Error   string  `json:"error,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
}

// Num is a float64 that marshals NaN (not measured) as JSON null and reads
// null back as NaN.
type Num float64

// MarshalJSON writes null for NaN and infinities.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(round6(f))
}

// UnmarshalJSON reads a number or null (NaN).
func (n *Num) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*n = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*n = Num(f)
	return nil
}

// round6 keeps six significant digits so reports stay readable and
// byte-stable; measurements are not that precise anyway.
func round6(f float64) float64 {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	d := math.Ceil(math.Log10(math.Abs(f)))
	p := math.Pow(10, 6-d)
	return math.Round(f*p) / p
}

// Node is a model.NodeSpec that marshals to JSON with the spec's YAML field
// names ("gpu", "sockets", "host_bridges", ...), so the "node" object of a
// report can be pasted into a scenario file. ingest reads it back with a
// YAML decoder (JSON is YAML).
type Node struct {
	model.NodeSpec
}

// MarshalJSON converts the spec through its YAML form.
func (n Node) MarshalJSON() ([]byte, error) {
	y, err := yaml.Marshal(n.NodeSpec)
	if err != nil {
		return nil, fmt.Errorf("hwbench: node spec: %w", err)
	}
	var v any
	if err := yaml.Unmarshal(y, &v); err != nil {
		return nil, fmt.Errorf("hwbench: node spec: %w", err)
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (n *Node) UnmarshalJSON(b []byte) error {
	var s model.NodeSpec
	if err := yaml.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("hwbench: node spec: %w", err)
	}
	n.NodeSpec = s
	return nil
}

// Encode returns the report as indented JSON with a final newline.
func (r *Report) Encode() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("hwbench: encode report: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeReport reads a report file's content.
func DecodeReport(data []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("hwbench: decode report: %w", err)
	}
	if r.Format != Format {
		return nil, fmt.Errorf("hwbench: decode report: format %q, want %q", r.Format, Format)
	}
	return &r, nil
}

// WriteFileAtomic writes data to path with mode 0644 through a temporary
// file in the same directory, fsync and rename, then fsyncs the directory,
// so readers (and a crash) never see half a file; on error path is untouched
// and no temporary file is left (see atomicfile.WriteFunc).
func WriteFileAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("hwbench: %w", err)
	}
	return nil
}
