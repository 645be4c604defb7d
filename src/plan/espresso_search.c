/* espresso_search.c — Espresso's decision algorithm (wang-thesis §4.7): compress-nothing, the
 * greedy GPU compression of Algorithm 4.1 with its Remove() step, the CPU offloading of
 * Algorithm 4.2 and ax_espresso_decide, all on the timeline model of espresso.c, and the entry
 * to the exhaustive search (espresso_exhaustive.c) the tests hold them to. Pure computation.
 *
 * Where the thesis leaves room, this module reads it so:
 *  - C_gpu, the candidates of GetBestOption(), is every applicable option that uses no CPU:
 *    the GPU-compressed ones and the uncompressed schemes (ring/rhd, flat/two-level), since our
 *    "no compression" has several schemes; the tensor's current option is candidate 0 and a
 *    candidate replaces it only when its F is strictly smaller (ties: the earlier in the
 *    table), so F never rises.
 *  - compress-nothing, the initial S, gives each tensor its uncompressed option with the least
 *    stage time.
 *  - Remove(): a bubble is a gap before tensor k's first link stage after the previous
 *    tensor's last one (longer than 1e-9 F); the uncompressed tensors before the LAST bubble
 *    leave G for good (compressing any of them only widens a gap). Removed tensors keep their
 *    option.
 *  - the groups of Line 39 are tensors of exactly equal bytes; within one, ascending distance
 *    to the output layer is ascending backward index.
 *  - Alg. 4.2: a group is the GPU-compressed tensors of one size and one option whose CPU twin
 *    applies, the farthest from the output layer (highest index) offloaded first (Lemma 4.1);
 *    every U is tried when there are at most AX_ESPRESSO_OFFLOAD_ENUM_MAX of them (Theorem
 *    4.1), otherwise coordinate descent over the u_i from U = 0 until a pass improves nothing
 *    (at most 8 passes) — the thesis's product is too large for a model of many equal layers.
 * Evaluations of candidates are cut off once a lower bound (the links' remaining work in
 * order, the remaining computation) reaches the best F so far: the result is the same. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "espresso_internal.h"
#include "src/core/error.h"
#include "src/core/timer.h"

enum { DESCENT_PASSES = 8, REFINE_MIN_EVALS = 4096, PAIR_MAX = 12 };

typedef struct {
  AxEspressoCtx c;
  AxEspressoState run, pre;
  int *S, *removed, *order;
  AxEspressoDecision *rec;
} Search;

static int applies(const AxEspressoCtx *c, int o) { return (c->ok >> o) & 1u; }
static AxEspressoPlace place_of(int o) { return ax_espresso_option(o)->place; }

static void search_close(Search *w) {
  ax_espresso_state_free(&w->run);
  ax_espresso_state_free(&w->pre);
  free(w->S);
  free(w->removed);
  free(w->order);
  free(w->rec);
  ax_espresso_ctx_free(&w->c);
}

static int search_open(Search *w, const AxEspressoProblem *p) {
  memset(w, 0, sizeof *w);
  AX_TRY(ax_espresso_ctx_init(&w->c, p));
  size_t n = (size_t)p->n;
  w->S = ax_calloc(n, sizeof *w->S);
  w->removed = ax_calloc(n, sizeof *w->removed);
  w->order = ax_calloc(n, sizeof *w->order);
  w->rec = ax_calloc(n, sizeof *w->rec);
  int rc = w->S && w->removed && w->order && w->rec ? AX_OK : AX_ERR;
  if (rc == AX_OK) rc = ax_espresso_state_new(&w->c, &w->run);
  if (rc == AX_OK) rc = ax_espresso_state_new(&w->c, &w->pre);
  if (rc != AX_OK) search_close(w);
  return rc;
}

/* ------------------------------------------------------------------ compress nothing */

static void nothing(const AxEspressoCtx *c, int *S) {
  for (int i = 0; i < c->n; i++) {
    int best = -1;
    for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++)
      if (applies(c, o) && place_of(o) == AX_ESP_PLAIN &&
          (best < 0 || c->chain[ESP_AT(c, i, o)] < c->chain[ESP_AT(c, i, best)]))
        best = o;
    S[i] = best;
  }
}

/* ------------------------------------------------------------------ Algorithm 4.1 */

/* Remove(S, G): S's timeline; the uncompressed tensors sent before its last bubble leave G.
 * Returns F(S). */
static double remove_before_bubbles(Search *w) {
  double f = ax_espresso_eval(&w->c, &w->run, w->S, INFINITY, w->rec);
  if (w->c.p->ranks <= 1) return f;
  int last = -1;
  for (int k = 1; k < w->c.n; k++)
    if (w->rec[k].comm_start_s - w->rec[k - 1].comm_end_s > 1e-9 * f) last = k;
  for (int i = 0; i < last; i++)
    if (place_of(w->S[i]) == AX_ESP_PLAIN) w->removed[i] = 1;
  return f;
}

