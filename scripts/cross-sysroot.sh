#!/bin/sh
# Fetches Debian's MPICH, OpenBLAS, hwloc and Check for a foreign architecture and unpacks them
# into a sysroot for `make check-cross` (the cross compiler and qemu-user come from
# scripts/install-deps.sh --cross).
#
# The host's dpkg is left alone: Debian's libmpich-dev pulls in g++ and gfortran of its own
# architecture, which multiarch cannot install beside the host's, and a foreign architecture
# added to dpkg would make every later `apt-get update` fetch its lists too. So apt runs here with
# a private state folder (DIR/apt) that knows only ARCH, downloads the .debs and `dpkg -x`
# unpacks them into DIR/sysroot; no root needed. Debian's OpenBLAS picks its variant through
# update-alternatives, which dpkg -x does not run: the pthread variant's folder is used directly
# (see scripts/cross-env.sh).
#
# Usage: scripts/cross-sysroot.sh ARCH DIR     ARCH: arm64 or ppc64el (Debian's names)
# Writes DIR/sysroot and DIR/sysroot.stamp (the package list; a changed list fetches again).
set -eu
[ $# -eq 2 ] || { echo "usage: $0 arm64|ppc64el DIR" >&2; exit 2; }
arch=$1
dir=$2
case $arch in arm64|ppc64el) ;; *) echo "cross-sysroot: unknown architecture $arch" >&2; exit 2;; esac

# What the build links (the -dev packages: headers, .pc files, .so links) and what the programs
# load at run time (their shared libraries' dependencies, libc and libgcc excepted: those come
# with the cross compiler's libc6-dev-*-cross).
PACKAGES="libmpich-dev libmpich12 libucx-dev libucx0 libhwloc-dev libhwloc15 libudev1 libnuma1"
PACKAGES="$PACKAGES libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200 libgfortran5 libstdc++6"
PACKAGES="$PACKAGES libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0"
PACKAGES="$PACKAGES check libsubunit-dev libsubunit0"
stamp=$dir/sysroot.stamp
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$arch: $PACKAGES" ]; then
  exit 0
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
apt=$dir/apt
rm -rf "$apt" "$dir/sysroot" "$stamp"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$dir/sysroot"
: >"$apt/status"
set -- -o APT::Architecture="$arch" -o APT::Architectures::="$arch" \
  -o Dir::State::Lists="$apt/lists" -o Dir::State::status="$apt/status" \
  -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1 -o Acquire::Retries=3
echo "cross-sysroot: fetching Debian's package lists for $arch"
# a list that fails (a mirror in the middle of a sync) is reported; the download below fails only
# if a package it needs was in no list
apt-get "$@" -q update >"$apt/update.log" 2>&1 || grep '^[EW]:' "$apt/update.log" >&2
echo "cross-sysroot: downloading $PACKAGES"
# shellcheck disable=SC2086
(cd "$apt/debs" && apt-get "$@" -q download $PACKAGES) >"$apt/download.log" 2>&1 ||
  { cat "$apt/download.log" >&2; exit 1; }
for deb in "$apt/debs"/*.deb; do
  dpkg -x "$deb" "$dir/sysroot"
done
count=$(find "$apt/debs" -name "*.deb" | wc -l)
rm -rf "$apt/lists" "$apt/cache" "$apt/debs"
echo "$arch: $PACKAGES" >"$stamp"
echo "cross-sysroot: $dir/sysroot ready ($count packages)"
