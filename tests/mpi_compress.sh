#!/bin/sh
# Gradient compression in training (real MPI, CaSync over real codecs, real text):
#  - --compress identity (every chunk through CaSync ring and PS) reproduces the uncompressed
#    run exactly, losses and final weights, on 1x2 and 2x2;
#  - DGC's momentum correction replaces Adam's first moment (beta1 0 while it compresses), and
#    its momentum is applied once to each rank's own gradient through CaSync ring and PS: with
#    every value sent, dgc equals identity with --beta1 0 to rounding (it delivers (1 - m) g, to
#    which Adam's step is invariant but for eps; dgc with momentum 0: identity as is, exactly);
#  - the codec that carries the momentum takes Adam's over when compression starts: the loss
#    after the first compressed step is the plain run's to 2e-3 (1.7e-2 off without), also when
#    resumed from the warm-up's last step;
#  - the codec state goes into checkpoints: 10 steps, resume, 10 more equal 20 straight, bit for
#    bit, with onebit's recipe (error feedback, 1-bit Adam's momentum, 3 plain steps, then the
#    variance frozen; a resume with another codec, or with the same codec deciding other parts,
#    warns that the state starts fresh); a resume under the cost model (layer-wise, and
#    --compress auto with its backward timeline) decides on the checkpointed run's measured
#    costs, so it continues that run bit for bit; --compress-remeasure 1 measures them again;
#  - under dynamic loss scaling the codec state follows the scale and tbq's threshold ignores
#    it: an fp32 run that doubles and halves it is the unscaled run bit for bit (onebit, dgc,
#    powersgd, tbq);
#  - the data-parallel bytes of the summary shrink by the codec's ratio (every part compressed:
#    --compress-vectors 1);
#  - ranks that share memory (one machine, no emulated link): the cost model keeps every part
#    plain, one line says so, and the run is the uncompressed one bit for bit (losses and
#    weights), where --compress-min-bytes 0 forces compression and the losses differ; across an
#    emulated link the cost model compresses, and the summary carries the costs it used, every
#    call's latency positive, the plain all-reduce timed over the link and the send's cost the
#    per-message cost it implies; DGC's local clipping, with a threshold every gradient exceeds,
#    changes the losses against the global clip (a switch that did nothing would fail), also
#    where only one stage of two compresses (every stage takes part in the row's norm), and
#    leaves the data-parallel replicas alike where the tied embedding was summed before (every
#    run here fails when the run's end check finds its replicas apart: mpilib.sh);
#  - `axonn plan` prints the cost model's decision table: per part T_orig, T_cpr, K, decision;
#  - bad --compress input (and --compress-codec, --fusion, --sparse-embedding-sync): one clear
#    line, non-zero exit, nothing written.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 4 --seed 5 \
  --val-steps 0 --threads 1 --lr-schedule constant --warmup 0 --allreduce ring"

# identity: exactly the uncompressed run
for grid in "1 2" "2 2"; do
  set -- $grid; np=$(($1 * $2)); g="--g-inter $1 --g-data $2"; n="g$1$2"
  run "ref$n" $np $g --steps 12 || continue
  for sync in ring ps; do
    run "id$sync$n" $np $g --steps 12 --compress identity --compress-sync $sync \
      --compress-min-bytes 0 && same_losses "id$sync$n" "ref$n" 0 0
    grep -q "compression: identity" "$TMP/id$sync$n.log" ||
      { fail "id$sync$n: no compression line in the header"; cat "$TMP/id$sync$n.log"; }
  done
done

