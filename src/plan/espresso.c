/* espresso.c — Espresso's option table (the decision tree's leaves, wang-thesis §4.5), the
 * stages and costs of every option (§4.6), and the timeline model of one iteration that
 * evaluates a strategy (ax_espresso_iteration_time, the reference for the searches of
 * espresso_search.c); see espresso.h for the model. Pure computation. */
#include "espresso.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "espresso_internal.h"
#include "src/core/error.h"

#define OPT(place, lv, sc, name) {name, AX_ESP_##place, AX_ESP_##lv, AX_ESP_##sc}
#define COMPRESSED(place, p)                                                                     \
  OPT(place, FLAT, CASYNC_RING, p "/flat/casync-ring"),                                          \
      OPT(place, FLAT, CASYNC_PS, p "/flat/casync-ps"),                                          \
      OPT(place, FLAT, A2A_AG, p "/flat/a2a+ag"), OPT(place, FLAT, AG, p "/flat/ag"),            \
      OPT(place, TWO_LEVEL, CASYNC_RING, p "/2l/casync-ring"),                                   \
      OPT(place, TWO_LEVEL, CASYNC_PS, p "/2l/casync-ps"),                                       \
      OPT(place, TWO_LEVEL, A2A_AG, p "/2l/a2a+ag"), OPT(place, TWO_LEVEL, AG, p "/2l/ag"),      \
      OPT(place, TWO_LEVEL_INTRA, CASYNC_RING, p "/2l+intra/casync-ring"),                       \
      OPT(place, TWO_LEVEL_INTRA, CASYNC_PS, p "/2l+intra/casync-ps"),                           \
      OPT(place, TWO_LEVEL_INTRA, A2A_AG, p "/2l+intra/a2a+ag"),                                 \
      OPT(place, TWO_LEVEL_INTRA, AG, p "/2l+intra/ag")

static const AxEspressoOption OPTIONS[AX_ESPRESSO_N_OPTIONS] = {
    OPT(PLAIN, FLAT, AR_RING, "plain/flat/ar-ring"),
    OPT(PLAIN, FLAT, AR_RHD, "plain/flat/ar-rhd"),
    OPT(PLAIN, TWO_LEVEL, AR_RING, "plain/2l/ar-ring"),
    OPT(PLAIN, TWO_LEVEL, AR_RHD, "plain/2l/ar-rhd"),
    COMPRESSED(GPU, "gpu"),
    COMPRESSED(CPU, "cpu"),
};

const AxEspressoOption *ax_espresso_option(int o) {
  return o >= 0 && o < AX_ESPRESSO_N_OPTIONS ? &OPTIONS[o] : NULL;
}

int ax_espresso_option_find(const char *name) {
  for (int o = 0; name && o < AX_ESPRESSO_N_OPTIONS; o++)
    if (!strcmp(OPTIONS[o].name, name)) return o;
  return -1;
}

int ax_espresso_option_applies(const AxEspressoProblem *p, int o) {
  if (!p || o < 0 || o >= AX_ESPRESSO_N_OPTIONS) return 0;
  if (p->allowed && !((p->allowed >> o) & 1u)) return 0;
  if (p->cpu_only && OPTIONS[o].place == AX_ESP_GPU) return 0;
  if (p->ranks <= 1) return o == 0;
  int nodes = p->ranks_per_node > 0 ? p->ranks / p->ranks_per_node : 0;
  return OPTIONS[o].levels == AX_ESP_FLAT || (nodes > 1 && p->ranks_per_node > 1);
}

/* ------------------------------------------------------------------ checks */

static int check_cost(const AxLinearCost *c, const char *what) {
  if (!(c->latency_s >= 0) || !isfinite(c->latency_s) || !(c->bytes_per_s > 0))
    return AX_FAIL("espresso: %s cost needs a finite latency >= 0 and a bandwidth > 0 "
                   "(got %g s, %g B/s)", what, c->latency_s, c->bytes_per_s);
  return AX_OK;
}

