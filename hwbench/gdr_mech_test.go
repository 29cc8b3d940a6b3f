package hwbench

import (
	"context"
	"strings"
	"testing"
)

// TestGPUDirectMechanism checks the DMA-BUF / peermem / none decision and
// its reasons on the fake: DMA-BUF is used when it works (as NCCL prefers
// it), peermem when only it works, and neither gives host-only rows with
// both reasons.
func TestGPUDirectMechanism(t *testing.T) {
	tests := []struct {
		name             string
		cfg              FakeConfig
		mech             string
		dmabuf, peermem  string // substrings of the outcomes
		gpuRows, hasRegE bool
	}{
		{"both work: dmabuf", FakeConfig{}, "dmabuf", "ok", "ok", true, false},
		{"no dma-buf support: peermem", FakeConfig{NoDMABuf: true}, "peermem", "CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED = 0", "ok", true, false},
		{"no peermem module: dmabuf", FakeConfig{NoPeerMem: true}, "dmabuf", "ok", "nvidia_peermem module is not loaded", true, false},
		{"neither", FakeConfig{NoGPUDirect: true}, "none", "DMA_BUF_SUPPORTED = 0", "Bad address", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.GPUs, tc.cfg.NICs = 2, 1
			o := fakeOptions(t.TempDir())
			o.Probes = []string{"gdr"}
			rep, err := Run(context.Background(), NewFake(tc.cfg), o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(rep.GDR.Ports) != 1 {
				t.Fatalf("ports %+v", rep.GDR.Ports)
			}
			p := rep.GDR.Ports[0]
			if p.Mechanism != tc.mech || p.GPUDirect != (tc.mech != "none") {
				t.Errorf("mechanism %q gpudirect %v, want %q", p.Mechanism, p.GPUDirect, tc.mech)
			}
			if !strings.Contains(p.DMABuf, tc.dmabuf) || !strings.Contains(p.PeerMem, tc.peermem) {
				t.Errorf("dmabuf %q, peermem %q; want %q, %q", p.DMABuf, p.PeerMem, tc.dmabuf, tc.peermem)
			}
			if (p.RegisterError != "") != tc.hasRegE {
				t.Errorf("register error %q", p.RegisterError)
			}
			gpu := false
			for _, b := range p.Bandwidth {
				if b.Src == "gpu" || b.Dst == "gpu" {
					gpu = true
				}
			}
			if gpu != tc.gpuRows {
				t.Errorf("GPU rows present = %v, want %v", gpu, tc.gpuRows)
			}
		})
	}
}
