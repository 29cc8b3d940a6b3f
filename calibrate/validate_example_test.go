package calibrate_test

import (
	"context"
	"fmt"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/scenarios"
	"github.com/collsim/collsim/sim"
)

// ExampleValidate checks the RoCE run without GPUDirect RDMA (MANIFEST row
// 29) against the model of the healthy cluster: two nodes, one H100 and
// one 400G RoCE port each. It fails, and the diagnosis names the cause
// with the change that reproduces the measurement.
func ExampleValidate() {
	a, err := ingest.ParseFile("../ingest/testdata/raw/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 2, GPUsPerNode: 1, NICs: "1x400G-roce", NCCLVersion: "2.26"}.Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := calibrate.Validate(context.Background(), []*ingest.Artifact{a}, spec, sim.DefaultParams(), calibrate.ValidateOptions{Tolerance: 0.10})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := v.Diagnoses[0]
	fmt.Println("pass:", v.Pass)
	fmt.Println(d.Severity, d.Code)
	fmt.Println("reproduced by", d.Reproduce)
	// Output:
	// pass: false
	// error no-gpudirect-rdma
	// reproduced by --set NCCL_NET_GDR_LEVEL=LOC
}

// ExampleFit fits the model to the 2-node Snellius AllGather run (MANIFEST
// row 31) and writes what the fit chose; values and uncertainties are in
// the FitResult and the profile it makes.
func ExampleFit() {
	cs, err := scenarios.Overrides{Node: "hgx-h100-4gpu", Nodes: 2, NCCLVersion: "2.22"}.Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := ingest.ParseFile("../ingest/testdata/raw/nccltests_h100sxm_2x4_ib-ndr200x4_snellius_allgather_2.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	ds, err := calibrate.BuildDataset([]*ingest.Artifact{a}, cs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fr, err := calibrate.Fit(context.Background(), ds.Series, ds.Links, sim.DefaultParams(), calibrate.FitOptions{Terms: []string{"net.eff.ib"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := fr.Fitted[0]
	fmt.Printf("%s: %.2f -> %.2f\n", t.Name, t.Default, t.Value)
	fmt.Println("converged:", fr.Converged, "closer:", fr.RMSLogAfter < fr.RMSLogBefore)
	// Output:
	// net.eff.ib: 0.95 -> 0.97
	// converged: true closer: true
}
