#!/bin/sh
# run.sh — what `make run` does once axonn is built: tokenize the bundled tiny Shakespeare
# (data/tinyshakespeare.txt) into byte-level shards, train a small byte-level GPT on it (the
# validation loss printed as it falls), sample from the model with the prompt "ROMEO:", draw the
# loss curve (scripts/plot-loss), and say where everything is and what to try next.
# Sized to take about two minutes on a 2-core machine (docs/benchmarks.md, "make run").
#
# Usage: scripts/run.sh [OUT_DIR]   (default build/run)
# Environment: AXONN (default bin/axonn); RANKS (data-parallel ranks, default: the cores idle
# right now, measured over half a second, rounded down to a power of two that divides the
# batch, at least 1) and THREADS (per rank, default 1): on two cores two ranks of one thread
# took 6-23% less a step of this model than one process of two threads (docs/benchmarks.md,
# "make run"); MPIEXEC (default mpiexec) launches more than one; TEXT (default
# data/tinyshakespeare.txt); TRAIN_ARGS (the model and schedule, default below); PROMPT,
# SAMPLE_TOKENS, TEMPERATURE for the sample.
set -eu
AXONN=${AXONN:-bin/axonn}
OUT=${1:-build/run}
TEXT=${TEXT:-data/tinyshakespeare.txt}
# 2 blocks of 128 channels (0.43M parameters), 32 sequences of 64 bytes a step, 3200 steps:
# 6.6M tokens, about six passes over the training text. Per second of training this shape
# learned fastest of those measured (4 blocks, lr 1e-2, 3600 steps: docs/benchmarks.md, "make
# run"). A warm-up of 200 steps: with 50 the loss spiked once (8.2 at step 16) before recovering.
# The validation loss is the whole validation text's (--val-steps all: 54 batches, about a
# second each time), every 800 steps: the first 8 batches alone read 0.08-0.10 lower.
TRAIN_ARGS=${TRAIN_ARGS:---layers 2 --hidden 128 --heads 4 --seq 64 --batch 32 --steps 3200 \
--lr 6e-3 --warmup 200 --val-every 800 --val-steps all}
PROMPT=${PROMPT:-ROMEO:}
SAMPLE_TOKENS=${SAMPLE_TOKENS:-400}
TEMPERATURE=${TEMPERATURE:-0.8}

# Cores idle over the next half second (Linux /proc/stat; elsewhere 0, i.e. all cores). A
# fork-join step on a core another process keeps busy waits for it at every kernel, so on a
# shared machine fewer threads finish sooner.
idle_cores() {
  [ -r /proc/stat ] || { echo 0; return; }
  a=$(awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6; exit}' /proc/stat)
  sleep 0.5
  b=$(awk '/^cpu /{print $2+$3+$4+$5+$6+$7+$8+$9, $5+$6; exit}' /proc/stat)
  n=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
  echo "$a $b $n" | awk '{ t = $3 - $1; i = $4 - $2; c = (t > 0 ? int(i / t * $5 + 0.5) : $5)
                           print (c < 1 ? 1 : c) }'
}

say() { echo "\$ $*"; "$@"; }

# How many of the sample's words (runs of the letters a-z, case ignored, bytes as they are; the
# prompt it starts with left out) occur in the training text: "N of M (P%)".
words_known() { # SAMPLE TEXT PROMPT
  LC_ALL=C awk -v skip="${#3}" '
    function count(line, add,  n, i, w) {
      n = split(tolower(line), w, /[^a-z]+/)
      for (i = 1; i <= n; i++) if (w[i] != "") { if (add) seen[w[i]] = 1; else { all++; known += (w[i] in seen) } }
    }
    FNR == NR { count($0, 1); next }
    { count(FNR == 1 ? substr($0, skip + 1) : $0, 0) }
    END { printf "%d of %d (%.0f%%)", known, all, all ? 100 * known / all : 0 }' "$2" "$1"
}

# The largest power of two at most $1 that divides the batch of TRAIN_ARGS (--batch, 32 when
# not given there: the trainer's default is 32 too).
ranks_for() {
  batch=$(echo " $TRAIN_ARGS " | sed -n 's/.* --batch \([0-9][0-9]*\) .*/\1/p')
  r=1
  while [ $((r * 2)) -le "$1" ] && [ $((${batch:-32} % (r * 2))) -eq 0 ]; do r=$((r * 2)); done
  echo $r
}

if [ -z "${RANKS:-}" ]; then
  idle=$(idle_cores)
  RANKS=$(ranks_for "$idle")
  echo "make run: $idle of $(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') core(s) idle" \
    "-> $RANKS data-parallel rank(s) of ${THREADS:-1} thread(s) (RANKS=N THREADS=M make run" \
    "chooses)"
fi
THREADS=${THREADS:-1}
# one process, or RANKS of them over MPI splitting each batch (--g-data)
if [ "$RANKS" -gt 1 ]; then
  LAUNCH="${MPIEXEC:-mpiexec} -n $RANKS"
  GRID="--g-data $RANKS"
else
  LAUNCH="" GRID=""
fi
mkdir -p "$OUT"
name=$(basename "$TEXT" .txt)
say "$AXONN" prep --input "$TEXT" --output "$OUT/$name"
# The whole output goes to train.log; the screen gets all of it but the JSON summary line,
# which summary.json holds.
# shellcheck disable=SC2086
{ say $LAUNCH "$AXONN" train --data "$OUT/${name}_train.bin" --val-data "$OUT/${name}_val.bin" \
    $TRAIN_ARGS $GRID --threads "$THREADS" --metrics "$OUT/metrics.csv" \
    --summary "$OUT/summary.json" --save "$OUT/model.bin"
  echo $? >"$OUT/train.rc"; } | tee "$OUT/train.log" | grep --line-buffered -v '^{"axonn_summary":' || :
rc=$(cat "$OUT/train.rc" 2>/dev/null || echo 1)
rm -f "$OUT/train.rc"
[ "$rc" -eq 0 ] || exit "$rc"
echo "--- sample from the trained model (prompt \"$PROMPT\", temperature $TEMPERATURE):"
set -- "$AXONN" sample --model "$OUT/model.bin" --prompt "$PROMPT" --tokens "$SAMPLE_TOKENS" \
  --temperature "$TEMPERATURE" --threads $((RANKS * THREADS))
echo "\$ $*"
"$@" >"$OUT/sample.txt"
cat "$OUT/sample.txt"
echo "--- the sample's words found in $TEXT: $(words_known "$OUT/sample.txt" "$TEXT" "$PROMPT")"
"$(dirname "$0")/plot-loss" "$OUT/metrics.csv" "$OUT/loss.png"

cat <<EOF
--- outputs in $OUT/:
  model.bin       the trained model (llm.c fp32 format): $AXONN sample --model $OUT/model.bin
  sample.txt      the sample above
  metrics.csv     every step: loss, lr, batch_ms, tokens_per_s, tflops, grad_norm, val_loss
  summary.json    the end-of-run summary (docs/summary.md)
  train.log       everything the training printed
  loss.png        the loss curve, when matplotlib is installed
--- next steps (README.md):
  your own text:  $AXONN prep --input book.txt --output data/book
                  $AXONN train --data data/book_train.bin --val-data data/book_val.bin --save book.bin
  several ranks:  mpiexec -n 4 $AXONN train --g-inter 2 --g-data 2 ...   (README: "On many ranks")
  every option:   $AXONN train --help
  the tests:      make check
  docs:           README.md, docs/summary.md (what the figures mean), docs/benchmarks.md
EOF
