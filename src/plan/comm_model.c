/* comm_model.c — the collectives of one training step on a 5D grid, their bytes and times;
 * see comm_model.h. The lists below follow docs/tensor-parallel.md section by section. */
#include "comm_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/coll/collectives.h"
#include "pipeline/partition.h"
#include "src/core/error.h"

typedef unsigned long long u64;

enum { F32 = 4, F64 = 8 }; /* LayerNorm and loss row statistics travel in fp32; the loss in fp64 */

/* One collective as the lists below name it: calls per step on this stage. */
typedef struct {
  const char *name;
  AxCollKind kind;
  AxCommGroup group;
  u64 elems;
  int esz;
  u64 calls;
} Coll;

/* What a rank holds of one micro-batch and of the weights (docs/tensor-parallel.md, "Shapes"). */
typedef struct {
  u64 rows;                    /* N/Gz: the rank's rows of the micro-batch */
  u64 cy, cx, c3x, c4x, vx;    /* C/Gy, C/Gx, 3C/Gx, 4C/Gx, Vp/Gx */
  u64 qkv, attproj, fc, fcproj, wte; /* Z shards of the weight blocks */
  u64 block_vectors;           /* ln1w, ln1b, ln2w, ln2b, attprojb, fcprojb (C/Gy each), qkvb
                                  (3C/Gx), fcb (4C/Gx): replicated over Z */
  u64 wpe, lnf;                /* maxT·C/Gy, 2·C/Gy */
  int e;
} Shapes;

/* Calls per step of the collectives of a stage's blocks. */
typedef struct {
  u64 micro;  /* micro-batches per step */
  u64 fwd;    /* forward all-reduces: micro x blocks, twice with checkpointing */
  u64 gather; /* forward all-gathers: micro x blocks, twice with checkpointing; blocks with
               * the cache */
  u64 bwd;    /* backward: micro x blocks */
  u64 blocks; /* once per step per block */
} Counts;

static const char *const CLASS_NAMES[AX_N_CLASSES] = {"AG_z", "RS_z", "AR_y", "AR_x",
                                                      "AR_z", "AR_data", "p2p", "tied"};
static const char *const GROUP_NAMES[AX_N_GROUPS] = {"x", "y", "z", "pipe", "data", "tied"};
static const char *const KIND_NAMES[] = {"allgather", "reduce-scatter", "allreduce", "p2p"};

const char *ax_comm_class_name(AxCommClass c) { return CLASS_NAMES[c]; }
const char *ax_comm_group_name(AxCommGroup g) { return GROUP_NAMES[g]; }
const char *ax_comm_kind_name(AxCollKind k) { return KIND_NAMES[k]; }

int ax_comm_grid_ranks(const AxRankGrid *g, long long *ranks) {
  const int sizes[] = {g->inter, g->x, g->y, g->z, g->data};
  long long n = 1;
  for (int i = 0; i < 5; i++) {
    if (sizes[i] < 1) return AX_FAIL("grid sizes must be at least 1");
    if (n > (1LL << 40) / sizes[i]) return AX_FAIL("grid of more than 2^40 ranks");
    n *= sizes[i];
  }
  *ranks = n;
  return AX_OK;
}

/* ---------------------------------------------------------------- the grid's rules */

/* The largest Bm, a multiple of gz dividing row, that leaves at least P micro-batches; gz when
 * none does (the caller checked gz divides row). Divisors come in pairs d, row/d. */
static int micro_batch_rule(long long row, int gz, int P) {
  long long best = 0;
  for (long long d = 1; d * d <= row; d++) {
    if (row % d) continue;
    const long long pair[2] = {d, row / d};
    for (int i = 0; i < 2; i++)
      if (pair[i] % gz == 0 && row / pair[i] >= P && pair[i] > best) best = pair[i];
  }
  return (int)(best ? best : gz);
}

