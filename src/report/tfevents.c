/* tfevents.c — TensorBoard event records: a protobuf encoder for the few fields an Event of
 * scalars has, and the record framing; see tfevents.h. */
#include "tfevents.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/core/crc32c.h"
#include "src/core/error.h"

enum { EVENT_MAX = 8192 };

typedef struct {
  uint8_t b[EVENT_MAX];
  size_t n;
  int overflow;
} Buf;

static void put(Buf *o, const void *p, size_t n) {
  if (o->n + n > sizeof o->b) {
    o->overflow = 1;
    return;
  }
  memcpy(o->b + o->n, p, n);
  o->n += n;
}

static void put_varint(Buf *o, uint64_t v) {
  uint8_t x[10];
  size_t n = 0;
  do {
    x[n++] = (uint8_t)((v & 0x7F) | (v > 0x7F ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put(o, x, n);
}

static void put_le(Buf *o, uint64_t v, int bytes) {
  uint8_t x[8];
  for (int i = 0; i < bytes; i++) x[i] = (uint8_t)(v >> (8 * i));
  put(o, x, (size_t)bytes);
}

/* field number and wire type: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
static void put_key(Buf *o, int field, int wire) { put_varint(o, (uint64_t)(field << 3 | wire)); }

static void put_bytes(Buf *o, int field, const void *p, size_t n) {
  put_key(o, field, 2);
  put_varint(o, n);
  put(o, p, n);
}

static void put_double(Buf *o, int field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  put_key(o, field, 1);
  put_le(o, bits, 8);
}

static void put_float(Buf *o, int field, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  put_key(o, field, 5);
  put_le(o, bits, 4);
}

static double wall_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint32_t masked_crc(const void *p, size_t n) {
  uint32_t c = ax_crc32c(0, p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static int write_failed(const AxTfEvents *w, int err) {
  return AX_FAIL("cannot write TensorBoard file %s: %s", w->path, strerror(err ? err : EIO));
}

/* One record: length, its masked CRC, the data, the data's masked CRC; flushed. */
static int write_record(AxTfEvents *w, const Buf *event) {
  if (event->overflow) return AX_FAIL("TensorBoard event larger than %d bytes", EVENT_MAX);
  Buf head = {.n = 0}, tail = {.n = 0};
  put_le(&head, event->n, 8);
  put_le(&head, masked_crc(head.b, 8), 4);
  put_le(&tail, masked_crc(event->b, event->n), 4);
  errno = 0;
  if (fwrite(head.b, 1, head.n, w->f) != head.n || fwrite(event->b, 1, event->n, w->f) != event->n ||
      fwrite(tail.b, 1, tail.n, w->f) != tail.n || fflush(w->f) != 0)
    return write_failed(w, errno);
  return AX_OK;
}

static void event_head(Buf *e, long long step) {
  e->n = 0;
  e->overflow = 0;
  put_double(e, 1, wall_time());
  if (step) {
    put_key(e, 2, 0);
    put_varint(e, (uint64_t)step);
  }
}

/* mkdir -p */
static int make_dirs(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return AX_FAIL("--tensorboard: path too long");
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s) continue;
    char c = *s;
    *s = 0;
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
      return AX_FAIL("--tensorboard: cannot create directory %s: %s", p, strerror(errno));
    *s = c;
    if (!c) break;
  }
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return AX_FAIL("--tensorboard: %s is not a directory", dir);
  return AX_OK;
}

int ax_tfevents_open(AxTfEvents *w, const char *dir) {
  memset(w, 0, sizeof *w);
  AX_TRY(make_dirs(dir));
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  snprintf(w->path, sizeof w->path, "%s/events.out.tfevents.%010lld.%s.%ld", dir,
           (long long)time(NULL), host, (long)getpid());
  w->f = fopen(w->path, "wbx");
  if (!w->f) return AX_FAIL("--tensorboard: cannot create %s: %s", w->path, strerror(errno));
  static const char VERSION[] = "brain.Event:2";
  Buf e;
  event_head(&e, 0);
  put_bytes(&e, 3, VERSION, sizeof VERSION - 1);
  return write_record(w, &e);
}

int ax_tfevents_scalars(AxTfEvents *w, long long step, const AxTfScalar *s, int n) {
  Buf e, summary = {.n = 0}, value;
  event_head(&e, step);
  for (int i = 0; i < n; i++) {
    if (s[i].value != s[i].value) continue; /* NAN: no value this step */
    value.n = 0;
    value.overflow = 0;
    put_bytes(&value, 1, s[i].tag, strlen(s[i].tag));
    put_float(&value, 2, (float)s[i].value);
    put_bytes(&summary, 1, value.b, value.n);
  }
  put_bytes(&e, 5, summary.b, summary.n);
  e.overflow |= summary.overflow;
  return write_record(w, &e);
}

int ax_tfevents_close(AxTfEvents *w) {
  if (!w->f) return AX_OK;
  errno = 0;
  int bad = ferror(w->f), closed = fclose(w->f);
  w->f = NULL;
  return bad || closed != 0 ? write_failed(w, errno) : AX_OK;
}
