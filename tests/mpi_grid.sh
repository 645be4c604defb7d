#!/bin/sh
# Every parallel layout against the single-rank run (real MPI, several ranks):
#  - grids 2x1, 1x2, 2x2, 4x1, 1x4 on the same data and seed: the first step's loss equals the
#    1x1 run's within 1e-6 (the same sums in another order), per-step losses over 10 steps
#    within 1e-5 relative, final weights within 1e-4 (largest difference
#    per tensor relative to the tensor's largest magnitude; summation order differs between
#    layouts, so bits may not; the key bias, which has no effect on the output and so trains on
#    rounding noise alone, is left out: see src/cli/compare.c);
#  - pipeline limits 1 to 4, and a delayed stage (arrival order changes, the math must not);
#  - GPT-2's dropout (--dropout, --attention-dropout): 2x2, a checkpointed pipeline and the
#    tensor-parallel 1x2x2 and 2x1x1 (heads split) drop what one rank drops (the masks follow
#    the element's place in the step's batch), and the single-rank run with dropout differs
#    from the one without;
#  - the run's end check of its data-parallel replicas finds replicas that differ (two ranks
#    started with other seeds);
#  - failures end the whole job with a clear message and a non-zero exit in bounded time.
. "$(dirname "$0")/mpilib.sh"

# (10 steps, not 20: a layout's wrong sum or update shows within the first steps, and every
# step's loss, the validation at step 10 and the final weights are compared)
COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --steps 10 --shuffle 0 --seed 7 \
  --val-every 10 --val-steps 2 --lr 3e-3 --threads 1 --quiet"

run ref 1 --micro-batch 2 || exit 1
for grid in "2 1" "1 2" "2 2" "4 1" "1 4"; do
  set -- $grid
  name="grid${1}x${2}"
  run "$name" $(($1 * $2)) --g-inter "$1" --g-data "$2" --micro-batch 2 && same_losses "$name" &&
    first_step_same "$name"
done
# pipeline limits, and an uneven stage split
for limit in 1 2 3 4; do
  run "limit$limit" 4 --g-inter 4 --micro-batch 1 --pipeline-limit "$limit" && same_losses "limit$limit"
done
run split 2 --g-inter 2 --micro-batch 2 --stage-layers 3,1 && same_losses split
# a slow stage changes the order messages arrive in, not the result
run delay 4 --g-inter 4 --micro-batch 1 --debug-delay-stage 1 --debug-delay-ms 3 && same_losses delay
run delay2 4 --g-inter 2 --g-data 2 --micro-batch 1 --debug-delay-stage 0 --debug-delay-ms 2 &&
  same_losses delay2
# with activation checkpointing per stage
run ckpt 2 --g-inter 2 --micro-batch 2 --checkpoint-activations --ac 1 && same_losses ckpt

# dropout: the same elements dropped on every layout, recomputed segments included
DROP="--dropout 0.2 --attention-dropout 0.2"
run dropref 1 --micro-batch 2 $DROP || exit 1
awk -F, 'NR == FNR { if (FNR == 3) a = $2; next } FNR == 3 { exit !(a != $2) }' \
  "$TMP/ref.csv" "$TMP/dropref.csv" || fail "dropref: step 2's loss is the run's without dropout"
run drop2x2 4 --g-inter 2 --g-data 2 --micro-batch 1 $DROP && same_losses drop2x2 dropref
run dropckpt 2 --g-inter 2 --micro-batch 2 $DROP --checkpoint-activations --ac 1 &&
  same_losses dropckpt dropref
run droptp 4 --gy 2 --gz 2 --micro-batch 2 $DROP && same_losses droptp dropref
run droptpx 2 --gx 2 --micro-batch 2 $DROP && same_losses droptpx dropref

# our own all-reduce algorithms instead of MPI_Allreduce
run ring 2 --g-data 2 --micro-batch 2 --allreduce ring && same_losses ring
# the end-of-run check of the data-parallel replicas (every `run` above passed it) sees replicas
# that differ: two ranks launched with other seeds (MPI's MPMD form) start from other weights;
# the run warns in one line and its summary says false
APART="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --steps 2 --val-steps 0 --threads 1 \
  --g-data 2 $PEAK"
# shellcheck disable=SC2086
timeout 120 $MPIEXEC -n 1 "$AXONN" train $APART --seed 1 --summary "$TMP/apart.json" : \
  -n 1 "$AXONN" train $APART --seed 2 >"$TMP/apart.log" 2>&1 || fail "apart: training failed"
[ "$(grep -c 'data-parallel replicas of 1 stage shard(s) hold different' "$TMP/apart.log")" -eq 1 ] &&
  grep -q '"replicas_identical":false' "$TMP/apart.json" ||
  { fail "apart: replicas of other seeds not reported as different"; cat "$TMP/apart.log"; }
