#!/bin/sh
# backprop-curves.sh — Optimus-CC's compressed backpropagation against the uncompressed run on
# real text: the tiny Shakespeare shipped in data/, prepped with `axonn prep`, 300 steps on a
# 4x1 pipeline with micro-batches of one sequence (the setting of tests/mpi_backprop_text.sh,
# validation every 25 steps). Each item of RUNS is NAME=FLAGS (commas for spaces); prints each
# run's final validation loss against the uncompressed one and plots every curve into one PNG
# (skipped without matplotlib). The numbers are docs/compression.md's.
# Usage: scripts/backprop-curves.sh [OUT_DIR]   (AXONN, MPIEXEC, RUNS, STEPS, GRID override)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${1:-build/backprop-curves}
STEPS=${STEPS:-300}
GRID=${GRID:-"--g-inter,4"}
RUNS=${RUNS:-"cb_r16=--compress-backprop,powersgd:rank=16
cb_r16_no_lep=--compress-backprop,powersgd:rank=16,--lazy-error,0
cb_r4=--compress-backprop,powersgd:rank=4
cb_r4_no_lep=--compress-backprop,powersgd:rank=4,--lazy-error,0
cb_r4_every=--compress-backprop,powersgd:rank=4,--epilogue-only,0
cb_r4_every_no_lep=--compress-backprop,powersgd:rank=4,--epilogue-only,0,--lazy-error,0"}
mkdir -p "$OUT"
"$AXONN" prep --input data/tinyshakespeare.txt --output "$OUT/shak" >/dev/null || exit 1
COMMON="--data $OUT/shak_train.bin --val-data $OUT/shak_val.bin --layers 4 --hidden 64 \
  --heads 4 --seq 64 --batch 16 --micro-batch 1 --seed 7 --steps $STEPS --lr 3e-3 \
  --val-every 25 --val-steps 16 --threads 1 --quiet $(echo "$GRID" | tr , ' ')"
np=$(echo "$GRID" | tr , ' ' | awk '{ p = 1; for (i = 1; i < NF; i++) if ($i ~ /^--g-(inter|data)$/) p *= $(i + 1); print p }')
train() { # NAME ARGS...
  name=$1; shift
  # shellcheck disable=SC2086
  $MPIEXEC -n "$np" "$AXONN" train $COMMON --metrics "$OUT/$name.csv" "$@" </dev/null \
    >"$OUT/$name.log" 2>&1 || { echo "$name: training failed (see $OUT/$name.log)"; exit 1; }
}
val() { awk -F, 'NR > 1 && $8 != "" { v = $8 } END { print v }' "$OUT/$1.csv"; }
train none
base=$(val none)
echo "uncompressed: final validation loss $base ($STEPS steps)"
csvs="$OUT/none.csv"
for item in $RUNS; do
  name=${item%%=*}
  # shellcheck disable=SC2046
  train "$name" $(echo "${item#*=}" | tr , ' ')
  awk -v n="$name" -v v="$(val "$name")" -v b="$base" 'BEGIN {
    printf "%-22s final validation loss %s = %+.2f%% of uncompressed\n", n, v, 100 * (v - b) / b }'
  csvs="$csvs $OUT/$name.csv"
done
# shellcheck disable=SC2086
if [ -x scripts/plot ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  /usr/bin/python3 scripts/plot loss $csvs -o "$OUT/curves.png" >/dev/null && echo "curves: $OUT/curves.png"
else
  echo "skipped: curves plot (matplotlib is not installed)"
fi
