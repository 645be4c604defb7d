/* codec.h — gradient compression codecs (HiPress's CompLL set and the ones the later papers
 * use), behind one interface, in plain C without MPI so every codec is unit-testable. The
 * synchronization that uses them (CaSync ring and PS, mpi/casync/) and the trainer see only
 * this header.
 *
 * A codec is configured from a spec, "NAME[:key=value,...]" (e.g. "onebit:ef=1",
 * "dgc:ratio=0.001", "powersgd:rank=4", "terngrad:bits=2"). Two kinds:
 *  - encode/decode codecs (ax_codec_rounds == 0): a range of n fp32 values becomes at most
 *    ax_codec_max_bytes(n) bytes and back; what comes back may differ (lossy). Aggregation
 *    decodes, merges (adds) and re-encodes; CaSync does that.
 *  - linear codecs (ax_codec_rounds > 0: PowerSGD, rand-k): the synchronization all-reduces
 *    (sums) small float factors, round by round, and the codec rebuilds the range from the
 *    reduced factors. Summing the factors of every rank gives the factors of the sum.
 * Per-range state survives across steps (the error-feedback residual, DGC's momentum and
 * accumulation, PowerSGD's Q) and is saved in checkpoints. Stochastic codecs are deterministic
 * given (seed, step, range): every rank that encodes the same values with the same context gets
 * the same bytes, and rand-k's indices are the same on every rank. Decoding is a function of
 * the bytes alone: every rank decoding the same bytes gets the same floats, bit for bit.
 *
 * The codecs, their keys and defaults, encoded formats and bounds: docs/codecs.md (and each
 * mpi/compress/codec_<name>.c's header comment). Non-finite input: identity, onebit,
 * efsignsgd, terngrad and qsgd decode a range holding a NaN or an infinity as non-finite (an
 * overflow check after the all-reduce sees it); tbq and the sparsifiers may drop it, so a caller
 * that skips overflowing steps checks before encoding (and keeps such a step out of the
 * state). */
#ifndef AX_CODEC_H
#define AX_CODEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct AxCodec AxCodec;           /* a configured codec (immutable, shareable) */
typedef struct AxCodecState AxCodecState; /* one range's state across steps */

/* What makes stochastic choices reproducible: the run's seed (the same on every rank), the
 * optimizer step, and the range (e.g. its offset in the stage's flat parameters); and, where
 * the optimizer is Adam, its second moment over the same values (adam_v[i] for value i; NULL:
 * none), which a sparsifier that selects the largest updates uses (DGC: codec_dgc.c); and the
 * factor the values carry (dynamic loss scaling's scale; 0 or 1: none), by which a codec
 * with an absolute threshold scales it (tbq's tau), so that it decides on the values as they
 * are unscaled. */
typedef struct {
  uint64_t seed, step, range;
  const float *adam_v;
  float grad_scale;
} AxCodecCtx;

/* Parses a spec; "none" is an error here (the caller handles "no compression"). Unknown
 * codecs, unknown keys and bad values (rank 0, ratio above 1, bits 3) fail with one message. */
int ax_codec_parse(const char *spec, AxCodec **out);
void ax_codec_free(AxCodec *c);
/* A copy of c (free it with ax_codec_free) whose rank, for a codec that has one (PowerSGD,
 * whose work grows with it), is at most max_rank (rank=auto becomes a rank typical of it,
 * AX_CODEC_AUTO_RANK_PROFILE, or max_rank when that is less); *rank gets the copy's rank, 0
 * for a codec without one (copied as it is). For work of bounded cost, such as a profile,
 * whose figures the caller scales to the rank a range really uses (ax_codec_rank_for). */
