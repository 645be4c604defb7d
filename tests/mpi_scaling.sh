#!/bin/sh
# Scaling studies end to end (scripts/scaling, scripts/launch, scripts/plot): the tiny weak and
# strong (batch growing, and --fixed-batch) study of `make scaling-demo` on 1, 2 and 4 ranks gives
# a CSV with one consistent row per run, speed-up and efficiency against 1 rank, and non-empty
# PNG plots ("skipped: no matplotlib" for the plot part without it); the
# paper's plans print Summit (jsrun) and Slurm (srun) job scripts without running anything; the
# launch templates' --dry-run only prints; bad plans fail with one message.
. "$(dirname "$0")/testlib.sh"
MPIEXEC=${MPIEXEC:-mpiexec}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -x "$PYTHON" ] || PYTHON=python3
export AXONN MPIEXEC

# ---- the demo study: runs, CSV, plots
status=0
timeout 300 scripts/scaling/demo "$TMP/demo" >"$TMP/demo.log" 2>&1 || status=$?
if [ $status -ne 0 ] && [ $status -ne 3 ]; then fail "scaling demo (exit $status)"; cat "$TMP/demo.log"; fi
"$PYTHON" - "$TMP/demo/scaling.csv" <<'EOF' || fail "scaling.csv"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
bad = []
need = ["study", "label", "ranks", "g_inter", "g_data", "batch", "seq", "batch_time_s",
        "tokens_per_s", "tflops", "percent_of_peak", "training_days", "host_peak_bytes_max",
        "steps_used", "speedup", "efficiency"]
missing = [c for c in need if c not in (rows[0] if rows else {})]
if missing: bad.append("columns missing: %s" % missing)
if len(rows) != 9: bad.append("%d rows, expected 9" % len(rows))
for study, batches in (("weak", [16, 16, 16]), ("strong", [8, 16, 32]),
                       ("strong-fixed-batch", [8, 8, 8])):
    rs = [r for r in rows if r["study"] == study]
    if [int(r["ranks"]) for r in rs] != [1, 2, 4]: bad.append(study + ": ranks")
    if [int(r["batch"]) for r in rs] != batches: bad.append(study + ": batches")
for r in rows if not bad else []:
    if int(r["g_inter"]) * int(r["g_data"]) != int(r["ranks"]): bad.append("grid " + r["label"])
    if int(r["steps_used"]) != 10: bad.append("steps_used " + r["label"])
    t, tps = float(r["batch_time_s"]), float(r["tokens_per_s"])
    if abs(tps * t - int(r["batch"]) * int(r["seq"])) > 1e-6 * tps * t: bad.append("tokens/s")
    if not 0 < float(r["percent_of_peak"]) < 1000: bad.append("% of peak " + r["label"])
    days = 3e11 * t / (int(r["batch"]) * int(r["seq"])) / 86400
    if abs(float(r["training_days"]) - days) > 1e-6 * days: bad.append("days " + r["label"])
    # against the study's 1-rank row: tokens/s (strong) or FLOP/s (weak); efficiency = s / ranks
    base = [b for b in rows if b["study"] == r["study"] and b["ranks"] == "1"][0]
    key = "tokens_per_s" if r["study"].startswith("strong") else "tflops"
    s = float(r[key]) / float(base[key])
    if abs(float(r["speedup"]) - s) > 1e-3 * s: bad.append("speedup " + r["study"] + r["label"])
    e = s / int(r["ranks"])
    if abs(float(r["efficiency"]) - e) > 1e-3 * e: bad.append("efficiency " + r["label"])
for b in bad: print("scaling.csv: " + b)
sys.exit(1 if bad else 0)
EOF
for s in weak strong strong-fixed-batch; do
  n=$(find "$TMP/demo/$s" -name job.sh | wc -l)
  [ "$n" -eq 3 ] || fail "$s: $n job scripts, expected 3"
done
if [ $status -eq 3 ]; then
  grep -q "matplotlib is not installed" "$TMP/demo.log" || fail "no clear matplotlib message"
  echo "mpi_scaling: plots skipped: no matplotlib"
else
  n=$(find "$TMP/demo" -maxdepth 1 -name '*.png' | wc -l)
  [ "$n" -eq 6 ] || fail "$n PNG files in the demo's directory, expected 6: $(ls "$TMP/demo")"
  for png in batch_time percent_of_peak training_days speedup efficiency loss; do
    f="$TMP/demo/$png.png"
    if [ ! -s "$f" ] || [ "$(head -c 4 "$f" | od -An -c | tr -d ' \n')" != '211PNG' ]; then
      fail "$png.png missing, empty or not a PNG"
    fi
  done
fi

