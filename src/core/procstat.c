/* procstat.c — process states from /proc/PID/stat; see procstat.h. */
#include "procstat.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { STAT_CAP = 2048, FIELD_STATE = 3, FIELD_START = 22, FIELD_EXIT_CODE = 52 };

/* Reads a whole small file; returns its length (NUL-terminated) or -1. */
static int read_small(const char *path, char *buf, int cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int n = (int)read(fd, buf, (size_t)cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

/* Field `want` (1-based, as proc(5) numbers them) of a stat line, as text in out. The command
 * name (field 2) may hold spaces and parentheses: fields 3.. follow its last ')'. */
static int stat_field(const char *line, int want, char *out, size_t cap) {
  const char *p = strrchr(line, ')');
  if (!p || want < FIELD_STATE) return -1;
  p++;
  for (int field = FIELD_STATE; *p; field++) {
    while (*p == ' ') p++;
    size_t len = strcspn(p, " \n");
    if (len == 0) return -1;
    if (field == want) {
      if (len >= cap) return -1;
      memcpy(out, p, len);
      out[len] = 0;
      return 0;
    }
    p += len;
  }
  return -1;
}

static int read_stat(int pid, char *buf) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  return read_small(path, buf, STAT_CAP);
}

static unsigned long long field_ull(const char *line, int field) {
  char text[32];
  if (stat_field(line, field, text, sizeof text) != 0) return 0;
  return strtoull(text, NULL, 10);
}

static unsigned long long fnv1a(const char *s) {
  unsigned long long h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

void ax_proc_self(AxProcId *me) {
  char buf[STAT_CAP];
  memset(me, 0, sizeof *me);
  me->pid = (int)getpid();
  if (read_stat(me->pid, buf) > 0) me->start = field_ull(buf, FIELD_START);
  if (read_small("/proc/sys/kernel/random/boot_id", buf, STAT_CAP) > 0) me->boot_hash = fnv1a(buf);
}

int ax_proc_checkable(const AxProcId *other, const AxProcId *me) {
  if (!other->start || !other->boot_hash || other->boot_hash != me->boot_hash) return 0;
  int code;
  AxProcState s = ax_proc_state(other, &code);
  return s == AX_PROC_RUNNING || s == AX_PROC_STOPPED;
}

/* A zombie: its exit status (field 52, Linux 3.5+) in waitpid(2)'s encoding. */
static AxProcState zombie(const char *line, int *code) {
  char text[32];
  if (stat_field(line, FIELD_EXIT_CODE, text, sizeof text) != 0) return AX_PROC_GONE;
  int status = atoi(text);
  if (WIFSIGNALED(status)) {
    *code = WTERMSIG(status);
    return AX_PROC_KILLED;
  }
  *code = WEXITSTATUS(status);
  return AX_PROC_EXITED;
}

AxProcState ax_proc_state(const AxProcId *p, int *code) {
  char buf[STAT_CAP], state[8];
  *code = 0;
  if (read_stat(p->pid, buf) <= 0 || field_ull(buf, FIELD_START) != p->start ||
      stat_field(buf, FIELD_STATE, state, sizeof state) != 0)
    return AX_PROC_GONE;
  switch (state[0]) {
  case 'Z': return zombie(buf, code);
  case 'X': case 'x': return AX_PROC_GONE;
  case 'T': case 't': return AX_PROC_STOPPED;
  default: return AX_PROC_RUNNING;
  }
}

const char *ax_proc_state_name(AxProcState s) {
  static const char *const names[] = {"running", "stopped", "exited", "killed", "gone"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}
