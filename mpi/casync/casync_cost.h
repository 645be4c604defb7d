/* casync_cost.h — selective compression and partitioning (HiPress §3.3, SeCoPa): the cost model
 * that decides, per gradient part, whether CaSync should compress it and into how many
 * partitions K (CaSync then runs exactly K: ax_casync_state_new_parts), the fit of a linear
 * cost through measured points, and the profiling of this machine's encode and decode costs
 * that feeds it.
 *
 * Each cost has a line, t(m) = latency + m / bandwidth, and where it was measured the points
 * behind it: T_send of the link (what the plain all-reduce measured over the run's own path
 * implies per message: ax_casync_measure_plain; without that measurement the emulated link's
 * own figures, or a ping-pong measured over a real network), T_enc of m raw bytes and T_dec of
 * m encoded bytes (profiled with the run's codec; the decode merges, as CaSync's aggregation
 * does: the codecs add while they decode), and the plain all-reduce itself. A cost with
 * measured points is read off them (ax_cost_at: linear between the two measured sizes around
 * m, the top of the measured range's rate beyond the largest), since one line through sizes a
 * factor of 16 000 apart misses costs that jump between them: a sparse codec's threshold
 * sample of 4096 values costs topk 95 us to encode 64 KB where the line said 13, and a 1 MB
 * plain ring on 2 ranks over an EMULATED 100 Gb/s link took 1.3-2.7x its line's time. For an
 * m-byte part on N ranks cut into K partitions:
 *   T_orig(m)    = 2(N-1) * T_send(m / N)   the plain ring all-reduce the part otherwise takes
 *                                           (Table 3's ring, N segments), plus what the plain
 *                                           all-reduce measured at m beyond its line (so at
 *                                           K = N it is the measurement read at m)
 *   T_cpr(m, K)  = alpha * T_send(r m / K) + beta * T_enc(m / K) + gamma * T_dec(r m / K)
 *                  + E(m)
 * with r the codec's ratio and the coefficients of HiPress §6 (the CaSync that runs executes):
 * ring alpha = 2(N-1), beta = N, gamma = N; co-located PS alpha = 2(N-1) (no message from a
 * rank to itself), beta = K, gamma = N; and ours for the all-gather, which the paper lacks:
 * alpha = K(N-1) messages, beta = K, gamma = K N decodes. K beyond N is grouped into ceil(K/N)
 * rounds of N partitions of m / K bytes (the paper's extension), so the formulas are multiplied
 * by ceil(K / N); with linear costs the rounds never pay (two rounds of m/K cost at least one
 * of m/N), so the choice searches K in [1, N]. A linear codec (PowerSGD, rand-k) computes its
 * factors and rebuilds once over the whole part and sums the factors with the plain ring:
 * T_cpr(m, K) = T_enc(m) + T_orig(r m, K) + E(m). E is CaSync's engine: the fixed per-call
 * cost (task set-up, waits between its steps, the extra messages' overheads) and any per-byte
 * cost the codec calls and the link do not contain, from CaSync itself timed at start-up side
 * by side with the plain all-reduce at the probe's sizes (ax_casync_measure_paths,
 * ax_casync_engine_from): its excess over the model at each size, interpolated between them
 * (per size band: one line through them missed a 64 KB part's overhead that the other sizes
 * did not show); 0 where nothing was timed. A part is compressed only where
 * min_K T_cpr < T_orig. */
#ifndef AX_CASYNC_COST_H
#define AX_CASYNC_COST_H

#include <mpi.h>
#include <stddef.h>

#include "casync.h"

typedef struct {
  double latency_s;   /* t(0) */
  double bytes_per_s; /* > 0 */
} AxLinearCost;

/* The start-up probes' sizes: 1 KB x 4 up to 4 MB (1, 4, 16, 64, 256 KB, 1, 4 MB); the most
 * points a measured cost keeps (the codec profile's 64 values x 2 up to 4M values: 17); the
 * most CaSync algorithms one probe times (ring, PS, all-gather). */
