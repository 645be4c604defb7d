/* fusion.c — Cupcake's tensor fusion (wang-thesis ch. 5): the iteration time of a grouping
 * (Eq. 5.1 through the timeline of Figures 5.3 and 5.5), Algorithm 5.1's depth-first search
 * with its two pruning rules (Eq. 5.4, the optimistic outcome; Eq. 5.5, j*), brute force, the
 * fixed-size buckets and the `--fusion` choice; see fusion.h. */
#include "fusion.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/options.h"

/* ---------------------------------------------------------------- the job and the timeline */

static int check_coef(const char *name, double v) {
  if (!isfinite(v) || v < 0)
    return AX_FAIL("fusion: %s = %g: expected a finite value >= 0", name, v);
  return AX_OK;
}

static int check_job(const AxFusionJob *job) {
  if (!job || (!job->tensors && job->n > 0)) return AX_FAIL("fusion: no job");
  if (job->n < 1 || job->n > AX_FUSION_MAX_TENSORS)
    return AX_FAIL("fusion: %d tensors: expected 1 to %d", job->n, AX_FUSION_MAX_TENSORS);
  AX_TRY(check_coef("forward time A", job->forward_s));
  AX_TRY(check_coef("alpha_h", job->alpha_h));
  AX_TRY(check_coef("beta_h", job->beta_h));
  AX_TRY(check_coef("alpha_g", job->alpha_g));
  AX_TRY(check_coef("beta_g", job->beta_g));
  for (int i = 0; i < job->n; i++) {
    const AxFusionTensor *t = &job->tensors[i];
    if (t->bytes < 0) return AX_FAIL("fusion: tensor %d has %lld bytes", i, t->bytes);
    if (!isfinite(t->backward_s) || t->backward_s < 0)
      return AX_FAIL("fusion: tensor %d: backward time %g: expected >= 0", i, t->backward_s);
  }
  return AX_OK;
}

static int check_grouping(int n, const int *group_end, int n_groups) {
  if (!group_end || n_groups < 1 || n_groups > n)
    return AX_FAIL("fusion: %d groups of %d tensors", n_groups, n);
  for (int a = 0, prev = 0; a < n_groups; prev = group_end[a++])
    if (group_end[a] <= prev || group_end[a] > n)
      return AX_FAIL("fusion: group %d ends at %d after %d (of %d tensors)", a, group_end[a], prev,
                     n);
  if (group_end[n_groups - 1] != n)
    return AX_FAIL("fusion: the groups end at %d, not at tensor %d", group_end[n_groups - 1], n);
  return AX_OK;
}

/* fmax without its NaN handling (every time here is finite), which compilers inline. */
static double later(double a, double b) { return a > b ? a : b; }

static double h_of(const AxFusionJob *job, double x) { return job->alpha_h + job->beta_h * x; }
static double g_of(const AxFusionJob *job, double x) { return job->alpha_g + job->beta_g * x; }

/* One group of `bytes` whose backpropagation takes `backward_s` joins the timeline: its
 * compression follows on the GPU, its communication waits for the network. */
typedef struct {
  double comp; /* the GPU is free: the last group's compression has ended ("M.comp") */
  double comm; /* the network is free: the last group's communication has ended */
} Timeline;

static Timeline add_group(const AxFusionJob *job, Timeline t, double backward_s, double bytes) {
  Timeline u;
  u.comp = t.comp + backward_s + h_of(job, bytes);
  u.comm = later(u.comp, t.comm) + g_of(job, bytes);
  return u;
}

int ax_fusion_cost(const AxFusionJob *job, const int *group_end, int n_groups, double *cost) {
  AX_TRY(check_job(job));
  AX_TRY(check_grouping(job->n, group_end, n_groups));
  Timeline t = {0, 0};
  for (int a = 0, i = 0; a < n_groups; a++) {
    double b = 0, x = 0;
    for (; i < group_end[a]; i++) {
      b += job->tensors[i].backward_s;
      x += (double)job->tensors[i].bytes;
    }
    t = add_group(job, t, b, x);
  }
  *cost = job->forward_s + t.comm;
  return AX_OK;
}

/* ---------------------------------------------------------------- Algorithm 5.1 */

/* The partial groupings searched that end before one k: (groups, network free) pairs, groups
 * increasing and comm decreasing, so none is dominated by another. */
typedef struct {
  int *groups;
  double *comm;
  int len, cap;
} Frontier;

