/* tfevents.h — TensorBoard event files (`--tensorboard DIR`), written in TensorBoard's own
 * format without TensorFlow: DIR/events.out.tfevents.<unix time>.<hostname>.<pid>, a sequence
 * of records, each
 *
 *     uint64 length (little-endian) | uint32 masked CRC-32C of those 8 bytes |
 *     length bytes of data         | uint32 masked CRC-32C of the data
 *
 * (masked crc = ((crc >> 15) | (crc << 17)) + 0xa282ead8), the data a protobuf `Event`
 * (tensorflow/core/util/event.proto): wall_time (double, field 1), step (int64, field 2), and
 * either file_version "brain.Event:2" (string, field 3; the first record) or a summary (field
 * 5) = Summary { repeated Value value = 1 }, Value { tag (string, 1), simple_value (float, 2) }.
 * Every record is flushed as it is written, so TensorBoard follows a running job. */
#ifndef AX_TFEVENTS_H
#define AX_TFEVENTS_H

#include <stdio.h>

typedef struct {
  const char *tag;
  double value; /* written as a float; NAN: the value is left out */
} AxTfScalar;

typedef struct {
  FILE *f;
  char path[4096];
} AxTfEvents;

/* Creates DIR (and its parents) when missing and a new event file in it, and writes the
 * file-version record. */
int ax_tfevents_open(AxTfEvents *w, const char *dir);
/* One Event at the current wall time: the scalars of a step. */
int ax_tfevents_scalars(AxTfEvents *w, long long step, const AxTfScalar *s, int n);
/* Closes the file (nothing open: AX_OK). */
int ax_tfevents_close(AxTfEvents *w);

#endif
