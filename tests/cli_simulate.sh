#!/bin/sh
# cli_simulate.sh — `axonn profile` and `axonn simulate` from the command line: a profile
# written (its blocks timed in a stage of the run's depth) and read back, a simulated summary with every figure consistent (the checks
# docs/summary.md states for a real summary) and marked simulated, the trace, the metrics CSV;
# the paper's 12B run on summit within the paper's band; a 12,288-rank grid simulated (its wall
# time printed, not asserted: the target of 10 s is a benchmark's, docs/benchmarks.md); and
# bad input (a machine file's unknown key, an unknown device, grids that do not divide, a
# profile of another shape or dropout, one without waiting speeds or with a bad one, a profile or machine
# key out of its range (a copy bandwidth of 0, an infinite bandwidth), tensor parallelism or
# compression (not modelled), no machine,
# --optimizer device on two ranks), each one
# line on stderr and exit 1.
. "$(dirname "$0")/testlib.sh"

TINY="--layers 4 --hidden 32 --heads 2 --seq 16 --vocab 128 --batch 8 --micro-batch 1 --threads 1"
printf 'name = ws\ngpus_per_node = 8\nintra_bw = 4GB/s\ninter_bw = 1Gbps\nlatency = 5us\n' \
  >"$TMP/ws.machine"

"$AXONN" profile $TINY --g-inter 2 --out "$TMP/p.txt" >"$TMP/profile.out" 2>&1 ||
  { fail "profile"; cat "$TMP/profile.out"; }
grep -q '^block_forward_s = ' "$TMP/p.txt" || fail "profile file lacks block_forward_s"
# a block is timed in a stage as deep as the run's deepest: 4 layers on 2 stages, 2 blocks
grep -q '^stage_blocks = 2$' "$TMP/p.txt" || fail "profile of 2 blocks a stage: not timed at 2"
grep -q '^concurrency_speed = 1,' "$TMP/p.txt" || fail "profile file lacks two concurrency speeds"
grep -q '^waiting_speed = none$' "$TMP/p.txt" || fail "a profile without emulation measured waiting speeds"

# with an emulated link, the speed beside waiting ranks too; on a host of 1 core (the machine
# file) the 2 ranks oversubscribe it, and the simulation uses those speeds, saying so
"$AXONN" profile $TINY --g-inter 2 --ranks-per-node 1 --emulate-link 1Gbps --out "$TMP/pe.txt" \
  >"$TMP/profile-e.out" 2>&1 || { fail "profile, emulated"; cat "$TMP/profile-e.out"; }
grep -Eq '^waiting_speed = [0-9.e-]+,[0-9.e-]+$' "$TMP/pe.txt" ||
  fail "an emulated profile lacks two waiting speeds"
printf 'name = one\ngpus_per_node = 2\nintra_bw = 4GB/s\ninter_bw = 4GB/s\ndevice = cpu\ncores_per_node = 1\n' \
  >"$TMP/one.machine"
"$AXONN" simulate $TINY --g-inter 2 --ranks-per-node 1 --emulate-link 1Gbps \
  --machine "$TMP/one.machine" --profile "$TMP/pe.txt" >"$TMP/sim-e.out" 2>&1 ||
  { fail "simulate with an emulated profile"; cat "$TMP/sim-e.out"; }
grep -q 'waiting on the emulated link as profiled' "$TMP/sim-e.out" ||
  { fail "the simulation does not say it used the waiting speeds"; cat "$TMP/sim-e.out"; }
# a woken rank waits for a core there too (docs/simulator.md, "Ranks that share a host")
grep -q "a message waits 0.5 ms for its receiver to be scheduled" "$TMP/sim-e.out" ||
  { fail "oversubscribed over the emulated link: no hand-off wait"; cat "$TMP/sim-e.out"; }
