/* codec.c — the codec registry and everything the codecs share: parsing "NAME[:key=value,...]"
 * (one message naming the codec and the key for anything wrong), the canonical spec, per-range
 * state with its checkpoint format, the error-feedback wrapper around any encode/decode codec,
 * and dispatch with the argument checks. The algorithms are in codec_<name>.c.
 *
 * Error feedback (ef=1, or always for efsignsgd and graddrop): with a state, encode adds the
 * residual to the input, encodes the sum x, and keeps x - decode(encode(x)) as the residual.
 * It is computed as -((-x) + decode(...)), which is bitwise x - decode(...) (IEEE rounding is
 * symmetric), in the residual itself: no buffer beyond the residual.
 *
 * State checkpoint format (ax_codec_state_save): a 40-byte header of uint32 magic "AXCS",
 * uint32 version 1, uint32 CRC-32 of the canonical spec, uint32 0, uint64 n, uint64 the count
 * of saved floats, uint64 codec flags; then the saved floats (the residual first, then the
 * codec's own), all in host byte order. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_impl.h"
#include "src/core/crc32.h"
#include "src/core/error.h"

static const AxCodecImpl *const CODECS[] = {
    &ax_codec_identity, &ax_codec_onebit, &ax_codec_tbq,      &ax_codec_terngrad,
    &ax_codec_qsgd,     &ax_codec_efsignsgd, &ax_codec_dgc,   &ax_codec_graddrop,
    &ax_codec_topk,     &ax_codec_randk,  &ax_codec_powersgd,
};
enum { N_CODECS = sizeof CODECS / sizeof *CODECS };

static char g_names[256];
static pthread_once_t g_names_once = PTHREAD_ONCE_INIT;

static void list_names(void) {
  size_t len = 0;
  for (int i = 0; i < N_CODECS; i++)
    len += (size_t)snprintf(g_names + len, sizeof g_names - len, "%s%s", i ? ", " : "",
                            CODECS[i]->name);
}

const char *ax_codec_names(void) {
  pthread_once(&g_names_once, list_names);
  return g_names;
}

int ax_codec_spec_has(const char *spec, const char *key) {
  size_t len = strlen(key);
  for (const char *k = strchr(spec, ':'); k; k = strchr(k + 1, ','))
    if (strncmp(k + 1, key, len) == 0 && k[1 + len] == '=') return 1;
  return 0;
}

int ax_codec_spec_defaults(const char *spec, const char *defaults, char *out, size_t cap,
                           char *added, size_t added_cap) {
  size_t len = (size_t)snprintf(out, cap, "%s", spec), alen = 0;
  char sep = strchr(spec, ':') ? ',' : ':';
  if (added && added_cap) added[0] = 0;
  for (const char *d = defaults; *d && len < cap;) {
    size_t w = strcspn(d, ","), klen = strcspn(d, "=");
    char key[32];
    snprintf(key, sizeof key, "%.*s", (int)(klen < w ? klen : w), d);
    if (!ax_codec_spec_has(spec, key)) {
      len += (size_t)snprintf(out + len, cap - len, "%c%.*s", sep, (int)w, d);
      sep = ',';
      if (added && alen < added_cap)
        alen += (size_t)snprintf(added + alen, added_cap - alen, "%s%.*s", alen ? "," : "",
                                 (int)w, d);
    }
    d += w + (d[w] == ',');
  }
  if (len >= cap || (added && alen >= added_cap))
    return AX_FAIL("codec spec '%s' with its defaults %s is too long", spec, defaults);
  return AX_OK;
}

/* ---------------------------------------------------------------- parameters */

typedef struct {
  const char *key;
  /* NULL on success, else what is wrong with the value (for "codec X: key: ..."). */
  const char *(*parse)(const char *value, AxCodecParams *p);
  /* Writes the value; returns 0 when the key is left out of the canonical spec. */
  int (*print)(const AxCodecParams *p, char *buf, size_t len);
} KeyDef;

static int parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) return AX_ERR;
  *out = v;
  return AX_OK;
}

static int parse_count(const char *s, unsigned long long *out) {
  char *end;
  if (*s < '0' || *s > '9') return AX_ERR;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno) return AX_ERR;
  *out = v;
  return AX_OK;
}

