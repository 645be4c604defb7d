/* espresso.h — Espresso's compression strategy (wang-thesis ch. 4, "Espresso"): for each
 * (fused) gradient tensor, whether to compress it, where its codec runs (GPU or CPU) and which
 * collective scheme synchronizes it, chosen on a timeline model of one iteration by the
 * greedy search of Algorithm 4.1 with its Remove() step (§4.7.2) and the CPU offloading of
 * Algorithm 4.2 (§4.7.3), then a refinement of ours (one tensor's option at a time while the
 * iteration time falls, within a budget of timelines; on up to 12 tensors also pairs of them:
 * espresso_search.c). This module owns the option table, the timeline model, the searches
 * and their per-tensor decisions; it is pure computation (no MPI, no printing): profiling the
 * costs, applying the decisions and printing them belong to its callers.
 *
 * Options (§4.5, Fig. 4.7-4.8: compress? -> GPU? -> flat comm? -> divisible? -> which comm?),
 * the leaves of the decision tree, index: name (placement/levels/scheme):
 *    0 plain/flat/ar-ring      1 plain/flat/ar-rhd      2 plain/2l/ar-ring    3 plain/2l/ar-rhd
 *    4 gpu/flat/casync-ring    5 gpu/flat/casync-ps     6 gpu/flat/a2a+ag     7 gpu/flat/ag
 *    8 gpu/2l/...  (4 schemes)  12 gpu/2l+intra/... (4 schemes)
 *   16..27 the same twelve with cpu (option o + 12 is the CPU twin of GPU option o).
 * "flat": one collective over all N ranks; "2l" (two-level, several nodes of g > 1 ranks):
 * intra-node reduce-scatter, the scheme between the n nodes on each rank's m/g shard (the g
 * ranks of a node run theirs at once and share the node's link), intra-node all-gather;
 * "2l+intra" also compresses the two intra-node steps, as the divisible scheme (compressed
 * all-to-all, then compressed all-gather: §4.5.1, Dimension 4 keeps only divisible schemes
 * inside a node). One node or one rank per node: flat only. One rank: only 0 (nothing to send).
 *
 * Costs (§4.6's empirical models; AxLinearCost t(b) = latency + b / bandwidth of
 * mpi/casync/casync_cost.h, or, where the caller measured them, read off measured points as the
 * HiPress model reads its own: ax_cost_at). intra, inter: one message of b bytes between two
 * ranks of a node, or of two nodes when it is the only flow on the node's link (k flows at
 * once: t(b) + (k-1)·b/bw). Codec: enc(b) of b raw bytes, dec(b) of b encoded bytes, per
 * device; r = encoded / raw.
 * For a collective over p members of an m-byte buffer, b = m/p:
 *   ar-ring  2(p-1) ring steps of b (Table 3's ring alpha, ax_casync_coefficients)
 *   ar-rhd   log2 p' halving and as many doubling exchanges of m/2, m/4, ... with partners at
 *            distance p'/2, ..., 1 (p' the largest power of two <= p), plus two full-buffer
 *            exchanges when p is not a power of two (mpi/coll/rhd.c's fold)
 *   casync-ring / casync-ps  HiPress's T_cpr with its alpha, beta, gamma (§6's, K = p;
 *            ax_casync_coefficients): one
 *            stage holding the link for alpha·msg(r·b) + beta·enc(b) + gamma·dec(r·b), of which
 *            the codec part also occupies the device (codec work between the steps); msg is a
 *            ring step for the ring and an all-to-all's share, all-to-all(r·b) / (p-1), for
 *            the PS
 *   a2a+ag   divisible (Fig. 4.4): encode p parts of b | all-to-all of r·b | decode p-1 parts,
 *            encode the aggregate | all-gather of r·b | decode p-1 parts
 *   ag       indivisible (Fig. 4.3): encode m | all-gather of r·m | decode p-1 copies
 * Where the caller timed a compressed flat scheme alone (timed[scheme]: the trainer times
 * CaSync under ring, PS and all-gather side by side with the plain all-reduce at start-up),
 * its stages are scaled by the measured time over the stages' sum, that ratio taken at each
 * timed size and interpolated between them (the nearest one's beyond them), so that alone it
 * takes what was measured and the model keeps only its structure: which parts hold the links
 * and which the codec's device (task set-up, waits between steps and the messages'
 * overheads that the terms above miss or overcount).
 * A ring step costs the slowest link it crosses (a node-ordered ring has one flow per node
 * link); an exchange with a partner at distance d crosses nodes when d >= g, then with g flows
 * per node link; an all-to-all is the larger of (g-1) intra messages and (p-g) inter messages
 * with g flows. A flat collective on several nodes holds both links; a two-level one holds the
 * intra link for its intra steps and the inter link for its middle.
 *
 * Timeline model of one backward pass (the reference, ax_espresso_iteration_time). Tensors in
 * backward order (0 = the first ready, nearest the output layer); tensor i's computation takes
 * compute_s[i], so with nothing else on the GPU it is ready at compute_s[0] + ... + compute_s[i].
 * Four resources: the GPU, the CPU, the intra link, the inter link. Tensors are processed in
 * order; for tensor i:
 *   1. its computation runs on the GPU from the end of tensor i-1's, in the GPU's free time:
 *      codec work already placed on the GPU (of earlier tensors) goes first, so GPU
 *      compression delays the computation of later tensors (Fig. 4.2(c));
 *   2. then its stages, in order, each ready when the previous one ends: a stage starts at the
 *      earliest time >= ready at which its links are free (each link serves its stages in
 *      tensor order: communication is serialized in order, so a tensor sent late makes the
 *      next ones wait) and its device (GPU or CPU) has a free slot for its codec work (codec
 *      work is never split; it takes the earliest free slot, also before work placed earlier
 *      when a gap fits it); it ends `duration` later, less the latency of its messages that
 *      ran while it waited for its links (ours: the trainer starts a chunk's operations at
 *      once and progresses them together, so a queued message is in flight behind the
 *      transfer ahead of it and only its bytes wait), less the share latency_paid of it that
 *      the machine does not overlap (measured: on ranks that share cores a hand-off waits for
 *      a descheduled rank whichever operation it belongs to).
 * The iteration time F(S) is when the last computation or stage ends. The forward pass and the
 * optimizer are the same under every strategy and are left out.
 *
 * Every function returns AX_OK or AX_ERR with the error recorded (src/core/error.h). */
