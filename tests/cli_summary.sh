#!/bin/sh
# The end-of-run summary of `axonn train` (docs/summary.md): one JSON line on stdout starting
# with {"axonn_summary":, the same line in --summary FILE, parseable, holding every option, and
# consistent figures (tokens/s = B*s / batch time, executed FLOPs (72 form; 96 with activation
# checkpointing) as the headline and % of peak, the paper's 96-form bound beside it, days on 300B
# tokens); the CPU peak measured at the run's own GEMM shapes; the timing window of full and
# short runs; a bad --summary path fails at once. The provenance object (the build, MPI, BLAS,
# hosts, job id, start time, command line); --quiet prints nothing on stdout, the summary
# reaching --summary only. `--val-steps all` validates on every whole batch of the data, counted.
. "$(dirname "$0")/testlib.sh"
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3

TINY="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 4 --threads 1 --val-steps 0 --quiet"
LOUD=$(echo "$TINY" | sed 's/ --quiet//')
# no job id unless a case sets one
unset SLURM_JOB_ID LSB_JOBID PBS_JOBID

# check NAME FILE FIRST LAST [PEAK]: parses FILE and checks the figures against each other
check() {
  "$PYTHON" - "$@" <<'EOF' || fail "$1: summary inconsistent"
import json, math, sys
name, path, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
peak = float(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] else None
d = json.load(open(path))
bad = []
def close(a, b, what, tol=1e-6):
    if not (abs(a - b) <= tol * abs(b)):
        bad.append("%s: %r vs %r" % (what, a, b))
c, m, t, th, p = d["config"], d["model"], d["timing"], d["throughput"], d["peak"]
B, s, l, h, V = c["batch"], c["seq"], m["layers"], m["hidden"], m["vocab"]
tb = t["batch_time_s"]
if d["axonn_summary"] != 2: bad.append("schema version")
if ("memory_checkpoints" in d) != bool(c["memory-checkpoint-every"]):
    bad.append("memory_checkpoints object present iff --memory-checkpoint-every")
if (t["first_step"], t["last_step"]) != (first, last): bad.append("window %r" % t)
if t["steps_used"] != last - first + 1: bad.append("steps_used")
if t["complete"] != (t["steps_used"] == t["steps_requested"]): bad.append("complete")
if not t["batch_time_min_s"] * (1 - 1e-9) <= tb <= t["batch_time_max_s"] * (1 + 1e-9):
    bad.append("batch time outside min/max")
close(th["tokens_per_s"], B * s / tb, "tokens/s")
paper = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
executed = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
if c["checkpoint-activations"]: executed = paper
formula = "96*B*s*l*h^2*(1+s/(6*h)+V/(16*l*h))"
if th["paper_flops_formula"] != formula: bad.append("paper formula " + th["paper_flops_formula"])
if th["flops_formula"] != (formula if c["checkpoint-activations"] else
                           "72*B*s*l*h^2*(1+s/(6*h)+V/(12*l*h))"):
    bad.append("executed formula " + th["flops_formula"])
if not th["flops_counted"].startswith("executed"): bad.append("flops_counted")
close(th["flops_per_step"], executed, "executed flops per step")
close(th["flops_per_s"], executed / tb, "flops/s")
close(th["paper_flops_per_step"], paper, "paper flops per step")
close(th["paper_flops_per_s"], paper / tb, "paper flops/s")
close(d["training_time"]["days"], 3e11 * tb / (B * s) / 86400, "days")
ranks = d["run"]["ranks"]
if peak is not None:
    close(p["tflops_per_rank"], peak, "peak per rank")
    if p["source"] != "--peak-tflops": bad.append("peak source " + p["source"])
close(p["tflops_total"], p["tflops_per_rank"] * ranks, "peak total")
close(p["percent_of_peak"], 100 * th["flops_per_s"] / (p["tflops_total"] * 1e12), "% of peak")
close(p["paper_percent_of_peak"], 100 * th["paper_flops_per_s"] / (p["tflops_total"] * 1e12),
      "paper % of peak")
if p["above_peak"] != (p["percent_of_peak"] > 100): bad.append("above_peak")
if peak is None:  # measured at this run's GEMM shapes (rows = batch * seq) and 1024^3
    rows, shapes = B * s, p["shapes"] or ""
    for want in ("qkv %dx%dx%d" % (rows, 3 * h, h), "fcproj %dx%dx%d" % (rows, h, 4 * h),
                 "lm-head %dx%dx%d" % (rows, V, h), "square 1024x1024x1024"):
        if want not in shapes: bad.append("peak not measured at " + want)
    if not p["best_shape"] or p["best_shape"].split(" ")[0] not in shapes: bad.append("best_shape")
    if not p["source"].startswith("measured"): bad.append("peak source " + p["source"])
mem = d["memory"]
if len(mem["host_peak_bytes"]) != ranks or min(mem["host_peak_bytes"]) <= 0: bad.append("memory")
if mem["host_peak_bytes_max"] != max(mem["host_peak_bytes"]): bad.append("memory max")
if d["run"]["g_inter"] * d["run"]["g_data"] != ranks: bad.append("grid")
for key in ("lr", "micro-batch", "summary", "timing-skip", "peak-tflops", "device"):
    if key not in c: bad.append("config lacks " + key)
import re
pv = d["provenance"]
if not re.match(r"^\d+\.\d+\.\d+$", pv["axonn_version"]): bad.append("version " + pv["axonn_version"])
if not pv["git_commit"] or "\n" in pv["git_commit"]: bad.append("git_commit")
if "-std=c11" not in pv["build_flags"] or not pv["compiler"]: bad.append("build flags")
if not pv["mpi_library"] or pv["mpi_library"] == "unknown" or "\t" in pv["mpi_library"]:
    bad.append("mpi_library " + pv["mpi_library"])
if not re.match(r"^\d+\.\d+$", pv["mpi_standard"]): bad.append("mpi_standard")
if not pv["blas"]: bad.append("blas")
if len(pv["hostnames"]) != 1 or not pv["hostnames"][0]: bad.append("hostnames %r" % pv["hostnames"])
if not re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", pv["start_time"]): bad.append("start_time")
if pv["command_line"][1] != "train" or path not in pv["command_line"]: bad.append("command line")
if (pv["job_id"], pv["job_id_from"]) != (None, None) and name != "short": bad.append("job id")
for b in bad: print("%s: %s" % (name, b))
sys.exit(1 if bad else 0)
EOF
}

