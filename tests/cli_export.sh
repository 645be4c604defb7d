#!/bin/sh
# axonn export (issue 49, item 6): a checkpoint as llm.c's model file and as a Hugging Face
# GPT-2 directory (--format safetensors: model.safetensors + config.json):
#  - an independent reader (tests/safetensors_check.py, from the safetensors specification and
#    GPT2Model's names and shapes) checks the header, the byte ranges and every value against
#    the llm.c file of the same checkpoint (Conv1D matrices transposed, wte without padding);
#  - config.json's resid_pdrop, embd_pdrop and attn_pdrop are the run's --dropout and
#    --attention-dropout (the checkpoint's manifest records them);
#  - round trip: `axonn compare` reads the directory back equal to the llm.c file (bit for
#    bit), and `--init DIR` trains on exactly as `--init FILE.bin` does (same losses);
#  - bad input: a truncated or foreign .safetensors, a missing tensor, another dtype: one line.
#  - where python3-torch is installed, the project's PyTorch reference (scripts/torch_reference.py,
#    its own safetensors reader) takes the directory and computes the same losses as axonn on
#    the same tokens, to 1e-4 (else the test says it skipped that). transformers itself is not
#    packaged here: its from_pretrained is not run.
. "$(dirname "$0")/testlib.sh"

R="--seq 16 --batch 4 --threads 1 --val-steps 0"
M="--layers 2 --hidden 32 --heads 2 --vocab 200 $R"
# shellcheck disable=SC2086
"$AXONN" train $M --steps 3 --dropout 0.1 --attention-dropout 0.05 --checkpoint-dir "$TMP/ck" \
  --checkpoint-every 3 --quiet \
  >/dev/null 2>"$TMP/train.err" || { fail "training for the checkpoint failed"; cat "$TMP/train.err"; }
"$AXONN" export --checkpoint "$TMP/ck" --output "$TMP/m.bin" >/dev/null || fail "export llmc"
"$AXONN" export --checkpoint "$TMP/ck" --output "$TMP/hf" --format safetensors >"$TMP/exp.out" ||
  fail "export safetensors"
grep -q "model.safetensors, config.json" "$TMP/exp.out" || fail "export did not name its files"
python3 "$(dirname "$0")/safetensors_check.py" "$TMP/hf" "$TMP/m.bin" || fail "safetensors_check"
# config.json carries the dropouts the run trained with (GPT2Config's names), and says so
python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
sys.exit((c["resid_pdrop"], c["embd_pdrop"], c["attn_pdrop"]) != (0.1, 0.1, 0.05))' "$TMP/hf/config.json" ||
  { fail "config.json's dropouts are not the run's 0.1, 0.1 and 0.05"; grep pdrop "$TMP/hf/config.json"; }
grep -q "resid_pdrop and embd_pdrop 0.1 (--dropout), attn_pdrop 0.05" "$TMP/exp.out" ||
  fail "export did not say the dropouts it wrote"

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

# the directory in the project's PyTorch reference (its own safetensors reader): the losses of
# the same tokens (a shard of 3 x 64 tokens below 200) as axonn's from --init DIR, to 1e-4
PY=
for p in python3 /usr/bin/python3; do # Debian's python3-torch is the system python's
  "$p" -c "import torch, numpy" 2>/dev/null && { PY=$p; break; }
done
if [ -n "$PY" ]; then
  python3 -c 'import struct, sys
toks = [(i * 7919 + i // 3) % 200 for i in range(3 * 64 + 1)]
sys.stdout.buffer.write(struct.pack("256i", 20240520, 1, len(toks), *([0] * 253)) + struct.pack("%dH" % len(toks), *toks))' \
    >"$TMP/tok.bin"
  "$AXONN" train --data "$TMP/tok.bin" --init "$TMP/hf" $R --steps 3 --metrics "$TMP/ax.csv" \
    --shuffle 0 --lr 1e-3 --quiet >/dev/null 2>"$TMP/ax.err" || { fail "--init DIR on the shard"; cat "$TMP/ax.err"; }
  "$PY" "$(dirname "$0")/../scripts/torch_reference.py" --model "$TMP/hf" --data "$TMP/tok.bin" \
    --batch 4 --seq 16 --steps 3 --lr 1e-3 >"$TMP/torch.out" 2>&1 || { fail "torch_reference.py"; cat "$TMP/torch.out"; }
  awk -F, 'NR == FNR { if (FNR > 1) ax[$1] = $2; next }
    $1 == "step" { t = $4; a = ax[$2]; n++; d = (a - t) / t; if (d < 0) d = -d
      printf "  step %d: axonn %s, PyTorch from the safetensors %s (%.1e)\n", $2, a, t, d
      if (a == "" || d > 1e-4) bad = 1 }
    END { exit bad || n != 3 }' "$TMP/ax.csv" FS=' ' "$TMP/torch.out" ||
    fail "the PyTorch reference's losses from the exported directory differ from axonn's by more than 1e-4"
else
  echo "  skipped: the PyTorch reference on the exported directory (python3-torch is not installed here)"
fi
finish
