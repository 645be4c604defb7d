/* gpt_config.c — GPT-2 parameter tensors and stage layouts; see gpt_config.h. */
#include "gpt_config.h"

#include <string.h>

#include "src/core/error.h"

static const char *const NAMES[AX_N_PARAMS] = {
    "wte",  "wpe",  "ln1w", "ln1b", "qkvw", "qkvb",    "attprojw", "attprojb",
    "ln2w", "ln2b", "fcw",  "fcb",  "fcprojw", "fcprojb", "lnfw",  "lnfb"};

const char *ax_param_name(int id) { return id >= 0 && id < AX_N_PARAMS ? NAMES[id] : "?"; }

int ax_param_is_layer(int id) { return id >= AX_P_LN1W && id <= AX_P_FCPROJB; }

int ax_param_decays(int id) {
  return id == AX_P_WTE || id == AX_P_WPE || id == AX_P_QKVW || id == AX_P_ATTPROJW ||
         id == AX_P_FCW || id == AX_P_FCPROJW;
}

int ax_gpt_pad_vocab(int vocab) { return (vocab + 127) / 128 * 128; }

size_t ax_param_per_layer(const AxGptConfig *c, int id) {
  size_t C = (size_t)c->channels;
  switch (id) {
  case AX_P_LN1W: case AX_P_LN1B: case AX_P_ATTPROJB: case AX_P_LN2W: case AX_P_LN2B:
  case AX_P_FCPROJB: return C;
  case AX_P_QKVW: return 3 * C * C;
  case AX_P_QKVB: return 3 * C;
  case AX_P_ATTPROJW: return C * C;
  case AX_P_FCW: case AX_P_FCPROJW: return 4 * C * C;
  case AX_P_FCB: return 4 * C;
  default: return 0;
  }
}

size_t ax_param_size(const AxGptConfig *c, int id) {
  size_t C = (size_t)c->channels;
  switch (id) {
  case AX_P_WTE: return (size_t)c->padded_vocab * C;
  case AX_P_WPE: return (size_t)c->max_seq * C;
  case AX_P_LNFW: case AX_P_LNFB: return C;
  default: return (size_t)c->layers * ax_param_per_layer(c, id);
  }
}

size_t ax_gpt_num_params(const AxGptConfig *c) {
  size_t n = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) n += ax_param_size(c, id);
  return n;
}

int ax_gpt_config_check(const AxGptConfig *c) {
  if (c->layers < 1 || c->channels < 1 || c->heads < 1 || c->max_seq < 1 || c->vocab < 2)
    return AX_FAIL("model dimensions must be positive (layers %d, hidden %d, heads %d, seq %d, "
                   "vocab %d)", c->layers, c->channels, c->heads, c->max_seq, c->vocab);
  if (c->channels % c->heads)
    return AX_FAIL("--hidden %d is not divisible by --heads %d", c->channels, c->heads);
  if (c->padded_vocab < c->vocab)
    return AX_FAIL("padded vocabulary %d is smaller than the vocabulary %d", c->padded_vocab,
                   c->vocab);
  if (c->vocab > 65536)
    return AX_FAIL("vocabulary %d does not fit the uint16 token format", c->vocab);
  /* in floating point, so that a huge header cannot wrap the count to something small */
  double C = c->channels, params = (double)c->padded_vocab * C + (double)c->max_seq * C +
                                   c->layers * (12.0 * C * C + 13.0 * C) + 2.0 * C;
  if (params * sizeof(float) > AX_GPT_MAX_BYTES)
    return AX_FAIL("a model of %.3g parameters (L=%d C=%d V=%d T=%d) is too large to address",
                   params, c->layers, c->channels, c->padded_vocab, c->max_seq);
  return AX_OK;
}

/* The row length of tensor id's matrices (w[OC, IC]: IC), or 0 for a 1-D tensor. */
static size_t matrix_cols(const AxGptConfig *c, int id) {
  size_t C = (size_t)c->channels;
  switch (id) {
  case AX_P_WTE: case AX_P_WPE: case AX_P_QKVW: case AX_P_ATTPROJW: case AX_P_FCW: return C;
  case AX_P_FCPROJW: return 4 * C;
  default: return 0;
  }
}

void ax_stage_layout(AxStageLayout *s, const AxGptConfig *c, int l0, int l1, int first,
                     int last) {
  memset(s, 0, sizeof *s);
  s->l0 = l0;
  s->l1 = l1;
  s->first = first;
  s->last = last;
  size_t file_off = 0, off = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    size_t full = ax_param_size(c, id), start = 0, count = 0;
    int has;
    if (ax_param_is_layer(id)) {
      has = l1 > l0;
      start = (size_t)l0 * ax_param_per_layer(c, id);
      count = (size_t)(l1 - l0) * ax_param_per_layer(c, id);
    } else if (id == AX_P_WTE) {
      has = first || last; /* the tied LM head: the last stage keeps its own copy */
      count = full;
    } else if (id == AX_P_WPE) {
      has = first;
      count = full;
    } else {
      has = last;
      count = full;
    }
    s->has[id] = has;
    s->cols[id] = has ? matrix_cols(c, id) : 0;
    s->file_offset[id] = file_off + start;
    if (has) {
      s->offset[id] = off;
      s->count[id] = count;
      off += count;
    }
    file_off += full;
  }
  s->total = off;
}

double ax_gpt_train_flops(const AxGptConfig *c, long long B, int T, int recompute) {
  double h = c->channels, l = c->layers, s = T, V = c->vocab;
  double base = (double)B * s * l * h * h;
  if (recompute) return 96.0 * base * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
  return 72.0 * base * (1.0 + s / (6.0 * h) + V / (12.0 * l * h));
}
