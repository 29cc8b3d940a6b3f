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

// TestDoubleBinaryTree checks the properties of NCCL's double binary tree
// (graph/trees.cc; nccl-facts §4.3): both are trees over all n nodes with at
// most 2 children each, and a node that has children in one tree is a leaf
// in the other (the root of either tree excepted).
func TestDoubleBinaryTree(t *testing.T) {
	for n := 1; n <= 33; n++ {
		trees := DoubleBinaryTree(n)
		for ti, tr := range trees {
			roots, kids := 0, make([]int, n)
			for v, p := range tr {
				switch {
				case p < 0:
					roots++
				case p >= n || p == v:
					t.Fatalf("n=%d tree %d: node %d has parent %d", n, ti, v, p)
				default:
					kids[p]++
				}
				// Walking up reaches the root in fewer than n steps (no cycle).
				for u, steps := v, 0; tr[u] >= 0; u, steps = tr[u], steps+1 {
					if steps > n {
						t.Fatalf("n=%d tree %d: cycle through %d", n, ti, v)
					}
				}
			}
			if roots != 1 {
				t.Fatalf("n=%d tree %d: %d roots", n, ti, roots)
			}
			for v, k := range kids {
				if k > 2 {
					t.Fatalf("n=%d tree %d: node %d has %d children", n, ti, v, k)
				}
			}
		}
		if n%2 == 1 || n < 4 {
			continue
		}
		inner := func(tr []int, v int) bool {
			for _, p := range tr {
				if p == v {
					return true
				}
			}
			return false
		}
		for v := 0; v < n; v++ {
			if trees[0][v] >= 0 && trees[1][v] >= 0 && inner(trees[0], v) && inner(trees[1], v) {
				t.Errorf("n=%d: node %d is an inner node of both trees", n, v)
			}
		}
	}
}
