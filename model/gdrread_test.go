package model_test

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// TestGDRReadRule: NCCL lets the NIC read GPU memory for sends (a
// GPUDirect RDMA read) by default only where paths.cc's ncclTopoCheckGdr
// allows it: from 2.19 on Ampere and later GPUs, otherwise only for a GPU
// with an NVLink peer or alone in its node; NCCL_NET_GDR_READ forces it
// either way. Without it sends are staged through host memory while
// receives keep GPUDirect RDMA, and the NCCL log's send lines lack
// GDRDMA.
func TestGDRReadRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    scenarios.Overrides
		want bool
	}{
		{"L40S PCIe server, NCCL 2.18", scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, NCCLVersion: "2.18"}, false},
		{"L40S PCIe server, NCCL 2.19", scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, NCCLVersion: "2.19"}, true},
		{"L40S PCIe server, NCCL 2.18, NCCL_NET_GDR_READ=1", scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, NCCLVersion: "2.18", Set: []string{"NCCL_NET_GDR_READ=1"}}, true},
		{"L40S PCIe server, NCCL 2.21, NCCL_NET_GDR_READ=0", scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, NCCLVersion: "2.21", Set: []string{"NCCL_NET_GDR_READ=0"}}, false},
		{"L40S PCIe server, one GPU per node, NCCL 2.18", scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2, GPUsPerNode: 1, NCCLVersion: "2.18"}, true},
		{"V100 (SXM2) on a PCIe-only node, NCCL 2.21 (pre-Ampere, no NVLink peer)", scenarios.Overrides{Node: "pcie-gpu-server", GPU: "V100-SXM2", Nodes: 2, NCCLVersion: "2.21"}, false},
		{"DGX A100 (NVLink), NCCL 2.8", scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NCCLVersion: "2.8"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r := resolved(t, tc.o)
			g := c.Nodes[0].GPUs[0]
			np := r.NetTo(g, r.LocalNICs(g)[0].NIC)
			if !np.GDR {
				t.Fatalf("no GPUDirect RDMA at all (%s)", np.Reason)
			}
			if np.SendGDR != tc.want {
				t.Fatalf("sends with GPUDirect RDMA: %v, want %v", np.SendGDR, tc.want)
			}
			staged := false
			for _, l := range np.Send {
				if c.Topo.Links[l].Kind == model.LinkMem {
					staged = true
				}
			}
			if staged == tc.want {
				t.Errorf("send route through host memory: %v, want %v", staged, !tc.want)
			}
			for _, l := range np.Recv {
				if c.Topo.Links[l].Kind == model.LinkMem {
					t.Errorf("receive route goes through host memory; GPUDirect RDMA writes into the GPU")
				}
			}
			if !tc.want {
				log := strings.Join(r.NCCLLog(r.Tuner()), "\n")
				if strings.Contains(log, "[send] via NET/IB/0/GDRDMA") || !strings.Contains(log, "[receive] via NET/IB/0/GDRDMA") {
					t.Errorf("NCCL log lines do not show staged sends and GDR receives:\n%s", log)
				}
			}
		})
	}
}

// TestGeForceHasNoGDR: GeForce parts have no GPUDirect RDMA (CUDA's
// GPUDirect RDMA guide: Tesla and Quadro only), so their network traffic
// is staged both ways and the reason says why; a data-centre part in the
// same server keeps it.
func TestGeForceHasNoGDR(t *testing.T) {
	for _, gpu := range []string{"RTX-4090", "RTX-2080TI"} {
		c, r := resolved(t, scenarios.Overrides{Node: "pcie-gpu-server", GPU: gpu, Nodes: 2})
		g := c.Nodes[0].GPUs[0]
		np := r.NetTo(g, r.LocalNICs(g)[0].NIC)
		if np.GDR || !strings.Contains(np.Reason, "GeForce") {
			t.Errorf("%s: GPUDirect RDMA %v (%s), want none, named as GeForce's", gpu, np.GDR, np.Reason)
		}
	}
	c, r := resolved(t, scenarios.Overrides{Node: "pcie-gpu-server", Nodes: 2})
	g := c.Nodes[0].GPUs[0]
	if np := r.NetTo(g, r.LocalNICs(g)[0].NIC); !np.GDR {
		t.Errorf("L40S: no GPUDirect RDMA (%s)", np.Reason)
	}
}

// TestGeForceGPUDirectTrueRefused: asking for GPUDirect RDMA on a GeForce
// part is refused, not silently turned off.
func TestGeForceGPUDirectTrueRefused(t *testing.T) {
	spec, err := scenarios.Overrides{Node: "pcie-gpu-server", GPU: "RTX-4090", Nodes: 2}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	on := true
	spec.Node.GPUDirect = &on
	if _, err := spec.Build(); err == nil || !strings.Contains(err.Error(), "GeForce part, which has no GPUDirect RDMA") {
		t.Errorf("gpudirect: true on RTX-4090: %v", err)
	}
}
