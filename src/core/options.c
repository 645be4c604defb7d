/* options.c — table-driven option parsing and --help; see options.h. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "error.h"

static void *field(void *cfg, const AxOption *o) { return (char *)cfg + o->offset; }
static const void *cfield(const void *cfg, const AxOption *o) {
  return (const char *)cfg + o->offset;
}

static int find_option(const AxOptionTable *t, const char *name, size_t len) {
  for (int i = 0; i < t->n_opts; i++)
    if (strlen(t->opts[i].name) == len && strncmp(t->opts[i].name, name, len) == 0) return i;
  return -1;
}

static int choice_index(const char *choices, const char *value) {
  size_t vlen = strlen(value);
  int idx = 0;
  for (const char *p = choices; *p; idx++) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (len == vlen && strncmp(p, value, len) == 0) return idx;
    if (!bar) break;
    p = bar + 1;
  }
  return -1;
}

static const char *choice_name(const char *choices, int index, char *buf, size_t cap) {
  const char *p = choices;
  for (int i = 0; i < index && p; i++) {
    p = strchr(p, '|');
    if (p) p++;
  }
  if (!p) return "?";
  const char *bar = strchr(p, '|');
  size_t len = bar ? (size_t)(bar - p) : strlen(p);
  if (len >= cap) len = cap - 1;
  memcpy(buf, p, len);
  buf[len] = 0;
  return buf;
}

static int range_ok(const AxOption *o, double v) {
  return o->min > o->max || (v >= o->min && v <= o->max);
}

/* %.15g: an integer bound prints whole (1073741824, not 1.07374e+09), a real one as given. */
static int range_error(const AxOption *o, const char *value) {
  return AX_FAIL("--%s %s is out of range [%.15g, %.15g]", o->name, value, o->min, o->max);
}

/* K, M, G: x 1024, 1024^2, 1024^3 (bucket sizes and data sizes read better that way). */
static long long suffix_multiplier(char c) {
  return c == 'K' ? 1LL << 10 : c == 'M' ? 1LL << 20 : c == 'G' ? 1LL << 30 : 1;
}

AxIntRead ax_options_read_int(const char *text, const char **end, int suffixes, long long *out) {
  char *stop;
  errno = 0;
  long long v = strtoll(text, &stop, 10);
  int overflow = errno == ERANGE;
  if (stop == text || (errno && !overflow)) return AX_INT_NOT_A_NUMBER;
  long long mul = suffixes ? suffix_multiplier(*stop) : 1;
  if (mul > 1) stop++;
  if (!end && *stop) return AX_INT_NOT_A_NUMBER;
  if (end) *end = stop;
  if (overflow || (v > 0 && v > LLONG_MAX / mul) || (v < 0 && v < LLONG_MIN / mul))
    return AX_INT_PAST_64_BITS;
  *out = v * mul;
  return AX_INT_OK;
}

static int parse_integer(const AxOption *o, const char *value, long long *out) {
  long long v = 0;
  AxIntRead r = ax_options_read_int(value, NULL, 1, &v);
  if (r == AX_INT_NOT_A_NUMBER)
    return AX_FAIL("--%s expects an integer, got '%s'", o->name, value);
  if (r == AX_INT_PAST_64_BITS)
    return AX_FAIL("--%s %s is out of range (more than 64 bits)", o->name, value);
  if (!range_ok(o, (double)v)) return range_error(o, value);
  *out = v;
  return AX_OK;
}

/* One entry of a list at *p, which moves past it. */
static int list_entry(const AxIntList *s, const char *text, const char **p, long long *v) {
  const char *start = *p;
  AxIntRead r = ax_options_read_int(start, p, 0, v);
  if (r == AX_INT_NOT_A_NUMBER) return AX_FAIL("--%s '%s' is not %s", s->name, text, s->shape);
  if (r == AX_INT_PAST_64_BITS || *v < s->min || *v > s->max)
    return AX_FAIL("--%s '%s': %.*s is out of range [%lld, %lld]", s->name, text,
                   (int)(*p - start), start, s->min, s->max);
  return AX_OK;
}

