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
# Example:
#   scripts/launch/slurm-srun.sh -n 16 --per-node 4 --batch job.sh -- \
#     bin/axonn train --model gpt2-xl --g-inter 4 --g-data 4 --device cuda --summary run.json
#   sbatch job.sh

set -eu
LAUNCH_NAME=slurm-srun.sh
DIR=$(dirname "$0")
# shellcheck source=scripts/launch/common.sh
. "$DIR/common.sh"

PER_NODE=4 CORES=8 GPUS=1
SUBMIT=sbatch
parse_launch_args "$@"

launch="srun --ntasks $RANKS --ntasks-per-node $PER_NODE --cpus-per-task $CORES --cpu-bind=cores"
[ "$GPUS" -gt 0 ] && launch="$launch --gpus-per-task $GPUS"
launch="$launch $CMD"

batch_script() {
  echo "#!/bin/sh"
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
  batch_body "$1"
}

finish "$launch"
