#!/bin/sh
# Installs what axonn needs to build and test.
# On Debian/Ubuntu as root: apt-get installs whichever of the packages below is missing.
# Elsewhere (other distributions, no root, HPC login nodes): prints what to install or load.
# Usage: scripts/install-deps.sh [--check]   (--check only reports, never installs)
set -eu

# Debian package -> what it provides (shown to users who must install it by hand).
PACKAGES="mpich libmpich-dev libhwloc-dev check libopenblas-dev pkg-config"
# Extra packages some optional parts use (plots; protoc, the independent reader of the
# TensorBoard files in tests/cli_metrics.sh); installed when we can, never required.
OPTIONAL="python3-matplotlib protobuf-compiler"

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

is_debian() { [ -r /etc/debian_version ] && command -v dpkg-query >/dev/null 2>&1; }

missing_debian() {
  for p in $1; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      printf '%s ' "$p"
    fi
  done
}

if is_debian; then
  missing=$(missing_debian "$PACKAGES")
  missing_opt=$(missing_debian "$OPTIONAL")
  if [ -z "$missing" ] && [ -z "$missing_opt" ]; then
    echo "install-deps: all packages present ($PACKAGES $OPTIONAL)"
    exit 0
  fi
  if [ "$check_only" = 1 ] || [ "$(id -u)" != 0 ]; then
    [ -n "$missing" ] && echo "install-deps: missing Debian packages: $missing" &&
      echo "  install with: sudo apt-get install -y $missing"
    [ -n "$missing_opt" ] && echo "install-deps: optional (plots, TensorBoard check): sudo apt-get install -y $missing_opt"
    [ -n "$missing" ] && exit 1
    exit 0
  fi
  echo "install-deps: installing $missing $missing_opt"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing $missing_opt
  exit 0
fi

# Not Debian: tell the user what to provide.
cat <<'EOF'
install-deps: this is not a Debian/Ubuntu system; please provide by hand:
  - an MPI library with mpicc and a pkg-config file (MPICH recommended; Cray MPICH, Spectrum MPI
    and Open MPI also work), e.g. `module load mpich` or `module load spectrum-mpi`
  - a CBLAS (OpenBLAS recommended) with a pkg-config file `openblas`, e.g. `module load openblas`
  - hwloc (headers and pkg-config file), e.g. `module load hwloc`
  - Check (unit-test framework, only for `make check`), e.g. `module load check` or build from source
  - pkg-config
  On RHEL/Rocky: dnf install mpich-devel openblas-devel hwloc-devel check-devel pkgconf
  On macOS (Homebrew): brew install mpich openblas hwloc check pkg-config
Then run `make`; it names any package it still cannot find.
EOF
exit 1
