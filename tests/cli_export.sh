#!/bin/sh
# axonn export (issue 49, item 6): a checkpoint as llm.c's model file and as a Hugging Face
# GPT-2 directory (--format safetensors: model.safetensors + config.json):
#  - an independent reader (tests/safetensors_check.py, from the safetensors specification and
#    GPT2Model's names and shapes) checks the header, the byte ranges and every value against
#    the llm.c file of the same checkpoint (Conv1D matrices transposed, wte without padding);
#  - round trip: `axonn compare` reads the directory back equal to the llm.c file (bit for
#    bit), and `--init DIR` trains on exactly as `--init FILE.bin` does (same losses);
#  - bad input: a truncated or foreign .safetensors, a missing tensor, another dtype: one line.
# Loading the directory into transformers and comparing logits needs python3-torch and
# transformers, which this machine does not have: the test says so when they are missing.
. "$(dirname "$0")/testlib.sh"

R="--seq 16 --batch 4 --threads 1 --val-steps 0"
M="--layers 2 --hidden 32 --heads 2 --vocab 200 $R"
# shellcheck disable=SC2086
"$AXONN" train $M --steps 3 --checkpoint-dir "$TMP/ck" --checkpoint-every 3 --quiet \
  >/dev/null 2>"$TMP/train.err" || { fail "training for the checkpoint failed"; cat "$TMP/train.err"; }
"$AXONN" export --checkpoint "$TMP/ck" --output "$TMP/m.bin" >/dev/null || fail "export llmc"
"$AXONN" export --checkpoint "$TMP/ck" --output "$TMP/hf" --format safetensors >"$TMP/exp.out" ||
  fail "export safetensors"
grep -q "model.safetensors, config.json" "$TMP/exp.out" || fail "export did not name its files"
python3 "$(dirname "$0")/safetensors_check.py" "$TMP/hf" "$TMP/m.bin" || fail "safetensors_check"

"$AXONN" compare "$TMP/m.bin" "$TMP/hf" --tol 0 >"$TMP/cmp.out" 2>&1 ||
  { fail "compare: the directory does not read back as the llm.c file"; cat "$TMP/cmp.out"; }
"$AXONN" compare "$TMP/m.bin" "$TMP/hf/model.safetensors" --tol 0 >/dev/null 2>&1 ||
  fail "compare: the .safetensors file (config.json beside it) does not read back"
for src in m.bin hf; do
  # shellcheck disable=SC2086
  "$AXONN" train $R --steps 2 --init "$TMP/$src" --metrics "$TMP/init-$src.csv" --quiet \
    >/dev/null 2>"$TMP/init.err" || { fail "--init $src"; cat "$TMP/init.err"; }
done
awk -F, 'NR == FNR { l[FNR] = $2; n = FNR; next } $2 != l[FNR] { d = 1 }
  END { exit d || FNR != n || n < 3 }' "$TMP/init-m.bin.csv" "$TMP/init-hf.csv" ||
  fail "--init DIR trains otherwise than --init FILE.bin (the losses differ)"

# bad input: one line, non-zero exit
cp -r "$TMP/hf" "$TMP/cut"
head -c 100 "$TMP/hf/model.safetensors" >"$TMP/cut/model.safetensors"
expect_error "not a safetensors file" compare "$TMP/m.bin" "$TMP/cut"
cp -r "$TMP/hf" "$TMP/renamed"
sed 's/"ln_f.bias"/"ln_f.bias_"/' "$TMP/hf/model.safetensors" >"$TMP/renamed/model.safetensors"
expect_error "no tensor ln_f.bias" compare "$TMP/m.bin" "$TMP/renamed"
cp -r "$TMP/hf" "$TMP/half"
sed 's/"wpe.weight":{"dtype":"F32"/"wpe.weight":{"dtype":"F16"/' "$TMP/hf/model.safetensors" \
  >"$TMP/half/model.safetensors"
expect_error "only F32 is read" compare "$TMP/m.bin" "$TMP/half"
expect_error "llmc|safetensors" export --checkpoint "$TMP/ck" --output "$TMP/x" --format onnx
[ -e "$TMP/x" ] && fail "a bad --format left output behind"

if python3 -c "import torch, transformers" 2>/dev/null; then
  echo "  transformers is installed: scripts/torch_reference.py compares the logits"
else
  echo "  skipped: loading into transformers and comparing logits (python3 torch and transformers are not installed here)"
fi
finish
