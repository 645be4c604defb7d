/* casync.h — compression-aware gradient all-reduce (HiPress §3, CaSync): the data-parallel sum
 * of an fp32 range whose messages carry encoded gradients (mpi/compress/codec.h) instead of
 * raw floats, as one non-blocking operation driven like every other collective (ax_coll_test,
 * ax_coll_wait, ax_coll_free of collectives.h), so the optimizer interleaver runs it chunk by
 * chunk exactly as it runs the plain all-reduce.
 *
 * Algorithms, for an encode/decode codec (ax_codec_rounds == 0) on p ranks, the range cut into
 * p near-equal segments (ax_block_offset/ax_block_count):
 *  - AX_CASYNC_RING: aggregation, p-1 steps around the ring: receive the encoded partial sum of
 *    a segment from the left neighbour, decode it, merge (add) this rank's own values, encode,
 *    send to the right; the last in the chain holds the segment's sum. As in the plain ring
 *    (ring.c), segment s's chain starts at rank s and ends at rank s-1, its owner here, so
 *    identity gives the plain ring's sum bit for bit. Dissemination, p-1 steps: the owner
 *    encodes its aggregate once and the bytes are relayed unchanged around the ring. Every
 *    rank, the owner included, keeps decode(encode(aggregate)), so all replicas are bitwise
 *    identical.
 *  - AX_CASYNC_PS: a co-located parameter server, rank s owning segment s: each rank encodes
 *    its own values of every other segment and pushes them to the segment's owner; the owner
 *    decodes and adds them to its own in ring order (s+1, s+2, ..., s-1: identity gives the
 *    plain ring's sum bit for bit), encodes the aggregate once and every rank pulls it; every
 *    rank keeps decode(encode(aggregate)).
 *  - AX_CASYNC_AG: all-gather (Espresso's indivisible scheme, wang-thesis Fig. 4.3): each rank
 *    encodes its own values of every segment and sends those bytes to every peer; every rank
 *    sums all p encoded contributions itself, segment s in ring order s, s+1, ..., s-1 (the
 *    plain ring's order: identity gives its sum bit for bit), its own decoded from its own
 *    encoding too. No re-encoding: one codec error per contribution, but every rank decodes
 *    p copies and the wire carries (p-1) x the encoded range per rank.
 * Espresso's all-to-all + all-gather (divisible, Fig. 4.4) is the PS's data movement with
 * whole segments: the trainer runs it as AX_CASYNC_PS with one piece per segment
 * (offload/grad_compress.h).
 * Each way a rank encodes each segment once per operation (its own contribution, a partial
 * sum, or the aggregate it owns), so one codec state per segment (per piece of it, below)
 * carries error feedback and momentum from step to step (AxCasyncState).
 *
 * Pipelining: a segment is encoded in pieces of at most cc->chunk_bytes of raw fp32 each, or in
 * its share of the state's K partitions (the state's layout, fixed by ax_casync_state_new or
 * ax_casync_state_new_parts), one message per piece, so that decoding, merging and encoding
 * piece k overlaps the transfer of piece k+1. A message is the piece's
 * encoded bytes and nothing else; the receiver posts ax_codec_max_bytes of the piece and takes
 * the size from the message (MPI_Get_count). At most cc->window messages are in flight per
 * peer and direction.
 *
 * A linear codec (ax_codec_rounds > 0: PowerSGD, rand-k) is summed by its own plain ring
 * all-reduces of the factors (fp32, on this operation's tag), round by round, and rebuilt on
 * every rank; the algorithm and the pieces are not used.
 *
 * One rank (comm of size 1): the sum is the input, and buf is left unchanged (no codec is
 * applied, the state is not touched). count 0 sends nothing.
 *
 * Messages go through the link layer (link_emulator.h: delayed between virtual nodes with an
 * emulated link, counted as cc->traffic_class); the encoded bytes sent and received are ADDED
 * to *bytes when given, as messages complete.
 *
 * Stochastic codecs draw from (ctx->seed, ctx->step, a range id this operation derives from
 * ctx->range, the segment, the piece and the encoding rank: the choices of different ranks and
 * pieces are independent, and a decoder uses the encoder's); a linear codec gets ctx as given
 * (rand-k's shared indices depend only on (seed, step, range)). ctx NULL: all zeros.
 *
 * Memory: an operation holds the encoded pieces in flight and those received but not yet
 * merged (PS: an owner keeps contributions until their turn in ring order), each of
 * ax_codec_max_bytes of its piece, and (PS) the owner's encoded aggregate.
 *
 * Every function returns AX_OK or AX_ERR with the error recorded (src/core/error.h). */