# ---- the paper's plans, printed only
scripts/scaling/weak --machine scripts/scaling/machines/summit.conf --account CSC000 --print \
  --out "$TMP/plan" >"$TMP/weak.txt" 2>&1 || { fail "weak --print"; cat "$TMP/weak.txt"; }
for want in "jsrun -n 48 " "jsrun -n 384 " "--model gpt-100b" "--batch 16384" "--smpiargs=-gpu" \
  "#BSUB -nnodes 64" "#BSUB -P CSC000" "### submit: bsub" "--summary $TMP/plan/weak/0048-gpt-12b/summary.json"; do
  grep -q -- "$want" "$TMP/weak.txt" || fail "weak --print lacks '$want'"
done
scripts/scaling/strong --machine scripts/scaling/machines/slurm-a100.conf --print \
  --out "$TMP/plan" >"$TMP/strong.txt" 2>&1 || { fail "strong --print"; cat "$TMP/strong.txt"; }
for want in "srun --ntasks 48 " "srun --ntasks 384 " "--batch 4096" "--batch 32768" \
  "#SBATCH --nodes=96" "### submit: sbatch"; do
  grep -q -- "$want" "$TMP/strong.txt" || fail "strong --print lacks '$want'"
done
[ -e "$TMP/plan/weak/0048-gpt-12b/summary.json" ] && fail "--print ran a job"
scripts/scaling/strong --machine scripts/scaling/machines/summit.conf --print --fixed-batch \
  --out "$TMP/plan" >"$TMP/fixed.txt" 2>&1 || { fail "strong --fixed-batch --print"; cat "$TMP/fixed.txt"; }
[ "$(grep -c "^jsrun .* --batch 4096 " "$TMP/fixed.txt")" = 4 ] || fail "strong --fixed-batch: not 4 jsrun lines with --batch 4096"
grep -q "^### submit: bsub < $TMP/plan/strong-fixed-batch/0384-gpt-12b/job.sh" "$TMP/fixed.txt" ||
  fail "strong --fixed-batch: jobs not under strong-fixed-batch/, or not bsub < job.sh"

# ---- launch templates: --dry-run prints and runs nothing
out=$(scripts/launch/mpirun.sh -n 2 --cores-per-rank 1 --dry-run -- touch "$TMP/ran" "a b")
[ "$out" = "+ $MPIEXEC -n 2 -bind-to core touch $TMP/ran 'a b'" ] || fail "mpirun.sh --dry-run printed: $out"
# the binding as hydra applies it: each of 2 ranks on one core of its own
scripts/launch/mpirun.sh -n 2 --cores-per-rank 1 -- sh -c 'grep Cpus_allowed_list: /proc/self/status' >"$TMP/bound.txt" ||
  fail "mpirun.sh -bind-to core"
[ "$(grep -c 'Cpus_allowed_list:[[:space:]]*[0-9]*$' "$TMP/bound.txt")" = 2 ] ||
  { fail "mpirun.sh: ranks not bound to one core each:"; cat "$TMP/bound.txt"; }
scripts/launch/lsf-jsrun.sh -n 12 --dry-run -- touch "$TMP/ran" | grep -q "^+ jsrun -n 12 -r 6 " ||
  fail "lsf-jsrun.sh --dry-run"
scripts/launch/slurm-srun.sh -n 8 --dry-run -- touch "$TMP/ran" | grep -q "^+ srun --ntasks 8 " ||
  fail "slurm-srun.sh --dry-run"
[ -e "$TMP/ran" ] && fail "--dry-run ran the command"
scripts/launch/mpirun.sh -n 2 -- "$AXONN" train --layers 1 --hidden 16 --heads 1 --seq 8 \
  --batch 2 --g-data 2 --steps 2 --threads 1 --val-steps 0 --quiet --summary "$TMP/launch.json" \
  >"$TMP/launch.txt" 2>&1 || fail "mpirun.sh running a 2-rank job"
grep -q '^{"axonn_summary":' "$TMP/launch.json" || fail "mpirun.sh job wrote no summary"

# ---- bad plans: one message, non-zero exit
scripts/scaling/weak --point 48:gpt-13b --print --out "$TMP/bad" >"$TMP/bad.out" 2>"$TMP/bad.err" &&
  fail "unknown model accepted"
grep -q "neither a preset" "$TMP/bad.err" || { fail "bad model message"; cat "$TMP/bad.err"; }
scripts/scaling/strong --model 4x32x2 --gpus 3 --base-batch 8 --print --out "$TMP/bad" \
  >"$TMP/bad.out" 2>"$TMP/bad.err" && fail "batch 8 on 3 data-parallel rows accepted"
grep -q "not divisible by G_data 3" "$TMP/bad.err" || { fail "bad batch message"; cat "$TMP/bad.err"; }
scripts/scaling/collect "$TMP/nothing-here" >/dev/null 2>&1 && fail "collect of a missing dir"

finish
