/* mpitest_p2p.c — the pipeline's point-to-point engine (mpi/link/p2p.h) and the lifetimes of its
 * buffers, on a line of ranks (rank r's neighbours are r - 1 and r + 1), with many rapid
 * messages and seeded random delays so that a reused buffer shows:
 *   - a received buffer stays valid and unchanged until the second-next message from that
 *     direction arrives: the sender sends message k + 1 only once the receiver has checked
 *     message k, and the receiver then finds message k - 1 still intact in its buffer;
 *   - under rapid traffic (every rank sends all of its messages before receiving any) a held
 *     message does not change while it is held, messages come in order and intact, a send
 *     buffer is never reused while its MPI_Isend is in flight (the pool grows instead: large
 *     messages go by rendezvous, so a reused buffer would be sent with another message's
 *     contents), and ax_p2p_flush completes every send;
 *   - messages of the wrong size (shorter, longer) are reported;
 *   - destroy with receives still posted is clean: a new engine on the same communicator gets
 *     every message (none is caught by a receive of the old one).
 * Message words encode (sequence number, direction, sender), checked word by word. The engine
 * runs over the CPU backend, or the CPU backend posing as a separate device
 * (tests/posing_device.h: every copy's kind is checked against where its pointers live, and
 * device-to-device copies run late, as on a GPU), with its buffers in host memory (staged) or
 * in device memory (as with CUDA-aware MPI); a received message must be where it says. */
#include <check.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/link/p2p.h"
#include "mpi/mpi_util.h"
#include "mpitestutil.h"
#include "posing_device.h"
#include "src/core/error.h"
#include "src/core/rng.h"
#include "src/core/watchdog.h"
#include "testutil.h"

enum {
  SMALL_BYTES = 256,         /* sent eagerly */
  LARGE_BYTES = 256 * 1024,  /* MPI's rendezvous protocol: the send buffer is read late */
  RAPID_SMALL = 200,         /* messages to each neighbour, small */
  RAPID_LARGE = 24,          /* and large */
  LOCKSTEP = 40,             /* messages per pair and direction, one at a time */
  RUN_TIMEOUT_S = 60,
  ACK_TAG = 5,
};
enum { FWD = 0, BWD = 1 }; /* to the next rank (activations), to the previous (gradients) */

typedef enum { STAGED_CPU = 0, STAGED_POSING, DEVICE_CPU, DEVICE_POSING, N_MODES } Mode;
static const char *const MODE_NAMES[] = {"host-staged, CPU backend", "host-staged, posing device",
                                         "device buffers, CPU backend",
                                         "device buffers, posing device"};
static int device_buffers(Mode m) { return m == DEVICE_CPU || m == DEVICE_POSING; }
static int posing(Mode m) { return m == STAGED_POSING || m == DEVICE_POSING; }

static MPI_Comm g_pipe, g_ctrl; /* the engine's communicator; acknowledgements */
static AxCommConfig g_cc;       /* polite waiting when the ranks oversubscribe the cores */

typedef struct {
  Mode mode;
  AxBackend *be;
  AxP2P p;
  size_t bytes;
  uint32_t *host; /* scratch, one message */
  void *src;      /* device: what we send */
  AxRng rng;
} Engine;

static int prev_rank(void) { return mt_rank > 0 ? mt_rank - 1 : MPI_PROC_NULL; }
static int next_rank(void) { return mt_rank < mt_size - 1 ? mt_rank + 1 : MPI_PROC_NULL; }

static uint32_t word(int seq, int dir, int from, size_t i) {
  uint64_t x = ((uint64_t)seq << 34) ^ ((uint64_t)dir << 32) ^ ((uint64_t)from << 24) ^ i;
  x = (x ^ (x >> 31)) * 0x7fb5d329728ea185ULL;
  x = (x ^ (x >> 27)) * 0x81dadef4bc2dd44dULL;
  return (uint32_t)(x ^ (x >> 33));
}

static void nap(Engine *e, long max_us) { mt_sleep_us((long)ax_rng_below(&e->rng, (uint64_t)max_us + 1)); }

static void open_engine(Engine *e, Mode mode, size_t bytes, int pool, uint64_t seed) {
  memset(e, 0, sizeof *e);
  e->mode = mode;
  e->bytes = bytes;
  e->be = posing(mode) ? tu_posing_backend() : tu_backend(1);
  e->host = tu_alloc(bytes);
  e->src = e->be->ops->alloc(e->be, bytes);
  ck_assert_ptr_nonnull(e->src);
  ax_rng_seed(&e->rng, seed * 31 + (uint64_t)mt_rank);
  AxP2PConfig pc = {.comm = g_pipe, .prev = prev_rank(), .next = next_rank(), .bytes = bytes,
                    .pool = pool, .be = e->be, .cc = g_cc,
                    .device_buffers = device_buffers(mode)};
  int rc = ax_p2p_init(&e->p, &pc);
  ck_assert_msg(rc == AX_OK, "ax_p2p_init: %s", ax_error_message());
  ck_assert_int_eq(e->p.mem, device_buffers(mode) ? AX_MEM_DEVICE : AX_MEM_HOST);
}

