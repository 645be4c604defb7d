/* hf_gpt2.c — GPT-2 as Hugging Face stores it (safetensors + config.json); see hf_gpt2.h. */
#include "hf_gpt2.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/core/error.h"
#include "src/core/fileio.h"

enum { MAX_HEADER = 64 << 20 }; /* a GPT-2 header is a few KB a layer */

/* One tensor of the file: llm.c's slice [src, src + rows x max(cols, 1)) of a [rows, cols]
 * matrix (cols 0: a vector of `rows`), stored transposed (Conv1D's [in, out]) when transpose. */
typedef struct {
  char name[64];
  size_t src;
  size_t rows, cols;
  int transpose;
} HfTensor;

static const struct {
  const char *name; /* "%d" takes the block's index */
  int transpose;
} NAMES[AX_N_PARAMS] = {
    [AX_P_WTE] = {"wte.weight", 0},
    [AX_P_WPE] = {"wpe.weight", 0},
    [AX_P_LN1W] = {"h.%d.ln_1.weight", 0},
    [AX_P_LN1B] = {"h.%d.ln_1.bias", 0},
    [AX_P_QKVW] = {"h.%d.attn.c_attn.weight", 1},
    [AX_P_QKVB] = {"h.%d.attn.c_attn.bias", 0},
    [AX_P_ATTPROJW] = {"h.%d.attn.c_proj.weight", 1},
    [AX_P_ATTPROJB] = {"h.%d.attn.c_proj.bias", 0},
    [AX_P_LN2W] = {"h.%d.ln_2.weight", 0},
    [AX_P_LN2B] = {"h.%d.ln_2.bias", 0},
    [AX_P_FCW] = {"h.%d.mlp.c_fc.weight", 1},
    [AX_P_FCB] = {"h.%d.mlp.c_fc.bias", 0},
    [AX_P_FCPROJW] = {"h.%d.mlp.c_proj.weight", 1},
    [AX_P_FCPROJB] = {"h.%d.mlp.c_proj.bias", 0},
    [AX_P_LNFW] = {"ln_f.weight", 0},
    [AX_P_LNFB] = {"ln_f.bias", 0},
};

/* The [rows, cols] of one slice of tensor id (llm.c's [out, in]); cols 0: a vector. */
static void slice_shape(const AxGptConfig *c, int id, size_t *rows, size_t *cols) {
  size_t C = (size_t)c->channels;
  switch (id) {
  case AX_P_WTE: *rows = (size_t)c->vocab, *cols = C; return; /* the padding rows stay out */
  case AX_P_WPE: *rows = (size_t)c->max_seq, *cols = C; return;
  case AX_P_QKVW: *rows = 3 * C, *cols = C; return;
  case AX_P_ATTPROJW: *rows = C, *cols = C; return;
  case AX_P_FCW: *rows = 4 * C, *cols = C; return;
  case AX_P_FCPROJW: *rows = C, *cols = 4 * C; return;
  default: *rows = ax_param_per_layer(c, id) ? ax_param_per_layer(c, id) : C, *cols = 0;
  }
}

/* Every tensor of c's model, in file order, into t (caller frees); *n their number. */
static int tensor_table(const AxGptConfig *c, HfTensor **out, int *n) {
  int cap = 4 + 12 * c->layers, k = 0;
  HfTensor *t = ax_calloc((size_t)cap, sizeof *t);
  if (!t) return AX_ERR;
  size_t at = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    int layers = ax_param_is_layer(id) ? c->layers : 1;
    size_t each = ax_param_size(c, id) / (size_t)layers;
    for (int l = 0; l < layers; l++, k++) {
      snprintf(t[k].name, sizeof t[k].name, NAMES[id].name, l);
      t[k].src = at + (size_t)l * each;
      t[k].transpose = NAMES[id].transpose;
      slice_shape(c, id, &t[k].rows, &t[k].cols);
    }
    at += ax_param_size(c, id);
  }
  *out = t;
  *n = k;
  return AX_OK;
}

static size_t elements(const HfTensor *t) { return t->rows * (t->cols ? t->cols : 1); }

int ax_hf_gpt2_is(const char *path) {
  struct stat st;
  size_t len = strlen(path);
  if (len > 12 && !strcmp(path + len - 12, ".safetensors")) return 1;
  char inner[PATH_MAX];
  snprintf(inner, sizeof inner, "%s/model.safetensors", path);
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(inner, &st) == 0;
}

/* The two paths of a model given as a directory or as its .safetensors file. */
static void model_paths(const char *path, char *tensors, char *config) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(tensors, PATH_MAX, "%s/model.safetensors", path);
    snprintf(config, PATH_MAX, "%s/config.json", path);
    return;
  }
  snprintf(tensors, PATH_MAX, "%s", path);
  const char *slash = strrchr(path, '/');
  int dir = slash ? (int)(slash - path) : 0;
  snprintf(config, PATH_MAX, "%.*s%sconfig.json", dir, path, slash ? "/" : "");
}

