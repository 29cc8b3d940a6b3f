package ingest_test

import (
	"fmt"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
)

// ExampleParseFile reads nccl-tests output with NCCL_DEBUG=INFO lines: a
// two-node RoCE run whose NET lines lack GDRDMA.
func ExampleParseFile() {
	a, err := ingest.ParseFile("testdata/raw/nccltests_h100sxm_2x1_roce400-nogdr_moc_1.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	r := a.Runs[0]
	last := r.Rows[len(r.Rows)-1]
	fmt.Println(a.Kind, r.CollectiveName, r.Ranks, "ranks", len(r.Rows), "rows")
	fmt.Printf("%d bytes: %.2f GB/s busbw\n", last.Size, last.OOP.BusBW)
	fmt.Println("NCCL", a.Log.Version, "network", a.Log.Network)
	for _, f := range a.Findings {
		fmt.Println(f.Severity, f.Code, "line", f.Line)
	}
	// Output:
	// nccl-tests all_reduce 2 ranks 13 rows
	// 26843545600 bytes: 14.97 GB/s busbw
	// NCCL 2.26.2 network IB
	// warning net-without-gdr line 50
}

// ExampleLoadTopology turns nvidia-smi topo -m into a model node: the GPU
// model follows from NV12 on an NVSwitch; the NIC speed and kind are given.
func ExampleLoadTopology() {
	t, err := ingest.LoadTopology("testdata/raw/topo_a100sxm80_hgx8_roce100x8_deepep13.txt")
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, err := t.NodeSpec("", "100G", model.NICRoCE)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spec.GPUs, spec.GPU, spec.NVLink.Kind, spec.NICs.Count, "NICs", len(spec.Sockets), "sockets")
	fmt.Println(t.Labels[0], t.Labels[8], t.Matrix[0][8])
	// Output:
	// 8 A100-SXM4 nvswitch 8 NICs 2 sockets
	// GPU0 NIC0 PXB
}
