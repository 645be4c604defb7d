/* bench_compress.c — `axonn bench compress`, run under mpiexec (or alone for the codec rows):
 *  1. per codec of --codecs, on one core of rank 0: encode and decode GB/s against memcpy, and
 *     the compression ratio (bench_codecs.c);
 *  2. the data-parallel all-reduce of every --sizes over every --links (EMULATED: the job split
 *     into two virtual nodes unless --ranks-per-node says otherwise, mpi/link/link_emulator.h): the
 *     plain ring against CaSync ring and CaSync PS with every codec, each in every partition
 *     count K from 1 to N (as the trainer runs a part: exactly K partitions); time = the least
 *     over --iters of the slowest rank's (other work on a shared machine only adds time); wire bytes from the traffic counters (sum over ranks per
 *     all-reduce); each round runs the plain ring and then every K side by side, under the same
 *     load; speedup_vs_plain = that plain time / the time at K = N; and HiPress's cost model's
 *     pick, plain or compressed in K (mpi/casync/casync_cost.h, fed by the codec's profiled
 *     costs, the plain ring measured over the link, ax_casync_measure_plain, and CaSync's
 *     engine term, each codec's timed side by side with the plain ring, ax_casync_measure_paths) against the fastest measured of
 *     plain and every K: a pick more than NOISE (5%) slower than that is WRONG, with the time
 *     it loses; the last line (and a JSON "score" row) gives the fraction of right picks, the
 *     fraction right on plain-or-compressed alone, and the largest loss.
 * --json FILE appends one JSON object per row (codec, sync, ranks, bytes, link_gbps, time_us,
 * wire_bytes, speedup_vs_plain, ...). Every CaSync result is checked to be bitwise identical
 * on all ranks. Initializes and finalizes MPI itself. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_compress.h"
#include "mpi/casync/casync.h"
#include "mpi/casync/casync_cost.h"
#include "mpi/coll/collectives.h"
#include "mpi/link/link_emulator.h"
#include "mpi/mpi_util.h"
#include "mpi/link/vnodes.h"
#include "src/backend/peak.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/timer.h"

typedef struct {
  char *codecs, *sizes, *links, *syncs, *json;
  long long codec_bytes;
  int iters, warmup, ranks_per_node, codec_rows, allreduce_rows;
} CbConfig;

#define COFF(f) offsetof(CbConfig, f)
static const AxOption CB_OPTS[] = {
    {"codecs", AX_OPT_STRING, COFF(codecs),
     "identity,onebit,onebit:ef=1,terngrad:bits=2,dgc:ratio=0.01,topk:ratio=0.01,powersgd:rank=4",
     "LIST", "codec specs, separated by ';' or ',' between specs (all: every codec)", 1, 0,
     NULL},
    {"sizes", AX_OPT_STRING, COFF(sizes), "4M,64M,256M", "LIST",
     "all-reduce sizes in bytes (K/M/G = 2^10, 2^20, 2^30)", 1, 0, NULL},
    {"links", AX_OPT_STRING, COFF(links), "1Gbps,10Gbps,100Gbps", "LIST",
     "EMULATED links between the two virtual nodes, each BW[:LAT] (--emulate-link's units; "
     "latency 5us unless given), e.g. 1Gbps,10Gbps:2us", 1, 0, NULL},
    {"syncs", AX_OPT_STRING, COFF(syncs), "ring,ps", "LIST", "CaSync algorithms", 1, 0, NULL},
    {"ranks-per-node", AX_OPT_INT, COFF(ranks_per_node), "0", "N",
     "virtual nodes of N consecutive ranks (0: half the job, two nodes)", 0, 1 << 20, NULL},
    {"codec-bytes", AX_OPT_LONG, COFF(codec_bytes), "64M", "BYTES",
     "buffer of the one-core codec rows", 1024, (double)(1LL << 34), NULL},
    {"iters", AX_OPT_INT, COFF(iters), "5", "N", "timed runs per row (codec rows: the median; all-reduce rows: the least)", 1, 1000, NULL},
    {"warmup", AX_OPT_INT, COFF(warmup), "1", "N", "untimed runs first", 0, 100, NULL},
    {"codec-rows", AX_OPT_INT, COFF(codec_rows), "1", "0|1", "the one-core codec rows", 0, 1,
     NULL},
    {"allreduce-rows", AX_OPT_INT, COFF(allreduce_rows), "1", "0|1",
     "the emulated all-reduce rows (needs 2 or more ranks)", 0, 1, NULL},
    {"json", AX_OPT_STRING, COFF(json), NULL, "FILE", "append one JSON line per row", 1, 0,
     NULL},
};
static const AxOptionTable CB_TABLE = {
    "bench compress",
    "Gradient compression: codecs on one core, and plain vs CaSync all-reduces over EMULATED "
    "links; run under mpiexec -n P (P >= 2 for the all-reduce rows).",
    CB_OPTS, (int)(sizeof CB_OPTS / sizeof CB_OPTS[0])};

enum { MAX_ITEMS = 32 };
static const char ALL_CODECS[] =
    "identity;onebit;onebit:scale=twomeans;onebit:ef=1;tbq;terngrad:bits=2;terngrad:bits=8;dgc;"
    "graddrop;topk:ratio=0.01;randk:ratio=0.01;qsgd;efsignsgd;powersgd:rank=4";

typedef struct {
  const CbConfig *c;
  MPI_Comm comm;
  int rank, size, json_rc;
  AxCodec *codecs[MAX_ITEMS];
  int n_codecs;
  long long sizes[MAX_ITEMS];
  int n_sizes;
  AxLinkSpec links[MAX_ITEMS];
  int n_links;
  AxCasyncAlgo syncs[2];
  int n_syncs;
  AxCommConfig cc;
  AxLinkEmu *emu;
  AxTraffic sent;
  float *buf;
} Cb;

/* ---------------------------------------------------------------- option lists */

