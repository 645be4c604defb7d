#!/bin/sh
# mpi_simulate.sh — the simulator's order of events is the real scheduler's: a 4 x 1 grid whose
# compute is fixed by sleeps (--debug-forward-ms/--debug-backward-ms, far above the tiny model's
# own compute), traced for real under mpiexec and simulated with the same options; every rank's
# forwards, backwards and sends of the traced step come in the same order (order only, never
# times: the machine may be loaded). Backward twice forward keeps the arrivals a stage chooses
# between apart: in the simulated step no message a stage did not take arrives within 50 ms
# (one forward) of the compute it took instead, so a run whose ranks are held up by less than
# that keeps the order. Also: a profile on 2 ranks times the all-reduce between them.
. "$(dirname "$0")/mpilib.sh"

T="--layers 4 --hidden 32 --heads 2 --seq 16 --vocab 128 --batch 8 --micro-batch 1 --g-inter 4
   --threads 1 --val-steps 0 --debug-forward-ms 50 --debug-backward-ms 100 --steps 2
   --trace-steps 2-2 --quiet"
printf 'name = ws\ngpus_per_node = 8\nintra_bw = 4GB/s\ninter_bw = 4GB/s\n' >"$TMP/ws.machine"
# shellcheck disable=SC2086
"$AXONN" profile $T --out "$TMP/p.txt" >/dev/null 2>&1 || fail "profile"
# shellcheck disable=SC2086
"$AXONN" simulate $T --machine "$TMP/ws.machine" --profile "$TMP/p.txt" \
  --trace "$TMP/sim.json" >"$TMP/sim.out" 2>&1 || { fail "simulate"; cat "$TMP/sim.out"; }
# shellcheck disable=SC2086
timeout 300 $MPIEXEC -n 4 "$AXONN" train $T --trace "$TMP/real.json" </dev/null \
  >"$TMP/real.out" 2>&1 || { fail "train"; cat "$TMP/real.out"; }
# the profile on 2 ranks times the all-reduce between them (rank 0 writes the file, which
# the 1-rank profile above leaves at 0, not measured); the tiny model's shape is all it needs
# shellcheck disable=SC2086
timeout 300 $MPIEXEC -n 2 "$AXONN" profile $T --out "$TMP/p2.txt" >"$TMP/p2.out" 2>&1 ||
  { fail "profile on 2 ranks"; cat "$TMP/p2.out"; }
grep -q '^allreduce_ranks = 2$' "$TMP/p2.txt" || fail "a 2-rank profile did not time the all-reduce"
awk '$1 == "allreduce_bytes_per_s" { ok = $3 > 0 } END { exit !ok }' "$TMP/p2.txt" ||
  fail "a 2-rank profile's all-reduce has no bandwidth"
grep -q '^allreduce_ranks = 0$' "$TMP/p.txt" || fail "a 1-rank profile claims an all-reduce"
[ "$(grep -c 'the all-reduce on 2 ranks' "$TMP/p2.out")" -eq 1 ] ||
  { fail "the 2-rank profile's line is not printed once"; cat "$TMP/p2.out"; }
# an error found on the command line is said once, by rank 0
timeout 60 $MPIEXEC -n 2 "$AXONN" profile $T >"$TMP/p3.out" 2>&1 && fail "profile without --out ran"
[ "$(grep -c 'axonn: error: profile needs --out FILE' "$TMP/p3.out")" -eq 1 ] ||
  { fail "a 2-rank profile's bad command line: not one error line"; cat "$TMP/p3.out"; }
python3 - "$TMP/real.json" "$TMP/sim.json" <<'PY' || fail "simulated order differs from the run's"
import json, sys
def order(path):
    out = {}
    for e in json.load(open(path))["traceEvents"]:
        if e.get("ph") == "X" and e["args"]["step"] == 2 and e["name"] in ("forward", "backward", "send"):
            out.setdefault(e["tid"], []).append((e["ts"], e["name"], e["args"]["mb"]))
    return {r: [(n, m) for _, n, m in sorted(v)] for r, v in out.items()}
real, sim = order(sys.argv[1]), order(sys.argv[2])
assert sorted(real) == [0, 1, 2, 3] and sum(map(len, real.values())) == 4 * 8 * 2 + 2 * 8 * 3
for r in sorted(real):
    if real[r] != sim.get(r):
        print("rank %d: run %s\n        simulated %s" % (r, real[r], sim.get(r)))
sys.exit(0 if real == sim else 1)
PY
finish
