/* link_wait.c — progress and waiting with the link emulator: held sends are posted when due,
 * and waits sleep between polls (on the rank's doorbell once idle) instead of spinning; see
 * link_emulator.h. */
#include <limits.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "link_internal.h"
#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"
#include "src/core/error.h"

static AxLinkEmu *emulator(const AxCommConfig *cc) {
  return cc && cc->links && cc->links->emulating ? cc->links : NULL;
}

/* The idle work of cc's links that this thread runs (NULL: none). */
static AxLinkEmu *idle_worker(const AxCommConfig *cc) {
  AxLinkEmu *e = cc ? cc->links : NULL;
  return e && e->idle_work && pthread_equal(e->idle_thread, pthread_self()) ? e : NULL;
}

/* Whether waits poll (a loop of tests and ax_link_pause) rather than block in MPI. */
static int waits_poll(const AxCommConfig *cc) { return emulator(cc) || idle_worker(cc); }

static void run_idle_work(const AxCommConfig *cc) {
  AxLinkEmu *e = idle_worker(cc);
  if (!e || e->in_idle_work) return;
  e->in_idle_work = 1;
  e->idle_work(e->idle_ctx);
  e->in_idle_work = 0;
}

void ax_link_set_idle_work(AxLinkEmu *e, AxLinkIdleWork work, void *ctx) {
  if (!e) return;
  e->idle_work = work;
  e->idle_ctx = ctx;
  e->idle_thread = pthread_self();
}

int ax_link_progress(const AxCommConfig *cc) {
  AxLinkEmu *e = emulator(cc);
  if (!e || e->queue.n == 0) return AX_OK;
  return ax_link_queue_post_due(&e->queue, ax_link_now_ns(), &e->bells);
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
  if (!waits_poll(cc) && !s->held) return ax_mpi_wait(cc, &s->req, NULL);
  AxLinkWaiter w = {0};
  for (;;) {
    int done;
    AX_TRY(ax_link_test(cc, s, &done));
    if (done) return AX_OK;
    w.own_send = !s->held; /* posted: its completion rings nothing */
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
  if (!waits_poll(cc)) return ax_mpi_waitany(cc, n, reqs, index, status);
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

int ax_link_wait_collective(const AxCommConfig *cc, MPI_Comm comm, MPI_Request *req) {
  AxLinkEmu *e = emulator(cc);
  if (!waits_poll(cc)) /* MPI's own wait as the blocking collective it stands for, or polite */
    return ax_mpi_wait(cc, req, NULL);
  if (e && ax_link_bells_on(&e->bells)) {
    const int *world;
    int size, rank;
    AX_MPI(MPI_Comm_size(comm, &size));
    AX_MPI(MPI_Comm_rank(comm, &rank));
    AX_TRY(ax_mpi_world_ranks(comm, &world));
    long long now = ax_link_now_ns();
    for (int r = 0; r < size; r++) /* as a message to each: it wakes, and polls a while */
      if (r != rank) ax_link_queue_posted(&e->queue, &e->bells, world[r], 0, now);
  }
  return ax_link_wait_recv(cc, req, MPI_STATUS_IGNORE);
}

static int polite(const AxCommConfig *cc) { return cc && cc->polite; }

int ax_link_barrier(const AxCommConfig *cc, MPI_Comm comm) {
  MPI_Request req;
  if (!polite(cc)) {
    AX_MPI(MPI_Barrier(comm));
    return AX_OK;
  }
  AX_MPI(MPI_Ibarrier(comm, &req));
  return ax_link_wait_collective(cc, comm, &req);
}

int ax_link_max(const AxCommConfig *cc, MPI_Comm comm, double mine, double *max) {
  MPI_Request req;
  if (!polite(cc)) {
    AX_MPI(MPI_Allreduce(&mine, max, 1, MPI_DOUBLE, MPI_MAX, comm));
    return AX_OK;
  }
  AX_MPI(MPI_Iallreduce(&mine, max, 1, MPI_DOUBLE, MPI_MAX, comm, &req));
  return ax_link_wait_collective(cc, comm, &req);
}

/* Sleeps until t_ns or a ring of the bell past `seen`, with the thread's timer slack at
 * AX_LINK_SLACK_NS for the sleep (the default 50 us made every sleep here end about 70 us late)
 * and restored after it. */
static void sleep_until(const AxLinkBells *bells, unsigned seen, long long t_ns) {
#ifdef __linux__
  int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
  if (old > AX_LINK_SLACK_NS) prctl(PR_SET_TIMERSLACK, (unsigned long)AX_LINK_SLACK_NS, 0, 0, 0);
#endif
  ax_link_bell_sleep(bells, seen, t_ns); /* early on a signal: polls again */
#ifdef __linux__
  if (old > AX_LINK_SLACK_NS) prctl(PR_SET_TIMERSLACK, (unsigned long)old, 0, 0, 0);
#endif
}

long long ax_link_pause_plan(long long now, long long since, long long busy_until,
                             long long next_due, int bells) {
  if (now - since < AX_LINK_SPIN_NS) return 0; /* the start of a wait */
  int idle = bells && now >= busy_until;
  long long until = now + (idle ? AX_LINK_IDLE_NS : AX_LINK_POLL_NS);
  if (next_due - AX_LINK_EARLY_NS < until) until = next_due - AX_LINK_EARLY_NS;
  return until > now ? until : 0; /* 0: a held send is due any moment */
}

/* Whether the bell rang since the waiter last looked (a ring restarts the wait: it spins). */
static void look_at_bell(AxLinkWaiter *w, const AxLinkBells *bells, long long now) {
  unsigned count = ax_link_bell_count(bells);
  if (w->looked && count != w->seen) w->since = now;
  w->seen = count;
  w->looked = 1;
}

int ax_link_pause_until(const AxCommConfig *cc, AxLinkWaiter *w, long long next_due,
                        const AxLinkBells *bells, long long busy_until) {
  long long now = ax_link_now_ns();
  if (!w->since) w->since = now;
  look_at_bell(w, bells, now);
  long long rung_busy = ax_link_bell_busy_until(bells);
  if (rung_busy > busy_until) busy_until = rung_busy;
  if (w->own_send) busy_until = LLONG_MAX;
  long long until =
      ax_link_pause_plan(now, w->since, busy_until, next_due, ax_link_bells_on(bells));
  if (!until) {
    ax_mpi_relax(cc);
    return 0;
  }
  int idle = now >= busy_until; /* busy: a timed poll (a ring's wake-up was slower here) */
  sleep_until(idle ? bells : NULL, w->seen, until);
  look_at_bell(w, bells, ax_link_now_ns());
  return 1;
}

void ax_link_pause(const AxCommConfig *cc, AxLinkWaiter *w) {
  run_idle_work(cc);
  AxLinkEmu *e = emulator(cc);
  if (!e) {
    ax_mpi_relax(cc);
    return;
  }
  if (ax_link_pause_until(cc, w, e->queue.n ? e->queue.next_due : LLONG_MAX, &e->bells,
                          ax_link_queue_busy_until(&e->queue)))
    e->sleeps++;
  else
    e->spins++;
}