#ifndef AX_ESPRESSO_H
#define AX_ESPRESSO_H

#include <stdint.h>

#include "mpi/casync/casync_cost.h"

enum {
  AX_ESPRESSO_N_OPTIONS = 28,
  AX_ESPRESSO_CPU_TWIN = 12,      /* option o (GPU) + 12 = its CPU twin */
  AX_ESPRESSO_EXHAUSTIVE_MAX = 12, /* ax_espresso_exhaustive's largest n */
  AX_ESPRESSO_OFFLOAD_ENUM_MAX = 4096, /* Alg. 4.2 enumerates up to this many U, else descends */
};

typedef enum { AX_ESP_PLAIN, AX_ESP_GPU, AX_ESP_CPU } AxEspressoPlace;
typedef enum { AX_ESP_FLAT, AX_ESP_TWO_LEVEL, AX_ESP_TWO_LEVEL_INTRA } AxEspressoLevels;
typedef enum {
  AX_ESP_AR_RING, AX_ESP_AR_RHD, AX_ESP_CASYNC_RING, AX_ESP_CASYNC_PS, AX_ESP_A2A_AG, AX_ESP_AG
} AxEspressoScheme;
enum { AX_ESP_N_SCHEMES = AX_ESP_AG + 1 };

typedef struct {
  const char *name; /* "gpu/2l/casync-ps" */
  AxEspressoPlace place;
  AxEspressoLevels levels;
  AxEspressoScheme scheme;
} AxEspressoOption;

typedef struct {
  AxLinearCost enc; /* b raw bytes */
  AxLinearCost dec; /* b encoded bytes */
  AxSizedTimes enc_at, dec_at; /* where measured, the points each is read off (ax_cost_at);
                                  n 0: the line */
} AxEspressoCodecCost;

