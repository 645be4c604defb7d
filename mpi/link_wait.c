/* link_wait.c — progress and waiting with the link emulator: held sends are posted when due,
 * and waits sleep between polls instead of spinning; see link_emulator.h. */
#include <limits.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "link_internal.h"
#include "mpi_util.h"
#include "src/core/error.h"

static AxLinkEmu *emulator(const AxCommConfig *cc) {
  return cc && cc->links && cc->links->emulating ? cc->links : NULL;
}

int ax_link_progress(const AxCommConfig *cc) {
  AxLinkEmu *e = emulator(cc);
  if (!e || e->queue.n == 0) return AX_OK;
  return ax_link_queue_post_due(&e->queue, ax_link_now_ns());
}

int ax_link_test(const AxCommConfig *cc, AxLinkSend *s, int *done) {
  *done = 0;
  AX_TRY(ax_link_progress(cc));
  if (s->held) {
    AxLinkEmu *e = emulator(cc);
    int posted = 0;
    if (!e) return AX_FAIL("internal: a held send tested without its link emulator");
    AX_TRY(ax_link_queue_claim(&e->queue, s->held, &s->req, &posted));
    if (!posted) return AX_OK;
    s->held = 0;
  }
  AX_MPI(MPI_Test(&s->req, done, MPI_STATUS_IGNORE));
  return AX_OK;
}

int ax_link_wait(const AxCommConfig *cc, AxLinkSend *s) {
  if (!emulator(cc) && !s->held) return ax_mpi_wait(cc, &s->req, NULL);
  AxLinkWaiter w = {0};
  for (;;) {
    int done;
    AX_TRY(ax_link_test(cc, s, &done));
    if (done) return AX_OK;
    ax_link_pause(cc, &w);
  }
}

void ax_link_drop(const AxCommConfig *cc, AxLinkSend *s) {
  AxLinkEmu *e = emulator(cc);
  if (s->held && e) ax_link_queue_drop(&e->queue, s->held);
  else if (s->req != MPI_REQUEST_NULL) MPI_Request_free(&s->req);
  *s = AX_LINK_SEND_NULL;
}

int ax_link_waitany(const AxCommConfig *cc, int n, MPI_Request *reqs, int *index,
                    MPI_Status *status) {
  if (!emulator(cc)) return ax_mpi_waitany(cc, n, reqs, index, status);
  AxLinkWaiter w = {0};
  for (;;) {
    int done = 0;
    AX_TRY(ax_link_progress(cc));
    AX_MPI(MPI_Testany(n, reqs, index, &done, status ? status : MPI_STATUS_IGNORE));
    if (done) return AX_OK; /* also when every request is null: index = MPI_UNDEFINED */
    ax_link_pause(cc, &w);
  }
}

int ax_link_wait_recv(const AxCommConfig *cc, MPI_Request *req, MPI_Status *status) {
  int index;
  return ax_link_waitany(cc, 1, req, &index, status);
}

/* Sleeps until t_ns, with the thread's timer slack at AX_LINK_SLACK_NS for the sleep (the
 * default 50 us made every sleep here end about 70 us late) and restored after it. */
static void sleep_until(long long t_ns) {
  struct timespec ts = {(time_t)(t_ns / 1000000000LL), (long)(t_ns % 1000000000LL)};
#ifdef __linux__
  int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (old > AX_LINK_SLACK_NS) prctl(PR_SET_TIMERSLACK, (unsigned long)AX_LINK_SLACK_NS, 0, 0, 0);
#endif
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL); /* early on a signal: polls again */
#ifdef __linux__
  if (old > AX_LINK_SLACK_NS) prctl(PR_SET_TIMERSLACK, (unsigned long)old, 0, 0, 0);
#endif
}

long long ax_link_pause_plan(long long now, long long since, long long next_due) {
  if (now - since < AX_LINK_SPIN_NS) return 0; /* the start of a wait */
  long long until = now + AX_LINK_POLL_NS;
  if (next_due - AX_LINK_EARLY_NS < until) until = next_due - AX_LINK_EARLY_NS;
  return until > now ? until : 0; /* 0: a held send is due any moment */
}

int ax_link_pause_until(const AxCommConfig *cc, AxLinkWaiter *w, long long next_due) {
  long long now = ax_link_now_ns();
  if (!w->since) w->since = now;
  long long until = ax_link_pause_plan(now, w->since, next_due);
  if (!until) {
    ax_mpi_relax(cc);
    return 0;
  }
  sleep_until(until);
  return 1;
}

void ax_link_pause(const AxCommConfig *cc, AxLinkWaiter *w) {
  AxLinkEmu *e = emulator(cc);
  if (!e) {
    ax_mpi_relax(cc);
    return;
  }
  if (ax_link_pause_until(cc, w, e->queue.n ? e->queue.next_due : LLONG_MAX))
    e->sleeps++;
  else
    e->spins++;
}