#ifndef AX_CASYNC_H
#define AX_CASYNC_H

#include <mpi.h>
#include <stddef.h>

#include "mpi/coll/collectives.h"
#include "mpi/compress/codec.h"

typedef enum { AX_CASYNC_RING = 0, AX_CASYNC_PS, AX_CASYNC_AG } AxCasyncAlgo;

/* "ring" / "ps" / "ag". */
const char *ax_casync_algo_name(AxCasyncAlgo a);
/* "ring|ps|ag"; AX_ERR with a message otherwise. */
int ax_casync_algo_parse(const char *name, AxCasyncAlgo *out);

/* The codec state of one range on this rank across steps: one AxCodecState per piece of each
 * segment for an encode/decode codec, one for the whole range for a linear codec, none on one
 * rank. The codec must outlive it. The state fixes how operations cut the range:
 *  - ax_casync_state_new: p segments, each cut into pieces of cc->chunk_bytes (NULL: the
 *    default); an operation must be started with the same codec, count, comm size and
 *    cc->chunk_bytes;
 *  - ax_casync_state_new_parts: exactly K partitions (HiPress's SeCoPa, casync_cost.h), near-
 *    equal: K <= p fills segments 0..K-1 with one partition each (segment s's owner and chain
 *    as above; the other ranks own nothing, and send and receive only for those K), K > p cuts
 *    each of the p segments into its near-equal share of the K (ax_block_count(K, p, s)). Fewer
 *    only where the range has fewer values than K, more only where a partition would not fit
 *    one message (2^28 floats). cc->chunk_bytes is then not used. */
typedef struct AxCasyncState AxCasyncState;
int ax_casync_state_new(const AxCodec *c, size_t count, int comm_size, const AxCommConfig *cc,
                        AxCasyncState **out);
int ax_casync_state_new_parts(const AxCodec *c, size_t count, int comm_size, int parts,
                              AxCasyncState **out);
void ax_casync_state_free(AxCasyncState *s);
/* The partitions an operation encodes of one rank's contribution (the CaSync tasks of each
 * step): the pieces of every segment of an encode/decode codec, 1 for a linear codec, 0 on
 * one rank or for no values. */
size_t ax_casync_state_partitions(const AxCasyncState *s);
/* Each piece's codec momentum becomes scale times its values of m[count] (the range's own:
 * ax_codec_state_set_momentum); nothing for a codec without one or on one rank. */
void ax_casync_state_set_momentum(AxCasyncState *s, const float *m, float scale);
/* Every piece's codec state times factor (ax_codec_state_rescale); nothing for NULL. */
void ax_casync_state_rescale(AxCasyncState *s, float factor);
/* Checkpointing (same codec, count, comm_size and chunking): size, copy out, copy in. */
size_t ax_casync_state_bytes(const AxCasyncState *s);
int ax_casync_state_save(const AxCasyncState *s, void *buf);
int ax_casync_state_load(AxCasyncState *s, const void *buf, size_t bytes);

/* In-place sum over comm of buf[count] (fp32), compressed with codec c. st is this range's
 * state (ax_casync_state_new with this codec, count, comm's size and cc's chunking); no other
 * operation may use it until this one has completed (that fails). When it completes all ranks
 * hold bitwise identical results. The codec, st and buf must outlive the operation. Every rank
 * starts its operations on comm in the same order (collectives.h). */
int ax_casync_allreduce_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc,
                              const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                              const AxCodecCtx *ctx, float *buf, size_t count,
                              AxCommBytes *bytes);
/* start + wait + free */
int ax_casync_allreduce(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                        AxCasyncAlgo algo, AxCasyncState *st, const AxCodecCtx *ctx, float *buf,
                        size_t count, AxCommBytes *bytes);

/* The checks a start makes (arguments; the state's layout for this operation, and that no
 * unfinished operation uses it), without starting anything: for a caller that starts the
 * operation later (the two-level all-reduce's middle step, two_level.h). */
int ax_casync_allreduce_check(MPI_Comm comm, const AxCommConfig *cc, const AxCodec *c,
                              AxCasyncAlgo algo, const AxCasyncState *st, const float *buf,
                              size_t count);
/* ax_casync_allreduce_start on a tag the caller took from comm's sequence earlier
 * (ax_coll_next_tag, coll_internal.h), for an operation started later than its place in the
 * sequence. */
int ax_casync_allreduce_start_on_tag(AxColl **op, MPI_Comm comm, int tag, const AxCommConfig *cc,
                                     const AxCodec *c, AxCasyncAlgo algo, AxCasyncState *st,
                                     const AxCodecCtx *ctx, float *buf, size_t count,
                                     AxCommBytes *bytes);

#endif
