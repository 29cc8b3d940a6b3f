package model_test

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// TestMatchGPUFormFactor: a device name that contains a catalog alias but
// names another form factor or package is not taken for that entry (a V100
// PCIe card for the SXM2 part, a GH200 superchip for the H200), the H200
// NVL and the L40 are their own entries, and the parts the corpus prints
// still match.
func TestMatchGPUFormFactor(t *testing.T) {
	for _, tc := range []struct{ device, want string }{
		{"Tesla V100-PCIE-32GB", ""},
		{"NVIDIA GH200 480GB", ""},
		{"NVIDIA H200 NVL", "H200-NVL"},
		{"NVIDIA L40", "L40"},
		{"NVIDIA L40S", "L40S"},
		{"Tesla V100-SXM2-32GB", "V100-SXM2"},
		{"NVIDIA H100 80GB HBM3", "H100-SXM"},
		{"NVIDIA A100-SXM4-40GB", "A100-SXM4"},
		{"A100-PCIE-40GB", "A100-PCIE"},
		{"NVIDIA H100 PCIe", "H100-PCIE"},
		{"NVIDIA H200", "H200-SXM"},
		{"NVIDIA GeForce RTX 2080 Ti", "RTX-2080TI"},
	} {
		g, ok := model.MatchGPU(tc.device)
		if got := map[bool]string{true: g.Name}[ok]; got != tc.want {
			t.Errorf("MatchGPU(%q) = %q, want %q", tc.device, got, tc.want)
		}
	}
}

// TestBridgeOnlyNVLinkRefused: a PCIe card whose NVLink is a bridge cannot
// sit on an NVSwitch or in a mesh, however the node is written (flags
// were refused, a YAML node was not and got NVLS); an NVSwitch of another
// NVLink generation than the GPU's does not connect.
func TestBridgeOnlyNVLinkRefused(t *testing.T) {
	node := func(gpu, kind, sw string) model.NodeSpec {
		n := model.NodeSpec{GPU: gpu, GPUs: 8, Sockets: []model.SocketSpec{{HostBridges: []model.BridgeSpec{{GPUs: []int{0, 1, 2, 3, 4, 5, 6, 7}}}}},
			NVLink: model.NVLinkSpec{Kind: kind, Switch: sw}}
		return n
	}
	for _, tc := range []struct {
		gpu, kind, sw, want string
	}{
		{"H100-PCIE", "nvswitch", "", "a PCIe card whose NVLink is at most a bridge"},
		{"H200-NVL", "nvswitch", "", "a PCIe card whose NVLink is at most a bridge"},
		{"A100-PCIE", "mesh", "", "a PCIe card whose NVLink is at most a bridge"},
		{"H100-SXM", "nvswitch", "gen2", "has NVLink3 ports, H100-SXM has NVLink4 links"},
	} {
		n := node(tc.gpu, tc.kind, tc.sw)
		if err := n.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s on %s %s: %v, want %q", tc.gpu, tc.kind, tc.sw, err, tc.want)
		}
	}
	ok := node("H100-SXM", "nvswitch", "gen3")
	if err := ok.Validate(); err != nil {
		t.Errorf("H100-SXM on a gen3 switch: %v", err)
	}
}

// TestSHARPNeedsQuantum: SHARP's CollNet runs on Quantum (HDR) switches and
// later, which added streaming aggregation; on an EDR fabric (Switch-IB 2,
// SHARPv1) NCCL_COLLNET_ENABLE=1 runs no CollNet and says why, where an
// HDR fabric runs it.
func TestSHARPNeedsQuantum(t *testing.T) {
	build := func(nics string) *model.Cluster {
		t.Helper()
		spec, err := scenarios.Overrides{Node: "dgx-a100", Nodes: 4, NICs: nics, Set: []string{"NCCL_COLLNET_ENABLE=1"}}.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		spec.Fabric = model.FabricSpec{Kind: "fat-tree", NodesPerLeaf: 2, SHARP: true}
		c, err := spec.Build()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if ok, why := build("8xEDR-ib").CollNetAble(model.AlgoCollNetChain); ok || !strings.Contains(why, "SHARPv1") {
		t.Errorf("EDR: CollNet %v (%s), want refused as SHARPv1", ok, why)
	}
	if ok, why := build("8xHDR-ib").CollNetAble(model.AlgoCollNetChain); !ok {
		t.Errorf("HDR: CollNet refused: %s", why)
	}
}

// TestGPUMemoryFromName: one entry stands for several memory sizes; the
// size a device name states is the one kept (a 40 GB A100 is not an 80 GB
// one for a workload's memory check), and a name without one keeps the
// entry's.
func TestGPUMemoryFromName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{{"A100-SXM4-40GB", 40}, {"NVIDIA A100-SXM4-80GB", 80}, {"Tesla V100-SXM2-16GB", 16}, {"NVIDIA H100 80GB HBM3", 80}, {"H100-SXM", 80}, {"A100-SXM4", 80}} {
		g, err := model.LookupGPU(tc.name)
		if err != nil {
			g, _ = model.MatchGPU(tc.name)
		}
		if g.MemGB != tc.want {
			t.Errorf("%s: %d GB, want %d", tc.name, g.MemGB, tc.want)
		}
	}
}

