#!/bin/sh
# Faults a batch system or a failing node inflicts on one rank of four (a 2 x 2 grid), under
# mpiexec; every job bounded by timeout(1), no assertion on speed (only generous upper bounds):
#  - SIGTERM to one rank with --checkpoint-dir (what a batch system sends before the time
#    limit): every rank finishes the step, the checkpoint is written, exit 0;
#  - SIGTERM to one rank without --checkpoint-dir: the job ends, non-zero, nothing left running;
#  - SIGKILL to a rank in the middle of writing a checkpoint (held there by --debug-hang-mode
#    checkpoint, so "the middle" is certain): the job ends, the interrupted checkpoint is never
#    used, --resume continues from the one before, and the next checkpoint of that step replaces
#    the debris;
#  - a start-up that never ends (2 ranks): a rank stuck before its first step (its --data a FIFO
#    that nobody writes) is reported like a stuck step, exit 124; PowerSGD at rank 1024 (inside
#    its documented range, 1 to 4096) starts at once (its codec profile took minutes there).
# With tensor parallelism (--gx 2) a rank's messages name its real place, x and row as
# mpi/grid.h lays them out: SIGINT to rank 1 of a 1 x 2 grid, a step time-out on 2 x 2 (x, row).
# A multi-rank job with a bad option says so once, from rank 0, before printing anything
# (`bench compress` on 3 ranks, which two virtual nodes of equal size cannot hold).
# SIGINT, SIGSTOP, a plain SIGKILL and stuck ranks are in tests/mpi_watchdog.sh.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --seed 5 \
  --val-steps 0 --threads 1 --lr-schedule constant --warmup 0 --g-inter 2 --g-data 2"
LIMIT=120

