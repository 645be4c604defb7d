/* test_watchdog.c — the watchdog (src/core/watchdog.h) and the /proc states it relies on
 * (src/core/procstat.h): what a note reads like; a phase that outlives --step-timeout ends the
 * process with status 124 and one line naming the step, the rank's place in the grid and what it
 * waits for; phases that keep moving never fire; a peer process that is killed, exits or is
 * stopped is reported as such (125, "lost rank", "is stopped"); SIGINT ends with 130; an
 * abort() that has nothing to do with a lost peer stays an abort. Each watched process is a
 * forked child whose stderr the test reads; its "peers" are other children of the test. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/procstat.h"
#include "src/core/watchdog.h"
#include "testutil.h"

enum { ERR_CAP = 4096, WAIT_LIMIT_S = 30 };

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void exit_3(int sig) {
  (void)sig;
  _exit(3);
}

/* A peer process: reports its identity through a pipe, then sleeps until a signal ends it
 * (SIGUSR1: exit status 3); it is killed when its parent dies. -1 on failure. */
static pid_t spawn_peer(AxProcId *id) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGUSR1, exit_3);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDERR_FILENO);
    AxProcId me;
    ax_proc_self(&me);
    if (write(fds[1], &me, sizeof me) != (ssize_t)sizeof me) _exit(1);
    for (;;) pause();
  }
  close(fds[1]);
  if (pid < 0 || read(fds[0], id, sizeof *id) != (ssize_t)sizeof *id) pid = -1;
  close(fds[0]);
  return pid;
}

/* What a watched child runs; it may end the process itself (the watchdog) or return. */
typedef void (*Body)(void);

/* Runs body in a child, stderr captured into err; returns its wait status. */
static int run_watched(Body body, char *err) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    body();
    _exit(0);
  }
  close(fds[1]);
  int n = 0, status = 0;
  struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
  for (int waited = 0; waited < WAIT_LIMIT_S * 10; waited++) {
    if (poll(&pfd, 1, 100) > 0) {
      ssize_t got = read(fds[0], err + n, (size_t)(ERR_CAP - 1 - n));
      if (got <= 0) break;
      n += (int)got;
    }
  }
  err[n] = 0;
  close(fds[0]);
  for (int waited = 0; waitpid(pid, &status, WNOHANG) == 0; waited++) {
    if (waited == WAIT_LIMIT_S * 10) kill(pid, SIGKILL);
    sleep_ms(100);
  }
  return status;
}

/* This process as rank `rank` of a 2 x 2 grid whose rank `peer_rank` is `peer` (the other
 * ranks cannot be checked). */
static void start_limits(int timeout_ms, int setup_ms, int rank, const AxProcId *peer,
                         int peer_rank) {
  AxProcId ids[4] = {{0}};
  ax_proc_self(&ids[rank]);
  if (peer) ids[peer_rank] = *peer;
  AxWatchdogConfig c = {.timeout_ms = timeout_ms, .setup_timeout_ms = setup_ms, .rank = rank,
                        .size = 4, .layout = ax_rank_layout_plain(2), .peers = ids,
                        .signals = 1};
  if (ax_watchdog_start(&c) != AX_OK) _exit(99);
}

static void start(int timeout_ms, int rank, const AxProcId *peer, int peer_rank) {
  start_limits(timeout_ms, 0, rank, peer, peer_rank);
}

static int exit_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

/* ------------------------------------------------------------------ notes */

START_TEST(a_note_reads_as_the_report_prints_it) {
  char buf[512];
  ax_wd_phase(AX_WD_STEP, 3);
  ax_watchdog_describe(buf, sizeof buf);
  ck_assert_str_eq(buf, "no wait or computation noted yet");
  AX_WD_NOTE(2, "waiting for the activation of micro-batch %d from stage %d (rank %d)", 1, 0, 2);
  ax_watchdog_describe(buf, sizeof buf);
  ck_assert_str_eq(buf, "waiting for the activation of micro-batch 1 from stage 0 (rank 2)");
  AX_WD_NOTE(-1, "in the data-parallel gradient all-reduce of chunk %d (of %d)", 0, 2);
  ax_wd_detail("waiting for data from rank %d", 3, 3);
  ax_watchdog_describe(buf, sizeof buf);
  ck_assert_str_eq(buf, "in the data-parallel gradient all-reduce of chunk 0 (of 2), waiting "
                        "for data from rank 3");
  AX_WD_NOTE(-1, "loading a batch"); /* a new note drops the old detail */
  ax_watchdog_describe(buf, sizeof buf);
  ck_assert_str_eq(buf, "loading a batch");
  ax_wd_phase(AX_WD_VALIDATION, 3); /* so does a new phase */
  ax_watchdog_describe(buf, sizeof buf);
  ck_assert_str_eq(buf, "no wait or computation noted yet");
}
END_TEST

