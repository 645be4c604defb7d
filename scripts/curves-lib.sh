#!/bin/sh
# curves-lib.sh — what the loss-curve scripts share (sourced, not run): training one run into
# $OUT and reading and plotting its metrics. The caller sets AXONN, MPIEXEC, OUT, NP (ranks)
# and COMMON (the options every run shares).
#   curves_train NAME ARGS...   trains into $OUT/NAME.csv and .log; exits on failure
#   curves_val NAME             the run's final validation loss
#   curves_plot PNG CSV...      every curve in one PNG (skipped without matplotlib)
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
