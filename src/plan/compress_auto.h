/* compress_auto.h — `--compress auto` (wang-thesis ch. 4-5): a stage's tensors fused into
 * groups by Cupcake's search (fusion.h, `--fusion`), then each group's strategy chosen by
 * Espresso (espresso.h) among the schemes the trainer can run, and the decisions handed to the
 * layer-wise parts of the gradient sum (offload/grad_compress.h). Shared by the trainer
 * (train_compress.c) and `axonn plan --compression` (train_plan_compress.c), so the plan prints what
 * a run decides from the same costs. Pure computation: no MPI.
 *
 * The model, as it applies to AxoNN's step. The data-parallel sum starts after the pipeline
 * has finished the whole backward pass (AxoNN's design: the chunked all-reduce interleaved with
 * the CPU optimizer), so every gradient is ready at once: each tensor's backward time and the
 * forward time are 0 in both models, and what fusion and the strategy trade is per-message
 * latency against pipelining codec work with communication. Tensors go in the order the
 * all-reduce walks them (the stage's flat range), which plays the part of backward order.
 * With a backward timeline (ready_s: the sum starts during the last backward, --dp-sync-early)
 * Espresso's groups go in the order they become ready (a group: when its last member is), each
 * with the backward's time since the previous one as its computation, so its timeline has
 * bubbles and Remove() and the offloading act; Cupcake still fuses in flat order with no
 * compute time (a fused group is ready when its last member is).
 *   Cupcake: h(x) = encoding x raw bytes (the profiled enc cost); g(x) = a CaSync ring's
 *     communication of the encoded group, 2 (N - 1) (alpha + r x / (N B)).
 *   Espresso: every group's options are plain (the trainer's all-reduce: ring, or rhd with
 *     --allreduce rhd) and the codec under CaSync ring, PS, all-to-all + all-gather (the PS
 *     with one message per segment) or all-gather (mpi/casync/casync.h); flat, and, when the ranks
 *     sit evenly two or more to a node on two or more nodes (two_level), two-level
 *     (mpi/sparse/two_level.h: plain intra-node reduce-scatter and all-gather around any of those
 *     between the nodes). The 2l+intra options, which also compress the intra-node steps,
 *     are in the model only. The trainer's gradients are summed from host memory (the
 *     offloaded master copy), so its codecs run on the CPU threads: there is no GPU codec
 *     engine, and only the CPU placements are offered (AxEspressoProblem.cpu_only: Algorithm
 *     4.1 searches them, 4.2 has nothing to offload). --compress-scheme OPTION replaces the
 *     search: every group not kept plain takes OPTION (an ablation; one that does not apply,
 *     a gpu/ one included, is an error).
 *   Kept plain and alone, outside both searches: the tied wte when plain_first, and every vector
 *   (LayerNorm weights, biases), which a codec's one scale per group would mix with the
 *   weight matrices (compress_auto.c: kept_plain). A tensor tensor-parallel ranks replicate
 *   (AxTensorRange.replicated: wpe under --gx or --gz) is fused with no other, so its group holds
 *   the same values on every replica. Intra- and inter-node links: ranks_per_node of the data-parallel ranks share a
 *     node. */
#ifndef AX_COMPRESS_AUTO_H
#define AX_COMPRESS_AUTO_H

#include "espresso.h"
#include "fusion.h"
#include "mpi/casync/casync_cost.h"
#include "mpi/coll/collectives.h"
#include "offload/grad_compress.h"

typedef struct {
  AxCasyncCosts costs;   /* enc, dec (the CPU's) and send: the link between nodes; where
                            measured, the points they are read off (enc_at, dec_at, and
                            plain_at, the plain all-reduce over the N ranks, whose ring implies
                            a message's: ax_casync_send_points) */
  AxSizedTimes casync_at[AX_PROBE_ALGOS]; /* CaSync with the codec in N partitions under each
                            AxCasyncAlgo (ring, PS, all-gather), timed over the N ranks
                            (ax_casync_measure_paths); Espresso scales its schemes' stages to
                            them (espresso.h). n 0: not timed */
  AxLinearCost intra;    /* a message between two ranks of a node */
  double latency_paid;   /* of a queued operation's latency, the share it pays
                            (ax_casync_measure_overlap; espresso.h) */
  int ranks;             /* data-parallel N >= 1 */
  int ranks_per_node;    /* of those, on one node (divides N; else taken as 1) */
  AxFusionSpec fusion;
  AxAllreduceAlgo plain; /* the trainer's plain all-reduce */
  int plain_first;       /* the first tensor (the tied wte) stays alone and plain: it is
                            summed before the rest, or its other copy is summed plain */
  int first_presummed;   /* with plain_first: the first tensor is summed before the gradient
                            sum (the embedding sync), so the predicted sync leaves it out */
  int two_level;         /* the two-level schemes can run (mpi/sparse/two_level.h: the ranks sit
                            ranks_per_node >= 2 to a node on 2 or more nodes) */
  const char *scheme;    /* NULL or "auto": Espresso decides; else the option (espresso.h)
                            every group not kept plain takes (--compress-scheme) */
  const double *ready_s; /* NULL: every gradient ready at once (the sum starts after the
                            backward); else [n] when each tensor's gradient is final, seconds
                            from the last backward's start (the sum starts during it:
                            --dp-sync-early), and backward_s that backward's end */
  double backward_s;
} AxAutoCompressInput;

typedef struct {
  AxTensorRange *groups;        /* [n_groups] the fused tensors (names: the first tensor's) */
  int *members;                 /* [n_groups] tensors in each */
  int n_groups;
  AxEspressoDecision *decision; /* [n_groups] */
  unsigned char *alone;         /* [n_groups] kept plain and alone, outside both searches */
  AxEspressoSummary espresso;
  AxFusionStats fusion;
  double fusion_cost_s;         /* Cupcake's f of the grouping */
  double *ready_s;              /* [n_groups] when its last member is final (0: all at once) */
  double backward_s;            /* the timeline's backward (0: none, all ready at once) */
  double sync_s;                /* the step's predicted sync after the backward's end: every
                                   group the gradient sum runs, the kept-plain ones included,
                                   each from when it is ready (0: one rank) */
  double fusion_s, decide_s;    /* wall time of the two searches */
  AxSizedTimes timed_factor[AX_ESP_N_SCHEMES]; /* what each timed scheme's stages were scaled
                                   by at its timed sizes (espresso.h; n 0: none timed) */
  double latency_paid;          /* the input's */
} AxAutoCompress;

/* Fuses t[n] (in flat-range order, consecutive) and decides each group; codec gives the
 * compression ratio. AX_ERR with the error recorded. */
int ax_compress_auto_plan(const AxTensorRange *t, int n, const AxCodec *codec,
                          const AxAutoCompressInput *in, AxAutoCompress *out);
void ax_compress_auto_free(AxAutoCompress *a);
/* Sets each part's choice (compress, K = ranks, CaSync algorithm, whole segments, two
 * levels) from the group holding it; parts outside every group (gaps) stay plain. */
void ax_compress_auto_apply(const AxAutoCompress *a, int ranks, AxGradPart *parts, int n);
/* The decisions as log lines: a header with both searches' times and predicted step-sync
 * times, then a line per group (the first `max_lines`, then how many more). */
void ax_compress_auto_print(const AxAutoCompress *a, const char *prefix, int max_lines);

#endif