enum { AX_PROBE_SIZES = 7, AX_SIZED_MAX = 18, AX_PROBE_ALGOS = 3 };

/* Seconds measured (or derived) at n sizes, strictly ascending bytes; n = 0: none. */
typedef struct {
  int n;
  double bytes[AX_SIZED_MAX], seconds[AX_SIZED_MAX];
} AxSizedTimes;

typedef struct {
  AxLinearCost send; /* one message of m bytes over the link */
  AxLinearCost enc;  /* encoding m raw bytes (fp32) */
  AxLinearCost dec;  /* decoding m encoded bytes and merging them (adding) into the values */
  double ratio;      /* encoded bytes / raw bytes (r) */
  int linear;        /* a linear codec: enc is its factors and rebuild over the whole chunk */
  /* The plain all-reduce of m bytes as measured over the run's own path
   * (ax_casync_measure_plain; bytes_per_s 0: not measured). Where it is, send is the
   * per-message cost it implies (ax_casync_send_from_plain), so T_orig is that measurement and
   * T_cpr's messages carry the same per-message overhead. */
  AxLinearCost plain;
  /* CaSync's own cost beyond the terms above: what a compressed all-reduce timed over the
   * run's own path (ax_casync_measure_paths, at K = N) took more than alpha T_send + beta
   * T_enc + gamma T_dec predict, at each probe size (of the part's raw bytes, floored at 0);
   * added to every T_cpr (ax_casync_engine_at). n = 0: not measured, nothing added. */
  AxSizedTimes engine;
  /* The measured points behind enc (raw bytes), dec (encoded bytes) and plain (raw bytes):
   * the profile's samples and the probe's sizes; n = 0: the line alone (ax_cost_at). */
  AxSizedTimes enc_at, dec_at, plain_at;
} AxCasyncCosts;

typedef struct {
  int compress;         /* 1: CaSync with the codec; 0: the plain all-reduce */
  int parts;            /* K of the chosen path: a compressed part's CaSync runs exactly K
                           partitions; 0: CaSync's default pieces (the comm's chunk size), for
                           a part no cost model partitioned (offload/grad_compress.h) */
  double t_orig, t_cpr; /* seconds: the plain ring's, and the best compressed (over K) */
  int orig_parts, cpr_parts;
  AxCasyncAlgo algo;    /* the CaSync algorithm a compressed chunk takes */
  int whole_segments;   /* 1: one message per segment, not pipelined in pieces (the PS so is
                           Espresso's all-to-all + all-gather) */
  int two_level;        /* 1: summed in two levels (mpi/sparse/two_level.h), CaSync or plain in the
                           middle, between the nodes */
} AxCasyncChoice;

double ax_linear_cost_at(const AxLinearCost *c, double bytes);
/* A measured cost at `bytes`: linear between the two points of `at` around it; above the
 * largest point that point's time plus, for the rest, the rate between it and the largest point
 * at most a quarter its size (never faster than twice the largest point's average rate; the
 * line's where there is no such point or no rise: the line, fitted on relative errors, leans
 * on the small sizes, and priced 16 MB plain all-reduces over an EMULATED 1 Gb/s link 13%
 * above their measured time, the top rate 5%); below the smallest, that
 * point's time less the line's rate for the difference, never below the smaller of the line's
 * latency and that time. at NULL or n = 0: the line. */
double ax_cost_at(const AxLinearCost *line, const AxSizedTimes *at, double bytes);
/* Points (bytes[i], seconds[i]) of n measurements (ascending bytes) as AxSizedTimes: a point
 * whose bytes do not exceed the last kept one's (two sizes with the same encoded length) is
 * merged into it, the larger time kept; at most AX_SIZED_MAX points. */