# ... and the tied embedding's two copies that differ: a pipeline's two stages launched with
# other seeds start from other embeddings
# shellcheck disable=SC2086
timeout 120 $MPIEXEC -n 1 "$AXONN" train $APART --g-data 1 --g-inter 2 --seed 1 \
  --summary "$TMP/tiedapart.json" : -n 1 "$AXONN" train $APART --g-data 1 --g-inter 2 --seed 2 \
  >"$TMP/tiedapart.log" 2>&1 || fail "tiedapart: training failed"
[ "$(grep -c "tied embedding's copies on the first and the last stage differ" \
    "$TMP/tiedapart.log")" -eq 1 ] && grep -q '"tied_copies_identical":false' "$TMP/tiedapart.json" ||
  { fail "tiedapart: tied copies of other seeds not reported as different"; cat "$TMP/tiedapart.log"; }
run rhd 4 --g-data 4 --micro-batch 2 --allreduce rhd && same_losses rhd
run ring2x2 4 --g-inter 2 --g-data 2 --micro-batch 1 --allreduce ring && same_losses ring2x2

# the trace: valid JSON, one track per rank, forward/backward/all-reduce/optimizer events
if run trace 4 --g-inter 2 --g-data 2 --micro-batch 1 --trace "$TMP/trace.json" --trace-steps 2-3; then
  for ev in '"forward' '"backward' '"allreduce' '"optimizer' '"send' '"recv-wait'; do
    grep -q "$ev" "$TMP/trace.json" || fail "trace: no $ev events"
  done
  tracks=$(grep -o '"thread_name","ph":"M","pid":0,"tid":[0-9]*' "$TMP/trace.json" | sort -u | wc -l)
  [ "$tracks" -eq 4 ] || fail "trace: $tracks rank tracks, expected 4"
  if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/trace.json" ||
      fail "trace: not valid JSON"
    # one clock for all ranks: no activation or gradient starts on its receiver before its
    # sender finished it (origins set by a barrier alone broke this by milliseconds)
    python3 "$(dirname "$0")/trace_causality.py" "$TMP/trace.json" >"$TMP/causality.txt" ||
      fail "trace: ranks' clocks disagree: $(head -n 3 "$TMP/causality.txt")"
  fi
fi

# ---- --g-data left unset comes from the job's ranks (as in Megatron and DeepSpeed):
# --g-data on 2 ranks, and on 4 ranks with --g-inter 2
for c in "2 1 2" "4 2 2 --g-inter 2"; do
  set -- $c
  np=$1 p=$2 d=$3; shift 3
  # shellcheck disable=SC2086
  timeout 120 $MPIEXEC -n "$np" "$AXONN" train $COMMON $PEAK --steps 1 "$@" \
    --summary "$TMP/derived.json" >"$TMP/derived.out" 2>&1 &&
    grep -q "\"g_inter\":$p,\"g_data\":$d," "$TMP/derived.json" ||
    { fail "$np ranks ${*:-}: not a $p x $d grid"; cat "$TMP/derived.out"; }
done

# ---- failures: one clear message, non-zero exit, bounded time
# the grid does not match the job: every rank knows, rank 0 alone says so
expect_job_error "needs 4 ranks, but the job has 3" 3 --g-inter 2 --g-data 2
[ "$(grep -c 'axonn: error' "$TMP/f.err")" -eq 1 ] || fail "grid error printed more than once"
# a file only rank 0 writes cannot be created, before the run starts
expect_job_error "cannot create metrics file" 2 --g-inter 2 --metrics "$TMP/no/such/dir/m.csv"
# ... or can be created but not written (a full disk): every rank agrees, rank 0 says so once
expect_job_error "cannot write metrics file /dev/full" 2 --g-inter 2 --metrics /dev/full
[ "$(grep -c 'axonn: error' "$TMP/f.err")" -eq 1 ] || fail "metrics error printed more than once"
# ... nor the model file: found before the first step too
expect_job_error "--save: cannot write $TMP/no/such/dir/m.bin" 4 --g-inter 2 --g-data 2 \
  --save "$TMP/no/such/dir/m.bin"
grep -q "^done:" "$TMP/f.out" && fail "--save to a missing directory: training ran first"
# a save that fails only at the end (a full device): every rank still ends
expect_job_error "cannot write /dev/full: No space left on device" 4 --g-inter 2 --g-data 2 \
  --save /dev/full
# a token shard that goes bad in its fourth batch: the ranks reading data fail mid-run while
# the others wait on them; the job must still end
# (bytes 'A' = 65 fit --vocab 100; one 'z' = 122 sits in batch window 4: tokens 384-511)
awk 'BEGIN { for (i = 0; i < 2000; i++) printf (i == 389 ? "z" : "A") }' >"$TMP/bad.txt"
"$AXONN" prep --input "$TMP/bad.txt" --output "$TMP/bad" >/dev/null || fail "prep bad.txt"
expect_job_error "outside the vocabulary" 4 --g-inter 4 --micro-batch 2 --vocab 100 \
  --data "$TMP/bad_train.bin" --val-steps 0

finish
