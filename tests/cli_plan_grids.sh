#!/bin/sh
# `axonn plan --rank-grids`: GPT-20B on 32 ranks of Perlmutter and GPT-80B on 1024 list grids
# whose sizes multiply to the ranks, fastest first, with a JSON that parses and holds every
# valid grid; --grid shows one grid's collectives; bad input is one error line and exit 1; plain
# `axonn plan` is untouched. The 60 s bound is a guard against a runaway search, not a speed test.
. "$(dirname "$0")/testlib.sh"

# check_table FILE RANKS: a header, >= 5 grid lines, sizes multiplying to RANKS, sorted by time
check_table() {
  head -1 "$1" | grep -q "^rank grids: .* on $2 ranks of .*; batch [0-9]* sequences, micro-batch" ||
    fail "$2 ranks: no header line: $(head -1 "$1")"
  awk -v ranks="$2" '/^ *[0-9]/ {
      n++
      if ($2 * $3 * $4 * $5 * $6 != ranks) { print "grid " $2 "x" $3 "x" $4 "x" $5 "x" $6 " is not " ranks " ranks"; bad = 1 }
      if (n > 1 && $8 + 0 < prev) { print "line " n " is faster than the one before"; bad = 1 }
      prev = $8 + 0 }
    END { if (n < 5) { print n " grid lines"; bad = 1 }; exit bad }' "$1" || fail "$2 ranks: bad table"
}

start=$(date +%s)
timeout 60 "$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --machine perlmutter --top 10 \
  --json "$TMP/20b.json" >"$TMP/20b.txt" || fail "gpt-20b on 32 ranks failed"
check_table "$TMP/20b.txt" 32
timeout 60 "$AXONN" plan --rank-grids --model gpt-80b --ranks 1024 --top 5 >"$TMP/80b.txt" ||
  fail "gpt-80b on 1024 ranks failed"
check_table "$TMP/80b.txt" 1024
[ $(($(date +%s) - start)) -lt 60 ] || fail "the two searches took 60 s or more"
head -4 "$TMP/20b.txt"

# the JSON: every valid grid (as many as the table's footer says), fastest first, the classes
python3 - "$TMP/20b.json" "$TMP/20b.txt" <<'EOF' || fail "JSON does not match the table"
import json, re, sys
doc = json.load(open(sys.argv[1]))
valid = int(re.search(r"valid grids that fit: (\d+) of", open(sys.argv[2]).read()).group(1))
grids = doc["grids"]
assert doc["ranks"] == 32 and doc["machine"]["name"] == "perlmutter", doc["machine"]
assert len(grids) == valid, (len(grids), valid)
assert all(g["g_inter"] * g["gx"] * g["gy"] * g["gz"] * g["g_data"] == 32 for g in grids)
assert all(a["step_seconds"] <= b["step_seconds"] for a, b in zip(grids, grids[1:]))
assert all(g["memory_bytes"]["total"] <= doc["machine"]["device_memory_bytes"] for g in grids)
assert all("device memory" in g["unfit"] for g in doc["unfit"])
classes = ["AG_z", "RS_z", "AR_y", "AR_x", "AR_z", "AR_data", "p2p", "tied"]
for g in grids:
    assert sorted(g["classes"]) == sorted(classes)
    total = sum(g["classes"][c]["seconds"] for c in classes)
    assert abs(total - g["seconds"]) <= 1e-9 * max(1, g["seconds"]), (total, g["seconds"])
EOF

# one grid: its line and every collective; placement-agnostic prices every group the same
out=$("$AXONN" plan --rank-grids --model gpt-20b --grid 1,2,2,8,1 --machine frontier) ||
  fail "--grid failed"
echo "$out" | grep -q "^AG_z qkv .*allgather .*z(8)" || fail "--grid lacks the qkv all-gather"
echo "$out" | grep -q "^AR_x attproj fwd .*x(2)" || fail "--grid lacks the attproj all-reduce"
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --placement agnostic --top 3 |
  grep -q "placement-agnostic" || fail "--placement agnostic not in the header"

# a machine file is the same as the built-in of the same numbers
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --top 0 >"$TMP/builtin.txt"
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --top 0 \
  --machine "$(dirname "$0")/../data/machines/perlmutter.machine" >"$TMP/file.txt"
