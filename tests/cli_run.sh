#!/bin/sh
# What a run shows while it trains: progress lines every --log-every steps (the first and the
# last always; automatic: 20 to 40 lines), each with step/total, loss, lr, ms, tokens/s, FLOP/s,
# elapsed time and ETA, while the metrics CSV keeps every step; --quiet prints none. The loss
# curve (scripts/plot-loss: a PNG, or "skipped:" without matplotlib) and scripts/run.sh, what
# `make run` does, on a tiny model, in one process and on 2 data-parallel ranks. Only the shape
# of the output is checked, never a speed.
. "$(dirname "$0")/testlib.sh"

TINY="--layers 1 --hidden 16 --heads 1 --seq 8 --batch 2 --threads 1 --val-steps 0"

# steps NAME: the step numbers of NAME's progress lines, space-separated
steps() { sed -n 's/^step *\([0-9]*\)\/.*/\1/p' "$TMP/$1.out" | tr '\n' ' ' | sed 's/ $//'; }

# --log-every 10 on 50 steps: 1, 10, 20, ..., 50
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 50 --log-every 10 --metrics "$TMP/every.csv" >"$TMP/every.out" ||
  fail "train --log-every 10"
[ "$(steps every)" = "1 10 20 30 40 50" ] || fail "--log-every 10 printed steps: $(steps every)"
[ "$(wc -l <"$TMP/every.csv")" -eq 51 ] || fail "metrics CSV lacks steps: $(wc -l <"$TMP/every.csv") lines"
line='^step +[0-9]+/50 \| loss [0-9.]+ \| lr [0-9.e+-]+ \| +[0-9.]+ ms \| +[0-9]+ tok/s \| [0-9.]+ [GT]FLOP/s \| grad norm [0-9.]+ \| elapsed [0-9.:]+s? \| ETA [0-9.:]+s?$'
bad=$(grep '^step ' "$TMP/every.out" | grep -Evc "$line")
[ "$bad" -eq 0 ] || { fail "$bad progress line(s) not of the expected form:"; grep '^step ' "$TMP/every.out" | grep -Ev "$line"; }

# automatic: 100 steps give 20 to 40 lines, the first and the last among them
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 100 >"$TMP/auto.out" || fail "train (automatic --log-every)"
n=$(grep -c '^step ' "$TMP/auto.out")
if [ "$n" -lt 20 ] || [ "$n" -gt 40 ]; then fail "automatic --log-every printed $n lines on 100 steps"; fi
case " $(steps auto) " in *" 1 "*" 100 "*) ;; *) fail "first or last step missing: $(steps auto)" ;; esac

# an odd interval still ends on the last step; --quiet prints no step line
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 7 --log-every 3 >"$TMP/odd.out" || fail "train --log-every 3"
[ "$(steps odd)" = "1 3 6 7" ] || fail "--log-every 3 on 7 steps printed: $(steps odd)"
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 5 --quiet >"$TMP/quiet.out" || fail "train --quiet"
grep -q '^step ' "$TMP/quiet.out" && fail "--quiet printed progress lines"

# ---- scripts/plot-loss: a PNG where matplotlib is, one "skipped:" line and exit 0 elsewhere
have_mpl=0
for py in /usr/bin/python3 python3; do
  command -v "$py" >/dev/null 2>&1 && "$py" -c 'import matplotlib' >/dev/null 2>&1 && have_mpl=1