static int check_tensors(const AxEspressoProblem *p) {
  if (p->n < 1) return AX_FAIL("espresso: %d tensors, expected at least 1", p->n);
  if (!p->bytes || !p->compute_s) return AX_FAIL("espresso: no tensor sizes or computation times");
  for (int i = 0; i < p->n; i++) {
    if (!(p->bytes[i] >= 0) || !isfinite(p->bytes[i]))
      return AX_FAIL("espresso: tensor %d has %g bytes, expected a finite size >= 0", i,
                     p->bytes[i]);
    if (!(p->compute_s[i] >= 0) || !isfinite(p->compute_s[i]))
      return AX_FAIL("espresso: tensor %d computes for %g s, expected a finite time >= 0", i,
                     p->compute_s[i]);
  }
  return AX_OK;
}

int ax_espresso_check(const AxEspressoProblem *p) {
  if (!p) return AX_FAIL("espresso: no problem");
  AX_TRY(check_tensors(p));
  if (p->ranks < 1 || p->ranks_per_node < 1 || p->ranks % p->ranks_per_node)
    return AX_FAIL("espresso: %d ranks in nodes of %d: expected ranks >= 1 and a node size "
                   "that divides them", p->ranks, p->ranks_per_node);
  AX_TRY(check_cost(&p->intra, "intra-node link"));
  AX_TRY(check_cost(&p->inter, "inter-node link"));
  AX_TRY(check_cost(&p->gpu.enc, "GPU encode"));
  AX_TRY(check_cost(&p->gpu.dec, "GPU decode"));
  AX_TRY(check_cost(&p->cpu.enc, "CPU encode"));
  AX_TRY(check_cost(&p->cpu.dec, "CPU decode"));
  if (!(p->latency_paid >= 0 && p->latency_paid <= 1))
    return AX_FAIL("espresso: a queued stage pays %g of its latency, expected 0 to 1",
                   p->latency_paid);
  if (!(p->ratio > 0) || !isfinite(p->ratio))
    return AX_FAIL("espresso: compression ratio %g, expected a finite ratio > 0", p->ratio);
  for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++)
    if (OPTIONS[o].place == AX_ESP_PLAIN && ax_espresso_option_applies(p, o)) return AX_OK;
  return AX_FAIL("espresso: the allowed options (0x%x) leave no uncompressed option",
                 (unsigned)p->allowed);
}

/* ------------------------------------------------------------------ costs of the collectives */

/* The members a collective runs over: p of them, g to a node (g divides p; 1: each on its own
 * node), `flows` such collectives at once on every node link, holding `links`. */
typedef struct {
  int p, g, flows, links;
  AxLinearCost intra, inter;
  const AxSizedTimes *inter_at;
} Net;

typedef struct {
  AxEspressoStage v[ESP_MAX_STAGES];
  int n;
} Stages;

static double at(const AxLinearCost *c, double b) { return ax_linear_cost_at(c, b); }

/* One b-byte message between nodes, k flows sharing the node's link. */
static double inter_msg(const Net *n, double b, int k) {
  return ax_cost_at(&n->inter, n->inter_at, b) + (k - 1) * b / n->inter.bytes_per_s;
}

static int one_node(const Net *n) { return n->p == n->g; }

/* A ring step: a node-ordered ring sends one flow (per collective) out of each node. */
static double ring_msg(const Net *n, double b) {
  if (one_node(n)) return at(&n->intra, b);
  double x = inter_msg(n, b, n->flows);
  return n->g == 1 ? x : fmax(at(&n->intra, b), x);
}

/* An exchange with the partner at distance d: across nodes from every member of a node. */
static double hop_msg(const Net *n, int d, double b) {
  if (one_node(n) || d < n->g) return at(&n->intra, b);
  return inter_msg(n, b, n->g * n->flows);
}

/* All-to-all: one b-byte message to each other member. */
static double exchange(const Net *n, double b) {
  double in = (n->g - 1) * at(&n->intra, b);
  if (one_node(n)) return in;
  return fmax(in, (n->p - n->g) * inter_msg(n, b, n->g * n->flows));
}

static double ring_allreduce(const Net *n, double m) {
  double alpha, beta, gamma;
  ax_casync_coefficients(AX_CASYNC_RING, n->p, n->p, &alpha, &beta, &gamma);
  return alpha * ring_msg(n, m / n->p);
}