/* Splits a list at ';' (and at ',' where what follows starts a new item: `is_start`). */
static int split(const char *text, char items[][128], int *n, int (*is_start)(const char *)) {
  *n = 0;
  const char *p = text;
  while (*p) {
    const char *end = p;
    while (*end && *end != ';' && !(*end == ',' && is_start(end + 1))) end++;
    if (*n == MAX_ITEMS || end - p >= 128) return AX_FAIL("list '%s': too many or too long items", text);
    memcpy(items[*n], p, (size_t)(end - p));
    items[(*n)++][end - p] = 0;
    p = *end ? end + 1 : end;
  }
  return *n ? AX_OK : AX_FAIL("empty list");
}

/* A codec spec starts with a letter and has no '=' before its first ':' or ','. */
static int codec_start(const char *s) {
  if (!((*s >= 'a' && *s <= 'z'))) return 0;
  for (; *s && *s != ',' && *s != ';' && *s != ':'; s++)
    if (*s == '=') return 0;
  return 1;
}
static int any_start(const char *s) { return *s != 0; }

static int parse_codecs(Cb *b) {
  char items[MAX_ITEMS][128];
  int n;
  const char *list = strcmp(b->c->codecs, "all") == 0 ? ALL_CODECS : b->c->codecs;
  if (split(list, items, &n, codec_start) != AX_OK) return ax_error_context("--codecs");
  for (int i = 0; i < n; i++) {
    if (ax_codec_parse(items[i], &b->codecs[i]) != AX_OK) return ax_error_context("--codecs");
    b->n_codecs = i + 1;
  }
  return AX_OK;
}

static int parse_size(const char *s, long long *out) {
  char *end;
  long long v = strtoll(s, &end, 10), unit = 1;
  if (*end == 'K') unit = 1LL << 10, end++;
  else if (*end == 'M') unit = 1LL << 20, end++;
  else if (*end == 'G') unit = 1LL << 30, end++;
  if (end == s || *end || v <= 0 || v > (1LL << 40) / unit)
    return AX_FAIL("--sizes: '%s' is not a size like 4M", s);
  *out = v * unit / 4 * 4;
  return AX_OK;
}

static int parse_lists(Cb *b) {
  char items[MAX_ITEMS][128];
  AX_TRY(parse_codecs(b));
  if (split(b->c->sizes, items, &b->n_sizes, any_start) != AX_OK)
    return ax_error_context("--sizes");
  for (int i = 0; i < b->n_sizes; i++) AX_TRY(parse_size(items[i], &b->sizes[i]));
  if (split(b->c->links, items, &b->n_links, any_start) != AX_OK)
    return ax_error_context("--links");
  for (int i = 0; i < b->n_links; i++) {
    char *colon = strchr(items[i], ':');
    if (colon) *colon = ',';
    else strncat(items[i], ",5us", sizeof items[i] - strlen(items[i]) - 1);
    if (ax_link_spec_parse(items[i], &b->links[i]) != AX_OK) return ax_error_context("--links");
  }
  if (split(b->c->syncs, items, &b->n_syncs, any_start) != AX_OK)
    return ax_error_context("--syncs");
  if (b->n_syncs > 2)
    return AX_FAIL("--syncs '%s': at most two CaSync algorithms (ring, ps, ag)", b->c->syncs);
  for (int i = 0; i < b->n_syncs; i++)
    if (ax_casync_algo_parse(items[i], &b->syncs[i]) != AX_OK) return ax_error_context("--syncs");
  return AX_OK;
}

/* ---------------------------------------------------------------- JSON */

static void json_row(Cb *b, const char *fmt, ...) AX_PRINTF(2, 3);
static void json_row(Cb *b, const char *fmt, ...) {
  if (!b->c->json || b->rank != 0 || b->json_rc != AX_OK) return;
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0 || n >= (int)sizeof line - 1) n = (int)sizeof line - 2;
  line[n++] = '\n';
  b->json_rc = ax_file_append(b->c->json, line, (size_t)n);
}

/* ---------------------------------------------------------------- codec rows */

