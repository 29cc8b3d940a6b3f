package scenarios

import (
	"fmt"
	"strings"

	"github.com/collsim/collsim/model"
)

// Preset is a built-in node template.
type Preset struct {
	// Name is what --node takes.
	Name string
	// Node is the template; callers get a copy.
	Node model.NodeSpec
	// GPUChoice is true when --gpu may replace the template's GPU model.
	GPUChoice bool
}

// sw is shorthand for a PCIe switch with GPUs and NIC slots below it.
func sw(gpus, nics []int, below ...model.BridgeSpec) model.BridgeSpec {
	return model.BridgeSpec{GPUs: gpus, NICs: nics, Switches: below}
}

// hb is shorthand for a host bridge with switches below it.
func hb(switches ...model.BridgeSpec) model.BridgeSpec {
	return model.BridgeSpec{Switches: switches}
}

func ints(v ...int) []int { return v }

// dgxA100Socket is one socket of a DGX A100: two PCIe switch complexes, each
// a top switch over a switch per GPU and per NIC, so GPU-GPU and GPU-NIC are
// PXB inside a complex and the other complex of the socket is NODE (as in
// topo_a100sxm80_hgx8_roce100x8_deepep13.txt, where the two ports of a
// complex print PIX because they share one dual-port adapter; DGX A100 has
// eight single-port ConnectX-6, each on its own x16 link).
func dgxA100Socket(g, n int) model.SocketSpec {
	complex := func(g, n int) model.BridgeSpec {
		return hb(sw(nil, nil, sw(ints(g), nil), sw(ints(g+1), nil), sw(nil, ints(n)), sw(nil, ints(n+1))))
	}
	return model.SocketSpec{HostBridges: []model.BridgeSpec{complex(g, n), complex(g+2, n+2)}}
}

// pairedSocket puts each GPU with its own NIC under one PCIe switch on its
// own root port (DGX H100/H200/B200: GPU-NIC PIX, GPU-GPU NODE in a socket).
func pairedSocket(gpus ...int) model.SocketSpec {
	var s model.SocketSpec
	for _, g := range gpus {
		s.HostBridges = append(s.HostBridges, hb(sw(ints(g), ints(g))))
	}
	return s
}

func nvswitch8(gpu, cpu, desc, src string, nics model.NICSpec) model.NodeSpec {
	return model.NodeSpec{
		GPU: gpu, GPUs: 8, CPU: cpu, Description: desc, Source: src,
		Sockets: []model.SocketSpec{pairedSocket(0, 1, 2, 3), pairedSocket(4, 5, 6, 7)},
		NVLink:  model.NVLinkSpec{Kind: "nvswitch"},
		NICs:    nics,
	}
}