AxSizedTimes ax_sized_times(const double *bytes, const double *seconds, int n);
/* The engine term of c (AxCasyncCosts.engine) for a part of `bytes`: linear between the two
 * measured sizes around it, the smallest size's below them, the last two's line extended
 * above them (floored at 0); 0 where not measured. */
double ax_casync_engine_at(const AxCasyncCosts *c, double bytes);
/* The engine term that makes the model's T_cpr(m, N) (c's other terms, algo, N ranks) meet
 * compressed all-reduces measured at some sizes: at each, the measured time less the model's,
 * floored at 0 (where the model already predicts more, nothing is added). Points on model + E
 * give E back at them. */
AxSizedTimes ax_casync_engine_from(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks,
                                   const AxSizedTimes *measured);
/* The line through n >= 1 measured points (bytes[i], seconds[i] > 0): least squares on the
 * relative error (each point weighted by 1 / seconds^2, so a tiny size counts as much as a
 * large one); a slope that noise made non-positive becomes the largest size's rate (the line
 * then through the smallest size's point); the latency is floored so that the line never
 * predicts less than the smallest size took, and is always positive (at worst that size's
 * whole time). Points that lie on a line with a positive intercept give that line back. */
AxLinearCost ax_linear_fit(const double *bytes, const double *seconds, int n);

/* HiPress's alpha, beta, gamma (above) for N ranks and K partitions (of one round). */
void ax_casync_coefficients(AxCasyncAlgo algo, int ranks, int parts, double *alpha,
                            double *beta, double *gamma);
/* The plain ring's time for `bytes` cut into K partitions (the ring's coefficients; a run's
 * plain ring has K = N). */
double ax_casync_t_orig(const AxCasyncCosts *c, int ranks, double bytes, int parts);
double ax_casync_t_cpr(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks, double bytes,
                       int parts);
/* The decision for a part of `bytes` on `ranks` ranks: t_orig the plain ring's (orig_parts
 * N), t_cpr the minimum over K in [1, max_parts] (max_parts < 1: ranks; the smallest K of
 * equal times), compress where t_cpr < t_orig (parts: its K). One rank never compresses. */
AxCasyncChoice ax_casync_choose(const AxCasyncCosts *c, AxCasyncAlgo algo, int ranks,
                                double bytes, int max_parts);

/* A linear codec's work on one rank: every round's factor of in[n] (unreduced) and the rebuild
 * into out[n]; factor holds the largest round's factor; *wire gets the factor bytes. */
int ax_casync_linear_pass(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                          const float *in, float *out, size_t n, float *factor, size_t *wire);
/* The largest factor of any round of a linear codec on n values (floats). */
size_t ax_casync_factor_cap(const AxCodec *c, size_t n);

/* Profiles codec c on this core: encode and decode (merging) at sizes from 64 values (256
 * bytes: a call's own cost) by factors of 2 up to 4M values (16 MB), each the median of `reps`
 * timings of back-to-back calls (at least 50 us of them, divided by their number); a linear
 * codec: its factors and rebuild as the encode, no decode. Kept as c's enc_at and dec_at points
 * (per raw byte encoded, per encoded byte decoded) and fitted into its enc and dec lines by
 * ax_linear_fit, and its ratio at the largest size. A codec with a rank (PowerSGD) is profiled
 * at a rank of at most 128 on a largest sample that shrinks as the rank grows (casync_cost.c),
 * so the profile takes about as long at any rank; a rank above 128 is priced as 128. Random
 * gradients from a fixed seed; uses wall time, so the figures vary from run to run (a caller
 * that needs every rank to decide alike must agree on them, e.g. by a maximum over ranks). */
int ax_casync_profile_codec(const AxCodec *codec, int reps, AxCasyncCosts *out);

/* casync_probe.c: the send cost of comm's link, measured by a ping-pong of three sizes (8 B,
 * 4 KB, 4 MB) between its ranks 0 and 1 (median of several each), fitted by ax_linear_fit and
 * given to every rank of comm (collective; a
 * communicator of one rank gets a cost that is never used: zero latency, infinite
 * bandwidth). */