/* GetBestOption(S, idx): S[idx] becomes the candidate of least F (the current option unless
 * one is strictly better); f is F(S) on entry; returns F of the new S. The candidates are
 * C_gpu (C_cpu where the problem has no GPU engine), or with cpu_too every applicable option
 * (our refinement). */
static double best_option(Search *w, int idx, double f, int cpu_too) {
  AxEspressoCtx *c = &w->c;
  int *S = w->S, n = c->n, keep = S[idx], best = keep;
  ax_espresso_suffix(c, S);
  ax_espresso_state_reset(&w->pre);
  for (int k = 0; k < idx; k++) ax_espresso_step(c, &w->pre, k, S[k], NULL);
  for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++) {
    if (!applies(c, o) || (place_of(o) == AX_ESP_CPU && !cpu_too && !c->p->cpu_only) ||
        o == keep)
      continue;
    S[idx] = o;
    c->suf[idx] = c->suf[idx + 1] + c->link[0][ESP_AT(c, idx, o)];
    c->suf[n + 1 + idx] = c->suf[n + 2 + idx] + c->link[1][ESP_AT(c, idx, o)];
    ax_espresso_state_copy(&w->run, &w->pre);
    double g = ax_espresso_run(c, &w->run, S, idx, f, NULL);
    if (g < f) f = g, best = o;
  }
  S[idx] = best;
  return f;
}

typedef struct {
  double bytes;
  int index;
} BySize;

/* Lines 39-40: descending size, then ascending distance to the output layer. */
static int by_size(const void *a, const void *b) {
  const BySize *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return x->index - y->index;
}

static int size_order(Search *w) {
  int n = w->c.n;
  BySize *v = ax_calloc((size_t)n, sizeof *v);
  if (!v) return AX_ERR;
  for (int i = 0; i < n; i++) v[i] = (BySize){w->c.p->bytes[i], i};
  qsort(v, (size_t)n, sizeof *v, by_size);
  for (int i = 0; i < n; i++) w->order[i] = v[i].index;
  free(v);
  return AX_OK;
}

/* Main() of Algorithm 4.1 from compress-nothing; *f gets F of the result. */
static int greedy(Search *w, double *f) {
  nothing(&w->c, w->S);
  memset(w->removed, 0, (size_t)w->c.n * sizeof *w->removed);
  AX_TRY(size_order(w));
  *f = remove_before_bubbles(w);
  for (int k = 0; k < w->c.n; k++) {
    int t = w->order[k];
    if (w->removed[t]) continue;
    *f = best_option(w, t, *f, 0);
    *f = remove_before_bubbles(w);
  }
  return AX_OK;
}

/* ------------------------------------------------------------------ Algorithm 4.2 */

typedef struct {
  int option; /* the GPU option */
  double bytes;
  int index;
} Member;

static int by_group(const void *a, const void *b) {
  const Member *x = a, *y = b;
  if (x->option != y->option) return x->option - y->option;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  return y->index - x->index; /* the farthest from the output layer first */
}

typedef struct {
  Member *m;
  int *start, *size, *u, *best; /* per group */
  int groups;
} Groups;

static void groups_free(Groups *g) {
  free(g->m);
  free(g->start);
  free(g->size);
  free(g->u);
  free(g->best);
}

/* T_gpu grouped by (option, size); AX_OK with no groups when nothing can move. */
static int groups_make(const Search *w, Groups *g) {
  const AxEspressoCtx *c = &w->c;
  int n = c->n, k = 0;
  memset(g, 0, sizeof *g);
  g->m = ax_calloc((size_t)n, sizeof *g->m);
  g->start = ax_calloc((size_t)n + 1, sizeof(int));
  g->size = ax_calloc((size_t)n, sizeof(int));
  g->u = ax_calloc((size_t)n, sizeof(int));
  g->best = ax_calloc((size_t)n, sizeof(int));
  if (!g->m || !g->start || !g->size || !g->u || !g->best) return AX_ERR;
  for (int i = 0; i < n; i++)
    if (place_of(w->S[i]) == AX_ESP_GPU && applies(c, w->S[i] + AX_ESPRESSO_CPU_TWIN))
      g->m[k++] = (Member){w->S[i], c->p->bytes[i], i};
  qsort(g->m, (size_t)k, sizeof *g->m, by_group);
  for (int i = 0; i < k; i++) {
    if (i == 0 || g->m[i].option != g->m[i - 1].option || g->m[i].bytes != g->m[i - 1].bytes)
      g->start[g->groups++] = i;
    g->size[g->groups - 1]++;
  }
  g->start[g->groups] = k;
  return AX_OK;
}

