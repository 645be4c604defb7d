#!/bin/sh
# Communication benchmarks under mpiexec: `bench p2p` prints one OSU-style row per size with
# positive latency and bandwidth (and JSON lines that parse), refuses to run on one rank with
# one clear message; `bench allreduce --bucket-size` times the training chunks k x bucket for
# k = 1, 2, 4, 8, every result checked exactly; the size sweep has the blocking MPI_Allreduce
# column (fp32 and bf16) and ends with a positive memory-traffic bound. Short runs: this is a
# test, not a measurement: nothing here depends on how fast anything ran. scripts/bench-grid.sh
# (make bench) runs end to end on a tiny model.
# MPIEXEC may carry flags: it is split on purpose.
# shellcheck disable=SC2086
. "$(dirname "$0")/testlib.sh"
MPIEXEC=${MPIEXEC:-mpiexec}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

# p2p: sizes 1 B .. 64 KiB = 17 rows
if ! timeout 120 $MPIEXEC -n 2 "$AXONN" bench p2p --max-bytes 64K --iters 100 --window 8 \
    --json "$TMP/p2p.jsonl" >"$TMP/p2p.txt" 2>&1; then
  fail "bench p2p"; cat "$TMP/p2p.txt"
fi
rows=$(grep -c '^ *[0-9]' "$TMP/p2p.txt")
[ "$rows" -eq 17 ] || { fail "bench p2p printed $rows rows, expected 17"; cat "$TMP/p2p.txt"; }
grep -q "host buffers" "$TMP/p2p.txt" || fail "bench p2p does not say which buffers"
"$PYTHON" - "$TMP/p2p.jsonl" <<'EOF' || fail "bench p2p JSON"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["bytes"] for l in lines] == [2 ** i for i in range(17)], "sizes"
for l in lines:
    # well-formed, never how fast: positive (printed to 6 significant digits, so a slow,
    # loaded run cannot round a rate to 0) and consistent with each other
    assert l["latency_us"] > 0 and l["pingpong_mbs"] > 0 and l["stream_mbs"] > 0, l
    assert abs(l["pingpong_mbs"] - l["bytes"] / l["latency_us"]) <= 1e-4 * l["pingpong_mbs"], l
    # the traffic counters: one message of `bytes` per ping, no link emulated
    assert l["wire_bytes"] == l["bytes"] and l["emulated"] is False, l
EOF
grep -q "wire(B)" "$TMP/p2p.txt" || fail "bench p2p: no wire(B) column"
# one rank: one line from rank 0, non-zero exit
$MPIEXEC -n 1 "$AXONN" bench p2p >"$TMP/one.out" 2>"$TMP/one.err" && fail "bench p2p on 1 rank"
if [ "$(wc -l <"$TMP/one.err")" -ne 1 ] || ! grep -q "needs 2 ranks" "$TMP/one.err"; then
  fail "bench p2p on 1 rank: message"; cat "$TMP/one.err"
fi
# a JSON file that cannot be written: found before measuring, or (a full device) when written;
# either way one line from rank 0 and a non-zero exit
$MPIEXEC -n 2 "$AXONN" bench p2p --max-bytes 16 --json "$TMP/no/such/dir/p.json" >/dev/null \
  2>"$TMP/nojson.err" && fail "bench p2p --json into a missing directory"
[ "$(grep -c 'axonn: error' "$TMP/nojson.err")" -eq 1 ] || { fail "bench p2p --json: not one line"; cat "$TMP/nojson.err"; }
$MPIEXEC -n 2 "$AXONN" bench p2p --max-bytes 16 --iters 5 --json /dev/full >/dev/null \
  2>"$TMP/full.err" && fail "bench p2p --json /dev/full exited 0"
grep -q "cannot write /dev/full: No space left on device" "$TMP/full.err" || { fail "bench p2p --json /dev/full: message"; cat "$TMP/full.err"; }
# more ranks: only 0 and 1 measure, the others wait
timeout 120 $MPIEXEC -n 3 "$AXONN" bench p2p --max-bytes 16 --iters 20 --window 0 \
  >"$TMP/three.txt" 2>&1 || { fail "bench p2p on 3 ranks"; cat "$TMP/three.txt"; }