static double rhd_allreduce(const Net *n, double m) {
  int pof2 = 1;
  while (pof2 * 2 <= n->p) pof2 *= 2;
  double t = pof2 < n->p ? 2 * hop_msg(n, 1, m) : 0;
  for (int mask = pof2 / 2; mask >= 1; mask /= 2) t += 2 * hop_msg(n, mask, m * mask / pof2);
  return t;
}

static void push(Stages *s, double dur, double work, double lat, int links, int dev) {
  s->v[s->n++] = (AxEspressoStage){dur, work, lat, links, dev};
}

/* A stage on the links taking t, of which lat is its messages' latency. */
static void link_stage(Stages *s, const Net *n, double t, double lat) {
  push(s, t, 0, lat, n->links, -1);
}

/* The codec's encode and decode on one device. */
typedef struct {
  int dev;
  const AxEspressoCodecCost *c;
  double r;
} Codec;

static double enc(const Codec *k, double b) { return ax_cost_at(&k->c->enc, &k->c->enc_at, b); }
static double dec(const Codec *k, double b) { return ax_cost_at(&k->c->dec, &k->c->dec_at, b); }
static void dev_stage(Stages *s, const Codec *k, double t) { push(s, t, t, 0, 0, k->dev); }

/* HiPress's T_cpr (§6's coefficients, K = p): one stage on the link, its codec part on the
 * device. */
static void casync(Stages *s, const Net *n, const Codec *k, AxCasyncAlgo algo, double m) {
  double alpha, beta, gamma, b = m / n->p, e = k->r * b;
  ax_casync_coefficients(algo, n->p, n->p, &alpha, &beta, &gamma);
  int ring = algo == AX_CASYNC_RING;
  double msg = ring ? ring_msg(n, e) : exchange(n, e) / (n->p - 1);
  double lat = ring ? ring_msg(n, 0) : exchange(n, 0) / (n->p - 1);
  double work = beta * enc(k, b) + gamma * dec(k, e);
  push(s, alpha * msg + work, work, alpha * lat, n->links, k->dev);
}

/* Fig. 4.4: all-to-all of the encoded parts, then all-gather of the encoded aggregates. */
static void divisible(Stages *s, const Net *n, const Codec *k, double m) {
  double b = m / n->p, e = k->r * b;
  dev_stage(s, k, n->p * enc(k, b));
  link_stage(s, n, exchange(n, e), exchange(n, 0));
  dev_stage(s, k, (n->p - 1) * dec(k, e) + enc(k, b));
  link_stage(s, n, (n->p - 1) * ring_msg(n, e), (n->p - 1) * ring_msg(n, 0));
  dev_stage(s, k, (n->p - 1) * dec(k, e));
}

/* Fig. 4.3: all-gather of the whole encoded tensor, every copy decoded. */
static void indivisible(Stages *s, const Net *n, const Codec *k, double m) {
  double e = k->r * m;
  dev_stage(s, k, enc(k, m));
  link_stage(s, n, (n->p - 1) * ring_msg(n, e), (n->p - 1) * ring_msg(n, 0));
  dev_stage(s, k, (n->p - 1) * dec(k, e));
}

static void scheme(Stages *s, const Net *n, const Codec *k, AxEspressoScheme sc, double m) {
  switch (sc) {
  case AX_ESP_AR_RING: link_stage(s, n, ring_allreduce(n, m), ring_allreduce(n, 0)); break;
  case AX_ESP_AR_RHD: link_stage(s, n, rhd_allreduce(n, m), rhd_allreduce(n, 0)); break;
  case AX_ESP_CASYNC_RING: casync(s, n, k, AX_CASYNC_RING, m); break;
  case AX_ESP_CASYNC_PS: casync(s, n, k, AX_CASYNC_PS, m); break;
  case AX_ESP_A2A_AG: divisible(s, n, k, m); break;
  case AX_ESP_AG: indivisible(s, n, k, m); break;
  }
}

/* The intra-node reduce-scatter of m (first) or all-gather of m (second), plain or as the
 * compressed divisible scheme's two halves. */