int ax_comm_micro_batch(const AxCommSetup *s, const AxRankGrid *g) {
  if (s->batch % g->data) return 0;
  long long row = s->batch / g->data;
  if (s->micro_batch) return row % s->micro_batch || s->micro_batch % g->z ? 0 : s->micro_batch;
  return row % g->z ? 0 : micro_batch_rule(row, g->z, g->inter);
}

/* The model's divisibility rules; NULL when g keeps them all. */
static const char *shape_problem(const AxGptConfig *m, const AxRankGrid *g, char *why,
                                 size_t cap) {
  const int C = m->channels, Vp = m->padded_vocab;
  if (g->inter > m->layers)
    snprintf(why, cap, "G_inter=%d exceeds the %d layers", g->inter, m->layers);
  else if (C % g->x || C % g->y)
    snprintf(why, cap, "%s=%d does not divide C=%d", C % g->x ? "Gx" : "Gy",
             C % g->x ? g->x : g->y, C);
  else if (m->heads % g->x)
    snprintf(why, cap, "Gx=%d does not divide the %d heads (qkv keeps heads whole)", g->x,
             m->heads);
  else if ((3 * C / g->x) % g->z || (4 * C / g->x) % g->z || (C / g->y) % g->z)
    snprintf(why, cap, "Gz=%d does not divide the weight row blocks 3C/Gx=%d, 4C/Gx=%d, "
             "C/Gy=%d", g->z, 3 * C / g->x, 4 * C / g->x, C / g->y);
  else if (Vp % g->x || (Vp / g->x) % g->z)
    snprintf(why, cap, "Gx=%d x Gz=%d does not divide the padded vocabulary %d into row blocks",
             g->x, g->z, Vp);
  else
    return NULL;
  return why;
}

static const char *batch_problem(const AxCommSetup *s, const AxRankGrid *g, char *why,
                                 size_t cap) {
  if (s->batch % g->data)
    snprintf(why, cap, "G_data=%d does not divide the batch of %lld sequences", g->data,
             s->batch);
  else if (s->micro_batch && (s->batch / g->data) % s->micro_batch)
    snprintf(why, cap, "micro-batch %d does not divide the %lld sequences of a row",
             s->micro_batch, s->batch / g->data);
  else if (s->micro_batch && s->micro_batch % g->z)
    snprintf(why, cap, "Gz=%d does not divide the micro-batch of %d sequences", g->z,
             s->micro_batch);
  else if (!s->micro_batch && (s->batch / g->data) % g->z)
    snprintf(why, cap, "Gz=%d does not divide the %lld sequences of a row", g->z,
             s->batch / g->data);
  else
    return NULL;
  return why;
}

const char *ax_comm_grid_problem(const AxCommSetup *s, const AxRankGrid *g, char *why,
                                 size_t cap) {
  long long ranks;
  if (ax_comm_grid_ranks(g, &ranks) != AX_OK) {
    snprintf(why, cap, "%s", ax_error_text());
    ax_error_clear();
    return why;
  }
  const char *p = shape_problem(&s->model, g, why, cap);
  return p ? p : batch_problem(s, g, why, cap);
}

/* ---------------------------------------------------------------- bandwidths (Eq. 10) */

void ax_comm_bandwidths(const AxMachine *m, const AxRankGrid *g, int aware,
                        double beta[AX_N_GROUPS]) {
  const int sizes[] = {g->x, g->y, g->z, g->inter, g->data}; /* the hierarchy, inner first */
  double below = 1;                                           /* product of levels 0..i-1 */
  for (int i = 0; i < 5; i++) {
    double upto = below * sizes[i], node = m->gpus_per_node;
    if (!aware) beta[i] = m->inter_bytes_per_s;
    else if (upto <= node) beta[i] = m->intra_bytes_per_s;
    else beta[i] = m->inter_bytes_per_s / (below < node ? below : node);
    below = upto;
  }
  beta[AX_GROUP_TIED] = beta[AX_GROUP_PIPE];
}

/* ---------------------------------------------------------------- one collective */

