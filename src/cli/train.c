/* train.c — `axonn train`: MPI start-up, options, the step loop with its progress lines and
 * metrics CSV (rank 0), the end-of-run summary (src/report/summary.h), the saved model and trace.
 *
 * Failure policy: problems found while setting up (options, files, grid) are agreed on by all
 * ranks and printed once, by rank 0, with the failing rank named; every rank exits 1. A failure
 * inside a step (other ranks may be waiting on this one) is printed by the failing rank, which
 * then aborts the whole job, so nothing ever hangs; a rank that is stuck, or whose peer on this
 * node is gone, is ended by the watchdog (src/core/watchdog.h, wired in train_watchdog.c), which
 * starts before the trainer is created: a rank stuck in the start-up is ended the same way. */
#include <math.h>
#include <signal.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "src/core/error.h"
#include "src/core/launcher.h"
#include "src/core/log.h"
#include "src/core/watchdog.h"
#include "src/report/metrics.h"
#include "src/train/train_plan.h"
#include "src/report/summary.h"
#include "src/train/train_watchdog.h"
#include "src/train/trainer.h"

static void print_failure(void) {
  if (ax_rank() <= 0) ax_print_error();
}

/* Never returns when other ranks may be blocked on this one. A single rank returns and its
 * caller prints the error (once). */