# a full window: 11 steps, the last 10 averaged (the paper's batch time)
# shellcheck disable=SC2086
"$AXONN" train $LOUD --steps 11 --summary "$TMP/full.json" --metrics "$TMP/m.csv" \
  >"$TMP/full.out" 2>"$TMP/full.err" || { fail "train --summary"; cat "$TMP/full.err"; }
[ "$(grep -c '^{"axonn_summary":' "$TMP/full.out")" -eq 1 ] || fail "not one summary line on stdout"
grep '^{"axonn_summary":' "$TMP/full.out" | cmp -s - "$TMP/full.json" ||
  fail "stdout summary line differs from --summary file"
grep -q '^summary: batch time .* (steps 2-11, 10 of 10), .* executed = [0-9.]*% of peak .*paper' \
  "$TMP/full.out" || fail "human summary line"
for f in "$TMP"/*.tmp.*; do [ -e "$f" ] && fail "temporary file left behind: $f"; done
check full "$TMP/full.json" 2 11

# a short run: what exists after the warm-up, said so; under --quiet, stdout stays empty
# (the summary is in the file only); a batch job's id is recorded
# shellcheck disable=SC2086
SLURM_JOB_ID=4242 "$AXONN" train $TINY --steps 4 --summary "$TMP/short.json" --peak-tflops 0.25 \
  >"$TMP/short.out" || fail "short run"
[ -s "$TMP/short.out" ] && { fail "--quiet printed on stdout:"; head -c 300 "$TMP/short.out"; }
"$PYTHON" -c 'import json, sys; p = json.load(open(sys.argv[1]))["provenance"]
sys.exit(0 if (p["job_id"], p["job_id_from"]) == ("4242", "SLURM_JOB_ID") else 1)' "$TMP/short.json" ||
  fail "SLURM_JOB_ID not in the provenance"
check short "$TMP/short.json" 2 4 0.25
grep -q '"complete":false' "$TMP/short.json" || fail "short run not marked incomplete"

# activation checkpointing: the recompute ran, so the executed count is the 96 form
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 3 --checkpoint-activations --summary "$TMP/ac.json" \
  --peak-tflops 0.25 >/dev/null || fail "checkpointing run"
check checkpointing "$TMP/ac.json" 2 3 0.25

# an explicit window
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 6 --timing-skip 0 --timing-steps 3 --summary "$TMP/win.json" \
  >/dev/null || fail "window run"
check window "$TMP/win.json" 1 3

# --val-steps all: every whole batch of the validation data, counted (the built-in corpus's
# 200,000 validation tokens in batches of 32 x 64: 97), the same loss as asking for 97
# shellcheck disable=SC2086
"$AXONN" train $TINY --seq 64 --batch 32 --steps 2 --val-steps all --summary "$TMP/vall.json" \
  >/dev/null || fail "--val-steps all run"
# shellcheck disable=SC2086
"$AXONN" train $TINY --seq 64 --batch 32 --steps 2 --val-steps 97 --summary "$TMP/v97.json" \
  >/dev/null || fail "--val-steps 97 run"
"$PYTHON" -c 'import json, sys
a, b = (json.load(open(f))["run"] for f in sys.argv[1:])
sys.exit(0 if a["val_batches"] == b["val_batches"] == 97 and a["final_val_loss"] == b["final_val_loss"] else 1)' \
  "$TMP/vall.json" "$TMP/v97.json" || fail "--val-steps all is not the 97 whole batches"

# a bad path fails before training, with one line, and leaves no metrics file
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 2 --summary "$TMP/no/such/dir/s.json" --metrics "$TMP/bad.csv" \
  >"$TMP/bad.out" 2>"$TMP/bad.err" && fail "unwritable --summary accepted"
if [ "$(wc -l <"$TMP/bad.err")" -ne 1 ] || ! grep -q -- "--summary" "$TMP/bad.err"; then
  fail "bad --summary message:"; cat "$TMP/bad.err"
fi
[ -e "$TMP/bad.csv" ] && fail "metrics file left behind after a bad --summary"
grep -q "step" "$TMP/bad.out" && fail "trained despite a bad --summary"

finish
