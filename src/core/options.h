/* options.h — GNU long options (`--name value`, `--name=value`) and `--config FILE`
 * (`name = value` per line; `#` at the start of a line or after a blank starts a comment, a
 * `#` inside a word is part of the value; the command line wins) parsed into a plain struct
 * from a table. Integers take K, M, G suffixes (x 1024^n) and are checked for overflow. The
 * same table prints `--help`. Every problem is one clear error. Also the one checked reading of
 * an integer (and of a list of them, "1,2,4" or "2-3") that the option values other parsers own
 * (--fusion, --grid, --trace-steps, --models, ...) go through: nothing wraps past 64 bits. */
#ifndef AX_OPTIONS_H
#define AX_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
  AX_OPT_INT,    /* int, checked against [min, max] */
  AX_OPT_LONG,   /* long long, checked against [min, max] */
  AX_OPT_FLOAT,  /* double, checked against [min, max] */
  AX_OPT_STRING, /* char *, owned by the struct (free with ax_options_free) */
  AX_OPT_FLAG,   /* int 0/1; `--name` alone sets 1, `--name=0` clears */
  AX_OPT_CHOICE, /* int index into `choices` ("a|b|c"), given by name */
} AxOptType;

typedef struct {
  const char *name;    /* without the dashes */
  AxOptType type;
  size_t offset;       /* offsetof(config struct, field) */
  const char *def;     /* default as text; NULL = 0 / NULL string */
  const char *metavar; /* shown in --help, e.g. "N" or "FILE" */
  const char *help;
  double min, max;     /* numeric range; min > max means unchecked */
  const char *choices; /* for AX_OPT_CHOICE: "constant|cosine" */
} AxOption;

typedef struct {
  const char *command; /* "train" */
  const char *summary; /* one line under the usage */
  const AxOption *opts;
  int n_opts;
} AxOptionTable;

enum { AX_MAX_OPTIONS = 160, AX_MAX_POSITIONAL = 4 };

typedef struct {
  unsigned char set[AX_MAX_OPTIONS]; /* 1 where the user gave the option (flag or config) */
  int help;                          /* --help / -h was given in an option's place */
  const char *positional[AX_MAX_POSITIONAL]; /* into argv, in order */
  int n_positional;
} AxOptState;

/* Applies defaults, then the --config file if any, then the command line (argv[0] is the
 * subcommand name and is skipped). Returns AX_OK or AX_ERR with the error recorded. */
int ax_options_parse(const AxOptionTable *t, void *cfg, int argc, char **argv, AxOptState *st);
/* The same for a command that also takes up to max_positional arguments that are not options
 * (file names), returned in st->positional in order; more is an error. */
int ax_options_parse_with_args(const AxOptionTable *t, void *cfg, int argc, char **argv,
                               int max_positional, AxOptState *st);
/* Applies defaults, then the `name = value` lines of path (the --config format; a name the
 * table lacks is an error naming the file and line). Other files of that shape use it too (a
 * machine description, src/plan/machine.h). */
int ax_options_parse_file(const AxOptionTable *t, void *cfg, const char *path, AxOptState *st);
/* Applies defaults only (tests and internal callers that build a config by hand). */
int ax_options_defaults(const AxOptionTable *t, void *cfg);
/* Sets one option from text, as if given on the command line. */
int ax_options_set(const AxOptionTable *t, void *cfg, const char *name, const char *value,
                   AxOptState *st);
/* 1 when the option named was given by the user (command line or config file). */
int ax_options_was_set(const AxOptionTable *t, const AxOptState *st, const char *name);
void ax_options_print_help(const AxOptionTable *t, FILE *out);
/* Writes "name = value" lines for every option (the effective configuration). */
void ax_options_dump(const AxOptionTable *t, const void *cfg, FILE *out);
/* The value of one option as text (for JSON summaries); buf must hold 256 bytes. */
const char *ax_options_value_text(const AxOption *o, const void *cfg, char *buf, size_t cap);
void ax_options_free(const AxOptionTable *t, void *cfg);
/* Takes `--name VALUE` or `--name=VALUE` out of argv (a command's own options beside a shared
 * table's): *value points into argv (the last one given wins), argc shrinks. AX_ERR when the
 * option has no value. */
int ax_options_take(int *argc, char **argv, const char *name, const char **value);

/* ------------------------------------------------------------------ integers in other text */

typedef enum {
  AX_INT_OK = 0,
  AX_INT_NOT_A_NUMBER, /* no digits where the number should be, or text after it */
  AX_INT_PAST_64_BITS, /* the digits (times the suffix) do not fit a long long */
} AxIntRead;
/* Reads one decimal integer (strtoll's syntax) at the start of text, then a K, M or G suffix
 * (x 1024^n) when `suffixes`. end NULL: the whole text must be the number; otherwise *end gets
 * where it stopped. Records no error: the caller says what it expected. */
AxIntRead ax_options_read_int(const char *text, const char **end, int suffixes, long long *out);

typedef struct {
  const char *name;   /* the option, without the dashes, for messages: "grid" */
  const char *seps;   /* the characters that separate entries: ",", "-", ",x" */
  const char *shape;  /* what the text should be, for messages: "a range like 2-3" */
  long long min, max; /* every entry */
  int n_min, n_max;   /* how many entries; out holds n_max */
} AxIntList;
/* Reads a list of integers such as "1,2,4", "2-3" or "1x2x2x8x1" into out; *n gets the count.
 * One error line on failure: "--NAME 'TEXT' is not SHAPE" (an empty entry, something else than
 * numbers and separators, too few entries), "--NAME 'TEXT' has more than N_MAX entries", or
 * "--NAME 'TEXT': ENTRY is out of range [MIN, MAX]" (64-bit overflow included). */
int ax_options_int_list(const AxIntList *spec, const char *text, long long *out, int *n);

#endif
