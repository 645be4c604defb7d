# mk/arch.mk — the instruction-set flag of a native build, by the target of $(CC).
#   x86_64, i686          -march=native
#   aarch64, ppc64(le)    -mcpu=native   (GCC on POWER rejects -march; on Arm -mcpu=native also
#                                         tunes for the core, and GCC before 10 has no
#                                         -march=native there)
#   anything else         none (the compiler's default baseline)
# `make NATIVE_FLAGS=` builds for the baseline (a binary that runs on any machine of the
# architecture); cross builds (mk/cross.mk) set a named baseline instead.
AX_TARGET := $(shell $(CC) -dumpmachine 2>/dev/null)
ifeq ($(origin NATIVE_FLAGS),undefined)
NATIVE_FLAGS := $(strip \
  $(if $(filter x86_64-% i386-% i486-% i586-% i686-%,$(AX_TARGET)),-march=native, \
  $(if $(filter aarch64-% arm64-% powerpc64-% powerpc64le-% ppc64-% ppc64le-%,$(AX_TARGET)),-mcpu=native)))
endif
