#!/bin/sh
# optimus-bench.sh — Optimus-CC's techniques on the pipeline over an EMULATED link (two or four
# virtual nodes of one rank: --ranks-per-node 1 --emulate-link BW,5us): for each grid and link,
# the step time (the summary's median-free mean batch time over the timed steps, max over
# ranks), the validation loss after the run, and each stage's idle time from the trace (waits
# that ended with an activation and with a gradient, as a share of the traced steps), for
#   base      uncompressed
#   cb        --compress-backprop powersgd:rank=R (lazy error propagation, epilogue only)
#   cb_fe     + --fuse-embedding-sync 1
#   cb_fe_sc  + --compress powersgd:rank=R2,ef=1 --compress-stages 0.5
# Runs are interleaved (base, cb, cb_fe, cb_fe_sc, then again) REPEAT times and the median of
# the runs' step times is printed. Figures are EMULATED (docs/emulator.md); the machine's cores
# are shared by every rank. Prints one table row per (grid, link, config); also a JSON line per
# row into OUT/optimus.jsonl.
# Usage: scripts/optimus-bench.sh [OUT_DIR]  (AXONN, MPIEXEC, GRIDS "PxD ...", LINKS, LAYERS,
# HIDDEN, SEQ, BATCH, MICRO, STEPS, REPEAT, RANK, SC_RANK override)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${1:-build/optimus-bench}
GRIDS=${GRIDS:-"2x1 4x1 2x2"}
LINKS=${LINKS:-"1Gbps 10Gbps"}
LAYERS=${LAYERS:-8}; HIDDEN=${HIDDEN:-512}; SEQ=${SEQ:-128}; BATCH=${BATCH:-8}; MICRO=${MICRO:-1}
STEPS=${STEPS:-6}; REPEAT=${REPEAT:-3}; RANK=${RANK:-16}; SC_RANK=${SC_RANK:-32}
mkdir -p "$OUT"
"$AXONN" prep --input data/tinyshakespeare.txt --output "$OUT/shak" >/dev/null || exit 1
: >"$OUT/optimus.jsonl"
CB="--compress-backprop powersgd:rank=$RANK"
config_flags() {
  case $1 in
    base) echo "" ;;
    cb) echo "$CB" ;;
    cb_fe) echo "$CB --fuse-embedding-sync 1" ;;
    cb_fe_sc) echo "$CB --fuse-embedding-sync 1 --compress powersgd:rank=$SC_RANK,ef=1 \
--compress-stages 0.5 --compress-min-bytes 4K" ;;
  esac
}
# idle NAME: per stage, the share of the traced steps spent waiting for activations / gradients
idle() {
  python3 - "$OUT/$1.trace.json" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
step, act, grad = {}, {}, {}
for e in ev:
    if e.get("ph") != "X": continue
    t, d = e["tid"], e["dur"]
    if e["name"] == "step": step[t] = step.get(t, 0) + d
    elif e["name"] == "recv-wait": act[t] = act.get(t, 0) + d
    elif e["name"] == "recv-wait-gradient": grad[t] = grad.get(t, 0) + d
print(" ".join("%d:%.0f%%/%.0f%%" % (t, 100 * act.get(t, 0) / step[t], 100 * grad.get(t, 0) / step[t])
               for t in sorted(step)))
PY
}
printf "%-5s %-7s %-9s %10s %9s  %s\n" grid link config "step (s)" "val loss" \
  "idle per rank: activation/gradient waits (% of step)"
for grid in $GRIDS; do
  P=${grid%x*}; D=${grid#*x}; np=$((P * D))
  for link in $LINKS; do
    for k in $(seq 1 "$REPEAT"); do
      for cfg in base cb cb_fe cb_fe_sc; do
        name="${grid}_${link}_${cfg}_$k"
        # shellcheck disable=SC2046
        $MPIEXEC -n "$np" "$AXONN" train --data "$OUT/shak_train.bin" --val-data "$OUT/shak_val.bin" \
          --layers "$LAYERS" --hidden "$HIDDEN" --heads 8 --seq "$SEQ" --batch "$BATCH" \
          --micro-batch "$MICRO" --g-inter "$P" --g-data "$D" --steps "$STEPS" --timing-skip 2 \
          --timing-steps $((STEPS - 2)) --val-every 0 --val-steps 2 --threads 1 --quiet \
          --ranks-per-node 1 --emulate-link "$link,5us" --trace "$OUT/$name.trace.json" \
          --trace-steps 3-$STEPS --summary "$OUT/$name.json" $(config_flags $cfg) </dev/null \
          >"$OUT/$name.log" 2>&1 || { echo "$name: failed (see $OUT/$name.log)"; exit 1; }
      done
    done
    for cfg in base cb cb_fe cb_fe_sc; do
      times=""
      for k in $(seq 1 "$REPEAT"); do
        times="$times $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["timing"]["batch_time_s"])' "$OUT/${grid}_${link}_${cfg}_$k.json")"
      done
      med=$(echo $times | tr ' ' '\n' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
      name="${grid}_${link}_${cfg}_1"
      val=$(python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["run"]["final_val_loss"])' "$OUT/$name.json")
      printf "%-5s %-7s %-9s %10.3f %9s  %s   (runs:%s)\n" "$grid" "$link" "$cfg" "$med" "$val" "$(idle "$name")" "$times"
      echo "{\"grid\":\"$grid\",\"link\":\"$link\",\"config\":\"$cfg\",\"step_s\":$med,\"val_loss\":$val,\"emulated\":true}" >>"$OUT/optimus.jsonl"
    done
  done
done