START_TEST(a_muted_thread_leaves_the_record_alone) {
  char buf[256];
  ax_wd_phase(AX_WD_STEP, 1);
  AX_WD_NOTE(-1, "computing the forward of micro-batch %d", 4);
  ax_wd_mute_thread();
  AX_WD_NOTE(-1, "something else");
  ax_wd_detail("waiting for rank %d", 1, 1);
  ax_wd_muted = 0;
  ax_watchdog_describe(buf, sizeof buf);
  ck_assert_str_eq(buf, "computing the forward of micro-batch 4");
}
END_TEST

/* ------------------------------------------------------------------ deadlines */

static void stuck_in_step_7(void) {
  start(300, 3, NULL, 0);
  ax_wd_phase(AX_WD_STEP, 7);
  AX_WD_NOTE(2, "waiting for the activation of micro-batch %d from stage %d (rank %d)", 0, 0, 2);
  sleep_ms(WAIT_LIMIT_S * 1000);
}

START_TEST(a_stuck_step_ends_with_124_and_one_line) {
  char err[ERR_CAP];
  int status = run_watched(stuck_in_step_7, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_TIMEOUT, "status %d; stderr:\n%s", status, err);
  ck_assert_str_eq(err, "axonn: error: step 7 exceeded --step-timeout (0.3 s) on rank 3 (stage 1, "
                        "row 1): waiting for the activation of micro-batch 0 from stage 0 (rank "
                        "2)\n");
}
END_TEST

/* The start-up is a phase like a step: a rank stuck opening its data is reported the same way. */
static void stuck_in_the_start_up(void) {
  start(300, 1, NULL, 0);
  ax_wd_phase(AX_WD_SETUP, 0);
  AX_WD_NOTE(-1, "opening the training data");
  sleep_ms(WAIT_LIMIT_S * 1000);
}

START_TEST(a_stuck_start_up_ends_with_124_and_one_line) {
  char err[ERR_CAP];
  int status = run_watched(stuck_in_the_start_up, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_TIMEOUT, "status %d; stderr:\n%s", status, err);
  ck_assert_str_eq(err, "axonn: error: the start-up (before the first step) exceeded "
                        "--step-timeout (0.3 s) on rank 1 (stage 1, row 0): opening the training "
                        "data\n");
}
END_TEST

/* --startup-timeout: the start-up's own limit, named in the line; the steps keep theirs. */
static void stuck_in_a_start_up_with_its_own_limit(void) {
  start_limits(60000, 300, 1, NULL, 0);
  ax_wd_phase(AX_WD_SETUP, 0);
  AX_WD_NOTE(-1, "opening the training data");
  sleep_ms(WAIT_LIMIT_S * 1000);
}

START_TEST(a_start_up_limit_of_its_own_fires_and_is_named) {
  char err[ERR_CAP];
  int status = run_watched(stuck_in_a_start_up_with_its_own_limit, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_TIMEOUT, "status %d; stderr:\n%s", status, err);
  ck_assert_str_eq(err, "axonn: error: the start-up (before the first step) exceeded "
                        "--startup-timeout (0.3 s) on rank 1 (stage 1, row 0): opening the "
                        "training data\n");
}
END_TEST

/* A start-up longer than the step limit, under a start-up limit that allows it, then steps
 * within theirs: nothing fires. Without the start-up limit the same start-up would (above). */
