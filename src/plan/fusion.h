/* fusion.h — Cupcake's tensor fusion for gradient compression (wang-thesis ch. 5, §5.3): which
 * consecutive gradient tensors are compressed and communicated together as one group, the
 * iteration time a grouping costs under the chapter's model, and the optimal grouping found by
 * its depth-first search (Algorithm 5.1) with its two pruning rules and two exact ones of ours
 * (below), brute force to check it, fixed-size buckets, and `--fusion auto|none|N`. Pure
 * arithmetic: no MPI, no backend, nothing printed.
 *
 * The job: tensors T_0..T_{N-1} in backward order (T_0's gradient is computed first), each with
 * its size x and its backpropagation time B(T_i); the forward time A; the compression time of a
 * group of x bytes h(x) = alpha_h + beta_h x and its communication time g(x) = alpha_g + beta_g x
 * (x counts the bytes before compression, so beta_g already holds the compression ratio).
 *
 * The timeline (Eq. 5.1, Figures 5.3 and 5.5): the GPU runs backpropagation and compression in
 * one stream, each group's compression right after the backpropagation of its last tensor; the
 * network sends one group at a time, in order, each as soon as it is compressed and the
 * previous group is sent. For groups x_0..x_{y-1}, with comp_{-1} = comm_{-1} = 0,
 *   comp_a = comp_{a-1} + B(x_a) + h(x_a)           (its compression ends: "M.comp")
 *   comm_a = max(comp_a, comm_{a-1}) + g(x_a)        (its communication ends)
 *   f = A + comm_{y-1}  = A + sum B + sum h + sum g - P   (P: the communication overlapped).
 * Decoding after communication is not modelled (Eq. 5.1 and the figures omit it).
 *
 * A grouping is group_end[0..n_groups-1]: group a is tensors group_end[a-1] .. group_end[a]-1
 * (group_end[-1] = 0), strictly increasing, the last equal to N. Callers pass arrays of N ints. */
#ifndef AX_FUSION_H
#define AX_FUSION_H

typedef struct {
  long long bytes;   /* x: the gradient's size in bytes, >= 0 */
  double backward_s; /* B(T_i): the backpropagation time that produces it, >= 0 */
} AxFusionTensor;

typedef struct {
  const AxFusionTensor *tensors; /* T_0..T_{N-1}, backward order */
  int n;                         /* N, 1..AX_FUSION_MAX_TENSORS */
  double forward_s;              /* A */
  double alpha_h, beta_h;        /* h(x) = alpha_h + beta_h x: compressing x bytes (seconds) */
  double alpha_g, beta_g;        /* g(x) = alpha_g + beta_g x: communicating them */
} AxFusionJob;                   /* every time and coefficient finite and >= 0 */

enum {
  AX_FUSION_MAX_TENSORS = 16384, /* the search recurses once per group */
  AX_FUSION_BRUTE_MAX = 20,      /* ax_fusion_brute_force: 2^(N-1) groupings */
};

/* The search's pruning rules. Algorithm 5.1 has the first two, and alone they leave the
 * search exponential on real models (a 48-layer GPT: past 10^8 nodes); the other two are ours
 * and keep it exact:
 *   tail: rule 1's first case ("no communication overhead") also counts the last group's
 *     communication, which can only start once it is compressed: at least g(x_{N-1});
 *   dominance: a partial grouping of T_0..T_{k-1} in a groups whose network is free at c is
 *     dropped when one in a' <= a groups (whose GPU is then free no later: comp depends only on
 *     k and a) with c' <= c was searched already, the timeline being monotone in both.
 * The search tries the first group's possible ends longest first (Alg. 5.1 goes shortest
 * first; the order changes only how fast good groupings are found). */
enum {
  AX_FUSION_RULE_BOUND = 1,     /* rule 1, Eq. 5.4: the optimistic outcome is no better */
  AX_FUSION_RULE_JSTAR = 2,     /* rule 2, Eq. 5.5: first groups ending before j* */
  AX_FUSION_RULE_TAIL = 4,      /* rule 1 tightened, above (only with rule 1) */
  AX_FUSION_RULE_DOMINANCE = 8, /* above */
  AX_FUSION_ALG51 = AX_FUSION_RULE_BOUND | AX_FUSION_RULE_JSTAR,
  AX_FUSION_ALL_RULES = AX_FUSION_ALG51 | AX_FUSION_RULE_TAIL | AX_FUSION_RULE_DOMINANCE,
};

typedef struct {
  int rules;           /* AX_FUSION_RULE_* bits; 0: the whole tree */
  long long max_nodes; /* > 0: stop after that many nodes with the best grouping found so far */
} AxFusionSearchOpts;

typedef struct {
  long long nodes;            /* partial groupings visited (FindOptFusion calls; brute force:
                                 groupings evaluated) */
  long long leaves;           /* complete groupings evaluated */
  long long pruned_bound;     /* first groups skipped by rule 1 */
  long long pruned_jstar;     /* first groups skipped by rule 2 */
  long long pruned_dominated; /* partial groupings dropped by the dominance rule */
  int optimal;                /* 1: the search finished; 0: it stopped at max_nodes */
} AxFusionStats;

/* f(X), Eq. 5.1, from the timeline above: the reference every search is checked against. */
int ax_fusion_cost(const AxFusionJob *job, const int *group_end, int n_groups, double *cost);

/* Algorithm 5.1 (with opts->rules; opts NULL: every rule, no node limit): the grouping of
 * least f, its cost, and the search's counts (stats may be NULL). */
int ax_fusion_search(const AxFusionJob *job, const AxFusionSearchOpts *opts, int *group_end,
                     int *n_groups, double *cost, AxFusionStats *stats);

/* Every one of the 2^(N-1) groupings, N <= AX_FUSION_BRUTE_MAX: the first of least cost. */
int ax_fusion_brute_force(const AxFusionJob *job, int *group_end, int *n_groups, double *cost,
                          AxFusionStats *stats);

/* Groups filled in backward order up to max_bytes: a tensor starts a new group when adding it
 * would take the group past max_bytes (a larger tensor is a group alone). max_bytes = 0: every
 * tensor alone. */
int ax_fusion_fixed_bytes(const AxFusionJob *job, long long max_bytes, int *group_end,
                          int *n_groups);

/* `--fusion auto|none|N`: auto, Algorithm 5.1; none, every tensor alone; N bytes (K, M, G
 * suffixes, x 1024^k), ax_fusion_fixed_bytes. */
typedef enum { AX_FUSION_AUTO, AX_FUSION_NONE, AX_FUSION_BYTES } AxFusionMode;
typedef struct {
  AxFusionMode mode;
  long long bytes; /* AX_FUSION_BYTES: the largest group, >= 1 */
} AxFusionSpec;

/* --fusion's text; one error line (naming --fusion) when it is none of the three. */
int ax_fusion_parse(const char *text, AxFusionSpec *spec);
/* The grouping spec chooses, and its cost; stats (may be NULL) only for auto, which searches
 * with every rule and stops after AX_FUSION_AUTO_MAX_NODES nodes (a 48-layer GPT takes at most
 * a few hundred thousand) with the best grouping found, stats->optimal = 0. */
enum { AX_FUSION_AUTO_MAX_NODES = 50000000 };
int ax_fusion_plan(const AxFusionJob *job, const AxFusionSpec *spec, int *group_end,
                   int *n_groups, double *cost, AxFusionStats *stats);

#endif
