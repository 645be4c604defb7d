/* log.h — what the user sees: progress on stdout from rank 0, warnings and errors on stderr.
 * Every line is flushed at once so batch-system logs interleave sensibly. */
#ifndef AX_LOG_H
#define AX_LOG_H

#include "error.h"

/* Rank 0 (or a run without MPI) prints to stdout; other ranks print nothing. */
void ax_log(const char *fmt, ...) AX_PRINTF(1, 2);
/* A final result (the summary, "done: ..."); like ax_log, silenced by --quiet too, which leaves
 * stdout empty (the results are in --summary, --metrics and the other files). */
void ax_log_result(const char *fmt, ...) AX_PRINTF(1, 2);
/* Every rank prints, prefixed with "[rank r] ". */
void ax_log_all(const char *fmt, ...) AX_PRINTF(1, 2);
/* Rank 0 prints "axonn: warning: ..." to stderr. */
void ax_warn(const char *fmt, ...) AX_PRINTF(1, 2);
/* Prints the recorded error as "axonn: error: ..." to stderr (any rank that calls it). */
void ax_print_error(void);
/* Silences ax_log, ax_log_result and ax_log_all (used by tests and by --quiet). */
void ax_log_set_quiet(int quiet);

#endif
