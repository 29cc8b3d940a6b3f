package cli

import (
	"encoding/json"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/collsim/collsim/sim"
)

// TestListTermsJSON: --list-terms --format json prints every term with its
// name, default, bounds, unit and a source that is a citation or an
// assumption.
func TestListTermsJSON(t *testing.T) {
	code, out, stderr := collsim(t, "calibrate", "--list-terms", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Terms []struct {
			Name    string     `json:"name"`
			Default *float64   `json:"default"`
			Bounds  [2]float64 `json:"bounds"`
			Unit    string     `json:"unit"`
			Source  struct {
				Kind, Ref, Says string
			} `json:"source"`
		} `json:"terms"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	p := sim.DefaultParams()
	want := p.Terms()
	if len(doc.Terms) != len(want) {
		t.Fatalf("%d terms printed, the model has %d", len(doc.Terms), len(want))
	}
	for i, tm := range doc.Terms {
		w := want[i]
		if tm.Name != w.Name || tm.Default == nil || *tm.Default != w.Default || tm.Bounds != [2]float64{w.Lo, w.Hi} || tm.Unit != w.Unit {
			t.Errorf("term %d printed as %+v, want %s = %g [%g, %g] %s", i, tm, w.Name, w.Default, w.Lo, w.Hi, w.Unit)
		}
		switch tm.Source.Kind {
		case "cited":
			if tm.Source.Ref == "" || tm.Source.Says == "" {
				t.Errorf("%s: citation %+v lacks where or what", tm.Name, tm.Source)
			}
		case "assumption":
			if tm.Source.Says == "" {
				t.Errorf("%s: assumption without reasoning", tm.Name)
			}
		default:
			t.Errorf("%s: source kind %q", tm.Name, tm.Source.Kind)
		}
	}
	if code, _, _ := collsim(t, "calibrate", "--list-terms", "--format", "yaml"); code != ExitBadInput {
		t.Errorf("--format yaml: exit %d, want %d", code, ExitBadInput)
	}
}

// TestTermsDoc: docs/terms.md is what --list-terms --format markdown prints
// now (regenerate it with that command when a term changes).
func TestTermsDoc(t *testing.T) {
	code, out, stderr := collsim(t, "calibrate", "--list-terms", "--format", "markdown")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const doc = "../../docs/terms.md"
	if updateGolden() {
		if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != out {
		t.Errorf("docs/terms.md is stale (run collsim calibrate --list-terms --format markdown > docs/terms.md):\n%s", firstDiff(string(want), out))
	}
}

// readmeTerm is a backquoted term name or pattern in the README ("`lat.step.*`").
var readmeTerm = regexp.MustCompile("`([a-z][a-z0-9]*(?:\\.(?:[a-z0-9]+|\\*))+)`")

// TestReadmeTerms: the README's "How predictions are made" names every
// model term (exactly or by a pattern such as `lat.step.*`), and every name
// it gives is a term.
func TestReadmeTerms(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## How predictions are made\n")
	if !ok {
		t.Fatal("README has no section \"How predictions are made\"")
	}
	if i := strings.Index(sec, "\n## "); i >= 0 {
		sec = sec[:i]
	}
	for _, problem := range readmeTermProblems(sec) {
		t.Error(problem)
	}
}

// readmeTermProblems lists the names a text gives that are no term and the
// terms it does not name.
func readmeTermProblems(sec string) []string {
	p := sim.DefaultParams()
	terms := p.Terms()
	named := make([]bool, len(terms))
	var problems []string
	for _, m := range readmeTerm.FindAllStringSubmatch(sec, -1) {
		hit := false
		for i, tm := range terms {
			if termMatches(m[1], tm.Name) {
				hit, named[i] = true, true
			}
		}
		if !hit {
			problems = append(problems, "the README names "+m[1]+", which is no model term")
		}
	}
	for i, tm := range terms {
		if !named[i] {
			problems = append(problems, "the README's model paragraphs do not name term "+tm.Name)
		}
	}
	return problems
}

// termMatches reports whether a README name or pattern covers a term: "*"
// stands for one or more dotted parts at the end, or one part inside.
func termMatches(pat, name string) bool {
	if strings.HasSuffix(pat, ".*") && strings.HasPrefix(name, strings.TrimSuffix(pat, "*")) {
		return true
	}
	ok, err := path.Match(strings.ReplaceAll(pat, ".", "/"), strings.ReplaceAll(name, ".", "/"))
	return err == nil && ok
}

// TestReadmeTermsCheckFails: the README check catches a missing term and a
// name that is not one.
func TestReadmeTermsCheckFails(t *testing.T) {
	p := sim.DefaultParams()
	var all []string
	for _, tm := range p.Terms() {
		all = append(all, "`"+tm.Name+"`")
	}
	if got := readmeTermProblems(strings.Join(all, " ")); len(got) != 0 {
		t.Errorf("every term named: %v", got)
	}
	if got := readmeTermProblems(strings.Join(all[1:], " ")); len(got) != 1 || !strings.Contains(got[0], all[0][1:len(all[0])-1]) {
		t.Errorf("first term left out: %v", got)
	}
	if got := readmeTermProblems(strings.Join(all, " ") + " `net.eff.nvlink`"); len(got) != 1 || !strings.Contains(got[0], "no model term") {
		t.Errorf("unknown name: %v", got)
	}
	if !termMatches("lat.step.*", "lat.step.net.simple") || termMatches("lat.step.*", "lat.base.ll") || !termMatches("chan.cap.*.hopper", "chan.cap.ll.hopper") {
		t.Error("pattern matching is wrong")
	}
}
