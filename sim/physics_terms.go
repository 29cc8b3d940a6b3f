package sim

import (
	"fmt"

	"github.com/collsim/collsim/model"
)

// PhysicsParams are the terms of the fabric physics: in-network reduction
// (SHARP / CollNet) and the RoCE link layer, each a row of the terms table
// with its source.
type PhysicsParams struct {
	// SHARPLatUs is the latency of one in-network reduction round trip in
	// µs (up the SHARP tree and back to every node).
	SHARPLatUs float64
	// SHARPEff is the streaming-aggregation rate as a fraction of the
	// link's line rate.
	SHARPEff float64
}

// physicsTerms are the term rows of PhysicsParams.
func physicsTerms() []termDef {
	sharpLat := model.CollNetNetLatUs(model.AlgoCollNetDirect)
	return []termDef{
		{"sharp.lat.us", func(p *Params) *float64 { return &p.Physics.SHARPLatUs }, sharpLat, 1, 500, "us", "latency of one SHARP in-network reduction (up the tree and back), flat in the node count",
			model.Cite("tuning.cc hwLat NET CollNetDirect Simple; sharp-collnet §3", fmt.Sprintf("NCCL models CollNet's network part as %g us whatever the node count (SHARPv1 measured 2.83 us for 8-byte MPI_Allreduce on 128 EDR hosts, Graham et al. COMHPC 2016; NCCL's figure includes GPU and proxy costs)", sharpLat)), false},
		{"sharp.eff", func(p *Params) *float64 { return &p.Physics.SHARPEff }, 0.95, 0.3, 1, "fraction", "SHARP streaming aggregation rate as a fraction of link line rate",
			model.Cite("Graham et al., ISC 2020 (DOI 10.1007/978-3-030-50743-5_3)", "SHARPv2 streaming aggregation: MPI_Allreduce at ~95% of network bandwidth on HDR Quantum"), false},
	}
}