/* The first u[j] tensors of group j on the CPU, the others on the GPU. */
static void apply_u(int *S, const Groups *g, const int *u) {
  for (int j = 0; j < g->groups; j++)
    for (int k = 0; k < g->size[j]; k++) {
      const Member *m = &g->m[g->start[j] + k];
      S[m->index] = m->option + (k < u[j] ? AX_ESPRESSO_CPU_TWIN : 0);
    }
}

/* F of U = g->u if below f (then g->best = U); returns the lesser. */
static double try_u(Search *w, Groups *g, double f) {
  apply_u(w->S, g, g->u);
  double h = ax_espresso_eval(&w->c, &w->run, w->S, f, NULL);
  if (h < f) memcpy(g->best, g->u, (size_t)g->groups * sizeof(int));
  return h < f ? h : f;
}

/* Theorem 4.1: every U, as an odometer from U = 0 (whose F is f). */
static double enumerate(Search *w, Groups *g, double f) {
  for (;;) {
    int j = 0;
    while (j < g->groups && ++g->u[j] > g->size[j]) g->u[j++] = 0;
    if (j == g->groups) return f;
    f = try_u(w, g, f);
  }
}

/* Too many U: one u_j at a time, the others at their best, until a pass gains nothing. */
static double descend(Search *w, Groups *g, double f) {
  int improved = 1;
  for (int pass = 0; improved && pass < DESCENT_PASSES; pass++) {
    improved = 0;
    for (int j = 0; j < g->groups; j++)
      for (int u = 0; u <= g->size[j]; u++) {
        if (u == g->best[j]) continue;
        memcpy(g->u, g->best, (size_t)g->groups * sizeof(int));
        g->u[j] = u;
        double h = try_u(w, g, f);
        if (h < f) f = h, improved = 1;
      }
  }
  return f;
}

/* Algorithm 4.2 on w->S, whose F is f; returns F of the result. */
static int offload(Search *w, double *f) {
  Groups g;
  int rc = groups_make(w, &g);
  if (rc == AX_OK && g.groups > 0) {
    double count = 1;
    for (int j = 0; j < g.groups; j++) count *= g.size[j] + 1.0;
    *f = count <= AX_ESPRESSO_OFFLOAD_ENUM_MAX ? enumerate(w, &g, *f) : descend(w, &g, *f);
    apply_u(w->S, &g, g.best);
  }
  groups_free(&g);
  return rc;
}

/* ------------------------------------------------------------------ the API */

int ax_espresso_nothing(const AxEspressoProblem *p, int *choices) {
  AxEspressoCtx c;
  if (!choices) return AX_FAIL("espresso: no room for the choices");
  AX_TRY(ax_espresso_ctx_init(&c, p));
  nothing(&c, choices);
  ax_espresso_ctx_free(&c);
  return AX_OK;
}

int ax_espresso_greedy(const AxEspressoProblem *p, int *choices, int *removed) {
  Search w;
  double f;
  if (!choices) return AX_FAIL("espresso: no room for the choices");
  AX_TRY(search_open(&w, p));
  int rc = greedy(&w, &f);
  if (rc == AX_OK) memcpy(choices, w.S, (size_t)p->n * sizeof *choices);
  if (rc == AX_OK && removed) memcpy(removed, w.removed, (size_t)p->n * sizeof *removed);
  search_close(&w);
  return rc;
}

int ax_espresso_offload(const AxEspressoProblem *p, int *choices) {
  Search w;
  AX_TRY(search_open(&w, p));
  int rc = ax_espresso_check_choices(&w.c, choices);
  if (rc == AX_OK) {
    memcpy(w.S, choices, (size_t)p->n * sizeof *choices);
    double f = ax_espresso_eval(&w.c, &w.run, w.S, INFINITY, NULL);
    rc = offload(&w, &f);
  }
  if (rc == AX_OK) memcpy(choices, w.S, (size_t)p->n * sizeof *choices);
  search_close(&w);
  return rc;
}

/* Ours, after Alg. 4.2: one tensor's option at a time, any applicable one (a tensor Remove()
 * ruled out, a CPU placement with another scheme than its GPU twin's), kept when F falls
 * strictly; passes until one changes nothing (at most DESCENT_PASSES), within a budget of
 * timelines (REFINE_MIN_EVALS, or twice what Alg. 4.1 and 4.2 evaluated: a count, so the
 * result does not depend on the machine's speed), which keeps a 48-layer model's decision
 * well under a second. F never rises. */
