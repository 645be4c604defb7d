#!/bin/sh
# tp-bench.sh — issue 18's benchmark: every 4-rank grid Gx x Gy x Gz x G_data (G_inter 1: the
# pipeline does not compose with tensor parallelism yet) of a --layers 4 --hidden 512 model on
# 2 virtual nodes of 2 ranks joined by an EMULATED 10 Gb/s link: the measured step time against
# the communication model's prediction for the same setup (a machine file of that link), the
# model's top 3 against the measured top 3; then OAR on against off on the measured best grid.
# Each repeat runs every grid back to back; a grid's time is the median over repeats of its
# median step (steps 2..STEPS). Figures are EMULATED: ranks share one machine's memory and cores.
#   usage: [STEPS=5] [REPEAT=3] [OUT=dir] scripts/tp-bench.sh [AXONN]
set -eu
AXONN=${1:-bin/axonn}
STEPS=${STEPS:-5}
REPEAT=${REPEAT:-3}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d /tmp/axonn-tp-bench-XXXXXX)}
mkdir -p "$OUT"
MODEL="--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 256"
COMMON="$MODEL --batch 8 --steps $STEPS --val-steps 0 --threads 1 --quiet --lr-schedule constant \
  --warmup 0 --ranks-per-node 2 --emulate-link 10Gbps"
# the emulated machine: 2 ranks a node; between nodes the emulated link; inside a node shared
# memory (nominal 5 GB/s: what MPICH's shared-memory path moves here, roughly)
cat >"$OUT/emulated.machine" <<'EOF'
name = emulated-10g
gpus_per_node = 2
intra_bw = 5GB/s
inter_bw = 10Gb/s
EOF

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
median_ms() { awk -F, 'NR > 2 { print $4 }' "$1" | median; }

GRIDS="1,1,1,4 2,1,1,2 1,2,1,2 1,1,2,2 2,2,1,1 2,1,2,1 1,2,2,1 4,1,1,1 1,4,1,1 1,1,4,1"
"$AXONN" plan --rank-grids --ranks 4 $MODEL --batch 8 --precision fp32 --max-inter 1 --top 0 \
  --machine "$OUT/emulated.machine" --json "$OUT/plan.json" >"$OUT/plan.txt"
echo "model: $MODEL, batch 8, fp32, one thread per rank; --ranks-per-node 2 --emulate-link 10Gbps (EMULATED)"
for r in $(seq "$REPEAT"); do
  for g in $GRIDS; do
    IFS=, read -r x y z d <<EOF
$g
EOF
    name="g$x$y$z$d"
    $MPIEXEC -n 4 "$AXONN" train $COMMON --gx "$x" --gy "$y" --gz "$z" --g-data "$d" \
      --metrics "$OUT/$name.csv" --summary "$OUT/$name.json" >/dev/null
    echo "$name $(median_ms "$OUT/$name.csv")" >>"$OUT/times.txt"
  done
done
# OAR on and off on the measured best grid
best=$(for g in $GRIDS; do IFS=, read -r x y z d <<EOF
$g
EOF
  n="g$x$y$z$d"; awk -v n="$n" '$1 == n { print $2 }' "$OUT/times.txt" | median | sed "s/^/$n /"
done | sort -k2 -g | head -1 | cut -d' ' -f1)
bx=$(echo "$best" | cut -c2); by=$(echo "$best" | cut -c3); bz=$(echo "$best" | cut -c4)
bd=$(echo "$best" | cut -c5)
for r in $(seq "$REPEAT"); do
  for oar in 1 0; do
    $MPIEXEC -n 4 "$AXONN" train $COMMON --gx "$bx" --gy "$by" --gz "$bz" --g-data "$bd" \
      --tp-oar "$oar" --metrics "$OUT/oar$oar.csv" --summary "$OUT/oar$oar-$r.json" >/dev/null
    echo "oar$oar $(median_ms "$OUT/oar$oar.csv")" >>"$OUT/times.txt"
  done
done
python3 - "$OUT" "$REPEAT" "$best" <<'PY'
import json, statistics, sys
out, repeat, best = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
for line in open(out + "/times.txt"):
    name, ms = line.split()
    times.setdefault(name, []).append(float(ms))
plan = json.load(open(out + "/plan.json"))["grids"]
pred = {"g%d%d%d%d" % (g["gx"], g["gy"], g["gz"], g["g_data"]): g["seconds"] for g in plan}
rows = sorted((n for n in times if n.startswith("g")), key=lambda n: statistics.median(times[n]))
print("grid (Gx Gy Gz Gd)  measured step ms (median of %d)  predicted comm ms  model rank" % repeat)
by_pred = sorted(pred, key=lambda n: pred[n])
for n in rows:
    print("  %s %s %s %s   %10.1f   %10.2f   %s" % (n[1], n[2], n[3], n[4], statistics.median(times[n]),
          pred.get(n, float("nan")) * 1e3, by_pred.index(n) + 1 if n in pred else "-"))
top_m, top_p = rows[:3], by_pred[:3]
print("measured top 3: %s; model's top 3: %s; in both: %d of 3" %
      (" ".join(top_m), " ".join(top_p), len(set(top_m) & set(top_p))))
on, off = statistics.median(times["oar1"]), statistics.median(times["oar0"])
def wait(f):
    s = json.load(open(f))["communication"]["tensor_parallel"]
    return sum(s[g]["wait_s"] for g in "xyz") * 1e3
w_on = statistics.median(wait("%s/oar1-%d.json" % (out, r)) for r in range(1, repeat + 1))
w_off = statistics.median(wait("%s/oar0-%d.json" % (out, r)) for r in range(1, repeat + 1))
print("OAR on %s: step %.1f ms (rank 0 blocked %.1f ms in tensor-parallel collectives); off: %.1f ms "
      "(%.1f ms blocked); hidden by OAR: %.1f ms of waiting, step %.1f%% faster" %
      (best, on, w_on, off, w_off, w_off - w_on, 100 * (off - on) / off))
PY
