package accuracy_test

import (
	"path/filepath"
	"testing"

	"github.com/collsim/collsim/calibrate/accuracy"
)

// TestCaseFileAbsolutePath: a case's file may be given as an absolute
// path; it is read as given, not joined under the cases file's directory.
func TestCaseFileAbsolutePath(t *testing.T) {
	cases, err := accuracy.LoadCases(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	c := cases[0]
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(casesFile), filepath.FromSlash(c.File)))
	if err != nil {
		t.Fatal(err)
	}
	rel, _, err := c.Measured(filepath.Dir(casesFile))
	if err != nil {
		t.Fatal(err)
	}
	c.File = filepath.ToSlash(abs)
	got, _, err := c.Measured(t.TempDir())
	if err != nil {
		t.Fatalf("absolute file %s: %v", abs, err)
	}
	if len(got.Runs) != len(rel.Runs) {
		t.Errorf("absolute path read %d tables, relative %d", len(got.Runs), len(rel.Runs))
	}
}
