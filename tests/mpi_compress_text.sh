#!/bin/sh
# Lossy compression on real text: the tiny Shakespeare shipped in data/, prepped with
# `axonn prep`, 300 steps on 1x2, every weight matrix compressed (layer-wise parts of at least
# 4 KB; LayerNorm weights and biases stay plain):
#  - the recipes, the defaults of --compress with no other flag (docs/compression.md,
#    "Recipes"): onebit (1-bit Adam: error feedback on the momentum, 45 plain steps, then
#    Adam's variance frozen) and powersgd (error feedback, rank=auto, 39 plain steps) end
#    within 3% of the uncompressed validation loss (issue 16's bar), and so does DGC's
#    (--compress dgc: its momentum correction in place of Adam's first moment, 75 plain steps,
#    the variance frozen, and the ratio that sends each coordinate about 4 times in the 225
#    steps after them, 0.0178, where the paper's 0.1% would send it once in 1000);
#  - without their recipes, PowerSGD rank 4 without error feedback and DGC 1% without a warm-up
#    learn (final validation loss under 4.0, from ln 256 = 5.55 at the start; a codec that
#    scrambles gradients stays near 5.5); their gaps are printed, not claimed;
#  - on 2x2 over an emulated 1 Gb/s, 50 us link (one rank per node; the latency makes fusion
#    pay, so the groups do not turn on the profiled encode latency's noise), --compress auto (Cupcake's
#    groups, Espresso's decisions, onebit with its recipe's error feedback on the momentum, and
#    50 plain steps then the variance frozen, given) together with
#    --sparse-embedding-sync zen ends within 3% of the uncompressed run's validation loss
#    (issue 20's bar), with at least one group compressed. The uncompressed loss is the 1x2
#    run's above: it does not depend on the layout or the link (the same sums in another order:
#    mpi_grid.sh holds every layout to 1x1's losses within 1e-5; an uncompressed 2x2 run over
#    this link ended 2.7e-7 apart from 1x2), so no second uncompressed run on 2x2.
. "$(dirname "$0")/mpilib.sh"

"$AXONN" prep --input data/tinyshakespeare.txt --output "$TMP/shak" >"$TMP/prep.log" 2>&1 ||
  { fail "prep failed"; cat "$TMP/prep.log"; finish; }
COMMON="--data $TMP/shak_train.bin --val-data $TMP/shak_val.bin --layers 2 --hidden 64 \
  --heads 4 --seq 64 --batch 16 --seed 7 --steps 300 --lr 3e-3 --val-every 0 --val-steps 16 \
  --threads 1 --quiet --g-data 2 --compress-min-bytes 4K"

val_loss() { awk -F, 'NR > 1 && $8 != "" { v = $8 } END { print v }' "$TMP/$1.csv"; }

run plain 2 || finish
base=$(val_loss plain)

# SPEC BAR [FLAGS...]: BAR 3% (within 3% of the uncompressed loss) or learns (below 4.0)
check() {
  spec=$1; bar=$2; shift 2
  name=$(echo "$spec" | tr ':=.' '___')
  run "$name" 2 --compress "$spec" "$@" || return
  v=$(val_loss "$name")
  awk -v s="$spec $*" -v a="$v" -v b="$base" 'BEGIN {
    printf "  %s: val loss %s, uncompressed %s (%+.1f%%)\n", s, a, b, 100 * (a - b) / b }'
  if [ "$bar" = 3% ]; then
    awk -v a="$v" -v b="$base" 'BEGIN { exit !(a != "" && a <= 1.03 * b) }' ||
      fail "$spec $*: val loss $v is more than 3% above the uncompressed $base"
  else
    awk -v a="$v" 'BEGIN { exit !(a != "" && a < 4.0) }' ||
      fail "$spec: val loss $v after 300 steps: it did not learn"
  fi
}
check onebit 3%
check powersgd 3%
check dgc 3%
check powersgd:rank=4,ef=0 learns --compress-warmup 0
check dgc:ratio=0.01 learns --compress-warmup 0 --compress-freeze-variance 0

G22="--g-inter 2 --ranks-per-node 1 --emulate-link 1Gbps,50us"
COMMON=$(echo "$COMMON" | sed 's/--quiet//') # the header holds Espresso's decisions
# shellcheck disable=SC2086
if run auto22 4 $G22 --compress auto --compress-codec onebit:ef=1 --sparse-embedding-sync zen \
     --compress-warmup 50 --compress-freeze-variance 1; then
  n=$(sed -n 's/^  strategy (Espresso): \([0-9]*\) group(s) compressed.*/\1/p' "$TMP/auto22.log")
  a=$(val_loss auto22); b=$base
  echo "  2x2 --compress auto --sparse-embedding-sync zen: $n group(s) of stage 0 compressed," \
    "val loss $a, uncompressed $b"
  [ "${n:-0}" -gt 0 ] || fail "auto22: Espresso compressed nothing over 1 Gb/s"
  awk -v a="$a" -v b="$b" 'BEGIN { exit !(a != "" && a <= 1.03 * b) }' ||
    fail "--compress auto with Zen: val loss $a is more than 3% above the uncompressed $b"
fi
finish