static const char *parse_ef(const char *v, AxCodecParams *p) {
  if (strcmp(v, "0") && strcmp(v, "1")) return "must be 0 or 1";
  p->ef = v[0] == '1';
  return NULL;
}
static int print_ef(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%d", p->ef), 1;
}

static const char *parse_scale(const char *v, AxCodecParams *p) {
  if (!strcmp(v, "mean")) p->twomeans = 0;
  else if (!strcmp(v, "twomeans")) p->twomeans = 1;
  else return "must be mean or twomeans";
  return NULL;
}
static int print_scale(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%s", p->twomeans ? "twomeans" : "mean"), 1;
}

static const char *parse_tau(const char *v, AxCodecParams *p) {
  if (parse_double(v, &p->tau) || !(p->tau > 0)) return "must be a number above 0";
  return NULL;
}
static int print_tau(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%.9g", p->tau), 1;
}

static const char *parse_bits(const char *v, AxCodecParams *p) {
  if (strcmp(v, "2") && strcmp(v, "4") && strcmp(v, "8")) return "must be 2, 4 or 8";
  p->bits = atoi(v);
  return NULL;
}
static int print_bits(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%d", p->bits), 1;
}

static const char *parse_ratio(const char *v, AxCodecParams *p) {
  if (parse_double(v, &p->ratio) || !(p->ratio > 0 && p->ratio <= 1))
    return "must be a number in (0, 1]";
  return NULL;
}
static int print_ratio(const AxCodecParams *p, char *b, size_t l) {
  return p->k ? 0 : (snprintf(b, l, "%.9g", p->ratio), 1);
}

static const char *parse_k(const char *v, AxCodecParams *p) {
  unsigned long long k;
  if (parse_count(v, &k) || k < 1 || k > UINT32_MAX) return "must be an integer of at least 1";
  p->k = (size_t)k;
  return NULL;
}
static int print_k(const AxCodecParams *p, char *b, size_t l) {
  return p->k ? (snprintf(b, l, "%zu", p->k), 1) : 0;
}

static const char *parse_momentum(const char *v, AxCodecParams *p) {
  if (parse_double(v, &p->momentum) || !(p->momentum >= 0 && p->momentum < 1))
    return "must be a number in [0, 1)";
  return NULL;
}
static int print_momentum(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%.9g", p->momentum), 1;
}

static const char *parse_levels(const char *v, AxCodecParams *p) {
  unsigned long long s;
  if (parse_count(v, &s) || s < 1 || s > 127) return "must be an integer from 1 to 127";
  p->levels = (int)s;
  return NULL;
}
static int print_levels(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%d", p->levels), 1;
}

static const char *parse_rank(const char *v, AxCodecParams *p) {
  unsigned long long r;
  if (!strcmp(v, "auto")) r = 0;
  else if (parse_count(v, &r) || r < 1 || r > 4096)
    return "must be auto or an integer from 1 to 4096";
  p->rank = (int)r;
  return NULL;
}
static int print_rank(const AxCodecParams *p, char *b, size_t l) {
  return p->rank ? snprintf(b, l, "%d", p->rank) : snprintf(b, l, "auto"), 1;
}

static const char *parse_cols(const char *v, AxCodecParams *p) {
  unsigned long long c;
  if (!strcmp(v, "auto")) c = 0;
  else if (parse_count(v, &c) || c < 1 || c > UINT32_MAX)
    return "must be auto or an integer of at least 1";
  p->cols = (size_t)c;
  return NULL;
}
static int print_cols(const AxCodecParams *p, char *b, size_t l) {
  return p->cols ? snprintf(b, l, "%zu", p->cols) : snprintf(b, l, "auto"), 1;
}

static const char *parse_steps(const char *v, uint64_t *out) {
  unsigned long long s;
  if (parse_count(v, &s) || s > (1ULL << 40)) return "must be an integer from 0 to 2^40";
  *out = s;
  return NULL;
}
static const char *parse_ramp(const char *v, AxCodecParams *p) { return parse_steps(v, &p->ramp); }
static int print_ramp(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%llu", (unsigned long long)p->ramp), 1;
}
static const char *parse_ramp_from(const char *v, AxCodecParams *p) {
  return parse_steps(v, &p->ramp_from);
}
static int print_ramp_from(const AxCodecParams *p, char *b, size_t l) {
  return snprintf(b, l, "%llu", (unsigned long long)p->ramp_from), 1;
}

