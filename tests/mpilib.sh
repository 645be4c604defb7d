#!/bin/sh
# mpilib.sh — shared by the tests/mpi_*.sh scripts (sourced, not run): a temporary directory,
# failure counting, training a layout under mpiexec, and comparing its per-step losses and
# final weights with a reference run.
#   COMMON      options every run shares
#   run NAME NP ARGS...            trains, leaving $TMP/NAME.csv, .bin and .log; fails when
#                                  the data-parallel replicas or the tied embedding's copies
#                                  differ at the end (the run's own check warns)
#   same_losses NAME [REF] [RTOL] [WTOL]   NAME's losses vs REF's within RTOL relative
#                                  (default ref, 1e-5), final weights within WTOL (1e-4);
#                                  a resumed NAME (first step > 1) is checked on its steps
#   first_step_same NAME [REF]     the first step's loss within 1e-6 relative
#   tail_equal NAME REF            NAME's losses (a resumed run's steps) equal REF's exactly
#   scale_at_end NAME SCALE SKIPPED   NAME's summary: the loss scale at the end, steps skipped
#   expect_job_error NEEDLE NP ARGS...   training on NP ranks fails, in bounded time, with
#                                  NEEDLE on stderr
#   PEAK        what run and expect_job_error give for the summary's peak: --peak-tflops 1, so
#               no run measures the CPU peak at its end (every rank's GEMMs at the run's shapes
#               and 1024^3, a third of a second of each rank's CPU, more than a small run's
#               training; the measurement is tests/cli_summary.sh's); ARGS may give another
. "$(dirname "$0")/testlib.sh"
MPIEXEC=${MPIEXEC:-mpiexec}
PEAK="--peak-tflops 1"

run() {
  name=$1; np=$2; shift 2
  # shellcheck disable=SC2086
  if ! timeout 300 $MPIEXEC -n "$np" "$AXONN" train $COMMON $PEAK --metrics "$TMP/$name.csv" \
      --save "$TMP/$name.bin" "$@" >"$TMP/$name.log" 2>&1; then
    fail "$name: training failed"; cat "$TMP/$name.log"; return 1
  fi
  ! grep -q "a defect of axonn (please report" "$TMP/$name.log" ||
    { fail "$name: $(grep -m1 'a defect of axonn' "$TMP/$name.log")"; return 1; }
}

same_losses() {
  ref=${2:-ref}; rtol=${3:-1e-5}; wtol=${4:-1e-4}
  steps=$(($(wc -l <"$TMP/$ref.csv") - 1))
  awk -F, -v name="$1" -v ref="$ref" -v rtol="$rtol" -v steps="$steps" '
    NR == FNR { if (FNR > 1) { l[$1] = $2; v[$1] = $8 } next }
    FNR == 2 { first = $1 }
    FNR > 1 {
      if (!($1 in l)) { printf "%s: step %d is not in %s\n", name, $1, ref; bad = 1; next }
      d = $2 - l[$1]; if (d < 0) d = -d
      if (d > rtol * l[$1]) { printf "%s: step %d loss %.9g vs %s %.9g\n", name, $1, $2, ref, l[$1]; bad = 1 }
      if ($8 != "") { d = $8 - v[$1]; if (d < 0) d = -d
        if (d > rtol * v[$1]) { printf "%s: step %d val %.9g vs %s %.9g\n", name, $1, $8, ref, v[$1]; bad = 1 } }
      n++ }
    END { if (n == 0 || (first == 1 && n != steps)) { printf "%s: %d steps in the CSV, %s has %d\n", name, n, ref, steps; bad = 1 }
          exit bad }' \
    "$TMP/$ref.csv" "$TMP/$1.csv" || fail "$1: losses differ from $ref"
  "$AXONN" compare "$TMP/$ref.bin" "$TMP/$1.bin" --tol "$wtol" >"$TMP/$1.cmp" 2>&1 ||
    { fail "$1: final weights differ from $ref"; cat "$TMP/$1.cmp"; }
}

# first_step_same NAME [REF]: the first step's loss (same weights, same data: only the order
# of the sums differs) within 1e-6 relative
first_step_same() {
  ref=${2:-ref}
  a=$(sed -n 2p "$TMP/$ref.csv" | cut -d, -f2); b=$(sed -n 2p "$TMP/$1.csv" | cut -d, -f2)
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-6 * a) }' ||
    fail "$1: first-step loss $b vs $ref $a (more than 1e-6 apart)"
}

# loss_near_at NAME REF STEP TOL: NAME's loss at STEP within TOL relative of REF's (printed)
loss_near_at() {
  awk -F, -v step="$3" -v tol="$4" -v name="$1" 'NR == FNR { l[$1] = $2; next }
    FNR > 1 && $1 == step { d = ($2 - l[$1]) / l[$1]; if (d < 0) d = -d; seen = 1
      printf "  %s: loss at step %d %.3g from the reference\n", name, step, d; bad = d > tol }
    END { exit bad || !seen }' "$TMP/$2.csv" "$TMP/$1.csv" ||
    fail "$1: loss at step $3 not within $4 of $2's"
}

# scale_at_end NAME SCALE SKIPPED: NAME's summary ($TMP/NAME.json) ends with that dynamic loss
# scale, having skipped that many steps
scale_at_end() {
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))["run"]
sys.exit(0 if (r["loss_scale"], r["skipped_steps"]) == (float(sys.argv[2]), int(sys.argv[3])) else 1)' \
    "$TMP/$1.json" "$2" "$3" || { fail "$1: the summary's loss scale is not $2 ($3 skipped)"; grep -o '"run":{[^}]*}' "$TMP/$1.json"; }
}

tail_equal() {
  awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $2 != l[$1] { bad = 1; print "step " $1 ": " $2 " vs " l[$1] }
    END { exit bad }' "$TMP/$2.csv" "$TMP/$1.csv" || fail "$1: losses differ from $2"
}

expect_job_error() {
  needle=$1; np=$2; shift 2
  start=$(date +%s)
  # shellcheck disable=SC2086
  timeout 120 $MPIEXEC -n "$np" "$AXONN" train $COMMON $PEAK "$@" >"$TMP/f.out" 2>"$TMP/f.err"; rc=$?
  took=$(($(date +%s) - start))
  if [ "$rc" -eq 0 ]; then fail "'$*' succeeded"; return; fi
  if [ "$rc" -eq 124 ]; then fail "'$*' hung (killed after 120 s)"; return; fi
  grep -q -- "$needle" "$TMP/f.err" || { fail "'$*': no '$needle' in stderr:"; cat "$TMP/f.err"; }
  echo "  failed as expected in ${took}s (exit $rc): $(grep -m1 'axonn: error' "$TMP/f.err")"
}
