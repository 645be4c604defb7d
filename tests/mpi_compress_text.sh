#!/bin/sh
# Lossy compression on real text: the tiny Shakespeare shipped in data/, prepped with
# `axonn prep`, 300 steps on 1x2 with onebit + error feedback, PowerSGD rank 4 and DGC 1%
# (every chunk compressed): each must learn (final validation loss under 3.5, from ln 256 =
# 5.55 at the start; a codec that scrambles gradients stays near 5.5) and its gap to the
# uncompressed run is printed. Issue 16's bar, within 3% of the uncompressed loss, is NOT met
# by these flat-vector codecs at 300 steps: scripts/compress-curves.sh measures it and
# docs/compression.md records the figures and why; this test does not claim it.
. "$(dirname "$0")/mpilib.sh"

"$AXONN" prep --input data/tinyshakespeare.txt --output "$TMP/shak" >"$TMP/prep.log" 2>&1 ||
  { fail "prep failed"; cat "$TMP/prep.log"; finish; }
COMMON="--data $TMP/shak_train.bin --val-data $TMP/shak_val.bin --layers 2 --hidden 64 \
  --heads 4 --seq 64 --batch 16 --seed 7 --steps 300 --lr 3e-3 --val-every 0 --val-steps 16 \
  --threads 1 --quiet --g-data 2 --compress-min-bytes 0"

val_loss() { awk -F, 'NR > 1 && $8 != "" { v = $8 } END { print v }' "$TMP/$1.csv"; }

run plain 2 || finish
base=$(val_loss plain)
for spec in onebit:ef=1 powersgd:rank=4 dgc:ratio=0.01; do
  name=$(echo "$spec" | tr ':=.' '___')
  run "$name" 2 --compress "$spec" || continue
  v=$(val_loss "$name")
  awk -v s="$spec" -v a="$v" -v b="$base" 'BEGIN {
    printf "  %s: val loss %s, uncompressed %s (%+.1f%%)\n", s, a, b, 100 * (a - b) / b }'
  awk -v a="$v" 'BEGIN { exit !(a != "" && a < 3.5) }' ||
    fail "$spec: val loss $v after 300 steps: it did not learn"
done
finish