static int codec_rows(Cb *b) {
  size_t n = (size_t)b->c->codec_bytes / sizeof(float);
  ax_log("# codecs on one core of rank 0: %zu bytes of random gradients; GB/s = raw fp32 bytes "
         "/ median time of %d; ratio = encoded / raw (a linear codec: factor bytes; its encode "
         "= factors + rebuild, no decode)", n * sizeof(float), b->c->iters);
  ax_log("# %-34s %10s %10s %10s %9s %8s", "codec", "encode", "decode", "memcpy", "enc/mcpy",
         "ratio");
  for (int i = 0; i < b->n_codecs; i++) {
    AxCodecRow r;
    AX_TRY(ax_bench_codec_row(b->codecs[i], n, b->c->iters, &r));
    const char *spec = ax_codec_spec(b->codecs[i]);
    ax_log("  %-34s %10.3f %10.3f %10.3f %8.0f%% %8.5f", spec, r.encode_gbs, r.decode_gbs,
           r.memcpy_gbs, 100 * r.encode_gbs / r.memcpy_gbs, r.ratio);
    json_row(b, "{\"bench\":\"compress\",\"row\":\"codec\",\"codec\":\"%s\",\"sync\":\"none\","
             "\"ranks\":1,\"bytes\":%.0f,\"link_gbps\":0,\"time_us\":%.2f,\"wire_bytes\":%.0f,"
             "\"speedup_vs_plain\":null,\"encode_gbs\":%.4f,\"decode_gbs\":%.4f,"
             "\"memcpy_gbs\":%.4f,\"encode_vs_memcpy\":%.4f,\"ratio\":%.6g,\"linear\":%s}",
             spec, r.raw_bytes, r.encode_us, r.wire_bytes, r.encode_gbs, r.decode_gbs,
             r.memcpy_gbs, r.encode_gbs / r.memcpy_gbs, r.ratio, r.linear ? "true" : "false");
  }
  return AX_OK;
}

/* ---------------------------------------------------------------- all-reduce rows */

typedef struct {
  double us, wire; /* least time of the slowest rank; bytes on the wire per op, all ranks */
  int same;        /* every rank holds bitwise the same result */
} Measured;

/* The cost model's record over the rows: picks (plain, or compressed in K partitions) against
 * the measured fastest of plain and every K. A pick is right when its measured time is within
 * NOISE of the fastest (two side-by-side runs of one path differ by about that much). */
static const double NOISE = 0.05;
typedef struct {
  int cases, right, compress_slower, plain_slower, wrong_k;
  int choice_right;          /* plain or compressed right, whatever the K */
  double max_loss, sum_loss; /* (picked time - fastest time) / fastest time, over wrong picks */
  char worst[200];           /* the case of max_loss */
} Score;

/* codec NULL: the plain ring. */
static int one_op(Cb *b, const AxCodec *codec, AxCasyncAlgo sync, AxCasyncState *st, size_t n,
                  int step) {
  if (!codec) return ax_allreduce(b->comm, &b->cc, b->buf, n, AX_COMM_F32, AX_ALLREDUCE_RING, NULL);
  AxCodecCtx ctx = {.seed = 5, .step = (uint64_t)step, .range = 0};
  return ax_casync_allreduce(b->comm, &b->cc, codec, sync, st, &ctx, b->buf, n, NULL);
}

static int same_everywhere(Cb *b, size_t n, int *same) {
  uint64_t h = 1469598103934665603ULL;
  const unsigned char *p = (const unsigned char *)b->buf;
  for (size_t i = 0; i < n * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ULL;
  uint64_t lo, hi;
  AX_MPI(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, b->comm));
  AX_MPI(MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, b->comm));
  *same = lo == hi;
  return AX_OK;
}

/* One timed all-reduce (codec NULL: the plain ring) on fresh gradients: the slowest rank's
 * seconds, and the bytes this rank sent; started together and reported without spinning
 * (ax_link_barrier, ax_link_max: where ranks outnumber cores, MPI's spinning calls took the
 * core of a rank still timing). */
static int timed_op(Cb *b, const AxCodec *codec, AxCasyncAlgo sync, AxCasyncState *st, size_t n,
                    int step, double *seconds, double *sent) {
  ax_bench_gradient(b->buf, n, 100 + (uint64_t)b->rank); /* not timed */
  AX_TRY(ax_link_barrier(&b->cc, b->comm));
  AxTraffic before = b->sent;
  double t0 = ax_now();
  AX_TRY(one_op(b, codec, sync, st, n, step));
  double mine = ax_now() - t0;
  *sent = (double)(ax_traffic_bytes(&b->sent, AX_TRAFFIC_N_CLASSES) -
                   ax_traffic_bytes(&before, AX_TRAFFIC_N_CLASSES));
  return ax_link_max(&b->cc, b->comm, mine, seconds);
}

/* The K candidates of a compressed path on N ranks: every K in [1, N] (at most MAX_K: then the
 * model's K and its neighbours); a linear codec sums its factors with the plain ring, whatever
 * K: one candidate, N. */
