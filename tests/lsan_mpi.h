/* lsan_mpi.h — included once by each test program that initializes MPI: under
 * `make DEBUG=1`, MPI_Init under MPICH ch4:ucx leaves UCX allocations LeakSanitizer cannot see
 * referenced; they are UCX's, not ours, so they are suppressed (nothing else is). */
#ifndef AX_LSAN_MPI_H
#define AX_LSAN_MPI_H

#include "src/core/sanitizer.h"

#ifdef AX_ASAN
#include <sanitizer/lsan_interface.h>
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libuct.so\nleak:libucs.so\n"; }
#endif

#endif
