#!/bin/bash
# gpu-bench.sh — the GPU figures of docs/benchmarks.md ("GPU"), on one NVIDIA GPU, in one go:
#   check    make check-cuda's two programs: every kernel against the CPU backend, one step,
#            1x1 against the CPU and 2x1 / 1x2 (two ranks on the GPU) against 1x1
#   speed    GPT-2 small (124M) and a 1.3B GPT in bf16: tokens/s, TFLOP/s, % of peak, at two
#            batch sizes each, with the optimizer in host memory and in device memory
#            (--optimizer host|device), attention explicit and fused; the cuBLAS bf16 GEMM rate;
#            a trace of one step of each
#   loss     GPT-2 small on tiny Shakespeare (GPT-2 BPE), bf16 and fp32, 200 steps: the curves
#            (bf16 with either optimizer against fp32)
#   tp       tensor parallelism on the one GPU (ranks sharing it), bf16, --optimizer device,
#            200 steps of tiny Shakespeare: GPT-2 small and the 1.3B GPT on grids Gx x Gy x Gz
#            of 2 and 4 ranks against their 1x1 run (issue 50: within 1%)
#   ncu      kernel times of one GPT-2 small step (Nsight Compute, where it is installed)
#   torch    PyTorch on the same models, optimizer on the GPU (scripts/torch_reference.py)
#   simulate `axonn profile --device cuda`, `axonn simulate --profile` and `axonn train` of the
#            same GPT-2 small and 1.3B steps, both optimizers (issue 21's GPU validation); and
#            scripts/simulate-validate.sh on this machine's cores, one rank a core
# Usage: scripts/gpu-bench.sh [OUT_DIR [PARTS]]   (default build/gpu-bench, all parts;
#        PARTS: a comma list of the names above). Build first: make CUDA_ARCH=90 (H100).
# Environment: AXONN (bin/axonn), MPIEXEC (mpiexec), BPE_DIR (GPT-2's encoder.json and
# vocab.bpe, for the loss and tp parts: make gpt2-bpe), TEXT (data/tinyshakespeare.txt);
# tp: TP_MODELS (gpt2s 1p3b), TP_GRIDS_GPT2S, TP_GRIDS_1P3B (comma-joined gx2,gy2 ...), TP_STEPS
# (200), TP_LIMIT (seconds a run, 120); simulate: SIMULATE_VALIDATE=0 skips simulate-validate.sh.
# Every run writes its log, metrics CSV and summary JSON to OUT_DIR; nothing is asserted here
# (the checks are make check-cuda's): read the figures against docs/benchmarks.md.
set -u
OUT=${1:-build/gpu-bench}
PARTS=${2:-check,speed,loss,tp,ncu,torch,simulate}
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
BPE_DIR=${BPE_DIR:-build/gpt2-bpe}
TEXT=${TEXT:-data/tinyshakespeare.txt}
mkdir -p "$OUT"
want() { echo ",$PARTS," | grep -q ",$1,"; }
say() { echo "== $*"; }
# train NAME ARGS...: one run, its log in OUT/NAME.log, summary line shown
train() {
  local name=$1; shift
  if ! "$AXONN" train --device cuda "$@" --summary "$OUT/$name.json" >"$OUT/$name.log" 2>&1; then
    echo "$name: failed: $(tail -n 1 "$OUT/$name.log")"
    return 1
  fi
  echo "$name: $(grep '^summary:' "$OUT/$name.log" | cut -c10-150)"
}
# largest_difference REF.csv RUN.csv [WHAT]: the largest and the mean relative difference of a
# step's loss, and the number of steps compared
largest_difference() {
  awk -F, -v what="${3:-bf16 against fp32}" 'NR == FNR { if (FNR > 1) f[$1] = $2; next }
    FNR > 1 && ($1 in f) { d = ($2 - f[$1]) / f[$1]; d = d < 0 ? -d : d; s += d; n++
      if (d > m) { m = d; at = $1 } }
    END { if (!n) { printf "%s: no steps to compare\n", what; exit 1 }
      printf "%s: largest relative difference %.2f%% (step %d), mean %.3f%%, %d steps\n",
             what, 100 * m, at, 100 * s / n, n }' "$1" "$2"
}
# tiny_shakespeare: GPT-2 BPE shards of TEXT in OUT/tiny_{train,val}.bin (once)
tiny_shakespeare() {
  [ -s "$OUT/tiny_train.bin" ] ||
    "$AXONN" prep --input "$TEXT" --output "$OUT/tiny" --tokenizer gpt2 --bpe-dir "$BPE_DIR" |
      tail -n 1
}
GPT2S="--model gpt2-small --seq 1024 --val-steps 0"
GPT1B="--layers 24 --hidden 2048 --heads 16 --seq 1024 --vocab 50257 --val-steps 0"

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader ||
  echo "gpu-bench: nvidia-smi found no GPU; the parts below will say what they cannot do"
