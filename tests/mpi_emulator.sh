#!/bin/sh
# The link emulator and the traffic counters end to end, under mpiexec (docs/emulator.md):
#  - bad network options on several ranks: one line, from rank 0, a non-zero exit, no output
#    file left behind (train and the three MPI benchmarks), misspelled flags too;
#  - training over an emulated link computes exactly what it computes without one (the same
#    losses and weights, bit for bit, on 2x2 and on a 4-stage pipeline, with the communication
#    thread too), and a 4-stage pipeline of tensor-parallel pairs runs over it (no hang);
#  - the summary's `communication` object of a 2x2 run: per rank and step, pipeline_forward
#    and pipeline_backward bytes = the micro-batches' activations, data_parallel bytes = the
#    ring all-reduce's formula (mpi/coll/collectives.h) for the stage's parameter count, exactly
#    (fp32 and bf16), embedding_sync likewise, crossed or not by virtual node, the link
#    labelled emulated;
#  - the benchmarks over an emulated link: bytes on the wire as the formulas say, the times
#    never below what the link needs (a lower bound: how much above is measured, not tested).
# MPIEXEC may carry flags: it is split on purpose.
# shellcheck disable=SC2086
. "$(dirname "$0")/mpilib.sh"
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

# (the classic tied-embedding path: the pair's sum, then wte in the data-parallel ring, whose
# bytes the formulas below count; mpi_sparse_embedding.sh has the sparse one)
COMMON="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --steps 6 --shuffle 0 --seed 7 \
  --val-every 3 --val-steps 1 --threads 1 --allreduce ring --sparse-embedding-sync dense"
LINK="1Gbps,20us"