int ax_options_int_list(const AxIntList *s, const char *text, long long *out, int *n) {
  *n = 0;
  const char *p = text;
  while (*p) {
    long long v;
    AX_TRY(list_entry(s, text, &p, &v));
    if (*n == s->n_max)
      return AX_FAIL("--%s '%s' has more than %d entries", s->name, text, s->n_max);
    out[(*n)++] = v;
    if (*p && (!strchr(s->seps, *p) || !p[1]))
      return AX_FAIL("--%s '%s' is not %s", s->name, text, s->shape);
    if (*p) p++;
  }
  if (*n < s->n_min) return AX_FAIL("--%s '%s' is not %s", s->name, text, s->shape);
  return AX_OK;
}

static int parse_value(const AxOption *o, void *cfg, const char *value) {
  void *f = field(cfg, o);
  switch (o->type) {
  case AX_OPT_INT:
  case AX_OPT_LONG: {
    long long v = 0;
    AX_TRY(parse_integer(o, value, &v));
    if (o->type == AX_OPT_INT) {
      if (v > INT_MAX || v < -INT_MAX) return range_error(o, value);
      *(int *)f = (int)v;
    } else {
      *(long long *)f = v;
    }
    return AX_OK;
  }
  case AX_OPT_FLOAT: {
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end != 0 || !isfinite(v))
      return AX_FAIL("--%s expects a number, got '%s'", o->name, value);
    if (!range_ok(o, v)) return range_error(o, value);
    *(double *)f = v;
    return AX_OK;
  }
  case AX_OPT_STRING: {
    char *copy = strdup(value);
    if (!copy) return AX_FAIL("out of memory");
    free(*(char **)f);
    *(char **)f = copy;
    return AX_OK;
  }
  case AX_OPT_FLAG:
    if (!strcmp(value, "1") || !strcmp(value, "true") || !strcmp(value, "yes"))
      *(int *)f = 1;
    else if (!strcmp(value, "0") || !strcmp(value, "false") || !strcmp(value, "no"))
      *(int *)f = 0;
    else
      return AX_FAIL("--%s expects 0 or 1, got '%s'", o->name, value);
    return AX_OK;
  case AX_OPT_CHOICE: {
    int idx = choice_index(o->choices, value);
    if (idx < 0) return AX_FAIL("--%s must be one of %s, got '%s'", o->name, o->choices, value);
    *(int *)f = idx;
    return AX_OK;
  }
  }
  return AX_FAIL("internal: bad option type");
}

int ax_options_defaults(const AxOptionTable *t, void *cfg) {
  for (int i = 0; i < t->n_opts; i++) {
    const AxOption *o = &t->opts[i];
    if (o->type == AX_OPT_STRING) {
      free(*(char **)field(cfg, o));
      *(char **)field(cfg, o) = NULL;
    }
    if (o->def) {
      if (parse_value(o, cfg, o->def) != AX_OK)
        return ax_error_context("internal: default of --%s", o->name);
    } else if (o->type != AX_OPT_STRING) {
      switch (o->type) {
      case AX_OPT_LONG: *(long long *)field(cfg, o) = 0; break;
      case AX_OPT_FLOAT: *(double *)field(cfg, o) = 0; break;
      default: *(int *)field(cfg, o) = 0; break;
      }
    }
  }
  return AX_OK;
}

