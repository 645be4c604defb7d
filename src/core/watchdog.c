/* watchdog.c — the activity record, the watchdog thread, its reports and the signal hand-offs;
 * see watchdog.h for the design. */
#include "watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"

AxWdRecord ax_wd_record;
_Thread_local int ax_wd_muted;

enum { LINE_CAP = 1024, EXIT_GRACE_MS = 3000, QUIET_MS = 3000, ABORT_SCAN_MS = 1000,
       VERDICT_WAIT_MS = 5000, SNAPSHOT_MS = 50 };

typedef struct {
  AxWatchdogConfig cfg;
  AxProcId *peers;
  unsigned char *checkable;
  long long *exited_since_ns; /* when a peer was first seen exited with a status; 0: not */
  long long quiet_since_ns;   /* when this rank first left a loss to another rank to report */
  int first_lost, first_code; /* the first loss this rank saw (-1: none) */
  AxProcState first_state;
  int n_checkable, next_peer, tick_ms;
  int pipe_r, pipe_w;
  pthread_t thread;
  struct sigaction old_int, old_abrt;
} Watchdog;

static Watchdog g = {.pipe_r = -1, .pipe_w = -1};
/* shared with signal handlers and the main thread */
static atomic_int g_running, g_reporting, g_sigint_seen, g_abort_seen, g_abort_verdict;
static _Thread_local int tl_is_watchdog;
static volatile sig_atomic_t g_exit_code = AX_EXIT_TIMEOUT;

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ------------------------------------------------------------------ noting */

void ax_wd_phase(AxWdPhase phase, int step) {
  if (ax_wd_muted) return;
  long long t = now_ns();
  unsigned s = ax_wd_begin_();
  atomic_store_explicit(&ax_wd_record.phase, (int)phase, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.step, step, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.phase_start_ns, t, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.what, (const char *)0, memory_order_relaxed);
  atomic_store_explicit(&ax_wd_record.detail, (const char *)0, memory_order_relaxed);
  ax_wd_end_(s);
}

void ax_wd_mute_thread(void) { ax_wd_muted = 1; }

/* ------------------------------------------------------------------ reading the record */

typedef struct {
  int phase, step;
  long long start_ns;
  const char *what, *detail;
  int arg[AX_WD_ARGS], peer, detail_arg, detail_peer;
  int whole; /* 0: the writer kept changing it; what was read may mix two notes */
} Snapshot;

static void read_fields(Snapshot *s) {
  AxWdRecord *r = &ax_wd_record;
  s->phase = atomic_load_explicit(&r->phase, memory_order_relaxed);
  s->step = atomic_load_explicit(&r->step, memory_order_relaxed);
  s->start_ns = atomic_load_explicit(&r->phase_start_ns, memory_order_relaxed);
  s->what = atomic_load_explicit(&r->what, memory_order_relaxed);
  for (int i = 0; i < AX_WD_ARGS; i++)
    s->arg[i] = atomic_load_explicit(&r->arg[i], memory_order_relaxed);
  s->peer = atomic_load_explicit(&r->peer, memory_order_relaxed);
  s->detail = atomic_load_explicit(&r->detail, memory_order_relaxed);
  s->detail_arg = atomic_load_explicit(&r->detail_arg, memory_order_relaxed);
  s->detail_peer = atomic_load_explicit(&r->detail_peer, memory_order_relaxed);
}

/* A consistent copy. A writer is never inside a note for long, but one that notes in a tight
 * loop can keep a reader retrying; after SNAPSHOT_MS the reader stops and marks the copy as not
 * whole, so a report never passes off a mix of two notes as one (the phase and step, used for
 * deadlines, may then be a moment old, which does not matter there). */
static void snapshot(Snapshot *s) {
  long long give_up = now_ns() + SNAPSHOT_MS * 1000000LL;
  for (unsigned i = 1;; i++) {
    unsigned a = atomic_load_explicit(&ax_wd_record.seq, memory_order_acquire);
    read_fields(s);
    atomic_thread_fence(memory_order_acquire);
    unsigned b = atomic_load_explicit(&ax_wd_record.seq, memory_order_relaxed);
    s->whole = a == b && !(a & 1);
    if (s->whole || (i % 1024 == 0 && now_ns() > give_up)) return;
  }
}