if want check; then
  say "check: make check-cuda"
  make --no-print-directory check-cuda MPIEXEC="$MPIEXEC" 2>&1 | tee "$OUT/check.log" | tail -n 3
fi
if want speed; then
  say "speed"
  "$AXONN" bench gemm --device cuda --precision bf16 --size 8192 | tail -n 1
  # each run with the optimizer in host memory (AxoNN's offload) and in device memory
  for opt in host device; do
    train "gpt2s-b16-$opt" --precision bf16 $GPT2S --batch 16 --micro-batch 8 --steps 20 \
      --optimizer $opt --trace "$OUT/gpt2s-b16-$opt-trace.json" --trace-steps 6-6
    train "gpt2s-b64-$opt" --precision bf16 $GPT2S --batch 64 --micro-batch 8 --steps 8 \
      --optimizer $opt
    train "1p3b-b8-$opt" --precision bf16 $GPT1B --batch 8 --micro-batch 2 --steps 6 \
      --optimizer $opt --trace "$OUT/1p3b-b8-$opt-trace.json" --trace-steps 4-4
    train "1p3b-b32-$opt" --precision bf16 $GPT1B --batch 32 --micro-batch 4 --steps 4 \
      --optimizer $opt
  done
  train 1p3b-b64-device --precision bf16 $GPT1B --batch 64 --micro-batch 8 --steps 4 \
    --optimizer device
  # the fused (flash-style) attention against the default explicit one
  for att in explicit fused; do
    train "gpt2s-b16-device-$att" --precision bf16 $GPT2S --batch 16 --micro-batch 8 --steps 12 \
      --optimizer device --attention $att
    train "1p3b-b8-device-$att" --precision bf16 $GPT1B --batch 8 --micro-batch 2 --steps 6 \
      --optimizer device --attention $att
  done
fi
if want loss; then
  say "loss: tiny Shakespeare, 200 steps"
  tiny_shakespeare
  for run in "bf16 host" "fp32 host" "bf16 device"; do
    set -- $run
    train "loss-$1-$2" --precision "$1" --optimizer "$2" --model gpt2-small --seq 1024 \
      --batch 8 --micro-batch 8 --steps 200 --lr 6e-4 --warmup 20 --seed 7 \
      --data "$OUT/tiny_train.bin" --val-data "$OUT/tiny_val.bin" --val-every 50 \
      --val-steps 4 --metrics "$OUT/loss-$1-$2.csv"
  done
  for opt in host device; do
    [ -s "$OUT/loss-fp32-host.csv" ] && [ -s "$OUT/loss-bf16-$opt.csv" ] && printf "%s: " "$opt" &&
      largest_difference "$OUT/loss-fp32-host.csv" "$OUT/loss-bf16-$opt.csv"
  done
fi
if want tp; then
  say "tp: tensor parallelism on one GPU, bf16, 200 steps of tiny Shakespeare against 1x1"
  tiny_shakespeare
  # ranks sharing one GPU stage every collective through host memory where MPI is not
  # CUDA-aware: on an H200, GPT-2 small at 2K tokens a step took 13 ms on 1x1 and 117 (gx2) to
  # 450 ms (gy2), so the 1.3B model trains on fewer tokens a step
  TP_BASE="--precision bf16 --optimizer device --steps ${TP_STEPS:-200} --lr 3e-4 --warmup 20
    --seed 7 --data $OUT/tiny_train.bin --val-steps 0"
  # tp_run NAME RANKS ARGS...: one run on RANKS ranks sharing the GPU, cut after TP_LIMIT s
  tp_run() {
    local name=$1 ranks=$2; shift 2
    # shellcheck disable=SC2086
    if ! timeout "${TP_LIMIT:-120}" $MPIEXEC -n "$ranks" "$AXONN" train --device cuda \
        $TP_BASE $shape "$@" --metrics "$OUT/$name.csv" --summary "$OUT/$name.json" \
        >"$OUT/$name.log" 2>&1; then
      echo "$name: failed or cut: $(tail -n 1 "$OUT/$name.log")"
    fi
    [ -s "$OUT/$name.json" ] && echo "$name: $(grep '^summary:' "$OUT/$name.log" | cut -c10-120)"
    [ -s "$OUT/$name.csv" ] && largest_difference "$OUT/tp-$model-1x1.csv" "$OUT/$name.csv" \
      "$name against 1x1"
  }
  for model in ${TP_MODELS:-gpt2s 1p3b}; do
    case $model in
      gpt2s) shape="--model gpt2-small --seq 256 --batch 8 --micro-batch 8"
        grids=${TP_GRIDS_GPT2S:-"gx2 gy2 gz2 gx2,gy2 gy2,gz2 gx4 gz4"} ;;
      1p3b) shape="--layers 24 --hidden 2048 --heads 16 --vocab 50257 --seq 128 --batch 4
          --micro-batch 4"
        grids=${TP_GRIDS_1P3B:-"gx2 gz2 gx2,gy2"} ;;
    esac
    tp_run "tp-$model-1x1" 1
    for g in $grids; do
      args=$(echo "$g" | sed 's/g\([xyz]\)\([0-9]*\)/--g\1 \2/g; s/,/ /g')
      ranks=$(echo "$g" | tr -c '0-9\n' ' ' | awk '{ p = 1; for (i = 1; i <= NF; i++) p *= $i; print p }')
      # shellcheck disable=SC2086
      tp_run "tp-$model-$g" "$ranks" $args
    done
  done