enum { MAX_K = 8 };
static int k_candidates(const AxCodec *codec, int ranks, int model_k, int *k) {
  if (ax_codec_rounds(codec) > 0) return k[0] = ranks, 1;
  int n = 0;
  if (ranks <= MAX_K) {
    for (int i = 1; i <= ranks; i++) k[n++] = i;
    return n;
  }
  for (int i = model_k - 1; i <= model_k + 1; i++)
    if (i >= 1 && i <= ranks) k[n++] = i;
  return n;
}

/* The all-reduce with `codec` (NULL: the plain ring, one candidate) in each of the nk
 * partition counts k[] (CaSync runs exactly K, as the trainer does: ax_casync_state_new_parts);
 * with `plain` non-NULL, each timed round runs the plain ring first and then every K, so all
 * are compared side by side under the same load, and *plain gets the plain ring's least.
 * m[i] gets K = k[i]'s. */
static int measure(Cb *b, const AxCodec *codec, AxCasyncAlgo sync, size_t n, const int *k,
                   int nk, Measured *m, Measured *plain) {
  AxCasyncState *st[MAX_K] = {0};
  int rc = AX_OK;
  if (!codec) nk = 1;
  for (int j = 0; codec && j < nk && rc == AX_OK; j++)
    rc = ax_casync_state_new_parts(codec, n, b->size, k[j], &st[j]);
  int iters = b->c->iters;
  double *t = ax_malloc((size_t)(MAX_K + 1) * (size_t)iters * sizeof *t), *tp = t + MAX_K * iters;
  double sent[MAX_K] = {0}, ignored;
  if (!t) rc = AX_ERR;
  for (int i = 0; i < b->c->warmup && rc == AX_OK; i++) {
    if (plain) rc = timed_op(b, NULL, sync, NULL, n, 0, &ignored, &ignored);
    for (int j = 0; j < nk && rc == AX_OK; j++)
      rc = timed_op(b, codec, sync, st[j], n, i + 1, &ignored, &ignored);
  }
  for (int i = 0; i < iters && rc == AX_OK; i++) {
    if (plain) rc = timed_op(b, NULL, sync, NULL, n, 0, &tp[i], &ignored);
    for (int j = 0; j < nk && rc == AX_OK; j++) {
      double mine = 0;
      rc = timed_op(b, codec, sync, st[j], n, b->c->warmup + i + 1, &t[j * iters + i], &mine);
      sent[j] += mine;
    }
  }
  for (int j = 0; j < nk && rc == AX_OK; j++) { /* each K's result is checked */
    if (j < nk - 1) { /* the buffer holds the last K's: run this one again */
      ax_bench_gradient(b->buf, n, 100 + (uint64_t)b->rank);
      rc = one_op(b, codec, sync, st[j], n, b->c->warmup + iters + 1);
    }
    if (rc == AX_OK) rc = same_everywhere(b, n, &m[j].same);
    if (rc != AX_OK) break;
    double mine = sent[j] / iters;
    MPI_Allreduce(&mine, &m[j].wire, 1, MPI_DOUBLE, MPI_SUM, b->comm);
    m[j].us = ax_least(t + j * iters, iters) * 1e6;
  }
  if (rc == AX_OK && plain) *plain = (Measured){.us = ax_least(tp, iters) * 1e6, .same = 1};
  free(t);
  for (int j = 0; j < MAX_K; j++) ax_casync_state_free(st[j]);
  return rc;
}

/* The model's costs of a codec over one link: its profiled encode and decode, the plain ring
 * measured over the link, the send that implies, and (engine) CaSync's own cost beyond them. */
static AxCasyncCosts link_costs(const AxCasyncCosts *profiled, const AxLinearCost *plain,
                                const AxSizedTimes *plain_at, int ranks) {
  AxCasyncCosts c = *profiled;
  c.plain = *plain;
  c.plain_at = *plain_at;
  c.send = ax_casync_send_from_plain(plain, ranks);
  c.engine.n = 0;
  return c;
}

/* "a, b, c us at 1, 16, 256 KB" lists of an engine term (list: seconds; else the sizes). */
static void engine_list(const AxSizedTimes *e, int seconds, char *out, size_t cap) {
  int at = 0;
  out[0] = 0;
  for (int i = 0; i < e->n && at >= 0 && (size_t)at < cap; i++)
    at += snprintf(out + at, cap - (size_t)at, "%s%.6g", i ? "," : "",
                   seconds ? e->seconds[i] * 1e6 : e->bytes[i]);
}

/* The cost model's decision for this codec, size and link. */
static AxCasyncChoice model_pick(const AxCasyncCosts *linked, const AxCodec *codec,
                                 AxCasyncAlgo sync, int ranks, size_t n) {
  AxCasyncCosts c = *linked;
  c.ratio = ax_codec_ratio(codec, c.linear ? n : n / (size_t)ranks + 1);
  return ax_casync_choose(&c, sync, ranks, 4.0 * (double)n, 0);
}

