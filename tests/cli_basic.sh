#!/bin/sh
# Command-line contract of bin/axonn: help, bad input (one clear line on stderr, non-zero exit,
# no output files left behind), and the prep -> train -> save -> sample path on real files.
. "$(dirname "$0")/testlib.sh"


"$AXONN" --help >/dev/null || fail "axonn --help"
"$AXONN" train --help | grep -q -- "--micro-batch" || fail "train --help lacks --micro-batch"
"$AXONN" >/dev/null 2>&1 && fail "axonn with no command must fail"
expect_error "unknown command 'fly'" fly
expect_error "unknown option --nope" train --nope 1
expect_error "expects an integer" train --layers many
expect_error "not divisible by --heads" train --hidden 100 --heads 3 --steps 1
expect_error "not divisible by --micro-batch 3" train --batch 8 --micro-batch 3
expect_error "cannot open" train --data "$TMP/missing.bin" --metrics "$TMP/m.csv" --save "$TMP/s.bin"
[ -e "$TMP/m.csv" ] && fail "metrics file left behind after bad input"
[ -e "$TMP/s.bin" ] && fail "model file left behind after bad input"
# every write of the metrics CSV is checked: a full disk ends the run with one line
expect_error "cannot write metrics file /dev/full" train --steps 2 --val-steps 0 --metrics /dev/full
printf 'garbage that is not a model file, long enough to hold a header? no.' >"$TMP/bad.bin"
expect_error "truncated" train --init "$TMP/bad.bin"
expect_error "needs --model" sample
expect_error "needs --input FILE and --output PREFIX" prep --input x

# a real round trip: text -> shards -> training -> model file -> sample
i=0; : >"$TMP/text.txt"
while [ $i -lt 300 ]; do echo "to be or not to be, that is the question $i" >>"$TMP/text.txt"; i=$((i + 1)); done
"$AXONN" prep --input "$TMP/text.txt" --output "$TMP/t" >/dev/null || fail "prep"
"$AXONN" train --data "$TMP/t_train.bin" --val-data "$TMP/t_val.bin" --layers 2 --hidden 32 \
  --heads 2 --seq 32 --batch 4 --steps 20 --val-every 10 --metrics "$TMP/m.csv" \
  --save "$TMP/model.bin" >"$TMP/train.log" || fail "train on prepared shards"
head -1 "$TMP/m.csv" | grep -q '^step,loss,lr,batch_ms,tokens_per_s,tflops' || fail "metrics header"
[ "$(wc -l <"$TMP/m.csv")" -eq 21 ] || fail "metrics rows: $(wc -l <"$TMP/m.csv")"
grep -q "val  step 20" "$TMP/train.log" || fail "validation line at the last step"
"$AXONN" sample --model "$TMP/model.bin" --prompt "to be" --tokens 40 >"$TMP/sample.txt" ||
  fail "sample"
head -c 5 "$TMP/sample.txt" | grep -q "to be" || fail "sample does not start with the prompt"
expect_error "exceeds the model's maximum sequence length 32" train --init "$TMP/model.bin" --seq 64
expect_error "conflicts with --init" train --init "$TMP/model.bin" --layers 3
expect_error "outside the vocabulary" train --data "$TMP/t_train.bin" --vocab 50 --steps 1 \
  --val-steps 0

# bench gemm|train on a tiny model: a table row and a JSON line; bad backend choices
"$AXONN" bench --help >"$TMP/bh" || fail "bench --help"
for b in gemm train allreduce p2p optimizer sparse-sync state-copy; do grep -q "^  $b " "$TMP/bh" || fail "bench --help lacks $b"; done
# the README's command list is `axonn --help`, word for word (one table makes both)
"$AXONN" --help >"$TMP/help"
awk '/^<!-- axonn --help -->/ { on = 1; next } on && /^```$/ { if (++fence == 2) exit; next } on && fence == 1' \
  "$(dirname "$0")/../README.md" >"$TMP/readme-help"
