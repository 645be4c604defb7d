#!/bin/sh
# bench-grid.sh — issue 3's benchmark: a GPT-2-small-like model (L=12, C=768 unless
# overridden) on 2 ranks with one thread each against 1 rank with one thread: speedup of 1x2
# (data parallel) and of 2x1 (pipeline, M micro-batches), and the pipeline's idle fraction
# measured from the trace against the bubble (P-1)/(m+P-1). Medians over the timed steps.
#   usage: scripts/bench-grid.sh [AXONN] [MODEL FLAGS...]
set -eu
AXONN=${1:-bin/axonn}
[ $# -gt 0 ] && shift
MODEL=${*:-"--layers 12 --hidden 768 --heads 12 --seq 128 --vocab 256"}
M=${M:-8}
STEPS=${STEPS:-4}
MPIEXEC=${MPIEXEC:-mpiexec}
TMP=$(mktemp -d /tmp/axonn-bench-grid-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
COMMON="$MODEL --batch $M --steps $STEPS --val-steps 0 --threads 1 --quiet --lr-schedule constant --warmup 0"

# median batch_ms of steps 2.. from a metrics CSV
median_ms() { awk -F, 'NR > 2 { print $4 }' "$1" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

$MPIEXEC -n 1 "$AXONN" train $COMMON --micro-batch 1 --metrics "$TMP/1x1.csv" >/dev/null
$MPIEXEC -n 2 "$AXONN" train $COMMON --g-data 2 --micro-batch 1 --metrics "$TMP/1x2.csv" >/dev/null
$MPIEXEC -n 2 "$AXONN" train $COMMON --g-inter 2 --micro-batch 1 --pipeline-limit 2 \
  --metrics "$TMP/2x1.csv" --trace "$TMP/2x1.json" --trace-steps 2-$STEPS >/dev/null
t11=$(median_ms "$TMP/1x1.csv"); t12=$(median_ms "$TMP/1x2.csv"); t21=$(median_ms "$TMP/2x1.csv")
echo "model: $MODEL; batch $M sequences, micro-batch 1, one thread per rank; median of steps 2-$STEPS"
awk -v a="$t11" -v b="$t12" -v c="$t21" 'BEGIN {
  printf "1x1 %.0f ms | 1x2 (data) %.0f ms: speedup %.2fx | 2x1 (pipeline, 8 micro-batches) %.0f ms: speedup %.2fx\n", a, b, a / b, c, a / c }'
/usr/bin/python3 - "$TMP/2x1.json" "$M" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
m = int(sys.argv[2]); P = 2
for tid in range(P):
    mine = [e for e in ev if e.get("tid") == tid and e.get("ph") == "X"]
    pipe = sum(e["dur"] for e in mine if e["name"] == "pipeline")
    busy = sum(e["dur"] for e in mine if e["name"] in ("forward", "backward"))
    print("stage %d: idle %.1f%% of the pipeline phase (busy %.0f of %.0f ms); bubble (P-1)/(m+P-1) = %.1f%%"
          % (tid, 100 * (1 - busy / pipe), busy / 1e3, pipe / 1e3, 100 * (P - 1) / (m + P - 1)))
PY