static void intra_half(Stages *s, const Net *in, const Codec *k, int compressed, int first,
                       double m) {
  double b = m / in->p, e = compressed ? k->r * b : b;
  if (compressed) dev_stage(s, k, first ? in->p * enc(k, b) : enc(k, b));
  int a2a = first && compressed;
  link_stage(s, in, a2a ? exchange(in, e) : (in->p - 1) * ring_msg(in, e),
             a2a ? exchange(in, 0) : (in->p - 1) * ring_msg(in, 0));
  if (compressed) dev_stage(s, k, (in->p - 1) * dec(k, e));
}

/* Scheme sc's stages for m bytes alone, added up. */
static double scheme_time(const Net *n, const Codec *k, AxEspressoScheme sc, double m) {
  Stages s = {.n = 0};
  scheme(&s, n, k, sc, m);
  double t = 0;
  for (int j = 0; j < s.n; j++) t += s.v[j].dur;
  return t;
}

/* p->timed[sc] over the stages' sum at its i-th size. */
static double timed_ratio(const AxEspressoProblem *p, const Net *n, const Codec *k,
                          AxEspressoScheme sc, int i) {
  const AxSizedTimes *t = &p->timed[sc];
  double model = scheme_time(n, k, sc, t->bytes[i]);
  return model > 0 ? t->seconds[i] / model : 1;
}

/* The factor scheme sc's stages take at m (espresso.h): the ratio at the timed sizes,
 * interpolated between them, the nearest one's beyond them; 1 where nothing was timed. */
static double timed_factor(const AxEspressoProblem *p, const Net *n, const Codec *k,
                           AxEspressoScheme sc, double m) {
  const AxSizedTimes *t = &p->timed[sc];
  if (t->n < 1) return 1;
  if (t->n == 1 || m <= t->bytes[0]) return timed_ratio(p, n, k, sc, 0);
  if (m >= t->bytes[t->n - 1]) return timed_ratio(p, n, k, sc, t->n - 1);
  int i = 0;
  while (m > t->bytes[i + 1]) i++;
  double w = (m - t->bytes[i]) / (t->bytes[i + 1] - t->bytes[i]);
  return (1 - w) * timed_ratio(p, n, k, sc, i) + w * timed_ratio(p, n, k, sc, i + 1);
}

static void scale(Stages *s, double f) {
  for (int j = 0; j < s->n; j++) s->v[j].dur *= f, s->v[j].work *= f, s->v[j].lat *= f;
}

/* The codec of option op (its device's costs). */
static Codec codec_of(const AxEspressoProblem *p, const AxEspressoOption *op) {
  return (Codec){op->place == AX_ESP_CPU ? ESP_CPU : ESP_GPU,
                 op->place == AX_ESP_CPU ? &p->cpu : &p->gpu, p->ratio};
}

/* One collective over all the ranks. */
static Net flat_net(const AxEspressoProblem *p) {
  int g = p->ranks_per_node, nodes = p->ranks / g;
  return (Net){p->ranks, g, 1, (g > 1 ? ESP_INTRA : 0) | (nodes > 1 ? ESP_INTER : 0), p->intra,
               p->inter, &p->inter_at};
}

static void build(const AxEspressoProblem *p, int o, double m, Stages *s) {
  s->n = 0;
  if (p->ranks <= 1) return;
  const AxEspressoOption *op = &OPTIONS[o];
  int g = p->ranks_per_node, nodes = p->ranks / g;
  Codec k = codec_of(p, op);
  if (op->levels == AX_ESP_FLAT) {
    Net flat = flat_net(p);
    scheme(s, &flat, &k, op->scheme, m);
    if (op->place != AX_ESP_PLAIN) scale(s, timed_factor(p, &flat, &k, op->scheme, m));
    return;
  }
  Net in = {g, g, 1, ESP_INTRA, p->intra, p->inter, &p->inter_at};
  Net out = {nodes, 1, g, ESP_INTER, p->intra, p->inter, &p->inter_at};
  int both = op->levels == AX_ESP_TWO_LEVEL_INTRA;
  intra_half(s, &in, &k, both, 1, m);
  scheme(s, &out, &k, op->scheme, m / g);
  intra_half(s, &in, &k, both, 0, m);
}

double ax_espresso_timed_factor(const AxEspressoProblem *p, int o, double bytes) {
  const AxEspressoOption *op = &OPTIONS[o];
  if (p->ranks <= 1 || op->place == AX_ESP_PLAIN || op->levels != AX_ESP_FLAT) return 1;
  Codec k = codec_of(p, op);
  Net flat = flat_net(p);
  return timed_factor(p, &flat, &k, op->scheme, bytes);
}

