#!/bin/sh
# Checks that the build can find what it needs, and names what is missing and how to get it.
# Prints the MPI pkg-config name it found (mpich, ompi or mpi) or "mpicc" on success.
# Usage: scripts/check-deps.sh [--tests]   (--tests also requires the Check framework)
set -u
missing=""
hint() { missing="$missing\n  - $1\n      Debian/Ubuntu: sudo apt-get install -y $2   (or: sudo scripts/install-deps.sh)\n      HPC systems:   module load $3  (and put its lib/pkgconfig in PKG_CONFIG_PATH)"; }

if ! command -v pkg-config >/dev/null 2>&1; then
  echo "axonn: pkg-config not found; install it (Debian: apt-get install pkg-config)" >&2
  exit 1
fi
mpi=""
for p in mpich ompi mpi; do
  if pkg-config --exists "$p" 2>/dev/null; then mpi=$p; break; fi
done
if [ -z "$mpi" ]; then
  if command -v mpicc >/dev/null 2>&1; then mpi=mpicc
  else hint "MPI (no pkg-config file mpich/ompi/mpi and no mpicc)" "mpich libmpich-dev" "mpich"; fi
fi
pkg-config --exists openblas 2>/dev/null || hint "OpenBLAS (pkg-config openblas)" "libopenblas-dev" "openblas"
pkg-config --exists hwloc 2>/dev/null || hint "hwloc (pkg-config hwloc)" "libhwloc-dev" "hwloc"
if [ "${1:-}" = "--tests" ]; then
  pkg-config --exists check 2>/dev/null || hint "Check unit-test framework (pkg-config check)" "check" "check"
fi
if [ -n "$missing" ]; then
  printf "axonn: cannot build, missing:$missing\n" >&2
  exit 1
fi
echo "$mpi"
