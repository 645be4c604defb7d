/* options.c — table-driven option parsing and --help; see options.h. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

static int range_error(const AxOption *o, const char *value) {
  return AX_FAIL("--%s %s is out of range [%g, %g]", o->name, value, o->min, o->max);
}

static int parse_integer(const AxOption *o, const char *value, long long *out) {
  char *end;
  errno = 0;
  long long v = strtoll(value, &end, 10);
  /* Accept 16M / 4K / 1G suffixes: bucket sizes and data sizes read better that way. */
  if (end != value && (*end == 'K' || *end == 'M' || *end == 'G') && end[1] == 0) {
    long long mul = *end == 'K' ? 1024LL : *end == 'M' ? 1024LL * 1024 : 1024LL * 1024 * 1024;
    v *= mul;
    end++;
  }
  if (errno || end == value || *end != 0)
    return AX_FAIL("--%s expects an integer, got '%s'", o->name, value);
  if (!range_ok(o, (double)v)) return range_error(o, value);
  *out = v;
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
      if (v > 2147483647LL || v < -2147483647LL) return range_error(o, value);
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

int ax_options_set(const AxOptionTable *t, void *cfg, const char *name, const char *value,
                   AxOptState *st) {
  int i = find_option(t, name, strlen(name));
  if (i < 0) return AX_FAIL("unknown option --%s (see `axonn %s --help`)", name, t->command);
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

static int parse_config_file(const AxOptionTable *t, void *cfg, const char *path,
                             AxOptState *st) {
  FILE *f = fopen(path, "r");
  if (!f) return AX_FAIL("cannot open config file %s: %s", path, strerror(errno));
  char line[4096];
  int lineno = 0, rc = AX_OK;
  while (rc == AX_OK && fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *s = trim(line);
    if (!*s) continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      rc = AX_FAIL("%s:%d: expected `name = value`", path, lineno);
      break;
    }
    *eq = 0;
    char *name = trim(s), *value = trim(eq + 1);
    if (name[0] == '-' && name[1] == '-') name += 2;
    if (!strcmp(name, "config")) {
      rc = AX_FAIL("%s:%d: a config file cannot include another", path, lineno);
      break;
    }
    if (ax_options_set(t, cfg, name, value, st) != AX_OK)
      rc = ax_error_context("%s:%d", path, lineno);
  }
  fclose(f);
  return rc;
}

/* Splits one argv entry into option name and value; may consume the next entry. */
static int next_option(const AxOptionTable *t, int argc, char **argv, int *i, int *opt,
                       const char **value) {
  const char *arg = argv[*i];
  if (arg[0] != '-' || arg[1] != '-' || arg[2] == 0)
    return AX_FAIL("unexpected argument '%s' (options are --name value; see `axonn %s --help`)",
                   arg, t->command);
  const char *name = arg + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  *opt = find_option(t, name, len);
  if (*opt < 0)
    return AX_FAIL("unknown option --%.*s (see `axonn %s --help`)", (int)len, name, t->command);
  if (eq) {
    *value = eq + 1;
  } else if (t->opts[*opt].type == AX_OPT_FLAG) {
    *value = "1";
  } else {
    if (*i + 1 >= argc) return AX_FAIL("--%s needs a value", t->opts[*opt].name);
    *value = argv[++*i];
  }
  return AX_OK;
}

int ax_options_parse(const AxOptionTable *t, void *cfg, int argc, char **argv, AxOptState *st) {
  memset(st, 0, sizeof *st);
  if (t->n_opts > AX_MAX_OPTIONS) return AX_FAIL("internal: too many options");
  AX_TRY(ax_options_defaults(t, cfg));
  /* First pass: --help and --config, so the file applies before the command line. */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      st->help = 1;
      return AX_OK;
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *path = NULL;
    if (!strcmp(argv[i], "--config") && i + 1 < argc)
      path = argv[i + 1];
    else if (!strncmp(argv[i], "--config=", 9))
      path = argv[i] + 9;
    if (path) AX_TRY(parse_config_file(t, cfg, path, st));
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--config")) {
      if (i + 1 >= argc) return AX_FAIL("--config needs a file name");
      i++;
      continue;
    }
    if (!strncmp(argv[i], "--config=", 9)) continue;
    int opt = -1;
    const char *value = NULL;
    AX_TRY(next_option(t, argc, argv, &i, &opt, &value));
    AX_TRY(parse_value(&t->opts[opt], cfg, value));
    st->set[opt] = 1;
  }
  return AX_OK;
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
