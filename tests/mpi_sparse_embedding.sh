#!/bin/sh
# Zen's sparse embedding sync in training (--sparse-embedding-sync; real MPI) and --compress
# auto's decisions applied:
#  - on 2x2 the first stage sums its row-sparse wte gradient over the data-parallel pair
#    before the tied pair sum: Zen, the all-gather of rows and auto bit for bit one another
#    (on two ranks every algorithm adds a + b), within 1e-6 of the dense path (other order of
#    the same sums) and 1e-5 of the 1x1 run; on 2x3 (Zen on three ranks) within 1e-6 of dense;
#  - --zen-owners hash (2x3; balanced is the default): Zen's losses bit for bit;
#  - Zen in two levels on 2x4 over virtual nodes of 4 ranks (below): losses, header, summary,
#    fewer bytes between nodes than flat Zen; auto's predictions in the summary;
#  - the header names the algorithm and the rows (auto: its predicted times over an emulated
#    link; without a link, that the bytes decided), and the first stage's embedding_sync bytes
#    are printed beside dense's;
#  - Zen with fused embedding sync, or on a grid with one stage, is refused with one line;
#  - --compress auto with the identity codec (never worth compressing: it decides plain
#    everywhere) regroups the parts and is bit for bit the plain sum; with onebit over a slow
#    emulated link it compresses fused groups and trains (2x2, 5 steps, losses near plain's);
#    on one data-parallel rank (2x1) it sends nothing and runs exactly the plain pipeline.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 12 --micro-batch 2 --steps 5 \
  --shuffle 0 --seed 7 --val-steps 0 --lr 3e-3 --threads 1 --allreduce ring"
G="--g-inter 2 --g-data 2"

run ref 1 || exit 1
# (dense is also the bytes baseline and the plain sum of --compress auto below)
run dense 4 $G --sparse-embedding-sync dense --summary "$TMP/dense.json" || exit 1
if run zen 4 $G --sparse-embedding-sync zen --summary "$TMP/zen.json"; then
  same_losses zen dense 1e-6 1e-6
  same_losses zen ref 1e-5
  grep -q "^embedding sync: first step: zen over 2 data-parallel rank(s), [0-9]* of 256 wte rows" \
    "$TMP/zen.log" || { fail "zen: no embedding sync line in the header"; cat "$TMP/zen.log"; }
fi
run ag 4 $G --sparse-embedding-sync allgather && same_losses ag zen 0 0
run auto 4 $G && same_losses auto zen 0 0
# without a link, the bytes alone decide: no time is predicted (no figure for a made-up link);
# over an emulated link, the predicted times are printed
grep -q "^embedding sync: first step: .* (auto: the fewest bytes, no link to price them: zen [0-9]* B, allgather [0-9]* B, dense [0-9]* B)" "$TMP/auto.log" ||
  { fail "auto without a link: not decided by bytes"; cat "$TMP/auto.log"; }
grep "^embedding sync" "$TMP/auto.log" | grep -q "predicted" && fail "auto without a link printed a prediction"
run autolink 4 $G --ranks-per-node 2 --emulate-link 10Gbps,5us && same_losses autolink zen 1e-6 1e-6
grep -q "^embedding sync: first step: .* (auto: predicted zen [0-9.e+-]* ms" "$TMP/autolink.log" ||
  { fail "auto over an emulated link: no prediction in the embedding sync line"; cat "$TMP/autolink.log"; }
run dense3 6 --g-inter 2 --g-data 3 --sparse-embedding-sync dense &&
  run zen3 6 --g-inter 2 --g-data 3 --sparse-embedding-sync zen && same_losses zen3 dense3 1e-6 1e-6
# --zen-owners hash: other owners than the default balanced ones, the same rank-ordered sums, so
# zen's losses bit for bit
run zen3b 6 --g-inter 2 --g-data 3 --sparse-embedding-sync zen --zen-owners hash &&
  same_losses zen3b zen3 0 0