/* ------------------------------------------------------------------------------- writing */

/* Appends printf text to a growing buffer. */
typedef struct {
  char *s;
  size_t len, cap;
  int failed;
} Text;

static void text_add(Text *b, const char *fmt, ...) AX_PRINTF(2, 3);
static void text_add(Text *b, const char *fmt, ...) {
  for (int tries = 0; tries < 2 && !b->failed; tries++) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) break;
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t cap = 2 * (b->cap + (size_t)n) + 256;
    char *grown = realloc(b->s, cap);
    if (!grown) break;
    b->s = grown, b->cap = cap;
  }
  b->failed = 1;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes (the format's advice). */
static int header_json(const HfTensor *t, int n, Text *h) {
  size_t offset = 0;
  text_add(h, "{\"__metadata__\":{\"format\":\"pt\"}");
  for (int i = 0; i < n; i++) {
    size_t bytes = elements(&t[i]) * sizeof(float);
    if (!t[i].cols)
      text_add(h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu],", t[i].name, t[i].rows);
    else
      text_add(h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%zu,%zu],", t[i].name,
               t[i].transpose ? t[i].cols : t[i].rows, t[i].transpose ? t[i].rows : t[i].cols);
    text_add(h, "\"data_offsets\":[%zu,%zu]}", offset, offset + bytes);
    offset += bytes;
  }
  text_add(h, "}");
  while (!h->failed && h->len % 8) text_add(h, " ");
  return h->failed ? AX_FAIL("out of memory for the safetensors header") : AX_OK;
}

/* One tensor's bytes: as they are, or the matrix transposed through a scratch buffer. */
static int write_tensor(AxFile *f, const HfTensor *t, const float *params, float *scratch) {
  const float *src = params + t->src;
  if (!t->transpose) return ax_file_write(f, src, elements(t) * sizeof(float));
  for (size_t r = 0; r < t->rows; r++)
    for (size_t c = 0; c < t->cols; c++) scratch[c * t->rows + r] = src[r * t->cols + c];
  return ax_file_write(f, scratch, elements(t) * sizeof(float));
}

static int write_tensors(const char *path, const AxGptConfig *cfg, const float *params) {
  HfTensor *t;
  int n;
  AX_TRY(tensor_table(cfg, &t, &n));
  Text h = {0};
  float *scratch = ax_malloc((size_t)cfg->channels * 4 * (size_t)cfg->channels * sizeof *scratch);
  int rc = scratch ? header_json(t, n, &h) : AX_ERR;
  AxFile f;
  if (rc == AX_OK) rc = ax_file_open_write(&f, path);
  if (rc == AX_OK) {
    uint64_t len = h.len; /* little-endian on every host this builds for */
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(len >> (8 * i));
    rc = ax_file_write(&f, le, sizeof le);
    if (rc == AX_OK) rc = ax_file_write(&f, h.s, h.len);
    for (int i = 0; i < n && rc == AX_OK; i++) rc = write_tensor(&f, &t[i], params, scratch);
    if (rc == AX_OK) rc = ax_file_commit(&f);
    else ax_file_abort(&f);
  }
  free(scratch);
  free(h.s);
  free(t);
  return rc;
}

/* GPT2Config for cfg: llm.c's GPT-2 (tanh GELU, LayerNorm eps 1e-5, tied LM head). */
static int write_config(const char *path, const AxGptConfig *c, const AxHfDropout *d) {
  Text j = {0};
  text_add(&j,
           "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
           "  \"vocab_size\": %d,\n  \"n_positions\": %d,\n  \"n_ctx\": %d,\n"
           "  \"n_embd\": %d,\n  \"n_layer\": %d,\n  \"n_head\": %d,\n  \"n_inner\": null,\n"
           "  \"activation_function\": \"gelu_new\",\n  \"layer_norm_epsilon\": 1e-05,\n"
           "  \"resid_pdrop\": %.9g,\n  \"embd_pdrop\": %.9g,\n  \"attn_pdrop\": %.9g,\n"
           "  \"initializer_range\": 0.02,\n  \"tie_word_embeddings\": true,\n"
           "  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n  \"torch_dtype\": \"float32\"\n}\n",
           c->vocab, c->max_seq, c->max_seq, c->channels, c->layers, c->heads, d->resid_embd,
           d->resid_embd, d->attn, c->vocab - 1, c->vocab - 1);
  if (j.failed) return AX_FAIL("out of memory for config.json");
  AxFile f;
  int rc = ax_file_open_write(&f, path);
  if (rc == AX_OK) {
    rc = ax_file_write(&f, j.s, j.len);
    if (rc == AX_OK) rc = ax_file_commit(&f);
    else ax_file_abort(&f);
  }
  free(j.s);
  return rc;
}