# DGC's momentum correction replaces Adam's first moment: dgc:ratio=1 sends every value and
# clears its momentum where it sends, so it delivers (1 - m) times the plain sum (Adam's form of
# the momentum, docs/codecs.md); with the codec's momentum on, Adam runs with beta1 0 (the run
# equals identity with --beta1 0 but for Adam's eps against the scale, here 1e-12, and
# rounding: losses to 1e-5, weights to 1e-3), with momentum 0 it keeps its own (the run equals
# identity as it is, bit for bit); no warm-up (the recipe's would keep the first steps plain)
# and no clipping (its threshold is not scale-free)
for sync in ring ps; do
  D="--g-data 2 --steps 12 --compress-min-bytes 0 --compress-sync $sync --compress-warmup 0 \
    --grad-clip 0 --eps 1e-12"
  run "idb0$sync" 2 $D --compress identity --beta1 0 &&
    run "dgc1$sync" 2 $D --compress dgc:ratio=1 && same_losses "dgc1$sync" "idb0$sync" 1e-5 1e-3
  grep -q "the codec carries the momentum (0.9, DGC's momentum correction): Adam's first moment is off" \
    "$TMP/dgc1$sync.log" || { fail "dgc1$sync: no line about Adam's first moment"; cat "$TMP/dgc1$sync.log"; }
  run "id$sync" 2 $D --compress identity &&
    run "dgc0$sync" 2 $D --compress dgc:ratio=1,momentum=0 && same_losses "dgc0$sync" "id$sync" 0 0
done

# the warm-up's momentum handed to the codec when compression starts: with every value sent
# (dgc:ratio=1, momentum = --beta1 0.5) the first compressed step sums 0.5 of Adam's moment and
# 0.5 of the gradients, Adam's own next moment, so the loss after it (step 12) is the plain
# run's but for Adam's bias correction (1 - 0.5^11) and rounding, where a codec momentum
# started from zero sends half the gradients alone; the 10 plain steps before are the plain
# run's bit for bit. Resumed from the warm-up's last step, the hand-over happens there too (the
# 13 steps straight, bit for bit); resumed past it, the checkpoint's state is kept (above).
H="--g-data 2 --beta1 0.5 --grad-clip 0"
HC="--compress dgc:ratio=1 --compress-min-bytes 0 --compress-warmup 10 --compress-freeze-variance 0 \
  --compress-local-clip 0"
# shellcheck disable=SC2086
if run hplain 2 $H --steps 13 && run hand 2 $H $HC --steps 13; then
  awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $1 <= 10 && $2 != l[$1] {
      printf "step %d: %.9g, plain %.9g\n", $1, $2, l[$1]; bad = 1 }
    END { exit bad }' "$TMP/hplain.csv" "$TMP/hand.csv" || fail "hand: the plain warm-up differs"
  loss_near_at hand hplain 12 2e-3 # after the first compressed step
fi
# shellcheck disable=SC2086
run hhalf 2 $H $HC --steps 10 --checkpoint-dir "$TMP/hck" --checkpoint-every 10 &&
  run hres 2 $H $HC --steps 13 --checkpoint-dir "$TMP/hck" --resume && same_losses hres hand 0 0

# checkpoints carry the codec state: bit-identical resume with error feedback
C="--compress onebit --compress-min-bytes 0 --g-data 2 --compress-warmup 3"
run full 2 $C --steps 20 &&
  run half 2 $C --steps 10 --checkpoint-dir "$TMP/ck" --checkpoint-every 10 &&
  run res 2 $C --steps 20 --checkpoint-dir "$TMP/ck" --resume && {
    [ -f "$TMP/ck/step-00000010/codec-1.bin" ] || fail "no codec state file in the checkpoint"
    same_losses res full 0 0 # 20 straight, bit for bit: losses and weights
  }
run decided 2 $C --compress-min-bytes 4K --steps 12 --checkpoint-dir "$TMP/ck" --resume &&
  { grep -q "compression state .* starts fresh" "$TMP/decided.log" ||
    { fail "resume with other per-part decisions did not warn"; cat "$TMP/decided.log"; }; }
run other 2 --compress topk:ratio=0.1 --compress-min-bytes 0 --g-data 2 --steps 12 \
  --checkpoint-dir "$TMP/ck" --resume &&
  { grep -q "compression state .* starts fresh" "$TMP/other.log" ||
    { fail "resume with another codec did not warn"; cat "$TMP/other.log"; }; }