int ax_casync_measure_send(MPI_Comm comm, AxLinearCost *out);

/* casync_probe.c: the plain all-reduce the caller runs (ax_allreduce with algo and cc: its
 * chunking, waits and emulated link; traffic not counted), timed on comm at the probe's sizes
 * (AX_PROBE_SIZES), each the least over `reps` of the slowest rank's time, into *at (NULL: not
 * kept) and fitted by ax_linear_fit (a positive latency kept) into *out: the same figures on
 * every rank of comm (collective). A communicator of one rank gets zero latency, infinite
 * bandwidth and no points. */
int ax_casync_measure_plain(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                            int reps, AxLinearCost *out, AxSizedTimes *at);
/* casync_probe.c: `reps` timings of one plain all-reduce of `count` floats of buf (ax_allreduce
 * with algo and cc), after one untimed run, each begun together (a barrier) and each the
 * slowest rank's seconds, into seconds[reps] (the same on every rank of comm; collective). */
int ax_casync_time_allreduce(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                             float *buf, size_t count, int reps, double *seconds);
/* The per-message cost T_send that a measured plain all-reduce implies on N ranks: the ring's
 * 2(N-1) messages of m/N bytes, T_orig(m) = 2(N-1) T_send(m/N) = plain(m), so latency / 2(N-1)
 * and bandwidth x 2(N-1)/N. Fed back into T_orig it gives the measurement exactly. */
AxLinearCost ax_casync_send_from_plain(const AxLinearCost *plain, int ranks);
/* casync_probe.c: how much of a message's latency an operation pays when it is started
 * together with others ahead of it (as the gradient sum starts a chunk's operations, then
 * waits for them in order): in each of `reps` rounds one plain all-reduce of 1 KB (algo, cc's
 * path) takes t1 and 4 started together t4 (the slowest rank's times), and *paid is the
 * median over the rounds of (t4 - t1) / (3 t1), clamped to [0, 1]: 0 when the three behind
 * run entirely in the shadow of the first, 1 when they follow it one by one. Collective; the
 * same on every rank of comm; one rank: 0. */
int ax_casync_measure_overlap(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo algo,
                              int reps, double *paid);
/* The same for the measured points of the plain all-reduce: a point (m, t) becomes the
 * message's (m / N, t / 2(N-1)); one rank: the points as they are. */
AxSizedTimes ax_casync_send_points(const AxSizedTimes *plain_at, int ranks);

/* casync_probe.c: the paths a part can take, timed side by side over cc's path (emulated
 * link, waits; traffic not counted) at the probe's sizes: in each round the plain all-reduce
 * (plain_algo), then codec c (a codec with a rank at most 128, as its profile:
 * ax_casync_profile_codec) through each CaSync algorithm of algos[n_algos] (1 to
 * AX_PROBE_ALGOS) in K = N partitions, each run on the same normal, gradient-like values (a
 * rank's own), so all see the same load; each size the least over `reps` rounds of the slowest
 * rank's time (other work only adds time). *plain_at gets the plain path's times (NULL: not
 * kept) and *plain their ax_linear_fit (a positive latency kept): T_orig's measurement (as
 * ax_casync_measure_plain's); casync[a] the CaSync times of algos[a] at the same sizes, from
 * which an engine term comes (ax_casync_engine_from, once the send is known). Collective; the
 * same figures on every rank of comm. One rank: zero latency, infinite bandwidth, no times
 * (n = 0). */
int ax_casync_measure_paths(MPI_Comm comm, const AxCommConfig *cc, AxAllreduceAlgo plain_algo,
                            const AxCodec *c, const AxCasyncAlgo *algos, int n_algos, int reps,
                            AxLinearCost *plain, AxSizedTimes *plain_at, AxSizedTimes *casync);

#endif