int ax_hf_gpt2_write(const char *dir, const AxGptConfig *cfg, const AxHfDropout *drop,
                     const float *params) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return AX_FAIL("cannot create the directory %s: %s", dir, strerror(errno));
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return AX_FAIL("%s is not a directory (--format safetensors writes a directory)", dir);
  char tensors[PATH_MAX], config[PATH_MAX];
  model_paths(dir, tensors, config);
  AX_TRY(write_tensors(tensors, cfg, params));
  return write_config(config, cfg, drop);
}

/* ------------------------------------------------------------------------------- reading */

/* The integer after "key": in a JSON text, or -1. */
static long json_int(const char *json, const char *key) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\"", key);
  const char *at = strstr(json, quoted);
  if (!at) return -1;
  at += strlen(quoted);
  while (*at == ' ' || *at == '\t' || *at == '\n' || *at == '\r' || *at == ':') at++;
  char *end;
  long v = strtol(at, &end, 10);
  return end == at ? -1 : v;
}

/* The JSON header of a safetensors file (NUL-terminated, caller frees) and where the data
 * starts; f stays open. */
static int read_header(AxFile *f, const char *path, char **header, long long *data_start) {
  unsigned char le[8];
  AX_TRY(ax_file_open_read(f, path));
  uint64_t len = 0;
  int rc = ax_file_read(f, le, sizeof le, "safetensors header length");
  for (int i = 0; i < 8 && rc == AX_OK; i++) len |= (uint64_t)le[i] << (8 * i);
  if (rc == AX_OK && (len < 2 || len > MAX_HEADER || (long long)(8 + len) > f->size))
    rc = AX_FAIL("%s: a header of %llu bytes in a file of %lld: not a safetensors file", path,
                 (unsigned long long)len, f->size);
  *header = rc == AX_OK ? ax_malloc(len + 1) : NULL;
  if (rc == AX_OK && !*header) rc = AX_ERR;
  if (rc == AX_OK) rc = ax_file_read(f, *header, len, "safetensors header");
  if (rc == AX_OK) (*header)[len] = 0, *data_start = 8 + (long long)len;
  if (rc == AX_OK && (*header)[0] != '{')
    rc = AX_FAIL("%s: the header is not a JSON object: not a safetensors file", path);
  if (rc != AX_OK) free(*header), *header = NULL, ax_file_close(f);
  return rc;
}

/* The entry of tensor `name` in the header: dtype, shape and byte range. */
typedef struct {
  char dtype[16];
  size_t shape[4];
  int dims;
  size_t begin, end;
} HfEntry;

static int find_entry(const char *header, const char *path, const char *name, HfEntry *e) {
  char quoted[80];
  snprintf(quoted, sizeof quoted, "\"%s\"", name);
  const char *at = strstr(header, quoted);
  while (at && at > header && at[-1] != '{' && at[-1] != ',' && at[-1] != ' ')
    at = strstr(at + 1, quoted);
  if (!at) return AX_FAIL("%s: no tensor %s (not a Hugging Face GPT-2 of this shape)", path, name);
  const char *obj = strchr(at + strlen(quoted), '{'), *close = obj ? strchr(obj, '}') : NULL;
  const char *dt = obj ? strstr(obj, "\"dtype\"") : NULL, *sh = obj ? strstr(obj, "\"shape\"") : NULL;
  const char *off = obj ? strstr(obj, "\"data_offsets\"") : NULL;
  if (!close || !dt || !sh || !off || dt > close || sh > close || off > close ||
      sscanf(dt, "\"dtype\" : \"%15[^\"]\"", e->dtype) != 1)
    return AX_FAIL("%s: tensor %s: no dtype, shape and data_offsets", path, name);
  e->dims = 0;
  const char *p = strchr(sh, '[');
  for (p = p ? p + 1 : close; p < close && *p != ']' && e->dims < 4;) {
    char *end;
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p) break;
    e->shape[e->dims++] = (size_t)v;
    p = end;
    while (*p == ',' || *p == ' ') p++;
  }
  unsigned long long b, en;
  const char *q = strchr(off, '[');
  if (!q || sscanf(q, "[ %llu , %llu ]", &b, &en) != 2)
    return AX_FAIL("%s: tensor %s: unreadable data_offsets", path, name);
  e->begin = (size_t)b, e->end = (size_t)en;
  return AX_OK;
}

/* Tensor t's entry checked against what the model needs: F32, its shape, a range inside the
 * file's data of exactly its bytes. */
