# mk/cross.mk — cross builds for aarch64 and ppc64le, and `make check-cross`.
#   make CROSS=aarch64 [target]   builds into build-aarch64/ with aarch64-linux-gnu-gcc against
#   make CROSS=ppc64le [target]   the Debian sysroot in build-$(CROSS)/sysroot (MPICH, OpenBLAS,
#                                 hwloc, Check of that architecture: scripts/cross-sysroot.sh);
#                                 the program is build-$(CROSS)/bin/axonn (bin/ stays the host's)
#   make check-cross              both architectures: unit suites under qemu-user and a 2-rank
#                                 training launched by the host's mpiexec (scripts/check-cross.sh)
# Host packages: scripts/install-deps.sh --cross. No native flag: the binaries target Debian's
# baseline of each architecture (ARMv8-A; POWER8, little-endian), which qemu-user runs.
ifdef CROSS
ifeq ($(CROSS),aarch64)
CROSS_TRIPLET := aarch64-linux-gnu
CROSS_BASELINE := -march=armv8-a
else ifeq ($(CROSS),ppc64le)
CROSS_TRIPLET := powerpc64le-linux-gnu
CROSS_BASELINE := -mcpu=power8
else
$(error CROSS=$(CROSS): aarch64 or ppc64le)
endif
CC := $(CROSS_TRIPLET)-gcc
BUILD := build-$(CROSS)$(if $(filter 1,$(DEBUG)),-debug)
CROSS_SYSROOT := $(abspath build-$(CROSS)/sysroot)
NATIVE_FLAGS := $(CROSS_BASELINE)
OPT := $(if $(filter 1,$(DEBUG)),-g -O0,-O2 $(NATIVE_FLAGS))
SANITIZE :=
CUDA := 0
CROSS_LIBDIRS := $(CROSS_SYSROOT)/usr/lib/$(CROSS_TRIPLET) \
  $(CROSS_SYSROOT)/usr/lib/$(CROSS_TRIPLET)/openblas-pthread $(CROSS_SYSROOT)/lib/$(CROSS_TRIPLET)
# pkg-config reads only the sysroot's .pc files and prefixes their -I/-L with the sysroot: in
# the recipes (scripts/check-deps.sh) through the environment, and in the GNUmakefile's $(shell)
# calls (which make 4.3 runs without exported variables) through these overrides of its lines.
export PKG_CONFIG_LIBDIR := $(CROSS_SYSROOT)/usr/lib/$(CROSS_TRIPLET)/pkgconfig:$(CROSS_SYSROOT)/usr/lib/$(CROSS_TRIPLET)/openblas-pthread/pkgconfig
export PKG_CONFIG_SYSROOT_DIR := $(CROSS_SYSROOT)
export PKG_CONFIG_PATH :=
CROSS_PKG_CONFIG := PKG_CONFIG_LIBDIR=$(PKG_CONFIG_LIBDIR) PKG_CONFIG_SYSROOT_DIR=$(CROSS_SYSROOT) \
  PKG_CONFIG_PATH= pkg-config
override MPI_PKG := mpich
# The sysroot's headers are system headers (-isystem), as /usr/include's are to the host's gcc:
# no warnings from inside them (Check's check.h has one on ppc64le).
cross_isystem = $(patsubst -I%,-isystem %,$(1))
override DEP_CFLAGS = $(call cross_isystem,$(shell $(CROSS_PKG_CONFIG) --cflags $(DEP_PKGS)) \
  -I$(CROSS_SYSROOT)/usr/include/$(CROSS_TRIPLET))
override DEP_LIBS = $(shell $(CROSS_PKG_CONFIG) --libs $(DEP_PKGS)) -lm -lpthread -ldl
override CHECK_CFLAGS = $(call cross_isystem,$(shell $(CROSS_PKG_CONFIG) --cflags check))
override CHECK_LIBS = $(shell $(CROSS_PKG_CONFIG) --libs check)
# the libraries' own dependencies (libucp for libmpich, ...) are found in the sysroot at link time
comma := ,
LDFLAGS += $(addprefix -Wl$(comma)-rpath-link$(comma),$(CROSS_LIBDIRS))
ifeq ($(CROSS),aarch64)
# Debian's aarch64-linux-gnu-gcc 12.2 stops with an internal compiler error in its vectorizer
# (vect_transform_reduction) on one test of the codecs; that test is compiled without it
$(BUILD)/tests/test_codec.o: CFLAGS += -fno-tree-vectorize
endif
endif

.PHONY: check-cross
check-cross: $(BIN)
	@scripts/check-cross.sh aarch64 ppc64le