/* Edit distance (insertions, deletions, substitutions) between a[0..n) and b, capped at 99. */
static int edit_distance(const char *a, size_t n, const char *b) {
  size_t m = strlen(b);
  int row[64];
  if (n >= 64 || m >= 64) return 99;
  for (size_t j = 0; j <= m; j++) row[j] = (int)j;
  for (size_t i = 1; i <= n; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= m; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[m];
}

/* The longest known name that NAME starts with as a whole word ("keep" for
 * "keep-checkpoints", "lr" for "lr-max"), or -1. */
static int word_prefix_option(const AxOptionTable *t, const char *name, size_t len) {
  int best = -1;
  size_t best_n = 0;
  for (int i = 0; i < t->n_opts; i++) {
    size_t n = strlen(t->opts[i].name);
    if (n < len && n > best_n && name[n] == '-' && !strncmp(name, t->opts[i].name, n))
      best = i, best_n = n;
  }
  return best;
}

/* "unknown option --NAME", with the nearest known name when it is close (at most 2 edits, 1
 * for names of up to 4 letters), else one it starts with as a word: "did you mean
 * --metrics?" */
static int unknown_option(const AxOptionTable *t, const char *name, size_t len) {
  int best = -1, best_d = len <= 4 ? 2 : 3;
  for (int i = 0; i < t->n_opts; i++) {
    int d = edit_distance(name, len, t->opts[i].name);
    if (d < best_d) best = i, best_d = d;
  }
  if (best < 0) best = word_prefix_option(t, name, len);
  if (best >= 0)
    return AX_FAIL("unknown option --%.*s (did you mean --%s? see `axonn %s --help`)", (int)len,
                   name, t->opts[best].name, t->command);
  return AX_FAIL("unknown option --%.*s (see `axonn %s --help`)", (int)len, name, t->command);
}

int ax_options_set(const AxOptionTable *t, void *cfg, const char *name, const char *value,
                   AxOptState *st) {
  int i = find_option(t, name, strlen(name));
  if (i < 0) return unknown_option(t, name, strlen(name));
  AX_TRY(parse_value(&t->opts[i], cfg, value));
  if (st) st->set[i] = 1;
  return AX_OK;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

enum { CONFIG_LINE_MAX = 4096 };

/* '#' at the start of a line or after a blank starts a comment; a '#' inside a word is part of
 * the value (a file name may hold one), so a value is never cut short silently. */
static void strip_comment(char *line) {
  for (char *p = line; *p; p++)
    if (*p == '#' && (p == line || *(p - 1) == ' ' || *(p - 1) == '\t')) {
      *p = 0;
      return;
    }
}

static int parse_config_line(const AxOptionTable *t, void *cfg, char *line, const char *path,
                             int lineno, AxOptState *st) {
  strip_comment(line);
  char *s = trim(line);
  if (!*s) return AX_OK;
  char *eq = strchr(s, '=');
  if (!eq) return AX_FAIL("%s:%d: expected `name = value` (comments are lines starting with #)",
                          path, lineno);
  *eq = 0;
  char *name = trim(s), *value = trim(eq + 1);
  if (name[0] == '-' && name[1] == '-') name += 2;
  if (!strcmp(name, "config"))
    return AX_FAIL("%s:%d: a config file cannot include another", path, lineno);
  if (ax_options_set(t, cfg, name, value, st) != AX_OK)
    return ax_error_context("%s:%d", path, lineno);
  return AX_OK;
}

static int open_config(const char *path, FILE **out) {
  struct stat sb;
  if (stat(path, &sb) != 0) return AX_FAIL("cannot open config file %s: %s", path, strerror(errno));
  if (S_ISDIR(sb.st_mode)) return AX_FAIL("config file %s is a directory", path);
  *out = fopen(path, "r");
  if (!*out) return AX_FAIL("cannot open config file %s: %s", path, strerror(errno));
  return AX_OK;
}

/* Text: no NUL bytes and no control characters other than tab, CR and LF. */
static int is_text(const char *line, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)line[i];
    if ((c < 0x20 && c != '\t' && c != '\r' && c != '\n') || c == 0x7f) return 0;
  }
  return 1;
}

static int parse_config_file(const AxOptionTable *t, void *cfg, const char *path,
                             AxOptState *st) {
  FILE *f;
  AX_TRY(open_config(path, &f));
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  int lineno = 0, rc = AX_OK;
  while (rc == AX_OK && (n = getline(&line, &cap, f)) >= 0) {
    lineno++;
    if (n > CONFIG_LINE_MAX)
      rc = AX_FAIL("%s:%d: line longer than %d bytes", path, lineno, CONFIG_LINE_MAX);
    else if (!is_text(line, (size_t)n))
      rc = AX_FAIL("%s:%d: not a line of text (binary data?)", path, lineno);
    else
      rc = parse_config_line(t, cfg, line, path, lineno, st);
  }
  if (rc == AX_OK && ferror(f)) rc = AX_FAIL("cannot read config file %s: %s", path, strerror(errno));
  free(line);
  fclose(f);
  return rc;
}