static int check_entry(const HfEntry *e, const HfTensor *t, const char *path, long long data) {
  size_t want0 = t->cols && t->transpose ? t->cols : t->rows;
  size_t want1 = t->cols ? (t->transpose ? t->rows : t->cols) : 0;
  int dims = t->cols ? 2 : 1;
  if (strcmp(e->dtype, "F32"))
    return AX_FAIL("%s: tensor %s is %s; only F32 is read (convert with "
                   "model.float().save_pretrained)", path, t->name, e->dtype);
  if (e->dims != dims || e->shape[0] != want0 || (dims == 2 && e->shape[1] != want1)) {
    char want[48];
    if (dims == 2) snprintf(want, sizeof want, "[%zu, %zu]", want0, want1);
    else snprintf(want, sizeof want, "[%zu]", want0);
    return AX_FAIL("%s: tensor %s has the wrong shape for this model (expected %s, as "
                   "config.json says)", path, t->name, want);
  }
  if (e->end < e->begin || e->end - e->begin != elements(t) * sizeof(float) ||
      (long long)e->end > data)
    return AX_FAIL("%s: tensor %s: data_offsets [%zu, %zu] do not hold its %zu bytes inside "
                   "the file", path, t->name, e->begin, e->end, elements(t) * sizeof(float));
  return AX_OK;
}

int ax_hf_gpt2_read_config(const char *path, AxGptConfig *cfg) {
  char tensors[PATH_MAX], config[PATH_MAX];
  model_paths(path, tensors, config);
  unsigned char *json;
  size_t n;
  AX_TRY(ax_file_read_all(config, &json, &n));
  json[n] = 0;
  long heads = json_int((char *)json, "n_head"), layers = json_int((char *)json, "n_layer");
  long embd = json_int((char *)json, "n_embd"), vocab = json_int((char *)json, "vocab_size");
  long pos = json_int((char *)json, "n_positions");
  free(json);
  if (heads < 1 || layers < 1 || embd < 1 || vocab < 2 || pos < 1 || heads > 1 << 20 ||
      layers > 1 << 20 || embd > 1 << 24 || vocab > 1 << 24 || pos > 1 << 24)
    return AX_FAIL("%s: no n_head, n_layer, n_embd, vocab_size and n_positions of a GPT-2",
                   config);
  *cfg = (AxGptConfig){.max_seq = (int)pos, .vocab = (int)vocab,
                       .padded_vocab = ax_gpt_pad_vocab((int)vocab), .layers = (int)layers,
                       .heads = (int)heads, .channels = (int)embd};
  if (ax_gpt_config_check(cfg) != AX_OK) return ax_error_context("%s", config);
  return AX_OK; /* the tensors must agree: every shape is checked on read */
}

static int read_tensor(AxFile *f, const HfEntry *e, const HfTensor *t, long long data_start,
                       float *params, float *scratch) {
  AX_TRY(ax_file_seek(f, data_start + (long long)e->begin));
  float *dst = params + t->src;
  if (!t->transpose) return ax_file_read(f, dst, elements(t) * sizeof(float), t->name);
  AX_TRY(ax_file_read(f, scratch, elements(t) * sizeof(float), t->name));
  for (size_t r = 0; r < t->rows; r++)
    for (size_t c = 0; c < t->cols; c++) dst[r * t->cols + c] = scratch[c * t->rows + r];
  return AX_OK;
}

int ax_hf_gpt2_read(const char *path, const AxGptConfig *cfg, float *params) {
  char tensors[PATH_MAX], config[PATH_MAX];
  model_paths(path, tensors, config);
  HfTensor *t;
  int n;
  AX_TRY(tensor_table(cfg, &t, &n));
  AxFile f;
  char *header = NULL;
  long long data_start = 0;
  int rc = read_header(&f, tensors, &header, &data_start);
  if (rc != AX_OK) {
    free(t);
    return rc;
  }
  float *scratch = ax_malloc((size_t)cfg->channels * 4 * (size_t)cfg->channels * sizeof *scratch);
  if (!scratch) rc = AX_ERR;
  memset(params, 0, ax_gpt_num_params(cfg) * sizeof *params); /* wte's padding rows */
  for (int i = 0; i < n && rc == AX_OK; i++) {
    HfEntry e;
    rc = find_entry(header, tensors, t[i].name, &e);
    if (rc == AX_OK) rc = check_entry(&e, &t[i], tensors, f.size - data_start);
    if (rc == AX_OK) rc = read_tensor(&f, &e, &t[i], data_start, params, scratch);
  }
  char extra[32];
  snprintf(extra, sizeof extra, "\"h.%d.", cfg->layers);
  if (rc == AX_OK && strstr(header, extra))
    rc = AX_FAIL("%s: holds more blocks than config.json's n_layer %d", tensors, cfg->layers);
  ax_file_close(&f);
  free(scratch);
  free(header);
  free(t);
  return rc;
}
