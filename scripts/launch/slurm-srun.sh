#!/bin/sh
# slurm-srun.sh — launch template for Slurm clusters: one task per GPU,
#   srun --ntasks RANKS --ntasks-per-node PER_NODE --cpus-per-task CORES --gpus-per-task 1
#        --cpu-bind=cores COMMAND
# (--gpus-per-task left out with --gpus-per-rank 0).
#
# Usage: scripts/launch/slurm-srun.sh -n RANKS [options] -- COMMAND [ARGS...]
#   --per-node G         GPUs (tasks) per node (default 4)
#   --cores-per-rank C   cores per task (default 8)
#   --gpus-per-rank K    GPUs per task (default 1; 0 for CPU-only runs)
#   --dry-run            print the command only
#   --batch FILE         write an sbatch script (#SBATCH --nodes, --time, ...) to FILE
#   --account A  --partition Q  --time MINUTES  --job-name NAME  --output FILE
#   --warn MINUTES       #SBATCH --signal=USR1@SECONDS: Slurm sends SIGUSR1 to the job step
#                        (every rank; not the batch shell) that long before --time runs out
#   --modules "A B"      module load A B at the top of the script
#   --chain N            with --batch FILE: sbatch N jobs, each --dependency=afterany on the one
#                        before, jobs 2..N running FILE's .resume twin (the command + --resume)
# Example:
#   scripts/launch/slurm-srun.sh -n 16 --per-node 4 --batch job.sh -- \
#     bin/axonn train --model gpt2-xl --g-inter 4 --g-data 4 --device cuda --summary run.json
#   sbatch job.sh
# Three 2-hour jobs that continue one another (checkpoint on the warning 5 minutes before each
# job's end, resume in the next):
#   scripts/launch/slurm-srun.sh -n 16 --time 120 --batch job.sh --chain 3 -- bin/axonn train ... \
#     --checkpoint-dir ckpt

set -eu
LAUNCH_NAME=slurm-srun.sh
DIR=$(dirname "$0")
# shellcheck source=scripts/launch/common.sh
. "$DIR/common.sh"

PER_NODE=4 CORES=8 GPUS=1 SCHEDULER=slurm
parse_launch_args "$@"

srun="srun --ntasks $RANKS --ntasks-per-node $PER_NODE --cpus-per-task $CORES --cpu-bind=cores"
[ "$GPUS" -gt 0 ] && srun="$srun --gpus-per-task $GPUS"

submit_hint() { echo "sbatch $(q "$1")"; }
# sbatch --parsable prints "ID" or "ID;CLUSTER"
submit_cmd() { echo "sbatch --parsable${2:+ --dependency=afterany:$2} $(q "$1")"; }
job_id_of() { echo "${1%%;*}" | sed -n '/^[0-9][0-9_]*$/p'; }

batch_script() {
  shebang
  echo "#SBATCH --job-name=$JOB_NAME"
  echo "#SBATCH --nodes=$NODES"
  echo "#SBATCH --ntasks=$RANKS"
  echo "#SBATCH --ntasks-per-node=$PER_NODE"
  echo "#SBATCH --cpus-per-task=$CORES"
  [ "$GPUS" -gt 0 ] && echo "#SBATCH --gpus-per-node=$((PER_NODE * GPUS))"
  echo "#SBATCH --time=$TIME"
  echo "#SBATCH --output=$OUTPUT"
  [ -n "$ACCOUNT" ] && echo "#SBATCH --account=$ACCOUNT"
  [ -n "$QUEUE" ] && echo "#SBATCH --partition=$QUEUE"
  [ "$WARN" -gt 0 ] && echo "#SBATCH --signal=USR1@$((WARN * 60))"
  [ "${CHAIN_RESUME:-0}" = 1 ] && echo "#SBATCH --open-mode=append"
  batch_body "$1"
}

finish "$srun $CMD" "$srun $RESUME_CMD"
