#!/bin/sh
# Zen's push and pull imbalance (thesis Definition 3.6) on Zipf(1) batches of 8192 tokens a rank
# over GPT-2's 50257 rows, from `axonn bench sparse-sync` (JSON push_imbalance,
# pull_imbalance) on 2, 4, 8 and 16 ranks (oversubscribed: counts, not times; rows of 4 floats):
#  - with balanced owners (--zen-owners balanced) both are below the thesis's 1.1 at every count;
#  - with h_0 (the thesis's hash, the default) they are printed beside them, and the pull is
#    below 1.1 (the push is not at 8 and 16 ranks: Theorem 3.2's sqrt(n log n / m)).
. "$(dirname "$0")/mpilib.sh"

# ratio FILE KEY: KEY's value on the JSON line of the zen row
ratio() { sed -n "s/.*\"algo\":\"zen\".*\"$2\":\([0-9.]*\).*/\1/p" "$1" | head -n 1; }

for np in 2 4 8 16; do
  for owners in hash balanced; do
    out="$TMP/$owners-$np"
    if ! timeout 120 $MPIEXEC -n "$np" "$AXONN" bench sparse-sync --vocabs 50257 --tokens 8192 \
        --cols 4 --iters 1 --warmup 0 --zen-owners "$owners" --json "$out.jsonl" \
        >"$out.log" 2>&1; then
      fail "$np ranks, $owners: the bench failed"; cat "$out.log"; continue
    fi
    push=$(ratio "$out.jsonl" push_imbalance); pull=$(ratio "$out.jsonl" pull_imbalance)
    echo "  $np ranks, owners by $owners: push imbalance $push, pull $pull"
    [ -n "$push" ] && [ -n "$pull" ] || { fail "$np ranks, $owners: no imbalance in the JSON"; continue; }
    awk -v p="$pull" 'BEGIN { exit !(p < 1.1) }' || fail "$np ranks, $owners: pull imbalance $pull"
    [ "$owners" = hash ] && continue
    awk -v p="$push" 'BEGIN { exit !(p < 1.1) }' || fail "$np ranks, balanced: push imbalance $push"
  done
done
finish
