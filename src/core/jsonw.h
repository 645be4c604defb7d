/* jsonw.h — a minimal JSON writer onto a FILE: objects, arrays, numbers (non-finite ones are
 * written as null), strings (escaped) and booleans, with the commas placed for the caller.
 * Nesting is tracked up to 16 levels. Used by the end-of-run summary. */
#ifndef AX_JSONW_H
#define AX_JSONW_H

#include <stdio.h>

enum { AX_JSONW_DEPTH = 16 };

typedef struct {
  FILE *f;
  int depth;
  int count[AX_JSONW_DEPTH]; /* values written so far at each level */
  char close[AX_JSONW_DEPTH]; /* '}' or ']' for each open level */
} AxJsonW;

void ax_jsonw_init(AxJsonW *j, FILE *f);
/* key is NULL inside arrays and for the outermost value. */
void ax_jsonw_object(AxJsonW *j, const char *key);
void ax_jsonw_array(AxJsonW *j, const char *key);
void ax_jsonw_end(AxJsonW *j); /* closes the innermost object or array */
void ax_jsonw_num(AxJsonW *j, const char *key, double v);
void ax_jsonw_int(AxJsonW *j, const char *key, long long v);
void ax_jsonw_str(AxJsonW *j, const char *key, const char *s); /* NULL: null */
void ax_jsonw_bool(AxJsonW *j, const char *key, int v);
void ax_jsonw_null(AxJsonW *j, const char *key);
/* A JSON string literal of s, quotes included. */
void ax_jsonw_quote(FILE *f, const char *s);

#endif
