package hwbench_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/collsim/collsim/hwbench"
)

// TestRun2NodeScript runs hwbench/run-2node.sh under a stand-in mpirun
// that starts the ranks on this machine with Open MPI's variables, against
// the simulated machine (HWBENCH_ARGS=--fake), meeting on 127.0.0.1: the
// script must build a working launch line and collect rank 0's report. It
// builds the collsim binary, so it is not a -short test.
func TestRun2NodeScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the collsim binary")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "collsim")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/collsim").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// mpirun -np N -H ... --map-by ... -x VAR ... BIN ARGS...: N local ranks.
	fake := `#!/usr/bin/env bash
np=0
while [ $# -gt 0 ]; do
	case $1 in
	-np) np=$2; shift 2 ;;
	-H|--map-by|-x) shift 2 ;;
	*) break ;;
	esac
done
pids=()
for ((r = 0; r < np; r++)); do
	OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$np OMPI_COMM_WORLD_LOCAL_RANK=$r "$@" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
`
	if err := os.WriteFile(filepath.Join(dir, "mpirun"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	out := filepath.Join(dir, "out")
	cmd := exec.Command("bash", "run-2node.sh", bin)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "LAUNCHER=mpirun", "HOSTS=127.0.0.1,127.0.0.1",
		"GPUS_PER_NODE=2", "PORT="+strconv.Itoa(port), "OUT="+out,
		// Separate fake processes share no data: time only (-c 0).
		"HWBENCH_ARGS=--fake -q -e 64K -n 2 -w 1 -c 0 --probes nccl", "SLURM_JOB_ID=")
	msg, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run-2node.sh: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(filepath.Join(out, "hwbench-2node.json"))
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	rep, err := hwbench.DecodeReport(data)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NCCL == nil || rep.NCCL.Ranks != 4 || rep.NCCL.Mode != "multi-process" || !strings.Contains(string(msg), "mpirun -np 4") {
		t.Errorf("nccl %+v\n%s", rep.NCCL, msg)
	}
}
