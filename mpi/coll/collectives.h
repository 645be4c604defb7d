/* collectives.h — non-blocking collectives of our own over MPI point-to-point, for the
 * data-parallel gradient all-reduce and the tensor-parallel reduce-scatter / all-gather.
 *
 * An operation is started (…_start), then driven by ax_coll_test (never blocks) or
 * ax_coll_wait, then freed. Between progress calls the caller may do any other work (the
 * optimizer interleaver updates chunk c while chunk c+1's all-reduce is in flight). Several
 * operations may be in flight on one communicator at once, provided every rank starts them in
 * the same order; each takes its own tag from a per-communicator sequence. Give these
 * collectives a communicator of their own (MPI_Comm_dup): they use tags 1024..32767 on it.
 *
 * Algorithms: AX_ALLREDUCE_RING (reduce-scatter then all-gather around the ring, cut into
 * chunks so that reducing chunk i overlaps receiving chunk i+1, and each chunk is forwarded to
 * the next step as soon as it is ready), AX_ALLREDUCE_RHD
 * (recursive halving then doubling; on a group that is not a power of two, the first
 * 2(p - 2^k) ranks fold pairwise into 2^k first and get the result back at the end),
 * AX_ALLREDUCE_MPI (MPI_Iallreduce) and AX_ALLREDUCE_AUTO (ax_allreduce_choose). Reduce-scatter
 * and all-gather use the ring. Any count works (0, and counts p does not divide), and so does
 * a group of one rank (nothing to send).
 *
 * Types: AX_COMM_F32 (float), AX_COMM_BF16 and AX_COMM_F16 (uint16_t storage of bfloat16 and
 * IEEE half; every partial sum is formed in fp32 and rounded to nearest even, so 16-bit results
 * depend on the algorithm's summation order, fp32 results only through fp32 rounding).
 *
 * Byte counters: every operation ADDS the payload bytes this rank sent and received to
 * *bytes (when given) as its messages complete. The ring all-reduce of n elements of size e
 * on p ranks moves exactly 2(p-1)/p·n·e each way when p divides n; otherwise, with segment b
 * the b-th of p near-equal blocks (the first n mod p one element longer), rank r sends
 * (2n - |seg r+1| - |seg r+2|)·e and receives (2n - |seg r| - |seg r+1|)·e. Reduce-scatter and
 * all-gather move (p-1)·count·e each way. AX_ALLREDUCE_MPI cannot see inside MPI_Iallreduce;
 * it counts what the ring would have moved.
 *
 * Configuration: every start takes the caller's AxCommConfig (comm_config.h; NULL: the
 * defaults): its chunk size and window cut the ring and rhd messages, its polite flag decides
 * how ax_coll_wait waits, its link emulator (cc->links, link_emulator.h) carries every message
 * (held back between virtual nodes with an emulated link; ax_coll_wait then sleeps between
 * polls) and its traffic counters (cc->traffic) count every byte sent as cc->traffic_class.
 * AX_ALLREDUCE_MPI cannot be emulated (MPI moves its bytes): with an emulated link it fails,
 * and it counts what the ring would have sent. The operation keeps a copy of the
 * configuration, so the caller's may change afterwards (the emulator and counters it points to
 * must outlive the operation).
 *
 * Threads: drive an operation from one thread at a time (MPI_THREAD_FUNNELED is enough when
 * that is the main thread). Payload buffers must stay untouched until the operation is done.
 *
 * Every function returns AX_OK or AX_ERR with the error recorded (src/core/error.h). */
#ifndef AX_COLLECTIVES_H
#define AX_COLLECTIVES_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "src/core/bf16.h"
#include "src/core/fp16.h"
#include "mpi/comm_config.h"

typedef enum {
  AX_ALLREDUCE_AUTO = 0,
  AX_ALLREDUCE_MPI,
  AX_ALLREDUCE_RING,
  AX_ALLREDUCE_RHD
} AxAllreduceAlgo;
typedef enum { AX_COMM_F32 = 0, AX_COMM_BF16, AX_COMM_F16 } AxCommType;
typedef struct {
  unsigned long long sent, received; /* payload bytes; operations ADD to them */
} AxCommBytes;
typedef struct AxColl AxColl; /* one started non-blocking collective */

/* Bytes rank `rank` of `size` sends and receives in a ring all-reduce of count elements of esz
 * bytes (the formula above; the communication model of src/plan/comm_model.h uses it too). */
void ax_ring_allreduce_bytes(size_t count, size_t esz, int rank, int size, AxCommBytes *out);

/* In-place sum of count elements of buf over comm. */
int ax_allreduce_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc, void *buf,
                       size_t count, AxCommType type, AxAllreduceAlgo algo, AxCommBytes *bytes);
/* MPI_Reduce_scatter_block semantics: send holds p*recv_count elements, rank r gets block r
 * summed over the ranks. send and recv must not overlap. */
int ax_reduce_scatter_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc,
                            const void *send, void *recv, size_t recv_count, AxCommType type,
                            AxCommBytes *bytes);
/* MPI_Allgather semantics: every rank contributes send_count elements, recv gets p*send_count
 * in rank order. send may be recv's own block (recv + rank*send_count, "in place"); any other
 * overlap is not allowed. */
int ax_allgather_start(AxColl **op, MPI_Comm comm, const AxCommConfig *cc, const void *send,
                       void *recv, size_t send_count, AxCommType type, AxCommBytes *bytes);

int ax_coll_test(AxColl *op, int *done); /* progresses, never blocks; *done = 1 when finished */
int ax_coll_wait(AxColl *op);            /* progresses until finished (polite as started) */
/* One pause of a caller's own polling loop around ax_coll_test: with an emulated link a sleep
 * until the next held send is due (or a poll interval), else sched_yield (yield) or
 * ax_mpi_relax. */
void ax_coll_pause(const AxColl *op, int yield);
/* After completion (or to clean up after an error: unfinished receives are cancelled). NULL
 * is a no-op. */
void ax_coll_free(AxColl *op);
/* start + wait + free */
int ax_allreduce(MPI_Comm comm, const AxCommConfig *cc, void *buf, size_t count, AxCommType type,
                 AxAllreduceAlgo algo, AxCommBytes *bytes);

/* The library's blocking MPI_Allreduce, in place (fp32: MPI_SUM; bf16: the same sum as
 * AX_ALLREDUCE_MPI). The baseline `axonn bench allreduce` compares against; counts nothing. */
int ax_mpi_allreduce_blocking(MPI_Comm comm, void *buf, size_t count, AxCommType type);

const char *ax_allreduce_algo_name(AxAllreduceAlgo a);
/* "auto|mpi|ring|rhd"; AX_ERR with a message otherwise. */
int ax_allreduce_algo_parse(const char *name, AxAllreduceAlgo *out);
/* What AX_ALLREDUCE_AUTO runs for a message of `bytes` on `group_size` ranks (thresholds
 * measured with `axonn bench allreduce`; see collectives.c and docs/benchmarks.md). */
AxAllreduceAlgo ax_allreduce_choose(size_t bytes, int group_size);

#endif