# a resume decides on what its checkpoint's run measured: across an emulated link the cost
# model decides from costs measured at the start, which a second measurement moves a little (a
# part near the break-even point can flip, and its codec state would start fresh); resumed, the
# run takes the checkpointed run's figures back (layer-wise and --compress auto with the
# backward timeline): its summary's costs are that run's, its losses the straight run's bit for
# bit; --compress-remeasure 1 measures again (other costs; layer-wise)
same_costs() { # SUMMARY_A SUMMARY_B: 0 when the compression costs (the figures) are equal
  python3 -c 'import json, sys
c = [json.load(open(f))["compression"]["costs"] for f in sys.argv[1:]]
for x in c: x.pop("measured_by")
sys.exit(c[0] != c[1])' "$TMP/$1.json" "$TMP/$2.json"
}
measured_by() { # NAME WHO: the summary says who measured its costs
  grep -q "\"measured_by\":\"$2" "$TMP/$1.json" ||
    fail "$1: the summary's costs are not said to be measured by $2"
}
for m in "lw 2 --g-data 2 --ranks-per-node 1 --compress onebit" \
  "auto 4 --g-data 4 --batch 16 --ranks-per-node 2 --compress auto --compress-codec onebit:ef=1 --dp-sync-early 1"; do
  set -- $m; n=$1; np=$2; shift 2
  M="$* --emulate-link 1Gbps --compress-warmup 2 --steps 8"
  run "m$n" $np $M --checkpoint-dir "$TMP/m$n" --checkpoint-every 4 --summary "$TMP/m$n.json" ||
    continue
  # the later checkpoint goes; layer-wise, its measured costs are damaged instead: the resume
  # finds it incomplete once (set-up and resume take the same newest checkpoint) and takes step 4
  if [ "$n" = lw ]; then
    printf 'X' | dd of="$TMP/m$n/step-00000008/measured-1.bin" bs=1 seek=100 conv=notrunc 2>/dev/null
  else
    rm -r "$TMP/m$n/step-00000008"
  fi
  cp -r "$TMP/m$n" "$TMP/m${n}again" # each resume its own
  run "m${n}kept" $np $M --checkpoint-dir "$TMP/m$n" --resume --summary "$TMP/m${n}kept.json" && {
    tail_equal "m${n}kept" "m$n"
    grep -q "resume: compression decides on the costs the run of .* measured" "$TMP/m${n}kept.log" ||
      { fail "m${n}kept: no line saying the checkpoint's costs are kept"; cat "$TMP/m${n}kept.log"; }
    same_costs "m${n}kept" "m$n" || fail "m${n}kept: its costs are not the checkpointed run's"
    measured_by "m${n}kept" "the checkpointed run"
    [ "$n" != lw ] || [ "$(grep -c 'step-00000008 is incomplete or corrupt' "$TMP/m${n}kept.log")" -eq 1 ] ||
      { fail "m${n}kept: the damaged checkpoint not skipped once"; grep corrupt "$TMP/m${n}kept.log"; }
  }
  [ "$n" = lw ] || continue # measuring again: once is enough
  run "m${n}again" $np $M --checkpoint-dir "$TMP/m${n}again" --resume --compress-remeasure 1 \
    --summary "$TMP/m${n}again.json" &&
    { same_costs "m${n}again" "m$n" && fail "m${n}again: --compress-remeasure 1 kept the costs"
      measured_by "m${n}again" "this run"; }
done

