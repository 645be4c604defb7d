#!/bin/sh
# The papers' recipes are the defaults of gradient compression (docs/compression.md, "Recipes";
# issue 47, item 5), and every flag or codec key the user gives wins:
#  - `plan --compress powersgd` logs error feedback on and each matrix's rank (rank=auto, about
#    a tenth of the matrix: a 192 x 64 qkv matrix gets rank 4, a 64 x 64 one rank 3), 13% of
#    --steps plain (Optimus-CC §9.1) and the 1-D tensors plain; `powersgd:rank=2,ef=0` with
#    --compress-warmup 5 keeps rank 2, no error feedback and 5 steps;
#  - `--compress onebit` logs 1-bit Adam's error feedback, 15% of --steps plain and the frozen
#    variance, `--compress dgc` DGC's with 25% plain, the frozen variance and its sparsity
#    warm-up (5% of --steps, from the first step after the plain ones, which the user's
#    --compress-warmup moves), its local gradient clipping at --grad-clip / sqrt(G_data), and
#    the ratio that sends each coordinate about 4 times after the plain steps (4 / 450 in 600
#    steps; the paper's 0.001 from 4000 such steps; the user's ratio wins);
#  - the summary's compression object holds the codec in effect, the warm-up, the frozen
#    variance and every default the recipe set with its source, and only those;
#  - bad --compress-warmup and --compress-freeze-variance values: one line, non-zero exit.
# Deterministic: --compress-min-bytes 4K decides on sizes, with no profiled cost.
. "$(dirname "$0")/testlib.sh"
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

M="--layers 2 --hidden 64 --heads 4 --seq 64 --g-data 2 --steps 600 --compress-min-bytes 4K"

# expect NAME PATTERN...: the output of the last plan (in $TMP/NAME.out) holds every pattern
expect() {
  name=$1; shift
  for want in "$@"; do
    grep -q -- "$want" "$TMP/$name.out" || { fail "$name: no '$want'"; cat "$TMP/$name.out"; }
  done
}

# shellcheck disable=SC2086
"$AXONN" plan $M --compress powersgd >"$TMP/psgd.out" 2>&1 || fail "plan --compress powersgd"
expect psgd "^compression recipe (powersgd): " \
  "^  codec powersgd:rank=auto,cols=auto,ef=1 (added: ef=1,rank=auto): PowerSGD .*error feedback" \
  "^  compress-warmup 78 (13% of --steps 600): Optimus-CC §9.1" \
  "^  compress-freeze-variance 0: " "^  compress-vectors 0: " \
  "^compression plan: powersgd:rank=auto,cols=auto,ef=1 over CaSync ring" \
  "^  stage 0 qkvw L0 (chunk 0): 49152 bytes: compress, rank 4$" \
  "^  stage 0 attprojw L0 (chunk 0): 16384 bytes: compress, rank 3$" \
  "^  stage 0 qkvb L0 (chunk 0): 768 bytes: plain (1-D: --compress-vectors 0)$"

# shellcheck disable=SC2086
"$AXONN" plan $M --compress powersgd:rank=2,ef=0 --compress-warmup 5 >"$TMP/given.out" 2>&1 ||
  fail "plan --compress powersgd:rank=2,ef=0"
expect given "^  codec powersgd:rank=2,cols=auto,ef=0 (every key given or the codec's own)" \
  "^  stage 0 qkvw L0 (chunk 0): 49152 bytes: compress, rank 2$"
grep -q "compress-warmup" "$TMP/given.out" && fail "given: --compress-warmup 5 listed as a default"

# shellcheck disable=SC2086
"$AXONN" plan $M --compress onebit >"$TMP/onebit.out" 2>&1 || fail "plan --compress onebit"
expect onebit "^  codec onebit:scale=mean,ef=1,momentum=0.9 (added: ef=1,momentum=0.9): 1-bit Adam" \
  "^  compress-warmup 90 (15% of --steps 600): 1-bit Adam" \
  "^  compress-freeze-variance 1: 1-bit Adam"