/* The world rank the current note waits for: the detail's when it names one. */
static int awaited_peer(const Snapshot *s) {
  if (s->detail && s->detail_peer >= 0) return s->detail_peer;
  return s->what ? s->peer : -1;
}

/* ------------------------------------------------------------------ wording */

static int put(char *buf, int cap, int at, const char *fmt, ...) AX_PRINTF(4, 5);
static int put(char *buf, int cap, int at, const char *fmt, ...) {
  if (at >= cap - 1) return at;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + at, (size_t)(cap - at), fmt, ap);
  va_end(ap);
  return n < 0 ? at : (at + n < cap - 1 ? at + n : cap - 1);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
/* The note's literal with its values (every literal takes at most AX_WD_ARGS ints). */
static int put_note(char *buf, int cap, int at, const char *fmt, const int *a) {
  if (at >= cap - 1) return at;
  int n = snprintf(buf + at, (size_t)(cap - at), fmt, a[0], a[1], a[2], a[3], a[4], a[5]);
  return n < 0 ? at : (at + n < cap - 1 ? at + n : cap - 1);
}
#pragma GCC diagnostic pop

static int put_activity(char *buf, int cap, int at, const Snapshot *s) {
  if (!s->whole)
    return put(buf, cap, at, "busy: its notes of what it does changed faster than they could be "
                             "read");
  if (!s->what) return put(buf, cap, at, "no wait or computation noted yet");
  at = put_note(buf, cap, at, s->what, s->arg);
  if (!s->detail) return at;
  at = put(buf, cap, at, ", ");
  const int d[AX_WD_ARGS] = {s->detail_arg};
  return put_note(buf, cap, at, s->detail, d);
}

static int put_rank(char *buf, int cap, int at, int r) {
  char label[96];
  return put(buf, cap, at, "%s", ax_rank_label(&g.cfg.layout, r, label, sizeof label));
}

static int put_phase(char *buf, int cap, int at, const Snapshot *s) {
  switch (s->phase) {
  case AX_WD_STEP: return put(buf, cap, at, "step %d", s->step);
  case AX_WD_VALIDATION: return put(buf, cap, at, "the validation after step %d", s->step);
  case AX_WD_CHECKPOINT: return put(buf, cap, at, "the checkpoint of step %d", s->step);
  case AX_WD_RESUME: return put(buf, cap, at, "resuming from the checkpoint");
  case AX_WD_FINAL: return put(buf, cap, at, "the end of the run (summary, saved model)");
  case AX_WD_SETUP: return put(buf, cap, at, "the start-up (before the first step)");
  default: return put(buf, cap, at, "no step");
  }
}

static const char *signal_name(int sig) {
  static const struct { int sig; const char *name; } names[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},   {SIGKILL, "SIGKILL"},
      {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"}, {SIGPIPE, "SIGPIPE"},
      {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].sig == sig) return names[i].name;
  return "a signal";
}

static int put_how(char *buf, int cap, int at, AxProcState st, int code, int pid) {
  if (st == AX_PROC_KILLED)
    return put(buf, cap, at, "killed by signal %d (%s)", code, signal_name(code));
  if (st == AX_PROC_EXITED) return put(buf, cap, at, "exited with status %d", code);
  return put(buf, cap, at, "its process (pid %d) is gone", pid);
}

void ax_watchdog_describe(char *buf, int cap) {
  Snapshot s;
  snapshot(&s);
  put_activity(buf, cap, 0, &s);
}

/* ------------------------------------------------------------------ ending the job */

static void on_alarm(int sig) {
  (void)sig;
  _exit(g_exit_code);
}

/* Prints the line (one write), lets the launcher forward it, ends the job. Never returns. */
static void end_job(const char *line, int len, int code) {
  if (write(STDERR_FILENO, line, (size_t)len) < 0) { /* nothing better to do */
  }
  sleep_ms(AX_WD_FLUSH_MS);
  g_exit_code = code;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  alarm(AX_WD_GRACE_S);
  if (g.cfg.end_job) g.cfg.end_job(code);
  _exit(code);
}

/* Only the first reporter speaks; anyone else waits for the end. */
static void claim_report(void) {
  if (atomic_exchange(&g_reporting, 1))
    for (;;) sleep_ms(1000);
}

/* The deadline of a phase in ms (0: none), and the option that set it. */
static int phase_limit_ms(AxWdPhase phase, const char **option) {
  if (phase == AX_WD_SETUP && g.cfg.setup_timeout_ms > 0) {
    *option = "--startup-timeout";
    return g.cfg.setup_timeout_ms;
  }
  *option = "--step-timeout";
  return g.cfg.timeout_ms;
}