static int group_size(const AxRankGrid *g, AxCommGroup group) {
  switch (group) {
  case AX_GROUP_X: return g->x;
  case AX_GROUP_Y: return g->y;
  case AX_GROUP_Z: return g->z;
  case AX_GROUP_PIPE: return g->inter;
  case AX_GROUP_DATA: return g->data;
  case AX_GROUP_TIED: return g->inter > 1 ? 2 : 1;
  case AX_N_GROUPS: break;
  }
  return 1;
}

static AxCommClass class_of(AxCollKind kind, AxCommGroup group) {
  switch (group) {
  case AX_GROUP_X: return AX_CLASS_AR_X;
  case AX_GROUP_Y: return AX_CLASS_AR_Y;
  case AX_GROUP_Z:
    return kind == AX_COLL_ALLGATHER        ? AX_CLASS_AG_Z
           : kind == AX_COLL_REDUCE_SCATTER ? AX_CLASS_RS_Z
                                            : AX_CLASS_AR_Z;
  case AX_GROUP_PIPE: return AX_CLASS_P2P;
  case AX_GROUP_DATA: return AX_CLASS_AR_DATA;
  default: return AX_CLASS_TIED;
  }
}

/* The ring all-reduce's bytes sent by its busiest rank (all ranks send the same when p | n). */
static u64 allreduce_sent(u64 n, int esz, int p) {
  u64 most = 0;
  for (int r = 0; r < (n % (u64)p ? p : 1); r++) {
    AxCommBytes b;
    ax_ring_allreduce_bytes((size_t)n, (size_t)esz, r, p, &b);
    if (b.sent > most) most = b.sent;
  }
  return most;
}

static u64 sent_per_call(const Coll *c, int p) {
  switch (c->kind) {
  case AX_COLL_ALLGATHER:
  case AX_COLL_REDUCE_SCATTER: return (u64)(p - 1) * c->elems * (u64)c->esz;
  case AX_COLL_ALLREDUCE: return allreduce_sent(c->elems, c->esz, p);
  case AX_COLL_P2P: return c->elems * (u64)c->esz;
  }
  return 0;
}

/* Ring steps, each paying the latency once. */
static int steps_per_call(AxCollKind kind, int p) {
  return kind == AX_COLL_P2P ? 1 : kind == AX_COLL_ALLREDUCE ? 2 * (p - 1) : p - 1;
}

void ax_comm_price(AxCollKind kind, unsigned long long elems, int esz, int p, double beta,
                   double latency, unsigned long long *bytes, double *seconds) {
  const Coll c = {"", kind, AX_GROUP_DATA, elems, esz, 1};
  *bytes = p < 2 && kind != AX_COLL_P2P ? 0 : sent_per_call(&c, p);
  *seconds = *bytes || kind == AX_COLL_P2P ? (double)*bytes / beta + latency * steps_per_call(kind, p)
                                           : 0;
}

/* Adds c to the stage's entries and totals when it sends anything (a stage issues at most 39
 * kinds of collective: AX_COMM_MAX_ENTRIES holds them). */
static void add(AxCommPrediction *out, const AxRankGrid *g, double latency, const Coll *c) {
  int p = group_size(g, c->group);
  if (p < 2 || !c->elems || !c->calls || out->n_entries >= AX_COMM_MAX_ENTRIES) return;
  AxCommEntry *e = &out->entries[out->n_entries++];
  snprintf(e->name, sizeof e->name, "%s", c->name);
  e->kind = c->kind;
  e->group = c->group;
  e->cls = class_of(c->kind, c->group);
  e->group_size = p;
  e->elem_size = c->esz;
  e->elems = c->elems;
  e->calls = c->calls;
  e->bytes = sent_per_call(c, p) * c->calls;
  e->seconds = (double)e->bytes / out->beta[c->group] +
               latency * steps_per_call(c->kind, p) * (double)c->calls;
  out->class_seconds[e->cls] += e->seconds;
  out->class_bytes[e->cls] += e->bytes;
  out->seconds += e->seconds;
  out->bytes += e->bytes;
}