// TestSharedNICUplinkNamed: the HGX A100 topology of the examples puts
// each pair of NICs under one switch (PIX to each other) whose Gen4 x16
// uplink NCCL rates at 24 GB/s; with 200G ports a second NIC of a pair adds
// nothing the search can use, it takes 4 of 8, and the transport summary
// says why. With 100G ports every NIC is used and nothing is said.
func TestSharedNICUplinkNamed(t *testing.T) {
	for _, tc := range []struct {
		nics string
		used int
		note bool
	}{{"8x200G-ib", 4, true}, {"8x100G-roce", 8, false}} {
		a, err := ingest.ParseFile("../examples/nvidia-smi-topo.txt")
		if err != nil || a.Topo == nil {
			t.Fatalf("topology: %v", err)
		}
		node := a.Topo.Node
		if node.GPU == "" {
			node.GPU = "A100-SXM4"
		}
		_, r := resolved(t, scenarios.Overrides{Topo: &node, Nodes: 2, NICs: tc.nics})
		s := r.Summarize(r.Tuner().Graphs.Ring)
		got := strings.Contains(strings.Join(s.Reasons, "; "), "share one PCIe uplink")
		if s.NICsUsed != tc.used || got != tc.note {
			t.Errorf("%s: %d NICs used, uplink note %v (%v); want %d, %v", tc.nics, s.NICsUsed, got, s.Reasons, tc.used, tc.note)
		}
	}
}

// TestIBDisableOnlyForNETIB: NCCL_IB_DISABLE=1 turns off NCCL's own NET/IB
// (InfiniBand, RoCE, and gIB, an NET/IB build), so those fall back to
// NET/Socket; aws-ofi-nccl and GPUDirect-TCPXO are plugins NCCL uses
// whatever it says, so their clusters keep their transport, with the
// variable marked inert.
func TestIBDisableOnlyForNETIB(t *testing.T) {
	for _, tc := range []struct {
		nics, stack string
		socket      bool
	}{{"8x400G-ib", "", true}, {"8x400G-roce", "", true}, {"8x400G-roce", "gib", true}, {"4x100G-efa", "", false}, {"8x200G-tcp", "tcpxo", false}} {
		c, r := resolved(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: tc.nics, NetStack: tc.stack, Set: []string{"NCCL_IB_DISABLE=1"}})
		if got := r.Net == "Socket"; got != tc.socket {
			t.Errorf("%s %s: network %s, want socket %v", tc.nics, tc.stack, r.Net, tc.socket)
		}
		if inert := c.Knobs.IBDisableInert != ""; inert == tc.socket {
			t.Errorf("%s %s: NCCL_IB_DISABLE marked inert %v", tc.nics, tc.stack, inert)
		}
	}
}

// TestTCPXStacksAreGPUDirectNotRDMA: TCPX and TCPXO move the payload
// between GPU memory and the NIC over TCP; the summary says GPUDirect over
// TCP, not RDMA, and a node that turns GPU-memory access off cannot run
// them (their plugins receive into GPU buffers).
func TestTCPXStacksAreGPUDirectNotRDMA(t *testing.T) {
	_, r := resolved(t, scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "4x200G-tcp", NetStack: "tcpx"})
	if s := r.Summarize(r.Tuner().Graphs.Ring).String(); !strings.Contains(s, "NET/GPUDirectTCPX with GPUDirect over TCP (GPU memory to the NIC, no RDMA)") {
		t.Errorf("tcpx summary claims RDMA: %s", s)
	}
	spec, err := scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x200G-tcp", NetStack: "tcpxo"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	off := false
	spec.Node.NICs.GDR = &off
	if _, err := spec.Build(); err == nil || !strings.Contains(err.Error(), "cannot run the tcpxo stack") {
		t.Errorf("tcpxo with gdr: false: %v", err)
	}
}
