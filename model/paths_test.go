package model

import (
	"fmt"
	"testing"
)

// testNode is a small two-socket node with partial NVLink (pairs 0-1 and
// 2-3), GPUs and NICs under PCIe switches, so paths mix NVL, PIX, PHB, SYS,
// PXN, SHM and staged NET.
func testNode() NodeSpec {
	return NodeSpec{
		Name: "test", GPU: "A100-SXM4", GPUs: 4, CPU: "intel",
		Sockets: []SocketSpec{
			{HostBridges: []BridgeSpec{{Switches: []BridgeSpec{{GPUs: []int{0}, NICs: []int{0}}, {GPUs: []int{1}}}}}},
			{HostBridges: []BridgeSpec{{Switches: []BridgeSpec{{GPUs: []int{2, 3}, NICs: []int{1}}}}}},
		},
		NVLink: NVLinkSpec{Kind: "pairs", Pairs: [][3]int{{0, 1, 4}, {2, 3, 4}}},
		NICs:   NICSpec{Count: 2, Speed: "HDR", Kind: "ib"},
	}
}

// TestResolveTranslation: resolving node 2 by shifting node 0's paths gives
// the same routes as resolving it directly.
func TestResolveTranslation(t *testing.T) {
	for _, env := range []map[string]string{nil, {"NCCL_NET_GDR_LEVEL": "LOC", "NCCL_P2P_LEVEL": "PIX"}, {"NCCL_IB_DISABLE": "1"}} {
		c, err := ClusterSpec{Node: testNode(), Nodes: 3, Env: env}.Build()
		if err != nil {
			t.Fatal(err)
		}
		shifted, err := c.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		direct, _ := c.Resolve()
		direct.done[2] = false
		if err := direct.resolveDirect(2); err != nil {
			t.Fatal(err)
		}
		for _, a := range c.Nodes[2].GPUs {
			for _, b := range c.Nodes[2].GPUs {
				if a == b {
					continue
				}
				if got, want := shifted.GPU(a, b), direct.GPU(a, b); fmt.Sprint(*got) != fmt.Sprint(*want) {
					t.Fatalf("%v: GPU path %v != %v", env, *got, *want)
				}
			}
			for _, nic := range c.Nodes[2].NICs {
				got, want := shifted.NetTo(a, nic), direct.NetTo(a, nic)
				if (got == nil) != (want == nil) || (got != nil && fmt.Sprint(*got) != fmt.Sprint(*want)) {
					t.Fatalf("%v: NIC path %v != %v", env, got, want)
				}
			}
		}
		// The mix is really there: SHM and PXN or staging appear.
		p := shifted.GPU(c.Nodes[2].GPUs[1], c.Nodes[2].GPUs[2])
		if p.Transport == TransportP2P {
			t.Errorf("%v: GPU1-GPU2 across sockets uses P2P", env)
		}
	}
}