int ax_codec_cap_rank(const AxCodec *c, int max_rank, AxCodec **out, int *rank);
/* PowerSGD's rank=auto for a rows x cols matrix: the rank that sends about a tenth of it,
 * floor(rows·cols / (10·(rows + cols))), at least 1 and at most AX_CODEC_AUTO_RANK_MAX
 * (Optimus-CC §9.1: rank 128 for the data-parallel gradients, "around 10x compression" on
 * its GPT layers, after PowerSGD's transformer setting). */
enum { AX_CODEC_AUTO_RANK_MAX = 128, AX_CODEC_AUTO_RANK_SHRINK = 10,
       AX_CODEC_AUTO_RANK_PROFILE = 16 };
/* The rank a low-rank codec (PowerSGD) uses for n values: min(rank, rows, cols), rank=auto
 * resolved from the matrix's shape; 0 for a codec without a rank. */
int ax_codec_rank_for(const AxCodec *c, size_t n);
/* The canonical spec, every parameter written out (for logs and checkpoints). */
const char *ax_codec_spec(const AxCodec *c);
/* "identity", "onebit", ... */
const char *ax_codec_name(const AxCodec *c);
/* The names of every codec, for help texts: "identity, onebit, tbq, ..." */
const char *ax_codec_names(void);
/* Whether the spec text ("NAME[:key=value,...]", not parsed) gives `key`. */
int ax_codec_spec_has(const char *spec, const char *key);
/* spec with every "key=value" of the comma-separated `defaults` whose key spec does not give
 * appended, into out[cap]; `added` (added_cap bytes; may be NULL) gets what was appended,
 * comma separated ("" none). Fails with one line when the result does not fit. */
int ax_codec_spec_defaults(const char *spec, const char *defaults, char *out, size_t cap,
                           char *added, size_t added_cap);

/* 0: an encode/decode codec; R > 0: a linear codec synchronized in R all-reduce rounds. */
int ax_codec_rounds(const AxCodec *c);
/* Encode/decode codecs: the exact worst-case size of n values encoded (bytes). */
size_t ax_codec_max_bytes(const AxCodec *c, size_t n);
/* The compression ratio expected for n values (encoded bytes / 4n; 1 for identity), for the
 * cost model; exact for fixed-size codecs, the worst case for the others. */
double ax_codec_ratio(const AxCodec *c, size_t n);

/* The momentum the codec applies to what it sends, in Adam's form u = m u + (1 - m) g (DGC's
 * momentum correction; onebit:momentum=m, 1-bit Adam's compressed momentum), 0 for the codecs
 * that apply none. Such a codec carries the optimizer's first moment itself. */
double ax_codec_momentum(const AxCodec *c);

/* State of one range of n values (NULL when the codec keeps none: no error feedback, no
 * accumulation, no scratch; e.g. identity, tbq). Linear codecs always have one and need it. */
int ax_codec_state_new(const AxCodec *c, size_t n, AxCodecState **out);
void ax_codec_state_free(AxCodecState *s);
/* A codec that carries the optimizer's first moment (ax_codec_momentum above 0): its momentum
 * over the state's n values becomes scale * m[0..n) (the optimizer's moment it takes over when
 * compression starts, as 1-bit Adam's compression stage starts from its warm-up's momentum and
 * DGC's momentum correction runs through its warm-up). Nothing for other codecs or no state. */
void ax_codec_state_set_momentum(const AxCodec *c, AxCodecState *s, const float *m, float scale);
/* Every value the state keeps across steps times factor: the error-feedback residual and the
 * codec's own (DGC's momentum and accumulation, onebit's momentum: sums of gradients; PowerSGD's
 * Q, whose scale its orthonormalization removes). Dynamic loss scaling calls it when the scale
 * changes, so the state stays at the scale of the gradients it meets next (a power of 2:
 * exact). Nothing for no state. */
void ax_codec_state_rescale(AxCodecState *s, float factor);
/* Checkpointing: the state's size in bytes, and a copy out / in (same codec, same n). */
size_t ax_codec_state_bytes(const AxCodecState *s);
int ax_codec_state_save(const AxCodecState *s, void *buf);
int ax_codec_state_load(AxCodecState *s, const void *buf, size_t bytes);

