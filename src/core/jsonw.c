/* jsonw.c — the minimal JSON writer; see jsonw.h. */
#include "jsonw.h"

#include <math.h>

void ax_jsonw_init(AxJsonW *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->count[0] = 0;
}

void ax_jsonw_quote(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* The comma and key before a value at the current level. */
static void prefix(AxJsonW *j, const char *key) {
  if (j->count[j->depth]++) fputc(',', j->f);
  if (key) {
    ax_jsonw_quote(j->f, key);
    fputc(':', j->f);
  }
}

static void begin(AxJsonW *j, const char *key, char open, char close) {
  prefix(j, key);
  fputc(open, j->f);
  if (j->depth + 1 < AX_JSONW_DEPTH) {
    j->depth++;
    j->count[j->depth] = 0;
    j->close[j->depth] = close;
  }
}

void ax_jsonw_object(AxJsonW *j, const char *key) { begin(j, key, '{', '}'); }
void ax_jsonw_array(AxJsonW *j, const char *key) { begin(j, key, '[', ']'); }

void ax_jsonw_end(AxJsonW *j) {
  if (j->depth > 0) fputc(j->close[j->depth--], j->f);
}

void ax_jsonw_num(AxJsonW *j, const char *key, double v) {
  prefix(j, key);
  if (isfinite(v))
    fprintf(j->f, "%.10g", v);
  else
    fputs("null", j->f);
}

void ax_jsonw_int(AxJsonW *j, const char *key, long long v) {
  prefix(j, key);
  fprintf(j->f, "%lld", v);
}

void ax_jsonw_str(AxJsonW *j, const char *key, const char *s) {
  prefix(j, key);
  if (s)
    ax_jsonw_quote(j->f, s);
  else
    fputs("null", j->f);
}

void ax_jsonw_bool(AxJsonW *j, const char *key, int v) {
  prefix(j, key);
  fputs(v ? "true" : "false", j->f);
}

void ax_jsonw_null(AxJsonW *j, const char *key) {
  prefix(j, key);
  fputs("null", j->f);
}
