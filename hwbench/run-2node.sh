#!/usr/bin/env bash
# run-2node.sh: run collsim hwbench's multi-node probes (the nccl sweeps
# across two nodes through the TCP bootstrap, one process per GPU, and the
# RDMA WRITE probe between the nodes) under
# Slurm (srun) or Open MPI (mpirun), with a prebuilt binary on a path every
# node sees. See docs/hwbench.md, "Several processes and nodes".
#
# Usage: hwbench/run-2node.sh [COLLSIM_BINARY]     (default ./collsim)
#   LAUNCHER=srun|mpirun  (default: srun inside a Slurm allocation, else mpirun)
#   HOSTS=node1,node2     the two nodes for mpirun (inside Slurm: the allocation's first two)
#   GPUS_PER_NODE=8       processes (GPUs) per node
#   PORT=29517            rank 0's bootstrap port on the first node
#   OUT=DIR               output directory (default ./hwbench-2node-<date>)
#   HWBENCH_ARGS          extra flags (e.g. "-e 8G --validate-against cluster.yaml")
#   TIMEOUT=900           seconds before the run is stopped
#
# Each process picks its GPU as hwbench does: the only GPU it sees (srun
# --gpus-per-task=1, --gpu-bind), else SLURM_LOCALID / OMPI_COMM_WORLD_LOCAL_RANK.
# Exit status: hwbench's (0 ok, 1 a probe or the comparison failed, 2 bad
# input); 124 when the time limit stopped it.
set -u

BIN=${1:-./collsim}
G=${GPUS_PER_NODE:-8}
PORT=${PORT:-29517}
OUTDIR=${OUT:-./hwbench-2node-$(date +%Y%m%d-%H%M%S)}
LIMIT=${TIMEOUT:-900}
mkdir -p "$OUTDIR" || { echo "run-2node.sh: cannot create $OUTDIR" >&2; exit 2; }
[ -x "$BIN" ] || { echo "run-2node.sh: $BIN is not an executable collsim binary" >&2; exit 2; }

launcher=${LAUNCHER:-}
if [ -z "$launcher" ]; then
	if [ -n "${SLURM_JOB_ID:-}" ]; then launcher=srun; else launcher=mpirun; fi
fi
if [ -n "${HOSTS:-}" ]; then
	IFS=, read -r h1 h2 _ <<<"$HOSTS"
elif [ -n "${SLURM_JOB_NODELIST:-}" ] && command -v scontrol >/dev/null 2>&1; then
	mapfile -t hs < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
	h1=${hs[0]:-}
	h2=${hs[1]:-}
else
	h1= h2=
fi
if [ -z "${h1:-}" ] || [ -z "${h2:-}" ]; then
	echo "run-2node.sh: need two nodes: set HOSTS=node1,node2 or run inside a 2-node Slurm allocation" >&2
	exit 2
fi

# CUDA numbers GPUs like NVML and nvidia-smi (PCI bus order).
export CUDA_DEVICE_ORDER=PCI_BUS_ID
out=$OUTDIR/hwbench-2node.json
# shellcheck disable=SC2206 # word splitting of HWBENCH_ARGS is intended
args=(hwbench --probes topo,nccl,gdr,rdma --coordinator "$h1:$PORT" --out "$out" ${HWBENCH_ARGS:-})

# Rank, rank count and local rank come from the launcher's variables
# (SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID, OMPI_COMM_WORLD_*).
case $launcher in
srun)
	cmd=(srun -N 2 -w "$h1,$h2" --ntasks-per-node "$G" --kill-on-bad-exit=1 "$BIN" "${args[@]}")
	;;
mpirun)
	# -x passes the library path and any NCCL setting to every rank.
	xs=(-x CUDA_DEVICE_ORDER -x LD_LIBRARY_PATH)
	for v in $(env | sed -n 's/^\(NCCL_[A-Z0-9_]*\)=.*/\1/p'); do xs+=(-x "$v"); done
	cmd=(mpirun -np $((2 * G)) -H "$h1:$G,$h2:$G" --map-by "ppr:$G:node" "${xs[@]}" "$BIN" "${args[@]}")
	;;
*)
	echo "run-2node.sh: LAUNCHER=$launcher: want srun or mpirun" >&2
	exit 2
	;;
esac

echo "run-2node.sh: ${cmd[*]}" | tee "$OUTDIR/run-2node.log" >&2
if command -v timeout >/dev/null 2>&1; then
	timeout --kill-after=20 "$LIMIT" "${cmd[@]}" >"$OUTDIR/hwbench.out" 2> >(tee "$OUTDIR/hwbench.err" >&2)
else
	"${cmd[@]}" >"$OUTDIR/hwbench.out" 2> >(tee "$OUTDIR/hwbench.err" >&2)
fi
rc=$?
echo "run-2node.sh: exit $rc; results in $OUTDIR" | tee -a "$OUTDIR/run-2node.log" >&2
ls -l "$OUTDIR" >>"$OUTDIR/run-2node.log"
exit "$rc"