static void report_timeout(const Snapshot *s) {
  claim_report();
  char line[LINE_CAP];
  const char *option;
  int limit = phase_limit_ms((AxWdPhase)s->phase, &option);
  int at = put(line, LINE_CAP, 0, "axonn: error: ");
  at = put_phase(line, LINE_CAP, at, s);
  at = put(line, LINE_CAP, at, " exceeded %s (%g s) on ", option, limit / 1e3);
  at = put_rank(line, LINE_CAP, at, g.cfg.rank);
  at = put(line, LINE_CAP, at, ": ");
  at = put_activity(line, LINE_CAP, at, s);
  int peer = awaited_peer(s), code;
  if (peer >= 0 && peer < g.cfg.size && g.checkable[peer] &&
      ax_proc_state(&g.peers[peer], &code) == AX_PROC_STOPPED)
    at = put(line, LINE_CAP, at, "; rank %d (pid %d) is stopped", peer, g.peers[peer].pid);
  at = put(line, LINE_CAP, at, "\n");
  end_job(line, at, AX_EXIT_TIMEOUT);
}

static void report_lost(int lost, AxProcState st, int code) {
  claim_report();
  Snapshot s;
  snapshot(&s);
  char line[LINE_CAP];
  int at = put(line, LINE_CAP, 0, "axonn: error: lost ");
  at = put_rank(line, LINE_CAP, at, lost);
  at = put(line, LINE_CAP, at, ": ");
  at = put_how(line, LINE_CAP, at, st, code, g.peers[lost].pid);
  at = put(line, LINE_CAP, at, "; ");
  at = put_rank(line, LINE_CAP, at, g.cfg.rank);
  at = put(line, LINE_CAP, at, " was in ");
  at = put_phase(line, LINE_CAP, at, &s);
  at = put(line, LINE_CAP, at, ": ");
  at = put_activity(line, LINE_CAP, at, &s);
  at = put(line, LINE_CAP, at, "\n");
  end_job(line, at, AX_EXIT_LOST_RANK);
}

static void report_interrupt(void) {
  claim_report();
  Snapshot s;
  snapshot(&s);
  char line[LINE_CAP];
  int at = put(line, LINE_CAP, 0, "axonn: error: ");
  at = put_rank(line, LINE_CAP, at, g.cfg.rank);
  at = put(line, LINE_CAP, at, " interrupted by SIGINT in ");
  at = put_phase(line, LINE_CAP, at, &s);
  at = put(line, LINE_CAP, at, ": ");
  at = put_activity(line, LINE_CAP, at, &s);
  at = put(line, LINE_CAP, at, "\n");
  end_job(line, at, AX_EXIT_INTERRUPTED);
}

/* ------------------------------------------------------------------ lost ranks */

/* 2: peer r was killed or is gone; 1: it exited with a non-zero status (it reported its own
 * failure, and its launcher is ending the job); 0: running, stopped, or exited normally. */
static int loss_of(int r, AxProcState *st, int *code) {
  *st = ax_proc_state(&g.peers[r], code);
  if (*st == AX_PROC_KILLED || *st == AX_PROC_GONE) return 2;
  return *st == AX_PROC_EXITED && *code != 0;
}

/* The thread's view: a killed or gone peer is lost at once; one that exited with a status
 * once EXIT_GRACE_MS have passed without the launcher ending the job. */
static int peer_lost(int r, AxProcState *st, int *code) {
  int loss = loss_of(r, st, code);
  if (loss != 1) {
    if (!loss) g.exited_since_ns[r] = 0;
    return loss == 2;
  }
  long long t = now_ns();
  if (!g.exited_since_ns[r]) g.exited_since_ns[r] = t;
  return t - g.exited_since_ns[r] >= (long long)EXIT_GRACE_MS * 1000000LL;
}

/* Every checkable peer: a killed or gone one first, else one that exited with a status. */
static int find_lost(AxProcState *st, int *code) {
  int exited = -1, exited_code = 0;
  for (int r = 0; r < g.cfg.size; r++) {
    int loss = g.checkable[r] ? loss_of(r, st, code) : 0;
    if (loss == 2) return r;
    if (loss == 1 && exited < 0) exited = r, exited_code = *code;
  }
  *st = AX_PROC_EXITED;
  *code = exited_code;
  return exited;
}