typedef struct {
  const AxFusionJob *job;
  int n, rules;
  double *pb, *px;     /* prefix sums: B(0, k-1) = pb[k], bytes likewise */
  int *path;           /* the groups chosen so far (their ends) */
  int *best;           /* global_opt_fuse */
  int best_groups;
  double best_time;    /* global_opt_time, without A */
  Frontier *frontier;  /* [k], with the dominance rule */
  long long max_nodes;
  int stopped;         /* max_nodes reached */
  AxFusionStats st;
} Search;

static double range_b(const Search *s, int i, int j) { return s->pb[j + 1] - s->pb[i]; }
static double range_x(const Search *s, int i, int j) { return s->px[j + 1] - s->px[i]; }
/* h(i, j), g(i, j): of the tensors T_i..T_j fused; an empty range (i > j) is no group at all. */
static double range_h(const Search *s, int i, int j) {
  return i > j ? 0 : h_of(s->job, range_x(s, i, j));
}
static double range_g(const Search *s, int i, int j) {
  return i > j ? 0 : g_of(s->job, range_x(s, i, j));
}

/* Pruning rule 2 (Eq. 5.5 with M.delay, Alg. 5.1 lines 12-18): the last j whose group T_k..T_j
 * is computed and compressed before the previous group's communication ends. A shorter first
 * group sends no earlier and leaves more for later, so it is never better. */
static int first_end(const Search *s, int k, double delay) {
  int jstar = k;
  for (int i = k; i < s->n; i++) {
    if (range_b(s, k, i) + range_h(s, k, i) <= delay)
      jstar = i;
    else
      break;
  }
  return jstar;
}

/* Pruning rule 1 (Eq. 5.4 generalized, Alg. 5.1 lines 19-21): a lower bound of the time after
 * the first group T_k..T_i, with the rest fused as one group, either without any communication
 * overhead (base) or with the rest's communication right after this group's (cases). With
 * AX_FUSION_RULE_TAIL, base also counts the last group's communication, which follows its
 * compression: g(k, N-1) when this group is the last, else at least g(x_{N-1}). */
static double optimistic(const Search *s, int k, int i, double comp, double delay) {
  int last = s->n - 1;
  double base = range_b(s, k, last) + range_h(s, k, i) + range_h(s, i + 1, last);
  double cases = later(range_b(s, k, i) + range_h(s, k, i), delay) + range_g(s, k, i) +
                 range_g(s, i + 1, last);
  if (s->rules & AX_FUSION_RULE_TAIL)
    base += i == last ? range_g(s, k, last) : range_g(s, last, last);
  return comp + later(base, cases);
}

