#!/bin/sh
# The watchdog (src/core/watchdog.h) on 4 ranks, a 2 x 2 grid, under mpiexec. Every job is bounded by
# timeout(1); no assertion is on speed, only on generous upper bounds.
#  (a) a stuck rank (--debug-hang-rank 2 --debug-hang-step 3) with --step-timeout 2 (the start-up
#      allowed 120 s: --startup-timeout, so a loaded machine's slow start is no hang) ends the job
#      with exit status 124; each rank that reports prints one line naming step 3, its stage and
#      row, and what it waits for (the activation of micro-batch 0 from stage 0 (rank 2), ...);
#      both ways of being stuck: a forward that never returns (sleep), a message never sent (drop);
#  (b) SIGSTOP of one rank: the others time out (124), name it as stopped, and the launcher kills
#      the stopped one;
#  (c) a normal run with --step-timeout 30 is untouched: exit 0, bit-identical to one without;
#  (d) SIGKILL of one rank: the job ends, and every line axonn prints is "lost rank 2 (stage 0,
#      row 1): killed by signal 9"; with the launcher held back (its proxy stopped, as with a
#      launcher that does not end the job at once) the survivors see it themselves: at least one
#      prints that line, none prints another, and each exits 125;
#  (e) SIGINT to one rank: its one line "interrupted by SIGINT", exit status 130;
#  (f) bad --step-timeout values: one clear line, exit 1.
# After every job no process of it is left (pgrep on its temporary directory).
. "$(dirname "$0")/mpilib.sh"

# (the classic tied-embedding path: a stuck rank is first missed in the data-parallel
# all-reduce, whose report names the peer)
COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --seed 3 \
  --val-steps 0 --threads 1 --quiet --lr-schedule constant --warmup 0 \
  --sparse-embedding-sync dense"
GRID="--g-inter 2 --g-data 2"
LIMIT=120   # seconds for any one job (timeout(1) ends it, with exit status 124, after that)

# our own axonn ranks of the job whose files live under $1 that still run (not zombies)
alive_ranks() {
  for p in $(pgrep -f "$1"); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = axonn ] || continue
    case "$(ps -o stat= -p "$p" 2>/dev/null)" in Z* | "") ;; *) echo "$p" ;; esac
  done
}
# fails NAME when a rank of its job is still alive 10 s after the job ended
no_leftovers() {
  i=0
  while [ -n "$(alive_ranks "$TMP/$1")" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  left=$(alive_ranks "$TMP/$1")
  [ -z "$left" ] || { fail "$1: ranks left behind: $left"; kill -KILL $left 2>/dev/null; }
}
csv_steps() { if [ -f "$1" ]; then echo $(($(wc -l <"$1") - 1)); else echo 0; fi; }
wait_steps() { i=0; while [ "$(csv_steps "$1")" -lt "$2" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; }
# the pid of world rank R of job NAME (hydra gives each rank PMI_RANK in its environment)
rank_pid() {
  for p in $(alive_ranks "$TMP/$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "PMI_RANK=$2" && echo "$p"
  done
}
started=0
start_job() { started=$(date +%s); }
took() { echo $(($(date +%s) - started)); }
# axonn's error lines of NAME's log
errors() { grep '^axonn: error: ' "$TMP/$1.log"; }

# ------------------------------------------------------------------ (a) a stuck rank
# What each rank waits for when rank 2 (stage 0, row 1) stops in step 3: a deterministic table.
expect_stuck() { # MODE RANK -> the activity that rank's line must name
  case "$1:$2" in
    *:0) echo "in the data-parallel gradient all-reduce of chunk 0 (of 1), waiting for data from rank 2" ;;
    *:1) echo "in the data-parallel gradient all-reduce of chunk 0 (of 1), waiting for data from rank 3" ;;
    sleep:2) echo "computing the forward of micro-batch 0" ;;
    drop:2) echo "waiting for the gradient of micro-batch 0 from stage 1 (rank 3)" ;;
    *:3) echo "waiting for the activation of micro-batch 0 from stage 0 (rank 2)" ;;
  esac
}

