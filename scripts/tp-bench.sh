#!/bin/sh
# tp-bench.sh — issue 18's benchmark: every RANKS-rank grid G_inter x Gx x Gy x Gz x G_data
# (RANKS 4, the default, or 8) of a --layers 4 --hidden 512 model on virtual nodes of 2 ranks
# joined by an EMULATED 10 Gb/s link: the measured step time against the planner's predicted
# step (`plan --rank-grids`: communication, compute and the pipeline's bubble) for the same
# setup (a machine file of that link whose compute rate a rank is measured first: a 1-rank run
# of the model, its executed FLOP/s, times cores / RANKS where the ranks outnumber the cores;
# and whose latency per message step is measured too: a 4 KB ring all-reduce over the link;
# each grid run with the planner's micro-batch), the model's top 3 against the measured top 3
# (over all grids and over the G_inter 1 grids the paper's model is for; issue 48 item 4's
# target: at least 2 of 3 in both, and the measured best among the model's top 3); then the overlaps (OAR, ORS, OAG) all on, each off, and all off on the measured best
# grid that has Gz > 1 (ORS and OAG act on Z) and X or Y > 1 (OAR's all-reduce): steps, and the
# seconds rank 0 was blocked in tensor-parallel collectives. Each repeat runs every grid back to
# back; a grid's time is the median over repeats of its median step (steps 2..STEPS). Figures
# are EMULATED: ranks share one machine's memory and cores.
#   usage: [RANKS=4|8] [STEPS=5] [REPEAT=3] [OVERLAPS=1] [OUT=dir] scripts/tp-bench.sh [AXONN]
set -eu
AXONN=${1:-bin/axonn}
RANKS=${RANKS:-4}
OVERLAPS=${OVERLAPS:-1}
STEPS=${STEPS:-5}
REPEAT=${REPEAT:-3}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d /tmp/axonn-tp-bench-XXXXXX)}
mkdir -p "$OUT"
: >"$OUT/times.txt"
MODEL="--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 256"
COMMON="$MODEL --batch 8 --steps $STEPS --val-steps 0 --threads 1 --quiet --lr-schedule constant \
  --warmup 0 --ranks-per-node 2 --emulate-link 10Gbps"
# a rank's compute rate: one rank trains the model alone; its executed FLOP/s, shared by the
# ranks that outnumber the cores
$MPIEXEC -n 1 "$AXONN" train $MODEL --batch 8 --steps "$STEPS" --val-steps 0 --threads 1 --quiet \
  --lr-schedule constant --warmup 0 --summary "$OUT/rate.json" </dev/null >/dev/null
