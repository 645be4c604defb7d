/* espresso_exhaustive.c — the best strategy over every applicable option of every tensor, for
 * the small instances the tests compare Espresso's greedy choice with (wang-thesis §4.7.1's
 * brute force, O(|C|^N)): a depth-first search over the tensors in backward order, extending
 * the timeline one tensor at a time, exact, with two prunings that never lose the optimum:
 *  - a lower bound on F of any completion reaches the best F found (the incumbent starts as
 *    Espresso's choice);
 *  - a timeline already met at the same depth: two timelines whose future is the same (the
 *    same computation end, the same links' and devices' times as far as tensors still to come
 *    can see them) have the same best completion, so the second is not searched again. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "espresso_internal.h"
#include "src/core/error.h"

enum {
  LAMBDA_STEPS = 4, LAMBDAS = 35, /* weights in quarters over 4 resources: C(7, 3) */
  MEMO_SLOTS = 1 << 19,           /* timelines remembered, at most */
  MEMO_ARENA = 1 << 22,           /* doubles of their keys, at most */
};

/* The timelines met: open addressing on a hash, keys compared in full. */
typedef struct {
  uint64_t *hash; /* 0: empty */
  size_t *at;     /* the key's place in arena: its length, then the key */
  double *arena;
  size_t used, len;
} Memo;

typedef struct {
  AxEspressoCtx *c;
  AxEspressoState *st; /* n + 1: the timeline after tensors 0..k-1 */
  int *cur, *best;
  double best_f, last_chain;
  int opts[AX_ESPRESSO_N_OPTIONS], n_opts;
  double lambda[LAMBDAS][4]; /* weights of the intra link, the inter link, the GPU, the CPU */
  double *lsuf;              /* LAMBDAS * (n + 1): tensors k.. at their least weighted use */
  double *key;               /* scratch for one key */
  Memo memo;
} Dfs;

/* ------------------------------------------------------------------ the bound */

/* Busy time of b after t. */
static double busy_after(const AxEspressoBusy *b, double t) {
  double sum = 0;
  for (int i = b->head; i < b->len; i++) sum += fmax(0, b->v[i].e - fmax(b->v[i].s, t));
  return sum;
}

/* Every resource is busy, from when it can next take tensor k's work, for at least what is
 * queued on it and what tensors k.. need of it: the links from when they are free, the GPU
 * from the computation's end with the computation and codec work to come, the CPU from the
 * same time. F is at least each of these, so at least any weighted mean of them, and the least
 * use of tensors k.. under the weights is a sum of per-tensor minima. F is also at least the
 * computation's end plus the last tensor's shortest stages. */
static double bound(const Dfs *d, int k) {
  const AxEspressoState *s = &d->st[k];
  double rest = d->c->suf_compute[k];
  double base[4] = {s->link_free[0], s->link_free[1],
                    s->compute_end + rest + busy_after(&s->dev[ESP_GPU], s->compute_end),
                    s->compute_end + busy_after(&s->dev[ESP_CPU], s->compute_end)};
  double lb = fmax(s->latest, k < d->c->n ? s->compute_end + rest + d->last_chain : 0);
  for (int m = 0; m < LAMBDAS; m++) {
    double v = d->lsuf[m * (d->c->n + 1) + k];
    for (int r = 0; r < 4; r++) v += d->lambda[m][r] * base[r];
    lb = fmax(lb, v);
  }
  return lb;
}

/* The weighted use of tensor i under option o. */
static double weighted(const AxEspressoCtx *c, const double *w, int i, int o) {
  size_t cell = ESP_AT(c, i, o);
  return w[0] * c->link[0][cell] + w[1] * c->link[1][cell] + w[2] * c->work[ESP_GPU][cell] +
         w[3] * c->work[ESP_CPU][cell];
}

static void make_bounds(Dfs *d) {
  AxEspressoCtx *c = d->c;
  int n = c->n, m = 0;
  for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++)
    if ((c->ok >> o) & 1u) d->opts[d->n_opts++] = o;
  d->last_chain = INFINITY;
  for (int j = 0; j < d->n_opts; j++)
    d->last_chain = fmin(d->last_chain, c->chain[ESP_AT(c, n - 1, d->opts[j])]);
  for (int a = 0; a <= LAMBDA_STEPS; a++)
    for (int b = 0; a + b <= LAMBDA_STEPS; b++)
      for (int g = 0; a + b + g <= LAMBDA_STEPS; g++, m++) {
        double *w = d->lambda[m], *suf = d->lsuf + m * (n + 1);
        w[0] = a, w[1] = b, w[2] = g, w[3] = LAMBDA_STEPS - a - b - g;
        for (int r = 0; r < 4; r++) w[r] /= LAMBDA_STEPS;
        suf[n] = 0;
        for (int k = n - 1; k >= 0; k--) {
          double least = INFINITY;
          for (int j = 0; j < d->n_opts; j++) least = fmin(least, weighted(c, w, k, d->opts[j]));
          suf[k] = suf[k + 1] + least;
        }
      }
}

/* ------------------------------------------------------------------ timelines met */