/* 1 when this rank is the lowest of its node still running: it reports a loss the others see
 * too, so that the job ends with one line rather than one per surviving rank. */
static int is_reporter(void) {
  for (int r = 0; r < g.cfg.rank; r++) {
    int code;
    if (g.checkable[r] && ax_proc_state(&g.peers[r], &code) == AX_PROC_RUNNING) return 0;
  }
  return 1;
}

/* A loss seen by the thread: the reporter reports at once; the others give it QUIET_MS to end
 * the job, then report themselves. Either way the first loss seen is the one named. */
static void on_loss(int r, AxProcState st, int code) {
  long long t = now_ns();
  if (g.first_lost < 0) {
    g.first_lost = r, g.first_state = st, g.first_code = code;
    g.quiet_since_ns = t;
  }
  if (is_reporter() || t - g.quiet_since_ns >= (long long)QUIET_MS * 1000000LL)
    report_lost(g.first_lost, g.first_state, g.first_code);
}

/* One tick's look at the peers: the awaited one, then the next few in turn. */
static void check_peers(const Snapshot *s) {
  AxProcState st;
  int code, peer = awaited_peer(s);
  if (peer >= 0 && peer < g.cfg.size && g.checkable[peer] && peer_lost(peer, &st, &code)) {
    on_loss(peer, st, code);
    return;
  }
  for (int i = 0; i < AX_WD_PEERS_PER_TICK && i < g.n_checkable; i++) {
    int r;
    do r = g.next_peer = (g.next_peer + 1) % g.cfg.size;
    while (!g.checkable[r]);
    if (peer_lost(r, &st, &code)) {
      on_loss(r, st, code);
      return;
    }
  }
}

/* Reports the first loss found within `ms` (a peer whose memory is already gone may not show
 * as a zombie yet: UCX notices a vanished peer before /proc does); returns if none is. */
static void scan_for_loss(int ms) {
  for (int waited = 0;; waited += 20) {
    AxProcState st;
    int code, r = find_lost(&st, &code);
    if (r >= 0) report_lost(r, st, code);
    if (waited >= ms) return;
    sleep_ms(20);
  }
}

void ax_watchdog_check_lost(void) {
  if (atomic_load(&g_running)) scan_for_loss(ABORT_SCAN_MS);
}

/* ------------------------------------------------------------------ the thread */

static void wake(char what) {
  if (g.pipe_w >= 0 && write(g.pipe_w, &what, 1) < 0) { /* full: it is awake anyway */
  }
}

static void on_sigint(int sig) {
  (void)sig;
  if (!atomic_exchange(&g_sigint_seen, 1)) wake('i');
}

/* UCX aborts a rank whose peer vanished mid-transfer: let the thread look for a lost rank
 * (it ends the job if it finds one); otherwise abort as before. */
static void on_sigabrt(int sig) {
  if (!tl_is_watchdog && atomic_load(&g_running) && !atomic_exchange(&g_abort_seen, 1)) {
    wake('a');
    for (int waited = 0; waited < VERDICT_WAIT_MS && !atomic_load(&g_abort_verdict); waited += 50)
      sleep_ms(50);
    while (atomic_load(&g_reporting)) sleep_ms(1000); /* the thread is ending the job */
  }
  signal(sig, SIG_DFL);
  raise(sig); /* delivered when the handler returns */
}

/* Reads what woke the thread; 1 when asked to stop. */
static int drain(void) {
  char c[16];
  int stop = 0;
  ssize_t n;
  while ((n = read(g.pipe_r, c, sizeof c)) > 0)
    for (ssize_t i = 0; i < n; i++) stop |= c[i] == 's';
  return stop;
}

/* Not a lost rank after ABORT_SCAN_MS: the abort goes on as it would have. */
static void on_abort_seen(void) {
  scan_for_loss(ABORT_SCAN_MS);
  atomic_store(&g_abort_verdict, 1);
}

static void tick(void) {
  if (atomic_load(&g_sigint_seen)) report_interrupt();
  if (atomic_load(&g_abort_seen) && !atomic_load(&g_abort_verdict)) on_abort_seen();
  Snapshot s;
  snapshot(&s);
  const char *option;
  int limit = phase_limit_ms((AxWdPhase)s.phase, &option);
  if (limit > 0 && s.phase != AX_WD_IDLE && now_ns() - s.start_ns > (long long)limit * 1000000LL)
    report_timeout(&s);
  if (g.n_checkable) check_peers(&s);
}

