package hwbench

import (
	"strings"
	"testing"
)

// TestRDMAAcrossNodes runs the rdma probe with three ranks, two on host
// alpha and one on beta, meeting through the TCP bootstrap on 127.0.0.1:
// rank 0 writes into rank 2 (the first rank of beta) over 4 queue pairs,
// host and GPU buffers both ways; rank 1 only joins the exchanges. When
// the target cannot register GPU memory, the GPU rows are left out with a
// note, not failed.
func TestRDMAAcrossNodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		targetNo bool
		rows     int
	}{{"gpudirect both sides", false, 4 * len(gdrBWSizes)}, {"target without gpudirect", true, 1*len(gdrBWSizes) + 1*len(gdrBWSizes)}} {
		t.Run(tc.name, func(t *testing.T) {
			w := NewFakeWorld()
			fakes := []*Fake{
				NewFake(FakeConfig{Hostname: "alpha", GPUs: 2, NICs: 1, World: w}),
				NewFake(FakeConfig{Hostname: "alpha", GPUs: 2, NICs: 1, World: w}),
				NewFake(FakeConfig{Hostname: "beta", GPUs: 2, NICs: 1, World: w, NoGPUDirect: tc.targetNo}),
			}
			reps, errs := runRanks(t, fakes, nil, []string{"rdma"})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("rank %d: %v", r, err)
				}
			}
			res := reps[0].RDMA
			if res == nil || res.Writer.Host != "alpha" || res.Target.Host != "beta" || res.QPs != 4 || len(res.Target.QPNs) != 4 {
				t.Fatalf("rdma %+v", res)
			}
			if len(res.Bandwidth) != tc.rows {
				t.Errorf("%d bandwidth rows, want %d: %+v", len(res.Bandwidth), tc.rows, res.Bandwidth)
			}
			// 400 Gb/s ports: host to host near the line rate, less than it.
			for _, b := range res.Bandwidth {
				if b.Src == "host" && b.Dst == "host" && b.Bytes == gdrBWSizes[len(gdrBWSizes)-1] && (b.GBps < 40 || b.GBps > 50) {
					t.Errorf("host->host 8 MiB %.2f GB/s", b.GBps)
				}
			}
			if tc.targetNo != (res.Mechanism[1] == "none") || res.Mechanism[0] != "dmabuf" || (tc.targetNo && !strings.Contains(strings.Join(res.Notes, " "), "no GPUDirect RDMA")) {
				t.Errorf("mechanisms %v notes %q", res.Mechanism, res.Notes)
			}
			if st := statusOf(reps[1]); st["rdma"] != StatusSkipped {
				t.Errorf("rank 1: %v", st)
			}
			if st := statusOf(reps[2]); st["rdma"] != StatusOK {
				t.Errorf("rank 2: %v", st)
			}
		})
	}
}
