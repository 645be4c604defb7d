/* sim_engine.c — the discrete-event simulation of one step; see sim_engine.h.
 *
 * The pipeline phase advances from event to event: a compute or send finishing (at its rate:
 * the speed of that many ranks computing at once on the host, or pinned, of its core shared by
 * the stages computing on it), a message arriving at a stage that waits, a message an
 * emulated link held at its waiting sender falling due. A stage with nothing to do looks at its
 * inbox and takes what the rule picks (ax_rule_pick), hands it to the rule
 * (ax_rule_on_message) and runs the actions the rule gives back, in order. The tail (sums and
 * updates) of each stage is priced in closed form. */
#include "sim_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/sched_rule.h"
#include "src/core/error.h"

enum { IN_ACT = 0, IN_GRAD = 1 };

typedef struct {
  double *at; /* arrival times, FIFO (a direction's messages arrive in the order sent) */
  int *mb;
  int head, tail;
} Inbox;

/* Messages a stage's emulated links have carried or are carrying, not yet posted (held). */
typedef struct {
  double *due;
  int *mb, *to; /* to: the receiving stage's inbox, 2 x stage + IN_ACT / IN_GRAD */
  int head, tail;
} Held;

typedef struct {
  AxSchedRule rule;
  AxAction *todo; /* the rule's actions not yet run */
  int n_todo, i_todo, cap_todo;
  int busy;        /* 1: running todo[i_todo - 1] */
  double left;     /* its work left, seconds at full speed */
  double started;  /* when it started */
  double wait_since; /* idle since (a receive wait) */
  int done;
  Inbox in[2];
  Held held;
} Stage;

typedef struct {
  const AxSimConfig *c;
  AxSimResult *r;
  int record;
  Stage *st;
  double (*link_free)[2]; /* [P - 1][direction]: the link is free from */
  double now;
  double *speed;          /* [P]: each stage's speed now (rates) */
  int *on_core, n_cores;  /* [n_cores]: busy stages on each core (c->core given) */
} Sim;

/* ------------------------------------------------------------------ timeline */

static int note(Sim *m, int s, int kind, int mb, double t0, double t1) {
  if (!m->record) return AX_OK;
  AxSimResult *r = m->r;
  if (r->count[s] == r->cap[s]) {
    int cap = r->cap[s] ? 2 * r->cap[s] : 64;
    AxTraceEvent *ev = realloc(r->ev[s], (size_t)cap * sizeof *ev);
    if (!ev) return AX_FAIL("out of memory recording the simulated timeline");
    r->ev[s] = ev;
    r->cap[s] = cap;
  }
  r->ev[s][r->count[s]++] = (AxTraceEvent){t0, t1, kind, 0, mb};
  return AX_OK;
}

const AxTraceEvent *ax_sim_events(const AxSimResult *r, int s, int *n) {
  *n = r->count ? r->count[s] : 0;
  return r->ev ? r->ev[s] : NULL;
}

/* ------------------------------------------------------------------ the rule's actions */

static int collect(void *ctx, AxAction a) {
  Stage *s = ctx;
  if (s->n_todo == s->cap_todo) return AX_FAIL("internal: the rule gave more actions than expected");
  s->todo[s->n_todo++] = a;
  return AX_OK;
}

static double action_cost(const Sim *m, int s, AxAction a) {
  switch (a.kind) {
  case AX_ACT_FORWARD: return m->c->fwd_s[s];
  case AX_ACT_BACKWARD: return m->c->bwd_s[s];
  default: return m->c->send_s[s];
  }
}

/* Starts the stage's next action, if any. */
static void start_next(Sim *m, int s) {
  Stage *x = &m->st[s];
  if (x->i_todo == x->n_todo) {
    x->n_todo = x->i_todo = 0;
    x->busy = 0;
    x->wait_since = m->now;
    return;
  }
  x->busy = 1;
  x->started = m->now;
  x->left = action_cost(m, s, x->todo[x->i_todo++]);
}

static void push(Inbox *b, double at, int mb) {
  b->at[b->tail] = at;
  b->mb[b->tail++] = mb;
}