static void add_all(AxCommPrediction *out, const AxRankGrid *g, double latency, const Coll *c,
                    size_t n) {
  for (size_t i = 0; i < n; i++) add(out, g, latency, &c[i]);
}
#define ADD_ALL(out, g, lat, list) add_all(out, g, lat, list, sizeof list / sizeof list[0])

/* ---------------------------------------------------------------- a stage's collectives */

static Shapes shapes_of(const AxCommSetup *s, const AxRankGrid *g, int micro_batch) {
  const u64 C = (u64)s->model.channels, Vp = (u64)s->model.padded_vocab;
  const u64 gx = (u64)g->x, gy = (u64)g->y, gz = (u64)g->z;
  Shapes sh = {.rows = (u64)micro_batch * (u64)s->seq / gz, .cy = C / gy, .cx = C / gx,
               .c3x = 3 * C / gx, .c4x = 4 * C / gx, .vx = Vp / gx, .e = s->elem_size};
  sh.qkv = sh.c3x / gz * sh.cy;     /* normal: [3C/(Gx·Gz), C/Gy] */
  sh.attproj = sh.cy / gz * sh.cx;  /* transposed: [C/(Gy·Gz), C/Gx] */
  sh.fc = sh.c4x / gz * sh.cy;      /* normal: [4C/(Gx·Gz), C/Gy] */
  sh.fcproj = sh.cy / gz * sh.c4x;  /* transposed: [C/(Gy·Gz), 4C/Gx] */
  sh.wte = sh.vx / gz * sh.cy;      /* normal: [Vp/(Gx·Gz), C/Gy] */
  sh.block_vectors = 6 * sh.cy + sh.c3x + sh.c4x;
  sh.wpe = (u64)s->model.max_seq * sh.cy;
  sh.lnf = 2 * sh.cy;
  return sh;
}

