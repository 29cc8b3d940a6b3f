package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPredictJobs: predict prints the same bytes, rows in sweep order, with
// one size at a time and with several (DES, a leaf-spine whose large sizes
// reuse one run), as a table and as JSON; --jobs 0 is refused.
func TestPredictJobs(t *testing.T) {
	cluster := filepath.Join(t.TempDir(), "leafspine.yaml")
	spec := "name: leafspine\nnode: dgx-h100\nnodes: 4\nnics: 8x400G-ib\nfabric: {kind: leaf-spine, nodes_per_leaf: 2, radix: 256, oversubscription: 1}\n"
	if err := os.WriteFile(cluster, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json"} {
		var want string
		for _, jobs := range []string{"1", "3"} {
			var out bytes.Buffer
			code, errs := runEnv(context.Background(), &out, false, "predict", "--cluster", cluster, "-b", "8", "-e", "1G", "-f", "4", "--format", format, "--jobs", jobs)
			if code != 0 {
				t.Fatalf("%s --jobs %s: exit %d, stderr %q", format, jobs, code, errs)
			}
			if jobs == "1" {
				want = out.String()
				continue
			}
			if out.String() != want {
				t.Errorf("%s: --jobs %s prints\n%s\n--jobs 1 prints\n%s", format, jobs, out.String(), want)
			}
		}
	}
	var out bytes.Buffer
	code, errs := runEnv(context.Background(), &out, false, "predict", "--jobs", "0")
	if code != ExitBadInput || !strings.Contains(errs, "--jobs") || out.Len() != 0 {
		t.Errorf("--jobs 0: exit %d, stderr %q, stdout %q", code, errs, out.String())
	}
}
