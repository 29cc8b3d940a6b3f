package scenarios

import (
	"strings"
	"testing"
)

// TestYAMLErrorsInTheFilesTerms: every YAML mistake is reported at
// file:line:column of the file as written, in YAML's terms (no Go type
// names), naming the key; keys given twice are refused at any depth.
func TestYAMLErrorsInTheFilesTerms(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"list for a mapping", "node: dgx-h100\nnics:\n  - 1\n  - 2\n", "c.yaml:3:3: nics: want COUNTxSPEED-KIND or a mapping (count, speed, kind, stack, gdr, ports, pcie, roce), got a list"},
		{"text for an integer", "node: dgx-h100\nnics:\n  count: abc\n  speed: 400G\n  kind: ib\n", `c.yaml:3:10: count: want an integer, got text "abc"`},
		{"deep list for an integer", "node: dgx-h100\nnics:\n  count: 4\n  speed: 400G\n  kind: ib\n  roce:\n    mtu: [1]\n", "c.yaml:7:10: mtu: want an integer, got a list"},
		{"unknown nested key", "node: dgx-h100\nnics:\n  count: 4\n  sped: 400G\n", `c.yaml:4:3: unknown key "sped" (known: count, speed, kind, stack, roce, gdr, ports, pcie)`},
		{"list for text in a node", "node:\n  template: dgx-h100\n  gpu: [a]\n", "c.yaml:3:8: gpu: want text, got a list"},
		{"fabric text for an integer", "node: dgx-h100\nfabric:\n  kind: leaf-spine\n  nodes_per_leaf: x\n", `c.yaml:4:19: fabric.nodes_per_leaf: want an integer, got "x"`},
		{"duplicate top-level key", "node: dgx-h100\nnodes: 2\nnodes: 3\n", `c.yaml:3:1: duplicate key "nodes" (first given at line 2:1)`},
		{"duplicate nested key", "node: dgx-h100\nnics:\n  count: 4\n  count: 8\n  speed: 400G\n  kind: ib\n", `c.yaml:4:3: duplicate key "count" (first given at line 3:3)`},
		{"duplicate env key", "node: dgx-h100\nenv:\n  NCCL_ALGO: Ring\n  NCCL_ALGO: Tree\n", `c.yaml:4:3: duplicate key "NCCL_ALGO" (first given at line 3:3)`},
		{"duplicate key in a node", "node:\n  template: dgx-h100\n  gpu: H100-SXM\n  gpu: H200-SXM\n", `c.yaml:4:3: duplicate key "gpu" (first given at line 3:3)`},
		{"syntax", "node: [dgx-h100\n", "c.yaml:1: invalid YAML: did not find expected ',' or ']' (at the end of the file)"},
		// The library counts its parser's lines from 0: these were
		// reported one line early, and the first without a line.
		{"list item after a mapping", "node: dgx-h100\n- nodes: 2\n", "c.yaml:2: invalid YAML: did not find expected key"},
		{"mapping after list items", "- a\n- b\nnode: dgx-h100\n", "c.yaml:3: invalid YAML: did not find expected '-' indicator"},
		{"unclosed bracket mid-file", "node: dgx-h100\nnics: [1,\nnodes: 2\n", "c.yaml:2: invalid YAML: did not find expected ',' or ']'"},
		{"scanner error on line 1", "@node: dgx-h100\n", "c.yaml:1: invalid YAML: found character that cannot start any token"},
		{"scanner error later", "node: dgx-h100\nnodes: @2\n", "c.yaml:2: invalid YAML: found character that cannot start any token"},
		{"tab in the indentation", "node: dgx-h100\nnodes: 2\n\tname: x\n", "c.yaml:3: invalid YAML: found a tab character that violates indentation"},
		{"bad byte", "node: dgx-h100\nnodes: 2\nname: a\xffb\n", "c.yaml:3:8: invalid YAML: invalid leading UTF-8 octet"},
		{"control character", "node: dgx-h100\nname: a\x01b\n", "c.yaml:2:8: invalid YAML: control characters are not allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load("c.yaml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.doc)
			}
			if err.Error() != tc.want {
				t.Errorf("error %q\nwant  %q", err, tc.want)
			}
			for _, bad := range []string{"!!", "model.", "unmarshal", " yaml: ", "\n"} {
				if strings.Contains(err.Error(), bad) {
					t.Errorf("error %q contains %q", err, bad)
				}
			}
		})
	}
}

// TestDuplicateKeysEveryLoader: sweeps, prices and workloads refuse a key
// given twice in a nested mapping too.
func TestDuplicateKeysEveryLoader(t *testing.T) {
	if _, err := LoadWorkload("w.yaml", []byte("params: 7e9\nparams: 8e9\n")); err == nil || !strings.Contains(err.Error(), `w.yaml:2:1: duplicate key "params"`) {
		t.Errorf("workload: %v", err)
	}
	if _, err := LoadPrices("p.yaml", []byte("gpu:\n  H100-SXM: 30000\n  H100-SXM: 25000\n")); err == nil || !strings.Contains(err.Error(), `p.yaml:3:3: duplicate key "H100-SXM" (first given at line 2:3)`) {
		t.Errorf("prices: %v", err)
	}
	if _, err := LoadSweep("s.yaml", []byte("base:\n  node: dgx-h100\n  node: dgx-a100\n")); err == nil || !strings.Contains(err.Error(), `s.yaml:3:3: duplicate key "node"`) {
		t.Errorf("sweep: %v", err)
	}
}

// TestBridgeOnlyGPUOnNVLinkNode: a PCIe card whose NVLink is a two-card
// bridge cannot replace the GPUs of an NVSwitch or mesh node, from the
// command line or from a cluster file; on a PCIe node it can.
func TestBridgeOnlyGPUOnNVLinkNode(t *testing.T) {
	if _, err := (Overrides{Node: "dgx-h100", GPU: "RTX-2080TI"}).Resolve(); err == nil || !strings.Contains(err.Error(), `--gpu RTX-2080TI is a PCIe card whose NVLink is at most a bridge between two cards, but node "dgx-h100"`) {
		t.Errorf("--gpu on dgx-h100: %v", err)
	}
	if _, err := (Overrides{Node: "hgx-a100-4gpu", GPU: "A100-PCIE"}).Resolve(); err == nil || !strings.Contains(err.Error(), "(mesh)") {
		t.Errorf("--gpu on a mesh: %v", err)
	}
	if _, err := Load("c.yaml", []byte("node: dgx-h100\ngpu: RTX-2080TI\n")); err == nil || !strings.HasPrefix(err.Error(), "c.yaml:2:6: gpu RTX-2080TI is a PCIe card") {
		t.Errorf("gpu: in a file: %v", err)
	}
	spec, err := (Overrides{Node: "pcie-gpu-server", GPU: "RTX-2080TI"}).Resolve()
	if err != nil || spec.Node.GPU != "RTX-2080TI" {
		t.Errorf("--gpu on a PCIe node: %v, GPU %q", err, spec.Node.GPU)
	}
}