static const KeyDef KEYS[] = {
    {"ef", parse_ef, print_ef},
    {"scale", parse_scale, print_scale},
    {"tau", parse_tau, print_tau},
    {"bits", parse_bits, print_bits},
    {"ratio", parse_ratio, print_ratio},
    {"k", parse_k, print_k},
    {"momentum", parse_momentum, print_momentum},
    {"levels", parse_levels, print_levels},
    {"rank", parse_rank, print_rank},
    {"cols", parse_cols, print_cols},
    {"ramp", parse_ramp, print_ramp},
    {"ramp_from", parse_ramp_from, print_ramp_from},
};
enum { N_KEYS = sizeof KEYS / sizeof *KEYS };

/* Whether `key` (len bytes) is in the comma-separated list. */
static int listed(const char *list, const char *key, size_t len) {
  for (const char *s = list; *s;) {
    size_t w = strcspn(s, ",");
    if (w == len && !strncmp(s, key, len)) return 1;
    s += w + (s[w] == ',');
  }
  return 0;
}

static const KeyDef *find_key(const char *key, size_t len) {
  for (int i = 0; i < N_KEYS; i++)
    if (strlen(KEYS[i].key) == len && !strncmp(KEYS[i].key, key, len)) return &KEYS[i];
  return NULL;
}

static const AxCodecImpl *find_codec(const char *name, size_t len) {
  for (int i = 0; i < N_CODECS; i++)
    if (strlen(CODECS[i]->name) == len && !strncmp(CODECS[i]->name, name, len)) return CODECS[i];
  return NULL;
}

static const char *keys_or_none(const AxCodecImpl *im) {
  return im->keys[0] ? im->keys : "none";
}

/* One "key=value" item of c's spec. */
static int parse_item(AxCodec *c, const char *item, size_t len, unsigned *given) {
  const char *name = c->impl->name;
  const char *eq = memchr(item, '=', len);
  if (!eq || eq == item || eq + 1 == item + len)
    return AX_FAIL("codec %s: malformed parameter \"%.*s\" (expected key=value)", name,
                   (int)len, item);
  size_t klen = (size_t)(eq - item);
  const KeyDef *k = find_key(item, klen);
  if (!k || !listed(c->impl->keys, item, klen))
    return AX_FAIL("codec %s: unknown key \"%.*s\" (keys: %s)", name, (int)klen, item,
                   keys_or_none(c->impl));
  unsigned bit = 1u << (k - KEYS);
  if (*given & bit) return AX_FAIL("codec %s: key %s given twice", name, k->key);
  *given |= bit;
  char value[64];
  size_t vlen = len - klen - 1;
  if (vlen >= sizeof value) return AX_FAIL("codec %s: %s: value too long", name, k->key);
  memcpy(value, eq + 1, vlen);
  value[vlen] = 0;
  const char *why = k->parse(value, &c->p);
  if (why) return AX_FAIL("codec %s: %s=%s: %s", name, k->key, value, why);
  return AX_OK;
}

/* Whether key k of c is one of its quiet keys and at the codec's default. */
static int quiet_default(const AxCodec *c, const KeyDef *k) {
  if (!c->impl->quiet || !listed(c->impl->quiet, k->key, strlen(k->key))) return 0;
  AxCodecParams d = {0};
  c->impl->defaults(&d);
  char mine[48], theirs[48];
  return k->print(&c->p, mine, sizeof mine) && k->print(&d, theirs, sizeof theirs) &&
         !strcmp(mine, theirs);
}

static void write_canonical(AxCodec *c) {
  size_t len = (size_t)snprintf(c->spec, sizeof c->spec, "%s", c->impl->name);
  char sep = ':';
  for (const char *s = c->impl->keys; *s;) {
    size_t w = strcspn(s, ",");
    const KeyDef *k = find_key(s, w);
    char value[48];
    if (k && !quiet_default(c, k) && k->print(&c->p, value, sizeof value) &&
        len < sizeof c->spec) {
      len += (size_t)snprintf(c->spec + len, sizeof c->spec - len, "%c%s=%s", sep, k->key, value);
      sep = ',';
    }
    s += w + (s[w] == ',');
  }
}

