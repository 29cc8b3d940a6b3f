package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loaders are the four kinds of collsim YAML input, for tests that hold
// for each.
var loaders = []struct {
	what string
	load func(file string, data []byte) error
}{
	{"cluster file", func(f string, d []byte) error { _, err := Load(f, d); return err }},
	{"sweep file", func(f string, d []byte) error { _, err := LoadSweep(f, d); return err }},
	{"workload file", func(f string, d []byte) error { _, err := LoadWorkload(f, d); return err }},
	{"price file", func(f string, d []byte) error { _, err := LoadPrices(f, d); return err }},
}

// TestWrongKindRefused: a key that takes a single value refuses a mapping
// or a list (the template's GPU, the default NCCL version and no name were
// used before), and one that takes a mapping says what it got.
func TestWrongKindRefused(t *testing.T) {
	const head = "node: dgx-h100\nnodes: 2\n"
	cluster := []struct{ doc, want string }{
		{head + "gpu: {a: 1}\n", "c.yaml:3:6: gpu: want text (a scalar), got a mapping"},
		{head + "gpu: [H100-SXM]\n", "c.yaml:3:6: gpu: want text (a scalar), got a list"},
		{head + "gpu:\n", "c.yaml:3:5: gpu: want a GPU model such as H100-SXM, got nothing"},
		{head + "nccl_version: {a: 1}\n", "c.yaml:3:15: nccl_version: want text (a scalar), got a mapping"},
		{head + "nccl_version: [2.21]\n", "c.yaml:3:15: nccl_version: want text (a scalar), got a list"},
		{"name: {a: 1}\n" + head, "c.yaml:1:7: name: want text (a scalar), got a mapping"},
		{"name: [a, b]\n" + head, "c.yaml:1:7: name: want text (a scalar), got a list"},
		{"node: {template: [dgx-h100]}\n", "c.yaml:1:18: node.template: want text (a scalar), got a list"},
		{"node: {template: {a: 1}, cpu: amd}\n", "c.yaml:1:18: node.template: want text (a scalar), got a mapping"},
		{head + "env: {NCCL_ALGO: [Ring]}\n", "c.yaml:3:18: env.NCCL_ALGO: want text (a scalar), got a list"},
		{head + "nodes_x: 1\n", "c.yaml:3:1: unknown key \"nodes_x\""},
		{"node: dgx-h100\nnodes: {a: 1}\n", "c.yaml:2:8: nodes: want an integer, got a mapping"},
		{head + "fabric: {kind: [fat-tree]}\n", "c.yaml:3:16: fabric.kind: want text (a scalar), got a list"},
		{head + "fabric: {kind: leaf-spine, nodes_per_leaf: 1, sharp: {a: 1}}\n", "c.yaml:3:54: fabric.sharp: want true or false, got a mapping"},
		{head + "fabric: {kind: leaf-spine, nodes_per_leaf: 1, oversubscription: [[2]]}\n", "c.yaml:3:66: fabric.oversubscription: want a ratio such as 1, 2 or 3:1, got a list"},
		{head + "{a: 1}: 2\n", "c.yaml:3:1: a key must be text, got a mapping"},
	}
	for _, tc := range cluster {
		_, err := Load("c.yaml", []byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
	const sweepTail = "axes: {nodes: [1, 2]}\nmetric: {collective: allreduce, size: 1G}\n"
	sweep := []struct{ doc, want string }{
		{"name: [a]\nbase: dgx-h100\n" + sweepTail, "s.yaml:1:7: name: want text (a scalar), got a list"},
		{"base: dgx-h100\nwithin: {a: 1}\n" + sweepTail, "s.yaml:2:9: within: want a fraction between 0 and 1 such as 5% or 0.05, got a mapping"},
		{"base: [dgx-h100]\n" + sweepTail, "s.yaml:1:7: base: want a preset name, a cluster file or a cluster mapping, got a list"},
		{"base: dgx-h100\naxes: {nodes: [[1], 2]}\nmetric: {collective: allreduce}\n", "s.yaml:2:16: nodes: want a single value (a scalar), got a list"},
		{"base: {node: dgx-h100, gpu: [B200]}\n" + sweepTail, "s.yaml:1:29: gpu: want text (a scalar), got a list"},
	}
	for _, tc := range sweep {
		_, err := LoadSweep("s.yaml", []byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
	const wlHead = "params: 7B\ncompute_ms: 3\n"
	workload := []struct{ doc, want string }{
		{wlHead + "cluster: {node: dgx-h100, env: {NCCL_ALGO: [Ring]}}\n", "w.yaml:3:44: cluster.env.NCCL_ALGO: want text (a scalar), got a list"},
		{wlHead + "cluster: {node: [dgx-h100]}\n", "w.yaml:3:17: cluster.node: want a single value (a scalar), got a list"},
		{wlHead + "name: {a: 1}\n", "w.yaml:3:7: name: want a single value (a scalar), got a mapping"},
		{wlHead + "model: 7B\n", "w.yaml:3:8: model: want a mapping (expert_params, experts, heads, hidden, layers, params, seq_len, top_k, vocab), got \"7B\""},
	}
	for _, tc := range workload {
		_, err := LoadWorkload("w.yaml", []byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
	prices := []struct{ doc, want string }{
		{"title: [a]\n", "p.yaml:1:8: title: want text (a scalar), got a list"},
		{"currency: {a: 1}\n", "p.yaml:1:11: currency: want text (a scalar), got a mapping"},
		{"date: [2024]\n", "p.yaml:1:7: date: want text (a scalar), got a list"},
		{"gpu: {H100-SXM: {usd: 1, source: [a]}}\n", "p.yaml:1:34: gpu.H100-SXM.source: want text (a scalar), got a list"},
		{"gpu: {H100-SXM: [1]}\n", "p.yaml:1:17: gpu.H100-SXM: want a number or {usd: N, source: ...}, got a list"},
		{"example: {a: 1}\n", "p.yaml:1:10: example: want true or false, got a mapping"},
	}
	for _, tc := range prices {
		_, err := LoadPrices("p.yaml", []byte(tc.doc))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestSecondDocumentRefused: a file of several YAML documents is refused
// at the line of the second (the second was ignored before); a leading
// "---" and a trailing empty one are not a second document.
func TestSecondDocumentRefused(t *testing.T) {
	for _, l := range loaders {
		doc := "node: dgx-h100\nnodes: 2\n---\nnode: dgx-a100\nnodes: 3\n"
		want := "f.yaml:3:1: a " + l.what + " holds one document; a second starts at line 3"
		if err := l.load("f.yaml", []byte(doc)); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", l.what, err, want)
		}
		doc = "a: 1\n--- \n  b: [\n"
		if err := l.load("f.yaml", []byte(doc)); err == nil || !strings.HasPrefix(err.Error(), "f.yaml:3: invalid YAML") {
			t.Errorf("%s: a syntax error in a second document: error %v", l.what, err)
		}
	}
	for _, doc := range []string{
		"---\nnode: dgx-h100\nnodes: 2\n",
		"node: dgx-h100\nnodes: 2\n---\n",
		"node: dgx-h100\nnodes: 2\n---\n# nothing\n",
		"node: dgx-h100\nnodes: 2\n...\n",
	} {
		if _, err := Load("c.yaml", []byte(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// TestAliasesResolved: an alias (*name) stands for the value of its anchor
// (&name) everywhere a value is read; before, a scalar reader took the
// alias's name ("n") as the value.
func TestAliasesResolved(t *testing.T) {
	spec, err := Load("c.yaml", []byte("node: dgx-h100\nnodes: 2\nnics: &n 8x400G-ib\nname: *n\n"))
	if err != nil || spec.Name != "8x400G-ib" {
		t.Errorf("name: *n: name %q, error %v", spec.Name, err)
	}
	spec, err = Load("c.yaml", []byte("node: dgx-h100\nnodes: &n 3\ngpus_per_node: *n\n"))
	if err != nil || spec.Nodes != 3 || spec.GPUsPerNode != 3 {
		t.Errorf("gpus_per_node: *n: %d nodes x %d, error %v", spec.Nodes, spec.GPUsPerNode, err)
	}
	// A mapping through an alias, decoded by the library (strictDecode).
	spec, err = Load("c.yaml", []byte("node: dgx-h100\nnodes: 2\nrun: &r {launch: single-process}\nfabric: &f {kind: leaf-spine, nodes_per_leaf: 1}\nenv: {NCCL_ALGO: &a Ring, NCCL_PROTO: Simple}\n"))
	if err != nil || spec.Run.Launch != "single-process" || spec.Fabric.Kind != "leaf-spine" || spec.Env["NCCL_ALGO"] != "Ring" {
		t.Errorf("anchors: %+v, error %v", spec, err)
	}
	sw, err := LoadSweep("s.yaml", []byte("base: dgx-h100\naxes: {nodes: &l [1, 2], gpus_per_node: [4, 8]}\nmetric: {collective: allreduce, size: &s 1G}\nname: *s\n"))
	if err != nil || sw.Name != "1G" {
		t.Errorf("sweep: %+v, error %v", sw, err)
	}
	w, err := LoadWorkload("w.yaml", []byte("params: &p 7\ncompute_ms: *p\nmodel: {layers: 2, hidden: 64}\n"))
	if err != nil || w.ComputeMs != 7 {
		t.Errorf("workload: compute_ms %g, error %v", w.ComputeMs, err)
	}
	// An error in an aliased value is at the alias, naming its key.
	_, err = Load("c.yaml", []byte("name: &n lab\nnode: dgx-h100\nnodes: *n\n"))
	if want := `c.yaml:3:8: nodes: want an integer, got "lab"`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	bad := []struct{ doc, want string }{
		{"node: dgx-h100\nnodes: 2\nenv: &e {NCCL_ALGO: *e}\n", "c.yaml:3:21: alias *e is inside the value it names"},
		{"a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
			"c.yaml: aliases (*name) expand the document by more than 100000 values"},
	}
	for _, tc := range bad {
		if _, err := Load("c.yaml", []byte(tc.doc)); err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestNICsRefusedAtTheirKey: ports: 0 is refused as 1000 is (it was
// accepted), and a list of the wrong length is named by its key path and
// position (it was at the node, without a key).
func TestNICsRefusedAtTheirKey(t *testing.T) {
	const head = "node: dgx-h100\nnodes: 2\n"
	bad := []struct{ doc, want string }{
		{head + "nics: {count: 8, speed: NDR, kind: ib, ports: 0}\n", "c.yaml:3:47: nics.ports: 0 is outside 1..8"},
		{head + "nics: {count: 8, speed: NDR, kind: ib, ports: 1000}\n", "c.yaml:3:47: nics.ports: 1000 is outside 1..8"},
		{"node: {template: dgx-h100, nvlink: {kind: pairs, pairs: [[0,0]]}}\nnodes: 2\n", "c.yaml:1:58: nvlink.pairs[0]: want a list of 3 elements, got 2"},
		{"node: {template: dgx-h100, nvlink: {kind: pairs, pairs: [[0, 1, 2],\n    [0, 1, 2, 3]]}}\n", "c.yaml:2:5: nvlink.pairs[1]: want a list of 3 elements, got 4"},
	}
	for _, tc := range bad {
		if _, err := Load("c.yaml", []byte(tc.doc)); err == nil || err.Error() != tc.want {
			t.Errorf("%q: error %v, want %q", tc.doc, err, tc.want)
		}
	}
	for _, doc := range []string{
		head + "nics: {count: 8, speed: NDR, kind: ib, ports: 2}\n",
		head + "nics: {count: 8, speed: NDR, kind: ib}\n",
		"node: dgx-h100\nnics: {count: 0, speed: NDR, kind: ib}\n", // one node needs no NIC
	} {
		if _, err := Load("c.yaml", []byte(doc)); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// TestMissingFileNamed: a file named inside an input that is not there is
// named as missing at its key; a workload's cluster given as a file name
// says how a cluster file is written (it said "want a mapping ()").
func TestMissingFileNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent.yaml")
	const wlHead = "params: 7B\ncompute_ms: 3\n"
	_, err := LoadWorkload("w.yaml", []byte(wlHead+"cluster: {file: "+missing+"}\n"))
	if want := "w.yaml:3:17: cluster.file: " + missing + " does not exist"; err == nil || err.Error() != want {
		t.Errorf("cluster.file: error %v, want %q", err, want)
	}
	_, err = LoadWorkload("w.yaml", []byte(wlHead+"cluster: "+missing+"\n"))
	want := "w.yaml:3:10: cluster: want a mapping (env, file, gpu, gpus_per_node, nccl_version, nics, node, nodes), got \"" + missing + "\"; a cluster file is written cluster: {file: " + missing + "}"
	if err == nil || err.Error() != want {
		t.Errorf("cluster: FILE: error %v, want %q", err, want)
	}
	_, err = LoadSweep("s.yaml", []byte("base: "+missing+"\naxes: {nodes: [1, 2]}\nmetric: {collective: allreduce}\n"))
	if want := "s.yaml:1:7: base: " + missing + " does not exist"; err == nil || err.Error() != want {
		t.Errorf("base: error %v, want %q", err, want)
	}
	_, err = LoadSweep("s.yaml", []byte("base: dgx-h100\naxes: {nodes: [1, 2]}\nmetric: {workload: "+missing+"}\n"))
	if want := "s.yaml:3:20: metric.workload: " + missing + " does not exist"; err == nil || err.Error() != want {
		t.Errorf("metric.workload: error %v, want %q", err, want)
	}
}

// TestExampleFilesLoad: every YAML file shipped in examples/ and here
// loads with its own loader (k8s-sweep.yaml is a Kubernetes manifest).
func TestExampleFilesLoad(t *testing.T) {
	kinds := map[string]string{
		"../examples/lab.yaml": "cluster", "default.yaml": "cluster",
		"../examples/fabric.yaml": "sweep", "../examples/distributed/grid.yaml": "sweep",
		"../examples/quotes.yaml": "prices", "prices_example.yaml": "prices",
		"../examples/distributed/k8s-sweep.yaml": "",
	}
	files, _ := filepath.Glob("../examples/*.yaml")
	more, _ := filepath.Glob("../examples/*/*.yaml")
	here, _ := filepath.Glob("*.yaml")
	for _, f := range append(append(files, more...), here...) {
		kind, ok := kinds[f]
		if !ok {
			switch filepath.Base(filepath.Dir(f)) {
			case "fabrics", "scale":
				kind = "cluster"
			case "stories", "workloads":
				kind = "workload"
			default:
				t.Errorf("%s: which kind of input is it?", f)
				continue
			}
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch kind {
		case "cluster":
			_, err = Load(f, data)
		case "sweep":
			_, err = LoadSweepFile(f)
		case "workload":
			_, err = LoadWorkloadFile(f)
		case "prices":
			_, err = LoadPrices(f, data)
		}
		if err != nil {
			t.Errorf("%s (%s): %v", f, kind, err)
		}
	}
}