# dynamic loss scaling: the codec state keeps gradients at the loss scale (error feedback, the
# momenta, DGC's accumulation, PowerSGD's Q) and follows the scale when it changes (doubled
# after 3 clean steps, halved on the overflow at step 10), and tbq's threshold is in unscaled
# units: in fp32, where powers of 2 scale exactly, the runs are the unscaled ones bit for bit
# (the state left at the old scale: the losses differed from step 5, 8 and 5 on; tbq's tau
# against the scaled values: from step 2)
LS="--g-data 2 --steps 16 --compress-min-bytes 0 --debug-overflow-step 10"
for codec in onebit dgc powersgd tbq:ef=1; do
  n=${codec%%:*}
  # shellcheck disable=SC2086
  run "lsoff$n" 2 $LS --compress $codec --loss-scaling off &&
    run "ls$n" 2 $LS --compress $codec --loss-scaling dynamic --loss-scale-window 3 \
      --summary "$TMP/ls$n.json" &&
    same_losses "ls$n" "lsoff$n" 0 0 && scale_at_end "ls$n" 1048576 1 # 2^16, x8, /2, x4
done

# the summary's data-parallel bytes shrink by the ratio (onebit: 1/32 of fp32, plus scales)
run plain 2 --g-data 2 --steps 3 --summary "$TMP/plain.json" &&
  run onebit 2 --g-data 2 --steps 3 --compress onebit --compress-min-bytes 0 --compress-vectors 1 \
    --summary "$TMP/onebit.json" && python3 - "$TMP/plain.json" "$TMP/onebit.json" <<'PY' ||
import json, sys
def dp(path):
    c = json.load(open(path))["communication"]
    return c["per_step"]["sum"]["data_parallel"]["bytes"]
p, o = dp(sys.argv[1]), dp(sys.argv[2])
ok = p > 0 and o < p / 20
print("data_parallel bytes per step: plain %d, onebit %d (%.4f)" % (p, o, o / p))
sys.exit(0 if ok else 1)
PY
  fail "onebit data-parallel bytes are not below 1/20 of plain"

# ranks that share memory: the cost model keeps every part plain (onebit:ef=1's losses are then
# the uncompressed run's, bit for bit); forced, the same codec changes them
run mem 2 --g-data 2 --steps 12 --compress onebit:ef=1 && {
  same_losses mem refg12 0 0
  grep -q "^compression: onebit:scale=mean,ef=1[^:]*: the 2 data-parallel rank(s) share memory .*all [0-9]* part(s) of stage 0 are summed plain" \
    "$TMP/mem.log" || { fail "mem: no line saying every part is summed plain"; cat "$TMP/mem.log"; }
}
run forced 2 --g-data 2 --steps 12 --compress onebit:ef=1 --compress-min-bytes 0 &&
  { awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $2 != l[$1] { d = 1 } END { exit !d }' \
      "$TMP/refg12.csv" "$TMP/forced.csv" ||
      fail "forced: --compress-min-bytes 0 left the losses of the uncompressed run"; }

# DGC's local clipping (each rank's gradient clipped before the codec, the sum not again) acts:
# with a threshold every step's gradient exceeds, on and off give different losses
DGC="--g-data 2 --steps 4 --compress dgc --compress-min-bytes 0 --compress-warmup 0 --grad-clip 0.05"
# shellcheck disable=SC2086
run localclip 2 $DGC --compress-local-clip 1 && run globalclip 2 $DGC --compress-local-clip 0 &&
  { awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $2 != l[$1] { d = 1 } END { exit !d }' \
      "$TMP/globalclip.csv" "$TMP/localclip.csv" ||
      fail "localclip: --compress-local-clip 1 left the losses of the global clip"; }
# the tied embedding's two copies take one update (run's end check compares them, bit for bit):
# where only the first stage compresses, under codecs that carry Adam's momentum (onebit, dgc)
# and freeze its variance, both copies take the job's codec settings, the last stage's too
# (until 2026-11-30 each took its own stage's, and the copies drifted apart); and wte stays
# plain on both ends where each end would compress it in its own parts (the dense embedding sum
# under --compress auto: Cupcake fused the first stage's wte with wpe, and the copies drifted)
# shellcheck disable=SC2086
run tiedonebit 4 --g-inter 2 --g-data 2 --steps 3 --compress onebit --compress-stages 0.5 \
  --compress-warmup 1 --compress-freeze-variance 1 --summary "$TMP/tiedonebit.json" &&
  { grep -q '"tied_copies_identical":true' "$TMP/tiedonebit.json" &&
      grep -q 'onebit:scale=mean,ef=1,momentum=0.9' "$TMP/tiedonebit.log" ||
      fail "tiedonebit: the tied copies not compared, or onebit without its momentum"; }