/* Every rank closes its engine before any opens the next on the same communicator. */
static void close_engine(Engine *e) {
  ax_p2p_destroy(&e->p);
  e->be->ops->free(e->be, e->src);
  ax_backend_destroy(e->be);
  MPI_Barrier(g_pipe);
}

/* Sends message `seq` to the next rank (FWD) or the previous one (BWD). */
static void send(Engine *e, int dir, int seq) {
  for (size_t i = 0; i < e->bytes / 4; i++) e->host[i] = word(seq, dir, mt_rank, i);
  int rc = e->be->ops->copy(e->be, e->src, e->host, e->bytes, AX_COPY_H2D, AX_STREAM_COMPUTE);
  if (rc == AX_OK) rc = ax_p2p_send(&e->p, dir == FWD, seq, e->src);
  ck_assert_msg(rc == AX_OK, "send %d: %s", seq, ax_error_message());
}

/* Index of the first word of a received message that differs from message (seq, dir) of
 * `from`; the message's length in words when none does. */
static size_t first_bad(Engine *e, const void *data, int seq, int dir, int from) {
  if (e->p.mem == AX_MEM_DEVICE) /* as a GPU's memory is read: by a copy */
    ck_assert_int_eq(e->be->ops->copy(e->be, e->host, data, e->bytes, AX_COPY_D2H,
                                      AX_STREAM_COMPUTE), AX_OK);
  else
    memcpy(e->host, data, e->bytes);
  size_t i = 0;
  while (i < e->bytes / 4 && e->host[i] == word(seq, dir, from, i)) i++;
  return i;
}

static int check_message(Engine *e, const void *data, int seq, int dir, const char *when) {
  int from = dir == FWD ? mt_rank - 1 : mt_rank + 1;
  size_t bad = first_bad(e, data, seq, dir, from), n = e->bytes / 4;
  return mt_expect(bad == n, "%s message %d from rank %d differs at word %zu of %zu %s (%s, "
                   "%zu bytes)", dir == FWD ? "forward" : "backward", seq, from, bad, n, when,
                   MODE_NAMES[e->mode], e->bytes);
}

/* A received message is where the engine says: one of its buffers, in device memory exactly
 * when it has device buffers. */
static void check_place(Engine *e, const void *data) {
  int in_buffers = 0;
  for (int d = 0; d < 2; d++)
    for (int b = 0; b < 2; b++) in_buffers |= data == e->p.rbuf[d][b];
  mt_expect(in_buffers, "a message at %p, not in a receive buffer (%s)", data,
            MODE_NAMES[e->mode]);
  if (posing(e->mode))
    mt_expect(tu_posing_is_device(e->be, data) == device_buffers(e->mode),
              "a message received into %s memory (%s)",
              tu_posing_is_device(e->be, data) ? "device" : "host", MODE_NAMES[e->mode]);
}

/* Waits for the next message; checks where it came from and its tag. */
static const void *receive(Engine *e, int want_dir, int want_seq) {
  AxP2PDir dir;
  int tag;
  const void *data;
  AX_WD_NOTE(-1, "in ax_p2p_wait for message %d", want_seq);
  int rc = ax_p2p_wait(&e->p, &dir, &tag, &data);
  ck_assert_msg(rc == AX_OK, "ax_p2p_wait: %s", ax_error_message());
  int dir_of = dir == AX_FROM_PREV ? FWD : BWD;
  if (want_dir >= 0)
    mt_expect(dir_of == want_dir, "a %s message, expected a %s one", dir_of == FWD ? "forward" :
              "backward", want_dir == FWD ? "forward" : "backward");
  if (want_seq >= 0) mt_expect(tag == want_seq, "message %d, expected %d", tag, want_seq);
  check_place(e, data);
  return data;
}

/* ------------------------------------------------------------------ lock step */

/* Pairs (r, r + 1) with r of the given parity: the sender sends message k + 1 only after the
 * receiver acknowledged message k, which it does once it has checked message k and found
 * message k - 1 still intact in its own buffer (the second-next has not arrived yet). */
