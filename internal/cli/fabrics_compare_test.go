package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompareExampleFabrics: collsim compare runs the four example fabric
// designs (examples/fabrics) and orders them as their physics says: for a
// 1 GiB AllReduce on 128 x DGX H100 the SHARP-capable IB fat-tree (CollNet
// enabled) is fastest, the lossless and the lossy rail-optimized RoCE
// fabrics follow within 1% of each other (1e-5 loss costs go-back-N
// (1-p)/(1+pW) = 0.9994), and the 2:1 fat-tree is slowest, its bottleneck
// a leaf-spine link named with the ECMP flows it carries.
func TestCompareExampleFabrics(t *testing.T) {
	dir := "../../examples/fabrics/"
	args := []string{"compare", "-b", "1G", "-e", "1G", "--engine", "analytic", "--format", "json"}
	for _, f := range []string{"ib-ndr-fattree", "roce-rail-pfc", "roce-rail-lossy", "roce-2to1"} {
		args = append(args, "--cluster", dir+f+".yaml")
	}
	code, out, errs := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d struct {
		Designs []struct {
			Name    string `json:"name"`
			Results []struct {
				BusBW      float64 `json:"busbw_gbps"`
				Algo       string  `json:"algo"`
				Bottleneck string  `json:"bottleneck"`
			} `json:"results"`
		} `json:"designs"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	bw := map[string]float64{}
	for _, ds := range d.Designs {
		if len(ds.Results) != 1 {
			t.Fatalf("%s: %d results", ds.Name, len(ds.Results))
		}
		r := ds.Results[0]
		bw[ds.Name] = r.BusBW
		t.Logf("%s: %.1f GB/s %s, %s", ds.Name, r.BusBW, r.Algo, r.Bottleneck)
		if ds.Name == "ib-ndr-fattree" && !strings.HasPrefix(r.Algo, "collnet") {
			t.Errorf("the SHARP IB design runs %s, want CollNet", r.Algo)
		}
		if ds.Name == "roce-2to1" && !strings.Contains(r.Bottleneck, "ECMP flows") {
			t.Errorf("2:1 bottleneck %q does not name its ECMP flows", r.Bottleneck)
		}
	}
	if !(bw["ib-ndr-fattree"] > bw["roce-rail-pfc"] && bw["roce-rail-pfc"] >= bw["roce-rail-lossy"] && bw["roce-rail-lossy"] > bw["roce-2to1"]) {
		t.Errorf("order %v, want ib > rail-pfc >= rail-lossy > 2to1", bw)
	}
	if r := bw["roce-rail-lossy"] / bw["roce-rail-pfc"]; r < 0.99 {
		t.Errorf("1e-5 loss costs %.3f, want within 1%%", r)
	}
}