/* Spans of b after t, clipped to it, appended to key at *len. */
static void key_spans(double *key, size_t *len, const AxEspressoBusy *b, double t) {
  size_t count = (*len)++;
  key[count] = 0;
  for (int i = b->head; i < b->len; i++)
    if (b->v[i].e > t) key[(*len)++] = fmax(b->v[i].s, t), key[(*len)++] = b->v[i].e, key[count]++;
}

/* What the tensors k.. can see of the timeline after tensors 0..k-1: every stage of theirs is
 * ready after tensor k's computation, the computation runs from compute_end, and F is at least
 * the computation's end plus the last tensor's shortest stages. */
static size_t make_key(const Dfs *d, int k) {
  const AxEspressoState *s = &d->st[k];
  double ready = s->compute_end + d->c->p->compute_s[k];
  double floor_f = s->compute_end + d->c->suf_compute[k] + d->last_chain;
  size_t len = 0;
  d->key[len++] = k;
  d->key[len++] = s->compute_end;
  d->key[len++] = fmax(s->link_free[0], ready);
  d->key[len++] = fmax(s->link_free[1], ready);
  d->key[len++] = fmax(s->latest, floor_f);
  key_spans(d->key, &len, &s->dev[ESP_GPU], s->compute_end);
  key_spans(d->key, &len, &s->dev[ESP_CPU], ready);
  return len;
}

static uint64_t fnv(const double *key, size_t len) {
  const unsigned char *b = (const unsigned char *)key;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len * sizeof *key; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h ? h : 1;
}

/* 1 when this key was met before; otherwise remembers it (while there is room) and 0. */
static int met_before(Memo *m, const double *key, size_t len) {
  uint64_t h = fnv(key, len);
  size_t slot = h & (MEMO_SLOTS - 1);
  for (; m->hash[slot]; slot = (slot + 1) & (MEMO_SLOTS - 1))
    if (m->hash[slot] == h && m->arena[m->at[slot]] == (double)len &&
        !memcmp(m->arena + m->at[slot] + 1, key, len * sizeof *key))
      return 1;
  if (2 * m->used >= MEMO_SLOTS || m->len + len + 1 > MEMO_ARENA) return 0;
  m->hash[slot] = h;
  m->at[slot] = m->len;
  m->arena[m->len] = (double)len;
  memcpy(m->arena + m->len + 1, key, len * sizeof *key);
  m->len += len + 1;
  m->used++;
  return 0;
}

/* ------------------------------------------------------------------ the search */

static void dfs(Dfs *d, int k) {
  int n = d->c->n;
  if (k == n) {
    d->c->evaluations++;
    if (d->st[n].latest < d->best_f)
      d->best_f = d->st[n].latest, memcpy(d->best, d->cur, (size_t)n * sizeof(int));
    return;
  }
  if (bound(d, k) >= d->best_f) return;
  if (k > 0 && met_before(&d->memo, d->key, make_key(d, k))) return;
  for (int j = 0; j < d->n_opts; j++) {
    ax_espresso_state_copy(&d->st[k + 1], &d->st[k]);
    ax_espresso_step(d->c, &d->st[k + 1], k, d->opts[j], NULL);
    d->cur[k] = d->opts[j];
    dfs(d, k + 1);
  }
}

static int dfs_open(Dfs *d, AxEspressoCtx *c) {
  int n = c->n;
  size_t spans = 2 * (size_t)(n * (ESP_MAX_STAGES + 1) + 2);
  d->st = ax_calloc((size_t)n + 1, sizeof *d->st);
  d->cur = ax_calloc((size_t)n, sizeof *d->cur);
  d->lsuf = ax_calloc(LAMBDAS * ((size_t)n + 1), sizeof *d->lsuf);
  d->key = ax_calloc(8 + 4 * spans, sizeof *d->key);
  d->memo.hash = ax_calloc(MEMO_SLOTS, sizeof *d->memo.hash);
  d->memo.at = ax_calloc(MEMO_SLOTS, sizeof *d->memo.at);
  d->memo.arena = ax_calloc(MEMO_ARENA, sizeof *d->memo.arena);
  if (!d->st || !d->cur || !d->lsuf || !d->key || !d->memo.hash || !d->memo.at ||
      !d->memo.arena)
    return AX_ERR;
  for (int k = 0; k <= n; k++) AX_TRY(ax_espresso_state_new(c, &d->st[k]));
  return AX_OK;
}

static void dfs_close(Dfs *d, int n) {
  for (int k = 0; d->st && k <= n; k++) ax_espresso_state_free(&d->st[k]);
  free(d->st);
  free(d->cur);
  free(d->lsuf);
  free(d->key);
  free(d->memo.hash);
  free(d->memo.at);
  free(d->memo.arena);
}

int ax_espresso_ctx_exhaustive(AxEspressoCtx *c, int *S, double f, double *seconds) {
  Dfs d = {.c = c, .best = S, .best_f = f};
  int rc = dfs_open(&d, c);
  if (rc == AX_OK) {
    make_bounds(&d);
    dfs(&d, 0);
    *seconds = d.best_f;
  }
  dfs_close(&d, c->n);
  return rc;
}
