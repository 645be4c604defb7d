#!/bin/sh
# GPT-2 vocabulary on the command line (llm.c interop), and sample's use of a long prompt:
#  - sample: a prompt longer than the model's context conditions on its LAST tokens
set -u
AXONN=${AXONN:-bin/axonn}
TMP=$(mktemp -d /tmp/axonn-cli-tok-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# --- sample: a prompt longer than the context (8 tokens) keeps its last 8 tokens
i=0; : >"$TMP/bytes.txt"
while [ $i -lt 200 ]; do echo "to be or not to be, that is the question $i" >>"$TMP/bytes.txt"; i=$((i + 1)); done
"$AXONN" prep --input "$TMP/bytes.txt" --output "$TMP/b" >/dev/null || fail "prep (bytes)"
"$AXONN" train --data "$TMP/b_train.bin" --layers 1 --hidden 32 --heads 2 --seq 8 --batch 8 --lr 1e-2 \
  --steps 150 --val-steps 0 --save "$TMP/b.bin" >/dev/null || fail "train a byte-level model"
long="to be or not to be, that is the question 1"
tail=$(printf %s "$long" | tail -c 8)
head=$(printf %s "$long" | head -c $((${#long} - 8)))
"$AXONN" sample --model "$TMP/b.bin" --prompt "$long" --tokens 12 --temperature 0 >"$TMP/long.out" ||
  fail "sample with a long prompt"
"$AXONN" sample --model "$TMP/b.bin" --prompt "$tail" --tokens 12 --temperature 0 >"$TMP/tail.out" ||
  fail "sample with the prompt's last 8 tokens"
{ printf %s "$head"; cat "$TMP/tail.out"; } | cmp -s - "$TMP/long.out" ||
  fail "a long prompt must print whole and continue from its last 8 tokens: got '$(cat "$TMP/long.out")', expected '$head$(cat "$TMP/tail.out")'"

if [ $fails -ne 0 ]; then echo "cli_tokenizer: $fails failure(s)"; exit 1; fi
echo "cli_tokenizer: all checks passed"