/* Forward, backward and once-a-step collectives of the stage's blocks. */
static void add_blocks(AxCommPrediction *out, const AxRankGrid *g, double lat, const Shapes *sh,
                       const Counts *n) {
  const u64 r = sh->rows;
  const int e = sh->e;
  const Coll list[] = {
      {"AR_y ln1 fwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r, F32, 2 * n->fwd},
      {"AG_z qkv", AX_COLL_ALLGATHER, AX_GROUP_Z, sh->qkv, e, n->gather},
      {"AR_y qkv fwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r * sh->c3x, e, n->fwd},
      {"AG_z attproj", AX_COLL_ALLGATHER, AX_GROUP_Z, sh->attproj, e, n->gather},
      {"AR_x attproj fwd", AX_COLL_ALLREDUCE, AX_GROUP_X, r * sh->cy, e, n->fwd},
      {"AR_y ln2 fwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r, F32, 2 * n->fwd},
      {"AG_z fc", AX_COLL_ALLGATHER, AX_GROUP_Z, sh->fc, e, n->gather},
      {"AR_y fc fwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r * sh->c4x, e, n->fwd},
      {"AG_z fcproj", AX_COLL_ALLGATHER, AX_GROUP_Z, sh->fcproj, e, n->gather},
      {"AR_x fcproj fwd", AX_COLL_ALLREDUCE, AX_GROUP_X, r * sh->cy, e, n->fwd},
      {"AR_y fcproj bwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r * sh->c4x, e, n->bwd},
      {"RS_z fcproj", AX_COLL_REDUCE_SCATTER, AX_GROUP_Z, sh->fcproj, e, n->bwd},
      {"AR_x fc bwd", AX_COLL_ALLREDUCE, AX_GROUP_X, r * sh->cy, e, n->bwd},
      {"RS_z fc", AX_COLL_REDUCE_SCATTER, AX_GROUP_Z, sh->fc, e, n->bwd},
      {"AR_y ln2 bwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, 2 * r, F32, n->bwd},
      {"AR_y attproj bwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r * sh->cx, e, n->bwd},
      {"RS_z attproj", AX_COLL_REDUCE_SCATTER, AX_GROUP_Z, sh->attproj, e, n->bwd},
      {"AR_x qkv bwd", AX_COLL_ALLREDUCE, AX_GROUP_X, r * sh->cy, e, n->bwd},
      {"RS_z qkv", AX_COLL_REDUCE_SCATTER, AX_GROUP_Z, sh->qkv, e, n->bwd},
      {"AR_y ln1 bwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, 2 * r, F32, n->bwd},
      {"AR_z block vectors", AX_COLL_ALLREDUCE, AX_GROUP_Z, sh->block_vectors, e, n->blocks},
  };
  ADD_ALL(out, g, lat, list);
}

/* The first stage: the embedding lookup, wte's all-gather and gradient, wpe. */
static void add_embedding(AxCommPrediction *out, const AxRankGrid *g, double lat,
                          const Shapes *sh, u64 micro, u64 wte_gathers) {
  const Coll list[] = {
      {"AG_z wte", AX_COLL_ALLGATHER, AX_GROUP_Z, sh->wte, sh->e, wte_gathers},
      {"AR_x embedding", AX_COLL_ALLREDUCE, AX_GROUP_X, sh->rows * sh->cy, sh->e, micro},
      {"RS_z wte", AX_COLL_REDUCE_SCATTER, AX_GROUP_Z, sh->wte, sh->e, micro},
      {"AR_z wpe", AX_COLL_ALLREDUCE, AX_GROUP_Z, sh->wpe, sh->e, 1},
  };
  ADD_ALL(out, g, lat, list);
}

/* The last stage: lnf, the LM head (its wte all-gather and reduce-scatter are the embedding's
 * when one stage holds both: counted there once), the vocabulary-parallel loss. */
static void add_head(AxCommPrediction *out, const AxRankGrid *g, double lat, const Shapes *sh,
                     u64 micro, u64 wte_gathers, int owns_embedding) {
  const u64 r = sh->rows, own_wte = owns_embedding ? 0 : micro;
  const Coll list[] = {
      {"AR_y lnf fwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, r, F32, 2 * micro},
      {"AG_z wte (head)", AX_COLL_ALLGATHER, AX_GROUP_Z, sh->wte, sh->e,
       owns_embedding ? 0 : wte_gathers},
      {"AR_y logits", AX_COLL_ALLREDUCE, AX_GROUP_Y, r * sh->vx, sh->e, micro},
      {"AG_x loss row max", AX_COLL_ALLGATHER, AX_GROUP_X, r, F32, micro},
      {"AR_x loss row sums", AX_COLL_ALLREDUCE, AX_GROUP_X, 2 * r, F32, micro},
      {"AR_x head bwd", AX_COLL_ALLREDUCE, AX_GROUP_X, r * sh->cy, sh->e, micro},
      {"RS_z wte (head)", AX_COLL_REDUCE_SCATTER, AX_GROUP_Z, sh->wte, sh->e, own_wte},
      {"AR_y lnf bwd", AX_COLL_ALLREDUCE, AX_GROUP_Y, 2 * r, F32, micro},
      {"AR_z lnf", AX_COLL_ALLREDUCE, AX_GROUP_Z, sh->lnf, sh->e, 1},
      {"AR_z loss", AX_COLL_ALLREDUCE, AX_GROUP_Z, 1, F64, 1},
  };
  ADD_ALL(out, g, lat, list);
}

/* Stage boundaries (activations forward, their gradients backward), the tied wte of the first
 * and last stage, and the data-parallel all-reduce of everything the rank stores. */
static void add_between(AxCommPrediction *out, const AxRankGrid *g, double lat, const Shapes *sh,
                        u64 micro, int stage, int blocks) {
  const int first = stage == 0, last = stage == g->inter - 1, split = g->inter > 1;
  const u64 message = sh->rows * sh->cy;
  const u64 stored = (u64)blocks * (sh->qkv + sh->attproj + sh->fc + sh->fcproj +
                                    sh->block_vectors) +
                     (first ? sh->wte + sh->wpe : 0) + (last ? sh->lnf : 0) +
                     (last && split ? sh->wte : 0);
  const Coll list[] = {
      {"p2p activations", AX_COLL_P2P, AX_GROUP_PIPE, message, sh->e, last ? 0 : micro},
      {"p2p gradients", AX_COLL_P2P, AX_GROUP_PIPE, message, sh->e, first ? 0 : micro},
      {"AR tied wte", AX_COLL_ALLREDUCE, AX_GROUP_TIED, sh->wte, sh->e, first || last},
      {"AR_data gradients", AX_COLL_ALLREDUCE, AX_GROUP_DATA, stored, sh->e, 1},
  };
  ADD_ALL(out, g, lat, list);
}

static void predict_stage(const AxCommSetup *s, const AxRankGrid *g, double latency,
                          const Shapes *sh, u64 micro, int stage, int blocks,
                          AxCommPrediction *out) {
  /* the cache keeps the gathered weights for the step's later micro-batches and the recompute
   * (every block: the trainer's default --tp-gather-budget) */
  const u64 twice = s->checkpoint ? 2 : 1, gather_twice = s->checkpoint ? 2 : 1;
  const u64 wte_gathers = s->ag_cache ? 1 : micro;
  const Counts n = {.micro = micro, .fwd = micro * (u64)blocks * twice,
                    .gather = s->ag_cache ? (u64)blocks : micro * (u64)blocks * gather_twice,
                    .bwd = micro * (u64)blocks, .blocks = (u64)blocks};
  out->stage = stage;
  out->n_entries = 0;
  out->seconds = 0;
  out->bytes = 0;
  memset(out->class_seconds, 0, sizeof out->class_seconds);
  memset(out->class_bytes, 0, sizeof out->class_bytes);
  if (stage == 0) add_embedding(out, g, latency, sh, micro, wte_gathers);
  add_blocks(out, g, latency, sh, &n);
  if (stage == g->inter - 1) add_head(out, g, latency, sh, micro, wte_gathers, stage == 0);
  add_between(out, g, latency, sh, micro, stage, blocks);
}

/* ---------------------------------------------------------------- the busiest stage */

int ax_comm_predict(const AxCommSetup *s, const AxMachine *m, const AxRankGrid *g,
                    AxCommPrediction *out) {
  char why[256];
  if (ax_comm_grid_problem(s, g, why, sizeof why))
    return AX_FAIL("grid %dx%dx%dx%dx%d: %s", g->inter, g->x, g->y, g->z, g->data, why);
  const int P = g->inter;
  int *first_block = ax_malloc((size_t)(P + 1) * sizeof *first_block);
  if (!first_block) return AX_ERR;
  if (ax_partition(s->model.layers, P, NULL, first_block) != AX_OK) {
    free(first_block);
    return AX_ERR;
  }
  memset(out, 0, sizeof *out);
  out->grid = *g;
  out->micro_batch = ax_comm_micro_batch(s, g);
  out->n_micro = s->batch / g->data / out->micro_batch;
  ax_comm_bandwidths(m, g, s->placement_aware, out->beta);
  const Shapes sh = shapes_of(s, g, out->micro_batch);
  AxCommPrediction stage = *out; /* the grid's fields; predict_stage fills the rest */
  int prev_blocks = -1;
  for (int st = 0; st < P; st++) {
    int blocks = first_block[st + 1] - first_block[st], edge = st == 0 || st == P - 1;
    if (!edge && blocks == prev_blocks) continue; /* a middle stage like the one before */
    if (!edge) prev_blocks = blocks;
    predict_stage(s, g, m->latency_s, &sh, (u64)out->n_micro, st, blocks, &stage);
    if (st == 0 || stage.seconds > out->seconds) *out = stage;
  }
  free(first_block);
  return AX_OK;
}