typedef enum { ARG_OPTION, ARG_CONFIG, ARG_HELP, ARG_POSITIONAL, ARG_BAD } ArgKind;

typedef struct {
  ArgKind kind;
  int opt;           /* ARG_OPTION: index into the table, -1 when unknown */
  const char *value; /* ARG_OPTION, ARG_CONFIG: NULL when the value is missing */
  size_t name_len;   /* of argv[i] + 2, for messages about unknown options */
} Arg;

/* Classifies argv[*i], advancing *i past a value given as the next entry. Only entries in an
 * option's place are options: the value of --prompt may be "-h". */
static Arg classify(const AxOptionTable *t, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  Arg r = {ARG_POSITIONAL, -1, NULL, 0};
  if (!strcmp(a, "--help") || !strcmp(a, "-h")) return (Arg){ARG_HELP, -1, NULL, 0};
  if (a[0] != '-') return r;
  if (a[1] != '-' || a[2] == 0) return (Arg){ARG_BAD, -1, NULL, 0};
  const char *name = a + 2, *eq = strchr(name, '=');
  r.name_len = eq ? (size_t)(eq - name) : strlen(name);
  int is_config = r.name_len == 6 && !strncmp(name, "config", 6);
  r.kind = is_config ? ARG_CONFIG : ARG_OPTION;
  r.opt = is_config ? -1 : find_option(t, name, r.name_len);
  if (eq)
    r.value = eq + 1;
  else if (r.opt >= 0 && t->opts[r.opt].type == AX_OPT_FLAG)
    r.value = "1";
  else if ((is_config || r.opt >= 0) && *i + 1 < argc)
    r.value = argv[++*i];
  return r;
}

/* The command line proper (the config file was applied before it). */
static int apply_arg(const AxOptionTable *t, void *cfg, const Arg *a, const char *text,
                     int max_positional, AxOptState *st) {
  switch (a->kind) {
  case ARG_CONFIG: return AX_OK;
  case ARG_HELP: return AX_OK;
  case ARG_BAD:
    return AX_FAIL("unexpected argument '%s' (options are --name value; see `axonn %s --help`)",
                   text, t->command);
  case ARG_POSITIONAL:
    if (st->n_positional >= max_positional || st->n_positional >= AX_MAX_POSITIONAL)
      return AX_FAIL("unexpected argument '%s' (see `axonn %s --help`)", text, t->command);
    st->positional[st->n_positional++] = text;
    return AX_OK;
  case ARG_OPTION:
    if (a->opt < 0) return unknown_option(t, text + 2, a->name_len);
    if (!a->value) return AX_FAIL("--%s needs a value", t->opts[a->opt].name);
    AX_TRY(parse_value(&t->opts[a->opt], cfg, a->value));
    st->set[a->opt] = 1;
    return AX_OK;
  }
  return AX_FAIL("internal: bad argument kind");
}

/* A clean state and the defaults, before a file or a command line. */
static int start_parse(const AxOptionTable *t, void *cfg, AxOptState *st) {
  memset(st, 0, sizeof *st);
  if (t->n_opts > AX_MAX_OPTIONS) return AX_FAIL("internal: too many options");
  return ax_options_defaults(t, cfg);
}

int ax_options_parse(const AxOptionTable *t, void *cfg, int argc, char **argv, AxOptState *st) {
  return ax_options_parse_with_args(t, cfg, argc, argv, 0, st);
}

