#!/bin/sh
# compress-curves.sh — lossy gradient compression against the uncompressed run on real text:
# the tiny Shakespeare shipped in data/, prepped with `axonn prep`, 300 steps on a 1x2 grid
# (two data-parallel ranks), every weight matrix compressed (layer-wise parts of at least 4 KB:
# --compress-min-bytes 4K; the 1-D tensors stay plain), uncompressed and
# with each codec of CODECS; prints each run's final validation loss against the uncompressed
# one with the issue's bar (within 3%: "met" or "MISSED") and plots every curve into one PNG
# (scripts/plot-loss's rules: skipped without matplotlib). The numbers are docs/compression.md's.
# Usage: scripts/compress-curves.sh [OUT_DIR]    (AXONN, MPIEXEC, CODECS, STEPS override;
# MIN_BYTES, default 4K, is --compress-min-bytes: 0 compresses the 1-D tensors too)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${1:-build/compress-curves}
STEPS=${STEPS:-300}
MIN_BYTES=${MIN_BYTES:-4K}
# each item SPEC[@WARMUP[+freeze]]: --compress-warmup WARMUP, +freeze: --compress-freeze-variance 1
CODECS=${CODECS:-"onebit:ef=1 powersgd:rank=4 dgc:ratio=0.01 onebit:ef=1@50+freeze powersgd:rank=4,ef=1 dgc:ratio=0.01@100+freeze"}
mkdir -p "$OUT"
. "$(dirname "$0")/curves-lib.sh"
NP=2
"$AXONN" prep --input data/tinyshakespeare.txt --output "$OUT/shak" >/dev/null || exit 1
COMMON="--data $OUT/shak_train.bin --val-data $OUT/shak_val.bin --layers 2 --hidden 64 \
  --heads 4 --seq 64 --batch 16 --seed 7 --steps $STEPS --lr 3e-3 --val-every 25 \
  --val-steps 16 --threads 1 --quiet --g-data 2 --compress-min-bytes $MIN_BYTES"
curves_train none
base=$(curves_val none)
echo "uncompressed: final validation loss $base ($STEPS steps, 1x2)"
csvs="$OUT/none.csv"
for item in $CODECS; do
  spec=${item%@*}; warm=0; freeze=0; what=${item#"$spec"}
  case $what in *+freeze) freeze=1; what=${what%+freeze} ;; esac
  [ -n "$what" ] && warm=${what#@}
  name=$(echo "$item" | tr ':=.,@+' '______')
  curves_train "$name" --compress "$spec" --compress-warmup "$warm" --compress-freeze-variance "$freeze"
  v=$(curves_val "$name")
  awk -v s="$spec" -v w="$warm" -v f="$freeze" -v v="$v" -v b="$base" 'BEGIN {
    printf "%-18s warm-up %3d%s: final validation loss %s = %+.1f%% of uncompressed: %s\n",
      s, w, f ? ", variance frozen" : "", v, 100 * (v - b) / b,
      v <= 1.03 * b ? "met" : "MISSED (bar: within 3%)" }'
  csvs="$csvs $OUT/$name.csv"
done
# shellcheck disable=SC2086
curves_plot "$OUT/curves.png" $csvs
