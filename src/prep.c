/* prep.c — `axonn prep`: a text file to byte-level token shards (vocabulary 256),
 * PREFIX_train.bin with the first 90% and PREFIX_val.bin with the rest. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "error.h"
#include "fileio.h"
#include "log.h"
#include "options.h"
#include "shard.h"

typedef struct {
  char *input, *output;
  double val_fraction;
} PrepConfig;

static const AxOption PREP_OPTS[] = {
    {"input", AX_OPT_STRING, offsetof(PrepConfig, input), NULL, "FILE", "text file to tokenize",
     1, 0, NULL},
    {"output", AX_OPT_STRING, offsetof(PrepConfig, output), NULL, "PREFIX",
     "writes PREFIX_train.bin and PREFIX_val.bin", 1, 0, NULL},
    {"val-fraction", AX_OPT_FLOAT, offsetof(PrepConfig, val_fraction), "0.1", "X",
     "fraction of the text (at its end) held out for validation", 0.0, 0.9, NULL},
};
static const AxOptionTable PREP_TABLE = {
    "prep", "Tokenize a text file into byte-level llm.c token shards (vocabulary 256).",
    PREP_OPTS, 3};

static int read_all(const char *path, uint8_t **out, size_t *n) {
  AxFile f;
  AX_TRY(ax_file_open_read(&f, path));
  *n = (size_t)f.size;
  *out = ax_malloc(*n);
  int rc = *out ? ax_file_read(&f, *out, *n, "text") : AX_ERR;
  ax_file_close(&f);
  return rc;
}

/* Writes PREFIX_train.bin and PREFIX_val.bin, both or neither: both are written to temporary
 * files first, and the training shard is removed again if the validation shard cannot be put
 * in place after it. */
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

static int prep(const PrepConfig *c) {
  if (!c->input || !c->output) return AX_FAIL("prep needs --input FILE and --output PREFIX");
  uint8_t *text = NULL;
  size_t n = 0;
  int rc = read_all(c->input, &text, &n);
  uint16_t *tokens = rc == AX_OK ? ax_malloc((n ? n : 1) * sizeof *tokens) : NULL;
  if (rc == AX_OK && !tokens) rc = AX_ERR;
  if (rc == AX_OK && n < 2) rc = AX_FAIL("%s: needs at least 2 bytes of text", c->input);
  if (rc == AX_OK) {
    for (size_t i = 0; i < n; i++) tokens[i] = text[i];
    size_t n_val = (size_t)((double)n * c->val_fraction);
    rc = write_split(c->output, tokens, n - n_val, n_val);
  }
  free(text);
  free(tokens);
  return rc;
}

int ax_cmd_prep(int argc, char **argv) {
  PrepConfig c;
  AxOptState st;
  memset(&c, 0, sizeof c);
  int rc = ax_options_parse(&PREP_TABLE, &c, argc, argv, &st);
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&PREP_TABLE, stdout);
  } else {
    if (rc == AX_OK) rc = prep(&c);
    if (rc != AX_OK) ax_print_error();
  }
  ax_options_free(&PREP_TABLE, &c);
  return rc == AX_OK ? 0 : 1;
}
