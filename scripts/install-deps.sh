#!/bin/sh
# Installs what axonn needs to build and test.
# On Debian/Ubuntu as root: apt-get installs whichever of the packages below is missing.
# Elsewhere (other distributions, no root, HPC login nodes): prints what to install or load.
# Usage: scripts/install-deps.sh [--check] [--cross]   (--check only reports, never installs)
#   --cross  instead: what `make check-cross` needs on the host (Debian's cross compilers for
#            aarch64 and ppc64le, qemu-user), then the foreign MPICH, OpenBLAS, hwloc and Check
#            unpacked into build-aarch64/sysroot and build-ppc64le/sysroot (scripts/cross-sysroot.sh)
set -eu

# Debian package -> what it provides (shown to users who must install it by hand).
PACKAGES="mpich libmpich-dev libhwloc-dev check libopenblas-dev pkg-config"
# Extra packages some optional parts use (plots; protoc, the independent reader of the
# TensorBoard files in tests/cli_metrics.sh); installed when we can, never required.
OPTIONAL="python3-matplotlib protobuf-compiler"

check_only=0
cross=0
for arg in "$@"; do
  case $arg in
    --check) check_only=1 ;;
    --cross) cross=1 ;;
    *) echo "install-deps: unknown option $arg (--check, --cross)" >&2; exit 2 ;;
  esac
done
if [ "$cross" = 1 ]; then
  PACKAGES="gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-powerpc64le-linux-gnu"
  PACKAGES="$PACKAGES libc6-dev-ppc64el-cross qemu-user file"
  OPTIONAL=""
fi

# the foreign libraries, next to the build folders of the repository this script is in
cross_sysroots() {
  root=$(cd "$(dirname "$0")/.." && pwd)
  (cd "$root" && scripts/cross-sysroot.sh arm64 build-aarch64 &&
    scripts/cross-sysroot.sh ppc64el build-ppc64le)
}

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
    if [ "$cross" = 1 ] && [ "$check_only" = 0 ]; then cross_sysroots; fi
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
  if [ "$cross" = 1 ]; then cross_sysroots; fi
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
