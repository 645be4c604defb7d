#!/bin/sh
# The launch templates (scripts/launch/) against their schedulers' documented syntax, without a
# scheduler: every #SBATCH / #BSUB line of a batch script is an option sbatch / bsub documents,
# spelled as documented, before the first command; srun / jsrun / mpiexec lines likewise;
# warning signals (--warn: #SBATCH --signal=USR1@SECONDS to the job step, #BSUB -wa USR1 -wt
# MINUTES with the script passing SIGUSR1 on to the launcher), `module load` (--modules) and
# chains of jobs (--chain: sbatch --dependency=afterany:ID, bsub -w "ended(ID)", later jobs with
# --resume). The submit path of --chain runs against stand-ins for sbatch and bsub that answer
# as the documented ones do (there is no Slurm or LSF here); the LSF script's signal forwarding
# runs for real, a stand-in jsrun running one axonn train that checkpoints on SIGUSR1.
# Bad options are in tests/cli_badinput.sh.
. "$(dirname "$0")/testlib.sh"
L=scripts/launch
TRAIN="bin/axonn train --checkpoint-dir ck --steps 100"

# lines_ok FILE PREFIX PATTERN: every line starting with PREFIX matches the (extended) PATTERN,
# there is at least one, and none comes after the first line that is not a comment
lines_ok() {
  grep -q "^$2" "$1" || { fail "$1: no $2 lines"; return; }
  grep "^$2" "$1" | grep -Ev "^$2 ?($3)\$" | while read -r line; do echo "FAIL: $1: not documented: $line"; done |
    grep . && fail "$1: undocumented $2 lines"
  first_cmd=$(grep -n -v '^#' "$1" | head -n 1 | cut -d: -f1)
  last_directive=$(grep -n "^$2" "$1" | tail -n 1 | cut -d: -f1)
  [ "$last_directive" -lt "$first_cmd" ] || fail "$1: a $2 line after the first command (line $first_cmd)"
}

# ---- Slurm (sbatch(1), srun(1)): long options with =, --time in minutes, --signal=[B:]SIG@SECONDS
SBATCH='--job-name=[A-Za-z0-9_.-]+|--(nodes|ntasks|ntasks-per-node|cpus-per-task|gpus-per-node|time)=[0-9]+'
SBATCH="$SBATCH|--output=[^ ]+|--account=[^ ]+|--partition=[^ ]+|--signal=USR1@[0-9]+|--open-mode=append"
$L/slurm-srun.sh -n 16 --time 120 --account A --partition gpu --modules "gcc/12.2 cuda/12" \
  --batch "$TMP/s.sh" -- $TRAIN >/dev/null || fail "slurm-srun.sh --batch"
lines_ok "$TMP/s.sh" "#SBATCH" "$SBATCH"
[ "$(head -n 1 "$TMP/s.sh")" = "#!/bin/bash -l" ] || fail "--modules: the script is not run by bash -l"
grep -q "^#SBATCH --signal=USR1@300$" "$TMP/s.sh" || fail "no --signal=USR1@300 (5 minutes) with --checkpoint-dir"
grep -q "B:" "$TMP/s.sh" && fail "--signal with B: signals only the batch shell, not the ranks"
sed -n '/^module load/,$p' "$TMP/s.sh" | sed -n 2p | grep -q "^set -eu$" ||
  fail "module load must come first, before set -eu"
grep -q "^module load gcc/12.2 cuda/12$" "$TMP/s.sh" || fail "--modules: no module load line"
srun='srun --ntasks [0-9]+ --ntasks-per-node [0-9]+ --cpus-per-task [0-9]+ --cpu-bind=cores( --gpus-per-task [0-9]+)? '
grep -Eq "^$srun$TRAIN$" "$TMP/s.sh" || fail "srun line: $(grep '^srun' "$TMP/s.sh")"
$L/slurm-srun.sh -n 4 --batch - -- bin/axonn train >"$TMP/nock.sh" || fail "slurm-srun.sh --batch -"
grep -q -- "--signal" "$TMP/nock.sh" && fail "a warning signal for a run without --checkpoint-dir"
[ "$(head -n 1 "$TMP/nock.sh")" = "#!/bin/sh" ] || fail "without --modules: not sh"
$L/slurm-srun.sh -n 4 --warn 12 --time 60 --batch - -- bin/axonn train | grep -q "^#SBATCH --signal=USR1@720$" ||
  fail "--warn 12: not --signal=USR1@720"
