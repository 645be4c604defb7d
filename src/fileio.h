/* fileio.h — checked file I/O. Reads fail with the path, what was being read and how many
 * bytes were missing; writes go to a temporary name that is fsync'd and renamed into place on
 * commit, so a failed or interrupted write never leaves a partial file under the real name. */
#ifndef AX_FILEIO_H
#define AX_FILEIO_H

#include <stddef.h>
#include <stdio.h>

typedef struct {
  FILE *f;
  char path[1024];
  char tmp[1100];
  long long size; /* readers: the file's size in bytes */
  long long pos;  /* bytes read or written so far */
} AxFile;

int ax_file_open_read(AxFile *f, const char *path);
/* Reads exactly `bytes`; `what` names the part being read, for the error message. */
int ax_file_read(AxFile *f, void *buf, size_t bytes, const char *what);
int ax_file_seek(AxFile *f, long long offset);
void ax_file_close(AxFile *f);
/* Reads a whole file into a new buffer (free with free()) with one spare byte after the end. */
int ax_file_read_all(const char *path, unsigned char **data, size_t *n);

int ax_file_open_write(AxFile *f, const char *path);
int ax_file_write(AxFile *f, const void *buf, size_t bytes);
/* Flushes, fsyncs and renames the temporary file to its real name. */
int ax_file_commit(AxFile *f);
/* Closes and removes the temporary file (after a failure). */
void ax_file_abort(AxFile *f);

#endif