typedef struct {
  int n;                    /* tensors, in backward order */
  const double *bytes;      /* raw (fp32) bytes of each, >= 0 */
  const double *compute_s;  /* backward computation of each, seconds, >= 0 */
  int ranks;                /* N >= 1 */
  int ranks_per_node;       /* g >= 1, dividing N */
  AxLinearCost intra, inter;
  AxSizedTimes inter_at;    /* where measured, the points of one message between nodes that
                               inter is read off (ax_cost_at); n 0: the line */
  AxEspressoCodecCost gpu, cpu;
  AxSizedTimes timed[AX_ESP_N_SCHEMES]; /* a flat compressed scheme alone, measured at some
                               sizes (its stages are scaled to it, above); n 0: not timed */
  double ratio;             /* encoded / raw bytes, > 0 */
  double latency_paid;      /* the share in [0, 1] of a queued stage's message latency that it
                               still pays (ax_casync_measure_overlap); 0: all of it runs in the
                               shadow of the transfer ahead */
  uint32_t allowed;         /* bit o: option o may be chosen; 0: every option */
  int cpu_only;             /* no GPU codec engine (a CPU backend, or codecs on host copies):
                               the GPU options are never chosen, Algorithm 4.1 searches the CPU
                               ones in their place and 4.2's offloading has nothing to move */
} AxEspressoProblem;

/* One tensor under a strategy. */
typedef struct {
  int option;          /* index into the option table */
  int removed;         /* Remove() ruled it out: uncompressed and sent before a bubble */
  double ready_s;      /* its computation ends */
  double comm_start_s; /* its first link stage starts (ready_s when it sends nothing) */
  double comm_end_s;   /* its last link stage ends (ready_s when it sends nothing) */
  double done_s;       /* its last stage ends: synchronized */
  double alone_s;      /* its stages' durations added up (the option's time with no waiting) */
} AxEspressoDecision;

typedef struct {
  double iteration_s;   /* F of the chosen strategy */
  double nothing_s;     /* F of compressing nothing */
  double greedy_s;      /* F after Alg. 4.1, before the offloading */
  double decide_s;      /* wall time of ax_espresso_decide */
  long long evaluations; /* timelines evaluated (partly, when cut off by a bound) */
  int compressed, offloaded, removed;
} AxEspressoSummary;

/* The option table; NULL when o is out of range. */
const AxEspressoOption *ax_espresso_option(int o);
/* The option called name, or -1. */
int ax_espresso_option_find(const char *name);
/* 1 when option o exists, is allowed and fits p's ranks and nodes; 0 otherwise. */
int ax_espresso_option_applies(const AxEspressoProblem *p, int o);
/* AX_OK when p is well-formed (and has an applicable uncompressed option). */
int ax_espresso_check(const AxEspressoProblem *p);
/* What option o's stages are scaled by for a tensor of `bytes` (1 where nothing was timed:
 * above); p need not be checked, o must apply to it. */
double ax_espresso_timed_factor(const AxEspressoProblem *p, int o, double bytes);

/* F(S): the iteration time with choices[i] the option of tensor i (the reference evaluator). */
int ax_espresso_iteration_time(const AxEspressoProblem *p, const int *choices, double *seconds);
/* The same, with every tensor's timeline in out[n] (removed left 0). */
int ax_espresso_timeline(const AxEspressoProblem *p, const int *choices, AxEspressoDecision *out,
                         double *seconds);

/* Compress nothing: each tensor's applicable uncompressed option with the least stage time. */
int ax_espresso_nothing(const AxEspressoProblem *p, int *choices);
/* Algorithm 4.1 (GPU compression) from compress-nothing; removed[n] (may be NULL) gets 1 for
 * the tensors Remove() ruled out. */
int ax_espresso_greedy(const AxEspressoProblem *p, int *choices, int *removed);
/* Algorithm 4.2: moves GPU-compressed tensors of choices to their CPU twins where that
 * shortens F (never lengthens it). */
int ax_espresso_offload(const AxEspressoProblem *p, int *choices);
/* The best strategy over every applicable option of every tensor, and its F (n <= 12):
 * espresso_exhaustive.c's exact branch and bound, from Espresso's choice. Its time grows as
 * |options|^n at worst: 8 tensors of 10 options take milliseconds to a second. */
int ax_espresso_exhaustive(const AxEspressoProblem *p, int *choices, double *seconds);
/* Espresso: Alg. 4.1, 4.2 and the refinement; out[n] the decisions with their predicted
 * timelines. */
int ax_espresso_decide(const AxEspressoProblem *p, AxEspressoDecision *out,
                       AxEspressoSummary *sum);

#endif
