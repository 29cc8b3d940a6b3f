package calibrate

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/collsim/collsim/internal/atomicfile"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	yaml "go.yaml.in/yaml/v3"
)

// Profile is a calibration profile: fitted values of the model's parameters
// and what they were fitted on. predict, validate, compare and sweep accept
// it with --profile.
type Profile struct {
	// Format identifies the file ("collsim-profile/1").
	Format string `yaml:"format"`
	// Created is when the fit ran (RFC 3339), CollsimVersion who ran it.
	Created        string `yaml:"created,omitempty"`
	CollsimVersion string `yaml:"collsim_version,omitempty"`
	// Cluster describes the cluster the measurements came from.
	Cluster string `yaml:"cluster"`
	// FittedOn lists the measurement files and what each contributed.
	FittedOn []FitSource `yaml:"fitted_on"`
	// Params are the fitted terms, by sim.Params term name.
	Params []FittedParam `yaml:"params"`
	// Held are terms that apply to the cluster but that the measurements
	// could not determine; they stay at their defaults (Apply ignores them).
	Held []HeldParam `yaml:"held,omitempty"`
	// Fit summarises the fit quality.
	Fit FitQuality `yaml:"fit"`
}

// FitSource is one measurement file used in a fit.
type FitSource struct {
	File string `yaml:"file"`
	// Kind is the artifact kind; Points how many (size, busbw) points it gave.
	Kind   string `yaml:"kind"`
	Points int    `yaml:"points"`
	// Collective, Ranks describe nccl-tests runs.
	Collective string `yaml:"collective,omitempty"`
	Ranks      int    `yaml:"ranks,omitempty"`
}

// FittedParam is one term's fitted value.
type FittedParam struct {
	Name    string  `yaml:"name"`
	Value   float64 `yaml:"value"`
	Default float64 `yaml:"default"`
	// StdErr is the 1-sigma uncertainty from the fit's covariance (0 when
	// the term was held at a fixed value, -1 when the data left no degrees
	// of freedom to estimate it).
	StdErr float64 `yaml:"stderr"`
	Unit   string  `yaml:"unit,omitempty"`
	// AtBound is "lower" or "upper" when the fit ran into the term's bound.
	AtBound string `yaml:"at_bound,omitempty"`
}

// HeldParam is a term a fit kept at its value, with why.
type HeldParam struct {
	Name   string  `yaml:"name"`
	Value  float64 `yaml:"value"`
	Reason string  `yaml:"reason"`
}

// FitQuality summarises residuals in log(time).
type FitQuality struct {
	Points int `yaml:"points"`
	// RMSLogBefore and RMSLogAfter are the root-mean-square of
	// log(model time / measured time) with defaults and with the fit.
	RMSLogBefore float64 `yaml:"rms_log_before"`
	RMSLogAfter  float64 `yaml:"rms_log_after"`
	Converged    bool    `yaml:"converged"`
	Iterations   int     `yaml:"iterations"`
	// Evaluations counts model evaluations; Engine is the engine used in
	// the fit loop ("analytic" or "des").
	Evaluations int    `yaml:"evaluations,omitempty"`
	Engine      string `yaml:"engine,omitempty"`
	// Objective says what the fit minimised: the robust loss, its scale
	// and the prior on the terms (FitResult.Objective); empty in profiles
	// written before it was recorded (a soft-L1 loss then).
	Objective string `yaml:"objective,omitempty"`
}

// ProfileFormat is the current profile format tag.
const ProfileFormat = "collsim-profile/1"

// Apply returns p with the profile's values set. An unknown term is an
// error (a profile from a newer collsim).
func (pr *Profile) Apply(p sim.Params) (sim.Params, error) {
	for _, fp := range pr.Params {
		if err := p.Set(fp.Name, fp.Value); err != nil {
			return p, fmt.Errorf("calibrate: profile: %w", err)
		}
	}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("calibrate: profile: %w", err)
	}
	return p, nil
}

// LoadProfile reads a profile file; errors name the file and line.
func LoadProfile(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("calibrate: %s:1: empty file: not a collsim profile (want format: %s, as collsim calibrate -o writes)", path, ProfileFormat)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("calibrate: %s: %v", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var pr Profile
	if err := dec.Decode(&pr); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("calibrate: %s:1: no YAML document: not a collsim profile (want format: %s)", path, ProfileFormat)
		}
		return nil, fmt.Errorf("calibrate: %s: %v", path, err)
	}
	if pr.Format != ProfileFormat {
		return nil, fmt.Errorf("calibrate: %s: not a collsim profile (format %q, want %q)", path, pr.Format, ProfileFormat)
	}
	// Each term once, each a term of the model in its range: a term given
	// twice would let the later value win unseen, and a bad value found
	// only when the profile is applied would name no line.
	lines := paramLines(&doc)
	first := map[string]int{}
	check := sim.DefaultParams()
	for i, fp := range pr.Params {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if l, ok := first[fp.Name]; ok {
			return nil, fmt.Errorf("calibrate: %s:%d: params: %s is given twice (lines %d and %d); a profile holds one value per term", path, line, fp.Name, l, line)
		}
		first[fp.Name] = line
		if err := check.Set(fp.Name, fp.Value); err != nil {
			return nil, fmt.Errorf("calibrate: %s:%d: params: %v", path, line, err)
		}
		for _, t := range check.Terms() {
			if t.Name == fp.Name && !(fp.Value >= t.Lo && fp.Value <= t.Hi) {
				return nil, fmt.Errorf("calibrate: %s:%d: params: %s = %g is outside its range [%g, %g]", path, line, fp.Name, fp.Value, t.Lo, t.Hi)
			}
		}
	}
	return &pr, nil
}

// paramLines returns the line of each entry of a profile document's params
// list, in order (none when the document has no such list).
func paramLines(doc *yaml.Node) []int {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "params" && m.Content[i+1].Kind == yaml.SequenceNode {
			var out []int
			for _, e := range m.Content[i+1].Content {
				out = append(out, e.Line)
			}
			return out
		}
	}
	return nil
}

// Save writes the profile atomically: a temp file in the same directory,
// synced, then renamed over path. On error no file is left behind.
func (pr *Profile) Save(path string) error {
	sort.SliceStable(pr.Params, func(i, j int) bool { return pr.Params[i].Name < pr.Params[j].Name })
	data, err := yaml.Marshal(pr)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return WriteFileAtomic(path, data)
}

// WriteFileAtomic writes data to path with mode 0644 through a temporary
// file in the same directory, fsync and rename, then fsyncs the directory,
// so readers (and a crash) never see half a file; on error path is untouched
// and no temporary file is left (see atomicfile.WriteFunc).
func WriteFileAtomic(path string, data []byte) error {
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	return nil
}

// Applies splits the profile's fitted terms into those that can change a
// prediction on cl and those that cannot there (another GPU generation's
// NVLink or NVLS terms, another NIC kind's, network terms on one node, a
// launch or VM term the cluster's run mode does not pay), by the rule the
// fit uses to decide which terms measurements of a cluster can move.
func (p *Profile) Applies(cl *model.Cluster) (applies, inert []string) {
	fp := &fitProblem{clusters: []*model.Cluster{cl}}
	for _, t := range p.Params {
		if fp.termApplies(t.Name) {
			applies = append(applies, t.Name)
		} else {
			inert = append(inert, t.Name)
		}
	}
	return applies, inert
}
