package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func TestDefaultScenario(t *testing.T) {
	spec, err := Load(DefaultScenarioName, DefaultScenario())
	if err != nil {
		t.Fatal(err)
	}
	// The default: 4 nodes of dgx-a100 with only 2x100G RoCEv2 per node.
	if spec.Nodes != 4 || spec.Node.Name != "dgx-a100" || spec.Node.NICs.Count != 2 || spec.Node.NICs.Kind != "roce" || spec.Node.NICs.Speed != "100G" {
		t.Errorf("default scenario = %+v", spec)
	}
	if _, err := spec.Build(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadYAML(t *testing.T) {
	good := `
name: lab
node:
  template: dgx-h100
  cpu: amd
nodes: 2
nics: {count: 4, speed: NDR, kind: ib}
fabric: {kind: leaf-spine, nodes_per_leaf: 1, oversubscription: 2}
env:
  NCCL_ALGO: Ring
nccl_version: "2.21"
`
	spec, err := Load("lab.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Node.CPU != "amd" || spec.Node.NICs.Count != 4 || spec.Nodes != 2 || spec.Fabric.Oversubscription != 2 || spec.Env["NCCL_ALGO"] != "Ring" {
		t.Errorf("loaded %+v", spec)
	}
	if _, err := spec.Build(); err != nil {
		t.Fatal(err)
	}
	// Errors carry file:line:column and name the key.
	bad := []struct {
		doc, want string
	}{
		{"node: dgx-a1000\n", "c.yaml:1:7: node: unknown node template \"dgx-a1000\""},
		{"node: dgx-a100\nnodes: many\n", "c.yaml:2:8: nodes: want an integer"},
		{"node: dgx-a100\nnodez: 2\n", "c.yaml:2:1: unknown key \"nodez\""},
		{"node: dgx-a100\nnics: 4x999G-ib\n", "c.yaml:2:7: nics:"},
		{"node: dgx-a100\nenv: {NCCL_P2P_LEVEL: FAR}\n", "c.yaml:2:6: env:"},
		{"node:\n  template: dgx-a100\n  gpus: 8\n  bogus: 1\n", "c.yaml:4:"},
		{"nodes: 2\n", "missing key \"node\""},
		{"node: [dgx-a100\n", "c.yaml:"},
		{"", "empty cluster file"},
		{"node: dgx-a100\nnode: dgx-h100\n", "duplicate key"},
		{"node: dgx-a100\ngpu: H200-SXM\nnodes: 0\n", "nodes: 0 is outside"},
	}
	for _, tc := range bad {
		_, err := Load("c.yaml", []byte(tc.doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%q) error = %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte("node: hgx-h100-4gpu\nnodes: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadFile(p)
	if err != nil || spec.Nodes != 2 {
		t.Fatalf("LoadFile = %+v, %v", spec, err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestParseNICs(t *testing.T) {
	tests := []struct {
		in    string
		count int
		speed string
		kind  model.NICKind
		ok    bool
	}{
		{"4x200G-ib", 4, "200G", model.NICIB, true},
		{"2x100G-roce", 2, "100G", model.NICRoCE, true},
		{"1x10G-tcp", 1, "10G", model.NICTCP, true},
		{"4x100G-efa", 4, "100G", model.NICEFA, true},
		{"8xNDR", 8, "NDR", model.NICIB, true},
		{"4x999G-ib", 0, "", "", false},
		{"0x100G-ib", 0, "", "", false},
		{"4x100G-fddi", 0, "", "", false},
		{"lots", 0, "", "", false},
	}
	for _, tc := range tests {
		c, s, k, err := ParseNICs(tc.in)
		if (err == nil) != tc.ok || c != tc.count || s != tc.speed || k != tc.kind {
			t.Errorf("ParseNICs(%q) = %d %q %q %v", tc.in, c, s, k, err)
		}
	}
}

func TestOverrides(t *testing.T) {
	spec, err := Overrides{Node: "pcie-gpu-server", GPU: "L40S", GPUsPerNode: 4, Set: []string{"NCCL_P2P_LEVEL=SYS"}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if spec.GPUsPerNode != 4 || spec.Env["NCCL_P2P_LEVEL"] != "SYS" {
		t.Errorf("%+v", spec)
	}
	// Overrides on the default scenario keep it otherwise.
	spec, err = Overrides{Nodes: 8}.Resolve()
	if err != nil || spec.Nodes != 8 || spec.Node.Name != "dgx-a100" {
		t.Errorf("default with --nodes 8 = %+v %v", spec, err)
	}
	for _, o := range []Overrides{
		{Node: "dgx-a100", GPUsPerNode: 9},
		{Node: "dgx-a100", GPU: "L40S"}, // no NVLink on an NVSwitch node
		{Node: "dgx-a100", NICs: "4x999G-ib"},
		{Node: "dgx-a100", Set: []string{"NCCL_BOGUS=1"}},
		{Node: "dgx-a100", Set: []string{"novalue"}},
		{Node: "dgx-a100", Cluster: "x.yaml"},
		{Node: "nope"},
	} {
		if _, err := o.Resolve(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestNICStack: nics.stack names the network stack; an unknown one or one
// for another NIC kind is an error at the value, listing the known names.
func TestNICStack(t *testing.T) {
	spec, err := Load("c.yaml", []byte("node: dgx-h100\nnodes: 2\nnics: {count: 8, speed: 200G, stack: tcpxo}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if spec.Node.NICs.Stack != "tcpxo" || spec.Node.NICs.Kind != "tcp" {
		t.Errorf("nics = %+v, want stack tcpxo on tcp NICs", spec.Node.NICs)
	}
	c, err := spec.Build()
	if err != nil {
		t.Fatal(err)
	}
	if nic := c.Topo.Elem(c.Nodes[0].NICs[0]); nic.NIC.Stack != model.StackTCPXO || !nic.GDR {
		t.Errorf("built NIC stack %q, GDR %v", nic.NIC.Stack, nic.GDR)
	}
	for _, tc := range []struct{ doc, want string }{
		{"node: dgx-a100\nnics: {count: 4, speed: 200G, kind: ib, stack: verbs}\n", "c.yaml:2:48: nics.stack: unknown network stack \"verbs\" (known: ib-verbs, roce, efa-ofi, gib, tcpx, tcpxo, socket)"},
		{"node: dgx-a100\nnics: {count: 4, speed: 200G, kind: ib, stack: tcpx}\n", "c.yaml:2:48: nics.stack: network stack tcpx runs on tcp NICs, not ib"},
	} {
		if _, err := Load("c.yaml", []byte(tc.doc)); err == nil || err.Error() != tc.want {
			t.Errorf("Load(%q) error = %v, want %q", tc.doc, err, tc.want)
		}
	}
	o := Overrides{Node: "dgx-h100", NICs: "8x400G-roce", NetStack: "efa-ofi"}
	if _, err := o.Resolve(); err == nil || !strings.Contains(err.Error(), "--net-stack: network stack efa-ofi runs on efa NICs, not roce") {
		t.Errorf("--net-stack efa-ofi on RoCE: %v", err)
	}
	o.NetStack = "gib"
	if s, err := o.Resolve(); err != nil || s.Node.NICs.Stack != "gib" {
		t.Errorf("--net-stack gib: %v, %+v", err, s.Node.NICs)
	}
}