for mode in sleep drop; do
  name="stuck-$mode"
  start_job
  timeout -k 10 $LIMIT $MPIEXEC -n 4 "$AXONN" train $COMMON $GRID --steps 20 --step-timeout 2 \
    --startup-timeout 120 --debug-hang-rank 2 --debug-hang-step 3 --debug-hang-mode $mode \
    --metrics "$TMP/$name.csv" >"$TMP/$name.log" 2>&1
  rc=$?
  [ $rc -eq 124 ] && [ "$(took)" -lt $((LIMIT - 10)) ] ||
    { fail "$name: exit $rc after $(took) s, expected 124 from the watchdog"; cat "$TMP/$name.log"; }
  n=$(errors "$name" | wc -l)
  [ "$n" -ge 1 ] || fail "$name: no watchdog line"
  errors "$name" | while IFS= read -r line; do
    r=$(echo "$line" | sed -n 's/^axonn: error: step 3 exceeded --step-timeout (2 s) on rank \([0-3]\) .*/\1/p')
    want="axonn: error: step 3 exceeded --step-timeout (2 s) on rank $r (stage $((r % 2)), row $((r / 2))): $(expect_stuck $mode "$r")"
    [ -n "$r" ] && [ "$line" = "$want" ] || echo "FAIL: $name: line '$line'${r:+, expected '$want'}"
  done | grep . && fails=$((fails + 1))
  [ "$(errors "$name" | cut -d: -f3 | sort | uniq -d)" = "" ] || fail "$name: a rank printed twice"
  no_leftovers "$name"
  echo "  $name: exit $rc after $(took) s, $n line(s)"
done

# ------------------------------------------------------------------ (b) SIGSTOP of one rank
name=stopped
start_job
timeout -k 10 $LIMIT $MPIEXEC -n 4 "$AXONN" train $COMMON $GRID --steps 100000 --step-timeout 2 \
  --startup-timeout 120 --metrics "$TMP/$name.csv" >"$TMP/$name.log" 2>&1 &
job=$!
wait_steps "$TMP/$name.csv" 3
victim=$(rank_pid "$name" 2)
kill -STOP "$victim"
wait $job; rc=$?
[ $rc -eq 124 ] && [ "$(took)" -lt $((LIMIT - 10)) ] ||
  { fail "$name: exit $rc after $(took) s, expected 124"; cat "$TMP/$name.log"; }
errors "$name" | grep -q "exceeded --step-timeout (2 s) on rank [013] " ||
  { fail "$name: no watchdog line from a running rank"; cat "$TMP/$name.log"; }
! errors "$name" | grep -v "^axonn: error: step [0-9]* exceeded --step-timeout (2 s) on rank [013] " ||
  { fail "$name: unexpected lines"; cat "$TMP/$name.log"; }
# a line that waits on rank 2 says it is stopped
errors "$name" | grep "rank 2$\|rank 2)$" && fail "$name: the stopped rank 2 is not named as stopped"
errors "$name" | grep -q "; rank 2 (pid $victim) is stopped$" ||
  echo "  (no rank happened to wait on rank 2 directly)"
no_leftovers "$name"
echo "  $name: exit $rc after $(took) s"

# ------------------------------------------------------------------ (c) untouched
run plain 4 $GRID --steps 6 &&
  run watched 4 $GRID --steps 6 --step-timeout 30 && same_losses watched plain 0 0
run watched-off 4 $GRID --steps 6 --step-timeout 0 && same_losses watched-off plain 0 0

# ------------------------------------------------------------------ (d) SIGKILL of one rank
name=killed
start_job
timeout -k 10 $LIMIT $MPIEXEC -n 4 "$AXONN" train $COMMON $GRID --steps 100000 \
  --metrics "$TMP/$name.csv" >"$TMP/$name.log" 2>&1 &
job=$!
wait_steps "$TMP/$name.csv" 3
kill -KILL "$(rank_pid "$name" 2)"
wait $job; rc=$?
{ [ $rc -eq 9 ] || [ $rc -eq 125 ]; } && [ "$(took)" -lt $((LIMIT - 10)) ] ||
  { fail "$name: exit $rc after $(took) s, expected 9 (the launcher) or 125 (a survivor)"; cat "$TMP/$name.log"; }
! errors "$name" | grep -v "^axonn: error: lost rank 2 (stage 0, row 1): killed by signal 9 (SIGKILL); rank [013] " ||
  { fail "$name: lines other than 'lost rank 2'"; cat "$TMP/$name.log"; }
no_leftovers "$name"
echo "  $name: exit $rc after $(took) s, $(errors "$name" | wc -l) 'lost rank' line(s) before the launcher's clean-up"

# The same with the launcher held back: hydra's proxy (the ranks' parent) is stopped before the
# kill and resumed once the survivors have ended, so only they can notice. Each rank's stderr
# goes to its own file (the proxy forwards nothing while stopped).
name=held
start_job
timeout -k 10 $LIMIT $MPIEXEC -n 4 sh -c "exec '$AXONN' train $COMMON $GRID --steps 100000 \
  --metrics '$TMP/$name.csv' 2>'$TMP/$name.err.'\$PMI_RANK" >"$TMP/$name.log" 2>&1 &
