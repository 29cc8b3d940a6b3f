#!/usr/bin/env bash
# run-all.sh: run every collsim hwbench probe on this GPU machine and collect
# the results, the nccl-tests text, nvidia-smi's view and the logs in one
# directory. See docs/hwbench.md.
#
# Usage: hwbench/run-all.sh [COLLSIM_BINARY]      (default ./collsim)
#   OUT=DIR      output directory (default ./hwbench-<host>-<date>)
#   FAKE=1       measure collsim's simulated machine instead (dry run, no GPU needed)
#   HWBENCH_ARGS extra flags for every hwbench run (e.g. "--maxbytes 8G")
#
# Every step runs under a time limit and its failure is logged, not fatal;
# the limits add up to about 10 minutes. Exit status: 0 when every step
# succeeded, 1 otherwise (the results of the steps that worked are kept).
set -u

BIN=${1:-./collsim}
OUTDIR=${OUT:-./hwbench-$(hostname -s 2>/dev/null || echo host)-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUTDIR" || { echo "run-all.sh: cannot create $OUTDIR" >&2; exit 2; }
LOG=$OUTDIR/run-all.log
: >"$LOG"
failures=0

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$LOG" >&2; }

# step NAME SECONDS CMD...: run CMD with a time limit, stdout and stderr to
# NAME.out and NAME.err in the output directory; log the outcome.
step() {
	local name=$1 limit=$2
	shift 2
	log "$name: $*"
	local t0=$SECONDS rc
	if command -v timeout >/dev/null 2>&1; then
		timeout --kill-after=10 "$limit" "$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err"
	else
		"$@" >"$OUTDIR/$name.out" 2>"$OUTDIR/$name.err"
	fi
	rc=$?
	case $rc in
	0) log "$name: ok ($((SECONDS - t0)) s)" ;;
	124 | 137) log "$name: TIMED OUT after $limit s"; failures=$((failures + 1)) ;;
	*) log "$name: FAILED with exit $rc ($((SECONDS - t0)) s): $(tail -n 1 "$OUTDIR/$name.err" 2>/dev/null)"; failures=$((failures + 1)) ;;
	esac
	return 0
}

# pylib MODULE: print the lib directory of a pip-installed NVIDIA package
# (nvidia.nccl -> .../site-packages/nvidia/nccl/lib); nothing if absent.
pylib() {
	command -v python3 >/dev/null 2>&1 || return 0
	python3 - "$1" 2>/dev/null <<'PY'
import importlib, os, sys
m = importlib.import_module(sys.argv[1])
f = getattr(m, "__file__", None)
d = os.path.dirname(f) if f else list(m.__path__)[0]
if os.path.isdir(os.path.join(d, "lib")):
    print(os.path.join(d, "lib"))
PY
}

# have LIB: is LIB (a soname) on the loader path?
have() {
	local d
	if command -v ldconfig >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q "[[:space:]]$1 "; then
		return 0
	fi
	local IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		[ -n "$d" ] && [ -e "$d/$1" ] && return 0
	done
	return 1
}

addlib() {
	[ -n "$1" ] || return 0
	case ":${LD_LIBRARY_PATH:-}:" in *":$1:"*) return 0 ;; esac
	export LD_LIBRARY_PATH="$1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	log "LD_LIBRARY_PATH += $1"
}

log "collsim hwbench run-all: binary $BIN, output $OUTDIR"
if [ "${FAKE:-0}" != 1 ]; then
	if ! have libnccl.so.2; then
		addlib "$(pylib nvidia.nccl)"
		have libnccl.so.2 || log "libnccl.so.2 not found (pip install nvidia-nccl-cu12 provides it); the nccl probe will be skipped"
	fi
	if ! have libcudart.so.13 && ! have libcudart.so.12 && ! have libcudart.so.11; then
		for m in nvidia.cuda_runtime nvidia.cu13 nvidia.cu12; do
			addlib "$(pylib "$m")"
		done
		have libcudart.so.13 || have libcudart.so.12 || have libcudart.so.11 || log "libcudart not found (pip install nvidia-cuda-runtime-cu12 provides it)"
	fi
fi
# CUDA numbers GPUs like NVML and nvidia-smi (PCI bus order).
export CUDA_DEVICE_ORDER=PCI_BUS_ID

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "host: $(hostname 2>/dev/null)"
	echo "kernel: $(uname -r)"
	echo "binary: $BIN"
	echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
	echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}"
	echo "nvidia_peermem loaded: $([ -d /sys/module/nvidia_peermem ] && echo yes || echo no)"
} >"$OUTDIR/environment.txt"

if command -v nvidia-smi >/dev/null 2>&1; then
	step nvidia-smi 30 nvidia-smi
	step nvidia-smi-topo 30 nvidia-smi topo -m
	step nvidia-smi-q 60 nvidia-smi -q
else
	log "nvidia-smi not found; skipping its outputs"
fi
if command -v ibstat >/dev/null 2>&1; then
	step ibstat 20 ibstat
fi

if [ ! -x "$BIN" ]; then
	log "$BIN is not an executable collsim binary; no probe can run"
	failures=$((failures + 1))
else
	step version 10 "$BIN" --version
	extra=()
	[ "${FAKE:-0}" = 1 ] && extra+=(--fake)
	# shellcheck disable=SC2206 # word splitting of HWBENCH_ARGS is intended
	[ -n "${HWBENCH_ARGS:-}" ] && extra+=(${HWBENCH_ARGS})
	# One process per probe: a probe that crashes or hangs costs only itself.
	# Limits (s) are generous for one H200 and stay within ~10 minutes in all.
	for p in topo:45 copy:60 p2p:90 nvbw:90 nccl:240 gdr:60; do
		name=${p%%:*}
		step "hwbench-$name" "${p##*:}" "$BIN" hwbench --probes "$name" --out "$OUTDIR/hwbench-$name.json" ${extra[@]+"${extra[@]}"}
	done
fi

log "done: $failures failed step(s); results in $OUTDIR:"
ls -l "$OUTDIR" | tee -a "$LOG" >&2
[ "$failures" -eq 0 ]