static void slow_start_up_then_quick_steps(void) {
  start_limits(300, 60000, 0, NULL, 0);
  ax_wd_phase(AX_WD_SETUP, 0);
  sleep_ms(800);
  for (int step = 1; step <= 5; step++) {
    ax_wd_phase(AX_WD_STEP, step);
    sleep_ms(50);
  }
  ax_watchdog_stop();
}

START_TEST(a_slow_start_up_within_its_own_limit_never_fires) {
  char err[ERR_CAP];
  int status = run_watched(slow_start_up_then_quick_steps, err);
  ck_assert_msg(exit_status(status) == 0 && err[0] == 0, "status %d; stderr:\n%s", status, err);
}
END_TEST

static void moving_phases(void) {
  start(300, 0, NULL, 0);
  for (int step = 1; step <= 20; step++) { /* 1 s in all, each phase well under 0.3 s */
    ax_wd_phase(step % 4 ? AX_WD_STEP : AX_WD_CHECKPOINT, step);
    sleep_ms(50);
  }
  ax_wd_phase(AX_WD_IDLE, 0); /* no deadline here */
  sleep_ms(700);
  ax_watchdog_stop();
}

START_TEST(phases_that_keep_moving_never_fire) {
  char err[ERR_CAP];
  int status = run_watched(moving_phases, err);
  ck_assert_msg(exit_status(status) == 0, "status %d; stderr:\n%s", status, err);
  ck_assert_str_eq(err, "");
}
END_TEST

static void checkpoint_waits_on_stopped_peer(void) {
  AxProcId peer;
  if (spawn_peer(&peer) < 0) _exit(98);
  start(300, 0, &peer, 1);
  kill(peer.pid, SIGSTOP);
  ax_wd_phase(AX_WD_CHECKPOINT, 12);
  AX_WD_NOTE(1, "gathering the checkpoint files' sizes and CRCs at rank 0");
  ax_wd_detail("waiting for data from rank %d", 1, 1);
  sleep_ms(WAIT_LIMIT_S * 1000);
}

START_TEST(a_timeout_names_a_stopped_peer) {
  char err[ERR_CAP];
  int status = run_watched(checkpoint_waits_on_stopped_peer, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_TIMEOUT, "status %d; stderr:\n%s", status, err);
  const char *want = "axonn: error: the checkpoint of step 12 exceeded --step-timeout (0.3 s) on "
                     "rank 0 (stage 0, row 0): gathering the checkpoint files' sizes and CRCs at "
                     "rank 0, waiting for data from rank 1; rank 1 (pid ";
  ck_assert_msg(!strncmp(err, want, strlen(want)) && strstr(err, ") is stopped\n"),
                "stderr:\n%s", err);
}
END_TEST

/* A step whose main thread keeps writing notes (a busy loop that never finishes the step): the
 * report reads one whole note, never half of two. */
static void busy_in_step_5(void) {
  start(300, 1, NULL, 0);
  ax_wd_phase(AX_WD_STEP, 5);
  for (int i = 0;; i = (i + 1) % 1000000)
    AX_WD_NOTE(-1, "computing the forward of micro-batch %d (pass %d)", i, i);
}

START_TEST(a_note_written_while_the_watchdog_reads_stays_whole) {
  char err[ERR_CAP];
  int status = run_watched(busy_in_step_5, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_TIMEOUT, "status %d; stderr:\n%s", status, err);
  /* a writer in a tight loop may keep the reader from a whole copy (how often depends on the
   * load): then the report says so; what it must never do is print half of one note with half
   * of another */
  if (strstr(err, "changed faster than they could be read")) return;
  int a = -1, b = -2;
  const char *at = strstr(err, "computing the forward of micro-batch ");
  ck_assert_msg(at && sscanf(at, "computing the forward of micro-batch %d (pass %d)", &a, &b) == 2,
                "stderr:\n%s", err);
  ck_assert_int_eq(a, b);
}
END_TEST

/* ------------------------------------------------------------------ lost ranks */

/* Rank 0 in step 2, no deadline (only the peer check can end it); its peer, rank 1, ends as
 * `finish` says once the watchdog runs. */
static void peer_ends(void (*finish)(pid_t)) {
  AxProcId peer;
  if (spawn_peer(&peer) < 0) _exit(98);
  start(0, 0, &peer, 1);
  ax_wd_phase(AX_WD_STEP, 2);
  AX_WD_NOTE(-1, "computing the backward of micro-batch %d", 5);
  finish(peer.pid);
  sleep_ms(WAIT_LIMIT_S * 1000);
}