/* A send finished: the message crosses the link (queued behind the one before it); an
 * emulated link's is held at the sender until it has crossed (release). */
static void deliver(Sim *m, int s, AxAction a) {
  const AxSimConfig *c = m->c;
  int to_next = a.kind == AX_ACT_SEND_NEXT, l = to_next ? s : s - 1, dir = to_next ? 0 : 1;
  int to = to_next ? s + 1 : s - 1, box = to_next ? IN_ACT : IN_GRAD;
  double start = m->now > m->link_free[l][dir] ? m->now : m->link_free[l][dir];
  double sent = start + c->msg_bytes * c->link[l].s_per_byte;
  m->link_free[l][dir] = sent;
  if (!c->link[l].held) {
    push(&m->st[to].in[box], sent + c->link[l].alpha_s, a.mb);
    return;
  }
  Held *h = &m->st[s].held;
  h->due[h->tail] = sent + c->link[l].alpha_s;
  h->mb[h->tail] = a.mb;
  h->to[h->tail++] = 2 * to + box;
}

/* Stage s calls into the engines now: its held messages that are due go out (in the order
 * handed over, as the link queue posts them) and are in their inboxes from now. */
static void release(Sim *m, int s) {
  Held *h = &m->st[s].held;
  for (; h->head < h->tail && h->due[h->head] <= m->now; h->head++)
    push(&m->st[h->to[h->head] / 2].in[h->to[h->head] % 2], m->now, h->mb[h->head]);
}

static int finish_action(Sim *m, int s) {
  Stage *x = &m->st[s];
  AxAction a = x->todo[x->i_todo - 1];
  static const int KIND[] = {AX_EV_FORWARD, AX_EV_BACKWARD, AX_EV_SEND, AX_EV_SEND};
  m->r->pipe_busy_s[s] += m->now - x->started;
  m->r->n_events++;
  AX_TRY(note(m, s, KIND[a.kind], a.mb, x->started, m->now));
  if (a.kind == AX_ACT_SEND_NEXT || a.kind == AX_ACT_SEND_PREV) {
    deliver(m, s, a);
    release(m, s); /* a send calls in; a forward or backward does not, nor between them */
  }
  start_next(m, s);
  return AX_OK;
}

/* ------------------------------------------------------------------ receiving */

static int arrived(const Inbox *b, double now) { return b->head < b->tail && b->at[b->head] <= now; }

/* An idle stage takes a message if one is in (or finishes its pass). */
static int look(Sim *m, int s) {
  Stage *x = &m->st[s];
  if (x->busy || x->done) return AX_OK;
  if (ax_rule_done(&x->rule)) {
    x->done = 1;
    m->r->pipe_end_s[s] = m->now;
    return AX_OK;
  }
  int pick = ax_rule_pick(arrived(&x->in[IN_ACT], m->now), arrived(&x->in[IN_GRAD], m->now));
  if (pick < 0) return AX_OK;
  Inbox *b = &x->in[pick];
  int mb = b->mb[b->head++];
  m->r->n_events++;
  AX_TRY(note(m, s, pick ? AX_EV_RECV_WAIT_GRAD : AX_EV_RECV_WAIT, mb, x->wait_since, m->now));
  AX_TRY(ax_rule_on_message(&x->rule, pick, mb, collect, x));
  start_next(m, s);
  return AX_OK;
}

/* ------------------------------------------------------------------ the event loop */

/* Each one's speed when `active` ranks of a row compute at once (a fraction: between the
 * table's entries, linear). */
static double speed_of(const AxSimConfig *c, double active) {
  double k = active * (c->copies > 0 ? c->copies : 1);
  int n = c->n_speed, lo = (int)floor(k);
  if (!c->speed || n < 1 || k <= 0) return 1.0;
  if (k <= 1) return c->speed[0];
  if (k > n) return c->speed[n - 1] * n / k;
  if (lo == k) return c->speed[lo - 1];
  return c->speed[lo - 1] + (k - lo) * (c->speed[lo] - c->speed[lo - 1]);
}

/* Pinned: each busy stage's speed is its core's (speed_of the cores busy) shared by the busy
 * stages on that core. */
