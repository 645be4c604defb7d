/* stream_copy.h — a memcpy for large destinations that are not read back soon (the memory
 * checkpoints' slot files): non-temporal stores, so the copy neither reads the destination's
 * lines first nor pushes the training's data out of the caches. */
#ifndef AX_STREAM_COPY_H
#define AX_STREAM_COPY_H

#include <stddef.h>

/* dst[0..n) = src[0..n), the stores ordered (fenced) before it returns. Plain memcpy where
 * the build has no AVX2. The ranges must not overlap. */
void ax_stream_copy(void *dst, const void *src, size_t n);

#endif