/* ------------------------------------------------------------------ the stage table */

static int ctx_alloc(AxEspressoCtx *c, int n, size_t total) {
  size_t cells = (size_t)n * AX_ESPRESSO_N_OPTIONS;
  c->first = ax_calloc(cells + 1, sizeof *c->first);
  c->stages = ax_calloc(total ? total : 1, sizeof *c->stages);
  c->chain = ax_calloc(cells, sizeof *c->chain);
  c->link[0] = ax_calloc(4 * cells, sizeof *c->link[0]);
  c->suf_compute = ax_calloc((size_t)n + 1, sizeof *c->suf_compute);
  c->suf = ax_calloc(2 * ((size_t)n + 1), sizeof *c->suf);
  if (!c->first || !c->stages || !c->chain || !c->link[0] || !c->suf_compute || !c->suf)
    return AX_ERR;
  c->link[1] = c->link[0] + cells;
  c->work[0] = c->link[0] + 2 * cells;
  c->work[1] = c->link[0] + 3 * cells;
  return AX_OK;
}

/* Tensor i's stages under option o into the table at c->first[cell]. */
static void fill_cell(AxEspressoCtx *c, int i, int o, const Stages *s) {
  size_t cell = ESP_AT(c, i, o);
  int at0 = c->first[cell];
  double chain = 0;
  for (int j = 0; j < s->n; j++) {
    const AxEspressoStage *st = &s->v[j];
    c->stages[at0 + j] = *st;
    chain += st->dur;
    for (int l = 0; l < 2; l++)
      if (st->links & (1 << l)) c->link[l][cell] += st->dur - st->lat;
    if (st->dev >= 0) c->work[st->dev][cell] += st->work;
  }
  c->first[cell + 1] = at0 + s->n;
  c->chain[cell] = (c->ok >> o) & 1u ? chain : INFINITY;
}

int ax_espresso_ctx_init(AxEspressoCtx *c, const AxEspressoProblem *p) {
  memset(c, 0, sizeof *c);
  AX_TRY(ax_espresso_check(p));
  c->p = p;
  c->n = p->n;
  for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++)
    if (ax_espresso_option_applies(p, o)) c->ok |= 1u << o;
  size_t total = 0;
  Stages s;
  for (int i = 0; i < p->n; i++)
    for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++) {
      s.n = 0;
      if ((c->ok >> o) & 1u) build(p, o, p->bytes[i], &s);
      total += (size_t)s.n;
    }
  if (ctx_alloc(c, p->n, total) != AX_OK) {
    ax_espresso_ctx_free(c);
    return AX_ERR;
  }
  for (int i = 0; i < p->n; i++)
    for (int o = 0; o < AX_ESPRESSO_N_OPTIONS; o++) {
      s.n = 0;
      if ((c->ok >> o) & 1u) build(p, o, p->bytes[i], &s);
      fill_cell(c, i, o, &s);
    }
  for (int k = p->n - 1; k >= 0; k--) c->suf_compute[k] = c->suf_compute[k + 1] + p->compute_s[k];
  return AX_OK;
}

void ax_espresso_ctx_free(AxEspressoCtx *c) {
  free(c->first);
  free(c->stages);
  free(c->chain);
  free(c->link[0]);
  free(c->suf_compute);
  free(c->suf);
  memset(c, 0, sizeof *c);
}

int ax_espresso_check_choices(const AxEspressoCtx *c, const int *choices) {
  if (!choices) return AX_FAIL("espresso: no choices");
  for (int i = 0; i < c->n; i++)
    if (choices[i] < 0 || choices[i] >= AX_ESPRESSO_N_OPTIONS || !((c->ok >> choices[i]) & 1u))
      return AX_FAIL("espresso: tensor %d: option %d is not one of the applicable options", i,
                     choices[i]);
  return AX_OK;
}

/* ------------------------------------------------------------------ device timelines */

