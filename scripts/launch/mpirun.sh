#!/bin/sh
# mpirun.sh — launch template for workstations and clusters without a batch system:
# mpiexec -n RANKS [-ppn PER_NODE] [-f HOSTFILE] COMMAND (MPICH/Hydra spelling; Open MPI gets
# --npernode and --hostfile). MPIEXEC names the launcher (default mpiexec).
#
# Usage: scripts/launch/mpirun.sh -n RANKS [options] -- COMMAND [ARGS...]
#   --per-node G       ranks per node (default: all on this node, no -ppn)
#   --hostfile FILE    the nodes to use
#   --dry-run          print the command only;  --batch FILE: write a sh script that runs it
#   (and the options every template takes; see scripts/launch/common.sh)
# Example:
#   scripts/launch/mpirun.sh -n 4 -- bin/axonn train --g-inter 2 --g-data 2 --summary s.json

set -eu
LAUNCH_NAME=mpirun.sh
DIR=$(dirname "$0")
# shellcheck source=scripts/launch/common.sh
. "$DIR/common.sh"

PER_NODE=1000000 CORES=1 GPUS=1 HOSTFILE="" explicit_per_node=0
SUBMIT="sh"
args=""
# --hostfile is this template's own; the rest is common
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in
    --hostfile) need_value "$@"; HOSTFILE=$2; shift ;;
    --per-node) need_value "$@"; explicit_per_node=1; args="$args $(q "$1") $(q "$2")"; shift ;;
    *) args="$args $(q "$1")" ;;
  esac
  shift
done
eval "parse_launch_args $args \"\$@\""

# MPIEXEC may carry flags of its own (e.g. "mpirun --oversubscribe"): split on purpose
MPIEXEC=${MPIEXEC:-mpiexec}
openmpi=0
# shellcheck disable=SC2086
if $MPIEXEC --version 2>/dev/null | grep -q "Open MPI"; then openmpi=1; fi
launch="$MPIEXEC -n $RANKS"
if [ "$explicit_per_node" = 1 ]; then
  if [ $openmpi = 1 ]; then launch="$launch --npernode $PER_NODE"; else launch="$launch -ppn $PER_NODE"; fi
fi
if [ -n "$HOSTFILE" ]; then
  if [ $openmpi = 1 ]; then launch="$launch --hostfile $(q "$HOSTFILE")"; else launch="$launch -f $(q "$HOSTFILE")"; fi
fi
launch="$launch $CMD"

batch_script() {
  echo "#!/bin/sh"
  echo "# $JOB_NAME: run with sh (no batch system); output goes to the terminal"
  batch_body "$1"
}

finish "$launch"
