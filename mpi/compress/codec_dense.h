/* codec_dense.h — the shared encode/decode of the fixed-size quantizers (codec_dense.c),
 * internal to mpi/compress/. Format: float header (the codec's scale), n codes of `width`
 * (1, 2, 4, 8) bits, zero padded to a whole word: ax_dense_bytes(n, width) bytes. */
#ifndef AX_CODEC_DENSE_H
#define AX_CODEC_DENSE_H

#include "codec_impl.h"

/* Codes of x[0..len), which are the values first .. first + len - 1 of the range. */
typedef void (*AxCodeFn)(const float *x, size_t len, uint64_t first, const void *arg,
                         uint8_t *codes);

size_t ax_dense_bytes(size_t n, int width);
void ax_dense_encode(const float *x, size_t n, int width, float header, AxCodeFn codes_of,
                     const void *arg, void *out, size_t *bytes);
/* Checks the size and reads the header. */
int ax_dense_decode(const char *codec, const void *in, size_t bytes, size_t n, int width,
                    float *header);
/* out[i] = table[code i] (add: +=). */
void ax_dense_lookup(const void *in, size_t n, int width, const float *table, float *out,
                     int add);

#endif
