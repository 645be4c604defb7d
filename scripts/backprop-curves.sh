#!/bin/sh
# backprop-curves.sh — Optimus-CC's compressed backpropagation against the uncompressed run on
# real text: the tiny Shakespeare shipped in data/, prepped with `axonn prep`, 300 steps on a
# 4x1 pipeline with micro-batches of one sequence (the setting of tests/mpi_backprop_text.sh,
# validation every 25 steps). Each item of RUNS is NAME=FLAGS (commas for spaces); prints each
# run's final validation loss against the uncompressed one and plots every curve into one PNG
# (skipped without matplotlib). The numbers are docs/compression.md's; MODEL (commas for
# spaces) gives the model and batch of docs/benchmarks.md's Optimus-CC runs instead.
# Usage: scripts/backprop-curves.sh [OUT_DIR]   (AXONN, MPIEXEC, RUNS, STEPS, GRID, MODEL, SEED
# override)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${1:-build/backprop-curves}
STEPS=${STEPS:-300}
GRID=${GRID:-"--g-inter,4"}
MODEL=${MODEL:-"--layers,4,--hidden,64,--heads,4,--seq,64,--batch,16,--micro-batch,1"}
RUNS=${RUNS:-"cb_r16=--compress-backprop,powersgd:rank=16
cb_r16_no_lep=--compress-backprop,powersgd:rank=16,--lazy-error,0
cb_r4=--compress-backprop,powersgd:rank=4
cb_r4_no_lep=--compress-backprop,powersgd:rank=4,--lazy-error,0
cb_r4_every=--compress-backprop,powersgd:rank=4,--epilogue-only,0
cb_r4_every_no_lep=--compress-backprop,powersgd:rank=4,--epilogue-only,0,--lazy-error,0"}
mkdir -p "$OUT"
. "$(dirname "$0")/curves-lib.sh"
curves_prep
COMMON="--data $OUT/shak_train.bin --val-data $OUT/shak_val.bin $(echo "$MODEL" | tr , ' ') \
  --seed ${SEED:-7} --steps $STEPS --lr 3e-3 --val-every 25 --val-steps 16 --threads 1 --quiet \
  $(echo "$GRID" | tr , ' ')"
NP=$(echo "$GRID" | tr , ' ' | awk '{ p = 1; for (i = 1; i < NF; i++) if ($i ~ /^--g-(inter|data)$/) p *= $(i + 1); print p }')
curves_train none
base=$(curves_val none)
echo "uncompressed: final validation loss $base ($STEPS steps)"
csvs="$OUT/none.csv"
for item in $RUNS; do
  name=${item%%=*}
  # shellcheck disable=SC2046
  curves_train "$name" $(echo "${item#*=}" | tr , ' ')
  awk -v n="$name" -v v="$(curves_val "$name")" -v b="$base" 'BEGIN {
    printf "%-22s final validation loss %s = %+.2f%% of uncompressed\n", n, v, 100 * (v - b) / b }'
  csvs="$csvs $OUT/$name.csv"
done
# shellcheck disable=SC2086
curves_plot "$OUT/curves.png" $csvs