# without those speeds: a rank waiting on the emulated link weighs nothing on one host (it
# sleeps on its doorbell), a third of a rank over several (the doorbells are off: it polls)
for case in "2:0" "4:0.33"; do
  "$AXONN" simulate $TINY --g-inter ${case%%:*} --ranks-per-node 1 --emulate-link 1Gbps \
    --machine "$TMP/one.machine" --profile "$TMP/p.txt" >"$TMP/sim-w.out" 2>&1 ||
    { fail "simulate, emulated, profile without waiting speeds"; cat "$TMP/sim-w.out"; }
  grep -q "a waiting rank weighs ${case#*:} of a computing one" "$TMP/sim-w.out" ||
    { fail "G_inter ${case%%:*}: not a waiting weight of ${case#*:}"; cat "$TMP/sim-w.out"; }
done
# without the emulated link, 2 ranks on 1 core wait politely: a message waits for its receiver
# to be scheduled (docs/simulator.md, "Ranks that share a host")
"$AXONN" simulate $TINY --g-inter 2 --machine "$TMP/one.machine" --profile "$TMP/p.txt" \
  >"$TMP/sim-h.out" 2>&1 || { fail "simulate, oversubscribed"; cat "$TMP/sim-h.out"; }
grep -q "a message waits 0.5 ms for its receiver to be scheduled" "$TMP/sim-h.out" ||
  { fail "oversubscribed: no hand-off wait"; cat "$TMP/sim-h.out"; }

"$AXONN" simulate $TINY --g-inter 2 --g-data 2 --steps 5 --machine "$TMP/ws.machine" \
  --profile "$TMP/p.txt" --summary "$TMP/s.json" --trace "$TMP/t.json" --trace-steps 2-3 \
  --metrics "$TMP/m.csv" >"$TMP/sim.out" 2>&1 || { fail "simulate"; cat "$TMP/sim.out"; }
grep -q '^summary (SIMULATED): batch time' "$TMP/sim.out" || fail "no simulated summary line"
python3 - "$TMP/s.json" "$TMP/t.json" "$TMP/m.csv" <<'PY' || fail "simulated summary checks"
import json, sys
s = json.load(open(sys.argv[1]))
t, th, pk, c = s["timing"], s["throughput"], s["peak"], s["config"]
assert s["simulated"] is True and s["axonn_summary"] == 2, "not marked simulated"
assert s["run"]["ranks"] == 4 and s["run"]["g_inter"] == 2 and s["run"]["g_data"] == 2
bt = t["batch_time_s"]
assert bt > 0 and t["steps_used"] == 4 and t["first_step"] == 2, t
close = lambda a, b: abs(a - b) <= 1e-6 * abs(b)
assert close(th["tokens_per_s"] * bt, c["batch"] * c["seq"])
assert close(th["flops_per_s"] * bt, th["flops_per_step"])
assert close(s["training_time"]["days"], 3e11 * bt / (c["batch"] * c["seq"]) / 86400)
assert len(s["memory"]["host_peak_bytes"]) == 4 and s["memory"]["device_peak_bytes_max"] > 0
sim = s["simulation"]
assert len(sim["idle_fraction"]) == 4 and all(0 <= f < 1 for f in sim["idle_fraction"])
assert 0 <= sim["bubble_fraction"] < 1 and sim["events_per_step"] > 0
assert close(sim["pipeline_s"] + sim["allreduce_optimizer_s"], bt)
ev = json.load(open(sys.argv[2]))["traceEvents"]
names = {e["name"] for e in ev if e["ph"] == "X"}
assert {"forward", "backward", "send", "recv-wait", "optimizer", "step"} <= names, names
assert {e["tid"] for e in ev if e["ph"] == "X"} == {0, 1, 2, 3}
assert {e["args"]["step"] for e in ev if e["ph"] == "X"} == {2, 3}
rows = open(sys.argv[3]).read().split("\n")
assert rows[0].startswith("step,loss") and len([r for r in rows[1:] if r]) == 5
PY

# the paper's weak-scaling start (Table I, Table II's grid): 49-55% of peak on Summit
"$AXONN" simulate --model gpt-12b --batch 16384 --micro-batch 8 --g-inter 6 --g-data 8 \
  --precision fp16 --checkpoint-activations --machine summit --summary "$TMP/12b.json" \
  >"$TMP/12b.out" 2>&1 || { fail "simulate gpt-12b"; cat "$TMP/12b.out"; }
