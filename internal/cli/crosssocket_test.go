package cli

import (
	"strings"
	"testing"
)

// TestPredictCrossSocketP2P: the command line of the report that found the
// panic (a PCIe server with NCCL_P2P_LEVEL=SYS), over the collectives and
// both engines, runs to a table.
func TestPredictCrossSocketP2P(t *testing.T) {
	for _, coll := range []string{"allreduce", "allgather", "broadcast", "alltoall", "sendrecv"} {
		for _, eng := range []string{"des", "analytic"} {
			code, out, errs := runCLI(t, "predict", "--node", "pcie-gpu-server", "--set", "NCCL_P2P_LEVEL=SYS",
				"-c", coll, "--engine", eng, "-b", "1K", "-e", "16M", "-f", "16")
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", coll, eng, code, errs)
			}
			if !strings.Contains(out, "NCCL_P2P_LEVEL=SYS") || !strings.Contains(out, "4194304") || !strings.Contains(out, "cross-socket P2P") {
				t.Errorf("%s %s: output lacks the environment, the last size or the cross-socket bottleneck:\n%s", coll, eng, out)
			}
		}
	}
}