static void rates_pinned(Sim *m) {
  const AxSimConfig *c = m->c;
  int busy_cores = 0;
  memset(m->on_core, 0, (size_t)m->n_cores * sizeof *m->on_core);
  for (int s = 0; s < c->P; s++)
    if (m->st[s].busy) busy_cores += m->on_core[c->core[s]]++ == 0;
  double core_speed = speed_of(c, busy_cores);
  for (int s = 0; s < c->P; s++)
    m->speed[s] = m->st[s].busy ? core_speed / m->on_core[c->core[s]] : 0;
}

/* Every stage's speed now (m->speed). */
static void rates(Sim *m) {
  if (m->c->core) {
    rates_pinned(m);
    return;
  }
  const AxSimConfig *c = m->c;
  int computing = 0;
  for (int s = 0; s < c->P; s++) computing += m->st[s].busy;
  int host_computing = computing * (c->copies > 0 ? c->copies : 1); /* the row's x its copies */
  double speed = c->waiting && computing
                     ? c->waiting[host_computing - 1]
                     : speed_of(c, computing + (c->P - computing) * c->waiter_weight);
  for (int s = 0; s < c->P; s++) m->speed[s] = speed;
}

/* The next time something happens; INFINITY when nothing will. */
static double next_event(const Sim *m) {
  double t = INFINITY;
  for (int s = 0; s < m->c->P; s++) {
    const Stage *x = &m->st[s];
    if (x->busy) {
      double end = m->now + x->left / m->speed[s];
      t = end < t ? end : t;
      continue;
    }
    for (int d = 0; d < 2 && !x->done; d++)
      if (x->in[d].head < x->in[d].tail && x->in[d].at[x->in[d].head] < t)
        t = x->in[d].at[x->in[d].head];
    if (x->held.head < x->held.tail && x->held.due[x->held.head] < t)
      t = x->held.due[x->held.head]; /* it waits: it posts the message when due */
  }
  return t;
}

/* At `now`: finish what is finished, let idle stages take messages, until nothing changes. */
static int settle(Sim *m) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (int s = 0; s < m->c->P; s++) {
      Stage *x = &m->st[s];
      int was_busy = x->busy, was_done = x->done, taken = x->in[0].head + x->in[1].head;
      if (x->busy && x->left <= 1e-12 * (1.0 + m->now)) AX_TRY(finish_action(m, s));
      int held = x->held.head;
      if (!x->busy) release(m, s);
      changed |= held != x->held.head;
      AX_TRY(look(m, s));
      changed |= was_busy != x->busy || was_done != x->done ||
                 taken != x->in[0].head + x->in[1].head;
    }
  }
  return AX_OK;
}

static int all_done(const Sim *m) {
  for (int s = 0; s < m->c->P; s++)
    if (!m->st[s].done) return 0;
  return 1;
}

static int pipeline(Sim *m) {
  for (int s = 0; s < m->c->P; s++) {
    AX_TRY(ax_rule_start(&m->st[s].rule, collect, &m->st[s]));
    start_next(m, s);
  }
  AX_TRY(settle(m));
  while (!all_done(m)) {
    rates(m);
    double t = next_event(m);
    if (!isfinite(t)) return AX_FAIL("internal: the simulated pipeline deadlocked at %g s", m->now);
    for (int s = 0; s < m->c->P; s++)
      if (m->st[s].busy) m->st[s].left -= (t - m->now) * m->speed[s];
    m->now = t;
    AX_TRY(settle(m));
  }
  return AX_OK;
}

/* ------------------------------------------------------------------ the tail, per stage */

/* AdamW on chunk c of stage s from *t; *t becomes its end. */
static int update_chunk(Sim *m, int s, int c, double speed, double *t) {
  double cost = m->c->tail[s].update_s[c] / speed, t0 = *t;
  *t += cost;
  m->r->busy_s[s] += cost;
  return note(m, s, AX_EV_OPTIMIZER, c, t0, *t);
}