static int codec_costs(Cb *b, AxCasyncCosts *costs) {
  int rc = AX_OK;
  for (int i = 0; i < b->n_codecs && rc == AX_OK; i++) {
    costs[i] = (AxCasyncCosts){.enc = {0, 1}, .dec = {0, 1}, .ratio = 1};
    if (b->rank == 0) rc = ax_casync_profile_codec(b->codecs[i], 5, &costs[i]);
  }
  AX_TRY(ax_mpi_agree(b->comm, rc));
  AX_MPI(MPI_Bcast(costs, (int)(b->n_codecs * sizeof *costs), MPI_BYTE, 0, b->comm));
  for (int i = 0; i < b->n_codecs; i++)
    ax_log("# profiled %s: encode %.4g us + bytes / %.4g GB/s; decode and merge %.4g us + "
           "bytes / %.4g GB/s (the lines through %d and %d sizes, the costs read between "
           "them)", ax_codec_spec(b->codecs[i]), costs[i].enc.latency_s * 1e6,
           costs[i].enc.bytes_per_s / 1e9, costs[i].dec.latency_s * 1e6,
           costs[i].dec.bytes_per_s / 1e9, costs[i].enc_at.n, costs[i].dec_at.n);
  return AX_OK;
}

/* The model's costs of codec i through sync s over the current link: the plain ring and
 * CaSync timed side by side as the trainer times them at start-up (ax_casync_measure_paths),
 * the send the plain ring implies and CaSync's engine term beyond the model; printed. */
static int path_costs(Cb *b, const AxCasyncCosts *costs, int i, AxCasyncAlgo sync,
                      AxCasyncCosts *out) {
  AxLinearCost plain;
  AxSizedTimes plain_at, casync;
  AX_TRY(ax_casync_measure_paths(b->comm, &b->cc, AX_ALLREDUCE_RING, b->codecs[i], &sync, 1,
                                 5, &plain, &plain_at, &casync));
  *out = link_costs(&costs[i], &plain, &plain_at, b->size);
  out->engine = ax_casync_engine_from(out, sync, b->size, &casync);
  char sizes[160], taken[160], engine[160];
  engine_list(&casync, 0, sizes, sizeof sizes);
  engine_list(&casync, 1, taken, sizeof taken);
  engine_list(&out->engine, 1, engine, sizeof engine);
  ax_log("# %s %s: plain ring %.4g us + bytes / %.4g GB/s, CaSync %s us side by side at %s "
         "bytes; its engine beyond the model's terms there: %s us", ax_codec_spec(b->codecs[i]),
         ax_casync_algo_name(sync), plain.latency_s * 1e6, plain.bytes_per_s / 1e9, taken,
         sizes, engine);
  return AX_OK;
}

/* One case's measurements: the plain ring, and the compressed path in each candidate K. */
typedef struct {
  double plain_us;
  int nk, k[MAX_K];
  Measured m[MAX_K];
  int best_k;      /* 0: plain is the fastest; else the fastest K */
  double best_us;
} Case;

static void find_best(Case *cs) {
  cs->best_k = 0;
  cs->best_us = cs->plain_us;
  for (int j = 0; j < cs->nk; j++)
    if (cs->m[j].us < cs->best_us) cs->best_us = cs->m[j].us, cs->best_k = cs->k[j];
}

/* The measured time of the model's pick: plain, or its K (a linear codec: its one path). */
static double picked_us(const Case *cs, const AxCasyncChoice *ch) {
  if (!ch->compress) return cs->plain_us;
  for (int j = 0; j < cs->nk; j++)
    if (cs->k[j] == ch->cpr_parts || cs->nk == 1) return cs->m[j].us;
  return cs->m[cs->nk - 1].us;
}

/* Scores the pick against the fastest measured path; returns the time it loses against it
 * (0 where it is within NOISE: right). */
static double score_pick(Score *s, const Case *cs, const AxCasyncChoice *ch, const char *what) {
  double picked = picked_us(cs, ch), loss = (picked - cs->best_us) / cs->best_us;
  double best_cpr = INFINITY;
  for (int j = 0; j < cs->nk; j++) best_cpr = fmin(best_cpr, cs->m[j].us);
  double choice_best = fmin(cs->plain_us, best_cpr);
  double choice_picked = ch->compress ? best_cpr : cs->plain_us;
  s->cases++;
  if (choice_picked <= choice_best * (1 + NOISE)) s->choice_right++;
  if (picked <= cs->best_us * (1 + NOISE)) {
    s->right++;
    return 0;
  }
  if (ch->compress && cs->plain_us <= cs->best_us * (1 + NOISE)) s->compress_slower++;
  else if (!ch->compress) s->plain_slower++;
  else s->wrong_k++;
  s->sum_loss += loss;
  if (loss > s->max_loss) {
    s->max_loss = loss;
    snprintf(s->worst, sizeof s->worst, "%s", what);
  }
  return loss;
}

