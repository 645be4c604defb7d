#!/bin/sh
# lsf-jsrun.sh — launch template for LSF systems with jsrun (Summit: 6 V100 GPUs and 42 usable
# cores per node): one resource set per rank with one GPU and its share of the cores,
#   jsrun -n RANKS -r PER_NODE -a 1 -c CORES -g 1 --bind packed:CORES --smpiargs=-gpu COMMAND
# (--smpiargs=-gpu turns on CUDA-aware Spectrum MPI; left out with --gpus-per-rank 0).
#
# Usage: scripts/launch/lsf-jsrun.sh -n RANKS [options] -- COMMAND [ARGS...]
#   --per-node G         GPUs (ranks) per node (default 6)
#   --cores-per-rank C   cores per rank (default 7 = 42 / 6)
#   --gpus-per-rank K    GPUs per rank (default 1; 0 for CPU-only runs)
#   --dry-run            print the command only
#   --batch FILE         write an LSF script (#BSUB -nnodes, -W, -P, -q, -J, -o) to FILE
#   --account A  --queue Q  --time MINUTES  --job-name NAME  --output FILE
# Example (8 nodes, 48 GPUs):
#   scripts/launch/lsf-jsrun.sh -n 48 --account CSC000 --batch job.lsf -- \
#     bin/axonn train --model gpt-12b --batch 16384 --g-inter 6 --g-data 8 --device cuda \
#     --precision fp16 --steps 11 --summary run.json
#   bsub job.lsf

set -eu
LAUNCH_NAME=lsf-jsrun.sh
DIR=$(dirname "$0")
# shellcheck source=scripts/launch/common.sh
. "$DIR/common.sh"

PER_NODE=6 CORES=7 GPUS=1
SUBMIT=bsub
parse_launch_args "$@"

launch="jsrun -n $RANKS -r $PER_NODE -a 1 -c $CORES -g $GPUS --bind packed:$CORES"
[ "$GPUS" -gt 0 ] && launch="$launch --smpiargs=-gpu"
launch="$launch $CMD"

batch_script() {
  echo "#!/bin/sh"
  [ -n "$ACCOUNT" ] && echo "#BSUB -P $ACCOUNT"
  [ -n "$QUEUE" ] && echo "#BSUB -q $QUEUE"
  echo "#BSUB -nnodes $NODES"
  echo "#BSUB -W $(hhmm "$TIME")"
  echo "#BSUB -J $JOB_NAME"
  echo "#BSUB -o $OUTPUT"
  echo "#BSUB -e $OUTPUT"
  batch_body "$1"
}

finish "$launch"
