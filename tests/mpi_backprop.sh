#!/bin/sh
# Optimus-CC on the pipeline, the fast checks (the real-text losses: mpi_backprop_text.sh):
#  - compressed backpropagation's bytes, from the summary's counters: a compressed backward
#    message takes (n + m) x r x 4 bytes (n = micro-batch x T, m = C), the others n x m x 4,
#    and epilogue-only compresses the last P - 1 - s micro-batches into stage s;
#  - --compress-warmup N: every backward message travels in full for the first N steps;
#  - its state (the link's residual and Q) and selective stage compression's go into the
#    checkpoints: 10 steps, resume, 10 more equal 20 straight, bit for bit, on 2x2;
#  - both states follow a dynamic loss scale that doubles and halves: the unscaled run, bit for
#    bit;
#  - bad values: one clear line, non-zero exit, nothing written.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 1 --seed 5 \
  --val-steps 0 --threads 1 --lr-schedule constant --warmup 0"

# pipeline_backward bytes per step on each rank: rank s sends stage s's gradients to s - 1
backward_bytes() {
  python3 - "$TMP/$1.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["communication"]["per_step"]["ranks"]
print(" ".join(str(r["pipeline_backward"]["bytes"]) for r in c))
PY
}

# 4x1, 8 micro-batches of 1 x 16 tokens x 32 channels: 2048 bytes in full; rank 16 (at most
# min(16, 32) = 16 columns): (16 + 32) x 16 x 4 = 3072 > 2048, so rank 4: (16 + 32) x 4 x 4 = 768
full=2048; small=768
for epi in 1 0; do
  run "bytes$epi" 4 --g-inter 4 --steps 3 --compress-backprop powersgd:rank=4 \
    --epilogue-only $epi --summary "$TMP/bytes$epi.json" || continue
  got=$(backward_bytes "bytes$epi")
  want="0"
  for s in 1 2 3; do
    k=$((epi ? 4 - s : 8)) # compressed messages from stage s: the last P - 1 - (s - 1)
    want="$want $(( (8 - k) * full + k * small ))"
  done
  echo "  epilogue-only $epi: pipeline_backward bytes per step by rank: $got (expected $want)"
  [ "$got" = "$want" ] || fail "epilogue-only $epi: backward bytes $got, expected $want"
done
expect_error "not smaller than" train --g-inter 2 --compress-backprop powersgd --steps 1 \
  --layers 2 --hidden 32 --heads 2 --seq 16 --micro-batch 1 --batch 8 --dry-run

# --compress-warmup 3: steps 1-3 send every gradient in full, so the losses through step 4 are
# the uncompressed run's, bit for bit; step 4 compresses, so step 5's loss differs
run plain5 4 --g-inter 4 --steps 5 &&
  run warm5 4 --g-inter 4 --steps 5 --compress-backprop powersgd:rank=4 --epilogue-only 0 \
    --compress-warmup 3 && {
    awk -F, 'NR == FNR { if (FNR > 1) l[$1] = $2; next }
      FNR > 1 && $1 <= 4 && $2 != l[$1] { printf "step %d: %s, uncompressed %s\n", $1, $2, l[$1]; bad = 1 }
      FNR > 1 && $1 == 5 && $2 == l[$1] { printf "step 5: %s, as uncompressed\n", $2; bad = 1 }
      END { exit bad }' "$TMP/plain5.csv" "$TMP/warm5.csv" ||
      fail "--compress-warmup 3 with --compress-backprop: not in full through step 3, or not compressed at step 4"
    grep -q "compressed backpropagation: .*; in full during the warm-up steps" "$TMP/warm5.log" ||
      { fail "warm5: the header does not mention the warm-up"; cat "$TMP/warm5.log"; }
  }

# resume: CB + SC (PowerSGD with error feedback on stage 0's data-parallel sum), bit for bit
# (no warm-up: the recipe's, a fraction of --steps, would differ between the 10- and 20-step
# runs, as a cosine learning rate would)
C="--g-inter 2 --g-data 2 --compress-backprop powersgd:rank=4 --compress powersgd:rank=2,ef=1 \
  --compress-stages 0.5 --compress-min-bytes 0 --compress-warmup 0"
run full 4 $C --steps 20 &&
  run half 4 $C --steps 10 --checkpoint-dir "$TMP/ck" --checkpoint-every 10 &&
  run res 4 $C --steps 20 --checkpoint-dir "$TMP/ck" --resume && {
    [ -f "$TMP/ck/step-00000010/backprop-1.bin" ] || fail "no link state file in the checkpoint"
    same_losses res full 0 0 # 20 straight, bit for bit: losses and weights
    grep -q "starts fresh" "$TMP/res.log" && fail "resume warned that a state starts fresh"
  }
run nolep 4 $C --steps 12 --lazy-error 0 --checkpoint-dir "$TMP/ck" --resume &&
  { grep -q "compression state of --compress-backprop .* starts fresh" "$TMP/nolep.log" ||
    { fail "resume with another backprop codec did not warn"; cat "$TMP/nolep.log"; }; }

# dynamic loss scaling: the links' lazy error and Q, and the compressed stage's state, keep
# gradients at the loss scale and follow it when it changes (doubled after 2 clean steps,
# halved on the overflow at step 7): in fp32 the run is the unscaled one bit for bit
run lsoff 4 $C --steps 12 --debug-overflow-step 7 --loss-scaling off &&
  run lsdyn 4 $C --steps 12 --debug-overflow-step 7 --loss-scaling dynamic --loss-scale-window 2 \
    --summary "$TMP/lsdyn.json" &&
  same_losses lsdyn lsoff 0 0 && scale_at_end lsdyn 1048576 1 # 2^16, x8, /2, x4

# bad values: one line, non-zero, no metrics file
for bad in "powersgd:rank=0" "onebit" "powersgd:cols=4" "powersgd:ef=1" "nosuch"; do
  rm -f "$TMP/bad.csv"
  expect_error "--compress-backprop" train --g-inter 2 --compress-backprop "$bad" \
    --metrics "$TMP/bad.csv" --steps 1
  [ -e "$TMP/bad.csv" ] && fail "--compress-backprop $bad left a metrics file"
done
expect_error "needs --g-inter 2" train --compress-backprop powersgd --steps 1
expect_error "precision fp32" train --g-inter 2 --compress-backprop powersgd --precision bf16 --steps 1
expect_error "lazy-error" train --lazy-error 2 --steps 1

finish
