package scenarios

import "testing"

// FuzzLoad: no cluster YAML may panic the loader or building the cluster;
// every refusal is an error. Seeded with the embedded default and valid and
// broken documents.
func FuzzLoad(f *testing.F) {
	f.Add(DefaultScenario())
	for _, s := range []string{
		"node: dgx-h100\nnodes: 2\nnics: 8x400G-ib\n",
		"node:\n  template: pcie-gpu-server\n  gpu: L40S\nnodes: 3\nfabric: {kind: leaf-spine, nodes_per_leaf: 2, oversubscription: 3}\n",
		"node:\n  gpu: A100-SXM4\n  gpus: 2\n  sockets:\n    - host_bridges:\n        - switches: [{gpus: [0, 1], nics: [0]}]\n  nvlink: {kind: pairs, pairs: [[0, 1, 4]]}\n  nics: {count: 1, speed: HDR, kind: ib}\n",
		"node: [", "nodes: -1", "node: dgx-a100\nenv: {NCCL_ALGO: '^ring,tree'}\n",
		"node: gb200-nvl72\nnics: {count: 72, speed: 400G, kind: roce, roce: {mtu: 1024, loss_rate: 0.01, pfc: false}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := Load("fuzz.yaml", data)
		if err != nil {
			return
		}
		// Keep builds cheap: the fuzzer may ask for huge clusters.
		if spec.Nodes*max(spec.Node.GPUs, 1) > 4096 {
			return
		}
		c, err := spec.Build()
		if err != nil {
			return
		}
		if _, err := c.Resolve(); err != nil {
			return
		}
	})
}
