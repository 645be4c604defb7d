#!/bin/sh
# mpirun.sh — launch template for workstations and clusters without a batch system:
# mpiexec -n RANKS -bind-to core:C [-ppn PER_NODE] [-f HOSTFILE] COMMAND (MPICH/Hydra spelling;
# Open MPI gets --bind-to core [--map-by slot:PE=C], --npernode and --hostfile), C being
# --cores-per-rank. MPIEXEC names the launcher (default mpiexec).
#
# Usage: scripts/launch/mpirun.sh -n RANKS [options] -- COMMAND [ARGS...]
#   --per-node G       ranks per node (default: all on this node, no -ppn)
#   --hostfile FILE    the nodes to use
#   --cores-per-rank C cores each rank is bound to (default: this host's cores / ranks per
#                      node, at least 1: the split axonn makes itself without a launcher)
#   --bind core|none   bind each rank to its C cores (default), or leave placement to the OS
#   --modules "A B"    with --batch: module load A B at the top of the script
#   --dry-run          print the command only;  --batch FILE: write a sh script that runs it
#   (and the options every template takes; see scripts/launch/common.sh)
# Example:
#   scripts/launch/mpirun.sh -n 4 -- bin/axonn train --g-inter 2 --g-data 2 --summary s.json

set -eu
LAUNCH_NAME=mpirun.sh
DIR=$(dirname "$0")
# shellcheck source=scripts/launch/common.sh
. "$DIR/common.sh"

PER_NODE=1000000 CORES=1 GPUS=1 HOSTFILE="" explicit_per_node=0 explicit_cores=0 BIND=core
SCHEDULER=none
args=""
# --hostfile and --bind are this template's own; the rest is common
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in
    --hostfile) need_value "$@"; HOSTFILE=$2; shift ;;
    --bind)
      need_value "$@"; BIND=$2; shift
      case $BIND in core | none) ;; *) die "--bind must be core or none (got '$BIND')" ;; esac ;;
    --per-node) need_value "$@"; explicit_per_node=1; args="$args $(q "$1") $(q "$2")"; shift ;;
    --cores-per-rank) need_value "$@"; explicit_cores=1; args="$args $(q "$1") $(q "$2")"; shift ;;
    *) args="$args $(q "$1")" ;;
  esac
  shift
done
eval "parse_launch_args $args \"\$@\""
if [ "$explicit_cores" = 0 ]; then
  here=$RANKS
  [ "$PER_NODE" -lt "$here" ] && here=$PER_NODE
  cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null) || cpus=1
  CORES=$((${cpus:-1} / here))
  [ "$CORES" -ge 1 ] || CORES=1
fi

# MPIEXEC may carry flags of its own (e.g. "mpirun --oversubscribe"): split on purpose
MPIEXEC=${MPIEXEC:-mpiexec}
openmpi=0
# shellcheck disable=SC2086
if $MPIEXEC --version 2>/dev/null | grep -q "Open MPI"; then openmpi=1; fi
launch="$MPIEXEC -n $RANKS"
if [ "$BIND" = core ]; then
  if [ $openmpi = 1 ]; then
    launch="$launch --bind-to core"
    [ "$CORES" = 1 ] || launch="$launch --map-by slot:PE=$CORES"
  else
    launch="$launch -bind-to core"
    [ "$CORES" = 1 ] || launch="$launch:$CORES"
  fi
fi
if [ "$explicit_per_node" = 1 ]; then
  if [ $openmpi = 1 ]; then launch="$launch --npernode $PER_NODE"; else launch="$launch -ppn $PER_NODE"; fi
fi
if [ -n "$HOSTFILE" ]; then
  if [ $openmpi = 1 ]; then launch="$launch --hostfile $(q "$HOSTFILE")"; else launch="$launch -f $(q "$HOSTFILE")"; fi
fi

submit_hint() { echo "sh $(q "$1")"; }

batch_script() {
  shebang
  echo "# $JOB_NAME: run with sh (no batch system); output goes to the terminal"
  batch_body "$1"
}

finish "$launch $CMD"
