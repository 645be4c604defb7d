#!/bin/sh
# Checkpoint and resume (real MPI, real files):
#  - 20 steps straight equal 10 steps, stop, resume, 10 more, bit for bit (losses and final
#    weights) on grids 1x1, 2x2 and 4x1;
#  - a checkpoint written on 2x2 resumes on 4x1, 1x1 and 1x4 (and a 4x1 one back on 2x2)
#    within the tolerance of the layouts themselves (losses 1e-5, weights 2e-4);
#  - `axonn export` writes the model of the run at that step, exactly;
#  - a corrupt or incomplete newest checkpoint is reported and the previous one is used;
#    codec and backprop state files count (they are in the manifest): one missing or damaged
#    passes the checkpoint over, and the resumed run equals one that never stopped;
#  - a resume without --compress (--compress-backprop) of a checkpoint holding that state says
#    so in one line;
#  - bad input (--resume without a directory, no checkpoint to export, another batch or model
#    shape than the checkpoint's) gets one clear error;
#  - SIGUSR1 / SIGTERM: the step finishes, a checkpoint is written, the job exits 0;
#  - a rank killed mid-run ends the job with a non-zero exit in bounded time, and --resume
#    loses at most --checkpoint-every steps.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --seed 3 \
  --val-steps 0 --threads 1 --quiet --lr-schedule constant --warmup 0"


for grid in "1 1" "2 2" "4 1"; do
  set -- $grid; np=$(($1 * $2)); g="--g-inter $1 --g-data $2"; n="g$1$2"
  run "full$n" $np $g --steps 20 || continue
  run "half$n" $np $g --steps 10 --checkpoint-dir "$TMP/ck$n" --checkpoint-every 5 || continue
  run "res$n" $np $g --steps 20 --checkpoint-dir "$TMP/ck$n" --resume || continue
  [ "$(sed -n 2p "$TMP/res$n.csv" | cut -d, -f1)" = 11 ] || fail "res$n did not start at step 11"
  tail_equal "res$n" "full$n"
  "$AXONN" compare "$TMP/full$n.bin" "$TMP/res$n.bin" --tol 0 >"$TMP/c" 2>&1 ||
    { fail "res$n: weights not bit-identical to 20 straight steps"; cat "$TMP/c"; }
done

# export: the model of the 2x2 run at step 10
"$AXONN" export --checkpoint "$TMP/ckg22" --output "$TMP/export.bin" >/dev/null &&
  "$AXONN" compare "$TMP/halfg22.bin" "$TMP/export.bin" --tol 0 >/dev/null ||
  fail "export of the 2x2 checkpoint differs from the model saved at step 10"

# across grids (keep the 2x2 checkpoint untouched: copy it per target)
for grid in "4 1" "1 1" "1 4"; do
  set -- $grid; n="x$1$2"
  cp -r "$TMP/ckg22" "$TMP/ck$n"
  run "$n" $(($1 * $2)) --g-inter "$1" --g-data "$2" --steps 20 --checkpoint-dir "$TMP/ck$n" \
    --resume && same_losses "$n" fullg22 1e-5 2e-4
done
# ... and back: 4x1 checkpoint at step 15 resumed on 2x2
run x41b 4 --g-inter 4 --steps 15 --checkpoint-dir "$TMP/ckx41b" --checkpoint-every 15 &&
  run back22 4 --g-inter 2 --g-data 2 --steps 20 --checkpoint-dir "$TMP/ckx41b" --resume &&
  same_losses back22 fullg41 1e-5 2e-4

# corrupt newest checkpoint (a flipped byte in a stage file): reported, the previous one used
cp -r "$TMP/ckg11" "$TMP/ckbad"
f="$TMP/ckbad/step-00000010/stage-0.bin"
printf 'X' | dd of="$f" bs=1 seek=1000 conv=notrunc 2>/dev/null
run bad 1 --steps 20 --checkpoint-dir "$TMP/ckbad" --resume &&
  grep -q "step-00000010 is incomplete or corrupt.*CRC mismatch" "$TMP/bad.log" &&
  [ "$(sed -n 2p "$TMP/bad.csv" | cut -d, -f1)" = 6 ] && tail_equal bad fullg11 ||
  { fail "corrupt checkpoint not reported, or step 5 not used"; cat "$TMP/bad.log"; }
# incomplete (no manifest: the writer died before rank 0 finished)
cp -r "$TMP/ckg11" "$TMP/ckinc" && rm "$TMP/ckinc/step-00000010/manifest"
run inc 1 --steps 20 --checkpoint-dir "$TMP/ckinc" --resume &&
  grep -q "step-00000010 is incomplete or corrupt" "$TMP/inc.log" &&
  [ "$(sed -n 2p "$TMP/inc.csv" | cut -d, -f1)" = 6 ] ||
  { fail "incomplete checkpoint not skipped"; cat "$TMP/inc.log"; }

# compression state: codec-1.bin (--compress) or backprop-1.bin (--compress-backprop) missing
# or damaged in the newest checkpoint (step 4): reported, step 2 used, and 6 steps in all equal
# 6 straight ones bit for bit
Z="--g-data 2 --compress onebit:ef=1 --compress-min-bytes 0"
BP="--g-inter 2 --compress-backprop powersgd:rank=4"
run zfull 2 $Z --steps 6 &&
  run zhalf 2 $Z --steps 4 --checkpoint-dir "$TMP/ckz" --checkpoint-every 2
run bpfull 2 $BP --steps 6 &&
  run bphalf 2 $BP --steps 4 --checkpoint-dir "$TMP/ckbp" --checkpoint-every 2