int ax_codec_parse(const char *spec, AxCodec **out) {
  *out = NULL;
  if (!spec || !*spec) return AX_FAIL("codec: empty spec (codecs: %s)", ax_codec_names());
  size_t nlen = strcspn(spec, ":");
  const AxCodecImpl *im = find_codec(spec, nlen);
  if (!im) {
    if (nlen == 4 && !strncmp(spec, "none", 4))
      return AX_FAIL("codec: \"none\" is no codec (no compression is the caller's choice); "
                     "codecs: %s", ax_codec_names());
    return AX_FAIL("unknown codec \"%.*s\" (codecs: %s)", (int)nlen, spec, ax_codec_names());
  }
  AxCodec *c = ax_calloc(1, sizeof *c);
  if (!c) return AX_ERR;
  c->impl = im;
  im->defaults(&c->p);
  if (im->ef_always) c->p.ef = 1;
  unsigned given = 0;
  for (const char *s = spec + nlen; *s;) { /* *s is the ':' or a ',' */
    size_t len = strcspn(++s, ",");
    if (parse_item(c, s, len, &given) != AX_OK) {
      free(c);
      return AX_ERR;
    }
    s += len;
  }
  unsigned ratio_and_k = 1u << (find_key("ratio", 5) - KEYS) | 1u << (find_key("k", 1) - KEYS);
  if ((given & ratio_and_k) == ratio_and_k) {
    free(c);
    return AX_FAIL("codec %s: give ratio or k, not both", im->name);
  }
  if (im->check && im->check(c) != AX_OK) {
    free(c);
    return AX_ERR;
  }
  write_canonical(c);
  *out = c;
  return AX_OK;
}

int ax_codec_cap_rank(const AxCodec *c, int max_rank, AxCodec **out, int *rank) {
  *out = ax_malloc(sizeof **out);
  if (!*out) return AX_ERR;
  **out = *c;
  *rank = 0;
  if (!listed(c->impl->keys, "rank", 4)) return AX_OK;
  int most = (*out)->p.rank ? (*out)->p.rank : AX_CODEC_AUTO_RANK_PROFILE;
  (*out)->p.rank = *rank = most < max_rank ? most : max_rank;
  write_canonical(*out);
  return AX_OK;
}

int ax_codec_rank_for(const AxCodec *c, size_t n) {
  return c->impl->rank_for ? c->impl->rank_for(c, n) : 0;
}

void ax_codec_free(AxCodec *c) { free(c); }
const char *ax_codec_spec(const AxCodec *c) { return c->spec; }
const char *ax_codec_name(const AxCodec *c) { return c->impl->name; }
int ax_codec_rounds(const AxCodec *c) { return c->impl->rounds; }
size_t ax_codec_max_bytes(const AxCodec *c, size_t n) { return c->impl->max_bytes(c, n); }
/* Only the codecs whose keys hold momentum ever set it (parameters start zeroed). */
double ax_codec_momentum(const AxCodec *c) { return c->p.momentum; }

void ax_codec_state_set_momentum(const AxCodec *c, AxCodecState *s, const float *m, float scale) {
  if (!s || c->p.momentum <= 0 || s->own_len < s->n) return;
  for (size_t i = 0; i < s->n; i++) s->own[i] = scale * m[i]; /* the momentum is own[0..n) */
}

void ax_codec_state_rescale(AxCodecState *s, float factor) {
  if (!s) return;
  for (size_t i = 0; i < s->saved_len; i++) s->saved[i] *= factor;
}

double ax_codec_ratio(const AxCodec *c, size_t n) {
  if (n == 0) return 1.0;
  size_t bytes = c->impl->steady_bytes ? c->impl->steady_bytes(c, n) : ax_codec_max_bytes(c, n);
  return (double)bytes / (4.0 * (double)n);
}

/* ---------------------------------------------------------------- state */

enum { STATE_MAGIC = 0x53435841u /* "AXCS" */, STATE_VERSION = 1, STATE_HEADER = 40 };

static int has_ef(const AxCodec *c) { return c->p.ef || c->impl->ef_always; }

