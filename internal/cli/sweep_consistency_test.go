package cli

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSweepWorkloadColumnsAgreeWithScale: a sweep over nodes of a 3D
// parallel training job (gpt3-175b-3d, pipeline of 8 stages) states, per
// design, the exposed communication scale states for it: the pipeline
// bubble is not communication (the sweep used to put it there, 773 ms at
// 24 nodes). Its CSV names each column once (an axis named nodes is
// axis.nodes beside the fixed nodes column), and its report names no link
// utilisation or algorithm it does not keep (it printed "0% busy;
// tree/ll").
func TestSweepWorkloadColumnsAgreeWithScale(t *testing.T) {
	code, out, errs := runCLI(t, "sweep", "testdata/sweep/pp.yaml", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv: %v, %d rows", err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		if _, dup := col[h]; dup {
			t.Errorf("column %q appears twice in %v", h, rows[0])
		}
		col[h] = i
	}
	code, out, errs = runCLI(t, "scale", "--node", "dgx-a100", "--nics", "8x200G-ib", "--nodes-list", "24,48", "--workload", "../../examples/workloads/gpt3-175b-3d.yaml", "--format", "json")
	if code != 0 {
		t.Fatalf("scale: exit %d: %s", code, errs)
	}
	var sc struct {
		Points []struct {
			Nodes     int     `json:"nodes"`
			ExposedMs float64 `json:"exposed_ms"`
			BubbleMs  float64 `json:"bubble_ms"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(out), &sc); err != nil || len(sc.Points) != 2 {
		t.Fatalf("scale json: %v (%d points)", err, len(sc.Points))
	}
	for i, p := range sc.Points {
		got, err := strconv.ParseFloat(rows[i+1][col["exposed_comm_ms"]], 64)
		if err != nil || rows[i+1][col["nodes"]] != strconv.Itoa(p.Nodes) {
			t.Fatalf("row %d: %v %v", i+1, err, rows[i+1])
		}
		if d := got - p.ExposedMs; d > 1e-3 || d < -1e-3 {
			t.Errorf("%d nodes: sweep exposed_comm_ms %.4f, scale exposed_ms %.4f (bubble %.4f)", p.Nodes, got, p.ExposedMs, p.BubbleMs)
		}
	}
	report := filepath.Join(t.TempDir(), "pp.md")
	if code, _, errs := runCLI(t, "sweep", "testdata/sweep/pp.yaml", "--report", report); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "0% busy") || strings.Contains(s, "tree/ll") {
		t.Errorf("the sweep report prints a utilisation or algorithm the sweep does not keep")
	}
}
