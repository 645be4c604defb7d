/* train.c — `axonn train`: parse and check options, build the trainer, run the step loop with
 * its progress lines and metrics CSV, save the model. */
#include <math.h>
#include <string.h>

#include "commands.h"
#include "error.h"
#include "log.h"
#include "metrics.h"
#include "trainer.h"

static int run(AxTrainer *t, const AxTrainConfig *cfg) {
  AxMetrics m;
  AX_TRY(ax_metrics_open(&m, cfg->metrics, cfg->quiet, cfg->steps,
                         (long long)cfg->batch * cfg->seq, ax_trainer_flops_per_step(t)));
  int rc = AX_OK;
  for (int step = 1; step <= cfg->steps && rc == AX_OK; step++) {
    AxStepRecord rec;
    rc = ax_trainer_step(t, step, &rec);
    if (rc == AX_OK) rc = ax_trainer_validate_if_due(t, step, &rec);
    if (rc == AX_OK) ax_metrics_step(&m, &rec);
  }
  ax_metrics_close(&m);
  AX_TRY(rc);
  if (m.n) {
    double sec = m.sum_ms / m.n / 1e3;
    ax_log_result("done: %d steps, final loss %.6f, mean step %.2f ms (%.0f tok/s, %.4f TFLOP/s)", m.n,
           m.last_loss, sec * 1e3, m.tokens_per_step / sec, m.flops_per_step / sec / 1e12);
  }
  return cfg->save ? ax_trainer_save(t, cfg->save) : AX_OK;
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
  ax_log_set_quiet(cfg.quiet);
  if (rc == AX_OK) rc = ax_train_config_check(&cfg, &opts);
  if (rc == AX_OK && (cfg.g_inter != 1 || cfg.g_data != 1))
    rc = AX_FAIL("--g-inter/--g-data other than 1 need the parallel grid (not in this build)");
  AxTrainer *t = NULL;
  if (rc == AX_OK) rc = ax_trainer_create(&t, &cfg);
  if (rc == AX_OK) {
    ax_trainer_print_header(t);
    rc = run(t, &cfg);
  }
  if (rc != AX_OK) ax_print_error();
  ax_trainer_destroy(t);
  ax_train_config_free(&cfg);
  return rc == AX_OK ? 0 : 1;
}
