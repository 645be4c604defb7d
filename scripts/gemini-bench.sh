#!/bin/sh
# gemini-bench.sh — issue 19's benchmark: in-memory checkpoints (Gemini) on 4 ranks as 2
# virtual nodes of 2 joined by an EMULATED 10 Gb/s link, a --layers 4 --hidden 512 model.
#  1. Step time with --memory-checkpoint-every 1 --replicas 2 against none, on 2x2 and 1x4 (the
#     issue's grids; rank r trains stage r mod P, so each node of 2 ranks already holds every
#     stage and no replica travels) and on 4x1 (node 0 trains stages 0-1, node 1 stages 2-3: each
#     sends its two stage files to the other), with the replicas in the link's idle spans (the
#     default) and all at the end of the step:
#     each repeat runs every configuration back to back; a configuration's time is the median
#     over repeats of the run summary's batch time (steps SKIP+1..STEPS, all of them: the
#     summary's own default would time 10). The default SKIP=4 leaves out the copies that fill
#     each of the three slots for the first time (steps 1-3): the pages of a slot's files are
#     allocated once, and later copies write over them in place.
#  2. Retrieval after a rank is killed (SIGKILL) as step 7 begins, on 2x2: from each node's own
#     memory, from the peer's replicas (the dead node's memory deleted), and from the file
#     checkpoint (--checkpoint-every 4 in OUT, on this machine's disk: not remote storage); the
#     seconds the resume printed, and the lost work (steps done that the restart redoes).
#  3. TRAVEL=1 instead (issue 48): only grids whose nodes lack stages: 4x1 on 2 virtual nodes
#     (--ranks-per-node 2) and on 4 (--ranks-per-node 1), where replicas cross the link, and 2x2
#     with one rank a node (its data-parallel rows hold each stage on two nodes and the replica
#     groups follow them, so nothing crosses: the nodes' own copies alone), over EMULATED LINKS (default "10Gbps 100Gbps"), checkpointing every
#     step with the idle-span schedule against none, the two alternating: per configuration
#     the median step time, the overhead, the replica bytes a step sent in idle spans and
#     outside them (the summary's memory_checkpoints), the copies late, the checkpoints
#     skipped and the interval taken.
# Figures are EMULATED: ranks share one machine's memory and cores.
# BATCH (default 8 sequences of 64 tokens) sets the step's compute against the fixed bytes of a
# checkpoint (the model's state): the overhead is the replicas' copies over the step's time.
#   usage: [STEPS=12] [SKIP=4] [REPEAT=3] [BATCH=8] [GRIDS="2x2 1x4 4x1"] [RETRIEVAL_ONLY=1 | RETRIEVAL=0]
#          [TRAVEL=1 [LINKS="10Gbps 100Gbps"] [SHAPES="4x1/2 4x1/1 2x2/1"]] [OUT=dir]
#          scripts/gemini-bench.sh [AXONN]
set -eu
AXONN=${1:-bin/axonn}
STEPS=${STEPS:-12}
SKIP=${SKIP:-4}
REPEAT=${REPEAT:-3}
GRIDS=${GRIDS:-"2x2 1x4 4x1"}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d /tmp/axonn-gemini-bench-XXXXXX)}
SHM=${SHM:-/dev/shm}
mkdir -p "$OUT"
NAME=gemini-bench-$$
trap 'rm -rf "$SHM/axonn-$NAME"' EXIT
MODEL="--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 256"
BASE="$MODEL --batch ${BATCH:-8} --steps $STEPS --val-steps 0 --threads 1 --lr-schedule constant \
  --warmup 0 --timing-skip $SKIP --timing-steps $((STEPS - SKIP)) --run-name $NAME"
COMMON="$BASE --ranks-per-node 2 --emulate-link 10Gbps"

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
batch_ms() { python3 -c 'import json,sys; print(1e3 * json.load(open(sys.argv[1]))["timing"]["batch_time_s"])' "$1"; }
# replica MB a step, all ranks (the summary's checkpoint_replica counter)
replica_mb() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["communication"]["per_step"]["sum"]["checkpoint_replica"]["bytes"] / 1e6)' "$1"; }

