#!/bin/sh
# curves-lib.sh — what the loss-curve scripts share (sourced, not run): training one run into
# $OUT and reading and plotting its metrics. The caller sets AXONN, MPIEXEC, OUT, NP (ranks)
# and COMMON (the options every run shares).
#   curves_train NAME ARGS...   trains into $OUT/NAME.csv and .log; exits on failure
#   curves_val NAME             the run's final validation loss
#   curves_plot PNG CSV...      every curve in one PNG (skipped without matplotlib)
#   curves_prep                 $OUT made, the tiny Shakespeare of data/ prepped into it
#                               ($OUT/shak_{train,val}.bin)
#   curves_1x2 SHAPE            COMMON for a LAYERSxHIDDEN model (heads: max(4, hidden / 32)) on
#                               that text, two data-parallel ranks on two virtual nodes over the
#                               EMULATED $LINK, $STEPS steps from seed $SEED (NP=2; LINK and
#                               SEED default to 1Gbps,50us and 7)
curves_train() {
  name=$1; shift
  # shellcheck disable=SC2086
  $MPIEXEC -n "$NP" "$AXONN" train $COMMON --metrics "$OUT/$name.csv" "$@" </dev/null \
    >"$OUT/$name.log" 2>&1 || { echo "$name: training failed (see $OUT/$name.log)"; exit 1; }
}
curves_val() { awk -F, 'NR > 1 && $8 != "" { v = $8 } END { print v }' "$OUT/$1.csv"; }
curves_plot() {
  png=$1; shift
  if [ -x scripts/plot ] && /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
    /usr/bin/python3 scripts/plot loss "$@" -o "$png" >/dev/null && echo "curves: $png"
  else
    echo "skipped: curves plot (matplotlib is not installed)"
  fi
}
curves_prep() {
  mkdir -p "$OUT"
  "$AXONN" prep --input data/tinyshakespeare.txt --output "$OUT/shak" >/dev/null || exit 1
}
curves_1x2() {
  layers=${1%x*}; hidden=${1#*x}; heads=$((hidden / 32 < 4 ? 4 : hidden / 32))
  NP=2 LINK=${LINK:-1Gbps,50us} SEED=${SEED:-7}
  COMMON="--data $OUT/shak_train.bin --val-data $OUT/shak_val.bin --layers $layers \
    --hidden $hidden --heads $heads --seq 64 --batch 16 --seed $SEED --steps $STEPS --lr 3e-3 \
    --val-every 50 --val-steps 16 --threads 1 --g-data 2 --ranks-per-node 1 --emulate-link $LINK"
}
