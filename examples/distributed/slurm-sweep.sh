#!/usr/bin/env bash
# Run a collsim sweep as a Slurm job array: task I of N models slice I/N
# of the grid (collsim sweep --shard I/N), and a dependent job merges the
# slices into exactly the output one run would print.
#
#   sbatch --array=1-8 examples/distributed/slurm-sweep.sh            # the slices
#   sbatch --dependency=afterok:<array job id> --export=ALL,MERGE=1 \
#          examples/distributed/slurm-sweep.sh                        # the merge
#
# Environment: GRID (default examples/distributed/grid.yaml), OUT (a
# directory every task can write, default ./sweep-out), PRICES (optional
# price catalog), SHARDS (default: the array's task count).
#SBATCH --job-name=collsim-sweep
#SBATCH --cpus-per-task=8
#SBATCH --time=00:30:00
#SBATCH --output=collsim-sweep-%A_%a.log
set -euo pipefail

GRID="${GRID:-examples/distributed/grid.yaml}"
OUT="${OUT:-sweep-out}"
COLLSIM="${COLLSIM:-collsim}"
mkdir -p "$OUT"

prices=()
if [[ -n "${PRICES:-}" ]]; then
  prices=(--prices "$PRICES")
fi

if [[ "${MERGE:-0}" == "1" ]]; then
  # Every slice must be there; collsim merge refuses a missing one anyway.
  shopt -s nullglob
  parts=("$OUT"/part-*.json)
  if (( ${#parts[@]} == 0 )); then
    echo "collsim-sweep: no slices in $OUT" >&2
    exit 2
  fi
  "$COLLSIM" merge "${parts[@]}" --format json > "$OUT/sweep.json"
  "$COLLSIM" merge "${parts[@]}" > "$OUT/sweep.txt"
  echo "collsim-sweep: merged ${#parts[@]} slices into $OUT/sweep.json"
  exit 0
fi

: "${SLURM_ARRAY_TASK_ID:?run with sbatch --array=1-N}"
SHARDS="${SHARDS:-${SLURM_ARRAY_TASK_COUNT:?set SHARDS}}"
I="$SLURM_ARRAY_TASK_ID"
# Write to a temporary name and rename, so a failed task leaves no slice.
"$COLLSIM" sweep "$GRID" "${prices[@]}" --shard "$I/$SHARDS" -j "${SLURM_CPUS_PER_TASK:-1}" --quiet \
  > "$OUT/.part-$I.json.tmp"
mv "$OUT/.part-$I.json.tmp" "$OUT/part-$(printf '%05d' "$I").json"