static void *thread_main(void *arg) {
  (void)arg;
  tl_is_watchdog = 1;
  ax_wd_muted = 1;
  struct pollfd pfd = {.fd = g.pipe_r, .events = POLLIN};
  for (;;) {
    int n = poll(&pfd, 1, g.tick_ms);
    if (n > 0 && drain()) return NULL;
    tick();
  }
}

/* ------------------------------------------------------------------ start and stop */

static int copy_peers(const AxWatchdogConfig *cfg) {
  int n = cfg->size > 0 ? cfg->size : 1;
  g.peers = ax_calloc((size_t)n, sizeof *g.peers);
  g.checkable = ax_calloc((size_t)n, 1);
  g.exited_since_ns = ax_calloc((size_t)n, sizeof *g.exited_since_ns);
  if (!g.peers || !g.checkable || !g.exited_since_ns) return AX_ERR;
  if (!cfg->peers) return AX_OK;
  memcpy(g.peers, cfg->peers, (size_t)cfg->size * sizeof *g.peers);
  for (int r = 0; r < cfg->size; r++)
    if (r != cfg->rank && ax_proc_checkable(&g.peers[r], &g.peers[cfg->rank])) {
      g.checkable[r] = 1;
      g.n_checkable++;
    }
  return AX_OK;
}

static void install(int sig, void (*fn)(int), struct sigaction *old) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sigaction(sig, &sa, old);
}

/* The thread starts with process-directed signals blocked: they go to the other threads. */
static int start_thread(void) {
  static const int synchronous[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  sigset_t block, old;
  sigfillset(&block);
  for (size_t i = 0; i < sizeof synchronous / sizeof synchronous[0]; i++)
    sigdelset(&block, synchronous[i]);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int rc = pthread_create(&g.thread, NULL, thread_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc == 0 ? AX_OK : AX_FAIL("cannot start the watchdog thread: %s", strerror(rc));
}

static void release(void) {
  if (g.pipe_r >= 0) close(g.pipe_r);
  if (g.pipe_w >= 0) close(g.pipe_w);
  free(g.peers);
  free(g.checkable);
  free(g.exited_since_ns);
  memset(&g, 0, sizeof g);
  g.pipe_r = g.pipe_w = -1;
  g.first_lost = -1;
}

int ax_watchdog_start(const AxWatchdogConfig *cfg) {
  if (atomic_load(&g_running)) return AX_FAIL("internal: the watchdog is already running");
  release();
  g.cfg = *cfg;
  g.cfg.peers = NULL;
  int shortest = cfg->setup_timeout_ms > 0 && (cfg->timeout_ms <= 0 ||
                                               cfg->setup_timeout_ms < cfg->timeout_ms)
                     ? cfg->setup_timeout_ms
                     : cfg->timeout_ms;
  int t = shortest / 20;
  g.tick_ms = shortest <= 0 || t > 200 ? 200 : t < 20 ? 20 : t;
  int fds[2];
  if (copy_peers(cfg) != AX_OK || pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    int rc = ax_error_pending() ? AX_ERR : AX_FAIL("watchdog: pipe: %s", strerror(errno));
    release();
    return rc;
  }
  g.pipe_r = fds[0], g.pipe_w = fds[1];
  ax_wd_phase(AX_WD_IDLE, 0);
  if (start_thread() != AX_OK) {
    release();
    return AX_ERR;
  }
  atomic_store(&g_running, 1);
  if (cfg->signals) {
    install(SIGINT, on_sigint, &g.old_int);
    install(SIGABRT, on_sigabrt, &g.old_abrt);
  }
  return AX_OK;
}

void ax_watchdog_stop(void) {
  if (!atomic_load(&g_running)) return;
  if (g.cfg.signals) {
    sigaction(SIGINT, &g.old_int, NULL);
    sigaction(SIGABRT, &g.old_abrt, NULL);
  }
  wake('s');
  pthread_join(g.thread, NULL);
  ax_wd_phase(AX_WD_IDLE, 0);
  release();
  atomic_store(&g_running, 0);
  atomic_store(&g_sigint_seen, 0);
  atomic_store(&g_abort_seen, 0);
  atomic_store(&g_abort_verdict, 0);
}
