/* link_log.h — a record of when a link carried what: a fixed ring of (start, end, traffic
 * class) entries that several ranks append to at once, lock-free, in memory the ranks of a
 * node share (the link table's, link_table.h) or in one rank's own memory. A reader copies the
 * entries that overlap a time window; an entry being written, or overwritten while it is read,
 * is left out (a seqlock per entry). The ring keeps the last AX_LINK_LOG_ENTRIES uses, enough
 * for a step of any engine here (a step that sends more loses its oldest uses from the record,
 * not from the link). Gemini's replica schedule (src/plan/replica_schedule.h) learns the idle
 * spans of each step from it. Times are CLOCK_MONOTONIC nanoseconds. */
#ifndef AX_LINK_LOG_H
#define AX_LINK_LOG_H

#include <stddef.h>

enum { AX_LINK_LOG_ENTRIES = 4096 };

typedef struct {
  long long start_ns, end_ns; /* the link carried the message over [start, end) */
  int cls;                    /* its traffic class (traffic.h) */
} AxLinkUse;

/* Bytes one log takes (a multiple of 64); logs are placed at 64-byte boundaries. */
size_t ax_link_log_bytes(void);
/* Empties the log at `log` (ax_link_log_bytes() bytes). */
void ax_link_log_init(void *log);
/* Appends one use; safe against other appenders and readers, in any process mapping it. */
void ax_link_log_append(void *log, long long start_ns, long long end_ns, int cls);
/* Copies the uses that overlap [from_ns, to_ns) into out (at most cap, in the order they were
 * appended) and returns how many it copied. */
int ax_link_log_read(const void *log, long long from_ns, long long to_ns, AxLinkUse *out,
                     int cap);

#endif
