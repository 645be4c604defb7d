/* sample_text.c — sample's prompt and output through bytes, ids or a tokenizer; see
 * sample_text.h. */
#include "sample_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

static int check_size(const char *what, const char *path, int tokens, int model_vocab) {
  if (tokens < model_vocab)
    return AX_FAIL("%s %s has %d tokens but the model's vocabulary has %d", what, path, tokens,
                   model_vocab);
  return AX_OK;
}

int ax_sample_text_open(AxSampleText *t, int model_vocab, const char *tokenizer,
                        const char *bpe_dir) {
  memset(t, 0, sizeof *t);
  t->vocab = model_vocab;
  int rc = AX_OK;
  if (tokenizer) {
    rc = ax_token_table_read(&t->file, tokenizer);
    if (rc == AX_OK) rc = check_size("tokenizer", tokenizer, t->file.vocab, model_vocab);
    t->print = &t->file;
  }
  if (rc == AX_OK && bpe_dir) {
    rc = ax_bpe_load(&t->bpe, bpe_dir);
    if (rc == AX_OK && !tokenizer) {
      t->print = ax_bpe_tokens(t->bpe);
      rc = check_size("--bpe-dir", bpe_dir, t->print->vocab, model_vocab);
    }
  }
  if (rc != AX_OK) ax_sample_text_close(t);
  return rc;
}

void ax_sample_text_close(AxSampleText *t) {
  ax_token_table_free(&t->file);
  ax_bpe_free(t->bpe);
  memset(t, 0, sizeof *t);
}

static int parse_ids(const AxSampleText *t, const char *p, AxTokens *out) {
  while (*p) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || v < 0 || v >= t->vocab)
      return AX_FAIL("--prompt for a %d-token vocabulary must be token ids like 1,2,3, or text "
                     "with --bpe-dir DIR (GPT-2's encoder.json and vocab.bpe)", t->vocab);
    int32_t id = (int32_t)v;
    AX_TRY(ax_tokens_push(out, &id, 1));
    p = *end == ',' ? end + 1 : end;
  }
  return AX_OK;
}

static int encode_text(const AxSampleText *t, const char *p, AxTokens *out) {
  size_t n = strlen(p);
  if (!t->bpe) {
    for (size_t i = 0; i < n; i++) {
      int32_t byte = (unsigned char)p[i];
      if (byte >= t->vocab) return AX_FAIL("prompt byte %d is outside the vocabulary", byte);
      AX_TRY(ax_tokens_push(out, &byte, 1));
    }
    return AX_OK;
  }
  AX_TRY(ax_bpe_encode(t->bpe, (const uint8_t *)p, n, out));
  for (size_t i = 0; i < out->n; i++)
    if (out->ids[i] >= t->vocab)
      return AX_FAIL("prompt token %d is outside the model's vocabulary of %d (is --bpe-dir "
                     "the model's tokenizer?)", out->ids[i], t->vocab);
  return AX_OK;
}

static int32_t start_token(const AxSampleText *t) {
  if (t->print && t->print->eot >= 0 && t->print->eot < t->vocab) return t->print->eot;
  return t->vocab <= 256 ? '\n' : 0;
}

int ax_sample_text_prompt(AxSampleText *t, const char *prompt, AxTokens *out) {
  out->n = 0;
  if (t->bpe || t->vocab <= 256)
    AX_TRY(encode_text(t, prompt, out));
  else
    AX_TRY(parse_ids(t, prompt, out));
  if (out->n > 0) return AX_OK;
  int32_t start = start_token(t);
  return ax_tokens_push(out, &start, 1);
}

void ax_sample_text_emit(const AxSampleText *t, int token) {
  if (t->print) {
    size_t len;
    const uint8_t *bytes = ax_token_bytes(t->print, token, &len);
    fwrite(bytes, 1, len, stdout);
  } else if (t->vocab <= 256) {
    putchar(token);
  } else {
    printf("%d ", token);
  }
  fflush(stdout);
}