done
if [ $have_mpl -eq 1 ]; then
  scripts/plot-loss "$TMP/every.csv" "$TMP/loss.png" >"$TMP/plot.out" || fail "plot-loss failed"
  [ -s "$TMP/loss.png" ] || fail "plot-loss wrote no PNG"
  [ "$(head -c 4 "$TMP/loss.png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "loss.png is not a PNG"
  grep -q "^loss curve: $TMP/loss.png" "$TMP/plot.out" || fail "plot-loss did not say where the PNG is"
else
  echo "skipped: matplotlib is not installed here, so the PNG itself is not checked"
fi
# without matplotlib (no interpreter has it): one line, exit 0, no file
AXONN_PLOT_PYTHONS=/nonexistent/python3 scripts/plot-loss "$TMP/every.csv" "$TMP/none.png" \
  >"$TMP/skip.out" 2>&1 || fail "plot-loss without matplotlib must exit 0"
if [ "$(wc -l <"$TMP/skip.out")" -ne 1 ] || ! grep -q '^skipped: .*matplotlib' "$TMP/skip.out"; then
  fail "plot-loss without matplotlib:"; cat "$TMP/skip.out"
fi
[ -e "$TMP/none.png" ] && fail "plot-loss without matplotlib wrote a file"
scripts/plot-loss "$TMP/missing.csv" "$TMP/x.png" 2>/dev/null; [ $? -eq 2 ] || fail "plot-loss on a missing CSV"

# ---- scripts/run.sh (what make run does after the build), on a tiny text and model
i=0; : >"$TMP/text.txt"
while [ $i -lt 200 ]; do echo "ROMEO: to be or not to be, that is the question $i" >>"$TMP/text.txt"; i=$((i + 1)); done
AXONN=$AXONN RANKS=1 THREADS=1 TEXT="$TMP/text.txt" SAMPLE_TOKENS=20 AXONN_PLOT_PYTHONS=/nonexistent \
  TRAIN_ARGS="--layers 1 --hidden 16 --heads 1 --seq 16 --batch 4 --steps 20 --val-every 10" \
  sh scripts/run.sh "$TMP/run" >"$TMP/run.out" 2>&1 || { fail "scripts/run.sh"; cat "$TMP/run.out"; }
for f in model.bin metrics.csv summary.json train.log text_train.bin text_val.bin sample.txt; do
  [ -s "$TMP/run/$f" ] || fail "run.sh left no $f"
done
[ "$(wc -l <"$TMP/run/metrics.csv")" -eq 21 ] || fail "run.sh metrics.csv lacks steps"
for want in '^val  step 10 | val loss' '^val  step 20 | val loss' '^--- sample from the trained model' \
  '^ROMEO:' '^skipped: loss curve' '^--- outputs in' '^--- next steps' 'make check' 'mpiexec'; do
  grep -q "$want" "$TMP/run.out" || fail "run.sh output lacks '$want'"
done
grep -q '^{"axonn_summary":' "$TMP/run.out" && fail "run.sh printed the JSON line (summary.json has it)"
# the sample's words found in the text, counted again independently (case ignored, the prompt
# left out)
known=$(python3 - "$TMP/run/sample.txt" "$TMP/text.txt" <<'PY'
import re, sys
words = lambda b: re.findall(rb"[a-z]+", b.lower())
seen = set(words(open(sys.argv[2], "rb").read()))
got = words(open(sys.argv[1], "rb").read()[len(b"ROMEO:"):])
print("%d of %d" % (sum(w in seen for w in got), len(got)))
PY
)
grep -q "^--- the sample's words found in $TMP/text.txt: $known (" "$TMP/run.out" ||
  fail "run.sh's word count is not '$known': $(grep 'words found' "$TMP/run.out")"
grep -q '^{"axonn_summary":' "$TMP/run/train.log" || fail "train.log lacks the JSON summary line"
# on 2 data-parallel ranks (what it chooses on 2 idle cores): launched under MPI, each batch
# split over them, the same outputs
AXONN=$AXONN RANKS=2 TEXT="$TMP/text.txt" SAMPLE_TOKENS=20 AXONN_PLOT_PYTHONS=/nonexistent \
  TRAIN_ARGS="--layers 1 --hidden 16 --heads 1 --seq 16 --batch 4 --steps 20 --val-every 10" \
  sh scripts/run.sh "$TMP/run2" >"$TMP/run2.out" 2>&1 || { fail "RANKS=2 scripts/run.sh"; cat "$TMP/run2.out"; }
grep -q '^\$ mpiexec -n 2 .* train .* --g-data 2 --threads 1 ' "$TMP/run2.out" &&
  grep -q '^grid: 1 stage(s) x 2 data-parallel row(s)' "$TMP/run2.out" ||
  { fail "RANKS=2 scripts/run.sh did not train on 2 data-parallel ranks"; cat "$TMP/run2.out"; }
for f in model.bin metrics.csv summary.json sample.txt; do
  [ -s "$TMP/run2/$f" ] || fail "RANKS=2 run.sh left no $f"
done

finish
