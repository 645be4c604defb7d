/* bench_compress.h — the parts of `axonn bench compress` (bench_compress.c: the command and
 * the all-reduce rows; bench_codecs.c: the one-core codec rows). */
#ifndef AX_BENCH_COMPRESS_H
#define AX_BENCH_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/compress/codec.h"

typedef struct {
  double raw_bytes, wire_bytes, ratio;
  double memcpy_gbs, encode_gbs, decode_gbs; /* decode 0 for a linear codec */
  double encode_us;
  int linear;
} AxCodecRow;

/* Encode/decode of n random gradient values with codec c on this core (median of iters). */
int ax_bench_codec_row(const AxCodec *c, size_t n, int iters, AxCodecRow *row);
/* n values like gradients (normal, 1e-3), the same for the same seed. */
void ax_bench_gradient(float *x, size_t n, uint64_t seed);

#endif
