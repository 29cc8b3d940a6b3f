package calibrate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadProfileRefusesBadFiles: a profile that is empty, gives a term
// twice (the later value would win unseen) or a value outside the term's
// range is refused when it is read, naming the file and the line.
func TestLoadProfileRefusesBadFiles(t *testing.T) {
	head := "format: collsim-profile/1\ncluster: x\nfitted_on: []\nparams:\n"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty", "", "p.yaml:1: empty file: not a collsim profile"},
		{"blank", "\n  \n", "p.yaml:1: empty file"},
		{"comment only", "# nothing\n", "p.yaml:1: no YAML document"},
		{"twice", head + "  - {name: net.eff.ib, value: 0.91, default: 0.95}\n  - {name: tree.eff, value: 0.9, default: 0.9}\n  - {name: net.eff.ib, value: 0.8, default: 0.95}\n", "p.yaml:7: params: net.eff.ib is given twice (lines 5 and 7)"},
		{"range", head + "  - {name: net.eff.ib, value: 50, default: 0.95}\n", "p.yaml:5: params: net.eff.ib = 50 is outside its range"},
		{"unknown", head + "  - {name: net.eff.bogus, value: 0.5, default: 0.95}\n", "p.yaml:5: params:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(path, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadProfile(path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte(head+"  - {name: net.eff.ib, value: 0.91, default: 0.95}\nfit: {points: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pr, err := LoadProfile(path); err != nil || len(pr.Params) != 1 {
		t.Errorf("a good profile: %v", err)
	}
}
