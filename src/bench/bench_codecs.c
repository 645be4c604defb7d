/* bench_codecs.c — the codec rows of `axonn bench compress`: per codec, on one core, encode and
 * decode throughput against memcpy of the same buffer, and the compression ratio (encoded
 * bytes / raw bytes). A linear codec (PowerSGD, rand-k) has no encode/decode: its "encode" is
 * the factor computation of every round plus the rebuild, with the reduction left out (one
 * rank), and its ratio is the factor bytes over the raw bytes. Medians of --iters runs. */
#include <stdlib.h>
#include <string.h>

#include "bench_compress.h"
#include "mpi/casync/casync_cost.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/timer.h"

void ax_bench_gradient(float *x, size_t n, uint64_t seed) {
  AxRng rng;
  ax_rng_seed(&rng, seed);
  for (size_t i = 0; i < n; i++) x[i] = (float)(ax_rng_normal(&rng) * 1e-3);
}

typedef struct {
  const AxCodec *c;
  AxCodecState *st;
  float *in, *out;
  void *wire;
  size_t n, wire_bytes;
} CodecRun;

static int time_one(CodecRun *r, int what, int step, double *sec) {
  AxCodecCtx ctx = {.seed = 7, .step = (uint64_t)step, .range = 0};
  double t0 = ax_now();
  if (what == 0)
    memcpy(r->out, r->in, r->n * sizeof(float));
  else if (ax_codec_rounds(r->c) > 0)
    AX_TRY(ax_casync_linear_pass(r->c, r->st, &ctx, r->in, r->out, r->n, r->wire,
                                 &r->wire_bytes));
  else if (what == 1)
    AX_TRY(ax_codec_encode_own(r->c, r->st, &ctx, r->in, r->n, r->out, r->wire,
                               &r->wire_bytes)); /* DGC: its momentum pass included */
  else
    AX_TRY(ax_codec_decode(r->c, &ctx, r->wire, r->wire_bytes, r->out, r->n, 0));
  *sec = ax_now() - t0;
  return AX_OK;
}

/* Median seconds of memcpy (what 0), encode (1) and decode (2). */
static int time_codec(CodecRun *r, int iters, double med[3]) {
  double *t = ax_malloc((size_t)iters * sizeof *t);
  if (!t) return AX_ERR;
  int rc = AX_OK;
  for (int what = 0; what < 3 && rc == AX_OK; what++) {
    for (int i = 0; i < iters && rc == AX_OK; i++) rc = time_one(r, what, i + 1, &t[i]);
    med[what] = ax_median(t, iters);
  }
  free(t);
  return rc;
}

int ax_bench_codec_row(const AxCodec *c, size_t n, int iters, AxCodecRow *row) {
  int linear = ax_codec_rounds(c) > 0;
  CodecRun r = {.c = c, .n = n};
  size_t wire_cap = linear ? ax_casync_factor_cap(c, n) * sizeof(float) : ax_codec_max_bytes(c, n);
  r.in = ax_malloc(n * sizeof(float) + 1);
  r.out = ax_malloc(n * sizeof(float) + 1);
  r.wire = ax_malloc(wire_cap + 1);
  int rc = r.in && r.out && r.wire ? AX_OK : AX_ERR;
  if (rc == AX_OK) rc = ax_codec_state_new(c, n, &r.st);
  double med[3] = {0, 0, 0};
  if (rc == AX_OK) {
    ax_bench_gradient(r.in, n, 11);
    rc = time_codec(&r, iters, med);
  }
  if (rc == AX_OK) {
    double raw = (double)n * sizeof(float);
    *row = (AxCodecRow){.raw_bytes = raw, .wire_bytes = (double)r.wire_bytes,
                        .memcpy_gbs = raw / med[0] / 1e9, .encode_gbs = raw / med[1] / 1e9,
                        .decode_gbs = linear ? 0 : raw / med[2] / 1e9,
                        .encode_us = med[1] * 1e6, .linear = linear};
    row->ratio = row->wire_bytes / raw;
  }
  ax_codec_state_free(r.st);
  free(r.in);
  free(r.out);
  free(r.wire);
  return rc;
}
