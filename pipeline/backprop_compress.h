/* backprop_compress.h — Optimus-CC's compressed backpropagation (§5) on the links of the
 * message-driven pipeline. A backward message, one micro-batch's activation gradient from stage
 * s to stage s - 1, is an n x m matrix (n = micro-batch x T rows, m = C columns); compressed, it
 * travels as PowerSGD's P^ (n x r) and Q (m x r) after one warm-started power iteration
 * (mpi/compress/codec.h, "point to point"), and the receiver rebuilds P^ Q^T.
 *  - Which messages: all of them, or epilogue-only (§5.2): on the link into stage s, the last
 *    P - 1 - s micro-batches of the pass, the ones stage s runs in its cool-down (in 1F1B terms;
 *    the same rule under any pipeline limit). Decided by micro-batch id on both sides, never by
 *    arrival order, so a run is deterministic; the message's tag says its form too, and the
 *    receiver checks the two agree.
 *  - Lazy error propagation (§5.1): the sender's codec keeps e = M - P^ Q^T per link and adds it
 *    to the link's next compressed message; the residual carries across steps and into
 *    checkpoints (ax_backprop_state_*).
 * The sender's state is the link to the previous stage; receiving needs none. Everything runs on
 * the host (plain C codecs); a gradient in device memory is staged through host memory. */
#ifndef AX_BACKPROP_COMPRESS_H
#define AX_BACKPROP_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "mpi/compress/codec.h"
#include "src/backend/backend.h"

typedef struct {
  AxCodec *codec;        /* powersgd:rank=R,cols=C,ef=0|1 (owned) */
  int stage, P;
  int epilogue_only;
  int enabled;           /* 0: every message travels in full this step (--compress-warmup) */
  size_t n;              /* floats in a message (micro-batch x T x C) */
  AxCodecState *link;    /* the sender's state of the link to stage - 1; NULL on stage 0 */
  float *staged;         /* n floats: a device gradient on the host, before encoding */
  float *decoded;        /* n floats: the last message received, rebuilt */
  void *msg;             /* the largest message: encoded, or a device message on the host */
  uint64_t seed, step;   /* the codec context: the run's seed, the optimizer step */
  AxBackend *be;
} AxBackprop;

/* The codec of --compress-backprop SPEC ("powersgd" or "powersgd:rank=R"; rank 16 by default)
 * for messages of `cols` columns, with error feedback as --lazy-error says. Other codecs, and the
 * keys the pipeline sets itself (cols, ef), fail with one message. */
int ax_backprop_codec(const char *spec, size_t cols, int lazy_error, AxCodec **out);
/* Whether the gradient of micro-batch mb of an n_micro pass, sent from stage `from` to stage
 * from - 1 of P, travels compressed. */
int ax_backprop_compressed(int from, int P, int mb, int n_micro, int epilogue_only);
/* Whether micro-batch mb's gradient message from stage `from` travels compressed this step:
 * the rule above, on the steps b compresses (b NULL: none). Both ends ask it. */
int ax_backprop_message_compressed(const AxBackprop *b, int from, int mb, int n_micro);

/* Takes the codec (freed with b, also on failure). */
int ax_backprop_init(AxBackprop *b, AxCodec *codec, AxBackend *be, int stage, int P, size_t n,
                     int epilogue_only, uint64_t seed);
void ax_backprop_free(AxBackprop *b);
/* The largest message in bytes (what the p2p engine must carry). */
size_t ax_backprop_max_bytes(const AxBackprop *b);
/* Encodes the gradient src (n floats in device memory) for the link to stage - 1: *msg (host
 * memory, valid until the next call) and *bytes. */
int ax_backprop_encode(AxBackprop *b, const void *src, const void **msg, size_t *bytes);
/* Rebuilds a message received from stage + 1 (in `mem` memory) into *out (host, n floats, valid
 * until the next call). */
int ax_backprop_decode(AxBackprop *b, const void *msg, size_t bytes, AxMemKind mem,
                       const float **out);

/* The link state times factor: the lazy error holds gradients at the loss scale of the step
 * that left it, and follows the scale when it changes (ax_codec_state_rescale). */
void ax_backprop_rescale(AxBackprop *b, float factor);
/* The link state in checkpoints (0 bytes on stage 0). */
size_t ax_backprop_state_bytes(const AxBackprop *b);
int ax_backprop_state_save(const AxBackprop *b, void *buf);
int ax_backprop_state_load(AxBackprop *b, const void *buf, size_t bytes);

#endif
