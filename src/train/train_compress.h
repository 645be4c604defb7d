/* train_compress.h — the decision of selective compression for one all-reduce chunk and how
 * a decision table is printed, shared by the trainer (train_compress.c) and `axonn plan`
 * (train_plan_compress.c), so the plan shows exactly what a run would decide from the same costs. */
#ifndef AX_TRAIN_COMPRESS_H
#define AX_TRAIN_COMPRESS_H

#include <stddef.h>

#include "models/gpt_stage.h"
#include "mpi/casync/casync_cost.h"
#include "offload/grad_compress.h"
#include "train_config.h"

/* What carries the data-parallel sum, as the cost model sees it (ordered: a run takes the
 * largest over its columns). */
typedef enum {
  AX_DP_MEMORY = 0, /* the ranks share one machine's memory, no emulated link between them:
                       compression never pays there, the cost model's parts stay plain */
  AX_DP_MEASURED,   /* a real network: T_send measured by a ping-pong */
  AX_DP_EMULATED    /* the emulated link between virtual nodes: T_send its own figures */
} AxDataLink;

/* "shared memory" / "measured ping-pong; max over ranks" / "the emulated link" */
const char *ax_data_link_name(AxDataLink l);

/* How a run decided its compression, for the summary (rank 0's stage; the costs are every
 * rank's). */
typedef struct {
  const char *codec;      /* the canonical spec; NULL: no codec on this stage */
  const char *decided_by; /* "cost model", "shared memory: plain", "--compress-min-bytes",
                             "--compress auto", "one data-parallel rank: nothing summed" */
  const char *link;       /* ax_data_link_name; NULL: no data parallelism */
  int costed;             /* costs hold the agreed profile */
  const char *costs_from; /* who measured them: this run, or a checkpointed one (resumed) */
  AxCasyncCosts costs;
  int strategy;           /* --compress auto: Espresso's own measured terms below */
  AxSizedTimes casync_timed[AX_PROBE_ALGOS]; /* CaSync alone: ring, PS, all-gather */
  double latency_paid;    /* of a queued operation's latency, the share it pays */
  int parts, compressed;
  size_t bytes, compressed_bytes;
} AxCompressReport;

/* The run's choice of how to decide, for every part alike. */
typedef struct {
  const AxCodec *codec; /* as the run uses it (recipe keys included) */
  AxCasyncAlgo algo;
  int ranks;            /* data-parallel */
  int is_auto;          /* the cost model; else the threshold */
  long long min_bytes;
  int vectors;          /* parts of at most one row (1-D tensors) may compress (else plain) */
  int requested;        /* --compress-stages F under the cost model: every part the codec
                           shrinks compresses (the cost model only picks its K) */
} AxCompressPolicy;

/* The policy cfg describes for codec on `ranks` data-parallel ranks (min-bytes, vectors, a
 * selective-stage request; cfg checked). */
int ax_compress_policy(const AxTrainConfig *cfg, const AxCodec *codec, int ranks,
                       AxCompressPolicy *pol);
/* Whether a part is at most one row of its tensor: a 1-D tensor (one row of its own length)
 * or a sliver a chunk boundary cut off a matrix. */
int ax_compress_part_is_vector(const AxGradPart *p);

/* The codecs configured with a tensor's row length (PowerSGD's cols=auto), parsed once each. */
typedef struct {
  AxCodec **codecs;
  int n;
} AxShapedCodecs;

/* The codec for a part whose rows are `cols` long: base itself unless its spec says
 * cols=auto, then base's spec with cols=COLS (the low-rank structure of a weight matrix is in
 * its own rows), kept in cache. */
int ax_shaped_codec(AxShapedCodecs *cache, const AxCodec *base, size_t cols,
                    const AxCodec **out);
void ax_shaped_codecs_free(AxShapedCodecs *cache);
/* o's chunks cut at the stage's tensors (layer-wise parts), into *out (caller frees). Only
 * o's n, chunk and n_chunks are read. */
int ax_compress_cut_parts(const AxOffload *o, const AxStageLayout *lay, AxGradPart **out,
                          int *n);
/* Every part's codec and decision (the cost model or the threshold, on the part's size; then
 * vectors plain unless pol->vectors, and under pol->requested every part the codec shrinks
 * compressed). */
int ax_compress_decide_parts(const AxCompressPolicy *pol, AxShapedCodecs *cache,
                             const AxCasyncCosts *costs, AxGradPart *parts, int n);
/* The tied wte (lay's, on a pipeline of `stages` > 1), whose two copies on the first and the
 * last stage must take one update: under --compress auto it stays alone and plain on both ends
 * (tied_alone: Cupcake fuses each end's copy into its own stage's groups, which compress into
 * other sums; on 2 x 2 with the dense embedding sum the copies drifted apart); layer-wise it
 * stays plain (tied_plain) where the last stage sums its copy plain (--compress-stages: only
 * `selected` of them compress) or the data-parallel sum leaves it out (`presummed`: the sparse
 * or fused embedding sync), and else both ends cut it alike (it starts every stage's range) and
 * decide it alike, which the trainer checks (train_compress.c: keep_tied_alike). keep: the parts
 * inside it become plain. */
int ax_compress_tied_alone(const AxStageLayout *lay, int stages);
int ax_compress_tied_plain(const AxStageLayout *lay, int stages, int selected, int presummed);
void ax_compress_keep_tied_plain(const AxStageLayout *lay, AxGradPart *parts, int n);
/* The decision table: a line per part (the first max_lines, then how many more), each label
 * after `prefix`: its size, and under the cost model T_orig, T_cpr with its best K, and the
 * decision (with the K CaSync runs, and why a part stays plain where the policy decided it);
 * and the totals of parts[n]. */
void ax_compress_print_parts(const AxGradPart *parts, int n, const AxCompressPolicy *pol,
                             const char *prefix, int max_lines);
/* One line when a stage compresses none of its parts: why (the cost model's figures, 1-D
 * tensors, a codec that does not shrink them, the tied wte), and how to compress anyway. */
void ax_compress_explain_none(const AxGradPart *parts, int n, const AxCompressPolicy *pol,
                              const char *stage_label);
/* The recipe in effect (cfg->compression.recipe): a line per default with its source. */
void ax_train_print_recipe(const AxTrainConfig *cfg);
void ax_compress_part_totals(const AxGradPart *parts, int n, int *compressed, size_t *bytes,
                             size_t *compressed_bytes);

/* A part of `count` floats on `ranks` data-parallel ranks: the cost model (is_auto; costs
 * with the codec's ratio at this size; a compressed part runs the K it chose), or compress
 * when it is at least min_bytes (parts 0: CaSync's own pieces). */
AxCasyncChoice ax_compress_decide(const AxCodec *codec, const AxCasyncCosts *costs,
                                  AxCasyncAlgo algo, int ranks, int is_auto, long long min_bytes,
                                  size_t count);
/* The costs' line: send, encode and decode (merge) as latency + bytes / bandwidth. */
void ax_compress_print_costs(const AxCasyncCosts *k, const char *send_source);

/* train_plan_compress.c: the decision table of every stage for cfg (`axonn plan`), from this
 * machine's profiled codec costs and --emulate-link (or an assumed link, said so), cut into
 * the same layer-wise parts a run cuts. first[P + 1]: the blocks of each stage. */
int ax_plan_print_compress(const AxTrainConfig *cfg, const AxGptConfig *m, const int *first);

#endif
