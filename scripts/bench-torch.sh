#!/bin/sh
# PyTorch on the same model as `axonn bench train` model (a), one thread, same step (forward,
# backward, clipping, AdamW), for comparison. Uses scripts/torch_reference.py with the weights
# axonn initializes. Needs a python3 with torch (Debian: apt-get install python3-torch);
# without one it says so and exits 0. Reads axonn's figure from the JSON lines of bench train.
# Usage: scripts/bench-torch.sh BIN JSONL
set -eu
BIN=${1:-bin/axonn}
JSONL=${2:-build/bench.jsonl}
PY=""
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null 2>&1 && "$p" -c "import torch, numpy" >/dev/null 2>&1; then PY=$p; break; fi
done
if [ -z "$PY" ]; then
  echo "bench-torch: skipped: no python3 with torch and numpy (Debian: apt-get install python3-torch)"
  exit 0
fi
TMP=$(mktemp -d /tmp/axonn-torch-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
"$BIN" train --layers 4 --hidden 128 --heads 4 --seq 64 --vocab 256 --steps 0 --val-steps 0 \
  --quiet --save "$TMP/a.bin" >/dev/null
echo "PyTorch ($("$PY" -c 'import torch; print(torch.__version__)')), model a, 1 thread, 3 runs:"
for run in 1 2 3; do
  "$PY" scripts/torch_reference.py --model "$TMP/a.bin" --batch 4 --seq 64 --steps 60 \
    --warmup-steps 10 --mode bench --threads 1 | tee -a "$TMP/torch.txt"
done
torch_ms=$(sed 's/.*median step \([0-9.]*\) ms.*/\1/' "$TMP/torch.txt" | sort -n | sed -n 2p)
axonn_ms=$(grep '"model":"a"' "$JSONL" 2>/dev/null | tail -1 | sed 's/.*"step_ms":\([0-9.]*\).*/\1/')
if [ -n "$axonn_ms" ]; then
  awk -v t="$torch_ms" -v a="$axonn_ms" 'BEGIN { printf "model a, 1 thread: PyTorch median %.2f ms, axonn %.2f ms: axonn %.2fx faster\n", t, a, t / a }'
fi
