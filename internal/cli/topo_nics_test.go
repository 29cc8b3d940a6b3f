package cli

import (
	"strings"
	"testing"
)

// TestTopoNICs: with --topo, --nics sets the NICs' count, speed and kind
// of the node read from the topology file.
func TestTopoNICs(t *testing.T) {
	code, out, stderr := collsim(t, "predict", "--topo", calRaw+"/topo_a100sxm80_hgx8_roce100x8_deepep13.txt",
		"--nics", "2x100G-roce", "--nodes", "2", "--engine", "analytic", "-b", "1G", "-e", "1G")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "4x NIC (100G roce)") || !strings.Contains(out, "NICs 2x100G-roce") {
		t.Errorf("the cluster line does not show 2x100G-roce per node:\n%s", out)
	}
	if code, _, stderr := collsim(t, "predict", "--topo", calRaw+"/topo_a100sxm80_hgx8_roce100x8_deepep13.txt", "--nics", "2x100Q"); code != ExitBadInput || !strings.Contains(stderr, "--nics") {
		t.Errorf("bad --nics: exit %d, %s", code, stderr)
	}
}