/* "[1234.5,987.6]" of the K times, and the K list. */
static void k_lists(const Case *cs, char *ks, char *us, size_t cap) {
  size_t a = 0, b = 0;
  ks[0] = us[0] = 0;
  for (int j = 0; j < cs->nk; j++) {
    a += (size_t)snprintf(ks + a, cap - a, "%s%d", j ? "," : "", cs->k[j]);
    b += (size_t)snprintf(us + b, cap - b, "%s%.2f", j ? "," : "", cs->m[j].us);
  }
}

static void report_plain(Cb *b, size_t n, const AxLinkSpec *l, const Measured *m) {
  double gbps = l->bytes_per_s * 8 / 1e9;
  ax_log("  %-30s %-5s %11zu %7.3g %12.1f %14.0f %8.2fx %5s", "none (plain ring)", "ring",
         n * sizeof(float), gbps, m->us, m->wire, 1.0, m->same ? "ok" : "DIFF");
  json_row(b, "{\"bench\":\"compress\",\"row\":\"allreduce\",\"codec\":\"none (plain ring)\","
           "\"sync\":\"ring\",\"ranks\":%d,\"bytes\":%zu,\"link_gbps\":%.6g,\"latency_us\":%.6g,"
           "\"emulated\":true,\"time_us\":%.2f,\"plain_us\":%.2f,\"wire_bytes\":%.0f,"
           "\"speedup_vs_plain\":1,\"replicas_identical\":%s,\"iters\":%d}",
           b->size, n * sizeof(float), gbps, l->latency_s * 1e6, m->us, m->us, m->wire,
           m->same ? "true" : "false", b->c->iters);
}

/* A compressed case: its line (the time at K = N, the largest measured, and every K's) and
 * JSON row. */
static void report(Cb *b, const char *codec, const char *sync, size_t n, const AxLinkSpec *l,
                   const Case *cs, const AxCasyncChoice *ch, const AxSizedTimes *engine,
                   double loss) {
  const Measured *m = &cs->m[cs->nk - 1];
  double gbps = l->bytes_per_s * 8 / 1e9;
  char lost[32] = "", pick[24], best[24], ks[96], us[256], eb[96], es[96];
  int same = 1;
  for (int j = 0; j < cs->nk; j++) same &= cs->m[j].same;
  if (loss > 0) snprintf(lost, sizeof lost, " WRONG (+%.0f%%)", 100 * loss);
  if (ch->compress) snprintf(pick, sizeof pick, "K=%d", ch->cpr_parts);
  else snprintf(pick, sizeof pick, "plain");
  if (cs->best_k) snprintf(best, sizeof best, "K=%d", cs->best_k);
  else snprintf(best, sizeof best, "plain");
  k_lists(cs, ks, us, sizeof us);
  engine_list(engine, 0, eb, sizeof eb);
  engine_list(engine, 1, es, sizeof es);
  ax_log("  %-30s %-5s %11zu %7.3g %12.1f %14.0f %8.2fx %5s %-6s %-6s%s  (K %s: %s us)", codec,
         sync, n * sizeof(float), gbps, m->us, m->wire, cs->plain_us / m->us,
         same ? "ok" : "DIFF", pick, best, lost, ks, us);
  json_row(b, "{\"bench\":\"compress\",\"row\":\"allreduce\",\"codec\":\"%s\",\"sync\":\"%s\","
           "\"ranks\":%d,\"bytes\":%zu,\"link_gbps\":%.6g,\"latency_us\":%.6g,"
           "\"emulated\":true,\"time_us\":%.2f,\"plain_us\":%.2f,\"wire_bytes\":%.0f,"
           "\"speedup_vs_plain\":%.4f,\"replicas_identical\":%s,\"k\":[%s],\"k_us\":[%s],"
           "\"best\":\"%s\",\"best_k\":%d,\"best_us\":%.2f,\"model_pick\":\"%s\","
           "\"model_k\":%d,\"model_us\":%.2f,\"model_wrong\":%s,\"model_loss\":%.4f,"
           "\"noise\":%.2f,\"model_t_orig_us\":%.2f,\"model_t_cpr_us\":%.2f,"
           "\"engine_bytes\":[%s],\"engine_us\":[%s],\"iters\":%d}",
           codec, sync, b->size, n * sizeof(float), gbps, l->latency_s * 1e6, m->us,
           cs->plain_us, m->wire, cs->plain_us / m->us, same ? "true" : "false", ks, us,
           best, cs->best_k, cs->best_us, ch->compress ? "compress" : "plain",
           ch->compress ? ch->cpr_parts : 0, picked_us(cs, ch), loss > 0 ? "true" : "false",
           loss, NOISE, ch->t_orig * 1e6, ch->t_cpr * 1e6, eb, es, b->c->iters);
}

/* The virtual nodes of the all-reduce rows: --ranks-per-node, or the job in two halves. */
static int ranks_per_node(const Cb *b) {
  return b->c->ranks_per_node ? b->c->ranks_per_node : b->size / 2;
}