# state_case NAME REF FILE missing|damaged OPTS...: a copy of REF's checkpoint, step 4's FILE
# removed or damaged, resumed with OPTS to 6 steps
state_case() {
  n=$1; ref=$2; file=$3; how=$4; shift 4
  cp -r "$TMP/ck$ref" "$TMP/ck$n" || return
  f="$TMP/ck$n/step-00000004/$file"
  if [ "$how" = missing ]; then rm "$f"
  else printf 'X' | dd of="$f" bs=1 seek=1000 conv=notrunc 2>/dev/null; fi
  run "$n" 2 "$@" --steps 6 --checkpoint-dir "$TMP/ck$n" --resume || return
  grep -q "step-00000004 is incomplete or corrupt.*$file" "$TMP/$n.log" &&
    [ "$(sed -n 2p "$TMP/$n.csv" | cut -d, -f1)" = 3 ] ||
    { fail "$file $how: not reported, or step 2 not used"; cat "$TMP/$n.log"; }
  tail_equal "$n" "${ref}full"
  "$AXONN" compare "$TMP/${ref}full.bin" "$TMP/$n.bin" --tol 0 >"$TMP/c" 2>&1 ||
    { fail "$file $how: weights differ from 6 straight steps"; cat "$TMP/c"; }
}
state_case zmiss z codec-1.bin missing $Z
state_case zbad z codec-1.bin damaged $Z
state_case bpmiss bp backprop-1.bin missing $BP
# ... and a resume without the option that wrote the state: one line naming what is dropped
run znone 2 --g-data 2 --steps 6 --checkpoint-dir "$TMP/ckz" --resume &&
  grep -q "holds --compress state (codec onebit.*without --compress, drops" "$TMP/znone.log" ||
  { fail "a resume without --compress did not say it drops the codec state"; cat "$TMP/znone.log"; }
run bpnone 2 --g-inter 2 --steps 6 --checkpoint-dir "$TMP/ckbp" --resume &&
  grep -q "holds --compress-backprop state (codec powersgd.*drops" "$TMP/bpnone.log" ||
  { fail "a resume without --compress-backprop did not say it drops its state"
    cat "$TMP/bpnone.log"; }

# bad input: one clear error, non-zero exit
expect_error() {
  needle=$1; shift
  if "$@" >"$TMP/e.out" 2>"$TMP/e.err"; then fail "'$*' succeeded"; return; fi
  grep -q -- "$needle" "$TMP/e.err" || { fail "'$*': no '$needle' in:"; cat "$TMP/e.err"; }
}
expect_error "--resume needs --checkpoint-dir" "$AXONN" train $COMMON --resume
expect_error "no complete checkpoint in" "$AXONN" export --checkpoint "$TMP/empty" --output "$TMP/x.bin"
[ ! -e "$TMP/x.bin" ] || fail "export left a file behind after failing"
expect_error "resume with the same" "$AXONN" train $COMMON --batch 16 --steps 20 \
  --checkpoint-dir "$TMP/ckg11" --resume
expect_error "holds a model L=4" "$AXONN" train $COMMON --layers 2 --steps 20 \
  --checkpoint-dir "$TMP/ckg11" --resume

# our own axonn ranks of the job whose files live under $1 (never mpiexec, never other jobs)
ranks_of() { for p in $(pgrep -f "$1"); do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = axonn ] && echo "$p"; done; }
# waits until the CSV $1 has at least $2 steps (or 60 s)
csv_steps() { if [ -f "$1" ]; then echo $(($(wc -l <"$1") - 1)); else echo 0; fi; }
wait_steps() { i=0; while [ "$(csv_steps "$1")" -lt "$2" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; }

# stop signals: finish the step, checkpoint, exit 0
for sig in USR1 TERM; do
  timeout 120 $MPIEXEC -n 2 "$AXONN" train $COMMON $PEAK --quiet=0 --g-inter 2 --steps 100000 \
    --checkpoint-dir "$TMP/sig$sig" --metrics "$TMP/sig$sig.csv" >"$TMP/sig$sig.log" 2>&1 &
  job=$!
  wait_steps "$TMP/sig$sig.csv" 3
  for p in $(ranks_of "$TMP/sig$sig"); do kill -"$sig" "$p"; done
  wait $job; rc=$?
  [ $rc -eq 0 ] || { fail "SIG$sig: exit $rc, expected 0"; cat "$TMP/sig$sig.log"; }
  grep -q "stop requested" "$TMP/sig$sig.log" || fail "SIG$sig: no stop message"
  ls "$TMP/sig$sig"/step-*/manifest >/dev/null 2>&1 || fail "SIG$sig: no checkpoint written"
done

# a rank dies (SIGKILL): the job ends non-zero in bounded time; the restart loses <= 3 steps
start=$(date +%s)
timeout 120 $MPIEXEC -n 2 "$AXONN" train $COMMON --g-data 2 --steps 100000 \
  --checkpoint-dir "$TMP/kill" --checkpoint-every 3 --metrics "$TMP/kill.csv" >"$TMP/kill.log" 2>&1 &
job=$!
wait_steps "$TMP/kill.csv" 8
victim=$(ranks_of "$TMP/kill" | tail -n 1)
last=$(csv_steps "$TMP/kill.csv")
kill -KILL "$victim"
wait $job; rc=$?
took=$(($(date +%s) - start))
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then fail "killed rank: job exit $rc (expected a failure, not 0 or a hang)"; fi
echo "  killed a rank after step >= $last: job ended in ${took}s with exit $rc"
run killres 2 --g-data 2 --steps $((last + 6)) --checkpoint-dir "$TMP/kill" --resume &&
  first=$(sed -n 2p "$TMP/killres.csv" | cut -d, -f1) &&
  { [ $((first - 1)) -ge $((last - 3)) ] || fail "resume from step $((first - 1)) lost more than 3 steps (last was $last)"; }

finish
