/* host_sumsq.h — the sum of squares of host fp32 arrays (the gradient norm, the overflow check),
 * on one thread or on the optimizer's threads, with the same bits either way. */
#ifndef AX_HOST_SUMSQ_H
#define AX_HOST_SUMSQ_H

#include <stddef.h>

#include "src/core/threadpool.h"

/* Sum of squares in double: blocks of 4096 summed in 8 fp32 lanes, the lanes added in order. */
double ax_host_sumsq(const float *x, size_t n);
/* The same sum, bit for bit, with the blocks spread over pool's threads (NULL: this thread). */
double ax_host_sumsq_pool(AxPool *pool, const float *x, size_t n);

#endif
