/* train_measured.h — the figures a run measures at its start to decide its compression (the
 * codec profile, the paths' all-reduce and CaSync times, the send and overlap costs, the
 * backward timeline), kept in the order they were taken. Every rank's go into the checkpoints
 * (trainer_ckpt.c); a run resumed from one with the same configuration takes them back in place
 * of measuring again, so the cost model decides every part as the checkpointed run did and the
 * codec state (error feedback, momentum, Q) carries over: measured again, the figures differ a
 * little, and a part near the cost model's break-even point may be decided otherwise, which
 * starts that state fresh. Pure bookkeeping: the measuring sites (train_compress.c) take their
 * figures through it. */
#ifndef AX_TRAIN_MEASURED_H
#define AX_TRAIN_MEASURED_H

#include <stddef.h>

typedef struct {
  unsigned char *bytes; /* records: an 8-byte length, then that many bytes */
  size_t n, cap;        /* bytes held, allocated */
  size_t pos;           /* replay: where the next record starts */
  int replay;           /* 1: the figures come from a checkpoint, nothing is measured */
} AxMeasured;

/* Whether the figures are taken back (not measured). */
int ax_measured_replaying(const AxMeasured *m);
/* Measuring: appends the n bytes at p as one record. Replaying: fills p[n] from the next
 * record, which must be n bytes long (another length: the run is not configured as the one
 * that measured them). */
int ax_measured_take(AxMeasured *m, void *p, size_t n);
/* Replays buf[n] (copied) from its first record on. */
int ax_measured_replay(AxMeasured *m, const void *buf, size_t n);
/* Replaying: AX_OK when every record was taken, else what is left over is an error. */
int ax_measured_done(const AxMeasured *m);
void ax_measured_free(AxMeasured *m);

#endif
