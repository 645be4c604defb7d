#!/bin/sh
# check_cuda.sh — make check-cuda: the CUDA backend against the CPU backend.
#  1. check_cuda (the compiled test program, $1): every backend op and one training step on
#     random data, fp32/bf16/fp16 (tolerances in tests/cuda/check_cuda.c), with the CUDA
#     backend loaded from the plugin next to $AXONN (bin/libaxonn-cuda.so). It prints
#     "skipped: no GPU" or "skipped: built without CUDA" and exits 0 where it cannot run; then
#     so does this script.
#  2. `axonn train --device cuda` on one GPU: 1x1 against the CPU backend (fp32, 10 steps,
#     1e-3 relative: cuBLAS and OpenBLAS sum in different orders; also with --dropout 0.1),
#     and the 2x1 and 1x2 grids,
#     two ranks sharing the GPU, against the 1x1 GPU run (1e-4 relative); bf16 and fp16 1x1
#     runs must start within 2% of the fp32 loss and learn.
#  3. --optimizer device (AdamW and the norm on the GPU) against the host optimizer: fp32
#     within 1e-5 at every step (the norm is summed in another order) and the saved model
#     within 1e-4; bf16 within 2e-3; a run stopped at step 5 and resumed from its checkpoint
#     (the state goes through the host arena both ways) gives the uninterrupted run's losses
#     bit for bit. On 2 ranks sharing the GPU (1x2 and 2x1: the data-parallel and the tied
#     embedding's sum) the device optimizer gives the host optimizer's losses within 1e-5, its
#     gradients summed in device memory where MPI is CUDA-aware (auto) and staged through host
#     memory with --cuda-aware-mpi 0.
#  4. Tensor parallelism on the GPU (issue 50): --gx 2 and --gz 2, two ranks sharing the GPU,
#     fp32, against the same grids on the CPU backend (1e-3 relative, as 1x1 against the CPU)
#     and against the 1x1 GPU run (1e-4); --gz 2 staged through host memory
#     (--cuda-aware-mpi 0), --gx 2 as MPI allows (auto).
set -u
TEST=${1:?usage: check_cuda.sh path/to/check_cuda}
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
TMP=$(mktemp -d /tmp/axonn-cuda-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# the program loads the plugin next to $AXONN, as $AXONN does, unless AXONN_PLUGIN_DIR says
PLUGIN_DIR=${AXONN_PLUGIN_DIR:-$(cd "$(dirname "$AXONN")" && pwd)}
AXONN_PLUGIN_DIR=$PLUGIN_DIR "$TEST" >"$TMP/unit.out" 2>&1
rc=$?
cat "$TMP/unit.out"
if head -n 1 "$TMP/unit.out" | grep -q '^skipped:'; then exit "$rc"; fi
[ "$rc" -eq 0 ] || fail "check_cuda (kernels and one step against the CPU backend)"

COMMON="--layers 4 --hidden 64 --heads 4 --seq 32 --batch 8 --micro-batch 2 --steps 10 \
  --shuffle 0 --seed 7 --val-steps 0 --lr 1e-3 --lr-schedule constant --warmup 0 --threads 1 \
  --quiet"

# run NAME NP ARGS...: trains, leaving $TMP/NAME.csv
run() {
  run_name=$1; run_np=$2; shift 2 # its own names: the loops below keep theirs in $name
  # shellcheck disable=SC2086
  if ! timeout 300 $MPIEXEC -n "$run_np" "$AXONN" train $COMMON --metrics "$TMP/$run_name.csv" "$@" \
      >"$TMP/$run_name.log" 2>&1; then
    fail "$run_name: training failed"; cat "$TMP/$run_name.log"; return 1
  fi
}

# close NAME REF TOL: every step's loss of NAME within TOL (relative) of REF's
close() {
  awk -F, -v name="$1" -v tol="$3" 'NR == FNR { if (FNR > 1) l[$1] = $2; next }
    FNR > 1 { d = $2 - l[$1]; if (d < 0) d = -d
      if (d > tol * l[$1]) {
        printf "%s: step %d loss %.9g vs %.9g\n", name, $1, $2, l[$1]; bad = 1 }
      n++ }
    END { if (n != 10) { printf "%s: %d steps in the CSV\n", name, n; bad = 1 } exit bad }' \
    "$TMP/$2.csv" "$TMP/$1.csv" || fail "$1: losses differ from $2 by more than $3"
}

# learns NAME REF TOL: first loss within TOL of REF's first, and the last below the first
learns() {
  awk -F, -v name="$1" -v tol="$3" 'NR == FNR { if (FNR == 2) r = $2; next }
    FNR == 2 { first = $2 } FNR > 1 { last = $2 }
    END { d = first - r; if (d < 0) d = -d; bad = 0
      if (d > tol * r) { printf "%s: first loss %.6g vs %.6g\n", name, first, r; bad = 1 }
      if (!(last < first)) {
        printf "%s: loss %.6g -> %.6g does not fall\n", name, first, last; bad = 1 }
      exit bad }' "$TMP/$2.csv" "$TMP/$1.csv" || fail "$1: does not track $2"
}

run cpu 1 --device cpu
if run ref 1 --device cuda --save "$TMP/ref.bin"; then
  close ref cpu 1e-3
  run grid2x1 2 --device cuda --g-inter 2 && close grid2x1 ref 1e-4
  run grid1x2 2 --device cuda --g-data 2 && close grid1x2 ref 1e-4
  # GPT-2's dropout: the GPU drops what the CPU drops (the masks are the same draw)
  run cpudrop 1 --device cpu --dropout 0.1 && run drop 1 --device cuda --dropout 0.1 &&
    close drop cpudrop 1e-3
  run bf16 1 --device cuda --precision bf16 && learns bf16 ref 0.02
  run fp16 1 --device cuda --precision fp16 && learns fp16 ref 0.02
  run devopt 1 --device cuda --optimizer device --save "$TMP/devopt.bin" &&
    close devopt ref 1e-5 &&
    { "$AXONN" compare "$TMP/ref.bin" "$TMP/devopt.bin" --tol 1e-4 >"$TMP/cmp.out" 2>&1 ||
      { fail "devopt: saved model differs from the host optimizer's"; cat "$TMP/cmp.out"; }; }
  [ -f "$TMP/bf16.csv" ] && run bf16dev 1 --device cuda --precision bf16 --optimizer device &&
    close bf16dev bf16 2e-3
  CK="--device cuda --optimizer device --checkpoint-dir $TMP/ck --checkpoint-every 5"
  # shellcheck disable=SC2086
  if [ -f "$TMP/devopt.csv" ] && run devhalf 1 $CK --steps 5 && run devrest 1 $CK --resume; then
    awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 { n++; if ($2 != l[$1]) { bad = 1
        printf "devrest: step %d loss %.9g vs %.9g\n", $1, $2, l[$1] } }
      END { if (n != 5) { printf "devrest: %d steps\n", n; bad = 1 } exit bad }' \
      "$TMP/devopt.csv" "$TMP/devrest.csv" || fail "devrest: resumed losses differ from devopt"
  fi
  # the device optimizer on 2 ranks (issue 50) against the host optimizer on the same grid
  for g in "1x2 --g-data 2" "2x1 --g-inter 2"; do
    # shellcheck disable=SC2086
    set -- $g
    grid=$1; shift
    [ -f "$TMP/grid$grid.csv" ] || continue
    for mpi in auto 0; do
      run "dev$grid-$mpi" 2 --device cuda "$@" --optimizer device --cuda-aware-mpi "$mpi" &&
        close "dev$grid-$mpi" "grid$grid" 1e-5
    done
  done
  # tensor parallelism: its kernels and collectives on device buffers
  for g in "tpx --gx 2" "tpz --gz 2 --cuda-aware-mpi 0"; do
    # shellcheck disable=SC2086
    set -- $g
    name=$1; shift
    run "${name}cpu" 2 --device cpu "$@" &&
      run "$name" 2 --device cuda "$@" && close "$name" "${name}cpu" 1e-3 && close "$name" ref 1e-4
  done
fi
grep -h -m1 -i "cuda" "$TMP/ref.log" 2>/dev/null | head -n 2

if [ $fails -ne 0 ]; then echo "check_cuda: $fails failure(s)"; exit 1; fi
echo "check_cuda: all checks passed"