$L/slurm-srun.sh -n 4 --warn 0 --batch - -- $TRAIN | grep -q -- "--signal" && fail "--warn 0 still signals"

# ---- LSF (bsub(1), jsrun(1)): -W [hh:]mm, -wa SIGNAL with -wt [hour:]minute
BSUB='-P [^ ]+|-q [^ ]+|-nnodes [0-9]+|-W [0-9]{2}:[0-9]{2}|-J [^ ]+|-[oe] [^ ]+|-wa USR1|-wt [0-9]+'
$L/lsf-jsrun.sh -n 12 --time 90 --account CSC000 --queue batch --modules "gcc/9" \
  --batch "$TMP/l.lsf" -- $TRAIN >/dev/null || fail "lsf-jsrun.sh --batch"
lines_ok "$TMP/l.lsf" "#BSUB" "$BSUB"
grep -q "^#BSUB -W 01:30$" "$TMP/l.lsf" || fail "-W 01:30 for 90 minutes"
grep -q "^#BSUB -wa USR1$" "$TMP/l.lsf" && grep -q "^#BSUB -wt 5$" "$TMP/l.lsf" ||
  fail "no -wa USR1 / -wt 5 with --checkpoint-dir"
jsrun='jsrun -n [0-9]+ -r [0-9]+ -a 1 -c [0-9]+ -g [0-9]+ --bind packed:[0-9]+( --smpiargs=-gpu)? '
grep -Eq "^$jsrun$TRAIN &$" "$TMP/l.lsf" || fail "jsrun line: $(grep '^jsrun' "$TMP/l.lsf")"
grep -q "^trap '.*kill -USR1 .*' USR1$" "$TMP/l.lsf" || fail "the LSF script does not pass SIGUSR1 on"
$L/lsf-jsrun.sh -n 6 --dry-run -- bin/axonn train | grep -Eq "^\+ ${jsrun}bin/axonn train$" ||
  fail "lsf-jsrun.sh --dry-run"

# ---- mpirun: binding, MPICH's and Open MPI's spelling (a launcher whose --version says Open MPI)
[ "$(MPIEXEC=mpiexec $L/mpirun.sh -n 4 --cores-per-rank 2 --dry-run -- x)" = "+ mpiexec -n 4 -bind-to core:2 x" ] ||
  fail "MPICH: -bind-to core:2"
[ "$(MPIEXEC=mpiexec $L/mpirun.sh -n 4 --bind none --dry-run -- x)" = "+ mpiexec -n 4 x" ] || fail "--bind none"
[ "$(MPIEXEC="echo Open MPI" $L/mpirun.sh -n 4 --cores-per-rank 2 --dry-run -- x)" = \
  "+ echo Open MPI -n 4 --bind-to core --map-by slot:PE=2 x" ] || fail "Open MPI: --bind-to core --map-by slot:PE=2"

# ---- --chain: the dry run prints the submit commands; the script of jobs 2..N resumes
cd "$TMP" || exit 1
"$OLDPWD/$L/slurm-srun.sh" -n 8 --time 60 --batch job.sh --chain 3 --dry-run -- $TRAIN >chain.out ||
  fail "slurm --chain 3 --dry-run"
grep '^+ ' chain.out >chain.cmds
printf '%s\n' '+ sbatch --parsable job.sh' '+ sbatch --parsable --dependency=afterany:$JOB1 job.resume.sh' \
  '+ sbatch --parsable --dependency=afterany:$JOB2 job.resume.sh' | cmp -s - chain.cmds ||
  { fail "slurm --chain 3 --dry-run printed:"; cat chain.out; }