static void refine(Search *w, double *f) {
  long long budget = w->c.evaluations * 3;
  if (budget < REFINE_MIN_EVALS + w->c.evaluations) budget = REFINE_MIN_EVALS + w->c.evaluations;
  for (int pass = 0, changed = 1; changed && pass < DESCENT_PASSES; pass++) {
    changed = 0;
    for (int i = 0; i < w->c.n && w->c.evaluations < budget; i++) {
      int keep = w->S[i];
      *f = best_option(w, i, *f, 1);
      changed |= w->S[i] != keep;
    }
  }
}

/* Ours, on small problems (n <= PAIR_MAX): two tensors' options at once, what one tensor at
 * a time cannot reach when each move alone is worse (with refine, it brings Espresso within
 * 5% of exhaustive search on every instance tests/test_espresso.c has tried). F never rises. */
static void refine_pairs(Search *w, double *f) {
  AxEspressoCtx *c = &w->c;
  for (int i = 0; i < c->n; i++)
    for (int j = i + 1; j < c->n; j++) {
      int bi = w->S[i], bj = w->S[j], ki = bi, kj = bj;
      for (int oi = 0; oi < AX_ESPRESSO_N_OPTIONS; oi++) {
        if (!applies(c, oi)) continue;
        for (int oj = 0; oj < AX_ESPRESSO_N_OPTIONS; oj++) {
          if (!applies(c, oj) || (oi == ki && oj == kj)) continue;
          w->S[i] = oi, w->S[j] = oj;
          double g = ax_espresso_eval(c, &w->run, w->S, *f, NULL);
          if (g < *f) *f = g, bi = oi, bj = oj;
        }
      }
      w->S[i] = bi, w->S[j] = bj;
    }
}

/* Espresso on w: Alg. 4.1, 4.2 and our refinement, with the F of each step in sum. */
static int espresso(Search *w, AxEspressoSummary *sum) {
  nothing(&w->c, w->S);
  sum->nothing_s = ax_espresso_eval(&w->c, &w->run, w->S, INFINITY, NULL);
  AX_TRY(greedy(w, &sum->greedy_s));
  sum->iteration_s = sum->greedy_s;
  AX_TRY(offload(w, &sum->iteration_s));
  refine(w, &sum->iteration_s);
  if (w->c.n <= PAIR_MAX) {
    refine_pairs(w, &sum->iteration_s);
    refine(w, &sum->iteration_s);
  }
  return AX_OK;
}

int ax_espresso_exhaustive(const AxEspressoProblem *p, int *choices, double *seconds) {
  Search w;
  AxEspressoSummary sum;
  double f = 0;
  if (!choices) return AX_FAIL("espresso: no room for the choices");
  AX_TRY(ax_espresso_check(p));
  if (p->n > AX_ESPRESSO_EXHAUSTIVE_MAX)
    return AX_FAIL("espresso: exhaustive search of %d tensors, at most %d", p->n,
                   AX_ESPRESSO_EXHAUSTIVE_MAX);
  AX_TRY(search_open(&w, p));
  int rc = espresso(&w, &sum);
  if (rc == AX_OK) rc = ax_espresso_ctx_exhaustive(&w.c, w.S, sum.iteration_s, &f);
  if (rc == AX_OK) memcpy(choices, w.S, (size_t)p->n * sizeof *choices);
  if (rc == AX_OK && seconds) *seconds = f;
  search_close(&w);
  return rc;
}

static void summarize(const Search *w, AxEspressoDecision *out, AxEspressoSummary *sum) {
  sum->compressed = sum->offloaded = sum->removed = 0;
  for (int i = 0; i < w->c.n; i++) {
    out[i].removed = w->removed[i];
    sum->compressed += place_of(out[i].option) != AX_ESP_PLAIN;
    sum->offloaded += place_of(out[i].option) == AX_ESP_CPU;
    sum->removed += w->removed[i];
  }
  sum->evaluations = w->c.evaluations;
}

int ax_espresso_decide(const AxEspressoProblem *p, AxEspressoDecision *out,
                       AxEspressoSummary *sum) {
  double t0 = ax_now();
  Search w;
  AxEspressoSummary local;
  if (!out) return AX_FAIL("espresso: no room for the decisions");
  if (!sum) sum = &local;
  memset(sum, 0, sizeof *sum);
  AX_TRY(search_open(&w, p));
  int rc = espresso(&w, sum);
  if (rc == AX_OK) {
    ax_espresso_eval(&w.c, &w.run, w.S, INFINITY, out);
    summarize(&w, out, sum);
  }
  search_close(&w);
  sum->decide_s = ax_now() - t0;
  return rc;
}
