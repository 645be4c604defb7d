/* lsan_mpi.h — included once by each test program that initializes MPI: under
 * `make DEBUG=1`, MPI_Init under MPICH ch4:ucx leaves UCX allocations LeakSanitizer cannot see
 * referenced; they are UCX's, not ours, so they are suppressed (nothing else is). */
#ifndef AX_LSAN_MPI_H
#define AX_LSAN_MPI_H

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AX_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define AX_TEST_ASAN 1
#endif
#ifdef AX_TEST_ASAN
#include <sanitizer/lsan_interface.h>
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libuct.so\nleak:libucs.so\n"; }
#endif

#endif