int ax_codec_state_new(const AxCodec *c, size_t n, AxCodecState **out) {
  *out = NULL;
  const AxCodecImpl *im = c->impl;
  size_t own = im->own_floats ? im->own_floats(c, n) : 0;
  size_t scratch = im->scratch_bytes ? im->scratch_bytes(c, n) : 0;
  size_t saved = (has_ef(c) ? n : 0) + own;
  if (saved == 0 && scratch == 0 && im->rounds == 0) return AX_OK;
  AxCodecState *s = ax_calloc(1, sizeof *s);
  if (!s) return AX_ERR;
  s->n = n;
  s->saved_len = saved;
  s->own_len = own;
  s->scratch_bytes = scratch;
  s->spec_crc = ax_crc32(0, c->spec, strlen(c->spec));
  /* written now, not calloc'd: the pages are mapped here, at the trainer's start, and not by
   * the first compressed step (which took 239 ms against 124-130 on a 3.2M-parameter 1x2 onebit
   * run: docs/benchmarks.md, "The first compressed step") */
  s->saved = saved ? ax_malloc(saved * sizeof(float)) : NULL;
  if (s->saved) memset(s->saved, 0, saved * sizeof(float));
  s->scratch = scratch ? ax_malloc(scratch) : NULL;
  if (s->scratch) memset(s->scratch, 0, scratch);
  if ((saved && !s->saved) || (scratch && !s->scratch)) {
    ax_codec_state_free(s);
    return AX_ERR;
  }
  s->residual = has_ef(c) && n ? s->saved : NULL;
  s->own = s->saved ? s->saved + (has_ef(c) ? n : 0) : NULL;
  *out = s;
  return AX_OK;
}

void ax_codec_state_free(AxCodecState *s) {
  if (!s) return;
  free(s->saved);
  free(s->scratch);
  free(s);
}

size_t ax_codec_state_bytes(const AxCodecState *s) {
  return s ? STATE_HEADER + s->saved_len * sizeof(float) : 0;
}

int ax_codec_state_save(const AxCodecState *s, void *buf) {
  if (!s) return AX_OK;
  uint32_t h32[4] = {STATE_MAGIC, STATE_VERSION, s->spec_crc, 0};
  uint64_t h64[3] = {s->n, s->saved_len, s->flags};
  char *b = buf;
  memcpy(b, h32, sizeof h32);
  memcpy(b + sizeof h32, h64, sizeof h64);
  if (s->saved_len) memcpy(b + STATE_HEADER, s->saved, s->saved_len * sizeof(float));
  return AX_OK;
}

int ax_codec_state_load(AxCodecState *s, const void *buf, size_t bytes) {
  if (!s) return bytes ? AX_FAIL("codec state: %zu bytes for a codec that keeps none", bytes)
                       : AX_OK;
  if (bytes < STATE_HEADER) return AX_FAIL("codec state: %zu bytes, too short", bytes);
  uint32_t h32[4];
  uint64_t h64[3];
  memcpy(h32, buf, sizeof h32);
  memcpy(h64, (const char *)buf + sizeof h32, sizeof h64);
  if (h32[0] != STATE_MAGIC || h32[1] != STATE_VERSION)
    return AX_FAIL("codec state: not a codec state (bad magic or version)");
  if (h32[2] != s->spec_crc)
    return AX_FAIL("codec state: saved by another codec or other parameters");
  if (h64[0] != s->n || h64[1] != s->saved_len)
    return AX_FAIL("codec state: saved for %llu values (%llu floats), this range has %zu",
                   (unsigned long long)h64[0], (unsigned long long)h64[1], s->n);
  if (bytes != ax_codec_state_bytes(s))
    return AX_FAIL("codec state: %zu bytes, expected %zu", bytes, ax_codec_state_bytes(s));
  if (s->saved_len)
    memcpy(s->saved, (const char *)buf + STATE_HEADER, s->saved_len * sizeof(float));
  s->flags = h64[2];
  return AX_OK;
}

/* ---------------------------------------------------------------- dispatch */

static int check_range(const AxCodec *c, const AxCodecState *st, size_t n, const char *what) {
  if (n > UINT32_MAX)
    return AX_FAIL("codec %s: %s of %zu values (at most 2^32 - 1 a range)", c->impl->name, what,
                   n);
  if (st && st->n != n)
    return AX_FAIL("codec %s: %s of %zu values with the state of a range of %zu",
                   c->impl->name, what, n, st->n);
  return AX_OK;
}