# Zen in two levels: 2x4 on virtual nodes of 4 ranks puts the first stage's column (ranks 0, 2,
# 4, 6) 2 to a node on 2 nodes. Against --zen-hierarchy flat: losses within 1e-6 (the sums add
# in other orders: node by node, rank by rank; mpitest_sparse_hier checks the two-level order
# bit for bit), and both within 1e-5 of the single-rank run of the same batch (mpi_grid.sh's bar
# for a layout: one rank, not an 8-rank dense run, as the reference), the header says two
# levels, the summary's embedding_sync says zen_levels 2 (flat: 1), and the first stage's
# embedding_sync bytes between nodes (its ranks send nothing else of that class across: the
# tied pair shares a node) are fewer than flat Zen's.
# auto over an emulated link: the summary holds every algorithm's predicted bytes and seconds,
# and the one chosen has the fewest seconds.
G24="--g-inter 2 --g-data 4 --ranks-per-node 4 --batch 16"
run ref24 1 --batch 16 &&
  run hier24 8 $G24 --sparse-embedding-sync zen --summary "$TMP/hier24.json" &&
  run flat24 8 $G24 --sparse-embedding-sync zen --zen-hierarchy flat --summary "$TMP/flat24.json" &&
  run auto24 8 $G24 --emulate-link 10Gbps,5us --summary "$TMP/auto24.json" && {
  same_losses hier24 ref24 1e-5
  same_losses flat24 ref24 1e-5
  same_losses hier24 flat24 1e-6 1e-6
  same_losses auto24 flat24 1e-6 1e-6
  grep -q "^embedding sync: first step: zen over 4 data-parallel rank(s), .*, Zen in two levels (2 nodes of 2 ranks) (--sparse-embedding-sync)" \
    "$TMP/hier24.log" || { fail "hier24: no two-level line in the header"; cat "$TMP/hier24.log"; }
  grep -q "two levels" "$TMP/flat24.log" && fail "flat24: --zen-hierarchy flat ran two levels"
  python3 - "$TMP/hier24.json" "$TMP/flat24.json" "$TMP/auto24.json" <<'PY' || fail "2x4: the summaries"
import json, sys
h, f, a = (json.load(open(p)) for p in sys.argv[1:4])
ok = True
def check(cond, what):
    global ok
    if not cond: print("  FAILED: " + what); ok = False
check(h["embedding_sync"]["zen_levels"] == 2 and f["embedding_sync"]["zen_levels"] == 1,
      "zen_levels %s / %s" % (h["embedding_sync"]["zen_levels"], f["embedding_sync"]["zen_levels"]))
def first_stage_crossed(j):  # ranks 0, 2, 4, 6: stage 0 of 2x4
    ranks = j["communication"]["run_total"]["ranks"]
    return sum(ranks[r]["embedding_sync"]["inter_node_bytes"] for r in (0, 2, 4, 6))
hb, fb = first_stage_crossed(h), first_stage_crossed(f)
print("  2x4, nodes of 4: the first stage's embedding_sync bytes between nodes over the run: "
      "two levels %d, flat %d" % (hb, fb))
check(0 < hb < fb, "two-level Zen sent %d bytes between nodes, flat %d" % (hb, fb))
e = a["embedding_sync"]
p = e["predicted"]
print("  auto over 10 Gb/s: %s; predicted zen %.3g s (%d B), allgather %.3g s, dense %.3g s (%d B)" %
      (e["algorithm"], p["zen"]["seconds"], p["zen"]["bytes"], p["allgather"]["seconds"],
       p["dense"]["seconds"], p["dense"]["bytes"]))
check(e["decided_by"] == "auto: cost model over the emulated link", "decided_by " + e["decided_by"])
check(all(p[k]["bytes"] > 0 and p[k]["seconds"] > 0 for k in ("zen", "allgather", "dense")),
      "a predicted cost is missing")
check(min(p, key=lambda k: p[k]["seconds"]) == e["algorithm"], "auto did not take the cheapest")
sys.exit(0 if ok else 1)
PY
}

# bytes: the first stage's sum of wte over the column per step, Zen vs the dense all-reduce
# (printed, not asserted: the touched rows depend on the batch; mpitest_sparse_sync holds the
# byte formulas). Zen's embedding_sync holds its sparse sum and the tied pair's V bytes; dense
# sums wte over the column inside data_parallel, V bytes on two ranks. (dense's own run)
python3 - "$TMP/zen.json" "$TMP/dense.json" <<'PY'
import json, sys
z, d = (json.load(open(p))["communication"]["per_step"]["ranks"] for p in sys.argv[1:3])
V = d[0]["embedding_sync"]["bytes"]  # the pair's sum on two ranks: wte's bytes
print("  first stage's sum of wte over the column per step: zen %s bytes, dense all-reduce %d" %
      ([round(z[r]["embedding_sync"]["bytes"] - V) for r in (0, 2)], V))
PY

expect_job_error "exclude each other" 4 $G --sparse-embedding-sync zen --fuse-embedding-sync 1
expect_job_error "needs --g-inter 2 or more" 2 --g-data 2 --sparse-embedding-sync allgather
expect_job_error "--fusion 4M needs --compress auto" 2 --g-data 2 --fusion 4M

# --compress auto: identity decides plain everywhere, over regrouped parts: the plain sum
# (the plain sum: the dense run above, the same options)
run autoid 4 $G --sparse-embedding-sync dense --compress auto --compress-codec identity \
  --fusion 2K && same_losses autoid dense 0 0
grep -q "^  fusion (Cupcake): .* tensor(s) in [0-9]* group(s)" "$TMP/autoid.log" ||
  { fail "autoid: no fusion line"; cat "$TMP/autoid.log"; }
run pipe21 2 --g-inter 2 && run auto21 2 --g-inter 2 --compress auto && same_losses auto21 pipe21 0 0
# onebit over a slow emulated link: some groups compressed, and it trains
SLOW="--ranks-per-node 1 --emulate-link 100Mbps"
if run auto1 4 $G $SLOW --compress auto --compress-codec onebit:ef=1; then
  n=$(sed -n 's/^  strategy (Espresso): \([0-9]*\) group(s) compressed.*/\1/p' "$TMP/auto1.log")
  [ "${n:-0}" -gt 0 ] || { fail "auto1: Espresso compressed nothing over 100 Mb/s"; cat "$TMP/auto1.log"; }
  a=$(tail -1 "$TMP/auto1.csv" | cut -d, -f2); b=$(tail -1 "$TMP/dense.csv" | cut -d, -f2)
  echo "  onebit auto over 100 Mb/s: $n group(s) of stage 0 compressed; loss at step 5 $a, plain $b"
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 0.05 * b) }' ||
    fail "auto1: loss $a at step 5 is more than 5% from plain's $b"
fi
finish