static void kill_9(pid_t p) { kill(p, SIGKILL); } /* a zombie /proc shows as killed */
static void kill_9_and_reap(pid_t p) {
  kill(p, SIGKILL);
  waitpid(p, NULL, 0);
}
static void exit_with_3(pid_t p) { kill(p, SIGUSR1); }
static void peer_killed(void) { peer_ends(kill_9); }
static void peer_reaped(void) { peer_ends(kill_9_and_reap); }
static void peer_exited(void) { peer_ends(exit_with_3); }

START_TEST(a_killed_peer_is_a_lost_rank) {
  char err[ERR_CAP];
  int status = run_watched(peer_killed, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_LOST_RANK, "status %d; stderr:\n%s", status, err);
  ck_assert_str_eq(err, "axonn: error: lost rank 1 (stage 1, row 0): killed by signal 9 (SIGKILL); "
                        "rank 0 (stage 0, row 0) was in step 2: computing the backward of "
                        "micro-batch 5\n");
}
END_TEST

START_TEST(a_reaped_peer_is_a_lost_rank) {
  char err[ERR_CAP];
  int status = run_watched(peer_reaped, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_LOST_RANK, "status %d; stderr:\n%s", status, err);
  ck_assert_msg(strstr(err, "lost rank 1 (stage 1, row 0): its process (pid ") &&
                strstr(err, ") is gone; rank 0"), "stderr:\n%s", err);
}
END_TEST

START_TEST(a_peer_that_exits_with_a_status_is_lost_after_a_grace) {
  char err[ERR_CAP];
  int status = run_watched(peer_exited, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_LOST_RANK, "status %d; stderr:\n%s", status, err);
  ck_assert_msg(strstr(err, "lost rank 1 (stage 1, row 0): exited with status 3; rank 0"),
                "stderr:\n%s", err);
}
END_TEST

/* ------------------------------------------------------------------ signals */

static void interrupted_in_validation(void) {
  start(0, 2, NULL, 0);
  ax_wd_phase(AX_WD_VALIDATION, 100);
  AX_WD_NOTE(-1, "computing the forward of micro-batch %d", 1);
  raise(SIGINT);
  sleep_ms(WAIT_LIMIT_S * 1000);
}

START_TEST(sigint_ends_with_130_and_one_line) {
  char err[ERR_CAP];
  int status = run_watched(interrupted_in_validation, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_INTERRUPTED, "status %d; stderr:\n%s", status, err);
  ck_assert_str_eq(err, "axonn: error: rank 2 (stage 0, row 1) interrupted by SIGINT in the "
                        "validation after step 100: computing the forward of micro-batch 1\n");
}
END_TEST

static void aborts_for_its_own_reasons(void) {
  AxProcId peer;
  if (spawn_peer(&peer) < 0) _exit(98);
  start(0, 0, &peer, 1); /* the peer stays alive */
  abort();
}

START_TEST(an_abort_without_a_lost_peer_stays_an_abort) {
  char err[ERR_CAP];
  int status = run_watched(aborts_for_its_own_reasons, err);
  ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT, "status %d; stderr:\n%s",
                status, err);
  ck_assert_str_eq(err, "");
}
END_TEST

static void aborts_after_its_peer_died(void) {
  AxProcId peer;
  if (spawn_peer(&peer) < 0) _exit(98);
  start(0, 0, &peer, 1);
  ax_wd_phase(AX_WD_STEP, 9);
  kill(peer.pid, SIGKILL); /* as UCX does when the peer's memory vanishes mid-transfer */
  abort();
}

START_TEST(an_abort_after_a_peer_died_reports_the_lost_rank) {
  char err[ERR_CAP];
  int status = run_watched(aborts_after_its_peer_died, err);
  ck_assert_msg(exit_status(status) == AX_EXIT_LOST_RANK, "status %d; stderr:\n%s", status, err);
  ck_assert_msg(strstr(err, "axonn: error: lost rank 1 (stage 1, row 0): killed by signal 9"),
                "stderr:\n%s", err);
}
END_TEST

