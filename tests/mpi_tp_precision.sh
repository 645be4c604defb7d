#!/bin/sh
# Tensor parallelism in bf16 and fp16 (--precision; on --device cpu the CPU backend's 16-bit
# storage over fp32 arithmetic, src/backend/cpu_storage16.h) against the single-rank run of the
# same precision, 6 steps of a tiny model:
#  - the grids 1x1x2, 2x1x1, 1x2x1 (2 ranks) and 2x1x1 with --g-data 2 (4 ranks): per-step
#    losses within the single-rank bf16/fp16 tolerance of tests/cuda/check_cuda.c (2e-2
#    relative for bf16, 5e-3 for fp16), final weights within 5e-2 (bf16) and 2e-2 (fp16) of each
#    tensor's largest value (axonn compare); every saved run first checks its tensor-parallel
#    replicas alike bit for bit;
#  - the single-rank bf16 and fp16 runs are not the fp32 run (losses more than 1e-6 relative
#    apart at some step), so the precision applied;
#  - fp16 with its dynamic loss scaling: a gradient overflow forced at step 2
#    (--debug-overflow-step) is skipped on every rank of 1x1x2 as on 1x1 (the log says so, and
#    the losses stay within fp16's tolerance of the single-rank run's with the same skip, which
#    differ from the run without it from step 3 on).
# Each comparison prints its largest relative loss difference (docs/tensor-parallel.md quotes
# them). The device path (the posing device) in bf16/fp16 is tests/mpitest_tp_device.c's.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --steps 6 \
  --shuffle 0 --seed 7 --val-steps 0 --lr 3e-3 --threads 1"

# largest NAME REF: the largest relative difference of NAME's step losses from REF's
largest() {
  awk -F, 'NR == FNR { if (FNR > 1) l[$1] = $2; next }
    FNR > 1 { d = ($2 - l[$1]) / l[$1]; if (d < 0) d = -d; if (d > m) m = d }
    END { printf "%.3g", m }' "$TMP/$2.csv" "$TMP/$1.csv"
}

# compared NAME REF RTOL WTOL: same_losses, and the largest difference printed
compared() {
  same_losses "$1" "$2" "$3" "$4"
  echo "  $1 vs $2: largest relative loss difference $(largest "$1" "$2") (tolerance $3); weights:" \
    "$(tail -n 1 "$TMP/$1.cmp")"
}

run fp32 1 || exit 1
for prec in bf16 fp16; do
  if [ "$prec" = bf16 ]; then rtol=2e-2; wtol=5e-2; else rtol=5e-3; wtol=2e-2; fi
  run "$prec" 1 --precision "$prec" || continue
  apart=$(largest "$prec" fp32)
  echo "  $prec vs fp32: largest relative loss difference $apart"
  awk -v d="$apart" 'BEGIN { exit !(d > 1e-6) }' ||
    fail "$prec: losses within 1e-6 of the fp32 run's (the precision did not apply?)"
  for grid in "1 1 2" "2 1 1" "1 2 1"; do
    set -- $grid
    name="$prec-$1$2$3"
    run "$name" 2 --gx "$1" --gy "$2" --gz "$3" --precision "$prec" &&
      compared "$name" "$prec" "$rtol" "$wtol"
  done
  run "$prec-211d2" 4 --gx 2 --g-data 2 --precision "$prec" &&
    compared "$prec-211d2" "$prec" "$rtol" "$wtol"
done

# fp16's forced overflow: skipped on every rank, on 1x1 and 1x1x2 alike
skipped() {
  grep -q "step 2: gradients overflowed; step skipped on every rank" "$TMP/$1.log" ||
    { fail "$1: no skipped step 2 in the log"; cat "$TMP/$1.log"; }
}
run ov 1 --precision fp16 --debug-overflow-step 2 && skipped ov &&
  { tail_differs=$(awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $1 >= 3 && $2 != l[$1] { n++ }
      END { print n + 0 }' "$TMP/fp16.csv" "$TMP/ov.csv")
    [ "$tail_differs" -gt 0 ] || fail "ov: the skipped step changed no later loss"; }
run ov112 2 --gz 2 --precision fp16 --debug-overflow-step 2 && skipped ov112 &&
  compared ov112 ov 5e-3 2e-2

finish