int ax_options_parse_with_args(const AxOptionTable *t, void *cfg, int argc, char **argv,
                               int max_positional, AxOptState *st) {
  AX_TRY(start_parse(t, cfg, st));
  /* --help wins over everything; then the config file; then the command line over it. */
  for (int i = 1; i < argc; i++)
    if (classify(t, argc, argv, &i).kind == ARG_HELP) {
      st->help = 1;
      return AX_OK;
    }
  for (int i = 1; i < argc; i++) {
    Arg a = classify(t, argc, argv, &i);
    if (a.kind != ARG_CONFIG) continue;
    if (!a.value) return AX_FAIL("--config needs a file name");
    AX_TRY(parse_config_file(t, cfg, a.value, st));
  }
  for (int i = 1; i < argc; i++) {
    const char *text = argv[i];
    Arg a = classify(t, argc, argv, &i);
    AX_TRY(apply_arg(t, cfg, &a, text, max_positional, st));
  }
  return AX_OK;
}

int ax_options_parse_file(const AxOptionTable *t, void *cfg, const char *path, AxOptState *st) {
  AX_TRY(start_parse(t, cfg, st));
  return parse_config_file(t, cfg, path, st);
}

int ax_options_was_set(const AxOptionTable *t, const AxOptState *st, const char *name) {
  int i = find_option(t, name, strlen(name));
  return i >= 0 && st->set[i];
}

const char *ax_options_value_text(const AxOption *o, const void *cfg, char *buf, size_t cap) {
  const void *f = cfield(cfg, o);
  switch (o->type) {
  case AX_OPT_INT:
  case AX_OPT_FLAG: snprintf(buf, cap, "%d", *(const int *)f); break;
  case AX_OPT_LONG: snprintf(buf, cap, "%lld", *(const long long *)f); break;
  case AX_OPT_FLOAT: snprintf(buf, cap, "%.9g", *(const double *)f); break;
  case AX_OPT_STRING: snprintf(buf, cap, "%s", *(char *const *)f ? *(char *const *)f : ""); break;
  case AX_OPT_CHOICE: choice_name(o->choices, *(const int *)f, buf, cap); break;
  }
  return buf;
}

void ax_options_print_help(const AxOptionTable *t, FILE *out) {
  fprintf(out, "Usage: axonn %s [options]\n%s\n\nOptions (--name value, --name=value, or "
               "`name = value` lines in --config FILE; the command line wins):\n",
          t->command, t->summary);
  for (int i = 0; i < t->n_opts; i++) {
    const AxOption *o = &t->opts[i];
    char left[96];
    const char *mv = o->type == AX_OPT_FLAG ? "" : o->type == AX_OPT_CHOICE ? o->choices
                                                                             : o->metavar;
    snprintf(left, sizeof left, "--%s%s%s", o->name, mv && *mv ? " " : "", mv ? mv : "");
    fprintf(out, "  %-32s %s", left, o->help);
    if (o->def && *o->def) fprintf(out, " (default: %s)", o->def);
    fputc('\n', out);
  }
  fprintf(out, "  %-32s %s\n  %-32s %s\n", "--config FILE", "read options from FILE",
          "--help", "print this help and exit");
}

void ax_options_dump(const AxOptionTable *t, const void *cfg, FILE *out) {
  char buf[256];
  for (int i = 0; i < t->n_opts; i++)
    fprintf(out, "%s = %s\n", t->opts[i].name, ax_options_value_text(&t->opts[i], cfg, buf,
                                                                     sizeof buf));
}

void ax_options_free(const AxOptionTable *t, void *cfg) {
  for (int i = 0; i < t->n_opts; i++) {
    if (t->opts[i].type != AX_OPT_STRING) continue;
    char **s = (char **)field(cfg, &t->opts[i]);
    free(*s);
    *s = NULL;
  }
}

int ax_options_take(int *argc, char **argv, const char *name, const char **value) {
  size_t len = strlen(name);
  int out = 0;
  for (int i = 0; i < *argc; i++) {
    if (strncmp(argv[i], "--", 2) || strncmp(argv[i] + 2, name, len)) {
      argv[out++] = argv[i];
      continue;
    }
    const char *rest = argv[i] + 2 + len;
    if (*rest == '=') {
      *value = rest + 1;
    } else if (*rest == 0) {
      if (i + 1 >= *argc) return AX_FAIL("--%s needs a value", name);
      *value = argv[++i];
    } else {
      argv[out++] = argv[i]; /* another option that starts with the name */
    }
  }
  *argc = out;
  return AX_OK;
}
