/* error.h — how axonn reports failure.
 * Library code never exits: a failing function records one message (with the file, line and
 * rank where it was detected) and returns AX_ERR; the caller adds context or passes it up, and
 * only the command-line entry point prints it and chooses the exit status. */
#ifndef AX_ERROR_H
#define AX_ERROR_H

#include <stddef.h>
#include <stdio.h>

#define AX_OK 0
#define AX_ERR (-1)

#if defined(__GNUC__)
#define AX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define AX_PRINTF(a, b)
#endif

/* Records an error message and where it was detected; returns AX_ERR so callers can write
 * `return AX_FAIL("...")`. A second failure before ax_error_clear() keeps the first message
 * (the root cause) and ignores the new one unless it is added as context. */
int ax_fail_at(const char *file, int line, const char *fmt, ...) AX_PRINTF(3, 4);
#define AX_FAIL(...) ax_fail_at(__FILE__, __LINE__, __VA_ARGS__)

/* Records a complete message from elsewhere (e.g. forwarded from another rank, origin
 * included) that ax_error_message() returns as it is. Returns AX_ERR. */
int ax_fail_forwarded(const char *message);

/* Prefixes context to the recorded message: "loading x.bin: " + "bad magic". Returns AX_ERR. */
int ax_error_context(const char *fmt, ...) AX_PRINTF(1, 2);

/* The recorded message with its origin, e.g. "bad magic 123 (src/io/model_file.c:40, rank 0)". */
const char *ax_error_message(void);
/* Only the message, without the origin (for tests that compare text). */
const char *ax_error_text(void);
int ax_error_pending(void);
void ax_error_clear(void);

/* The rank printed with errors and log lines (set once MPI is up; -1 means "no MPI"). */
void ax_set_rank(int rank);
int ax_rank(void);

/* Propagate a failure: `AX_TRY(load(x));` returns AX_ERR from the caller when load fails. */
#define AX_TRY(expr)                                                                             \
  do {                                                                                           \
    if ((expr) != AX_OK) return AX_ERR;                                                          \
  } while (0)

/* Checked allocation: records "out of memory allocating N bytes" and returns NULL on failure.
 * ax_calloc zero-fills. Sizes are checked for overflow. Free with free(). */
void *ax_malloc_at(size_t bytes, const char *file, int line);
void *ax_calloc_at(size_t count, size_t size, const char *file, int line);
#define ax_malloc(bytes) ax_malloc_at((bytes), __FILE__, __LINE__)
#define ax_calloc(count, size) ax_calloc_at((count), (size), __FILE__, __LINE__)

#endif