# our own axonn ranks of the job whose files live under $1 (never mpiexec, never other jobs)
ranks_of() { for p in $(pgrep -f "$1"); do [ "$(cat /proc/"$p"/comm 2>/dev/null)" = axonn ] && echo "$p"; done; }
# the world rank of an axonn process (its MPI environment)
world_rank() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^PMI_RANK=//p'; }
rank_pid() { for p in $(ranks_of "$1"); do [ "$(world_rank "$p")" = "$2" ] && echo "$p"; done; }
csv_steps() { if [ -f "$1" ]; then echo $(($(wc -l <"$1") - 1)); else echo 0; fi; }
wait_steps() { i=0; while [ "$(csv_steps "$1")" -lt "$2" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; }
no_leftovers() {
  i=0; while [ -n "$(ranks_of "$1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  [ -z "$(ranks_of "$1")" ] || { fail "$1: ranks left behind"; kill -KILL $(ranks_of "$1") 2>/dev/null; }
}
# start NAME ARGS...: a long run in the background ($job), its metrics in $TMP/NAME.csv
start() {
  name=$1; shift
  # shellcheck disable=SC2086
  timeout $LIMIT $MPIEXEC -n 4 "$AXONN" train $COMMON $PEAK --steps 100000 --metrics "$TMP/$name.csv" \
    "$@" >"$TMP/$name.log" 2>&1 &
  job=$!
}

# ---- SIGTERM to one rank, with checkpoints: a clean stop at a step boundary, exit 0
start term --checkpoint-dir "$TMP/term"
wait_steps "$TMP/term.csv" 3
kill -TERM "$(rank_pid "$TMP/term" 3)"
wait $job; rc=$?
[ $rc -eq 0 ] || { fail "SIGTERM to rank 3 with --checkpoint-dir: exit $rc, expected 0"; cat "$TMP/term.log"; }
grep -q "stop requested" "$TMP/term.log" || fail "SIGTERM: no stop message"
ls "$TMP"/term/step-*/manifest >/dev/null 2>&1 || fail "SIGTERM: no checkpoint written"
no_leftovers "$TMP/term"

# ---- SIGTERM to one rank, no checkpoints: the job ends in bounded time, non-zero
start term0
wait_steps "$TMP/term0.csv" 3
kill -TERM "$(rank_pid "$TMP/term0" 2)"
wait $job; rc=$?
if [ $rc -eq 0 ] || [ $rc -eq 124 ] && ! grep -q "exceeded --step-timeout" "$TMP/term0.log"; then
  fail "SIGTERM to rank 2 without --checkpoint-dir: exit $rc (expected a failure, not 0 or a hang)"
  cat "$TMP/term0.log"
fi
no_leftovers "$TMP/term0"
echo "  SIGTERM without --checkpoint-dir: exit $rc"

# ---- SIGKILL in the middle of a checkpoint write
# checkpoints every 2 steps; rank 1 (stage 1 of row 0, a writer) stops inside step 6's, after
# its own file is written; it is killed there
start ckill --checkpoint-dir "$TMP/ckill" --checkpoint-every 2 --debug-hang-rank 1 \
  --debug-hang-step 6 --debug-hang-mode checkpoint --keep 5
i=0; while [ ! -f "$TMP/ckill/step-00000006/stage-1.bin" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$TMP/ckill/step-00000006/stage-1.bin" ] || fail "checkpoint 6 was never started"
kill -KILL "$(rank_pid "$TMP/ckill" 1)"
wait $job; rc=$?
[ $rc -ne 0 ] || fail "SIGKILL during a checkpoint: exit 0"
no_leftovers "$TMP/ckill"
[ -f "$TMP/ckill/step-00000006/manifest" ] && fail "the interrupted checkpoint got a manifest"
echo "  SIGKILL during the checkpoint of step 6: exit $rc"
run ckres 4 --steps 8 --checkpoint-dir "$TMP/ckill" --checkpoint-every 2 --resume --keep 5 --quiet=0 &&
  { grep -q "continuing from $TMP/ckill/step-00000004 (step 4)" "$TMP/ckres.log" ||
      { fail "resume after the interrupted checkpoint did not take step 4"; cat "$TMP/ckres.log"; }
    [ -f "$TMP/ckill/step-00000006/manifest" ] || fail "step 6's checkpoint was not written again"
    "$AXONN" export --checkpoint "$TMP/ckill" --output "$TMP/ck8.bin" >/dev/null ||
      fail "export of the newest checkpoint"; }
# the resumed run equals one that never stopped (same grid: bit-identical)
run ckref 4 --steps 8 && "$AXONN" compare "$TMP/ckref.bin" "$TMP/ckres.bin" --tol 0 >/dev/null ||
  fail "the resumed run differs from an uninterrupted one"

# ---- the start-up is bounded (issue 45, item 6; both jobs were killed after 60 s before)
T6="--layers 2 --hidden 64 --heads 2 --seq 32 --batch 4 --steps 3 --threads 1 --val-steps 0 \
  --quiet --g-data 2"
# shellcheck disable=SC2086
timeout -s KILL 60 $MPIEXEC -n 2 "$AXONN" train $T6 $PEAK --compress powersgd:rank=1024 \
  --step-timeout 10 --metrics "$TMP/rank1024.csv" >"$TMP/rank1024.log" 2>&1; rc1=$?
[ $rc1 -eq 0 ] || { fail "--compress powersgd:rank=1024: exit $rc1 (137: not done after 60 s)"
  cat "$TMP/rank1024.log"; }
no_leftovers "$TMP/rank1024"
mkfifo "$TMP/fifo"
# shellcheck disable=SC2086
timeout -s KILL 60 $MPIEXEC -n 2 "$AXONN" train $T6 --data "$TMP/fifo" --step-timeout 2 \
  >"$TMP/fifo.log" 2>&1; rc=$?
[ $rc -eq 124 ] || { fail "a start-up stuck opening --data: exit $rc, expected 124"; cat "$TMP/fifo.log"; }
grep -q "^axonn: error: the start-up (before the first step) exceeded --step-timeout (2 s) on rank [01] (stage 0, row [01]): opening the training data$" "$TMP/fifo.log" ||
  { fail "a start-up stuck opening --data: no time-out line naming it"; cat "$TMP/fifo.log"; }
no_leftovers "$TMP/fifo"
echo "  start-up: powersgd:rank=1024 exit $rc1; stuck opening --data: exit $rc"

# ---- tensor-parallel ranks are named by their place: stage, x y z, row
TP="--layers 2 --hidden 64 --heads 2 --seq 32 --batch 4 --micro-batch 2 --threads 1 --val-steps 0 \
  --quiet --gx 2"
# SIGINT to rank 1 of 1 x 2 (x 1 of row 0; not "row 1")
timeout $LIMIT $MPIEXEC -n 2 "$AXONN" train $TP --steps 100000 --metrics "$TMP/tpint.csv" \
  >"$TMP/tpint.log" 2>&1 &
job=$!
wait_steps "$TMP/tpint.csv" 3
kill -INT "$(rank_pid "$TMP/tpint" 1)"
wait $job; rc=$?
[ $rc -eq 130 ] && [ "$(grep -c '^axonn: error: ' "$TMP/tpint.log")" -eq 1 ] &&
  grep -q "^axonn: error: rank 1 (stage 0, x 1 y 0 z 0, row 0) interrupted by SIGINT in step" "$TMP/tpint.log" ||
  { fail "SIGINT to tensor-parallel rank 1: exit $rc; expected 130 and one line naming it x 1 of row 0"; cat "$TMP/tpint.log"; }
no_leftovers "$TMP/tpint"
# a step time-out on --gx 2 --g-data 2: every line names its rank r as x r % 2 of row r / 2
timeout $LIMIT $MPIEXEC -n 4 "$AXONN" train $TP --g-data 2 --steps 20 --step-timeout 2 \
  --startup-timeout 120 --debug-hang-rank 2 --debug-hang-step 3 --metrics "$TMP/tpstuck.csv" \
  >"$TMP/tpstuck.log" 2>&1
rc=$?
grep '^axonn: error: ' "$TMP/tpstuck.log" >"$TMP/tpstuck.lines"
[ $rc -eq 124 ] && [ -s "$TMP/tpstuck.lines" ] || { fail "tensor-parallel time-out: exit $rc"; cat "$TMP/tpstuck.log"; }
while IFS= read -r line; do
  r=$(echo "$line" | sed -n 's/^axonn: error: step 3 exceeded --step-timeout (2 s) on rank \([0-3]\) .*/\1/p')
  want="on rank $r (stage 0, x $((r % 2)) y 0 z 0, row $((r / 2))): "
  [ -n "$r" ] && case "$line" in *"$want"*) true ;; *) false ;; esac ||
    fail "tensor-parallel time-out: '$line' lacks '$want'"
done <"$TMP/tpstuck.lines"
no_leftovers "$TMP/tpstuck"
echo "  tensor-parallel labels: SIGINT exit 130, time-out $(wc -l <"$TMP/tpstuck.lines") line(s)"

# ---- a bad setting of a multi-rank benchmark: one line, from rank 0, before any output
timeout $LIMIT $MPIEXEC -n 3 "$AXONN" bench compress --codec-rows 0 >"$TMP/cb3.out" 2>"$TMP/cb3.err"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$(wc -l <"$TMP/cb3.err")" -eq 1 ] && [ ! -s "$TMP/cb3.out" ] &&
  grep -q "^axonn: error: the all-reduce rows need the job's ranks in two equal virtual nodes, and 3 ranks cannot be halved.*rank 0)$" "$TMP/cb3.err" ||
  { fail "bench compress on 3 ranks: exit $rc, stdout and stderr:"; cat "$TMP/cb3.out" "$TMP/cb3.err"; }

finish