static void lockstep(Engine *e, int parity, int dir) {
  int lo = mt_rank % 2 == parity ? mt_rank : mt_rank - 1;
  if (lo < 0 || lo + 1 >= mt_size) return;
  int sender = dir == FWD ? lo : lo + 1, receiver = dir == FWD ? lo + 1 : lo;
  if (mt_rank == sender) {
    for (int k = 0; k < LOCKSTEP; k++) {
      nap(e, 300);
      send(e, dir, k);
      MPI_Recv(NULL, 0, MPI_BYTE, receiver, ACK_TAG, g_ctrl, MPI_STATUS_IGNORE);
    }
    ck_assert_int_eq(ax_p2p_flush(&e->p), AX_OK);
    return;
  }
  const void *before = NULL;
  for (int k = 0; k < LOCKSTEP; k++) {
    const void *data = receive(e, dir, k);
    check_message(e, data, k, dir, "on arrival");
    if (before) {
      mt_expect(data != before, "messages %d and %d in the same buffer", k - 1, k);
      check_message(e, before, k - 1, dir, "when the next one arrived");
    }
    nap(e, 300);
    check_message(e, data, k, dir, "while held");
    before = data;
    MPI_Send(NULL, 0, MPI_BYTE, sender, ACK_TAG, g_ctrl);
  }
}

START_TEST(received_buffer_holds_until_the_second_next) {
  for (int mode = 0; mode < N_MODES; mode++)
    for (int large = 0; large <= 1; large++) {
      Engine e;
      open_engine(&e, (Mode)mode, large ? LARGE_BYTES : SMALL_BYTES, 1, 11 + (uint64_t)mode);
      mt_run_begin("lock step, %s, %zu bytes", MODE_NAMES[mode], e.bytes);
      for (int parity = 0; parity <= 1; parity++)
        for (int dir = FWD; dir <= BWD; dir++) {
          lockstep(&e, parity, dir);
          MPI_Barrier(g_ctrl); /* a rank's next pair waits until its last one is done */
        }
      mt_run_end();
      close_engine(&e);
    }
  mt_assert_all_ok("received buffers held until the second-next message");
}
END_TEST

/* ------------------------------------------------------------------ rapid traffic */

static int neighbours(void) { return (mt_rank > 0) + (mt_rank < mt_size - 1); }

/* Every rank sends n messages to each neighbour (random naps between), then receives all of
 * its own: a held message must not change until the next wait, and the next message from a
 * direction must carry the next sequence number. */
static void rapid(Engine *e, int n) {
  for (int k = 0; k < n; k++)
    for (int dir = FWD; dir <= BWD; dir++) {
      if ((dir == FWD ? next_rank() : prev_rank()) == MPI_PROC_NULL) continue;
      if (ax_rng_below(&e->rng, 4) == 0) nap(e, 200);
      send(e, dir, k);
    }
  /* n large messages are more than MPI buffers for a receiver that is not receiving yet: some
   * sends are still in flight when later ones start, which must then take new buffers */
  if (e->bytes >= LARGE_BYTES && neighbours() > 0)
    mt_expect(e->p.n_sends > 1, "%d sends of %zu bytes went through a pool of %d buffer(s)",
              neighbours() * n, e->bytes, e->p.n_sends);
  int next_seq[2] = {0, 0};
  for (int got = 0; got < neighbours() * n; got++) {
    AxP2PDir d;
    int tag;
    const void *data;
    AX_WD_NOTE(-1, "in ax_p2p_wait for message %d of %d", got, neighbours() * n);
    int rc = ax_p2p_wait(&e->p, &d, &tag, &data);
    ck_assert_msg(rc == AX_OK, "ax_p2p_wait: %s", ax_error_message());
    int dir = d == AX_FROM_PREV ? FWD : BWD;
    mt_expect(tag == next_seq[dir], "%s message %d arrived, expected %d", dir == FWD ? "forward" :
              "backward", tag, next_seq[dir]);
    next_seq[dir] = tag + 1;
    check_place(e, data);
    check_message(e, data, tag, dir, "on arrival");
    if (ax_rng_below(&e->rng, 3) == 0) {
      nap(e, 300);
      check_message(e, data, tag, dir, "while held");
    }
  }
  ck_assert_msg(ax_p2p_flush(&e->p) == AX_OK, "flush: %s", ax_error_message());
  for (int i = 0; i < e->p.n_sends; i++)
    mt_expect(e->p.sends[i].send.req == MPI_REQUEST_NULL && !e->p.sends[i].send.held,
              "send slot %d still in flight after flush", i);
  unsigned long long want = (unsigned long long)neighbours() * (unsigned)n * e->bytes;
  mt_expect(e->p.bytes_sent == want && e->p.bytes_received == want,
            "counted %llu bytes sent and %llu received, expected %llu each", e->p.bytes_sent,
            e->p.bytes_received, want);
}