func presetTable() []Preset {
	dgx1Pairs := [][3]int{
		// DGX-1V hybrid cube-mesh as printed by nvidia-smi topo -m on a DGX-1 (V100):
		// NV1/NV2 per pair, 6 links per GPU.
		{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2},
		{1, 2, 2}, {1, 3, 1}, {1, 5, 2},
		{2, 3, 2}, {2, 6, 1},
		{3, 7, 1},
		{4, 5, 1}, {4, 6, 1}, {4, 7, 2},
		{5, 6, 2}, {5, 7, 1},
		{6, 7, 2},
	}
	gb200 := model.NodeSpec{
		GPU: "GB200", GPUs: 72, CPU: "grace", SocketsPerHost: 2,
		Description: "GB200 NVL72 rack: 18 trays x 4 GB200 in one NVLink domain (NVLink5 switch), 4x 400G IB per tray",
		Source:      "NVIDIA GB200 NVL72 datasheet; NCCL treats the NVLink domain (MNNVL clique) as one node",
		NVLink:      model.NVLinkSpec{Kind: "nvswitch", Switch: "gen4"},
		NICs:        model.NICSpec{Count: 72, Speed: "400G", Kind: "ib"},
	}
	for s := 0; s < 36; s++ {
		gb200.Sockets = append(gb200.Sockets, model.SocketSpec{HostBridges: []model.BridgeSpec{
			hb(sw(ints(2*s), ints(2*s))), hb(sw(ints(2*s+1), ints(2*s+1))),
		}})
	}
	return []Preset{
		{Name: "dgx-a100", Node: model.NodeSpec{
			GPU: "A100-SXM4", GPUs: 8, CPU: "amd",
			Description: "NVIDIA DGX A100: 8x A100-SXM4, 6 NVSwitch gen2, 8x HDR200 IB, 2x AMD EPYC",
			Source:      "DGX A100 User Guide (system topology); PCIe layout as topo_a100sxm80_hgx8_roce100x8_deepep13.txt",
			Sockets:     []model.SocketSpec{dgxA100Socket(0, 0), dgxA100Socket(4, 4)},
			NVLink:      model.NVLinkSpec{Kind: "nvswitch"},
			NICs:        model.NICSpec{Count: 8, Speed: "HDR", Kind: "ib"},
		}},
		{Name: "dgx-h100", Node: nvswitch8("H100-SXM", "intel",
			"NVIDIA DGX H100: 8x H100-SXM, 4 NVSwitch gen3 (NVLS), 8x NDR400 IB (GPU-NIC PIX), 2x Xeon 8480C",
			"DGX H100 User Guide; NDR 46-48 GB/s per NIC (nccl-tests#290)",
			model.NICSpec{Count: 8, Speed: "NDR", Kind: "ib"})},
		{Name: "hgx-h200", Node: nvswitch8("H200-SXM", "intel",
			"HGX H200 8-GPU: 8x H200-SXM, NVSwitch gen3 (NVLS), 8x NDR400 IB (GPU-NIC PIX)",
			"HGX H200 datasheet; 475 GB/s NVLS AllReduce reported in nccl-tests#272",
			model.NICSpec{Count: 8, Speed: "NDR", Kind: "ib"})},
		{Name: "dgx-b200", Node: nvswitch8("B200", "intel",
			"NVIDIA DGX B200: 8x B200, NVLink5 switch (NVLS), 8x 400G ConnectX-7 IB, 2x Xeon 8570",
			"DGX B200 datasheet; ~830 GB/s AllReduce busbw reported in nccl#1807",
			model.NICSpec{Count: 8, Speed: "400G", Kind: "ib"})},
		{Name: "hgx-h100-4gpu", Node: model.NodeSpec{
			GPU: "H100-SXM", GPUs: 4, CPU: "amd",
			Description: "HGX H100 4-GPU board: 4x H100-SXM, direct NVLink mesh (6 links per pair, no NVSwitch), 4x NDR200 IB",
			Source:      "SURF Snellius gpu_h100 node (nccltests_h100sxm_1x4_nvlink_snellius_1.txt, ibstat_snellius_h100_node.txt)",
			Sockets: []model.SocketSpec{
				{HostBridges: []model.BridgeSpec{hb(sw(ints(0), ints(0))), hb(sw(ints(1), ints(1)))}},
				{HostBridges: []model.BridgeSpec{hb(sw(ints(2), ints(2))), hb(sw(ints(3), ints(3)))}},
			},
			NVLink: model.NVLinkSpec{Kind: "mesh"},
			NICs:   model.NICSpec{Count: 4, Speed: "NDR200", Kind: "ib"},
		}},
		{Name: "hgx-a100-4gpu", Node: model.NodeSpec{
			GPU: "A100-SXM4", GPUs: 4, CPU: "amd",
			Description: "HGX A100 4-GPU board: 4x A100-SXM, NV4 full mesh (no NVSwitch), 2x HDR200 IB",
			Source:      "topo_a100sxm40_hgx4_nv4_hdr200x2_nccl595.txt (NVIDIA/nccl#595)",
			Sockets: []model.SocketSpec{
				{HostBridges: []model.BridgeSpec{hb(sw(ints(0), nil)), hb(sw(ints(1), ints(0)))}},
				{HostBridges: []model.BridgeSpec{hb(sw(ints(2), ints(1))), hb(sw(ints(3), nil))}},
			},
			NVLink: model.NVLinkSpec{Kind: "mesh"},
			NICs:   model.NICSpec{Count: 2, Speed: "HDR", Kind: "ib"},
		}},
		{Name: "v100-4gpu-nvlink", Node: model.NodeSpec{
			GPU: "V100-SXM2", GPUs: 4, CPU: "intel",
			Description: "4x V100-SXM2 full NVLink2 mesh (2 links per pair), 2x EDR100 IB (ABCI compute node V)",
			Source:      "ABCI system documentation; nccltests_v100sxm2_*_abci_1.txt",
			Sockets: []model.SocketSpec{
				{HostBridges: []model.BridgeSpec{hb(sw(ints(0, 1), ints(0)))}},
				{HostBridges: []model.BridgeSpec{hb(sw(ints(2, 3), ints(1)))}},
			},
			NVLink: model.NVLinkSpec{Kind: "mesh"},
			NICs:   model.NICSpec{Count: 2, Speed: "EDR", Kind: "ib"},
		}},
		{Name: "dgx1-v100", Node: model.NodeSpec{
			GPU: "V100-SXM2", GPUs: 8, CPU: "intel",
			Description: "NVIDIA DGX-1 (V100): 8x V100-SXM2 hybrid cube-mesh NVLink2, 4x EDR100 IB, 2x Xeon E5-2698 v4",
			Source:      "DGX-1 System Architecture white paper (hybrid cube-mesh, 4 PLX switches each with 2 GPUs and 1 NIC)",
			Sockets: []model.SocketSpec{
				{HostBridges: []model.BridgeSpec{hb(sw(ints(0, 1), ints(0))), hb(sw(ints(2, 3), ints(1)))}},
				{HostBridges: []model.BridgeSpec{hb(sw(ints(4, 5), ints(2))), hb(sw(ints(6, 7), ints(3)))}},
			},
			NVLink: model.NVLinkSpec{Kind: "pairs", Pairs: dgx1Pairs},
			NICs:   model.NICSpec{Count: 4, Speed: "EDR", Kind: "ib"},
		}},
		{Name: "pcie-gpu-server", GPUChoice: true, Node: model.NodeSpec{
			GPU: "L40S", GPUs: 8, CPU: "intel", NICSlots: 4,
			Description: "2-socket PCIe server: 8 GPUs (choose with --gpu, default L40S) in pairs under 4 PCIe switches, no NVLink, 2x 100G RoCE",
			Source:      "typical 4U 8-GPU PCIe server (two Gen4/Gen5 switches per socket)",
			Sockets: []model.SocketSpec{
				{HostBridges: []model.BridgeSpec{hb(sw(ints(0, 1), ints(0))), hb(sw(ints(2, 3), ints(1)))}},
				{HostBridges: []model.BridgeSpec{hb(sw(ints(4, 5), ints(2))), hb(sw(ints(6, 7), ints(3)))}},
			},
			NVLink: model.NVLinkSpec{Kind: "none"},
			NICs:   model.NICSpec{Count: 2, Speed: "100G", Kind: "roce"},
		}},
		{Name: "gb200-nvl72", Node: gb200},
	}
}

// Presets returns the built-in node templates, in display order. Each call
// returns fresh copies.
func Presets() []Preset {
	ps := presetTable()
	for i := range ps {
		ps[i].Node.Name = ps[i].Name
	}
	return ps
}

// LookupPreset returns the named template; an unknown name is an error that
// lists the known ones.
func LookupPreset(name string) (Preset, error) {
	ps := Presets()
	for _, p := range ps {
		if strings.EqualFold(p.Name, strings.TrimSpace(name)) {
			return p, nil
		}
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return Preset{}, fmt.Errorf("unknown node template %q (known: %s)", name, strings.Join(names, ", "))
}