cmp -s "$TMP/builtin.txt" "$TMP/file.txt" || fail "perlmutter.machine ranks differently from perlmutter"

# memory: with G_inter 1 on 40 GB A100s, pure data parallelism (40 GB of bf16 weights and as
# many gradients a rank) is not ranked but listed apart, saying why; the optimizer on the device
# makes more grids unfit; --compare-placement prints both rankings with the tie rule
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --max-inter 1 --top 0 >"$TMP/g1.txt" ||
  fail "--max-inter 1 failed"
grep -q "^  - 1x1x1x1x32 Bm 1: .* GB a rank > 40.0 GB of device memory (weights 40.2 + gradients 40.2" \
  "$TMP/g1.txt" || fail "1x1x1x1x32 not listed apart with its reason"
awk '/^ *[0-9]/ && $2 == 1 && $3 == 1 && $4 == 1 && $5 == 1 { exit 1 }' "$TMP/g1.txt" ||
  fail "1x1x1x1x32 ranked"
unfit() { sed -n 's/^grids that do not fit the device memory (\([0-9]*\)).*/\1/p' "$1"; }
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --max-inter 1 --top 0 --optimizer device \
  >"$TMP/g1dev.txt" || fail "--optimizer device failed"
[ "$(unfit "$TMP/g1dev.txt")" -gt "$(unfit "$TMP/g1.txt")" ] ||
  fail "--optimizer device does not exclude more grids"
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --max-inter 1 --compare-placement \
  --top 3 >"$TMP/pair.txt" || fail "--compare-placement failed"
grep -q "| placement-aware .*| placement-agnostic" "$TMP/pair.txt" || fail "no pair header"
[ "$(grep -c '^ *[0-9] | 1x' "$TMP/pair.txt")" -eq 3 ] || fail "not 3 ranked lines"
grep -q "ties (step times within 1e-9 relative)" "$TMP/pair.txt" || fail "no tie rule"
# a machine without device_memory_gb checks nothing: the communication-only ranking of old
printf 'name = nomem\ngpus_per_node = 4\nintra_bw = 100GB/s\ninter_bw = 25GB/s\n' >"$TMP/nomem.machine"
"$AXONN" plan --rank-grids --model gpt-20b --ranks 32 --machine "$TMP/nomem.machine" --top 1 \
  >"$TMP/nomem.txt" || fail "a machine without device_memory_gb failed"
grep -q "device memory unknown (not checked)" "$TMP/nomem.txt" || fail "no 'not checked'"
grep -q "grids that do not fit" "$TMP/nomem.txt" && fail "grids excluded without a device memory"
expect_error "--compare-placement takes neither" plan --rank-grids --model gpt-20b --ranks 32 \
  --compare-placement --json "$TMP/x.json"

# bad input: one line, exit 1
expect_error "unknown machine 'cray-1'" plan --rank-grids --model gpt-20b --ranks 32 --machine cray-1
expect_error "--ranks N is required" plan --rank-grids --model gpt-20b --ranks 0
# 37 is prime, above the 32 layers, and divides neither C = 7168, the vocabulary nor the batch
expect_error "no grid of 37 ranks fits" plan --rank-grids --model gpt-20b --ranks 37
expect_error "is not a preset" plan --rank-grids --model gpt-7 --ranks 8
expect_error "Gx=3 does not divide" plan --rank-grids --model gpt-20b --grid 1,3,1,1,1
expect_error "has 4 ranks, not --ranks 8" plan --rank-grids --model gpt-20b --grid 1,2,2,1,1 --ranks 8
expect_error "unknown option --colour" plan --rank-grids --ranks 8 --colour red
printf 'name = x\ngpus_per_node = 4\nintra_bw = 100GB/s\n' >"$TMP/bad.machine"
expect_error "no 'inter_bw" plan --rank-grids --ranks 8 --machine "$TMP/bad.machine"

# plain `axonn plan` is the memory plan, as before
"$AXONN" plan --g-inter 2 --batch 4 | head -1 | grep -q "^memory plan" || fail "plain plan changed"
finish