# shellcheck disable=SC2086
"$AXONN" plan $M --compress dgc >"$TMP/dgc.out" 2>&1 || fail "plan --compress dgc"
expect dgc \
  "^  codec dgc:ratio=0.00889,momentum=0.9,ramp=30,ramp_from=151 (added: ratio=0.00889,momentum=0.9,ramp=30,ramp_from=151): DGC" \
  "^  codec ratio=0.00889 (a short run: the paper's 0.001 would send each coordinate about 0.45 times in the 450 steps after the 150 plain ones, this ratio about 4): DGC §4.1" \
  "^  codec ramp=30,ramp_from=151 (the sparsity warm-up: 5% of --steps 600, after the 150 plain steps): DGC §3.4" \
  "^  compress-warmup 150 (25% of --steps 600): DGC" "^  compress-freeze-variance 1: " \
  "^  compress-local-clip 1 (each rank's gradient norm clipped to --grad-clip 1 / sqrt(2) = 0.7071): DGC §3.3"
grep -q "compress-local-clip" "$TMP/onebit.out" && fail "onebit: local clipping listed"
# the sparsity warm-up starts after the plain one the user gives
# shellcheck disable=SC2086
"$AXONN" plan $M --compress dgc --compress-warmup 10 >"$TMP/dgcw.out" 2>&1 ||
  fail "plan --compress dgc --compress-warmup 10"
expect dgcw "^  codec dgc:ratio=0.00678,momentum=0.9,ramp=30,ramp_from=11 (added: "
# a run long enough keeps the paper's 99.9%; a ratio the user gives wins
# shellcheck disable=SC2086
"$AXONN" plan $M --steps 20000 --compress dgc >"$TMP/dgcl.out" 2>&1 || fail "plan --steps 20000"
expect dgcl "^  codec ratio=0.001 (the paper's: each coordinate sent about 15 times in the 15000 steps after the 5000 plain ones, at least 4): DGC"
# shellcheck disable=SC2086
"$AXONN" plan $M --compress dgc:ratio=0.01 >"$TMP/dgcr.out" 2>&1 || fail "plan dgc:ratio=0.01"
expect dgcr "^  codec dgc:ratio=0.01,momentum=0.9,ramp=30,ramp_from=151 (added: momentum=0.9,ramp=30,ramp_from=151)"
grep -q "^  codec ratio=" "$TMP/dgcr.out" && fail "dgcr: the user's ratio listed as a default"

# the summary: what ran, and the recipe's defaults with their sources
S="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 4 --threads 1 --val-steps 0 --quiet \
  --steps 20"
# shellcheck disable=SC2086
"$AXONN" train $S --compress onebit --summary "$TMP/rec.json" >/dev/null 2>&1 &&
  "$AXONN" train $S --compress onebit:ef=0 --compress-warmup 4 --compress-freeze-variance 0 \
    --summary "$TMP/own.json" >/dev/null 2>&1 || fail "train --compress onebit"
"$PYTHON" - "$TMP/rec.json" "$TMP/own.json" <<'EOF' || fail "the summary's compression object"
import json, sys
rec, own = (json.load(open(p))["compression"] for p in sys.argv[1:])
bad = []
def want(what, got, expected):
    if got != expected: bad.append("%s: %r, expected %r" % (what, got, expected))
want("codec", rec["codec"], "onebit:scale=mean,ef=1,momentum=0.9")
want("warm-up", rec["warmup_steps"], 3)
want("frozen", rec["freeze_variance"], True)
d = {x["option"]: x for x in rec["recipe"]["defaults"]}
want("defaults", sorted(d), ["codec", "compress-freeze-variance", "compress-vectors", "compress-warmup"])
want("warm-up default", d["compress-warmup"]["value"], "3 (15% of --steps 20)")
if "1-bit Adam" not in d["compress-warmup"]["source"]: bad.append("no source for the warm-up")
want("own codec", own["codec"], "onebit:scale=mean,ef=0,momentum=0.9")
want("own warm-up", own["warmup_steps"], 4)
want("own frozen", own["freeze_variance"], False)
want("own defaults", sorted(x["option"] for x in own["recipe"]["defaults"]), ["codec", "compress-vectors"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF

expect_error "--compress-warmup '-1' is not auto or an integer" train --compress onebit \
  --compress-warmup -1 --steps 1
expect_error "--compress-freeze-variance 'yes' is not auto or an integer" train \
  --compress onebit --compress-freeze-variance yes --steps 1
finish
