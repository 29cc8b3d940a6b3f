package cli

import (
	"strings"
	"testing"
)

// Azure's NCCL topology and graph files (ingest/testdata/azure, from
// github.com/Azure/azhpc-images topology/) as an operator would give them.
const azure = "../../ingest/testdata/azure"

func TestTopoFromAzureFiles(t *testing.T) {
	tests := []struct {
		file, gpu string
		want      []string
	}{
		// ND H100 v5: 8 GPUs, 8 NDR NICs inferred from Gen5 links, NVSwitch from the GPU model.
		{"ndv5-topo.xml", "H100-SXM", []string{"8x H100-SXM, 8x NIC (NDR ib)", "# Note: assumed NVSwitch", "# Note: assumed NIC speed NDR"}},
		// ND A100 v4: HDR from Gen4 links.
		{"ndv4-topo.xml", "A100-SXM4", []string{"8x A100-SXM4, 8x NIC (HDR ib)", "# Note: assumed NIC speed HDR"}},
		// NC A100 v4: the file's own 100 Gb/s eth0 is used, and said to be TCP.
		{"ncv4-topo.xml", "", []string{"4x A100-PCIE, 1x NIC (100G tcp)"}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			args := []string{"topo", "--from", azure + "/" + tc.file}
			if tc.gpu != "" {
				args = append(args, "--gpu", tc.gpu)
			}
			code, out, errs := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// --nics states the NICs: nothing about them is assumed.
	code, out, errs := runCLI(t, "topo", "--from", azure+"/ndv5-topo.xml", "--gpu", "H100-SXM", "--nics", "8x400G-roce")
	if code != 0 || !strings.Contains(out, "8x NIC (400G roce)") || strings.Contains(out, "assumed NIC") {
		t.Fatalf("exit %d %s:\n%s", code, errs, out)
	}
	// Without --gpu the bare-<pci> file is refused in one line.
	code, _, errs = runCLI(t, "topo", "--from", azure+"/ndv4-topo.xml")
	if code != 2 || !strings.Contains(errs, "does not name the GPU model: add --gpu MODEL") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("exit %d: %q", code, errs)
	}
	// A graph file is not a topology.
	code, _, errs = runCLI(t, "topo", "--from", azure+"/ncv4-graph.xml")
	if code != 2 || !strings.Contains(errs, "is an NCCL graph file") {
		t.Fatalf("exit %d: %q", code, errs)
	}
}

func TestInspectGraphFile(t *testing.T) {
	code, out, errs := runCLI(t, "inspect", azure+"/ncv4-graph.xml")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// The file's ring graph: 2 channels, the second 0 3 2 1.
	for _, w := range []string{"NCCL graph file", "graph 0:  ring, 2 channel(s), 12 GB/s intra (SYS), 12 GB/s inter (PIX)", "channel 1: GPU0 -> GPU3 -> GPU2 -> GPU1", "graph 1:  balanced tree, 4 channel(s)"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
