#!/bin/sh
# `axonn plan --failure-odds`: 16 nodes with 2 copies print the thesis's figures (group 93.3% at
# k = 2, 80.0% at k = 3; wang-thesis §6.7.2) and the exact table of both placements, the JSON
# holds the same rows, and bad values are one error line each with exit 1.
. "$(dirname "$0")/testlib.sh"

out=$("$AXONN" plan --failure-odds --nodes 16 --replicas 2 --json "$TMP/odds.json") ||
  fail "16 nodes, 2 replicas failed"
echo "$out"
echo "$out" | head -1 | grep -q "^failure odds: 16 nodes, 2 copies" || fail "no header line"
# k, group, ring for k = 1..4 (the default: up to m + 2)
for row in "1 100.000% 100.000%" "2 93.333% 86.667%" "3 80.000% 62.857%" "4 61.538% 36.264%"; do
  echo "$out" | awk -v want="$row" '$1 ~ /^[0-9]+$/ && $1 " " $2 " " $3 == want { found = 1 }
    END { exit !found }' || fail "no row '$row'"
done
[ "$(echo "$out" | grep -c '^ *[0-9]')" -eq 4 ] || fail "expected 4 rows (k = 1..4)"
echo "$out" | grep -q "k=2 93.3% (thesis 93.3%), k=3 80.0% (thesis 80.0%)" ||
  fail "the thesis's figures are not printed"
python3 - "$TMP/odds.json" <<'PY' || fail "JSON does not hold the table"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["nodes"] == 16 and doc["replicas"] == 2, doc
rows = doc["odds"]
assert [r["failed"] for r in rows] == [1, 2, 3, 4], rows
# (ax_jsonw writes 10 significant digits)
assert abs(rows[1]["group"] - 112 / 120) < 1e-9 and abs(rows[2]["group"] - 0.8) < 1e-9, rows
assert abs(rows[2]["ring"] - 352 / 560) < 1e-9, rows
PY

# N not divisible by m: the last m + N mod m nodes are a ring; --failed lists more rows
out=$("$AXONN" plan --failure-odds --nodes 14 --replicas 3 --failed 6) || fail "14 nodes failed"
echo "$out" | grep -q "then nodes 9..13 as a ring of 5" || fail "no remainder ring in: $out"
[ "$(echo "$out" | grep -c '^ *[0-9]')" -eq 6 ] || fail "--failed 6: expected 6 rows"

# bad input: one line, exit 1
expect_error "--replicas 0 is out of range" plan --failure-odds --nodes 16 --replicas 0
expect_error "--replicas 5 is more than --nodes 4" plan --failure-odds --nodes 4 --replicas 5
expect_error "--nodes N is required" plan --failure-odds --replicas 2
expect_error "--nodes -3 is out of range" plan --failure-odds --nodes -3
expect_error "--failed 9 is more than --nodes 8" plan --failure-odds --nodes 8 --failed 9
expect_error "unknown option --ranks" plan --failure-odds --nodes 8 --ranks 8
"$AXONN" plan --failure-odds --help | grep -q -- "--replicas M" || fail "--help lacks --replicas"
finish