/* The first span of b ending after t. */
static int first_after(const AxEspressoBusy *b, double t) {
  int lo = b->head, hi = b->len;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (b->v[mid].e > t) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Replaces spans [i, j) by [s, e], merged with the spans it touches, moving the shorter side. */
static void splice(AxEspressoBusy *b, int i, int j, double s, double e) {
  if (i > b->head && b->v[i - 1].e >= s) s = b->v[--i].s;
  if (j < b->len && b->v[j].s <= e) e = fmax(e, b->v[j++].e);
  size_t z = sizeof *b->v;
  int left = i - b->head, right = b->len - j, shift = 1 - (j - i);
  if (shift <= 0 ? left <= right : left <= right && b->head > 0) {
    memmove(b->v + b->head - shift, b->v + b->head, (size_t)left * z);
    b->head -= shift;
    b->v[i - shift] = (AxEspressoSpan){s, e};
  } else {
    memmove(b->v + j + shift, b->v + j, (size_t)right * z);
    b->len += shift;
    b->v[i] = (AxEspressoSpan){s, e};
  }
}

/* Work that yields to what is placed (the computation): runs in b's free time from start;
 * returns when it ends. */
static double busy_fill(AxEspressoBusy *b, double start, double work) {
  if (work <= 0) return start;
  double t = start, rem = work;
  int i = first_after(b, t), j = i;
  for (; j < b->len; j++) {
    if (b->v[j].s > t) {
      if (b->v[j].s - t >= rem) break;
      rem -= b->v[j].s - t;
    }
    t = fmax(t, b->v[j].e);
  }
  double lo = j > i ? fmin(start, b->v[i].s) : start;
  splice(b, i, j, lo, t + rem);
  return t + rem;
}

/* Codec work, never split: the earliest free slot from ready; returns its start. */
static double busy_place(AxEspressoBusy *b, double ready, double work) {
  if (work <= 0) return ready;
  double t = ready;
  int i = first_after(b, t);
  for (; i < b->len && b->v[i].s < t + work; i++) t = fmax(t, b->v[i].e);
  splice(b, i, i, t, t + work);
  return t;
}

/* Spans that end by t can no longer delay anything. */
static void busy_prune(AxEspressoBusy *b, double t) {
  while (b->head < b->len && b->v[b->head].e <= t) b->head++;
}

/* ------------------------------------------------------------------ the timeline state */

int ax_espresso_state_new(const AxEspressoCtx *c, AxEspressoState *s) {
  memset(s, 0, sizeof *s);
  int cap = 2 * (c->n * (ESP_MAX_STAGES + 1) + 2);
  for (int d = 0; d < 2; d++) {
    s->dev[d].v = ax_calloc((size_t)cap, sizeof(AxEspressoSpan));
    s->dev[d].cap = cap;
    if (!s->dev[d].v) {
      ax_espresso_state_free(s);
      return AX_ERR;
    }
  }
  ax_espresso_state_reset(s);
  return AX_OK;
}

void ax_espresso_state_free(AxEspressoState *s) {
  free(s->dev[0].v);
  free(s->dev[1].v);
  memset(s, 0, sizeof *s);
}

void ax_espresso_state_reset(AxEspressoState *s) {
  s->compute_end = s->link_free[0] = s->link_free[1] = s->latest = 0;
  for (int d = 0; d < 2; d++) s->dev[d].head = s->dev[d].len = s->dev[d].cap / 2;
}

void ax_espresso_state_copy(AxEspressoState *dst, const AxEspressoState *src) {
  dst->compute_end = src->compute_end;
  dst->link_free[0] = src->link_free[0];
  dst->link_free[1] = src->link_free[1];
  dst->latest = src->latest;
  for (int d = 0; d < 2; d++) {
    const AxEspressoBusy *a = &src->dev[d];
    AxEspressoBusy *b = &dst->dev[d];
    int k = a->len - a->head;
    b->head = b->cap / 2;
    b->len = b->head + k;
    memcpy(b->v + b->head, a->v + a->head, (size_t)k * sizeof *a->v);
  }
}

/* ------------------------------------------------------------------ evaluation */

static void record(AxEspressoDecision *rec, int o, double ready, double first, double last,
                   double done, double alone) {
  *rec = (AxEspressoDecision){.option = o, .ready_s = ready, .done_s = done, .alone_s = alone,
                              .comm_start_s = first < 0 ? ready : first, .comm_end_s = last};
}

void ax_espresso_step(const AxEspressoCtx *c, AxEspressoState *s, int i, int o,
                      AxEspressoDecision *rec) {
  busy_prune(&s->dev[ESP_GPU], s->compute_end);
  busy_prune(&s->dev[ESP_CPU], s->compute_end);
  s->compute_end = busy_fill(&s->dev[ESP_GPU], s->compute_end, c->p->compute_s[i]);
  double t = s->compute_end, first = -1, last = t;
  size_t cell = ESP_AT(c, i, o);
  for (int j = c->first[cell]; j < c->first[cell + 1]; j++) {
    const AxEspressoStage *st = &c->stages[j];
    double start = t;
    for (int l = 0; l < 2; l++)
      if (st->links & (1 << l)) start = fmax(start, s->link_free[l]);
    /* its messages' latency runs while it waits for the link (in flight behind the transfer
     * ahead of it), so a queued stage holds the link only for what is left of it */
    double hidden = (1 - c->p->latency_paid) * fmin(st->lat, start - t);
    if (st->dev >= 0) start = busy_place(&s->dev[st->dev], start, st->work);
    t = start + st->dur - hidden;
    if (!st->links) continue;
    for (int l = 0; l < 2; l++)
      if (st->links & (1 << l)) s->link_free[l] = t;
    if (first < 0) first = start;
    last = t;
  }
  s->latest = fmax(s->latest, fmax(t, s->compute_end));
  if (rec) record(rec, o, s->compute_end, first, last, t, c->chain[cell]);
}

void ax_espresso_suffix(AxEspressoCtx *c, const int *S) {
  int n = c->n;
  double *in = c->suf, *out = c->suf + n + 1;
  in[n] = out[n] = 0;
  for (int k = n - 1; k >= 0; k--) {
    in[k] = in[k + 1] + c->link[0][ESP_AT(c, k, S[k])];
    out[k] = out[k + 1] + c->link[1][ESP_AT(c, k, S[k])];
  }
}

double ax_espresso_bound(const AxEspressoCtx *c, const AxEspressoState *s, int k, const double *suf,
                         double last_chain) {
  double lb = s->latest;
  if (k < c->n) lb = fmax(lb, s->compute_end + c->suf_compute[k] + last_chain);
  lb = fmax(lb, s->link_free[0] + suf[k]);
  return fmax(lb, s->link_free[1] + suf[c->n + 1 + k]);
}

double ax_espresso_run(AxEspressoCtx *c, AxEspressoState *s, const int *S, int from, double cutoff,
                       AxEspressoDecision *rec) {
  double last_chain = c->chain[ESP_AT(c, c->n - 1, S[c->n - 1])];
  c->evaluations++;
  for (int k = from; k < c->n; k++) {
    if (ax_espresso_bound(c, s, k, c->suf, last_chain) >= cutoff) return INFINITY;
    ax_espresso_step(c, s, k, S[k], rec ? rec + k : NULL);
  }
  return s->latest < cutoff ? s->latest : INFINITY;
}

double ax_espresso_eval(AxEspressoCtx *c, AxEspressoState *s, const int *S, double cutoff,
                        AxEspressoDecision *rec) {
  ax_espresso_state_reset(s);
  ax_espresso_suffix(c, S);
  return ax_espresso_run(c, s, S, 0, cutoff, rec);
}

int ax_espresso_timeline(const AxEspressoProblem *p, const int *choices, AxEspressoDecision *out,
                         double *seconds) {
  AxEspressoCtx c;
  AxEspressoState s;
  AX_TRY(ax_espresso_ctx_init(&c, p));
  int rc = ax_espresso_check_choices(&c, choices);
  if (rc == AX_OK) rc = ax_espresso_state_new(&c, &s);
  if (rc == AX_OK) {
    double f = ax_espresso_eval(&c, &s, choices, INFINITY, out);
    if (seconds) *seconds = f;
    ax_espresso_state_free(&s);
  }
  ax_espresso_ctx_free(&c);
  return rc;
}

int ax_espresso_iteration_time(const AxEspressoProblem *p, const int *choices, double *seconds) {
  return ax_espresso_timeline(p, choices, NULL, seconds);
}
