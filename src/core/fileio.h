/* fileio.h — checked file I/O. Reads fail with the path, what was being read and how many
 * bytes were missing, and refuse directories. Writes follow symlinks to their final target
 * (the link stays a link) and then, for a regular file (or a new one), go to a temporary
 * name in the target's directory that is fsync'd and renamed into place on commit, so a
 * failed or interrupted write never leaves a partial file under the real name. A character
 * device (/dev/null, /dev/full) is written directly, never replaced; a directory, FIFO,
 * socket or block device is refused. Every write, flush, sync and close is checked. */
#ifndef AX_FILEIO_H
#define AX_FILEIO_H

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

typedef struct {
  FILE *f;
  char path[PATH_MAX]; /* as given */
  char tmp[PATH_MAX];  /* writers: the temporary name ("" when writing directly) */
  char dest[PATH_MAX]; /* writers: the final target (symlinks followed) */
  long long size;      /* readers: the file's size in bytes */
  long long pos;       /* bytes read or written so far */
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
/* Flushes, fsyncs and renames the temporary file to its real name (or flushes a device). */
int ax_file_commit(AxFile *f);
/* Closes and removes the temporary file (after a failure). */
void ax_file_abort(AxFile *f);

/* Fails now, with the reason, when `path` could not be written later: creates and removes
 * the temporary file a write would use, with one byte written to it (a full file system), or
 * writes nothing to a device (/dev/full refuses even that). Nothing is left behind; an
 * existing file is not touched. */
int ax_file_check_writable(const char *path);

/* A whole regular file mapped into memory (shared): read-only, or created or resized to
 * `size` bytes, its blocks reserved (a full file system fails here, not on a store), and
 * writable (an existing file's pages are kept: the memory checkpoints' slot files, rewritten
 * every step, where a new file would cost a fresh allocation of every page). A 0-byte file maps
 * to data = NULL. A writable mapping never follows a symbolic link (the slot files live in
 * shared /dev/shm), and a file it created is removed again when it cannot be sized. */
typedef struct {
  unsigned char *data;
  size_t size;
} AxFileMap;
int ax_file_map_read(const char *path, AxFileMap *m);
int ax_file_map_write(const char *path, size_t size, AxFileMap *m);
void ax_file_unmap(AxFileMap *m);

/* Appends len bytes to path (created when missing): the JSON-lines files that successive
 * benchmark runs add to. Open, write and close are checked. */
int ax_file_append(const char *path, const void *text, size_t len);
/* Fails now, with the reason, when `path` could not be appended to later (a device is written
 * nothing, as above); creates nothing. */
int ax_file_check_appendable(const char *path);

#endif
