#!/bin/sh
# compress-curves.sh — the papers' recipes against the uncompressed run on real text: the tiny
# Shakespeare shipped in data/, prepped with `axonn prep`, on a 1x2 grid (two data-parallel
# ranks) over an EMULATED link between two virtual nodes (--ranks-per-node 1, --emulate-link
# LINK), for each model shape of SHAPES (LAYERSxHIDDEN; heads = max(4, hidden / 32)):
# uncompressed, and `--compress CODEC` for each codec of CODECS with no other compression flag
# but EXTRA (the recipe's defaults: docs/compression.md, "Recipes"). Prints each run's final
# validation loss against the uncompressed one with the issue's bar (within 3%: "met" or
# "MISSED"), its data-parallel bytes per step (the summary's) against the uncompressed run's
# with the bar at half, and how many parts the cost model compressed; plots each shape's
# curves into OUT/curves-LxH.png (scripts/plot-loss's rules: skipped without matplotlib). The
# numbers are docs/benchmarks.md's ("Gradient compression"), all EMULATED.
# Usage: scripts/compress-curves.sh [OUT_DIR]    (AXONN, MPIEXEC, SHAPES, CODECS, STEPS, LINK,
# SEED and EXTRA override; defaults: 2x64 4x128 6x192, onebit powersgd dgc, 600, 1Gbps,50us, 7,
# none; e.g. EXTRA="--compress-min-bytes 4K" compresses every matrix whatever the cost model
# prices)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${1:-build/compress-curves}
SHAPES=${SHAPES:-"2x64 4x128 6x192"}
CODECS=${CODECS:-"onebit powersgd dgc"}
STEPS=${STEPS:-600}
EXTRA=${EXTRA:-}
. "$(dirname "$0")/curves-lib.sh"
curves_prep

# dp_bytes NAME: the run's data-parallel bytes per step over both ranks (its summary)
dp_bytes() {
  /usr/bin/python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["communication"]["per_step"]["sum"]["data_parallel"]["bytes"])' \
    "$OUT/$1.json"
}

for shape in $SHAPES; do
  curves_1x2 "$shape"
  curves_train "none-$shape" --summary "$OUT/none-$shape.json"
  base=$(curves_val "none-$shape"); bbase=$(dp_bytes "none-$shape")
  echo "$shape uncompressed: final validation loss $base, data-parallel bytes per step $bbase ($STEPS steps, 1x2, EMULATED $LINK)"
  csvs="$OUT/none-$shape.csv"
  for spec in $CODECS; do
    name=$(echo "$spec" | tr ':=.,' '____')-$shape
    # shellcheck disable=SC2086
    curves_train "$name" --compress "$spec" $EXTRA --summary "$OUT/$name.json"
    v=$(curves_val "$name"); b=$(dp_bytes "$name")
    parts=$(sed -n 's/^compression: .*; \([0-9]* of [0-9]* part(s)\).*/\1/p' "$OUT/$name.log")
    awk -v s="$spec $EXTRA" -v v="$v" -v a="$base" -v b="$b" -v bb="$bbase" -v p="$parts" 'BEGIN {
      printf "%s %-24s val %s = %+.1f%% of uncompressed: %s; bytes %.4f of uncompressed: %s; %s compressed\n",
        "'"$shape"'", s, v, 100 * (v - a) / a, v <= 1.03 * a ? "met" : "MISSED (bar: within 3%)",
        b / bb, b <= 0.5 * bb ? "met" : "MISSED (bar: at most half)", p }'
    csvs="$csvs $OUT/$name.csv"
  done
  # shellcheck disable=SC2086
  curves_plot "$OUT/curves-$shape.png" $csvs
done