/* interleave.c's order: chunks [0, window) start at once; then for each c: wait for c, start
 * c + window, update c (`separate`: no update yet). The column's sums go one after another over
 * the network. Returns when the last chunk is summed (and updated). */
static int sum_chunks(Sim *m, int s, double t, double speed, int update, double *end) {
  const AxSimTail *x = &m->c->tail[s];
  double net = t, upd = t, *started = NULL;
  if (x->n_chunks > 0 && !(started = malloc((size_t)x->n_chunks * sizeof *started)))
    return AX_FAIL("out of memory simulating the optimizer");
  int w = x->window > 0 ? x->window : 1, rc = AX_OK;
  for (int c = 0; c < x->n_chunks && c < w; c++) started[c] = t;
  for (int c = 0; c < x->n_chunks && rc == AX_OK; c++) {
    double begin = started[c] > net ? started[c] : net;
    net = begin + x->allreduce_s[c];                 /* chunk c summed */
    double got = upd > net ? upd : net;               /* waited for after the update before */
    if (x->allreduce_s[c] > 0) rc = note(m, s, AX_EV_ALLREDUCE, c, upd, got);
    if (c + w < x->n_chunks) started[c + w] = got;
    upd = got;
    if (update && rc == AX_OK) rc = update_chunk(m, s, c, speed, &upd);
  }
  free(started);
  *end = upd;
  return rc;
}

/* The updates' speeds: every stage computing at once. */
static void tail_speeds(Sim *m) {
  for (int s = 0; s < m->c->P; s++) m->st[s].busy = 1;
  rates(m);
  for (int s = 0; s < m->c->P; s++) m->st[s].busy = 0;
}

/* The stage's sums (and updates) from the end of its pipeline phase; a separate update waits
 * for the row's norm (the latest sum of the row) and then runs every chunk. */
static int tails(Sim *m) {
  const AxSimConfig *c = m->c;
  int P = c->P;
  tail_speeds(m); /* every rank updates at once */
  /* the tied sum starts when both ends are ready for it */
  double ends = fmax(m->r->pipe_end_s[0] + c->tail[0].before_s,
                     m->r->pipe_end_s[P - 1] + c->tail[P - 1].before_s);
  double last = 0, norm = 0;
  for (int s = 0; s < P; s++) m->r->pipeline_s = fmax(m->r->pipeline_s, m->r->pipe_end_s[s]);
  for (int s = 0; s < P; s++) {
    const AxSimTail *x = &c->tail[s];
    double t = m->r->pipe_end_s[s] + x->before_s;
    if (x->tied_s > 0) {
      t = ends + x->tied_s;
      AX_TRY(note(m, s, AX_EV_ALLREDUCE, -1, ends, t));
    }
    AX_TRY(sum_chunks(m, s, t, m->speed[s], !x->separate, &m->r->tail_end_s[s]));
    norm = fmax(norm, m->r->tail_end_s[s]);
  }
  for (int s = 0; s < P; s++) {
    if (c->tail[s].separate) {
      m->r->tail_end_s[s] = norm;
      for (int k = 0; k < c->tail[s].n_chunks; k++)
        AX_TRY(update_chunk(m, s, k, m->speed[s], &m->r->tail_end_s[s]));
    }
    last = fmax(last, m->r->tail_end_s[s]);
  }
  m->r->step_s = last + c->end_s;
  for (int s = 0; s < P; s++) {
    m->r->busy_s[s] += m->r->pipe_busy_s[s];
    AX_TRY(note(m, s, AX_EV_PIPELINE, -1, 0, m->r->pipe_end_s[s]));
    AX_TRY(note(m, s, AX_EV_STEP, -1, 0, m->r->step_s));
  }
  return AX_OK;
}

/* ------------------------------------------------------------------ set-up */