/* Before anything is printed: the all-reduce rows (when they run) can split the job. */
static int check_nodes(const Cb *b) {
  if (!b->c->allreduce_rows || b->size < 2) return AX_OK;
  if (b->c->ranks_per_node) return ax_vnodes_check(b->size, b->c->ranks_per_node);
  if (b->size % 2)
    return AX_FAIL("the all-reduce rows need the job's ranks in two equal virtual nodes, and %d "
                   "ranks cannot be halved: run an even number of ranks, or give --ranks-per-node "
                   "N (N divides %d) or --allreduce-rows 0", b->size, b->size);
  return AX_OK;
}

/* One size over one link: plain, then every codec with every sync in each candidate K. */
static int size_rows(Cb *b, const AxCasyncCosts *linked, const AxLinkSpec *link, size_t n,
                     Score *score) {
  Measured plain;
  int one = 1;
  AX_TRY(measure(b, NULL, AX_CASYNC_RING, n, &one, 1, &plain, NULL));
  report_plain(b, n, link, &plain);
  for (int i = 0; i < b->n_codecs; i++)
    for (int s = 0; s < b->n_syncs; s++) {
      const AxCasyncCosts *c = &linked[i * 2 + s];
      const AxSizedTimes *engine = &c->engine;
      AxCasyncChoice ch = model_pick(c, b->codecs[i], b->syncs[s], b->size, n);
      Case cs = {0};
      cs.nk = k_candidates(b->codecs[i], b->size, ch.cpr_parts, cs.k);
      Measured side;
      AX_TRY(measure(b, b->codecs[i], b->syncs[s], n, cs.k, cs.nk, cs.m, &side));
      cs.plain_us = side.us;
      find_best(&cs);
      const char *codec = ax_codec_spec(b->codecs[i]), *sync = ax_casync_algo_name(b->syncs[s]);
      char what[200], k[16] = "", best[16] = "plain";
      if (ch.compress) snprintf(k, sizeof k, " K=%d", ch.cpr_parts);
      if (cs.best_k) snprintf(best, sizeof best, "K=%d", cs.best_k);
      snprintf(what, sizeof what, "%s %s, %zu bytes, %.3g Gb/s: picked %s%s, fastest %s", codec,
               sync, n * sizeof(float), link->bytes_per_s * 8 / 1e9,
               ch.compress ? "compress" : "plain", k, best);
      double loss = score_pick(score, &cs, &ch, what);
      report(b, codec, sync, n, link, &cs, &ch, engine, loss);
    }
  return AX_OK;
}

/* The score's last line and JSON row. */
static void report_score(Cb *b, const Score *s) {
  double fraction = s->cases ? (double)s->right / s->cases : 1;
  double choice = s->cases ? (double)s->choice_right / s->cases : 1;
  ax_log("# cost model: right in %d of %d cases (%.1f%%: plain or compressed AND K within %.0f%% "
         "of the fastest measured); plain or compressed alone right in %d (%.1f%%); wrong picks: "
         "%d of compression where plain was fastest, %d of plain where compression was, %d of "
         "the wrong K; the largest loss %.1f%% of the fastest time", s->right, s->cases,
         100 * fraction, 100 * NOISE, s->choice_right, 100 * choice, s->compress_slower,
         s->plain_slower, s->wrong_k, 100 * s->max_loss);
  if (s->worst[0]) ax_log("# (the largest loss: %s)", s->worst);
  json_row(b, "{\"bench\":\"compress\",\"row\":\"score\",\"ranks\":%d,\"cases\":%d,"
           "\"right\":%d,\"fraction_right\":%.4f,\"choice_right\":%d,"
           "\"fraction_choice_right\":%.4f,\"compress_slower\":%d,\"plain_slower\":%d,"
           "\"wrong_k\":%d,\"noise\":%.2f,\"max_loss\":%.4f,\"mean_loss_when_wrong\":%.4f,"
           "\"emulated\":true}",
           b->size, s->cases, s->right, fraction, s->choice_right, choice, s->compress_slower,
           s->plain_slower, s->wrong_k, NOISE, s->max_loss,
           s->cases - s->right ? s->sum_loss / (s->cases - s->right) : 0.0);
}

/* Every codec's costs through every sync over this link (path_costs). */
static int link_engines(Cb *b, const AxCasyncCosts *costs, AxCasyncCosts *linked) {
  for (int i = 0; i < b->n_codecs; i++)
    for (int s = 0; s < b->n_syncs; s++)
      AX_TRY(path_costs(b, costs, i, b->syncs[s], &linked[i * 2 + s]));
  return AX_OK;
}