# all-reduce of the training chunks: 4 rows (k = 1, 2, 4, 8), all correct
if ! timeout 120 $MPIEXEC -n 2 "$AXONN" bench allreduce --bucket-size 16K --algos ring,mpi \
    --iters 5 --json "$TMP/ar.jsonl" >"$TMP/ar.txt" 2>&1; then
  fail "bench allreduce --bucket-size"; cat "$TMP/ar.txt"
fi
[ "$(grep -c '^ *[1248] ' "$TMP/ar.txt")" -eq 4 ] || { fail "bucket rows"; cat "$TMP/ar.txt"; }
grep -q BAD "$TMP/ar.txt" && fail "bench allreduce --bucket-size: wrong sums"
[ "$(grep -c '"bucket_size":16384,"coarsening":8,"correct":true' "$TMP/ar.jsonl")" -eq 2 ] ||
  fail "bench allreduce JSON lacks the k = 8 chunk"
$MPIEXEC -n 2 "$AXONN" bench allreduce --bucket-size 1K --coarsening 2,zero >/dev/null \
  2>"$TMP/bad.err" && fail "bad --coarsening accepted"
[ "$(wc -l <"$TMP/bad.err")" -eq 1 ] || { fail "bad --coarsening: not one line"; cat "$TMP/bad.err"; }

# size sweep: 5 rows of 4 checked columns, then the bound at the largest size
for type in f32 bf16; do
  if ! timeout 120 $MPIEXEC -n 2 "$AXONN" bench allreduce --min-bytes 4K --max-bytes 64K \
      --iters 3 --type $type --json "$TMP/sweep.jsonl" >"$TMP/sweep.txt" 2>&1; then
    fail "bench allreduce sweep ($type)"; cat "$TMP/sweep.txt"
  fi
  [ "$(grep -c "^ *[0-9]* *[0-9]* *$type .*ok.*ok.*ok.*ok" "$TMP/sweep.txt")" -eq 5 ] ||
    { fail "sweep ($type): expected 5 rows of 4 correct columns"; cat "$TMP/sweep.txt"; }
  grep -q "| mpi-blocking" "$TMP/sweep.txt" || fail "sweep ($type): no mpi-blocking column"
  grep -Eq "^# memory-traffic bound at 65536 B .* algbw <= [0-9.e+-]+ GB/s; mpi-blocking [0-9]+% mpi [0-9]+% ring [0-9]+% rhd [0-9]+% of it" \
    "$TMP/sweep.txt" || { fail "sweep ($type): no memory-traffic bound line"; cat "$TMP/sweep.txt"; }
done
[ "$(grep -c '"algo":"memory-bound"' "$TMP/sweep.jsonl")" -eq 2 ] || fail "bound JSON lines"
grep -q "^#   on the wire per all-reduce (bytes: most by one rank / all ranks / all ranks between nodes): mpi-blocking 0 / 0 / 0; mpi 65536 / 131072 / 0; ring 65536 / 131072 / 0; rhd 65536 / 131072 / 0" \
  "$TMP/sweep.txt" || { fail "sweep: bytes on the wire"; cat "$TMP/sweep.txt"; }
"$PYTHON" - "$TMP/sweep.jsonl" <<'EOF' || fail "bench allreduce JSON: bytes on the wire"
import json, sys
for l in map(json.loads, open(sys.argv[1])):
    if l["algo"] == "memory-bound": continue
    # 2 ranks: each sends its whole buffer once (mpi counts what the ring would: MPI's own
    # bytes are invisible; the blocking MPI_Allreduce counts none), all within the one node
    want = 0 if l["algo"] == "mpi-blocking" else l["bytes"]
    assert l["wire_bytes_rank_max"] == want and l["wire_bytes_sum"] == 2 * want, l
    assert l["inter_node_bytes_sum"] == 0 and l["emulated"] is False, l
EOF
$MPIEXEC -n 2 "$AXONN" bench allreduce --algos ring,nccl >/dev/null 2>"$TMP/algo.err" &&
  fail "unknown --algos accepted"
