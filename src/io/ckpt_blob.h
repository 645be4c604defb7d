/* ckpt_blob.h — a per-rank state file inside a checkpoint's step directory, for state that
 * differs between ranks and has no place in the per-tensor stage files (the codec state of
 * gradient compression: every rank's error-feedback residuals). The file DIR/step-N/NAME is
 *   "AXBLOB1\n", a text label line (what wrote it: e.g. the codec spec, the grid and rank),
 *   the payload's byte count (8 bytes, little endian), the payload, a CRC-32 of all before it,
 * written atomically (fileio.h) before rank 0 writes the manifest, which lists every blob with
 * its size and CRC, so a checkpoint missing one, or holding a damaged one, is incomplete. A
 * reader states the label it expects: a file with another label (another codec or grid) is
 * reported as such, distinct from a corrupt one. */
#ifndef AX_CKPT_BLOB_H
#define AX_CKPT_BLOB_H

#include <stddef.h>

#include "checkpoint.h"

enum { AX_BLOB_LABEL_MAX = 512 };

/* info (may be NULL): the file's name, size less the CRC trailer, and CRC, as the manifest
 * lists it (a "state" line: a complete checkpoint has every blob it lists, whole). */
int ax_ckpt_blob_write(const char *step_dir, const char *name, const char *label,
                       const void *data, size_t bytes, AxCkptFile *info);
/* Reads DIR/NAME into data[bytes]. *found = 0 (AX_OK) when there is no such file;
 * *same_label = 0 (AX_OK, data untouched) when it was written with another label; AX_ERR when
 * it is damaged or its payload is not `bytes` long. */
int ax_ckpt_blob_read(const char *step_dir, const char *name, const char *label, void *data,
                      size_t bytes, int *found, int *same_label);
/* The label DIR/NAME was written with (label: cap bytes); AX_ERR when it is missing or
 * damaged. */
int ax_ckpt_blob_label(const char *step_dir, const char *name, char *label, size_t cap);

#endif