static int check_encode_decode(const AxCodec *c, const void *buf, const char *what) {
  if (c->impl->rounds)
    return AX_FAIL("codec %s is linear: it has no %s (use ax_codec_factor)", c->impl->name, what);
  if (((uintptr_t)buf & 3) != 0)
    return AX_FAIL("codec %s: %s: the encoded buffer must be 4-byte aligned", c->impl->name,
                   what);
  return AX_OK;
}

int ax_codec_prepare(const AxCodec *c, AxCodecState *st, float *values, size_t n) {
  if (!st || !ax_codec_has_prepare(c)) return AX_OK;
  AX_TRY(check_range(c, st, n, "prepare"));
  c->impl->prepare(c, st, values, n);
  return AX_OK;
}

int ax_codec_has_prepare(const AxCodec *c) {
  return c->impl->prepare && (!c->impl->prepare_if_momentum || c->p.momentum > 0);
}

int ax_codec_encode_own(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                        const float *in, size_t n, float *work, void *out, size_t *bytes) {
  if (!st || !ax_codec_has_prepare(c)) return ax_codec_encode(c, st, ctx, in, n, out, bytes);
  float *owned = NULL;
  if (!work) work = owned = ax_malloc((n ? n : 1) * sizeof *work);
  if (!work) return AX_ERR;
  memcpy(work, in, n * sizeof *work);
  int rc = ax_codec_prepare(c, st, work, n);
  if (rc == AX_OK) rc = ax_codec_encode(c, st, ctx, work, n, out, bytes);
  free(owned);
  return rc;
}

int ax_codec_encode(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                    size_t n, void *out, size_t *bytes) {
  *bytes = 0;
  AX_TRY(check_encode_decode(c, out, "encode"));
  AX_TRY(check_range(c, st, n, "encode"));
  const AxCodecImpl *im = c->impl;
  if (!st || !st->residual) return im->encode(c, st, ctx, in, n, out, bytes);
  if (im->encode_ef) return im->encode_ef(c, st, ctx, in, n, out, bytes);
  float *x = st->residual; /* x = in + residual, encoded; residual = x - decode(encoded) */
  ax_op_add(x, in, n);
  AX_TRY(im->encode(c, st, ctx, x, n, out, bytes));
  ax_op_negate(x, n);
  AX_TRY(im->decode(c, out, *bytes, x, n, 1));
  ax_op_negate(x, n);
  return AX_OK;
}

int ax_codec_decode(const AxCodec *c, const AxCodecCtx *ctx, const void *in, size_t bytes,
                    float *out, size_t n, int add) {
  (void)ctx;
  AX_TRY(check_encode_decode(c, in, "decode"));
  AX_TRY(check_range(c, NULL, n, "decode"));
  return c->impl->decode(c, in, bytes, out, n, add);
}

static int check_linear(const AxCodec *c, const AxCodecState *st, size_t n, int round,
                        const char *what) {
  if (!c->impl->rounds)
    return AX_FAIL("codec %s is not linear: it has no %s (use ax_codec_encode)", c->impl->name,
                   what);
  if (round < 0 || round >= c->impl->rounds)
    return AX_FAIL("codec %s: %s of round %d (it has %d)", c->impl->name, what, round,
                   c->impl->rounds);
  if (!st) return AX_FAIL("codec %s: %s needs the range's state", c->impl->name, what);
  return check_range(c, st, n, what);
}

size_t ax_codec_factor_len(const AxCodec *c, size_t n, int round) {
  if (!c->impl->rounds || round < 0 || round >= c->impl->rounds) return 0;
  return c->impl->factor_len(c, n, round);
}

int ax_codec_factor(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, const float *in,
                    size_t n, int round, float *factor) {
  AX_TRY(check_linear(c, st, n, round, "factor"));
  return c->impl->factor(c, st, ctx, in, n, round, factor);
}

int ax_codec_factor_reduced(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx,
                            size_t n, int round, float *reduced) {
  AX_TRY(check_linear(c, st, n, round, "factor_reduced"));
  return c->impl->factor_reduced(c, st, ctx, n, round, reduced);
}

int ax_codec_rebuild(const AxCodec *c, AxCodecState *st, const AxCodecCtx *ctx, size_t n,
                     float *out) {
  AX_TRY(check_linear(c, st, n, 0, "rebuild"));
  return c->impl->rebuild(c, st, ctx, n, out);
}