TFLOPS=$(python3 -c 'import json, sys
flops = json.load(open(sys.argv[1]))["throughput"]["flops_per_s"]
print("%.6g" % (flops / 1e12 * min(1.0, int(sys.argv[2]) / int(sys.argv[3]))))' \
  "$OUT/rate.json" "$(nproc)" "$RANKS")
# a collective's message step: a 4 KB ring all-reduce over all RANKS ranks and the same link
# (its time is latency-bound), divided by its 2 (RANKS - 1) steps; the planner charges it per
# ring step of every collective call (the machine's `latency`)
rm -f "$OUT/latency.jsonl"
$MPIEXEC -n "$RANKS" "$AXONN" bench allreduce --algos ring --min-bytes 4K --max-bytes 4K \
  --iters 50 --ranks-per-node 2 --emulate-link 10Gbps --json "$OUT/latency.jsonl" </dev/null >/dev/null
LATENCY_US=$(python3 -c 'import json, sys
row = json.loads(open(sys.argv[1]).readline())
print("%.4g" % (row["time_us"] / (2 * (int(sys.argv[2]) - 1))))' "$OUT/latency.jsonl" "$RANKS")
# the emulated machine: 2 ranks a node; between nodes the emulated link; inside a node shared
# memory (nominal 5 GB/s: what MPICH's shared-memory path moves here, roughly); a node's share
# of this host's cores (at least 1): where its 2 ranks outnumber them, the planner does not
# charge the pipeline's bubble (a waiting stage's core goes to the other ranks)
CORES=$(( $(nproc) * 2 / RANKS )); [ "$CORES" -ge 1 ] || CORES=1
cat >"$OUT/emulated.machine" <<EOF
name = emulated-10g
gpus_per_node = 2
intra_bw = 5GB/s
inter_bw = 10Gb/s
peak_tflops = $TFLOPS
efficiency = 1
cores_per_node = $CORES
latency = ${LATENCY_US}us
EOF

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
median_ms() { awk -F, 'NR > 2 { print $4 }' "$1" | median; }

"$AXONN" plan --rank-grids --ranks "$RANKS" $MODEL --batch 8 --precision fp32 --top 0 \
  --machine "$OUT/emulated.machine" --json "$OUT/plan.json" >"$OUT/plan.txt"
# one line per grid: name p x y z d micro-batch
python3 -c 'import json, sys
for g in json.load(open(sys.argv[1]))["grids"]:
    k = [g[f] for f in ("g_inter", "gx", "gy", "gz", "g_data", "micro_batch")]
    print("g%d%d%d%d%d" % tuple(k[:5]), *k)' "$OUT/plan.json" >"$OUT/grids.txt"
echo "model: $MODEL, batch 8, fp32, one thread per rank, $RANKS ranks on $(nproc) cores; --ranks-per-node 2 --emulate-link 10Gbps (EMULATED); compute priced at $TFLOPS TFLOP/s a rank, a collective's message step at $LATENCY_US us (measured)"
# train NAME P X Y Z D MB [flags...]: one run, its median step appended to times.txt
train() {
  name=$1 p=$2 x=$3 y=$4 z=$5 d=$6 mb=$7
  shift 7
  $MPIEXEC -n "$RANKS" "$AXONN" train $COMMON --g-inter "$p" --gx "$x" --gy "$y" --gz "$z" \
    --g-data "$d" --micro-batch "$mb" --metrics "$OUT/$name.csv" --summary "$OUT/$name.json" \
    "$@" </dev/null >/dev/null
  echo "$name $(median_ms "$OUT/$name.csv")" >>"$OUT/times.txt"
}
for r in $(seq "$REPEAT"); do
  while read -r name p x y z d mb; do
    train "$name" "$p" "$x" "$y" "$z" "$d" "$mb"
  done <"$OUT/grids.txt"
done
# the overlaps on the measured best grid with Gz > 1 and Gx or Gy > 1
[ "$OVERLAPS" = 1 ] || REPEAT_OV=0
best=$(while read -r name p x y z d mb; do
  [ "$z" -gt 1 ] && [ $((x * y)) -gt 1 ] || continue
  awk -v n="$name" '$1 == n { print $2 }' "$OUT/times.txt" | median | sed "s/^/$name /"
done <"$OUT/grids.txt" | sort -k2 -g | head -1 | cut -d' ' -f1)
set -- $(awk -v n="$best" '$1 == n' "$OUT/grids.txt")
shift
for r in $(seq "${REPEAT_OV:-$REPEAT}"); do
  train "ov_all-$r" "$@"
  train "ov_oar0-$r" "$@" --tp-oar 0
  train "ov_ors0-$r" "$@" --tp-ors 0
  train "ov_oag0-$r" "$@" --tp-oag 0
  train "ov_none-$r" "$@" --tp-oar 0 --tp-ors 0 --tp-oag 0
done
python3 - "$OUT" "$REPEAT" "$best" "$OVERLAPS" <<'PY'
import json, statistics, sys
out, repeat, best, overlaps = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
times = {}
for line in open(out + "/times.txt"):
    name, ms = line.split()
    times.setdefault(name.split("-")[0], []).append(float(ms))
plan = json.load(open(out + "/plan.json"))["grids"]
name = lambda g: "g%d%d%d%d%d" % (g["g_inter"], g["gx"], g["gy"], g["gz"], g["g_data"])
pred = {name(g): g["step_seconds"] for g in plan}
med = {n: statistics.median(v) for n, v in times.items()}
grids = [n for n in pred if n in med]
by_meas = sorted(grids, key=lambda n: med[n])
by_pred = sorted(grids, key=lambda n: pred[n])
print("grid (P Gx Gy Gz Gd)  measured step ms (median of %d)  predicted step ms  model rank" % repeat)
for n in by_meas:
    print("  %s %s %s %s %s   %10.1f   %10.2f   %d" % (n[1], n[2], n[3], n[4], n[5], med[n],
          pred[n] * 1e3, by_pred.index(n) + 1))
def top3(keep, label):
    m = [n for n in by_meas if keep(n)][:3]
    p = [n for n in by_pred if keep(n)][:3]
    print("%s: measured top 3 %s; model's top 3 %s; in both: %d of 3; the measured best %s "
          "the model's top 3" % (label, " ".join(m), " ".join(p), len(set(m) & set(p)),
                                 "in" if m and m[0] in p else "NOT in"))
top3(lambda n: True, "all grids")
top3(lambda n: n[1] == "1", "G_inter 1")
if not overlaps:
    sys.exit(0)
def blocked(tag):
    ms = []
    for r in range(1, repeat + 1):
        s = json.load(open("%s/ov_%s-%d.json" % (out, tag, r)))["communication"]["tensor_parallel"]
        ms.append(sum(s[g]["wait_s"] for g in "xyz") * 1e3)
    return statistics.median(ms)
print("overlaps on %s (P Gx Gy Gz Gd): step ms, ms rank 0 blocked in tensor-parallel collectives" % best)
none = med["ov_none"]
for tag, label in (("all", "all on"), ("oar0", "OAR off"), ("ors0", "ORS off"),
                   ("oag0", "OAG off"), ("none", "all off")):
    print("  %-8s %8.1f ms  blocked %7.1f ms  step %+5.1f%% against all off" %
          (label, med["ov_" + tag], blocked(tag), 100 * (none - med["ov_" + tag]) / none))
print("hidden by the overlaps together: %.1f ms of blocking per step" % (blocked("none") - blocked("all")))
PY
