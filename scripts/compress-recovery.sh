#!/bin/sh
# compress-recovery.sh — what a recovery from a memory checkpoint costs a compressed run: a
# memory checkpoint holds the weights and Adam's state but not the per-rank compression state
# (error feedback, momentum, Q), which restarts (docs/memory-checkpoints.md). For each model
# shape of SHAPES and codec of CODECS, on compress-curves.sh's setting (tiny Shakespeare, 1x2
# over an EMULATED link between two virtual nodes, the codec's recipe): the run with memory
# checkpoints every EVERY steps and never interrupted; the same run with rank 1 killed as step
# KILL begins; that run resumed from memory (its metrics appended to the killed run's). Prints
# the step recovered and both runs' final validation losses, and "DECISIONS DIFFER" where the
# three runs' cost models did not compress the same parts (each run measures its costs at its
# start, and the recovered one too: a part near break-even can go either way, and then the
# figure is not the restart's alone; EXTRA="--compress-min-bytes 4K" decides without them). The
# numbers are docs/benchmarks.md's ("Memory checkpoints and compression"), all EMULATED.
# Usage: scripts/compress-recovery.sh [OUT_DIR]   (AXONN, MPIEXEC, SHAPES, CODECS, STEPS, EVERY,
# KILL, LINK, SEED, EXTRA override; defaults: 2x64, onebit powersgd dgc, 600, 50, STEPS/2 + 2,
# 1Gbps,50us, 7, none)
set -u
AXONN=${AXONN:-bin/axonn}
MPIEXEC=${MPIEXEC:-mpiexec}
OUT=${1:-build/compress-recovery}
SHAPES=${SHAPES:-2x64}
CODECS=${CODECS:-"onebit powersgd dgc"}
STEPS=${STEPS:-600}
EVERY=${EVERY:-50}
KILL=${KILL:-$((STEPS / 2 + 2))}
EXTRA=${EXTRA:-}
. "$(dirname "$0")/curves-lib.sh"
curves_prep

for shape in $SHAPES; do
  for spec in $CODECS; do
    tag=$(echo "$spec" | tr ':=.,' '____')-$shape
    curves_1x2 "$shape"
    COMMON="$COMMON --compress $spec $EXTRA --memory-checkpoint-every $EVERY \
      --run-name recovery-$$-$tag"
    curves_train "whole-$tag"
    # shellcheck disable=SC2086
    if $MPIEXEC -n "$NP" "$AXONN" train $COMMON --metrics "$OUT/cut-$tag.csv" \
        --debug-hang-rank 1 --debug-hang-step "$KILL" --debug-hang-mode kill </dev/null \
        >"$OUT/killed-$tag.log" 2>&1; then
      echo "killed-$tag: the run was not killed (see $OUT/killed-$tag.log)"; exit 1
    fi
    curves_train "cut-$tag" --resume
    from=$(sed -n 's/.*step \([0-9]*\) recovered from memory.*/\1/p' "$OUT/cut-$tag.log" | head -1)
    [ -n "$from" ] || { echo "cut-$tag: not recovered from memory (see $OUT/cut-$tag.log)"; exit 1; }
    whole=$(curves_val "whole-$tag"); cut=$(curves_val "cut-$tag")
    decided=$(for run_log in whole killed cut; do
      sed -n 's/^compression: .*; \([0-9]* of [0-9]* part(s)\).*/\1/p' "$OUT/$run_log-$tag.log"
    done | sort -u | tr '\n' ' ')
    [ "$(echo "$decided" | wc -w)" -le 4 ] && same="the same parts compressed" ||
      same="DECISIONS DIFFER: $decided"
    awk -v s="$spec $EXTRA" -v w="$whole" -v c="$cut" -v f="$from" -v k="$KILL" -v d="$same" 'BEGIN {
      printf "%s %-10s killed at step %d, recovered step %d from memory: val %s against %s never interrupted (%+.2f%%); %s\n",
        "'"$shape"'", s, k, f, c, w, 100 * (c - w) / w, d }'
  done
done
