#!/bin/sh
# The offloaded optimizer step against the plain one (real MPI, several ranks):
#  - chunked all-reduce interleaved with the host AdamW (--grad-clip 0) and the chunked
#    all-reduce followed by AdamW (clipping on) give exactly the plain step's losses and
#    weights (AdamW is element-wise and its vector and scalar paths round alike; two-rank
#    sums do not depend on the order) for bucket sizes that do not divide the parameter
#    count, coarsening 1 to 8, every all-reduce algorithm, and optimizer threads; on a 2x2
#    grid within 1e-5 of the plain step on the same grid; the same with a communication
#    thread (--progress thread) instead of progress calls;
#  - a bf16 all-reduce payload stays close (1e-2) to fp32;
#  - dynamic loss scaling leaves an fp32 run's losses as they are (the scale doubled 6 times
#    in 12 steps: each update divides by the scale its gradients carry, clipped or not; the
#    summary's scale at the end), and a forced overflow skips exactly one step on every rank:
#    3 steps with an overflow at step 3 end with the weights of 2 steps, bit for bit; the
#    learning-rate schedule does not advance on the skipped step (its warm-up resumes there);
#  - --optimizer device (the optimizer state beside the weights, the norm where the gradients
#    are) gives the host optimizer's losses and weights bit for bit on the CPU backend, whose
#    device memory is host memory (the same arrays, the same AdamW): with clipping, with
#    dynamic loss scaling and a forced overflow, and stopped at a checkpoint and resumed; on
#    1x2, 2x1, 2x2 and --gx 2 too (summed in place), the 2x2 run also resumed.
#    (tests/cuda/check_cuda.sh runs the device AdamW and the state's copies on a GPU.)
#  - the header's word on the order is the trace's: with --grad-clip 0 on 1x2 chunks are
#    updated while later chunks are still being summed; with clipping every update follows the
#    last all-reduce.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --steps 12 \
  --shuffle 0 --seed 11 --val-steps 0 --lr 3e-3 --threads 1 --quiet --allreduce mpi"

for clip in 0 1; do
  run "plain$clip" 2 --g-data 2 --offload 0 --grad-clip $clip || exit 1
  for k in 1 2 4 8; do
    run "off${clip}k$k" 2 --g-data 2 --grad-clip $clip --bucket-size 1000 --coarsening $k &&
      same_losses "off${clip}k$k" "plain$clip" 0 0
  done
done
run ring 2 --g-data 2 --grad-clip 0 --bucket-size 777 --coarsening 3 --allreduce ring \
  --optimizer-threads 2 && same_losses ring plain0 0 0
for k in 1 3; do
  run "thread$k" 2 --g-data 2 --grad-clip 0 --bucket-size 1000 --coarsening $k \
    --progress thread --allreduce ring --optimizer-threads 2 && same_losses "thread$k" plain0 0 0
done
run plain_grid 4 --g-inter 2 --g-data 2 --grad-clip 0 --offload 0 &&
  run grid 4 --g-inter 2 --g-data 2 --grad-clip 0 --bucket-size 500 --coarsening 2 \
    --allreduce rhd && same_losses grid plain_grid
run grid_thread 4 --g-inter 2 --g-data 2 --grad-clip 0 --bucket-size 500 --coarsening 2 \
  --progress thread && same_losses grid_thread plain_grid
run grid_clip 4 --g-inter 2 --g-data 2 --bucket-size 500 --coarsening 2 --allreduce ring &&
  run plain_grid_clip 4 --g-inter 2 --g-data 2 --offload 0 &&
  same_losses grid_clip plain_grid_clip
run bf16 2 --g-data 2 --grad-clip 0 --bucket-size 1000 --allreduce-dtype bf16 &&
  same_losses bf16 plain0 1e-2 2e-2
run scaled 2 --g-data 2 --grad-clip 0 --loss-scaling dynamic && same_losses scaled plain0 0 0
# the scale doubled after every 2 clean steps (--loss-scale-window 2, 6 times in 12 steps): each
# update divides by the scale its gradients were computed with, the clipping norm too (a scale
# doubled before its step's update took half a step: the losses differed from step 3 on)
for clip in 0 1; do
  run "grow$clip" 2 --g-data 2 --grad-clip $clip --loss-scaling dynamic --loss-scale-window 2 \
    --summary "$TMP/grow$clip.json" && same_losses "grow$clip" "plain$clip" 0 0 &&
    scale_at_end "grow$clip" 4194304 0
done

# forced overflow: every rank skips step 3 (constant lr, so 2 steps are a prefix of 3)
NOSCHED="--lr-schedule constant --warmup 0 --loss-scaling dynamic"
COMMON_SAVED=$COMMON
COMMON=$(echo "$COMMON" | sed 's/--steps 12//')
for grid in "1 1" "2 2"; do
  set -- $grid
  np=$(($1 * $2))
  run "two$np" $np --g-inter "$1" --g-data "$2" --steps 2 $NOSCHED || continue
  run "skip$np" $np --g-inter "$1" --g-data "$2" --steps 3 $NOSCHED --debug-overflow-step 3 ||
    continue
  grep -q "step 3: gradients overflowed; step skipped on every rank (loss scale now 32768)" \
    "$TMP/skip$np.log" || { fail "skip$np: no overflow line"; cat "$TMP/skip$np.log"; }
  [ "$(grep -c overflowed "$TMP/skip$np.log")" -eq 1 ] || fail "skip$np: more than one skip"
  "$AXONN" compare "$TMP/two$np.bin" "$TMP/skip$np.bin" --tol 0 >"$TMP/c.out" 2>&1 ||
    { fail "skip$np: weights after the skipped step differ from 2 steps"; cat "$TMP/c.out"; }