grep -q "unknown algorithm 'nccl'" "$TMP/algo.err" || { fail "bad --algos message"; cat "$TMP/algo.err"; }

# the grid benchmark script: one repeat on a tiny model
if ! REPEAT=1 STEPS=2 MPIEXEC="$MPIEXEC" timeout 120 scripts/bench-grid.sh "$AXONN" --layers 2 \
    --hidden 32 --heads 2 --seq 16 --vocab 256 >"$TMP/grid.txt" 2>&1; then
  fail "scripts/bench-grid.sh"; cat "$TMP/grid.txt"
fi
SPEEDUP='([0-9]+\.[0-9][0-9]x|n/a)'
grep -Eq "^median over 1 repeats: data 1x2 speedup $SPEEDUP .* $SPEEDUP at limit 2, $SPEEDUP at limit 8" \
  "$TMP/grid.txt" || { fail "bench-grid summary line"; cat "$TMP/grid.txt"; }
[ "$(grep -c '^stage [01]: idle' "$TMP/grid.txt")" -eq 2 ] || fail "bench-grid idle lines"
grep -Eq "^noise: 1x1 from [0-9.e+-]+ to [0-9.e+-]+ ms \(spread ([0-9]+%|n/a) of the fastest\); [0-3] of 3 speedups" \
  "$TMP/grid.txt" || { fail "bench-grid noise line"; cat "$TMP/grid.txt"; }

# bench compress: a codec row per codec, plain and CaSync rows over two emulated links, every
# replica identical, JSON rows with the issue's fields; the cost model's score (each compressed
# row a case, right or wrong with the time it loses) adds up
if ! timeout 300 $MPIEXEC -n 2 "$AXONN" bench compress --codecs "onebit:ef=1,dgc,powersgd:rank=2" \
    --sizes 256K --links 1Gbps,100Gbps --iters 2 --codec-bytes 1M --json "$TMP/cb.jsonl" \
    >"$TMP/cb.txt" 2>&1; then
  fail "bench compress"; cat "$TMP/cb.txt"
fi
grep -q DIFF "$TMP/cb.txt" && fail "bench compress: replicas differ"
"$PYTHON" - "$TMP/cb.jsonl" <<'EOF' || { fail "bench compress JSON"; cat "$TMP/cb.txt"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
codec = [r for r in rows if r["row"] == "codec"]
ar = [r for r in rows if r["row"] == "allreduce"]
need = {"codec", "sync", "ranks", "bytes", "link_gbps", "time_us", "wire_bytes", "speedup_vs_plain"}
assert len(codec) == 3 and len(ar) == 2 * (1 + 3 * 2), (len(codec), len(ar))
assert all(need <= set(r) for r in codec + ar)
assert all(r["time_us"] > 0 and r["wire_bytes"] > 0 and r["replicas_identical"] for r in ar)
plain = [r for r in ar if r["codec"].startswith("none")]
onebit = [r for r in ar if r["codec"].startswith("onebit")]
assert all(o["wire_bytes"] < p["wire_bytes"] / 20 for o in onebit for p in plain)
# the cost model's score: every compressed row is a case, right or wrong with its loss
score = [r for r in rows if r["row"] == "score"]
cases = [r for r in ar if not r["codec"].startswith("none")]
assert len(score) == 1 and score[0]["cases"] == len(cases) == 12, (score, len(cases))
s = score[0]
assert s["right"] + s["compress_slower"] + s["plain_slower"] + s["wrong_k"] == s["cases"], s
assert s["right"] == sum(1 for r in cases if not r["model_wrong"])
assert all((r["model_loss"] > 0) == r["model_wrong"] for r in cases)
assert abs(s["max_loss"] - max([r["model_loss"] for r in cases])) < 1e-3
assert abs(s["fraction_right"] - s["right"] / s["cases"]) < 1e-3
EOF
grep -q "^# cost model: right in [0-9]* of 12 cases" "$TMP/cb.txt" ||
  { fail "bench compress: no score line"; cat "$TMP/cb.txt"; }
expect_error "--codecs" bench compress --codecs nosuch --allreduce-rows 0
expect_error "--links" bench compress --links 10parsecs --codec-rows 0

finish
