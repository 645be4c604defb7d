#!/bin/sh
# The p2p engine's device-buffer path (CUDA-aware MPI, mpi/link/p2p.h) in whole training runs,
# without a GPU: --cuda-aware-mpi 1 hands MPI the backend's device buffers on any backend, and
# on the CPU backend those are host memory, so the same code path (device receive and send
# buffers, device-to-device copies, the stage taking a device input) runs here. Every loss,
# validation loss and final weight must be bit-identical to the host-staged run's (only where
# the bytes travel changes, never the arithmetic): a 2 x 1 pipeline, and 4 x 1 and 2 x 2 grids
# with pipeline limits; the run log says which path was taken.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --steps 12 --shuffle 0 --seed 11 \
  --val-every 6 --val-steps 2 --lr 3e-3 --threads 1"

same_path() { # LAYOUT NP ARGS...: staged and device-buffer runs, bit-identical
  layout=$1; ranks=$2; shift 2  # (run and same_losses use $name and $np themselves)
  run "$layout-staged" "$ranks" --cuda-aware-mpi 0 "$@" || return
  run "$layout-device" "$ranks" --cuda-aware-mpi 1 "$@" || return
  same_losses "$layout-device" "$layout-staged" 0 0
  grep -q "MPI path: stage messages sent from and received into device buffers" \
    "$TMP/$layout-device.log" || fail "$layout-device: the log does not name the device-buffer path"
  ! grep -q "MPI path" "$TMP/$layout-staged.log" ||
    fail "$layout-staged: a CPU run staged through host memory printed an MPI path line"
}

same_path p2 2 --g-inter 2 --micro-batch 2
same_path p4 4 --g-inter 4 --micro-batch 1 --pipeline-limit 3
same_path grid2x2 4 --g-inter 2 --g-data 2 --micro-batch 1
finish mpi_device_buffers