run tieddgc 4 --g-inter 2 --g-data 2 --steps 3 --compress dgc:ratio=0.25 --compress-stages 0.5 \
  --compress-warmup 1
# DGC's local clipping where one stage compresses and the other does not, with the dense
# embedding sum (wte no rank's own sum yet): the compressing end clipped its wte copy by each
# rank's local norm before the sum, the other by the global norm after it, and the copies
# drifted apart (the run's end check warned); both now clip it by the global norm. Under
# --compress auto this happened whenever Espresso compressed parts on one stage only.
run tiedclip 4 --g-inter 2 --g-data 2 --steps 3 --hidden 64 --compress dgc:ratio=0.05 \
  --compress-stages 0.5 --compress-warmup 1 --sparse-embedding-sync dense --grad-clip 0.05 &&
  { grep -q "compress-local-clip 1" "$TMP/tiedclip.log" &&
      grep -q "5 of 14 part(s)" "$TMP/tiedclip.log" ||
      fail "tiedclip: not locally clipped, or its first stage compresses nothing"; }
run tieddense 4 --g-inter 2 --g-data 2 --steps 3 --compress auto --compress-codec dgc \
  --ranks-per-node 2 --emulate-link 1Gbps,5us --compress-warmup 1 --sparse-embedding-sync dense &&
  { grep -q 'group 0: wte (1 tensor(s).*kept plain' "$TMP/tieddense.log" ||
      fail "tieddense: the tied wte not alone and plain"; }
# on 2x2 the first stage's tied embedding is summed over the data-parallel ranks before (the
# sparse sync): no rank's own gradient, so it is clipped by the global norm, not by each rank's
# local factor (which left the rows' embeddings apart; run's end check of the replicas)
# shellcheck disable=SC2086
run localclip22 4 --g-inter 2 $DGC --compress-local-clip 1
# where one stage compresses and another does not (--compress-stages 0.5 on 2x2), every stage of
# a row takes part in the row's local norm and only the compressing one clips by it: the run
# ends (each stage deciding for itself alone hung at the first compressed step: stage 1 went on
# to the optimizer while stage 0 waited in the row's norm) and the local clip changes the losses;
# dgc:ratio=1,momentum=0 sends every value, so with the global clip it is the plain run, bit
# for bit
SEL="--g-inter 2 --g-data 2 --steps 4 --compress dgc:ratio=1,momentum=0 --compress-stages 0.5 \
  --compress-min-bytes 0 --compress-warmup 0 --grad-clip 0.05 --step-timeout 30"
# shellcheck disable=SC2086
run sellocal 4 $SEL --compress-local-clip 1 && run selglobal 4 $SEL --compress-local-clip 0 &&
  { awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $2 != l[$1] { d = 1 } END { exit !d }' \
      "$TMP/selglobal.csv" "$TMP/sellocal.csv" ||
      fail "sellocal: --compress-local-clip 1 on one stage of two left the losses of the global clip"; }
run selplain 4 --g-inter 2 --g-data 2 --steps 4 --grad-clip 0.05 && same_losses selglobal selplain 0 0

# across an emulated link the cost model compresses, from measured costs the summary reports:
# the plain all-reduce timed over the link (never faster than the link's 1 Gb/s), whose
# per-message cost is the send's
run emu 2 --g-data 2 --ranks-per-node 1 --emulate-link 1Gbps,5us --steps 2 \
  --compress onebit:ef=1 --summary "$TMP/emu.json" && python3 - "$TMP/emu.json" <<'PY' ||