job=$!
wait_steps "$TMP/$name.csv" 3
victim=$(rank_pid "$name" 2)
survivors=$(alive_ranks "$TMP/$name" | grep -v "^$victim\$")
proxy=$(ps -o ppid= -p "$victim" | tr -d ' ')
if [ "$(cat /proc/"$proxy"/comm 2>/dev/null)" != hydra_pmi_proxy ]; then
  echo "  held: skipped (the ranks' parent is $(cat /proc/"$proxy"/comm 2>/dev/null), not hydra's proxy)"
  kill -KILL "$victim"; wait $job
else
  trap 'kill -CONT $proxy 2>/dev/null; rm -rf "$TMP"' EXIT
  kill -STOP "$proxy"
  kill -KILL "$victim"
  i=0
  while [ -n "$(alive_ranks "$TMP/$name")" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
  for p in $survivors; do # each survivor's exit status, read from its zombie (field 52)
    st=$(awk '{print $52}' /proc/"$p"/stat 2>/dev/null)
    [ "$st" = $((125 * 256)) ] || fail "$name: survivor $p ended with wait status '$st', expected exit 125"
  done
  kill -CONT "$proxy"
  trap 'rm -rf "$TMP"' EXIT
  wait $job; rc=$?
  [ $rc -eq 125 ] || fail "$name: mpiexec exit $rc, expected 125"
  cat "$TMP/$name".err.* | grep '^axonn: error: ' >"$TMP/$name.lines"
  grep -q . "$TMP/$name.lines" || { fail "$name: no survivor reported the lost rank"; cat "$TMP/$name".err.*; }
  ! grep -v "^axonn: error: lost rank 2 (stage 0, row 1): killed by signal 9 (SIGKILL); rank [013] (stage [01], row [01]) was in step [0-9]*: " "$TMP/$name.lines" ||
    { fail "$name: lines other than 'lost rank 2'"; cat "$TMP/$name".err.*; }
  for f in "$TMP/$name".err.*; do
    [ "$(grep -c '^axonn: error: ' "$f")" -le 1 ] || fail "$name: $f has more than one line"
  done
  no_leftovers "$name"
  echo "  $name: mpiexec $rc, $(wc -l <"$TMP/$name.lines") line(s) from the survivors"
fi

# ------------------------------------------------------------------ (e) SIGINT to one rank
name=interrupted
start_job
timeout -k 10 $LIMIT $MPIEXEC -n 4 "$AXONN" train $COMMON $GRID --steps 100000 \
  --metrics "$TMP/$name.csv" >"$TMP/$name.log" 2>&1 &
job=$!
wait_steps "$TMP/$name.csv" 3
kill -INT "$(rank_pid "$name" 1)"
wait $job; rc=$?
[ $rc -eq 130 ] || { fail "$name: exit $rc, expected 130"; cat "$TMP/$name.log"; }
[ "$(errors "$name" | grep -c "^axonn: error: rank 1 (stage 1, row 0) interrupted by SIGINT in step [0-9]*: ")" -eq 1 ] ||
  { fail "$name: not one 'interrupted' line"; cat "$TMP/$name.log"; }
! errors "$name" | grep -v "interrupted by SIGINT\|lost rank 1 " ||
  { fail "$name: unexpected lines"; cat "$TMP/$name.log"; }
no_leftovers "$name"
echo "  $name: exit $rc after $(took) s"

# ------------------------------------------------------------------ (f) bad values
for bad in -1 nan abc inf; do
  "$AXONN" train --step-timeout "$bad" --steps 1 >"$TMP/bad.out" 2>"$TMP/bad.err"
  rc=$?
  [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/bad.err")" -eq 1 ] &&
    grep -q "^axonn: error: --step-timeout \(expects a number, got '$bad'\|$bad is out of range\)" "$TMP/bad.err" ||
    { fail "--step-timeout $bad: exit $rc, stderr:"; cat "$TMP/bad.err"; }
done
"$AXONN" train $GRID --debug-hang-rank 4 >"$TMP/bad.out" 2>"$TMP/bad.err"
[ $? -eq 1 ] && grep -q "debug-hang-rank 4 does not exist with 4 rank(s)" "$TMP/bad.err" ||
  { fail "--debug-hang-rank 4 on 4 ranks accepted"; cat "$TMP/bad.err"; }

finish
