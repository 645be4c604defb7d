/* spare_buffers.h — large scratch buffers kept for reuse instead of freed. A collective's
 * receive slots (mpi/coll) are a few MB that every operation allocated and freed; glibc serves
 * such sizes with mmap until a freed one raises its threshold, so the first steps' all-reduces
 * mapped, faulted in and unmapped fresh memory each time (measured on 1x2: step 2's 13 MB
 * all-reduce 37-43 ms against 4-5 ms from step 3 on; docs/benchmarks.md). A buffer given back
 * here is handed out again to the next request it is large enough for. Thread-safe. */
#ifndef AX_SPARE_BUFFERS_H
#define AX_SPARE_BUFFERS_H

#include <stddef.h>

/* At least `bytes` bytes (contents undefined): a kept buffer of that size or more (the
 * smallest such), else a new one; *capacity gets the buffer's size, which ax_spare_give needs.
 * NULL (with the error recorded) when no memory is left. */
void *ax_spare_take(size_t bytes, size_t *capacity);
/* Keeps `buf` (of `capacity` bytes, from ax_spare_take) for a later take, or frees it when the
 * keep is full of larger buffers. NULL is ignored. */
void ax_spare_give(void *buf, size_t capacity);
/* Frees every kept buffer; returns how many there were. */
int ax_spare_release_all(void);

#endif
