#!/bin/sh
# Core binding under a launcher's CPU set (src/backend/binding.c, mpi/mpi_util.c): a rank binds inside
# the set it started with, ranks that start with the same set split it, ranks that would
# oversubscribe it stay unbound (and wait politely), and every placement trains to the same
# losses as the unbound single-rank run. The launcher's set comes from taskset here (as from
# srun --cpu-bind, mpirun --bind-to or jsrun -b on a cluster) and from MPICH's -bind-to.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 8 --steps 6 --shuffle 0 --seed 3 \
  --val-steps 0 --lr 3e-3 --threads 1"
last=$(($(nproc) - 1))

# expect_line NAME PATTERN: NAME's log has a line matching PATTERN
expect_line() {
  grep -q -- "$2" "$TMP/$1.log" || { fail "$1: no line matching '$2'"; cat "$TMP/$1.log"; }
}

run ref 1 --micro-batch 2 || exit 1
if [ "$last" -lt 1 ] || ! command -v taskset >/dev/null; then
  echo "skipped: the binding cases need taskset and 2 CPUs (have $((last + 1)))"
else
  MPIEXEC_SAVED=$MPIEXEC
  MPIEXEC="taskset -c $last $MPIEXEC_SAVED"
  run one_cpu 1 --micro-batch 2 && same_losses one_cpu
  expect_line one_cpu "rank   0 .*bound to cores 0-0 of the launcher's CPU set $last (thread 0 -> PU $last)"
  run shared_cpu 2 --g-data 2 --micro-batch 2 && same_losses shared_cpu
  expect_line shared_cpu "rank   1 .*not bound: 2 rank(s) x 1 thread(s) on the CPU set they share exceed its 1 core(s)"
  MPIEXEC="$MPIEXEC_SAVED -bind-to core"
  run bind_to_core 2 --g-data 2 --micro-batch 2 && same_losses bind_to_core
  expect_line bind_to_core "rank   1 .*bound to cores 0-0 of the launcher's CPU set [0-9]"
  MPIEXEC=$MPIEXEC_SAVED
  # no launcher binding: the node's cores split in local-rank order
  run plain 2 --g-data 2 --micro-batch 2 && same_losses plain
  expect_line plain "rank   1 .*bound to cores 1-1 (thread 0 -> PU"
fi
finish