START_TEST(rapid_messages_intact_and_send_buffers_not_reused) {
  for (int mode = 0; mode < N_MODES; mode++)
    for (int large = 0; large <= 1; large++)
      for (uint64_t seed = 0; seed < 3; seed++) {
        Engine e;
        open_engine(&e, (Mode)mode, large ? LARGE_BYTES : SMALL_BYTES, 1, seed);
        mt_run_begin("rapid traffic, %s, %zu bytes, seed %llu", MODE_NAMES[mode], e.bytes,
                     (unsigned long long)seed);
        rapid(&e, large ? RAPID_LARGE : RAPID_SMALL);
        mt_run_end();
        close_engine(&e);
      }
  mt_assert_all_ok("rapid traffic");
}
END_TEST

/* ------------------------------------------------------------------ errors and teardown */

/* Rank 0 sends rank 1 a message of `bytes` on the engine's communicator, which expects
 * e->bytes; rank 1's wait must fail with a message containing `want`. */
static void wrong_size(Engine *e, size_t bytes, const char *want) {
  if (mt_rank == 0) {
    char *junk = calloc(1, bytes);
    ck_assert_ptr_nonnull(junk);
    MPI_Send(junk, (int)bytes, MPI_BYTE, 1, 3, g_pipe);
    free(junk);
  } else if (mt_rank == 1) {
    AxP2PDir dir;
    int tag;
    const void *data;
    ax_error_clear();
    int rc = ax_p2p_wait(&e->p, &dir, &tag, &data);
    mt_expect(rc == AX_ERR, "a %zu-byte message where %zu are expected was accepted", bytes,
              e->bytes);
    mt_expect(rc == AX_OK || strstr(ax_error_message(), want) != NULL,
              "a %zu-byte message where %zu are expected: '%s' does not say '%s'", bytes,
              e->bytes, ax_error_message(), want);
    ax_error_clear();
  }
}

START_TEST(wrong_sizes_are_reported) {
  if (mt_size < 2) return;
  for (int mode = 0; mode < N_MODES; mode++) {
    Engine e;
    char want[128];
    snprintf(want, sizeof want, "pipeline message of %d bytes from rank 0, expected %d",
             SMALL_BYTES - 4, SMALL_BYTES);
    open_engine(&e, (Mode)mode, SMALL_BYTES, 1, 5);
    wrong_size(&e, SMALL_BYTES - 4, want);
    close_engine(&e);
    open_engine(&e, (Mode)mode, SMALL_BYTES, 1, 5);
    wrong_size(&e, SMALL_BYTES + 64, "truncated");
    close_engine(&e);
  }
  mt_assert_all_ok("messages of the wrong size");
}
END_TEST

START_TEST(destroy_with_receives_posted_is_clean) {
  for (int mode = 0; mode < N_MODES; mode++) {
    Engine e;
    for (int i = 0; i < 20; i++) { /* receives posted, nothing sent: cancelled by destroy */
      open_engine(&e, (Mode)mode, i % 2 ? LARGE_BYTES : SMALL_BYTES, 1, (uint64_t)i);
      close_engine(&e);
    }
    open_engine(&e, (Mode)mode, SMALL_BYTES, 1, 3);
    mt_run_begin("after destroys, %s", MODE_NAMES[mode]);
    rapid(&e, 3); /* a receive of an old engine would catch one of these: the wait hangs */
    mt_run_end();
    close_engine(&e);
  }
  mt_assert_all_ok("destroy with receives posted");
}
END_TEST

static Suite *p2p_suite(void) {
  Suite *s = suite_create("p2p");
  TCase *tc = tu_tcase(s, "p2p", 600);
  tcase_add_test(tc, received_buffer_holds_until_the_second_next);
  tcase_add_test(tc, rapid_messages_intact_and_send_buffers_not_reused);
  tcase_add_test(tc, wrong_sizes_are_reported);
  tcase_add_test(tc, destroy_with_receives_posted_is_clean);
  return s;
}

int main(int argc, char **argv) {
  mt_init(&argc, &argv);
  /* a truncated message is an error returned, as in axonn train (MPICH raises the errors of
   * MPI_Waitany on MPI_COMM_WORLD) */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_pipe);
  MPI_Comm_dup(MPI_COMM_WORLD, &g_ctrl);
  g_cc = mt_comm_config();
  int rc = mt_run_watched(p2p_suite(), RUN_TIMEOUT_S);
  MPI_Comm_free(&g_ctrl);
  MPI_Comm_free(&g_pipe);
  return mt_finish(rc);
}