/* ---- encode/decode codecs */

/* Encoded buffers (out here, in for decode) must be 4-byte aligned; every encoded size is a
 * multiple of 4, so ranges encoded end to end in one buffer stay aligned. A range holds at most
 * 2^32 - 1 values. */

/* This rank's own values of a range for the step, in place, before any encode of them or of
 * a sum that contains them, with the range's state: the codec's momentum (DGC's, onebit's with
 * momentum > 0: u = m u + (1 - m) in, in = u), so that a collective that re-encodes partial
 * sums (CaSync's ring and PS) applies each rank's momentum once, to that rank's own gradient.
 * Nothing for the other codecs, or with st NULL. */
int ax_codec_prepare(const AxCodec *c, AxCodecState *st, float *values, size_t n);
/* Whether the codec has such a step (its callers then keep a copy of values they must keep). */
int ax_codec_has_prepare(const AxCodec *c);
/* Encodes in[n] into out (ax_codec_max_bytes(n) bytes available); *bytes gets the size
 * written. With state, in is what this rank sends of the range: its own prepared values, or a
 * sum that contains them; error feedback adds the residual first and keeps what the encoding
 * lost, DGC accumulates it and clears what it sends. With st NULL nothing is remembered. */
int ax_codec_encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                    size_t n, void *out, size_t *bytes);
/* A rank's own values in[n], prepared and encoded, in left as it is: the prepared copy goes
 * into work[n] (NULL: allocated when the codec prepares). What a sender of its own values
 * alone calls (a point-to-point link, the codec benchmarks and cost profile). */
int ax_codec_encode_own(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                        const float *in, size_t n, float *work, void *out, size_t *bytes);
/* Decodes bytes into out[n]: overwrites, or adds to what is there (add = 1). */
int ax_codec_decode(const AxCodec *c, const AxCodecCtx *ctx, const void *in, size_t bytes,
                    float *out, size_t n, int add);

/* ---- linear codecs (rounds > 0) */

/* Floats of round r's factor for a range of n values. */
size_t ax_codec_factor_len(const AxCodec *c, size_t n, int round);
/* This rank's factor of round r from in[n] (round 0 first; each later round after the
 * previous one's ax_codec_factor_reduced). */
int ax_codec_factor(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                    size_t n, int round, float *factor);
/* Round r's factor summed over the ranks (in place: the codec may transform it, e.g.
 * orthogonalize PowerSGD's P, before the next round uses it). */
int ax_codec_factor_reduced(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                            size_t n, int round, float *reduced);
/* After the last round: out[n] = the rebuilt sum over the ranks. */
int ax_codec_rebuild(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                     float *out);

/* ---- point to point (one sender, one receiver: a pipeline link, Optimus-CC)
 * The sender's state is the link's (error feedback: the residual goes into the next message;
 * PowerSGD: Q is warm from the previous message). A linear codec runs its rounds with the
 * sender as the only rank, and the message is the reduced factor of every round, end to end
 * (PowerSGD: P^ then Q, (rows + cols) x r floats); an encode/decode codec's message is its
 * encoding. The receiver needs no state. */

/* The largest message for n values (bytes). */
size_t ax_codec_p2p_max_bytes(const AxCodec *c, size_t n);
/* Encodes in[n] into out (ax_codec_p2p_max_bytes available, 4-byte aligned); *bytes gets the
 * size. Linear codecs need st. */
int ax_codec_p2p_encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                        const float *in, size_t n, void *out, size_t *bytes);
/* out[n] from a message of `bytes` (overwrites). A linear codec without a stateless rebuild
 * fails here, and so does a message of the wrong size. */
int ax_codec_p2p_decode(const AxCodec *c, const AxCodecCtx *ctx, const void *in, size_t bytes,
                        float *out, size_t n);

#endif
