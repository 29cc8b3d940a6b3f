package scenarios

import (
	"strconv"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

// TestFabricYAML: every fabric key of the schema parses into the spec.
func TestFabricYAML(t *testing.T) {
	doc := `node: dgx-h100
nodes: 16
nics: {count: 8, speed: 400G, kind: roce, ports: 2, pcie: gen4,
       roce: {pfc: false, ecn: true, mtu: 4096, loss_rate: 0.0001, retransmit: selective-repeat}}
fabric:
  kind: fat-tree
  tiers: 3
  radix: 64
  nodes_per_leaf: 2
  oversubscription: [2, 1.5]
  planes: 2
  routing: static
  sharp: true
  placement: [0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30]
  degraded:
    - {link: node3/nic2, gbps: 100}
    - {link: leaf1/up0, down: true}
  background:
    - {collective: alltoall, nodes: 4, size: 1G}
`
	s, err := Load("f.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Fabric
	if f.Kind != "fat-tree" || f.Tiers != 3 || f.Radix != 64 || f.NodesPerLeaf != 2 || f.Oversubscription != 2 || f.SpineOversubscription != 1.5 ||
		f.Planes != 2 || f.Routing != "static" || !f.SHARP || f.Placement != "explicit" || len(f.Slots) != 16 || f.Slots[15] != 30 ||
		len(f.Degraded) != 2 || !f.Degraded[1].Down || f.Degraded[0].Gbps != 100 || len(f.Background) != 1 {
		t.Errorf("fabric decoded as %+v", f)
	}
	n := s.Node.NICs
	if n.Ports != 2 || n.PCIe != "gen4" || n.RoCE == nil || n.RoCE.PFC || !n.RoCE.ECN || !n.RoCE.DCQCN || n.RoCE.LossRate != 1e-4 || n.RoCE.Retransmit != model.SelectiveRepeat || n.RoCE.MTU != 4096 {
		t.Errorf("nics decoded as %+v roce %+v", n, n.RoCE)
	}
	if _, err := s.Build(); err != nil {
		t.Errorf("build: %v", err)
	}
}

// TestFabricYAMLErrors: each bad input is one line naming the file, the
// line and column of the offending value and the key.
func TestFabricYAMLErrors(t *testing.T) {
	head := "node: dgx-h100\nnodes: 16\nnics: 8x400G-roce\nfabric:\n"
	for _, c := range []struct{ body, want string }{
		{"  kind: fat-tree\n  routing: spray\n", `f.yaml:6:12: fabric.routing: unknown "spray" (known: static, ecmp, adaptive)`},
		{"  kind: fat-tree\n  oversubscription: 0.5\n", "f.yaml:6:21: fabric.oversubscription: 0.5 is below 1"},
		{"  kind: fat-tree\n  radix: 16\n  nodes_per_leaf: 4\n", "f.yaml:6:10: fabric.radix: 16-port leaves cannot hold 32 down + 32 up ports"},
		{"  kind: torus\n", `f.yaml:5:9: fabric.kind: unknown "torus"`},
		{"  kind: fat-tree\n  nodes_per_leaf: 4\n  degraded:\n    - {link: leaf99/up0, down: true}\n", "f.yaml:8:14: fabric.degraded[0].link: leaf99/up0 does not exist: the fabric has leaves leaf0..leaf3"},
		{"  kind: fat-tree\n  nodes_per_leaf: 4\n  degraded:\n    - {link: node3/nic9, gbps: 100}\n", "f.yaml:8:14: fabric.degraded[0].link: node3/nic9/port0 does not exist: each node has NICs nic0..nic7"},
		{"  kind: fat-tree\n  nodes_per_leaf: 8\n  degraded:\n" + downAll(0, 64), "f.yaml:8:5: fabric.degraded: the fabric no longer connects the nodes' nic0 ports"},
		{"  kind: fat-tree\n  tiers: 5\n", "f.yaml:6:10: fabric.tiers: 5 is outside 2..3"},
		{"  kind: fat-tree\n  colour: blue\n", `f.yaml:6:3: fabric: unknown key "colour"`},
		{"  kind: fat-tree\n  planes: 3\n", "f.yaml:6:11: fabric.planes: 8 NIC ports per node do not split evenly over 3 planes"},
		{"  kind: fat-tree\n  placement: [0, 0, 1]\n", "f.yaml:6:18: fabric.placement[1]: slot 0 is given twice"},
	} {
		_, err := Load("f.yaml", []byte(head+c.body))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q:\n got  %v\n want %s", c.body, err, c.want)
		}
	}
	for _, c := range []struct{ nics, want string }{
		{"{count: 8, speed: 400G, kind: roce, roce: {loss_rate: .nan}}", "f.yaml:3:61: nics.roce.loss_rate: NaN is outside [0, 1)"},
		{"{count: 8, speed: 400G, kind: roce, roce: {loss_rate: 1}}", "f.yaml:3:61: nics.roce.loss_rate: 1 is outside [0, 1)"},
		{"{count: 8, speed: 400G, kind: roce, roce: {retransmit: go-back-2}}", `f.yaml:3:62: nics.roce.retransmit: unknown "go-back-2"`},
		{"{count: 8, speed: 400G, kind: roce, pcie: gen9}", `f.yaml:3:49: nics.pcie: unknown PCIe generation "gen9"`},
	} {
		_, err := Load("f.yaml", []byte("node: dgx-h100\nnodes: 4\nnics: "+c.nics+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got  %v\n want %s", c.nics, err, c.want)
		}
	}
}

// downAll lists every uplink of one leaf as down.
func downAll(leaf, ups int) string {
	var b strings.Builder
	for j := 0; j < ups; j++ {
		b.WriteString("    - {link: leaf" + strconv.Itoa(leaf) + "/up" + strconv.Itoa(j) + ", down: true}\n")
	}
	return b.String()
}
