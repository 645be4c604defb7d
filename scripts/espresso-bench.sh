#!/bin/sh
# espresso-bench.sh — issue 20's benchmark, over EMULATED 10 Gb/s links, one rank per node:
#  1. The sum of a row-sparse embedding gradient (rows of 768 floats) on 2 and 4 ranks, Zen vs
#     the dense ring all-reduce vs the all-gather of rows, for vocabularies of 256, 8192 and
#     50257 and 2048 to 32768 Zipf tokens per rank (`axonn bench sparse-sync`).
#  2. The step of a mid model (--layers 4 --hidden 512, 4 data-parallel ranks): uncompressed,
#     layer-wise onebit on every tensor (--compress onebit:ef=1 --compress-min-bytes 0) and
#     --compress auto (Cupcake's groups, Espresso's strategy, onebit); each repeat runs the
#     three back to back, a configuration's time is the median over repeats of the run
#     summary's batch time.
#  3. The same model on two nodes of two ranks: no compression, Espresso's choice, and every
#     scheme the gradient sum runs fixed for every group (--compress-scheme: CaSync ring, PS,
#     all-to-all + all-gather, all-gather; flat and two-level; the plain two-level all-reduce).
# Figures are EMULATED: ranks share one machine's memory and cores.
#   usage: [STEPS=8] [REPEAT=3] [ITERS=3] [OUT=dir] [PARTS="sparse step schemes"]
#          scripts/espresso-bench.sh [AXONN]
set -eu
AXONN=${1:-bin/axonn}
STEPS=${STEPS:-8}
REPEAT=${REPEAT:-3}
ITERS=${ITERS:-3}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${OUT:-$(mktemp -d /tmp/axonn-espresso-bench-XXXXXX)}
mkdir -p "$OUT"
NET="--ranks-per-node 1 --emulate-link 10Gbps"
PARTS=${PARTS:-sparse step schemes}
wants() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

for np in 2 4; do
  wants sparse || break
  echo "== embedding sync, $np ranks"
  # shellcheck disable=SC2086
  $MPIEXEC -n $np "$AXONN" bench sparse-sync $NET --iters "$ITERS" --json "$OUT/sparse.jsonl" \
    </dev/null
done

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
batch_ms() { python3 -c 'import json,sys; print(1e3 * json.load(open(sys.argv[1]))["timing"]["batch_time_s"])' "$1"; }
config_flags() {
  case $1 in
    none) echo "" ;;
    layerwise) echo "--compress onebit:ef=1 --compress-min-bytes 0" ;;
    auto) echo "--compress auto --compress-codec onebit:ef=1" ;;
  esac
}
MODEL="--layers 4 --hidden 512 --heads 8 --seq 64 --vocab 256 --batch 16 --g-data 4"
COMMON="$MODEL --steps $STEPS --val-steps 0 --threads 1 --timing-skip 2 $NET"
if wants step; then
echo "== step time, 4 data-parallel ranks, $MODEL"
for r in $(seq "$REPEAT"); do
  for c in none layerwise auto; do
    # shellcheck disable=SC2086
    $MPIEXEC -n 4 "$AXONN" train $COMMON $(config_flags $c) --summary "$OUT/$c.$r.json" \
      >"$OUT/$c.$r.log" 2>&1 </dev/null || { echo "$c: failed (see $OUT/$c.$r.log)"; exit 1; }
    batch_ms "$OUT/$c.$r.json" >>"$OUT/$c.ms"
  done
done
none=$(median <"$OUT/none.ms")
for c in none layerwise auto; do
  m=$(median <"$OUT/$c.ms")
  awk -v c="$c" -v m="$m" -v n="$none" -v all="$(tr '\n' ' ' <"$OUT/$c.ms")" 'BEGIN {
    printf "  %-10s batch %8.1f ms (median of %s) %5.2fx vs none\n", c, m, all, n / m }'
done
grep -h "^  \(fusion\|strategy\)" "$OUT/auto.1.log" | sed 's/^/  auto: /'
fi

# 3. Every scheme the gradient sum runs, fixed for every group (--compress-scheme), against
#    Espresso's choice and no compression, on two nodes of two ranks (the link between them
#    emulated, the one inside a node not).
NODES="--ranks-per-node 2 --emulate-link 10Gbps"
SCHEMES="none auto cpu/flat/casync-ring cpu/flat/casync-ps cpu/flat/a2a+ag cpu/flat/ag \
  plain/2l/ar-ring cpu/2l/casync-ring cpu/2l/a2a+ag cpu/2l/ag"
COMMON="$MODEL --steps $STEPS --val-steps 0 --threads 1 --timing-skip 2 $NODES"
if wants schemes; then
echo "== step time per scheme, 2 nodes of 2 ranks, $MODEL"
for r in $(seq "$REPEAT"); do
  for s in $SCHEMES; do
    f=$(echo "$s" | tr '/+' '__')
    case $s in
      none) flags="" ;;
      auto) flags="--compress auto --compress-codec onebit:ef=1" ;;
      *) flags="--compress auto --compress-codec onebit:ef=1 --compress-scheme $s" ;;
    esac
    # shellcheck disable=SC2086
    $MPIEXEC -n 4 "$AXONN" train $COMMON $flags --summary "$OUT/s_$f.$r.json" \
      >"$OUT/s_$f.$r.log" 2>&1 </dev/null || { echo "$s: failed (see $OUT/s_$f.$r.log)"; exit 1; }
    batch_ms "$OUT/s_$f.$r.json" >>"$OUT/s_$f.ms"
  done
done
none=$(median <"$OUT/s_none.ms")
for s in $SCHEMES; do
  f=$(echo "$s" | tr '/+' '__')
  m=$(median <"$OUT/s_$f.ms")
  awk -v c="$s" -v m="$m" -v n="$none" -v all="$(tr '\n' ' ' <"$OUT/s_$f.ms")" 'BEGIN {
    printf "  %-20s batch %8.1f ms (median of %s) %5.2fx vs none\n", c, m, all, n / m }'
done
grep -h "^  strategy" "$OUT/s_auto.1.log" | sed 's/^/  auto: /'
fi
echo "(logs and JSON in $OUT)"