import json, sys
c = json.load(open(sys.argv[1]))["compression"]
k = c["costs"]
print("cost model over the EMULATED 1 Gb/s link: %d of %d part(s) compressed; encode %.3g us + "
      "bytes / %.3g GB/s, decode %.3g us + bytes / %.3g GB/s" % (
          c["parts_compressed"], c["parts"], k["encode"]["latency_s"] * 1e6,
          k["encode"]["bytes_per_s"] / 1e9, k["decode"]["latency_s"] * 1e6,
          k["decode"]["bytes_per_s"] / 1e9))
p = k["plain_allreduce"]  # timed over the emulated link; a message of it: 2 per all-reduce
print("plain all-reduce measured %.3g us + bytes / %.3g GB/s" % (p["latency_s"] * 1e6,
                                                                 p["bytes_per_s"] / 1e9))
ok = (c["decided_by"] == "cost model" and c["link"] == "the emulated link" and
      p["latency_s"] > 0 and 0 < p["bytes_per_s"] <= 1.25e8 and
      abs(k["send"]["latency_s"] - p["latency_s"] / 2) <= 1e-9 * p["latency_s"] and
      abs(k["send"]["bytes_per_s"] - p["bytes_per_s"]) <= 1e-9 * p["bytes_per_s"] and
      all(k[t]["latency_s"] > 0 and k[t]["bytes_per_s"] > 0 for t in ("encode", "decode")) and
      0 < c["parts_compressed"] <= c["parts"])
sys.exit(0 if ok else 1)
PY
  fail "emu: the summary's compression object is not the cost model's over the emulated link"

# the plan's decision table
"$AXONN" plan --layers 4 --hidden 512 --heads 8 --g-data 2 --compress onebit:ef=1 \
  --emulate-link 10Mbps,5us --bucket-size 1M --coarsening 1 >"$TMP/plan.out" 2>&1 &&
  grep -q "stage 0 qkvw L0 (chunk 0): .* T_orig .* T_cpr .* (best K=2): compress, K=2" "$TMP/plan.out" ||
  { fail "plan: no decision table, or onebit not chosen at 10 Mb/s"; cat "$TMP/plan.out"; }
# with --ranks-per-node putting both data-parallel ranks on one node, the plan keeps them plain
"$AXONN" plan --layers 2 --hidden 32 --heads 2 --g-data 2 --compress onebit:ef=1 \
  --ranks-per-node 2 --emulate-link 10Mbps,5us >"$TMP/plan1.out" 2>&1 &&
  grep -q "^stage 0: 0 of [0-9]* part(s) compressed" "$TMP/plan1.out" &&
  grep -q "share one node (--ranks-per-node 2): memory" "$TMP/plan1.out" ||
  { fail "plan: ranks on one node not kept plain"; cat "$TMP/plan1.out"; }

# bad input: one line, non-zero, no metrics file
for bad in "foo" "powersgd:rank=0" "dgc:ratio=2" "terngrad:bits=3" "onebit:nokey=1" "onebit:ef"; do
  rm -f "$TMP/bad.csv"
  expect_error "--compress" train --compress "$bad" --metrics "$TMP/bad.csv" --steps 1
  [ -e "$TMP/bad.csv" ] && fail "--compress $bad left a metrics file"
done
expect_error "--compress-min-bytes" train --compress onebit --compress-min-bytes 4Q --steps 1
expect_error "--compress-sync" train --compress onebit --compress-sync tree --steps 1
expect_error "allreduce-dtype fp32" train --compress onebit --allreduce-dtype bf16 --steps 1
expect_error "compress-warmup of at least 1" train --compress onebit --compress-freeze-variance 1 --steps 1
expect_error "--compress-codec" train --compress auto --compress-codec foo --steps 1
expect_error "--fusion" train --compress auto --fusion 4Q --steps 1
expect_error "--sparse-embedding-sync" train --sparse-embedding-sync sparse --steps 1

finish
