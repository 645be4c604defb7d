#!/bin/sh
# simulate-validate.sh — the simulator against measurement on this machine (docs/simulator.md,
# "Validation"): for every grid of 1x1, 2x1, 1x2, 2x2, 4x1, without and with
# --ranks-per-node 1 --emulate-link 1Gbps, REPS times: profile this machine (`axonn profile`
# with the case's options), simulate the run (`axonn simulate --profile`), train it for real
# (mpiexec), and compare the batch times (the summary's timing.batch_time_s). Prints one row
# per case: the medians over the repetitions, the error of the prediction, and the target
# (10% without emulation, 15% with). Not part of `make check`: it takes minutes and its figures
# depend on how loaded the machine is.
#
#   scripts/simulate-validate.sh [OUT_DIR]        (AXONN, MPIEXEC, REPS, MODEL override;
#                                                  CASES="2x2-on 4x1-on" runs only those)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
REPS=${REPS:-3}
OUT=${1:-build/simulate-validate}
MODEL=${MODEL:---layers 4 --hidden 256 --heads 4 --seq 128 --vocab 512 --batch 8 --micro-batch 1}
COMMON="$MODEL --threads 1 --val-steps 0 --steps 11 --quiet"
mkdir -p "$OUT"

batch_time() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['timing']['batch_time_s'])" "$1"; }
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "simulate-validate: $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $REPS repetitions; model: $MODEL"
printf '%-6s %-9s %12s %12s %8s %7s %s\n' grid link predicted_ms measured_ms error target each
for emu in off on; do
  for g in 1x1 2x1 1x2 2x2 4x1; do
    case " ${CASES:-$g-$emu} " in *" $g-$emu "*) ;; *) continue ;; esac
    P=${g%x*}; D=${g#*x}; np=$((P * D))
    grid="--g-inter $P --g-data $D"
    link=""; target=10
    if [ "$emu" = on ]; then link="--ranks-per-node 1 --emulate-link 1Gbps"; target=15; fi
    pred=""; meas=""; each=""
    for r in $(seq "$REPS"); do
      tag="$OUT/$g-$emu-$r"
      # shellcheck disable=SC2086
      "$AXONN" profile $COMMON $grid $link --out "$tag.profile" >"$tag.profile.log" 2>&1 || { echo "profile failed: $tag"; continue; }
      # shellcheck disable=SC2086
      # no --machine: the host the profile measured (one node, half the copy bandwidth, its cores)
      "$AXONN" simulate $COMMON $grid $link --profile "$tag.profile" \
        --summary "$tag.sim.json" >"$tag.sim.log" 2>&1 || { echo "simulate failed: $tag"; continue; }
      # shellcheck disable=SC2086
      timeout 600 $MPIEXEC -n "$np" "$AXONN" train $COMMON $grid $link --summary "$tag.run.json" \
        </dev/null >"$tag.run.log" 2>&1 || { echo "train failed: $tag"; continue; }
      p=$(batch_time "$tag.sim.json"); m=$(batch_time "$tag.run.json")
      pred="$pred $p"; meas="$meas $m"
      each="$each $(python3 -c "print('%.0f/%.0f' % ($p * 1e3, $m * 1e3))")"
    done
    pm=$(echo "$pred" | median); mm=$(echo "$meas" | median)
    python3 -c "
p, m = $pm * 1e3, $mm * 1e3; e = 100 * (p - m) / m
print('%-6s %-9s %12.1f %12.1f %+7.1f%% %6s%% %s' % ('$g', '1Gbps' if '$emu' == 'on' else 'none', p, m, e, '$target', '$each'.strip()))"
  done
done
