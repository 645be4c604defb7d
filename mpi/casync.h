/* casync.h — compression-aware gradient all-reduce (HiPress §3, CaSync): the data-parallel sum
 * of an fp32 range whose messages carry encoded gradients (mpi/compress/codec.h) instead of
 * raw floats, as one non-blocking operation driven like every other collective (ax_coll_test,
 * ax_coll_wait, ax_coll_free of collectives.h), so the optimizer interleaver runs it chunk by
 * chunk exactly as it runs the plain all-reduce.
 *
 * Algorithms, for an encode/decode codec (ax_codec_rounds == 0) on p ranks, the range cut into
 * p near-equal segments (ax_block_offset/ax_block_count; segment s is owned by rank s):
 *  - AX_CASYNC_RING: aggregation, p-1 steps around the ring: receive the encoded partial sum of
 *    a segment from the left neighbour, decode it, merge (add) this rank's own values, encode,
 *    send to the right; the owner, last in the chain, holds the segment's sum. Dissemination,
 *    p-1 steps: the owner encodes its aggregate once and the bytes are relayed unchanged around
 *    the ring. Every rank, the owner included, keeps decode(encode(aggregate)), so all replicas
 *    are bitwise identical.
 *  - AX_CASYNC_PS: a co-located parameter server: each rank encodes its own values of every
 *    other segment and pushes them to the segment's owner; the owner decodes and adds them (in
 *    ring order, so identity gives the plain ring's sum bit for bit), encodes the aggregate
 *    once and every rank pulls it; every rank keeps decode(encode(aggregate)).
 * Either way a rank encodes each segment once per operation (its own contribution, or the
 * aggregate it owns), so one codec state per segment carries error feedback and momentum from
 * step to step (AxCasyncState).
 *
 * A linear codec (ax_codec_rounds > 0: PowerSGD, rand-k) is summed by its own plain ring
 * all-reduces of the factors, round by round, and rebuilt on every rank; the algorithm is not
 * used.
 *
 * Messages go through the link layer (link_emulator.h: delayed between virtual nodes with an
 * emulated link, counted as cc->traffic_class) and are cut into cc's chunks where large; the
 * bytes sent and received are ADDED to *bytes when given.
 *
 * Stochastic codecs draw from (ctx->seed, ctx->step, a range id this operation derives from
 * ctx->range, the segment and, where the choice must differ between ranks, the encoding rank);
 * rand-k's shared indices depend only on (seed, step, range).
 *
 * Every function returns AX_OK or AX_ERR with the error recorded (src/core/error.h). */
#ifndef AX_CASYNC_H
#define AX_CASYNC_H

#include <mpi.h>
#include <stddef.h>

#include "collectives.h"
#include "compress/codec.h"

typedef enum { AX_CASYNC_RING = 0, AX_CASYNC_PS } AxCasyncAlgo;

/* "ring" / "ps". */
const char *ax_casync_algo_name(AxCasyncAlgo a);
/* "ring|ps"; AX_ERR with a message otherwise. */
int ax_casync_algo_parse(const char *name, AxCasyncAlgo *out);

/* The codec state of one range on this rank across steps: one AxCodecState per segment (p of
 * them) for an encode/decode codec, one for the whole range for a linear codec. */
typedef struct AxCasyncState AxCasyncState;
int ax_casync_state_new(const AxCodec *c, size_t count, int comm_size, AxCasyncState **out);
void ax_casync_state_free(AxCasyncState *s);
/* Checkpointing (same codec, count and comm_size): size, copy out, copy in. */
size_t ax_casync_state_bytes(const AxCasyncState *s);
int ax_casync_state_save(const AxCasyncState *s, void *buf);
int ax_casync_state_load(AxCasyncState *s, const void *buf, size_t bytes);

/* In-place sum over comm of buf[count] (fp32), compressed with codec c. st is this range's
 * state (ax_casync_state_new with this count and comm's size; it must stay alive and is used
 * by this operation only until it completes). On return all ranks will hold bitwise identical
 * results. The codec, st and buf must outlive the operation. */
int ax_casync_allreduce_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc,
                              const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                              const AxCodecCtx *ctx, float *buf, size_t count,
                              AxCommBytes *bytes);
/* start + wait + free */
int ax_casync_allreduce(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                        AxCasyncAlgo algo, AxCasyncState *st, const AxCodecCtx *ctx, float *buf,
                        size_t count, AxCommBytes *bytes);

#endif