static int link_rows(Cb *b, const AxCasyncCosts *costs, const AxLinkSpec *link,
                     Score *score) {
  AxLinkEmuConfig lc = {.ranks_per_node = ranks_per_node(b), .link = *link};
  AX_TRY(ax_link_emu_create(&b->emu, b->comm, &lc));
  b->cc.links = b->emu;
  AxLinearCost plain;
  AxCasyncCosts linked[2 * MAX_ITEMS];
  int rc = ax_casync_measure_plain(b->comm, &b->cc, AX_ALLREDUCE_RING, 5, &plain, NULL);
  if (rc == AX_OK) {
    AxLinearCost send = ax_casync_send_from_plain(&plain, b->size);
    ax_log("# %.3g Gb/s, %.3g us: the plain ring measured %.4g us + bytes / %.4g GB/s (a "
           "message: %.4g us + bytes / %.4g GB/s; the link's own figures: %.4g us, %.4g GB/s)",
           link->bytes_per_s * 8 / 1e9, link->latency_s * 1e6, plain.latency_s * 1e6,
           plain.bytes_per_s / 1e9, send.latency_s * 1e6, send.bytes_per_s / 1e9,
           link->latency_s * 1e6, link->bytes_per_s / 1e9);
    rc = link_engines(b, costs, linked);
  }
  for (int i = 0; i < b->n_sizes && rc == AX_OK; i++)
    rc = size_rows(b, linked, link, (size_t)b->sizes[i] / sizeof(float), score);
  b->cc.links = NULL;
  ax_link_emu_destroy(b->emu);
  b->emu = NULL;
  return rc;
}

static int allreduce_rows(Cb *b) {
  long long largest = 0;
  for (int i = 0; i < b->n_sizes; i++) largest = b->sizes[i] > largest ? b->sizes[i] : largest;
  b->buf = ax_malloc((size_t)largest + 4);
  AxCasyncCosts costs[MAX_ITEMS];
  int rc = b->buf ? AX_OK : AX_ERR;
  rc = ax_mpi_agree(b->comm, rc);
  if (rc == AX_OK) rc = codec_costs(b, costs);
  ax_log("# all-reduce on %d ranks in two virtual nodes over EMULATED links: time = least of %d "
         "(slowest rank), time, wire and speedup (plain ring time / this) at K = N partitions, "
         "every K timed side by side with the plain ring; pick = the cost model's choice (plain "
         "or K; profiled codec costs, the plain ring and CaSync's engine measured over the link), "
         "best = the fastest measured; WRONG (+L%%) = the pick measured more than %.0f%% slower "
         "than the fastest, by L%% of its time", b->size, b->c->iters, 100 * NOISE);
  ax_log("# %-30s %-5s %11s %7s %12s %14s %9s %5s %-6s %-6s", "codec", "sync", "bytes", "Gb/s",
         "time(us)", "wire(B)", "speedup", "same", "pick", "best");
  Score score = {0};
  for (int l = 0; l < b->n_links && rc == AX_OK; l++)
    rc = link_rows(b, costs, &b->links[l], &score);
  if (rc == AX_OK) report_score(b, &score);
  free(b->buf);
  return rc;
}

/* ---------------------------------------------------------------- command */

static int run(Cb *b) {
  if (b->c->codec_rows) {
    int rc = b->rank == 0 ? codec_rows(b) : AX_OK;
    AX_TRY(ax_mpi_agree(b->comm, rc));
  }
  if (!b->c->allreduce_rows) return AX_OK;
  if (b->size < 2) {
    ax_log("# all-reduce rows skipped: they need 2 or more ranks (run under mpiexec -n 2)");
    return AX_OK;
  }
  return allreduce_rows(b);
}

static int prepare(Cb *b, const CbConfig *c, MPI_Comm comm) {
  *b = (Cb){.c = c, .comm = comm};
  AX_MPI(MPI_Comm_rank(comm, &b->rank));
  AX_MPI(MPI_Comm_size(comm, &b->size));
  AxCommConfig cc = {.polite = ax_mpi_auto_polite(comm)};
  b->cc = ax_comm_config_resolve(&cc);
  b->cc.traffic = &b->sent;
  b->cc.traffic_class = AX_TRAFFIC_DATA_PARALLEL;
  AX_TRY(parse_lists(b));
  AX_TRY(check_nodes(b));
  if (c->json && b->rank == 0) AX_TRY(ax_file_check_appendable(c->json));
  return AX_OK;
}

static int with_mpi(const CbConfig *c, int *argc, char ***argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) MPI_Init(argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ax_set_rank(rank);
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  Cb b;
  int rc = ax_mpi_agree(comm, prepare(&b, c, comm));
  if (rc != AX_OK && rank == 0) ax_print_error();
  if (rc == AX_OK && (rc = run(&b)) != AX_OK) ax_print_error();
  if (rc == AX_OK) rc = b.json_rc;
  for (int i = 0; i < b.n_codecs; i++) ax_codec_free(b.codecs[i]);
  MPI_Comm_free(&comm);
  if (!initialized) MPI_Finalize();
  return rc;
}

int ax_cmd_bench_compress(int argc, char **argv) {
  CbConfig c;
  AxOptState st;
  memset(&c, 0, sizeof c);
  int rc = ax_options_parse(&CB_TABLE, &c, argc, argv, &st);
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&CB_TABLE, stdout);
    ax_options_free(&CB_TABLE, &c);
    return 0;
  }
  if (rc == AX_OK)
    rc = with_mpi(&c, &argc, &argv);
  else
    ax_print_error();
  ax_options_free(&CB_TABLE, &c);
  return rc == AX_OK ? 0 : 1;
}