grep -q "^srun .* --resume$" job.resume.sh || fail "job.resume.sh does not resume"
grep -q -- "--resume" job.sh && fail "job 1 resumes"
grep -q "^#SBATCH --open-mode=append$" job.resume.sh || fail "later jobs do not append to the output"
"$OLDPWD/$L/lsf-jsrun.sh" -n 6 --batch job.lsf --chain 2 --dry-run -- $TRAIN >lchain.out || fail "lsf --chain"
grep '^+ ' lchain.out >lchain.cmds
printf '%s\n' '+ bsub < job.lsf' '+ bsub -w "ended($JOB1)" < job.resume.lsf' | cmp -s - lchain.cmds ||
  { fail "lsf --chain 2 --dry-run printed:"; cat lchain.out; }
# submitting: stand-ins answer as sbatch --parsable ("ID;CLUSTER") and bsub ("Job <ID> is ...") do
mkdir -p fake
cat >fake/sbatch <<'EOF'
#!/bin/sh
echo "$*" >>"$(dirname "$0")/sbatch.log"
echo "$((700 + $(wc -l <"$(dirname "$0")/sbatch.log")));cluster1"
EOF
cat >fake/bsub <<'EOF'
#!/bin/sh
echo "$* $(grep -c '^#BSUB' -)" >>"$(dirname "$0")/bsub.log"
echo "Job <$((900 + $(wc -l <"$(dirname "$0")/bsub.log")))> is submitted to queue <batch>."
EOF
chmod +x fake/sbatch fake/bsub
PATH="$TMP/fake:$PATH" "$OLDPWD/$L/slurm-srun.sh" -n 8 --batch job.sh --chain 3 -- $TRAIN >/dev/null ||
  fail "slurm --chain 3"
printf '%s\n' '--parsable job.sh' '--parsable --dependency=afterany:701 job.resume.sh' \
  '--parsable --dependency=afterany:702 job.resume.sh' | cmp -s - fake/sbatch.log ||
  { fail "sbatch calls:"; cat fake/sbatch.log; }
PATH="$TMP/fake:$PATH" "$OLDPWD/$L/lsf-jsrun.sh" -n 6 --batch job.lsf --chain 2 -- $TRAIN >/dev/null ||
  fail "lsf --chain 2"
n=$(grep -c '^#BSUB' job.lsf)
printf '%s\n' " $n" "-w ended(901) $n" | cmp -s - fake/bsub.log || { fail "bsub calls (args, #BSUB lines read):"; cat fake/bsub.log; }

# ---- the LSF script passes SIGUSR1 on: a stand-in jsrun runs one rank; the job checkpoints, exits 0
cat >fake/jsrun <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do case $1 in -n | -r | -a | -c | -g | --bind) shift 2 ;; -*) shift ;; *) break ;; esac; done
exec "$@"
EOF
chmod +x fake/jsrun
case $AXONN in /*) A=$AXONN ;; *) A=$OLDPWD/$AXONN ;; esac
"$OLDPWD/$L/lsf-jsrun.sh" -n 1 --gpus-per-rank 0 --warn 1 --batch sig.lsf -- "$A" train --layers 1 \
  --hidden 16 --heads 1 --seq 8 --batch 2 --steps 1000000 --threads 1 --val-steps 0 \
  --checkpoint-dir "$TMP/sigck" --metrics "$TMP/sig.csv" >/dev/null || fail "lsf-jsrun.sh --warn 1"
PATH="$TMP/fake:$PATH" sh sig.lsf >sig.out 2>&1 &
job=$!
i=0
while [ "$(cat sig.csv 2>/dev/null | wc -l)" -lt 4 ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
kill -USR1 "$job"
wait "$job"; rc=$?
[ $rc -eq 0 ] || { fail "LSF script sent SIGUSR1: exit $rc, expected 0"; cat sig.out; }
grep -q "stop requested" sig.out || fail "SIGUSR1 did not reach the trainer"
ls "$TMP"/sigck/step-*/manifest >/dev/null 2>&1 || fail "SIGUSR1: no checkpoint written"
cd "$OLDPWD" || exit 1

finish
