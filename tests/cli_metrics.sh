#!/bin/sh
# The metrics files of `axonn train` (src/report/metrics.h) across a resubmission: steps 1-6
# with a checkpoint at step 4, then --resume to step 10 with the same --metrics and
# --metrics-jsonl files: each holds steps 1..10 once (5 and 6, run again, not twice), the
# CSV's header once, and the rows of steps 1-4 as the first run wrote them; without --resume a
# run starts the files anew (so the append is what made the difference). The JSON lines carry
# the CSV's figures. --tensorboard writes one event file per run, read by an independent
# decoder (tests/tfevents_check.py: a bitwise CRC-32C of its own and `protoc --decode_raw`),
# whose scalars equal the CSV's; a flipped byte is caught. The resumed run's header names the
# checkpoint its weights came from.
. "$(dirname "$0")/testlib.sh"
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
CHECK="$(dirname "$0")/tfevents_check.py"

A="--layers 1 --hidden 16 --heads 1 --seq 8 --batch 2 --threads 1 --val-steps 1 --val-every 3 \
  --lr-schedule constant --warmup 0 --checkpoint-dir $TMP/ck"
F="--metrics $TMP/m.csv --metrics-jsonl $TMP/m.jsonl --tensorboard $TMP/tb"
# shellcheck disable=SC2086
"$AXONN" train $A $F --steps 6 --checkpoint-every 4 --quiet >"$TMP/first.out" 2>&1 ||
  { fail "steps 1-6"; cat "$TMP/first.out"; }
cp "$TMP/m.csv" "$TMP/first.csv"
# shellcheck disable=SC2086
"$AXONN" train $A $F --steps 10 --resume >"$TMP/second.out" 2>&1 ||
  { fail "--resume to step 10"; cat "$TMP/second.out"; }

steps() { cut -d, -f1 "$1" | tr '\n' ' '; }
[ "$(steps "$TMP/m.csv")" = "step 1 2 3 4 5 6 7 8 9 10 " ] ||
  fail "resumed CSV holds steps: $(steps "$TMP/m.csv")"
head -5 "$TMP/first.csv" >"$TMP/a"; head -5 "$TMP/m.csv" >"$TMP/b"
cmp -s "$TMP/a" "$TMP/b" || fail "the rows of steps 1-4 changed"
jsteps=$(sed 's/^{"step":\([0-9]*\),.*/\1/' "$TMP/m.jsonl" | tr '\n' ' ')
[ "$jsteps" = "1 2 3 4 5 6 7 8 9 10 " ] || fail "resumed JSON lines hold steps: $jsteps"
grep -q "parameters from checkpoint $TMP/ck/step-00000004 (step 4)" "$TMP/second.out" ||
  { fail "the resumed header does not name its checkpoint:"; grep "parameters" "$TMP/second.out"; }

# the JSON lines are JSON, with the CSV's figures
"$PYTHON" - "$TMP/m.csv" "$TMP/m.jsonl" <<'PY' || fail "JSON lines differ from the CSV"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
objs = [json.loads(line) for line in open(sys.argv[2])]
assert len(rows) == len(objs) == 10, (len(rows), len(objs))
for r, o in zip(rows, objs):
    assert set(o) == set(r), (sorted(o), sorted(r))
    for k, v in r.items():
        assert (o[k] is None) if v == "" else abs(float(v) - o[k]) <= 1e-5 * abs(o[k]), (k, v, o[k])
PY

cp "$TMP/m.csv" "$TMP/resumed.csv"

# without --resume the files start anew
# shellcheck disable=SC2086
"$AXONN" train $A --metrics "$TMP/m.csv" --metrics-jsonl "$TMP/m.jsonl" --steps 2 --quiet \
  >/dev/null 2>&1 || fail "a new run over the files"
[ "$(steps "$TMP/m.csv")" = "step 1 2 " ] || fail "a new run kept old rows: $(steps "$TMP/m.csv")"
[ "$(wc -l <"$TMP/m.jsonl")" -eq 2 ] || fail "a new run kept old JSON lines"

# TensorBoard: one file per run, steps 1-6 and 5-10
set -- "$TMP"/tb/events.out.tfevents.*
[ $# -eq 2 ] || fail "expected 2 event files, found $#"
if ! command -v protoc >/dev/null 2>&1; then
  echo "skipped: protoc not installed (the TensorBoard files are not decoded; scripts/install-deps.sh installs protobuf-compiler)"
else
  # which file is which: the one whose scalars are those of steps 1-6
  first=""; second=""
  for f in "$@"; do
    if "$PYTHON" "$CHECK" "$f" "$TMP/first.csv" >"$TMP/tb1.out" 2>&1; then first=$f; else second=$f; fi
  done
  [ -n "$first" ] && [ -n "$second" ] ||
    { fail "no event file with the scalars of steps 1-6, or two"; cat "$TMP/tb1.out"; }
  awk -F, 'NR == 1 || $1 >= 5' "$TMP/resumed.csv" >"$TMP/second.csv"
  "$PYTHON" "$CHECK" "$second" "$TMP/second.csv" >"$TMP/tb2.out" 2>&1 ||
    { fail "event file of steps 5-10"; cat "$TMP/tb2.out"; }
  grep -q ": 7 records, 6 steps$" "$TMP/tb2.out" || { fail "second event file"; cat "$TMP/tb2.out"; }
  # a flipped byte is caught
  cp "$first" "$TMP/flipped"
  printf 'X' | dd of="$TMP/flipped" bs=1 seek=40 conv=notrunc 2>/dev/null
  "$PYTHON" "$CHECK" "$TMP/flipped" >/dev/null 2>&1 && fail "a flipped byte went unnoticed"
fi
finish