python3 -c "
import json; s = json.load(open('$TMP/12b.json'))
p = s['peak']['paper_percent_of_peak']
assert 40 < p < 65, p" || fail "gpt-12b on 48 summit GPUs: paper's % of peak out of 40-65"

# 12,288 ranks: every rank in the summary; the simulator's own time printed
"$AXONN" simulate --model gpt-100b --batch 65536 --micro-batch 2 --g-inter 48 --g-data 256 \
  --precision fp16 --checkpoint-activations --machine summit --summary "$TMP/big.json" \
  >"$TMP/big.out" 2>&1 || { fail "simulate 12288 ranks"; cat "$TMP/big.out"; }
python3 - "$TMP/big.json" <<'PY' || fail "12,288-rank summary"
import json, sys
s = json.load(open(sys.argv[1]))
x = s["simulation"]
assert s["run"]["ranks"] == 12288 and len(x["idle_fraction"]) == 12288, s["run"]
assert x["events_per_step"] > 0 and s["timing"]["batch_time_s"] > 0
print("  12,288 ranks: %d events a step simulated in %.2f s (not asserted)" %
      (x["events_per_step"], x["wall_s"]))
PY

# bad input: one line, exit 1
printf 'name = m\ngpus_per_node = 4\nintra_bw = 1GB/s\ninter_bw = 1GB/s\ncolour = blue\n' \
  >"$TMP/bad.machine"
printf 'name = m\ngpus_per_node = 4\nintra_bw = 1GB/s\ninter_bw = 1GB/s\ndevice = TPU\n' \
  >"$TMP/tpu.machine"
expect_error "unknown option --colour" simulate $TINY --machine "$TMP/bad.machine"
expect_error "device 'TPU' is not one of" simulate $TINY --machine "$TMP/tpu.machine"
expect_error "g-inter 8 exceeds the 4 layers" simulate $TINY --g-inter 8 --machine summit
expect_error "does not divide the 4 rank" simulate $TINY --g-inter 2 --g-data 2 \
  --ranks-per-node 3 --machine summit
expect_error "not divisible by --g-data 3" simulate $TINY --g-data 3 --machine summit
expect_error "measured at --micro-batch 1, this run has 2" simulate $TINY --micro-batch 2 \
  --machine summit --profile "$TMP/p.txt"
# a profile with --dropout times its blocks with their masks drawn (a simulated run is priced
# with them), and another dropout's run is refused
"$AXONN" profile $TINY --dropout 0.1 --out "$TMP/pd.txt" >"$TMP/profile-d.out" 2>&1 ||
  { fail "profile --dropout 0.1"; cat "$TMP/profile-d.out"; }
grep -q '^dropout = 0.1$' "$TMP/pd.txt" || fail "a profile with --dropout 0.1 does not say so"
grep -q 'dropout drawn' "$TMP/profile-d.out" || fail "profile --dropout does not say it drew masks"
grep -q '^dropout = 0$' "$TMP/p.txt" || fail "a profile without dropout does not say 0"
expect_error "measured at --dropout 0.1, this run has 0" simulate $TINY --machine summit \
  --profile "$TMP/pd.txt"
expect_error "measured at --dropout 0, this run has 0.1" simulate $TINY --dropout 0.1 \
  --machine summit --profile "$TMP/p.txt"
"$AXONN" simulate $TINY --dropout 0.1 --steps 3 --profile "$TMP/pd.txt" >"$TMP/sim-d.out" 2>&1 ||
  { fail "simulate --dropout 0.1 with its profile"; cat "$TMP/sim-d.out"; }
grep -v '^waiting_speed' "$TMP/p.txt" >"$TMP/old.txt" # a profile written before waiting_speed
expect_error "has no 'waiting_speed = ...' line" simulate $TINY --machine summit \
  --profile "$TMP/old.txt"
sed 's/^waiting_speed = .*/waiting_speed = 1,fast/' "$TMP/pe.txt" >"$TMP/bad-speed.txt"
expect_error "waiting_speed '1,fast' is not a list of speeds" simulate $TINY --g-inter 2 \
  --ranks-per-node 1 --emulate-link 1Gbps --machine "$TMP/one.machine" --profile "$TMP/bad-speed.txt"
