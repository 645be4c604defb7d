#!/bin/sh
# Optimus-CC's selective stage compression (--compress-stages F; real MPI, 2x2):
#  - with onebit:ef=1,momentum=0 and F = 0.5 only stage 0 compresses: after one step the last
#    stage's weights and Adam moments (its checkpoint file) are bit for bit the uncompressed
#    run's, and so is the tied wte (its copy on stage 0 stays plain, as the last stage's copy
#    is, and both take the job's codec settings, here Adam's own: no momentum in the codec, no
#    warm-up to freeze the variance after; tests/mpi_compress.sh has the tied copies under a
#    codec's momentum), while stage 0's other weights differ; F = 0 (no stage) is the
#    uncompressed run bit for bit;
#  - the summary's data-parallel bytes lie between the all-compressed and the uncompressed
#    run's: stage 1's ranks send what they send uncompressed, stage 0's less (all but the
#    tied wte compressed); printed;
#  - the header says which stages compress;
#  - --compress-stages 0.5 alone is Optimus-CC's recipe (PowerSGD, error feedback, rank=auto)
#    and an explicit request: under the default --compress-min-bytes auto, where the cost model
#    on this machine's shared memory prices every part plain, stage 0 still compresses every
#    weight matrix but the tied wte, so each of its ranks sends exactly the plain run's
#    data-parallel bytes less each matrix's values plus its PowerSGD factors ((rows + cols) x
#    rank floats, rank = floor(rows cols / (10 (rows + cols))), at least 1), and stage 1's
#    ranks exactly the plain run's; the header says so, with each part's rank;
#  - bad --compress-stages (1, 1.5, -0.1, abc, and a fraction with --compress none): one line,
#    non-zero exit.
. "$(dirname "$0")/mpilib.sh"

# (the classic tied-embedding path, wte inside the data-parallel sum, whose bytes are counted)
COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --steps 1 \
  --shuffle 0 --seed 7 --val-steps 0 --threads 1 --grad-clip 0 --allreduce ring \
  --g-inter 2 --g-data 2 --checkpoint-every 1 --sparse-embedding-sync dense"
C="--compress onebit:ef=1,momentum=0 --compress-min-bytes 0"
CK=step-00000001

run plain 4 --checkpoint-dir "$TMP/plain" --summary "$TMP/plain.json" &&
  run half 4 $C --compress-stages 0.5 --checkpoint-dir "$TMP/half" --summary "$TMP/half.json" &&
  run all 4 $C --checkpoint-dir "$TMP/all" --summary "$TMP/all.json" &&
  run none 4 $C --compress-stages 0 --checkpoint-dir "$TMP/none" || exit 1

cmp -s "$TMP/plain/$CK/stage-1.bin" "$TMP/half/$CK/stage-1.bin" ||
  fail "half: the last stage's weights after one step differ from the uncompressed run's"
cmp -s "$TMP/plain/$CK/stage-0.bin" "$TMP/half/$CK/stage-0.bin" &&
  fail "half: stage 0's weights are the uncompressed run's: nothing was compressed"
"$AXONN" compare "$TMP/plain.bin" "$TMP/half.bin" --tol 1 >"$TMP/half.cmp" 2>&1
grep -q "^wte .*max |a-b| 0.000e+00" "$TMP/half.cmp" ||
  { fail "half: the tied wte differs from the uncompressed run's"; cat "$TMP/half.cmp"; }
for s in 0 1; do
  cmp -s "$TMP/plain/$CK/stage-$s.bin" "$TMP/none/$CK/stage-$s.bin" ||
    fail "none: stage $s differs from the uncompressed run"
done
grep -q "^compression: stage(s) 0-0 of 2 compress their data-parallel gradients (--compress-stages 0.5)" \
  "$TMP/half.log" || { fail "half: the header does not say which stages compress"; cat "$TMP/half.log"; }
grep -q "^compression: no stage of 2 compresses" "$TMP/none.log" ||
  { fail "none: the header does not say no stage compresses"; cat "$TMP/none.log"; }

python3 - "$TMP/plain.json" "$TMP/half.json" "$TMP/all.json" <<'PY' ||
import json, sys
def dp(path):
    per = json.load(open(path))["communication"]["per_step"]
    return per["sum"]["data_parallel"]["bytes"], [k["data_parallel"]["bytes"] for k in per["ranks"]]
(p, pr), (h, hr), (a, ar) = (dp(x) for x in sys.argv[1:])
print("data_parallel bytes per step (all ranks): uncompressed %d, --compress-stages 0.5 %d, "
      "every stage %d" % (p, h, a))
P, ok = 2, a < h < p
for r in range(len(pr)):  # stage 0 compresses all but the tied wte; stage 1 nothing
    good = ar[r] < hr[r] < pr[r] if r % P == 0 else hr[r] == pr[r]
    if not good:
        print("rank %d: %d bytes; all-compressed %d, plain %d" % (r, hr[r], ar[r], pr[r]))
        ok = False
sys.exit(0 if ok else 1)
PY
  fail "--compress-stages 0.5: data-parallel bytes not between the all-compressed and plain runs"

# Optimus-CC's recipe on the selected stage, whatever the cost model prices
run sc 4 --compress-stages 0.5 --checkpoint-dir "$TMP/sc" --summary "$TMP/sc.json" || exit 1
for want in "^  compress powersgd (--compress-stages 0.5 without --compress): Optimus-CC" \
    "^  codec powersgd:rank=auto,cols=auto,ef=1 (added: ef=1,rank=auto)" \
    "^compression: powersgd:rank=auto,cols=auto,ef=1 .* 9 of 26 part(s) .* compressed (--compress-stages: every part the codec shrinks)" \
    "^  qkvw L0 (chunk 0): 12288 bytes, .*: compress, K=[0-9]* (--compress-stages), rank 2" \
    "^  qkvb L0 (chunk 0): .*: plain (1-D: --compress-vectors 0)"; do
  grep -q "$want" "$TMP/sc.log" || { fail "--compress-stages 0.5: no '$want' in the header"; cat "$TMP/sc.log"; }
done
python3 - "$TMP/plain.json" "$TMP/sc.json" <<'PY' ||
import json, sys
def dp(path):
    return [r["data_parallel"]["bytes"] for r in json.load(open(path))["communication"]["per_step"]["ranks"]]
def rank(rows, cols):
    return max(1, rows * cols // (10 * (rows + cols)))
C, T = 32, 16  # stage 0: wpe and 2 blocks' qkvw, attprojw, fcw, fcprojw (the tied wte plain)
mats = [(T, C)] + 2 * [(3 * C, C), (C, C), (4 * C, C), (C, 4 * C)]
saved = sum(4 * (r * c - (r + c) * rank(r, c)) for r, c in mats)
(p, s), P = (dp(x) for x in sys.argv[1:]), 2
want = [p[r] - saved if r % P == 0 else p[r] for r in range(len(p))]
print("data_parallel bytes per step and rank: plain %s, --compress-stages 0.5 %s (expected %s: "
      "stage 0 sends %d bytes less)" % (p, s, want, saved))
sys.exit(0 if s == want else 1)
PY
  fail "--compress-stages 0.5: the data-parallel bytes are not the plain run's less stage 0's PowerSGD savings"

# bad input: one line, non-zero
for bad in 1 1.5 -0.1 abc; do
  expect_error "compress-stages $bad is not all or a fraction in" train --compress onebit \
    --compress-stages "$bad" --steps 1
done
expect_error "compress-stages 0.5 needs --compress" train --compress none --compress-stages 0.5 \
  --steps 1

finish