static void abort_job(const AxTrainer *t) {
  if (ax_trainer_grid(t)->size <= 1) return;
  ax_watchdog_check_lost(); /* a peer of this node is gone: "lost rank", exit 125 */
  ax_print_error();
  /* The launcher forwards our stderr through a pipe; give it a moment to pass the message on
   * before the abort tears the job down (under load it can otherwise be lost). */
  fflush(NULL);
  nanosleep(&(struct timespec){.tv_nsec = 200 * 1000 * 1000}, NULL);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Every file rank 0 writes at the end can be written: checked before any time is spent, so a
 * long run is not lost at its end (--checkpoint-dir is checked by the trainer's setup). */
static int check_outputs(const AxTrainConfig *cfg, const AxTrainer *t) {
  int rc = ax_trainer_grid(t)->rank == 0 ? ax_train_check_outputs(cfg) : AX_OK;
  return ax_grid_agree(ax_trainer_grid(t), rc);
}

/* The metrics files (rank 0); a resumed run (resume_step >= 0) appends to them. */
static int open_outputs(AxMetrics *m, const AxTrainConfig *cfg, const AxTrainer *t,
                        int resume_step) {
  int rank0 = ax_trainer_grid(t)->rank == 0;
  AxMetricsFiles files = {cfg->output.metrics, cfg->output.metrics_jsonl, cfg->output.tensorboard,
                          resume_step};
  memset(m, 0, sizeof *m);
  int rc = ax_metrics_open(m, rank0 ? &files : NULL, cfg->output.quiet, cfg->optim.steps,
                         (long long)cfg->data.batch * cfg->model.seq, ax_trainer_flops_per_step(t));
  if (rc == AX_OK) ax_metrics_timing_window(m, cfg->output.timing_skip, cfg->output.timing_steps);
  if (rc == AX_OK) ax_metrics_log_every(m, cfg->output.log_every);
  rc = ax_grid_agree(ax_trainer_grid(t), rc);
  if (rc != AX_OK) ax_metrics_discard(m);
  return rc;
}

/* The summary comes before the save, so that its memory marks are those of training; the
 * model is saved even when the summary could not be written. With --quiet and no --summary
 * nobody reads it, so it is not made: on a CPU its peak alone is GEMMs on every rank (0.8 s
 * of a 1.8 s 4-rank run of a small model). */
static int finish(AxTrainer *t, const AxTrainConfig *cfg, const AxMetrics *m) {
  ax_wd_phase(AX_WD_FINAL, cfg->optim.steps);
  AX_WD_NOTE(-1, "writing the run summary");
  AX_TRY(ax_trainer_compare_data_replicas(t));
  int read = !cfg->output.quiet || cfg->output.summary;
  int rc = read ? ax_summary_finish(t, cfg, m) : AX_OK;
  if (cfg->output.save && ax_trainer_save(t, cfg->output.save) != AX_OK) rc = AX_ERR;
  AX_TRY(rc);
  return ax_trainer_finish(t);
}

/* SIGTERM / SIGUSR1 (what batch systems send before the time limit) with --checkpoint-dir:
 * finish the step, checkpoint, exit 0. */
static volatile sig_atomic_t stop_requested;
static void on_stop_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void install_stop_handlers(const AxTrainConfig *cfg) {
  if (!cfg->ckpt.checkpoint_dir) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
}

/* After a step: checkpoint when due or when any rank was asked to stop (*stop is agreed). The
 * step's memory checkpoint has started in the step (ax_trainer_step). */
static int after_step(AxTrainer *t, const AxTrainConfig *cfg, int step, int *stop) {
  *stop = 0;
  if (!cfg->ckpt.checkpoint_dir) return AX_OK;
  AX_TRY(ax_trainer_agree_flag(t, stop_requested, stop));
  int due = cfg->ckpt.checkpoint_every && step % cfg->ckpt.checkpoint_every == 0;
  if (due || *stop) AX_TRY(ax_trainer_checkpoint(t, step));
  if (*stop) ax_log_result("stop requested (SIGTERM/SIGUSR1): checkpoint of step %d written; "
                           "exiting", step);
  return AX_OK;
}

/* The outputs checked, the weights in place (a resumed run reads its checkpoint here, so that
 * the header can say where they came from), the header printed; *first is the first step. */
static int start(AxTrainer *t, const AxTrainConfig *cfg, int *first) {
  *first = 1;
  AX_TRY(check_outputs(cfg, t));
  if (cfg->ckpt.resume) {
    int done;
    AX_TRY(ax_trainer_resume(t, &done));
    *first = done + 1;
  }
  AX_WD_NOTE(-1, "printing the run's header and opening its outputs");
  ax_trainer_print_header(t);
  return AX_OK;
}

static int run(AxTrainer *t, const AxTrainConfig *cfg) {
  AxMetrics m;
  int first, stop = 0;
  AX_TRY(start(t, cfg, &first));
  AX_TRY(open_outputs(&m, cfg, t, cfg->ckpt.resume ? first - 1 : -1));
  install_stop_handlers(cfg);
  for (int step = first; step <= cfg->optim.steps && !stop; step++) {
    AxStepRecord rec;
    int rc = ax_trainer_step(t, step, &rec);
    if (rc == AX_OK) rc = ax_trainer_validate_if_due(t, step, &rec);
    if (rc == AX_OK) rc = ax_metrics_step(&m, &rec); /* rank 0 writes the CSV */
    if (rc == AX_OK) rc = after_step(t, cfg, step, &stop);
    if (rc != AX_OK) {
      ax_metrics_discard(&m);
      ax_trainer_memckpt_abandon(t);
      abort_job(t);
      return AX_ERR;
    }
  }
  AX_TRY(ax_grid_agree(ax_trainer_grid(t), ax_metrics_close(&m)));
  AX_TRY(ax_trainer_memckpt_close(t));
  if (m.n) {
    double sec = m.sum_ms / m.n / 1e3;
    ax_log_result("done: %d steps, final loss %.6f, mean step %.2f ms (%.0f tok/s, %.4f "
                  "TFLOP/s)", m.n, m.last_loss, sec * 1e3, m.tokens_per_step / sec,
                  m.flops_per_step / sec / 1e12);
  }
  return finish(t, cfg, &m);
}

int ax_cli_start_mpi(int *argc, char ***argv) {
  int provided, rank;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return AX_FAIL("MPI_Init failed");
  ax_train_mpi_errors_return();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ax_set_rank(rank);
  return AX_OK;
}

int ax_cmd_train(int argc, char **argv) {
  AxTrainConfig cfg;
  AxOptState opts;
  int rc = ax_train_config_parse(&cfg, argc, argv, &opts);
  if (rc == AX_OK && opts.help) {
    ax_options_print_help(&AX_TRAIN_OPTIONS, stdout);
    ax_train_config_free(&cfg);
    return 0;
  }
  if (rc == AX_OK && cfg.output.dry_run) { /* the memory plan: nothing allocated, no MPI needed */
    rc = ax_train_config_check(&cfg, &opts);
    if (rc == AX_OK) rc = ax_plan_print(&cfg);
    if (rc != AX_OK) ax_print_error();
    ax_train_config_free(&cfg);
    return rc == AX_OK ? 0 : 1;
  }
  if (rc != AX_OK && ax_launcher_rank() < 0) { /* alone, so no other rank to tell: say it now */
    ax_print_error_once();
    ax_train_config_free(&cfg);
    return 1;
  }
  if (ax_cli_start_mpi(&argc, &argv) != AX_OK) {
    ax_print_error();
    return 1;
  }
  ax_log_set_quiet(cfg.output.quiet);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  if (rc == AX_OK) rc = ax_train_grid_from_world(&cfg, &opts, world);
  if (rc == AX_OK) rc = ax_train_config_check(&cfg, &opts);
  AxTrainer *t = NULL;
  /* before the trainer: --step-timeout covers the start-up as one phase */
  if (rc == AX_OK) rc = ax_train_watchdog_start(&cfg);
  if (rc == AX_OK) rc = ax_trainer_create(&t, &cfg);
  if (rc == AX_OK) rc = run(t, &cfg);
  if (rc != AX_OK) print_failure();
  ax_train_watchdog_stop();
  ax_trainer_destroy(t);
  ax_train_config_free(&cfg);
  MPI_Finalize();
  return rc == AX_OK ? 0 : 1;
}