# grid name -> flags
grid_flags() {
  case $1 in
    2x2) echo "--g-inter 2 --g-data 2" ;; 1x4) echo "--g-data 4" ;; 4x1) echo "--g-inter 4" ;;
  esac
}
# config name -> flags
config_flags() {
  case $1 in
    none) echo "" ;;
    idle) echo "--memory-checkpoint-every 1 --replicas 2 --replica-schedule idle" ;;
    end) echo "--memory-checkpoint-every 1 --replicas 2 --replica-schedule end" ;;
  esac
}

: >"$OUT/times.txt"
if [ "${TRAVEL:-0}" = 1 ]; then
  # the summary's memory_checkpoints, per step timed: MB in spans, MB outside, late, skipped, interval
  ckpt_fields() {
    python3 -c 'import json,sys
d = json.load(open(sys.argv[1])); m = d.get("memory_checkpoints"); n = int(sys.argv[2])
print("%.2f %.2f %d %d %d" % (m["replica_bytes_in_spans"] / 1e6 / n, m["replica_bytes_outside_spans"] / 1e6 / n,
      m["late"], m["skipped"], m["interval"]) if m else "- - - - -")' "$1" "$STEPS"
  }
  LINKS=${LINKS:-"10Gbps 100Gbps"}
  SHAPES=${SHAPES:-"4x1/2 4x1/1 2x2/1"} # grid / ranks a node
  MEM="--memory-checkpoint-every 1 --replicas 2 --replica-schedule idle"
  for rep in $(seq "$REPEAT"); do
    for link in $LINKS; do
      for shape in $SHAPES; do
        grid=${shape%/*} rpn=${shape#*/}
        for cfg in none idle; do
          log="$OUT/$grid-rpn$rpn-$link-$cfg-$rep"
          flags=""; [ $cfg = idle ] && flags=$MEM
          # shellcheck disable=SC2046,SC2086
          $MPIEXEC -n 4 "$AXONN" train $BASE $(grid_flags $grid) --ranks-per-node $rpn \
            --emulate-link $link $flags --quiet --summary "$log.json" >"$log.log" 2>&1 </dev/null
          echo "$link $grid/$rpn $cfg $(batch_ms "$log.json") $(ckpt_fields "$log.json")" >>"$OUT/times.txt"
        done
      done
    done
  done
  echo "step time (ms), median of $REPEAT alternating runs, EMULATED links, 4 ranks; replica MB a"
  echo "step (all ranks, the last copy's flush at the end included), late copies, skipped, interval:"
  printf '%-7s %-7s %9s %9s %9s %9s %9s %5s %7s %8s\n' link grid/rpn none idle overhead \
    "MB spans" "MB out" late skipped interval
  for link in $LINKS; do
    for shape in $SHAPES; do
      sel() { awk -v l=$link -v g=$shape -v c=$1 -v f=$2 '$1 == l && $2 == g && $3 == c { print $f }' "$OUT/times.txt" | median; }
      n=$(sel none 4) i=$(sel idle 4)
      printf '%-7s %-7s %9.1f %9.1f %+8.1f%% %9.2f %9.2f %5s %7s %8s\n' $link $shape "$n" "$i" \
        "$(echo "$i $n" | awk '{ print 100 * ($1 / $2 - 1) }')" "$(sel idle 5)" "$(sel idle 6)" \
        "$(sel idle 7)" "$(sel idle 8)" "$(sel idle 9)"
    done
  done
  echo "logs: $OUT"
  exit 0
fi
[ "${RETRIEVAL_ONLY:-0}" = 1 ] && REPEAT=0
for rep in $(seq "$REPEAT"); do
  for grid in $GRIDS; do
    for cfg in none idle end; do
      log="$OUT/$grid-$cfg-$rep"
      # shellcheck disable=SC2046,SC2086
      $MPIEXEC -n 4 "$AXONN" train $COMMON $(grid_flags $grid) $(config_flags $cfg) --quiet \
        --summary "$log.json" >"$log.log" 2>&1 </dev/null
      echo "$grid $cfg $(batch_ms "$log.json") $(replica_mb "$log.json")" >>"$OUT/times.txt"
    done
  done
