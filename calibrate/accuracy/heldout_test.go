package accuracy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate/accuracy"
)

// heldoutFile holds published runs no model term was fitted on
// (ingest/testdata/raw/MANIFEST.md rows h1-h10): H100 8-GPU nodes on IB
// 400G at 2, 4 and 8 nodes, tuned and untuned, from nccl-tests#309, a
// SendRecv on a 4-GPU NV4 A100 node from nccl-tests#331, and OCI's 8x A100
// on one node and on two over RoCE. Scoring it shows
// how the model transfers to clusters it has not seen; its numbers are
// reported, never gated on.
var heldoutFile = filepath.Join("..", "..", "ingest", "testdata", "cases_heldout.yaml")

// modelSources are the files whose comments cite what each default was
// fitted on (docs/terms.md collects them): a held-out source cited there
// would no longer be held out.
var modelSources = []string{"../../model/*.go", "../../sim/*.go", "../*.go", "../../docs/terms.md"}

// sourceRE reads "github.com/OWNER/REPO" and, for a thread,
// "/issues/N" from a case's source.
var sourceRE = regexp.MustCompile(`^github\.com/([^/\s]+)/([^/\s]+)(?:/issues/(\d+))?`)

// idRE finds the case names in a calibration note.
var idRE = regexp.MustCompile(`[A-Za-z0-9_.-]+`)

// TestHeldOutCasesLoad checks that every held-out case is described well
// enough to model: a cluster mapping, a raw table of the stated collective
// and rank count (nodes x GPUs per node), a cluster that builds, a
// MANIFEST row naming its file, and a source that no model default cites.
func TestHeldOutCasesLoad(t *testing.T) {
	cases, err := accuracy.LoadCases(heldoutFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(heldoutFile)
	manifest, err := os.ReadFile(filepath.Join(dir, "raw", "MANIFEST.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cited []byte
	for _, pat := range modelSources {
		files, err := filepath.Glob(pat)
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", pat, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cited = append(cited, b...)
		}
	}
	for _, c := range cases {
		if c.Nodes*c.GPUsPerNode != c.TotalRanks {
			t.Errorf("%s: %d nodes x %d GPUs is not the %d ranks stated", c.ID, c.Nodes, c.GPUsPerNode, c.TotalRanks)
		}
		setup, err := accuracy.SetupFor(&c)
		if err != nil {
			t.Error(err)
			continue
		}
		_, run, err := c.Measured(dir)
		if err != nil {
			t.Error(err)
			continue
		}
		if len(run.Rows) != len(c.Points) {
			t.Errorf("%s: the raw table has %d rows, the case lists %d points", c.ID, len(run.Rows), len(c.Points))
		}
		spec, err := c.ClusterSpec(setup.Configured)
		if err != nil {
			t.Error(err)
			continue
		}
		if _, err := spec.Build(); err != nil {
			t.Errorf("%s: %v", c.ID, err)
		}
		row := "`" + filepath.Base(c.File) + "`"
		if !bytes.Contains(manifest, []byte(row)) {
			t.Errorf("%s: raw/MANIFEST.md has no row for %s", c.ID, row)
		}
		m := sourceRE.FindStringSubmatch(c.Source)
		if m == nil {
			t.Errorf("%s: source %q names no public repository", c.ID, c.Source)
			continue
		}
		// A thread is cited as REPO#N or .../issues/N; a repository's
		// file by the repository's name.
		refs := []string{m[1] + "/" + m[2]}
		if m[3] != "" {
			refs = []string{m[2] + "#" + m[3], m[2] + "/issues/" + m[3]}
		}
		for _, ref := range refs {
			if bytes.Contains(cited, []byte(ref)) {
				t.Errorf("%s: %s is cited by a model default, so the case is not held out", c.ID, ref)
			}
		}
	}
}

// TestHeldOutAccuracy runs the harness on the held-out file and logs its
// table: every case must be scored in at least one regime, uncalibrated
// and calibrated, never calibrated on itself; a healthy run gets
// validate's gate and a degraded one must have its cause named. The
// errors themselves are not gated: they measure transfer, and the README
// quotes them.
func TestHeldOutAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("scores every held-out case (minutes); TestHeldOutCasesLoad checks the descriptions")
	}
	rep, cases, extra := runLogged(t, heldoutFile, accuracy.Options{})
	want := map[string]bool{}
	for _, c := range append(cases, extra...) {
		want[c.ID] = true
	}
	if len(rep.Cases) != len(want) {
		t.Errorf("%d cases scored, the file has %d", len(rep.Cases), len(want))
	}
	for _, c := range rep.Cases {
		if !want[c.ID] {
			t.Errorf("%s scored but not in the file", c.ID)
		}
		delete(want, c.ID)
		scored := 0
		for _, u := range c.Uncalibrated {
			if u.Points > 0 && c.Regime(u.Regime, true).Points == u.Points {
				scored++
			}
		}
		if scored == 0 {
			t.Errorf("%s: no regime scored both uncalibrated and calibrated (%+v, %+v)", c.ID, c.Uncalibrated, c.Calibrated)
		}
		// Case IDs here share prefixes (..._2x8 and ..._2x8_ring_...), so
		// the fit's list is compared name by name.
		for _, name := range idRE.FindAllString(c.Calibration, -1) {
			if name == c.ID {
				t.Errorf("%s: calibrated on itself: %s", c.ID, c.Calibration)
			}
		}
		for _, p := range c.Points {
			if !(p.MeasuredBusBW >= 0) || !(p.UncalBusBW > 0) || !(p.CalBusBW > 0) {
				t.Errorf("%s at %d B: measured %g, model %g / %g GB/s", c.ID, p.Size, p.MeasuredBusBW, p.UncalBusBW, p.CalBusBW)
			}
		}
		switch {
		case c.Quality == "degraded" && (c.Expect == "" || !c.NamesCause):
			t.Errorf("%s: degraded, but validate against %s names %v, not %q", c.ID, c.HealthyCluster, c.Diagnosed, c.Expect)
		case c.Quality != "degraded" && c.Validate == nil:
			t.Errorf("%s (quality %s): no validate outcome", c.ID, c.Quality)
		}
	}
	for id := range want {
		t.Errorf("%s: in the file, not scored", id)
	}
	for _, s := range rep.Summary {
		t.Logf("held-out %s: %d cases, median over cases %.1f%% uncalibrated, %.1f%% calibrated", s.Regime, s.Cases, s.UncalCaseMedian*100, s.CalCaseMedian*100)
	}
}