cmp -s "$TMP/help" "$TMP/readme-help" || { fail "README's command list is not axonn --help:"; diff "$TMP/readme-help" "$TMP/help"; }
"$AXONN" bench train --models 2:32:2:16:2:256 --steps 2 --warmup 1 --size 128 --reps 1 \
  --json "$TMP/b.jsonl" >"$TMP/b.out" || fail "bench train"
grep -q "^2:32:2:16:2:256 .*%" "$TMP/b.out" || { fail "bench train: no result row"; cat "$TMP/b.out"; }
grep -q '"bench":"train".*"percent_of_peak"' "$TMP/b.jsonl" || fail "bench train: no JSON line"
# bench state-copy on a tiny stage: every mode timed, the designs' sums derived from them
"$AXONN" bench state-copy --layers 1 --hidden 32 --heads 2 --vocab 64 --seq 16 --repeat 1 \
  --json "$TMP/sc.jsonl" >"$TMP/sc.out" || fail "bench state-copy"
grep -q "^extra CPU a step over AdamW in place: today" "$TMP/sc.out" ||
  { fail "bench state-copy: no result line"; cat "$TMP/sc.out"; }
python3 - "$TMP/sc.jsonl" <<'PY' || fail "bench state-copy: JSON line"
import json, sys
r = json.loads(open(sys.argv[1]).read())
assert r["bench"] == "state_copy" and r["holders"] == 2, r
assert r["file_bytes"] > 12 * r["params"], r  # the stage file: the state plus its header
for k in ("adamw_in_place_ms", "checkpoint_copy_ms", "checkpoint_copy_part_ms",
          "adamw_out_of_place_ms", "adamw_zero_copy_ms", "crc_ms", "crc_cached_ms"):
    assert r[k] > 0, (k, r)
extra = r["adamw_zero_copy_ms"] - r["adamw_in_place_ms"]  # the update as built
assert abs(r["extra_zero_copy_crc_ms"] - (extra + r["crc_ms"])) < 1e-2, r
assert abs(r["extra_zero_copy_split_crc_ms"] - (extra + r["crc_ms"] / 2)) < 1e-2, r
assert r["extra_today_ms"] == r["checkpoint_copy_ms"], r
assert r["extra_today_split_crc_ms"] == r["checkpoint_copy_part_ms"], r
PY
expect_error "--hidden 30 is not divisible by --heads 4" bench state-copy --hidden 30 --heads 4
expect_error "must be one of fp32|bf16|fp16" bench gemm --precision fp8
expect_error "needs --device cuda" bench train --precision bf16 --models a
expect_error "unknown --device 'tpu'" bench gemm --device tpu

# compare: one float changed in the key bias passes (it has no effect on the output) unless
# --tol 0 asks for bit identity; the same change in the query bias fails
set -- $(od -An -t d4 -j 8 -N 24 "$TMP/model.bin")   # max_seq vocab layers heads channels padded
qkvb=$(( (1024 + 4 * ($6 * $5 + $1 * $5 + 2 * $3 * $5 + $3 * 3 * $5 * $5)) ))
patch() { cp "$TMP/model.bin" "$TMP/$1.bin"
  printf '\000\000\200\077' | dd of="$TMP/$1.bin" bs=1 seek="$2" conv=notrunc 2>/dev/null; }
patch key $((qkvb + 4 * $5)); patch query "$qkvb"
"$AXONN" compare "$TMP/model.bin" "$TMP/model.bin" --tol 0 >/dev/null || fail "compare: a file with itself"
"$AXONN" compare "$TMP/model.bin" "$TMP/key.bin" --tol 1e-5 >"$TMP/c" || fail "compare: key bias judged"
grep -q "qkvb key .*not judged" "$TMP/c" || fail "compare: no line for the key bias"
"$AXONN" compare "$TMP/model.bin" "$TMP/key.bin" --tol 0 >/dev/null && fail "compare --tol 0 missed the key bias"
"$AXONN" compare "$TMP/model.bin" "$TMP/query.bin" --tol 1e-5 >/dev/null && fail "compare missed the query bias"

finish
