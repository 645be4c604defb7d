#!/bin/sh
# espresso-validate.sh — Espresso's predicted sync time of a step against the measured one
# (issue 47, item 4; docs/compression.md, "Espresso's prediction against measurement"): for
# 1x2, 1x4 and 2x2 (one rank a node, an EMULATED link) and two models, train with
# `--compress auto` (Cupcake's groups, Espresso's strategy; onebit) and `--trace`, and compare
# rank 0's predicted sync over every group (the header's "sync predicted X ms for every
# group") with the median over the traced steps of rank 0's data-parallel sum (the trace's
# `allreduce` events of its chunks: their start, where the first encodes run, and their wait),
# timed from the moment the last rank of its group starts it (the model
# has the ranks leave the backward together; the wait for a late rank is not the sum's). Prints one row per case and the error against the target
# (15%). Not part of `make check`: minutes long, and its figures depend on the machine's load
# (say so with them).
# EXTRA adds flags to every run (EXTRA="--dp-sync-early 1": the sum starts in the last
# backward, Espresso plans on the stage's measured timeline, and both figures count what is
# left of the sum after the backward).
#   usage: [LINK=1Gbps,20us] [STEPS=12] [REPS=3] [OUT=dir] [CASES="1x2-a ..."] [EXTRA=flags]
#          scripts/espresso-validate.sh [AXONN]
set -u
AXONN=${1:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
LINK=${LINK:-1Gbps,20us}
STEPS=${STEPS:-12}
REPS=${REPS:-3}
OUT=${OUT:-$(mktemp -d /tmp/axonn-espresso-validate-XXXXXX)}
mkdir -p "$OUT"
MODEL_a="--layers 2 --hidden 64 --heads 2 --seq 32 --batch 8 --micro-batch 2"
MODEL_b="--layers 4 --hidden 256 --heads 4 --seq 64 --batch 8 --micro-batch 2"
COMMON="--threads 1 --val-steps 0 --steps $STEPS --trace-steps 4-$STEPS --compress auto \
  --compress-codec onebit --ranks-per-node 1 --emulate-link $LINK ${EXTRA:-}"

# LOG TRACE: "predicted_ms measured_ms" of rank 0 (the median over the traced steps)
figures() {
  python3 - "$1" "$2" <<'EOF'
import json, re, statistics, sys
pred = None
for line in open(sys.argv[1]):
    m = re.search(r"sync predicted ([0-9.]+) ms for every group", line)
    if m: pred = float(m.group(1))
d = json.load(open(sys.argv[2]))
ev = d["traceEvents"] if isinstance(d, dict) else d
# rank 0's data-parallel group: the ranks of its stage (thread names "rank R (stage S, row D)")
stage0 = {e["tid"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"
          and "(stage 0," in e["args"]["name"]}
# a rank's data-parallel sum of a step: its chunks' all-reduce events (their start, which
# runs the first encodes, and the wait; the tied embedding's sums have chunk -1)
steps = {}
for e in ev:
    if e.get("name") == "allreduce" and e.get("tid") in stage0 and e["args"]["mb"] >= 0:
        s, t = steps.setdefault(e["args"]["step"], {}).get(e["tid"], (float("inf"), 0))
        steps[e["args"]["step"]][e["tid"]] = (min(s, e["ts"]), max(t, e["ts"] + e["dur"]))
# a step's sum: from the last rank's start (Espresso's model has the ranks leave the backward
# together; a rank that comes late is imbalance, not the sum) to rank 0's end
dur = [(v[0][1] - max(s for s, _ in v.values())) / 1e3 for v in steps.values()
       if 0 in v and len(v) == len(stage0)]
print(pred if pred is not None else "nan", statistics.median(dur) if dur else "nan")
EOF
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "espresso-validate: $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); EMULATED $LINK, one rank a node; $REPS repetitions of $STEPS steps${EXTRA:+; $EXTRA}"
printf '%-5s %-5s %13s %12s %8s %s\n' grid model predicted_ms measured_ms error target
for g in 1x2 1x4 2x2; do
  for m in a b; do
    case " ${CASES:-$g-$m} " in *" $g-$m "*) ;; *) continue ;; esac
    P=${g%x*} D=${g#*x}
    eval "model=\$MODEL_$m"
    : >"$OUT/$g-$m.pred"
    : >"$OUT/$g-$m.meas"
    r=0
    while [ $r -lt "$REPS" ]; do
      r=$((r + 1))
      # shellcheck disable=SC2086
      $MPIEXEC -n $((P * D)) "$AXONN" train --g-inter "$P" --g-data "$D" $model $COMMON \
        --trace "$OUT/$g-$m-$r.json" >"$OUT/$g-$m-$r.log" 2>&1 </dev/null ||
        { echo "$g $m: the run failed, see $OUT/$g-$m-$r.log"; continue; }
      set -- $(figures "$OUT/$g-$m-$r.log" "$OUT/$g-$m-$r.json")
      echo "$1" >>"$OUT/$g-$m.pred"
      echo "$2" >>"$OUT/$g-$m.meas"
    done
    p=$(median <"$OUT/$g-$m.pred") s=$(median <"$OUT/$g-$m.meas")
    awk -v g="$g" -v m="$m" -v p="$p" -v s="$s" 'BEGIN {
      e = (s > 0) ? 100 * (p - s) / s : 0
      printf "%-5s %-5s %13.3f %12.3f %+7.1f%% %s\n", g, m, p, s, e,
        (e <= 15 && e >= -15) ? "within 15%" : "NOT within 15%" }'
  done
done
echo "(files in $OUT)"
