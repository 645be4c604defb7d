#!/bin/sh
# Lossy compression on real text: the tiny Shakespeare shipped in data/, prepped with
# `axonn prep`, trained 300 steps on 1x2 uncompressed and with onebit + error feedback,
# PowerSGD rank 4 and DGC 1% (every chunk compressed); each final validation loss must be
# within 3% of the uncompressed one (issue 16's bar; the curves are in docs/compression.md).
. "$(dirname "$0")/mpilib.sh"

TEXT=${TEXT:-data/tinyshakespeare.txt}
"$AXONN" prep --input "$TEXT" --output "$TMP/shak" >"$TMP/prep.log" 2>&1 ||
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
  echo "  $spec: val loss $v vs uncompressed $base"
  awk -v a="$v" -v b="$base" 'BEGIN { exit !(a != "" && b != "" && a <= 1.03 * b) }' ||
    fail "$spec: val loss $v is more than 3% above the uncompressed $base"
done
finish