/* ------------------------------------------------------------------ /proc states */

START_TEST(proc_states_follow_a_process_through_its_life) {
  AxProcId me, peer;
  ax_proc_self(&me);
  ck_assert(me.start != 0 && me.boot_hash != 0);
  int code;
  ck_assert_int_eq(ax_proc_state(&me, &code), AX_PROC_RUNNING);
  pid_t p = spawn_peer(&peer);
  ck_assert_int_gt(p, 0);
  ck_assert(ax_proc_checkable(&peer, &me));
  AxProcId elsewhere = peer, recycled = peer;
  elsewhere.boot_hash ^= 1; /* another machine */
  ck_assert(!ax_proc_checkable(&elsewhere, &me));
  recycled.start += 1; /* the same pid, another process */
  ck_assert_int_eq(ax_proc_state(&recycled, &code), AX_PROC_GONE);
  kill(p, SIGSTOP);
  waitpid(p, NULL, WUNTRACED);
  ck_assert_int_eq(ax_proc_state(&peer, &code), AX_PROC_STOPPED);
  kill(p, SIGKILL);
  siginfo_t info;
  waitid(P_PID, (id_t)p, &info, WEXITED | WNOWAIT); /* a zombie, not reaped */
  ck_assert_int_eq(ax_proc_state(&peer, &code), AX_PROC_KILLED);
  ck_assert_int_eq(code, SIGKILL);
  waitpid(p, NULL, 0);
  ck_assert_int_eq(ax_proc_state(&peer, &code), AX_PROC_GONE);
  ck_assert(!ax_proc_checkable(&peer, &me));
  ck_assert_str_eq(ax_proc_state_name(AX_PROC_STOPPED), "stopped");
}
END_TEST

START_TEST(an_exit_status_is_read_from_the_zombie) {
  AxProcId peer;
  pid_t p = spawn_peer(&peer);
  ck_assert_int_gt(p, 0);
  kill(p, SIGUSR1);
  siginfo_t info;
  waitid(P_PID, (id_t)p, &info, WEXITED | WNOWAIT);
  int code;
  ck_assert_int_eq(ax_proc_state(&peer, &code), AX_PROC_EXITED);
  ck_assert_int_eq(code, 3);
  waitpid(p, NULL, 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("watchdog");
  TCase *tc = tu_tcase(s, "watchdog", 120);
  tcase_add_test(tc, a_note_reads_as_the_report_prints_it);
  tcase_add_test(tc, a_muted_thread_leaves_the_record_alone);
  tcase_add_test(tc, a_stuck_step_ends_with_124_and_one_line);
  tcase_add_test(tc, a_stuck_start_up_ends_with_124_and_one_line);
  tcase_add_test(tc, a_start_up_limit_of_its_own_fires_and_is_named);
  tcase_add_test(tc, a_slow_start_up_within_its_own_limit_never_fires);
  tcase_add_test(tc, phases_that_keep_moving_never_fire);
  tcase_add_test(tc, a_note_written_while_the_watchdog_reads_stays_whole);
  tcase_add_test(tc, sigint_ends_with_130_and_one_line);
  /* peers read through /proc/PID/stat, and aborts: scripts/check-cross.sh leaves this case
   * out under qemu-user, which reports a forked process's start time in /proc/self/stat
   * otherwise than the host's /proc/PID/stat (no peer is checkable there) and prints a line
   * of its own when a guest aborts */
  TCase *peers = tu_tcase(s, "peers", 120);
  tcase_add_test(peers, a_timeout_names_a_stopped_peer);
  tcase_add_test(peers, a_killed_peer_is_a_lost_rank);
  tcase_add_test(peers, a_reaped_peer_is_a_lost_rank);
  tcase_add_test(peers, a_peer_that_exits_with_a_status_is_lost_after_a_grace);
  tcase_add_test(peers, an_abort_without_a_lost_peer_stays_an_abort);
  tcase_add_test(peers, an_abort_after_a_peer_died_reports_the_lost_rank);
  tcase_add_test(peers, proc_states_follow_a_process_through_its_life);
  tcase_add_test(peers, an_exit_status_is_read_from_the_zombie);
  return tu_run(s);
}