/* The first entry of more than `groups` groups. */
static int frontier_after(const Frontier *f, int groups) {
  int lo = 0, hi = f->len;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (f->groups[mid] <= groups)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int frontier_grow(Frontier *f) {
  int cap = f->cap ? 2 * f->cap : 8;
  int *g = ax_malloc((size_t)cap * sizeof *g);
  double *c = ax_malloc((size_t)cap * sizeof *c);
  if (!g || !c) {
    free(g), free(c);
    return AX_ERR;
  }
  if (f->len) {
    memcpy(g, f->groups, (size_t)f->len * sizeof *g);
    memcpy(c, f->comm, (size_t)f->len * sizeof *c);
  }
  free(f->groups), free(f->comm);
  f->groups = g, f->comm = c, f->cap = cap;
  return AX_OK;
}

/* The dominance rule: 1 when a partial grouping in no more groups, whose network was free no
 * later, was searched already; otherwise 0, and this one is remembered in place of those it
 * dominates (-1: out of memory). */
static int dominated(Frontier *f, int groups, double comm) {
  int p = frontier_after(f, groups), q;
  if (p > 0 && f->comm[p - 1] <= comm) return 1;
  if (p > 0 && f->groups[p - 1] == groups) p--; /* same groups, later network: replaced */
  for (q = p; q < f->len && f->comm[q] >= comm;) q++;
  if (q == p && f->len == f->cap && frontier_grow(f) != AX_OK) return -1;
  int shift = 1 - (q - p); /* entries p..q-1 give way to the new one */
  memmove(f->groups + q + shift, f->groups + q, (size_t)(f->len - q) * sizeof *f->groups);
  memmove(f->comm + q + shift, f->comm + q, (size_t)(f->len - q) * sizeof *f->comm);
  f->groups[p] = groups, f->comm[p] = comm, f->len += shift;
  return 0;
}

static void leaf(Search *s, int depth, double time) {
  s->st.leaves++;
  if (time < s->best_time) {
    s->best_time = time;
    s->best_groups = depth;
    memcpy(s->best, s->path, (size_t)depth * sizeof *s->best);
  }
}

static int out_of_nodes(Search *s) {
  if (s->max_nodes > 0 && s->st.nodes >= s->max_nodes) s->stopped = 1;
  return s->stopped;
}

/* Whether the first group T_k..T_i is searched: rule 1. */
static int worth_trying(Search *s, int k, int i, Timeline t) {
  if (!(s->rules & AX_FUSION_RULE_BOUND) ||
      optimistic(s, k, i, t.comp, t.comm - t.comp) <= s->best_time)
    return 1;
  s->st.pruned_bound++;
  return 0;
}

/* FindOptFusion(M, k): M is path[0..depth-1] and its timeline t; T_k starts the next group. */
static int find_opt_fusion(Search *s, int k, int depth, Timeline t) {
  s->st.nodes++;
  if (k == s->n) {
    leaf(s, depth, t.comm);
    return AX_OK;
  }
  if (s->rules & AX_FUSION_RULE_DOMINANCE) {
    int d = dominated(&s->frontier[k], depth, t.comm);
    if (d < 0) return AX_ERR;
    if (d) {
      s->st.pruned_dominated++;
      return AX_OK;
    }
  }
  int jstar = s->rules & AX_FUSION_RULE_JSTAR ? first_end(s, k, t.comm - t.comp) : k;
  s->st.pruned_jstar += jstar - k;
  for (int i = s->n - 1; i >= jstar && !out_of_nodes(s); i--) { /* longest first: see .h */
    if (!worth_trying(s, k, i, t)) continue;
    s->path[depth] = i + 1;
    AX_TRY(find_opt_fusion(s, i + 1, depth + 1,
                           add_group(s->job, t, range_b(s, k, i), range_x(s, k, i))));
  }
  return AX_OK;
}

/* A starting incumbent: `groups` groups of (nearly) equal tensor counts. */
static void try_even_groups(Search *s, int groups) {
  for (int a = 0; a < groups; a++) s->path[a] = (int)((long long)s->n * (a + 1) / groups);
  double cost;
  ax_fusion_cost(s->job, s->path, groups, &cost); /* the job is checked: cannot fail */
  leaf(s, groups, cost - s->job->forward_s);
}

/* The bootstrap of global_opt_fuse (§5.3.2, "in practice"): the best of every tensor alone,
 * all fused, and two halves. */
static void bootstrap(Search *s) {
  try_even_groups(s, s->n);
  try_even_groups(s, 1);
  if (s->n >= 2) try_even_groups(s, 2);
  s->st.leaves = 0;
}

static int search_init(Search *s, const AxFusionJob *job, int rules, long long max_nodes) {
  memset(s, 0, sizeof *s);
  s->job = job;
  s->n = job->n;
  s->rules = rules;
  s->max_nodes = max_nodes;
  s->best_time = INFINITY;
  s->pb = ax_calloc((size_t)job->n + 1, sizeof *s->pb);
  s->px = ax_calloc((size_t)job->n + 1, sizeof *s->px);
  s->path = ax_calloc((size_t)job->n, sizeof *s->path);
  s->best = ax_calloc((size_t)job->n, sizeof *s->best);
  s->frontier = ax_calloc((size_t)job->n, sizeof *s->frontier);
  if (!s->pb || !s->px || !s->path || !s->best || !s->frontier) return AX_ERR;
  for (int i = 0; i < job->n; i++) {
    s->pb[i + 1] = s->pb[i] + job->tensors[i].backward_s;
    s->px[i + 1] = s->px[i] + (double)job->tensors[i].bytes;
  }
  return AX_OK;
}

static void search_free(Search *s) {
  for (int k = 0; s->frontier && k < s->n; k++) {
    free(s->frontier[k].groups);
    free(s->frontier[k].comm);
  }
  free(s->frontier);
  free(s->pb);
  free(s->px);
  free(s->path);
  free(s->best);
}

/* The best grouping, its cost by the reference ax_fusion_cost, and the counts. */
static int search_result(Search *s, int *group_end, int *n_groups, double *cost,
                         AxFusionStats *stats) {
  memcpy(group_end, s->best, (size_t)s->best_groups * sizeof *group_end);
  *n_groups = s->best_groups;
  if (stats) *stats = s->st;
  return ax_fusion_cost(s->job, group_end, *n_groups, cost);
}

int ax_fusion_search(const AxFusionJob *job, const AxFusionSearchOpts *opts, int *group_end,
                     int *n_groups, double *cost, AxFusionStats *stats) {
  AxFusionSearchOpts o = opts ? *opts : (AxFusionSearchOpts){AX_FUSION_ALL_RULES, 0};
  AX_TRY(check_job(job));
  if (o.max_nodes < 0) return AX_FAIL("fusion: max_nodes %lld: expected >= 0", o.max_nodes);
  if (o.rules & ~AX_FUSION_ALL_RULES) return AX_FAIL("fusion: unknown rules 0x%x", o.rules);
  Search s;
  int rc = search_init(&s, job, o.rules, o.max_nodes);
  if (rc == AX_OK) {
    bootstrap(&s);
    /* Main(): every x_0, as FindOptFusion({}, 0) with M.comp = M.delay = 0 */
    rc = find_opt_fusion(&s, 0, 0, (Timeline){0, 0});
  }
  if (rc == AX_OK) {
    s.st.optimal = !s.stopped;
    rc = search_result(&s, group_end, n_groups, cost, stats);
  }
  search_free(&s);
  return rc;
}

/* ---------------------------------------------------------------- brute force */

/* Grouping number `mask`: bit b set = a group ends after tensor b (b < n-1). */
static void walk_mask(Search *s, unsigned mask) {
  Timeline t = {0, 0};
  int depth = 0;
  for (int k = 0, i = 0; i < s->n; i++) {
    if (i < s->n - 1 && !(mask >> i & 1u)) continue;
    t = add_group(s->job, t, range_b(s, k, i), range_x(s, k, i));
    s->path[depth++] = k = i + 1;
  }
  s->st.nodes++;
  leaf(s, depth, t.comm);
}

int ax_fusion_brute_force(const AxFusionJob *job, int *group_end, int *n_groups, double *cost,
                          AxFusionStats *stats) {
  AX_TRY(check_job(job));
  if (job->n > AX_FUSION_BRUTE_MAX)
    return AX_FAIL("fusion: brute force over %d tensors: up to %d", job->n, AX_FUSION_BRUTE_MAX);
  Search s;
  int rc = search_init(&s, job, 0, 0);
  if (rc == AX_OK) {
    for (unsigned mask = 0; mask < 1u << (job->n - 1); mask++) walk_mask(&s, mask);
    s.st.optimal = 1;
    rc = search_result(&s, group_end, n_groups, cost, stats);
  }
  search_free(&s);
  return rc;
}

/* ---------------------------------------------------------------- fixed buckets, --fusion */

int ax_fusion_fixed_bytes(const AxFusionJob *job, long long max_bytes, int *group_end,
                          int *n_groups) {
  AX_TRY(check_job(job));
  if (max_bytes < 0) return AX_FAIL("fusion: groups of up to %lld bytes", max_bytes);
  int groups = 0;
  long long fill = 0;
  for (int i = 0; i < job->n; i++) {
    long long x = job->tensors[i].bytes;
    if (i > 0 && (fill > max_bytes - x || max_bytes == 0)) {
      group_end[groups++] = i;
      fill = 0;
    }
    fill += x;
  }
  group_end[groups++] = job->n;
  *n_groups = groups;
  return AX_OK;
}

int ax_fusion_parse(const char *text, AxFusionSpec *spec) {
  long long bytes = 0;
  spec->bytes = 0;
  if (text && strcmp(text, "auto") == 0) {
    spec->mode = AX_FUSION_AUTO;
  } else if (text && strcmp(text, "none") == 0) {
    spec->mode = AX_FUSION_NONE;
  } else if (text && ax_options_read_int(text, NULL, 1, &bytes) == AX_INT_OK && bytes >= 1) {
    spec->mode = AX_FUSION_BYTES;
    spec->bytes = bytes;
  } else {
    return AX_FAIL("--fusion expects auto, none or a byte count of at least 1 (K, M, G "
                   "suffixes), got '%s'", text ? text : "");
  }
  return AX_OK;
}

int ax_fusion_plan(const AxFusionJob *job, const AxFusionSpec *spec, int *group_end,
                   int *n_groups, double *cost, AxFusionStats *stats) {
  switch (spec->mode) {
  case AX_FUSION_AUTO:
    return ax_fusion_search(job, &(AxFusionSearchOpts){AX_FUSION_ALL_RULES,
                                                       AX_FUSION_AUTO_MAX_NODES},
                            group_end, n_groups, cost, stats);
  case AX_FUSION_NONE:
    AX_TRY(ax_fusion_fixed_bytes(job, 0, group_end, n_groups));
    break;
  case AX_FUSION_BYTES:
    if (spec->bytes < 1) return AX_FAIL("--fusion %lld: expected at least 1 byte", spec->bytes);
    AX_TRY(ax_fusion_fixed_bytes(job, spec->bytes, group_end, n_groups));
    break;
  default:
    return AX_FAIL("fusion: unknown mode %d", (int)spec->mode);
  }
  return ax_fusion_cost(job, group_end, *n_groups, cost);
}