# ---- bad network options on several ranks: one line from rank 0, nothing left behind
mkdir -p "$TMP/out"
job_error() { # NEEDLE NP ARGS...
  needle=$1; np=$2; shift 2
  timeout 120 $MPIEXEC -n "$np" "$AXONN" "$@" >"$TMP/e.out" 2>"$TMP/e.err"; rc=$?
  what="mpiexec -n $np axonn $*"
  if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then fail "$what: exit $rc"; return; fi
  if [ "$(wc -l <"$TMP/e.err")" -ne 1 ] || ! grep -q -- "$needle" "$TMP/e.err" ||
      ! grep -q "rank 0)$" "$TMP/e.err"; then
    fail "$what: not one line from rank 0 with '$needle':"; cat "$TMP/e.err"
  fi
  [ -z "$(ls -A "$TMP/out")" ] || { fail "$what: left $(ls "$TMP/out")"; rm -rf "$TMP/out"/*; }
}
OUTS="--summary $TMP/out/s.json --metrics $TMP/out/m.csv --save $TMP/out/m.bin"
# a misspelled flag, found before MPI starts (train: alone it exits at once; the benchmarks on
# every launch): still one line, from rank 0
job_error "unknown option --emulate-lnk (did you mean --emulate-link?" 2 train $COMMON $OUTS --emulate-lnk 1Gbps
job_error "unknown option --emulate-lnk (did you mean --emulate-link?" 2 bench p2p --emulate-lnk 1Gbps
job_error "unknown option --emulate-lnk (did you mean --emulate-link?" 2 bench allreduce --emulate-lnk 1Gbps
job_error "--emulate-link: 'abc' is not a bandwidth" 2 train $COMMON --g-data 2 $OUTS --emulate-link abc
job_error "--emulate-link: '10Gbps,' ends with a comma" 4 train $COMMON --g-inter 2 --g-data 2 $OUTS \
  --emulate-link 10Gbps,
job_error "--ranks-per-node 3 does not divide the 4 rank(s)" 4 train $COMMON --g-inter 2 --g-data 2 \
  $OUTS --ranks-per-node 3 --emulate-link $LINK
job_error "--allreduce mpi cannot run over --emulate-link" 2 train $COMMON --g-data 2 $OUTS \
  --allreduce mpi --emulate-link $LINK
job_error "--emulate-link: latency '5parsecs': unknown unit" 2 bench p2p --json "$TMP/out/p.jsonl" \
  --emulate-link 10Gbps,5parsecs
job_error "--ranks-per-node 3 does not divide the job's 2 rank(s)" 2 bench p2p --json "$TMP/out/p.jsonl" \
  --ranks-per-node 3 --emulate-link $LINK
job_error "--emulate-link: bandwidth '0Gbps' must be at least 1 bit/s" 2 bench allreduce \
  --json "$TMP/out/a.jsonl" --emulate-link 0Gbps
job_error "--ranks-per-node 4 does not divide the job's 2 rank(s)" 2 bench allreduce --max-bytes 8K \
  --json "$TMP/out/a.jsonl" --ranks-per-node 4
job_error "--algos mpi cannot run over --emulate-link" 2 bench allreduce --json "$TMP/out/a.jsonl" \
  --algos mpi --emulate-link $LINK
job_error "--emulate-link: bandwidth '10' has no unit" 2 bench optimizer --params 1K --bucket-size 256 \
  --json "$TMP/out/o.jsonl" --emulate-link 10
job_error "--allreduce mpi cannot run over --emulate-link" 2 bench optimizer --params 1K \
  --bucket-size 256 --json "$TMP/out/o.jsonl" --allreduce mpi --emulate-link $LINK

# ---- training over the link: the same numbers as without it
run ref 4 --g-inter 2 --g-data 2 --micro-batch 1 --quiet &&
  run emu 4 --g-inter 2 --g-data 2 --micro-batch 1 --ranks-per-node 2 --emulate-link $LINK \
    --summary "$TMP/emu.json" && same_losses emu ref 0 0
grep -q "^network: EMULATED link 1 Gb/s, latency 20 us, one per direction between 2 virtual" \
  "$TMP/emu.log" || { fail "emu: the header does not say the link is EMULATED"; cat "$TMP/emu.log"; }
grep -q "^communication: .*EMULATED link 1 Gb/s" "$TMP/emu.log" || fail "emu: no communication line"
run thread 4 --g-inter 2 --g-data 2 --micro-batch 1 --ranks-per-node 1 --emulate-link $LINK \
  --progress thread --allreduce-dtype bf16 --quiet --summary "$TMP/bf16.json" &&
  run bf16ref 4 --g-inter 2 --g-data 2 --micro-batch 1 --progress thread --allreduce-dtype bf16 \
    --quiet && same_losses thread bf16ref 0 0
run pipe4ref 4 --layers 4 --g-inter 4 --micro-batch 1 --quiet &&
  run pipe4 4 --layers 4 --g-inter 4 --micro-batch 1 --ranks-per-node 1 --emulate-link $LINK \
    --quiet && same_losses pipe4 pipe4ref 0 0
# with tensor parallelism too (4 x 2 x 1, a stage's pair on a virtual node): a middle stage's
# second rank follows its first's order of messages; that agreement once waited in a blocking
# MPI_Bcast, which kept the link's held sends back, and the job hung in its first step every
# time (--step-timeout ends it here, a failure, instead of the suite's timeout); the losses are
# 4x1's within the tensor-parallel sums' reordering
run pipe4x2 8 --layers 4 --g-inter 4 --gx 2 --micro-batch 1 --ranks-per-node 2 \
  --emulate-link $LINK --step-timeout 60 --quiet && same_losses pipe4x2 pipe4ref 1e-5

# ---- the communication object of the summary, against the formulas
# check_comm FILE RANKS_PER_NODE ELEMENT_BYTES
check_comm() {
  "$PYTHON" - "$@" <<'EOF' || fail "$1: the communication summary is not what the formulas say"
import json, sys
path, rpn, esz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = json.load(open(path))
m, c, run, comm = d["model"], d["config"], d["run"], d["communication"]
P, D, ranks = run["g_inter"], run["g_data"], run["ranks"]
C, T, Vp, L = m["hidden"], m["max_seq"], m["padded_vocab"], m["layers"]
bad = []
def want(cond, what):
    if not cond: bad.append(what)
# the stage's parameters: wte (both ends, tied), wpe (first), 12C^2+13C per block, ln_f (last)
assert L % P == 0
block = 12 * C * C + 13 * C
def stage_params(s):
    n = (L // P) * block
    if s == 0: n += Vp * C + T * C
    if s == P - 1: n += 2 * C + (Vp * C if P > 1 else 0)
    return n
want(sum(stage_params(s) for s in range(P)) - (Vp * C if P > 1 else 0) == m["params"],
     "stage parameters do not add up to the model's %d" % m["params"])
# the ring all-reduce of n elements on p ranks: rank r sends (2n - |seg r+1| - |seg r+2|) e
# (mpi/coll/collectives.h), segments the p near-equal blocks, the first n mod p one longer
def ring_sent(n, p, r, e):
    if p == 1: return 0
    seg = lambda b: n // p + (1 if b % p < n % p else 0)
    return (2 * n - seg(r + 1) - seg(r + 2)) * e
n_micro = c["batch"] // D // c["micro-batch"]
act = c["micro-batch"] * c["seq"] * C * 4
node = lambda r: r // rpn
want(comm["link"]["emulated"] is True and comm["link"]["bandwidth_bits_per_s"] == 1e9 and
     abs(comm["link"]["latency_s"] - 2e-5) < 1e-12, "link %r" % comm["link"])
want(comm["nodes"] == ranks // rpn and comm["node_of_rank"] == [node(r) for r in range(ranks)],
     "nodes %r" % comm["node_of_rank"])
want(comm["steps"] == run["steps"], "steps")
per = comm["per_step"]["ranks"]
for r in range(ranks):
    s, row = r % P, r // P
    k = per[r]
    fwd = n_micro * act if s < P - 1 else 0
    bwd = n_micro * act if s > 0 else 0
    dp = ring_sent(stage_params(s), D, row, esz)  # --allreduce-dtype: fp32 or bf16 on the wire
    emb = ring_sent(Vp * C, 2, 0 if s == 0 else 1, 4) if P > 1 and s in (0, P - 1) else 0  # fp32
    for name, b, peer in (("pipeline_forward", fwd, r + 1), ("pipeline_backward", bwd, r - 1),
                          ("data_parallel", dp, ((row + 1) % D) * P + s),
                          ("embedding_sync", emb, row * P + (P - 1 - s)), ("other", 0, r)):
        got = k[name]
        want(got["bytes"] == b, "rank %d %s: %r bytes per step, the formula says %d" %
             (r, name, got["bytes"], b))
        crossed = b if b and node(peer) != node(r) else 0
        want(got["inter_node_bytes"] == crossed, "rank %d %s: %r bytes between nodes, expected %d" %
             (r, name, got["inter_node_bytes"], crossed))
    want(k["pipeline_forward"]["bytes"] + k["pipeline_backward"]["bytes"] > 0, "rank %d: no pipeline" % r)
    want(k["data_parallel"]["bytes"] > 0, "rank %d: no data_parallel bytes" % r)
    want(k["total"]["bytes"] == sum(k[x]["bytes"] for x in k if x != "total"), "rank %d total" % r)
    want(comm["run_total"]["ranks"][r]["data_parallel"]["bytes"] == dp * run["steps"],
         "rank %d: run total of data_parallel" % r)
for name in per[0]:
    want(comm["per_step"]["sum"][name]["bytes"] == sum(p[name]["bytes"] for p in per),
         "sum of %s" % name)
for b in bad: print("%s: %s" % (path, b))
sys.exit(1 if bad else 0)
EOF
}
[ -s "$TMP/emu.json" ] && check_comm "$TMP/emu.json" 2 4
[ -s "$TMP/bf16.json" ] && check_comm "$TMP/bf16.json" 1 2

# ---- the benchmarks over the link: bytes as the formulas say, never faster than the link
if timeout 120 $MPIEXEC -n 2 "$AXONN" bench p2p --ranks-per-node 1 --emulate-link $LINK \
    --min-bytes 1K --max-bytes 64K --iters 20 --window 4 --json "$TMP/p2p.jsonl" >"$TMP/p2p.txt" 2>&1; then
  grep -q "^# network: EMULATED link 1 Gb/s, latency 20 us" "$TMP/p2p.txt" || fail "bench p2p: not labelled EMULATED"
  "$PYTHON" - "$TMP/p2p.jsonl" <<'EOF' || { fail "bench p2p --emulate-link"; cat "$TMP/p2p.txt"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert [l["bytes"] for l in lines] == [1024 << i for i in range(7)], "sizes"
for l in lines:
    model = (2e-5 + l["bytes"] / 1.25e8) * 1e6
    assert l["emulated"] and l["wire_bytes"] == l["bytes"], l
    assert abs(l["model_us"] - model) <= 1e-5 * model, l
    # half a round trip crosses the link once: never less than the link needs (printed to 6
    # significant digits); a window of sends queues on it, so streaming never beats it
    assert l["latency_us"] >= model * (1 - 1e-5), l
    assert l["stream_mbs"] <= 125 * (1 + 1e-5), l
EOF
else
  fail "bench p2p --emulate-link"; cat "$TMP/p2p.txt"
fi
if timeout 120 $MPIEXEC -n 2 "$AXONN" bench allreduce --ranks-per-node 1 --emulate-link $LINK \
    --min-bytes 4K --max-bytes 64K --iters 3 --warmup 1 --json "$TMP/ar.jsonl" >"$TMP/ar.txt" 2>&1; then
  grep -q "^# network: EMULATED" "$TMP/ar.txt" || fail "bench allreduce: not labelled EMULATED"
  grep -q "on the wire per all-reduce" "$TMP/ar.txt" || fail "bench allreduce: no bytes on the wire"
  "$PYTHON" - "$TMP/ar.jsonl" <<'EOF' || { fail "bench allreduce --emulate-link"; cat "$TMP/ar.txt"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert sorted({l["algo"] for l in lines}) == ["rhd", "ring"], "algorithms"
for l in lines:
    # 2 ranks: each sends its n elements once (ring: half in each phase; rhd: half each way)
    assert l["correct"] and l["emulated"] and l["wire_bytes_rank_max"] == l["bytes"], l
    assert l["wire_bytes_sum"] == 2 * l["bytes"] == l["inter_node_bytes_sum"], l
    model = (l["bytes"] / 1.25e8 + 2e-5) * 1e6   # both halves of a rank's bytes on its link
    assert abs(l["ring_model_us"] - model) <= 1e-5 * model, l
    assert l["time_us"] >= model - 0.01, l
EOF
else
  fail "bench allreduce --emulate-link"; cat "$TMP/ar.txt"
fi
if timeout 120 $MPIEXEC -n 2 "$AXONN" bench optimizer --params 64K --bucket-size 16K --repeat 1 \
    --coarsening 1,4 --ranks-per-node 1 --emulate-link $LINK --json "$TMP/opt.jsonl" >"$TMP/opt.txt" 2>&1; then
  grep -q "^# network: EMULATED" "$TMP/opt.txt" || fail "bench optimizer: not labelled EMULATED"
  grep -Eq "^ +1 .* 262144$" "$TMP/opt.txt" || { fail "bench optimizer: no wire(B)/rank"; cat "$TMP/opt.txt"; }
  "$PYTHON" - "$TMP/opt.jsonl" <<'EOF' || { fail "bench optimizer --emulate-link"; cat "$TMP/opt.txt"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert len(lines) == 2, "rows"
for l in lines:
    assert l["emulated"] and l["allreduce_wire_bytes"] == 65536 * 4, l
EOF
else
  fail "bench optimizer --emulate-link"; cat "$TMP/opt.txt"
fi

finish