done

[ "$REPEAT" -gt 0 ] && echo "step time (ms), median of $REPEAT, EMULATED 10 Gb/s, 2 virtual nodes of 2 ranks:"
[ "$REPEAT" -gt 0 ] && printf '%-5s %10s %10s %10s %12s %12s\n' grid none idle end "idle/none" "end/none"
for grid in $([ "$REPEAT" -gt 0 ] && echo $GRIDS); do
  n=$(awk -v g=$grid '$1 == g && $2 == "none" { print $3 }' "$OUT/times.txt" | median)
  i=$(awk -v g=$grid '$1 == g && $2 == "idle" { print $3 }' "$OUT/times.txt" | median)
  e=$(awk -v g=$grid '$1 == g && $2 == "end" { print $3 }' "$OUT/times.txt" | median)
  printf '%-5s %10.1f %10.1f %10.1f %+11.1f%% %+11.1f%%\n' $grid "$n" "$i" "$e" \
    "$(echo "$i $n" | awk '{ print 100 * ($1 / $2 - 1) }')" \
    "$(echo "$e $n" | awk '{ print 100 * ($1 / $2 - 1) }')"
  echo "  replicas sent per step (MB, all ranks): $(awk -v g=$grid '$1 == g && $2 == "idle" { print $4 }' "$OUT/times.txt" | median)"
done

[ "${RETRIEVAL:-1}" = 0 ] && exit 0
# retrieval on 2x2: kill rank 3 as step 7 begins (steps 1-6 done), then resume
G="--g-inter 2 --g-data 2"
killed() {
  # shellcheck disable=SC2086
  if $MPIEXEC -n 4 "$AXONN" train $COMMON $G "$@" --debug-hang-rank 3 --debug-hang-step 7 \
      --debug-hang-mode kill >"$OUT/killed.log" 2>&1 </dev/null; then
    echo "gemini-bench: the run to be killed finished" >&2; exit 1
  fi
}
MEM="--memory-checkpoint-every 1 --replicas 2"
echo "retrieval after rank 3 is killed as step 7 begins (2x2; steps 1-6 done):"
for source in local peer; do
  killed $MEM
  [ $source = peer ] && rm -rf "$SHM/axonn-$NAME/node-1"
  # shellcheck disable=SC2086
  $MPIEXEC -n 4 "$AXONN" train $COMMON $G $MEM --resume >"$OUT/resume-$source.log" 2>&1 </dev/null
  line=$(grep "recovered from memory" "$OUT/resume-$source.log")
  step=$(echo "$line" | sed 's/.*step \([0-9]*\) recovered.*/\1/')
  secs=$(echo "$line" | sed 's/.* in \([0-9.]*\) s:.*/\1/')
  echo "  $source memory: $secs s, step $step, lost work $((6 - step)) step(s)  [$line]"
done
rm -rf "$SHM/axonn-$NAME" "$OUT/ck"
killed --checkpoint-dir "$OUT/ck" --checkpoint-every 4
# shellcheck disable=SC2086
$MPIEXEC -n 4 "$AXONN" train $COMMON $G --checkpoint-dir "$OUT/ck" --checkpoint-every 4 --resume \
  >"$OUT/resume-files.log" 2>&1 </dev/null
line=$(grep "resume: continuing from" "$OUT/resume-files.log")
step=$(echo "$line" | sed 's/.*(step \([0-9]*\)).*/\1/')
secs=$(echo "$line" | sed 's/.*found and read in \([0-9.]*\) s.*/\1/')
echo "  files (--checkpoint-every 4, local disk): $secs s, step $step, lost work $((6 - step)) step(s)"
echo "logs: $OUT"
