#!/bin/sh
# The collective schemes of the compressed gradient sum in training (Espresso's options, issue
# 20), each forced on every group with --compress auto --compress-scheme, on 1x4 with two
# ranks to a virtual node (--ranks-per-node 2: two nodes):
#  - with the identity codec, the flat all-gather and all-to-all + all-gather, the two-level
#    sums with each CaSync scheme between the nodes, and the plain two-level all-reduce
#    reproduce the uncompressed run: losses within 1e-5 relative, final weights within 1e-4
#    (the sum order is not the flat ring's); the two-level ones add the nodes' sums, in another
#    order than the flat ring, and Adam's normalized step magnifies that rounding where a
#    gradient is near zero: the plain two-level run's weights within 1e-3 of the flat ring's
#    (3.8e-4 on a Xeon with AVX-512 FP16, 2026-11-30; under 1e-4 on the machines before), the
#    two-level CaSync schemes' within 1e-4 of the plain two-level run's;
#  - onebit with error feedback through the two-level all-gather learns like the flat ring;
#  - DGC through the two-level CaSync ring takes Adam's moment over when compression starts
#    (each rank its shard of the node sums' share): the loss after the first compressed step
#    is the plain run's to 2e-3;
#  - the header names the scheme of every group;
#  - bad --compress-scheme input: an unknown option, a model-only 2l+intra one, a two-level one
#    on one node, a gpu/ one (the codecs run on the CPU threads: no GPU codec engine), and
#    --compress-scheme without --compress auto: one clear line, non-zero exit.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --seed 5 \
  --val-steps 0 --threads 1 --lr-schedule constant --warmup 0 --allreduce ring --g-data 4"
NODES="--ranks-per-node 2"
# --fusion none: one group per tensor whatever the costs profiled at start-up, so the groups,
# and onebit's per-message scales with them, are the same on every run
AUTO="--compress auto --fusion none"

# shellcheck disable=SC2086
run ref 4 $NODES --steps 8 || finish
for s in cpu/flat/ag cpu/flat/a2a+ag plain/2l/ar-ring cpu/2l/casync-ring cpu/2l/casync-ps \
  cpu/2l/a2a+ag; do
  n=$(echo "$s" | tr '/+' '__')
  # shellcheck disable=SC2086
  run "$n" 4 $NODES --steps 8 $AUTO --compress-codec identity --compress-scheme "$s" ||
    continue
  case $s in
    plain/2l/*) same_losses "$n" ref 1e-5 1e-3 ;;
    */2l/*) same_losses "$n" plain_2l_ar-ring 1e-5 1e-4 ;;
    *) same_losses "$n" ref 1e-5 1e-4 ;;
  esac
  grep -q "group [0-9]*: .*: $s" "$TMP/$n.log" ||
    { fail "$s: no group takes it in the header"; cat "$TMP/$n.log"; }
  echo "  identity through $s: the uncompressed run's losses"
done

# onebit through the two-level all-gather learns as the flat CaSync ring does (20 steps: the
# loss is then about 0.6 of the first step's on both, 1% apart, against the bars' 0.9 and 5%)
L="--steps 20 $AUTO --compress-codec onebit:ef=1"
# shellcheck disable=SC2086
if run flat1 4 $NODES $L --compress-scheme cpu/flat/casync-ring --summary "$TMP/flat1.json" &&
   run twol1 4 $NODES $L --compress-scheme cpu/2l/ag; then
  a=$(awk -F, 'NR > 1 { v = $2 } END { print v }' "$TMP/twol1.csv")
  b=$(awk -F, 'NR > 1 { v = $2 } END { print v }' "$TMP/flat1.csv")
  f=$(awk -F, 'NR == 2 { print $2 }' "$TMP/twol1.csv")
  echo "  onebit:ef=1 20 steps: two-level all-gather loss $a, flat CaSync ring $b (from $f)"
  awk -v a="$a" -v b="$b" -v f="$f" 'BEGIN { exit !(a < 0.9 * f && a <= 1.05 * b) }' ||
    fail "onebit through cpu/2l/ag: loss $a did not fall like the flat ring's $b (from $f)"
  # what Espresso priced from start-up measurements reaches the header and the summary: CaSync
  # timed alone under ring, PS and all-gather at the probe's seven sizes, and the share of its
  # latency a queued operation pays
  grep -q "measured at start-up: a queued operation pays [0-9]*% .* casync-ring x[0-9.]*" \
    "$TMP/flat1.log" || { fail "flat1: no line of Espresso's measured terms"; cat "$TMP/flat1.log"; }
  python3 - "$TMP/flat1.json" <<'PY' || fail "flat1: the summary lacks Espresso's measured terms"
import json, sys
k = json.load(open(sys.argv[1]))["compression"]["costs"]
sizes = [1024 * 4 ** i for i in range(7)]
for algo in ("ring", "ps", "ag"):
    pts = k["casync_timed"][algo]
    assert [p["bytes"] for p in pts] == sizes, (algo, pts)
    assert all(p["seconds"] > 0 for p in pts), (algo, pts)
assert 0 <= k["queued_latency_paid"] <= 1, k["queued_latency_paid"]
print("  Espresso's measured terms: CaSync ring %s us; a queued operation pays %.0f%%" % (
    ", ".join("%.0f" % (p["seconds"] * 1e6) for p in k["casync_timed"]["ring"]),
    100 * k["queued_latency_paid"]))
PY
fi

# the warm-up's momentum handed to the codec also where the sum goes in two levels: each rank's
# codec holds its shard of the node sums between nodes, so it takes its shard of Adam's moment,
# 1 / the nodes of it (dgc:ratio=1 sends every value: the first compressed step is the plain
# run's but for the order of the sums and Adam's bias correction, as in mpi_compress.sh; from
# a zero momentum it sends half the gradients alone, 1e-2 off)
H="--beta1 0.5 --grad-clip 0 --steps 13"
# shellcheck disable=SC2086
run hplain 4 $NODES $H && run h2l 4 $NODES $H $AUTO --compress-codec dgc:ratio=1 \
  --compress-scheme cpu/2l/casync-ring --compress-warmup 10 &&
  loss_near_at h2l hplain 12 2e-3 # after the first compressed step

expect_job_error "--compress-scheme" 4 $NODES --steps 1 --compress auto --compress-scheme cpu/3l/ag
# (the model-only and GPU schemes are refused whatever the layout, after the start-up's cost
# probes: on 2 ranks, one to a node, which probe in about half the time of 4)
expect_job_error "model only" 2 --g-data 2 --ranks-per-node 1 --steps 1 --compress auto \
  --compress-scheme cpu/2l+intra/ag
expect_job_error "does not apply" 4 --steps 1 --compress auto --compress-scheme cpu/2l/ag
expect_job_error "no GPU codec engine" 2 --g-data 2 --ranks-per-node 1 --steps 1 --compress auto \
  --compress-scheme gpu/2l/ag
expect_job_error "needs --compress auto" 4 $NODES --steps 1 --compress onebit \
  --compress-scheme cpu/flat/ag
finish