static int alloc_result(AxSimResult *r, int P, int record) {
  memset(r, 0, sizeof *r);
  r->P = P;
  r->pipe_end_s = ax_calloc((size_t)P, sizeof(double));
  r->busy_s = ax_calloc((size_t)P, sizeof(double));
  r->pipe_busy_s = ax_calloc((size_t)P, sizeof(double));
  r->tail_end_s = ax_calloc((size_t)P, sizeof(double));
  if (!r->pipe_end_s || !r->busy_s || !r->pipe_busy_s || !r->tail_end_s) return AX_ERR;
  if (!record) return AX_OK;
  r->ev = ax_calloc((size_t)P, sizeof *r->ev);
  r->count = ax_calloc((size_t)P, sizeof *r->count);
  r->cap = ax_calloc((size_t)P, sizeof *r->cap);
  return r->ev && r->count && r->cap ? AX_OK : AX_ERR;
}

void ax_sim_result_free(AxSimResult *r) {
  for (int s = 0; r->ev && s < r->P; s++) free(r->ev[s]);
  free(r->ev);
  free(r->count);
  free(r->cap);
  free(r->pipe_end_s);
  free(r->busy_s);
  free(r->pipe_busy_s);
  free(r->tail_end_s);
  memset(r, 0, sizeof *r);
}

static int alloc_stages(Sim *m) {
  const AxSimConfig *c = m->c;
  m->st = ax_calloc((size_t)c->P, sizeof *m->st);
  m->link_free = ax_calloc((size_t)(c->P > 1 ? c->P - 1 : 1), sizeof *m->link_free);
  m->speed = ax_calloc((size_t)c->P, sizeof *m->speed);
  for (int s = 0; c->core && s < c->P; s++)
    if (c->core[s] >= m->n_cores) m->n_cores = c->core[s] + 1;
  m->on_core = ax_calloc((size_t)m->n_cores + 1, sizeof *m->on_core);
  if (!m->st || !m->link_free || !m->speed || !m->on_core) return AX_ERR;
  for (int s = 0; s < c->P; s++) {
    Stage *x = &m->st[s];
    ax_rule_begin(&x->rule, s, c->P, c->limit, c->n_micro);
    x->cap_todo = 2 * c->n_micro + 4;
    x->todo = ax_malloc((size_t)x->cap_todo * sizeof *x->todo);
    if (!x->todo) return AX_ERR;
    for (int d = 0; d < 2; d++) {
      x->in[d].at = ax_malloc((size_t)c->n_micro * sizeof(double) + 1);
      x->in[d].mb = ax_malloc((size_t)c->n_micro * sizeof(int) + 1);
      if (!x->in[d].at || !x->in[d].mb) return AX_ERR;
    }
    x->held.due = ax_malloc(2 * (size_t)c->n_micro * sizeof(double) + 1);
    x->held.mb = ax_malloc(2 * (size_t)c->n_micro * sizeof(int) + 1);
    x->held.to = ax_malloc(2 * (size_t)c->n_micro * sizeof(int) + 1);
    if (!x->held.due || !x->held.mb || !x->held.to) return AX_ERR;
  }
  return AX_OK;
}

static void free_stages(Sim *m) {
  for (int s = 0; m->st && s < m->c->P; s++) {
    free(m->st[s].todo);
    free(m->st[s].held.due);
    free(m->st[s].held.mb);
    free(m->st[s].held.to);
    for (int d = 0; d < 2; d++) {
      free(m->st[s].in[d].at);
      free(m->st[s].in[d].mb);
    }
  }
  free(m->st);
  free(m->link_free);
  free(m->speed);
  free(m->on_core);
}

int ax_sim_run(const AxSimConfig *c, int record, AxSimResult *out) {
  if (c->P < 1 || c->n_micro < 1 || c->limit < 1)
    return AX_FAIL("internal: simulating %d stages, %d micro-batches, limit %d", c->P,
                   c->n_micro, c->limit);
  for (int s = 0; c->core && s < c->P; s++)
    if (c->core[s] < 0) return AX_FAIL("internal: stage %d pinned to core %d", s, c->core[s]);
  Sim m = {.c = c, .r = out, .record = record};
  int rc = alloc_result(out, c->P, record);
  if (rc == AX_OK) rc = alloc_stages(&m);
  if (rc == AX_OK) rc = pipeline(&m);
  if (rc == AX_OK) rc = tails(&m);
  free_stages(&m);
  if (rc != AX_OK) ax_sim_result_free(out);
  return rc;
}
