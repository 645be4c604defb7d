#!/bin/sh
# simulate-validate.sh — the simulator against measurement on this machine (docs/simulator.md,
# "Validation"): for every model shape of SHAPES and every grid of 1x1, 2x1, 1x2, 2x2, 4x1,
# without and with --ranks-per-node 1 --emulate-link 1Gbps, REPS times: profile this machine
# (`axonn profile` with the case's options), simulate the run (`axonn simulate --profile`),
# train it for real (mpiexec), and compare the batch times (the summary's timing.batch_time_s).
# Prints a table per shape, one row per case: the medians over the repetitions, the error of
# the prediction, the target (10% without emulation, 15% with), each repetition's predicted/
# measured ms, and the load average before the case's first profile and after its last run
# (the figures depend on how loaded the machine is). Not part of `make check`: it takes minutes.
#
#   scripts/simulate-validate.sh [OUT_DIR]
#
# Environment: AXONN, MPIEXEC, REPS (3); SHAPES, a list of SEQxVOCABxHIDDENxMICRO (4 layers,
# hidden/64 heads, 8 micro-batches a step: batch 8 x MICRO); MODEL, the options of one model
# instead (the shape list is then ignored); GRIDS ("1x1 2x1 1x2 2x2 4x1"); LINKS ("none 1Gbps").
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
REPS=${REPS:-3}
OUT=${1:-build/simulate-validate}
SHAPES=${SHAPES:-128x512x256x1 32x256x256x1 64x4096x128x2 256x1024x192x1}
GRIDS=${GRIDS:-1x1 2x1 1x2 2x2 4x1}
LINKS=${LINKS:-none 1Gbps}
mkdir -p "$OUT"

batch_time() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['timing']['batch_time_s'])" "$1"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
load() { cut -d' ' -f1 /proc/loadavg; }

# The model options of shape SEQxVOCABxHIDDENxMICRO.
shape_model() {
  echo "$1" | awk -Fx '{printf "--layers 4 --hidden %d --heads %d --seq %d --vocab %d --batch %d --micro-batch %d", $3, $3 / 64, $1, $2, 8 * $4, $4}'
}

# One case: grid $1, link $2 (none | 1Gbps), model options $3, file prefix $4.
run_case() {
  g=$1; emu=$2; model=$3; prefix=$4
  P=${g%x*}; D=${g#*x}; np=$((P * D))
  common="$model --threads 1 --val-steps 0 --steps 11 --quiet --g-inter $P --g-data $D"
  link=""; target=10
  if [ "$emu" != none ]; then link="--ranks-per-node 1 --emulate-link $emu"; target=15; fi
  pred=""; meas=""; each=""; load0=$(load)
  for r in $(seq "$REPS"); do
    tag="$prefix-$g-$emu-$r"
    # on 2 ranks (rank 0 measures the compute alone, then both time the all-reduce between
    # them), each in a session of its own as mpiexec (hydra) starts every rank: Linux shares the
    # CPU between sessions (autogroup), and a profile in this script's session would share its
    # one share with whatever else runs there (docs/simulator.md, "Ranks that share a host")
    # shellcheck disable=SC2086
    $MPIEXEC -n 2 "$AXONN" profile $common $link --out "$tag.profile" >"$tag.profile.log" 2>&1 || { echo "profile failed: $tag"; continue; }
    # no --machine: the host the profile measured (one node, half the copy bandwidth, its cores)
    # shellcheck disable=SC2086
    "$AXONN" simulate $common $link --profile "$tag.profile" \
      --summary "$tag.sim.json" >"$tag.sim.log" 2>&1 || { echo "simulate failed: $tag"; continue; }
    # shellcheck disable=SC2086
    timeout 600 $MPIEXEC -n "$np" "$AXONN" train $common $link --summary "$tag.run.json" \
      </dev/null >"$tag.run.log" 2>&1 || { echo "train failed: $tag"; continue; }
    p=$(batch_time "$tag.sim.json"); m=$(batch_time "$tag.run.json")
    pred="$pred $p"; meas="$meas $m"
    each="$each $(python3 -c "print('%.0f/%.0f' % ($p * 1e3, $m * 1e3))")"
  done
  [ -n "$pred" ] || return 0
  pm=$(echo "$pred" | median); mm=$(echo "$meas" | median)
  python3 -c "
p, m = $pm * 1e3, $mm * 1e3; e = 100 * (p - m) / m
print('%-6s %-6s %12.1f %12.1f %+7.1f%% %6s%% %-5s %-24s %s-%s' % ('$g', '$emu', p, m, e, '$target',
      'met' if abs(e) <= $target else 'MISS', '$each'.strip(), '$load0', '$(load)'))"
}

echo "simulate-validate: $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname), $(nproc) cores; $(uptime); $REPS repetitions"
if [ -n "${MODEL:-}" ]; then SHAPES=model; fi
for shape in $SHAPES; do
  if [ "$shape" = model ]; then model=$MODEL; else model=$(shape_model "$shape"); fi
  echo
  echo "shape $shape: $model"
  printf '%-6s %-6s %12s %12s %8s %7s %-5s %-24s %s\n' grid link predicted_ms measured_ms error target met "each (pred/meas)" load
  for emu in $LINKS; do
    for g in $GRIDS; do run_case "$g" "$emu" "$model" "$OUT/$shape"; done
  done
done
