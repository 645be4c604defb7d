#!/bin/sh
# tp-overlap-bench.sh — issue 50 item 2's benchmark: the seconds rank 0 is blocked in
# tensor-parallel collectives, for two builds (BEFORE and AFTER a change) on the Gz = 4 grids
# 1 x 1 x 4 (times 2 data-parallel rows) and 2 x 1 x 4, with the overlaps (OAR, ORS, OAG) all on
# and all off. 8 ranks as 4 virtual nodes of 2 joined by an EMULATED 10 Gb/s link; a
# --layers 4 --hidden 512 model, 16 sequences a step in micro-batches of 4 (2 a step per row on
# 1 x 1 x 4 x 2, 4 on 2 x 1 x 4). Each repeat runs every case back to back, the builds
# alternating; a case's figure is the median over repeats of the summary's blocked seconds per
# step (communication.tensor_parallel.{x,y,z}.wait_s, steps 1..STEPS) and of its median step
# (steps 2..STEPS). EMULATED, and the ranks share the machine's cores: run `uptime` alongside.
#   usage: [STEPS=5] [REPEAT=3] [OUT=dir] scripts/tp-overlap-bench.sh BEFORE_AXONN AFTER_AXONN
set -eu
BEFORE=$1
AFTER=$2
STEPS=${STEPS:-5}
REPEAT=${REPEAT:-3}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d /tmp/axonn-tp-overlap-XXXXXX)}
mkdir -p "$OUT"
: >"$OUT/runs.txt"
COMMON="--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 256 --batch 16 --micro-batch 4 \
  --steps $STEPS --val-steps 0 --threads 1 --quiet --lr-schedule constant --warmup 0 \
  --ranks-per-node 2 --emulate-link 10Gbps"
OFF="--tp-oar 0 --tp-ors 0 --tp-oag 0"
echo "uptime at start: $(uptime)"
for r in $(seq "$REPEAT"); do
  for grid in "114:--gz 4 --g-data 2" "214:--gx 2 --gz 4"; do
    g=${grid%%:*}
    for build in before after; do
      bin=$BEFORE
      [ "$build" = after ] && bin=$AFTER
      for ov in on off; do
        flags=""
        [ "$ov" = off ] && flags=$OFF
        name="$g-$build-$ov-$r"
        # shellcheck disable=SC2086
        $MPIEXEC -n 8 "$bin" train $COMMON ${grid#*:} $flags --metrics "$OUT/$name.csv" \
          --summary "$OUT/$name.json" </dev/null >/dev/null
        echo "$g $build $ov $r" >>"$OUT/runs.txt"
      done
    done
  done
done
echo "uptime at end: $(uptime)"
python3 - "$OUT" <<'PY'
import csv, json, statistics, sys
out = sys.argv[1]
rows = {}
for line in open(out + "/runs.txt"):
    g, build, ov, r = line.split()
    name = "%s/%s-%s-%s-%s" % (out, g, build, ov, r)
    tp = json.load(open(name + ".json"))["communication"]["tensor_parallel"]
    blocked = sum(tp[d]["wait_s"] for d in "xyz") * 1e3
    zag = tp["z"]["all_gather"]["calls"]
    steps = [float(x["batch_ms"]) for x in csv.DictReader(open(name + ".csv"))][1:]
    rows.setdefault((g, build, ov), []).append((blocked, statistics.median(steps), zag))
print("grid   build   overlaps  blocked ms/step (median; each repeat)        step ms (median)  AG_z calls/step")
for (g, build, ov), v in rows.items():
    print("%s  %-6s  %-3s       %7.1f  (%s)  %8.1f  %g" % (
        {"114": "1x1x4x2", "214": "2x1x4"}[g], build, ov,
        statistics.median(b for b, _, _ in v), " ".join("%.1f" % b for b, _, _ in v),
        statistics.median(s for _, s, _ in v), v[0][2]))
PY
