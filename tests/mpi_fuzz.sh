#!/bin/sh
# Random train configurations, the same ones every time (scripts/fuzz-train.py, seed 7: 1 to 4
# ranks over every grid dimension, precisions, optimizers, codecs and their recipes, sync
# schemes, overlaps, emulated links, memory checkpoints), each checked as a user would: it ends
# (no hang, no crash, a refusal in exactly one line, its data-parallel replicas alike), a
# lossless layout trains as one process does, and a run checkpointed at step 3 and resumed
# continues bit for bit. `make fuzz` draws more of them.
. "$(dirname "$0")/mpilib.sh"

MPIEXEC="$MPIEXEC" python3 "$(dirname "$0")/../scripts/fuzz-train.py" --bin "$AXONN" \
  --count "${FUZZ_COUNT:-24}" --seed "${FUZZ_SEED:-7}" --out "$TMP/fuzz" >"$TMP/fuzz.log" 2>&1 ||
  { fail "fuzz-train found configurations that fail (above the summary's line)"; cat "$TMP/fuzz.log"; }
tail -n 1 "$TMP/fuzz.log"
grep -q " ok " "$TMP/fuzz.log" && grep -q " refused " "$TMP/fuzz.log" ||
  { fail "fuzz-train drew no configuration that trains, or none that is refused"; cat "$TMP/fuzz.log"; }
finish
