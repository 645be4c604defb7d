/* casync_cost.h — selective compression and partitioning (HiPress §3.3): the cost model that
 * decides, per gradient chunk, whether CaSync should compress it and into how many partitions,
 * and the profiling of this machine's encode and decode costs that feeds it.
 *
 * Costs are linear, t(m) = latency + m / bandwidth: T_send of the link (the emulated link's
 * own figures, or a ping-pong measured at the first step), T_enc of m raw bytes and T_dec of m
 * encoded bytes (profiled with the run's codec). For an m-byte chunk on N ranks cut into K
 * partitions (Table 3's coefficients: ring alpha = 2(N-1), beta = gamma = N; PS alpha = 2N,
 * beta = K + 1, gamma = N + 1; and ours for the all-gather, which Table 3 lacks: alpha =
 * N(N-1) messages, beta = K, gamma = N^2 partitions decoded):
 *   T_orig(m, K) = alpha * T_send(m / K)
 *   T_cpr(m, K)  = alpha * T_send(r m / K) + beta * T_enc(m / K) + gamma * T_dec(r m / K)
 * with r the codec's ratio; K beyond N is grouped into ceil(K / N) rounds of N partitions of
 * m / K bytes (the paper's extension), so the formulas are multiplied by ceil(K / N). A linear
 * codec (PowerSGD, rand-k) computes its factors and rebuilds once over the whole chunk and
 * sums the factors with the plain ring: T_cpr(m, K) = T_enc(m) + T_orig(r m, K). The choice
 * is the cheaper of min_K T_orig and min_K T_cpr over K in [1, max_parts]. */
#ifndef AX_CASYNC_COST_H
#define AX_CASYNC_COST_H

#include <mpi.h>
#include <stddef.h>

#include "casync.h"

typedef struct {
  double latency_s;   /* t(0) */
  double bytes_per_s; /* > 0 */
} AxLinearCost;

typedef struct {
  AxLinearCost send; /* one message of m bytes over the link */
  AxLinearCost enc;  /* encoding m raw bytes (fp32) */
  AxLinearCost dec;  /* decoding m encoded bytes */
  double ratio;      /* encoded bytes / raw bytes (r) */
  int linear;        /* a linear codec: enc is its factors and rebuild over the whole chunk */
} AxCasyncCosts;

typedef struct {
  int compress;         /* 1: CaSync with the codec; 0: the plain all-reduce */
  int parts;            /* K of the chosen path */
  double t_orig, t_cpr; /* seconds: the best of each path (over K) */
  int orig_parts, cpr_parts;
  AxCasyncAlgo algo;    /* the CaSync algorithm a compressed chunk takes */
  int whole_segments;   /* 1: one message per segment, not pipelined in pieces (the PS so is
                           Espresso's all-to-all + all-gather) */
  int two_level;        /* 1: summed in two levels (mpi/sparse/two_level.h), CaSync or plain in the
                           middle, between the nodes */
} AxCasyncChoice;

double ax_linear_cost_at(const AxLinearCost *c, double bytes);

/* Table 3's alpha, beta, gamma for N ranks and K partitions. */
void ax_casync_coefficients(AxCasyncAlgo algo, int ranks, int parts, double *alpha,
                            double *beta, double *gamma);
double ax_casync_t_orig(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                        int parts);
double ax_casync_t_cpr(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                       int parts);
/* The decision for a chunk of `bytes` on `ranks` ranks, K in [1, max_parts] (max_parts < 1:
 * ranks). One rank never compresses. */
AxCasyncChoice ax_casync_choose(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks,
                                double bytes, int max_parts);

/* A linear codec's work on one rank: every round's factor of in[n] (unreduced) and the rebuild
 * into out[n]; factor holds the largest round's factor; *wire gets the factor bytes. */
int ax_casync_linear_pass(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                          const float *in, float *out, size_t n, float *factor, size_t *wire);
/* The largest factor of any round of a linear codec on n values (floats). */
size_t ax_casync_factor_cap(const AxCodec *c, size_t n);

/* Profiles codec c on this core: encode and decode at two sizes (median of `reps` runs each;
 * a linear codec: its factors and rebuild as the encode, no decode), fitted into c's enc and
 * dec costs, and its ratio at the larger size. A codec with a rank (PowerSGD) is profiled at
 * a rank of at most 128 on a large sample that shrinks as the rank grows (casync_cost.c), so
 * the profile takes about as long at any rank; a rank above 128 is priced as 128. Random
 * gradients from a fixed seed; uses wall time, so the figures vary from run to run (a caller
 * that needs every rank to decide alike must agree on them, e.g. by a maximum over ranks). */
int ax_casync_profile_codec(const AxCodec *codec, int reps, AxCasyncCosts *out);

/* casync_probe.c: the send cost of comm's link, measured by a ping-pong of two sizes between
 * its ranks 0 and 1 (median of several), given to every rank of comm (collective; a
 * communicator of one rank gets a cost that is never used: zero latency, infinite
 * bandwidth). */
int ax_casync_measure_send(MPI_Comm comm, AxLinearCost *out);

#endif
