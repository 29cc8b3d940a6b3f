package model_test

import (
	"testing"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/scenarios"
)

// pcieLinkGen returns the PCIe generation an x16 link's capacity stands for
// (0 when it is no x16 link of a known generation).
func pcieLinkGen(t *testing.T, l model.Link) int {
	t.Helper()
	for g := 3; g <= 6; g++ {
		line, _, err := model.PCIeBandwidth(g, 16)
		if err != nil {
			t.Fatal(err)
		}
		if l.Lanes == 16 && l.BW == line {
			return g
		}
	}
	return 0
}

// uplinkGens returns the generation of node 0's NIC 0 link to its parent,
// that parent's name, the generation of the parent's own uplink and the
// NIC element's PCIeGen.
func uplinkGens(t *testing.T, c *model.Cluster) (nicLink int, parent string, swUp, nicGen int) {
	t.Helper()
	tp := c.Topo
	nic := tp.Elem(c.Nodes[0].NICs[0])
	up := func(id model.ElemID, below model.ElemID) (model.Link, bool) {
		for _, l := range tp.Out[id] {
			ln := tp.Links[l]
			if ln.Kind != model.LinkPCIe || ln.To == below {
				continue
			}
			if k := tp.Elem(ln.To).Kind; k == model.KindPCIeSwitch || k == model.KindHostBridge {
				return ln, true
			}
		}
		return model.Link{}, false
	}
	l, ok := up(nic.ID, model.None)
	if !ok {
		t.Fatalf("%s has no PCIe link to a switch", nic.Name)
	}
	sw := tp.Elem(l.To)
	swUp = -1
	if sw.Kind == model.KindPCIeSwitch {
		u, ok := up(sw.ID, nic.ID)
		if !ok {
			t.Fatalf("%s has no uplink", sw.Name)
		}
		swUp = pcieLinkGen(t, u)
	}
	return pcieLinkGen(t, l), sw.Name, swUp, nic.NIC.PCIeGen
}

// TestNICDoesNotRaiseSwitchGen: a PCIe link trains at the highest
// generation both ends support. A 200G NIC (a Gen4 adapter) in a DGX-1's
// PLX switch (a Gen3 platform, V100) ran its link and the switch's uplink at
// Gen4 (~25 GB/s through one NIC) because a switch took the highest
// generation of the devices below it; both are Gen3 (~12 GB/s). On a Gen5
// platform (DGX H100) a Gen4 NIC trains at Gen4 and the switch stays Gen5.
func TestNICDoesNotRaiseSwitchGen(t *testing.T) {
	for _, c := range []struct {
		name              string
		o                 scenarios.Overrides
		nicLink, swUp, ng int
	}{
		{"dgx1-v100, 1x 200G IB", scenarios.Overrides{Node: "dgx1-v100", Nodes: 2, NICs: "1x200G-ib"}, 3, 3, 3},
		{"dgx1-v100, 4x EDR (default)", scenarios.Overrides{Node: "dgx1-v100", Nodes: 2}, 3, 3, 3},
		{"dgx-h100, 8x 200G IB", scenarios.Overrides{Node: "dgx-h100", Nodes: 2, NICs: "8x200G-ib"}, 4, 5, 4},
		{"dgx-h100, 8x NDR (default)", scenarios.Overrides{Node: "dgx-h100", Nodes: 2}, 5, 5, 5},
		{"dgx-a100, 8x 400G RoCE", scenarios.Overrides{Node: "dgx-a100", Nodes: 2, NICs: "8x400G-roce"}, 4, 4, 4},
	} {
		cl, _ := resolved(t, c.o)
		nicLink, parent, swUp, ng := uplinkGens(t, cl)
		if nicLink != c.nicLink || swUp != c.swUp || ng != c.ng {
			t.Errorf("%s: NIC link Gen%d to %s (uplink Gen%d), NIC PCIeGen %d; want Gen%d, uplink Gen%d, PCIeGen %d",
				c.name, nicLink, parent, swUp, ng, c.nicLink, c.swUp, c.ng)
		}
	}
}

// TestPlatformGenFromLayout: a generation stated in the layout is the
// platform's: a host bridge's gen holds the switches below it (and their
// NICs) to it, a switch's gen holds its NICs, and nics.pcie below the
// platform's generation still caps the NIC.
func TestPlatformGenFromLayout(t *testing.T) {
	node := func(hbGen, swGen int, pcie string) model.NodeSpec {
		return model.NodeSpec{
			Name: "gen", GPU: "H100-SXM", GPUs: 1, CPU: "intel",
			Sockets: []model.SocketSpec{{HostBridges: []model.BridgeSpec{{Gen: hbGen,
				Switches: []model.BridgeSpec{{GPUs: []int{0}, NICs: []int{0}, Gen: swGen}}}}}},
			NICs: model.NICSpec{Count: 1, Speed: "400G", Kind: "ib", PCIe: pcie},
		}
	}
	for _, c := range []struct {
		name          string
		n             model.NodeSpec
		nicLink, swUp int
	}{
		{"no gens stated: the GPU's Gen5", node(0, 0, ""), 5, 5},
		{"host bridge gen 4", node(4, 0, ""), 4, 4},
		{"switch gen 3", node(0, 3, ""), 3, 3},
		{"host bridge gen 4, switch gen 5", node(4, 5, ""), 5, 5},
		{"nics.pcie gen4 on Gen5", node(0, 0, "gen4"), 4, 5},
		{"nics.pcie gen5 on a Gen3 switch", node(0, 3, "gen5"), 3, 3},
	} {
		cl, err := model.ClusterSpec{Node: c.n, Nodes: 1}.Build()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		nicLink, parent, swUp, ng := uplinkGens(t, cl)
		if nicLink != c.nicLink || swUp != c.swUp || ng != c.nicLink {
			t.Errorf("%s: NIC link Gen%d to %s (uplink Gen%d), NIC PCIeGen %d; want Gen%d, uplink Gen%d",
				c.name, nicLink, parent, swUp, ng, c.nicLink, c.swUp)
		}
	}
}
