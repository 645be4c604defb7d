/* simd.h — which vector instructions the CPU kernels use, decided once for every vectorized
 * kernel (cpu_kernels.c, vecmath.h, offload/adamw.c, mpi/coll/reduce_local.c, mpi/coll/bf16.c) from
 * what the compiler was told it may use (-march=native by default):
 *   AX_SIMD_AVX2    8-lane fp32 with fused multiply-add (AVX2 + FMA)
 *   AX_SIMD_AVX512  16-lane fp32 (AVX-512F), used on top of AVX2 where a kernel has it
 * Every kernel has a scalar path giving the same values, so a build for another CPU (or
 * -march=x86-64) computes the same results, only slower (src/backend/vecmath.h: where that
 * path is also vectorized on aarch64 and POWER).
 * ax_cpu_relax: the spin-wait hint of each architecture (pause, yield, or 27,27,27). */
#ifndef AX_SIMD_H
#define AX_SIMD_H

#if defined(__AVX2__) && defined(__FMA__)
#define AX_SIMD_AVX2 1
#endif
#if defined(AX_SIMD_AVX2) && defined(__AVX512F__)
#define AX_SIMD_AVX512 1
#endif
#if defined(AX_SIMD_AVX2) || defined(AX_SIMD_AVX512)
#include <immintrin.h>
#endif

static inline void ax_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#elif defined(__powerpc64__)
  __asm__ __volatile__("or 27,27,27" ::: "memory");
#endif
}

#endif