done

# the learning-rate schedule follows the updates taken: after the skipped step 3 the warm-up
# goes on where it stopped (step 4 takes step 3's rate), on the host and the device optimizer
SCHED="--lr-schedule cosine --warmup 4 --loss-scaling dynamic --steps 5"
for opt in host device; do
  run "lrplain$opt" 1 $SCHED --optimizer $opt && run "lrskip$opt" 1 $SCHED --optimizer $opt \
    --debug-overflow-step 3 && {
    rates() { awk -F, 'NR > 1 { printf "%s ", $3 }' "$TMP/$1.csv"; }
    set -- $(rates "lrplain$opt"); plain="$1 $2 $3 $3 $4"
    [ "$(rates "lrskip$opt")" = "$plain " ] ||
      fail "lrskip$opt: rates $(rates "lrskip$opt")against $plain (the schedule did not wait)"
  }
done

# the device optimizer on one rank (here: the same arrays, so the same bits)
run devopt 1 --steps 3 $NOSCHED --debug-overflow-step 3 --optimizer device &&
  same_losses devopt skip1 0 0 && grep -q "step 3: gradients overflowed" "$TMP/devopt.log" ||
  fail "devopt: no overflow skipped"
# and its scale doubled after each clean step (4 steps: 2^16 -> 2^20 less the skip's half)
run devgrow 1 --steps 4 $NOSCHED --loss-scaling dynamic --loss-scale-window 1 --debug-overflow-step 3 \
  --optimizer device --summary "$TMP/devgrow.json" &&
  run hostgrow 1 --steps 4 $NOSCHED --loss-scaling off --debug-overflow-step 3 &&
  same_losses devgrow hostgrow 0 0 && scale_at_end devgrow 262144 1
COMMON=$COMMON_SAVED
run host1 1 && run dev1 1 --optimizer device && same_losses dev1 host1 0 0
CK="--optimizer device --checkpoint-dir $TMP/ck --checkpoint-every 6"
# shellcheck disable=SC2086
run devhalf 1 $CK --steps 6 && run devrest 1 $CK --resume && tail_equal devrest host1
# many ranks (issue 50): the gradients summed in place, as the host optimizer sums them (the
# posing device's staged and device-buffer sums: tests/mpitest_device_opt.c)
for grid in "1 2" "2 1" "2 2"; do
  set -- $grid
  np=$(($1 * $2)); g="$1x$2"
  run "host$g" $np --g-inter "$1" --g-data "$2" && run "dev$g" $np --g-inter "$1" --g-data "$2" \
    --optimizer device && same_losses "dev$g" "host$g" 0 0
done
run hosttp 2 --gx 2 && run devtp 2 --gx 2 --optimizer device && same_losses devtp hosttp 0 0
CK="--optimizer device --g-inter 2 --g-data 2 --checkpoint-dir $TMP/ck4 --checkpoint-every 6"
# shellcheck disable=SC2086
run devhalf4 4 $CK --steps 6 && run devrest4 4 $CK --resume && tail_equal devrest4 host2x2

# what the header says about the order is what the trace shows (rank 0, step 2): with --grad-clip 0
# some chunk is updated before the last chunk's all-reduce ends (AxoNN's interleaving); with
# clipping every update starts after the last all-reduce
order() { # order TRACE: "interleaved" or "after", from rank 0's (tid 0) allreduce and optimizer
  # events of the merged trace
  python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in (d["traceEvents"] if isinstance(d, dict) else d)
      if e.get("ph") == "X" and e.get("tid", 0) == 0 and e["name"] in ("allreduce", "optimizer")]
ar = [e["ts"] + e["dur"] for e in ev if e["name"] == "allreduce"]
op = [e["ts"] for e in ev if e["name"] == "optimizer"]
print("none" if not ar or not op else "interleaved with" if min(op) < max(ar) else "after")
EOF
}
COMMON=$(echo "$COMMON_SAVED" | sed 's/--quiet//') # the header
for clip in 0 1; do
  want=$([ $clip -eq 0 ] && echo "interleaved with" || echo after)
  line=$([ $clip -eq 0 ] && echo "all-reduce interleaved with host AdamW" ||
    echo "all-reduce, then host AdamW: clipping")
  run "order$clip" 2 --g-data 2 --grad-clip $clip --bucket-size 4000 --coarsening 1 --steps 2 \
    --trace "$TMP/order$clip.json" --trace-steps 2-2 || continue
  got=$(order "$TMP/order$clip.json")
  [ "$got" = "$want" ] && grep -q "optimizer: $line" "$TMP/order$clip.log" ||
    { fail "order$clip: trace '$got' (want $want), header:"; grep "optimizer:" "$TMP/order$clip.log"; }
  echo "  --grad-clip $clip: updates $got the all-reduce in the trace, as the header says"
done

finish