fi
if want ncu; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
  if [ -z "$NCU" ]; then
    say "ncu: skipped (no Nsight Compute)"
  else
    say "ncu: kernel times of one GPT-2 small step (8 x 1024 tokens) -> $OUT/ncu.csv"
    "$NCU" --metrics gpu__time_duration.sum --print-summary per-kernel --csv \
      --log-file "$OUT/ncu.csv" "$AXONN" train --device cuda --precision bf16 $GPT2S --batch 8 \
      --micro-batch 8 --steps 1 --quiet >/dev/null 2>&1
    echo "ncu: rc $?"
  fi
fi
if want torch; then
  if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
    say "torch"
    for att in explicit sdpa; do
      python3 scripts/torch_reference.py --random-model 12,768,12,1024,50257 --device cuda \
        --precision bf16 --attention $att --batch 16 --seq 1024 --steps 15 --warmup-steps 5 \
        --mode bench
    done
    python3 scripts/torch_reference.py --random-model 24,2048,16,1024,50257 --device cuda \
      --precision bf16 --attention sdpa --batch 8 --seq 1024 --steps 6 --warmup-steps 2 \
      --mode bench
  else
    say "torch: skipped (no python3 with a CUDA PyTorch)"
  fi
fi
if want simulate; then
  say "simulate: a GPU profile's prediction against the run, both optimizers"
  # predicted: the summary's batch time of `axonn simulate --profile`; measured: the run's
  sim_case() {
    local name=$1; shift
    "$AXONN" profile --device cuda --precision bf16 "$@" --out "$OUT/$name.profile" \
      >"$OUT/$name-profile.log" 2>&1 || { echo "$name: profile failed"; return; }
    for opt in host device; do
      "$AXONN" simulate --device cuda --precision bf16 "$@" --optimizer $opt --machine h100 \
        --profile "$OUT/$name.profile" --summary "$OUT/$name-$opt-sim.json" >/dev/null 2>&1 &&
        train "$name-$opt-run" --precision bf16 "$@" --optimizer $opt --steps 8 &&
        python3 -c 'import json, sys
p, m = (json.load(open(f))["timing"]["batch_time_s"] for f in sys.argv[1:3])
print("%s: simulated %.1f ms, measured %.1f ms, %+.1f%%" % (sys.argv[3], 1e3 * p, 1e3 * m,
      100 * (p - m) / m))' "$OUT/$name-$opt-sim.json" "$OUT/$name-$opt-run.json" "$name-$opt"
    done
  }
  sim_case gpt2s-b16 $GPT2S --batch 16 --micro-batch 8
  sim_case 1p3b-b8 $GPT1B --batch 8 --micro-batch 2
  # a block's time as the profile reads it in a stage of 12 blocks (gpt2s-b16's, above) and in
  # a stage of one (--g-inter 12): on an H200 the deep stage read GPT-2 small's block ~40% slower
  # than the run (docs/benchmarks.md, "Fourth session"), where the earlier one-block profile
  # matched it
  tail -n 1 "$OUT/gpt2s-b16-profile.log" | cut -c1-100
  "$AXONN" profile --device cuda --precision bf16 $GPT2S --batch 16 --micro-batch 8 \
    --g-inter 12 --out "$OUT/gpt2s-b16-one-block.profile" 2>&1 | tail -n 1 | cut -c1-100
  if [ "${SIMULATE_VALIDATE:-1}" = 1 ]; then
    say "simulate: scripts/simulate-validate.sh, one rank a core ($(nproc) cores)"
    AXONN="$AXONN" MPIEXEC="$MPIEXEC" scripts/simulate-validate.sh "$OUT/simulate-validate"
  fi
fi
