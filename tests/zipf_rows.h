/* zipf_rows.h — the Zen tests' batches (test_zen_hash.c, mpitest_sparse_sync.c) of
 * src/core/zipf.h's tokens. */
#ifndef AX_TESTS_ZIPF_ROWS_H
#define AX_TESTS_ZIPF_ROWS_H

#include "mpi/compress/zen_hash.h"
#include "src/core/zipf.h"

/* The rows a batch of `tokens` draws touches, ascending and unique, into out (room for
 * `tokens`); returns their number. */
static inline size_t tz_zipf_batch(const AxZipf *z, AxRng *r, size_t tokens, uint32_t *out) {
  for (size_t i = 0; i < tokens; i++) out[i] = ax_zipf_draw(z, r);
  return ax_zen_sort_unique(out, tokens);
}

#endif