# every profile and machine key's range is checked on load, one line naming the key (issue 45,
# item 12): a copy bandwidth of 0 deadlocked the simulated pipeline ("internal: ..."); a bandwidth
# whose unit overflows a double was taken as infinite
for kv in "copy_bytes_per_s 0:copy_bytes_per_s 0 is out of range" \
    "precision 7:precision 7 is out of range" "threads 0:threads 0 is out of range" \
    "stage_blocks 0:stage_blocks 0 is out of range"; do
  key=${kv%% *}; rest=${kv#* }
  sed "s/^$key = .*/$key = ${rest%%:*}/" "$TMP/p.txt" >"$TMP/range.txt"
  expect_error "${kv#*:}" simulate $TINY --g-inter 2 --machine summit --profile "$TMP/range.txt"
done
printf 'name = m\ngpus_per_node = 4\nintra_bw = 1e300GB/s\ninter_bw = 1GB/s\n' >"$TMP/inf.machine"
expect_error "intra_bw: bandwidth '1e300GB/s' is out of range" simulate $TINY --g-inter 2 \
  --machine "$TMP/inf.machine" --profile "$TMP/p.txt"
# what the simulator does not model is refused, not simulated as another run (issue 45, item
# 16: --gx 2 was simulated as 1 x 1 x 1, --compress as plain all-reduces)
expect_error "simulate does not model tensor parallelism (--gx 2 --gy 1 --gz 1)" simulate $TINY \
  --gx 2 --machine summit
expect_error "simulate does not model gradient compression (--compress onebit)" simulate $TINY \
  --g-data 2 --compress onebit --machine summit
expect_error "simulate does not model gradient compression (--compress auto)" simulate $TINY \
  --g-data 2 --compress auto --machine summit
expect_error "simulate does not model compressed pipeline gradients" simulate $TINY --g-inter 2 \
  --compress-backprop powersgd:rank=4 --machine summit
expect_error "simulate needs --machine NAME|FILE .* or --profile FILE" simulate $TINY
# --profile without --machine: the host it measured, the machine file scripts/simulate-validate.sh
# used to write by hand (one node, half the copy bandwidth, this host's cores): the same figures
bw=$(awk -F' = ' '$1 == "copy_bytes_per_s" {printf "%.0f", $2 / 2}' "$TMP/p.txt")
printf 'name = here\ngpus_per_node = 2\nintra_bw = %sB/s\ninter_bw = %sB/s\ndevice = cpu\ncores_per_node = %s\n' \
  "$bw" "$bw" "$(getconf _NPROCESSORS_ONLN)" >"$TMP/here.machine"
"$AXONN" simulate $TINY --g-inter 2 --steps 3 --profile "$TMP/p.txt" --summary "$TMP/auto.json" \
  >"$TMP/auto.out" 2>&1 || { fail "simulate --profile without --machine"; cat "$TMP/auto.out"; }
"$AXONN" simulate $TINY --g-inter 2 --steps 3 --profile "$TMP/p.txt" --machine "$TMP/here.machine" \
  --summary "$TMP/hand.json" >"$TMP/hand.out" 2>&1 || { fail "simulate, written machine"; cat "$TMP/hand.out"; }
python3 -c 'import json, sys; a, b = (json.load(open(f))["timing"]["batch_time_s"] for f in sys.argv[1:])
sys.exit(0 if abs(a - b) <= 1e-6 * b else 1)' "$TMP/auto.json" "$TMP/hand.json" ||
  fail "--profile alone predicts another batch time than the profiled host written as a machine"
# --optimizer device on two ranks (issue 50): the data-parallel sum, then the device's AdamW
"$AXONN" simulate $TINY --g-data 2 --optimizer device --machine h100 >"$TMP/dev2.out" 2>&1 ||
  { fail "simulate --g-data 2 --optimizer device"; cat "$TMP/dev2.out"; }
expect_error "unknown machine 'cray-1'" simulate $TINY --machine cray-1
expect_error "profile needs --out" profile $TINY
finish
