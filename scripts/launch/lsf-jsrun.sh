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
#   --warn MINUTES       #BSUB -wa USR1 -wt MINUTES: LSF signals the job that long before -W runs
#                        out; the script passes SIGUSR1 on to jsrun (and so to every rank)
#   --modules "A B"      module load A B at the top of the script
#   --chain N            with --batch FILE: bsub N jobs, each -w 'ended(previous)', jobs 2..N
#                        running FILE's .resume twin (the command + --resume)
# Example (8 nodes, 48 GPUs):
#   scripts/launch/lsf-jsrun.sh -n 48 --account CSC000 --batch job.lsf -- \
#     bin/axonn train --model gpt-12b --batch 16384 --g-inter 6 --g-data 8 --device cuda \
#     --precision fp16 --steps 11 --summary run.json
#   bsub < job.lsf

set -eu
LAUNCH_NAME=lsf-jsrun.sh
DIR=$(dirname "$0")
# shellcheck source=scripts/launch/common.sh
. "$DIR/common.sh"

PER_NODE=6 CORES=7 GPUS=1 SCHEDULER=lsf FORWARD_WARN=1
parse_launch_args "$@"

jsrun="jsrun -n $RANKS -r $PER_NODE -a 1 -c $CORES -g $GPUS --bind packed:$CORES"
[ "$GPUS" -gt 0 ] && jsrun="$jsrun --smpiargs=-gpu"

# bsub reads #BSUB lines from standard input everywhere (from a file argument only where
# LSB_BSUB_PARSE_SCRIPT=Y); it answers "Job <ID> is submitted to queue <Q>."
submit_hint() { echo "bsub < $(q "$1")"; }
submit_cmd() { echo "bsub${2:+ -w \"ended($2)\"} < $(q "$1")"; }
job_id_of() { echo "$1" | sed -n 's/^Job <\([0-9][0-9]*\)> is submitted.*/\1/p' | head -n 1; }

batch_script() {
  shebang
  [ -n "$ACCOUNT" ] && echo "#BSUB -P $ACCOUNT"
  [ -n "$QUEUE" ] && echo "#BSUB -q $QUEUE"
  echo "#BSUB -nnodes $NODES"
  echo "#BSUB -W $(hhmm "$TIME")"
  echo "#BSUB -J $JOB_NAME"
  echo "#BSUB -o $OUTPUT"
  echo "#BSUB -e $OUTPUT"
  [ "$WARN" -gt 0 ] && echo "#BSUB -wa USR1" && echo "#BSUB -wt $WARN"
  batch_body "$1"
}

finish "$jsrun $CMD" "$jsrun $RESUME_CMD"
