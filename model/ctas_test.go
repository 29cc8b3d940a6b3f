package model_test

import (
	"testing"

	"github.com/collsim/collsim/scenarios"
)

// TestCTABounds: NCCL_MIN_CTAS and NCCL_MAX_CTAS (NCCL 2.17+, init.cc)
// bound the communicator's CTAs: the coll channels as NCCL_MIN/MAX_NCHANNELS
// do (connect.cc) and the NVLS channels too (transport/nvls.cc clamps its
// 16 on Hopper to [minCTAs, maxCTAs]); NCCL_MIN_NCHANNELS leaves NVLS alone.
// Releases before 2.17 have no such variables. The nccl-tests#309 8-node
// run with NCCL_MIN_CTAS=24 (raw/nccltests_h100sxm_8x8_ib-ndr400-ctas24-qps2_ncclTests309-aion_1.txt)
// thus runs NVLSTree on 24 channels.
func TestCTABounds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		o          scenarios.Overrides
		comm, nvls int // want; comm 0 = the default count
	}{
		{"defaults", scenarios.Overrides{Node: "dgx-h100", Nodes: 8}, 0, 16},
		{"NCCL_MIN_CTAS=24", scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_MIN_CTAS=24"}}, 24, 24},
		{"NCCL_MIN_NCHANNELS=24", scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_MIN_NCHANNELS=24"}}, 24, 16},
		{"NCCL_MAX_CTAS=8", scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_MAX_CTAS=8"}}, 8, 8},
		{"NCCL_MIN_CTAS=32 NCCL_MAX_CTAS=12", scenarios.Overrides{Node: "dgx-h100", Nodes: 8, Set: []string{"NCCL_MIN_CTAS=32", "NCCL_MAX_CTAS=12"}}, 12, 12},
		{"NCCL_MIN_CTAS=24, NCCL 2.16", scenarios.Overrides{Node: "dgx-h100", Nodes: 8, NCCLVersion: "2.16", Set: []string{"NCCL_MIN_CTAS=24"}}, 0, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r := resolved(t, tc.o)
			comm, _, _ := r.CommChannels(r.SearchGraphs().Ring)
			want := tc.comm
			if want == 0 {
				o := tc.o
				o.Set = nil
				_, r0 := resolved(t, o)
				want, _, _ = r0.CommChannels(r0.SearchGraphs().Ring)
				if want == 24 || want == 8 || want == 12 {
					t.Fatalf("default channel count %d cannot tell the bounds apart", want)
				}
			}
			if comm != want {
				t.Errorf("coll channels %d, want %d", comm, want)
			}
			if got := r.NVLSChannels(); got != tc.nvls {
				t.Errorf("NVLS channels %d, want %d", got, tc.nvls)
			}
		})
	}
}
