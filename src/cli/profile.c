/* profile.c — `axonn profile`: measures on this machine what `axonn simulate --profile` prices
 * a run with (src/sim/sim_profile.h): a block's forward and backward at the run's micro-batch,
 * the embedding's and head's extra, the host AdamW, a local sum and a copy, in one process; run
 * on several ranks (`mpiexec -n 2 axonn profile ...`), also the all-reduce between them as the
 * trainer runs it. Takes the options of `axonn train` (the model, micro-batch, device, threads)
 * and --out FILE. */
#include <mpi.h>
#include <stdio.h>

#include "commands.h"
#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/launcher.h"
#include "src/core/log.h"
#include "src/sim/sim_profile.h"
#include "src/train/train_config.h"

/* Under a launcher: every rank starts MPI once the launcher's rank 0 has measured its compute
 * alone (the other ranks wait in MPI_Init, which sleeps until every rank has come), all agree
 * on how that went (`measured` is rank 0's status) and time the all-reduce between them. */
static int between_ranks(const AxTrainConfig *cfg, AxSimProfile *p, int measured) {
  AX_TRY(ax_cli_start_mpi(NULL, NULL));
  int rc = ax_mpi_agree(MPI_COMM_WORLD, measured);
  if (rc == AX_OK) rc = ax_mpi_agree(MPI_COMM_WORLD,
                                     ax_sim_profile_measure_allreduce(MPI_COMM_WORLD, cfg, p));
  MPI_Finalize();
  return rc;
}

static int profile(int argc, char **argv, int *help) {
  const char *out = NULL;
  AX_TRY(ax_options_take(&argc, argv, "out", &out));
  AxTrainConfig cfg;
  AxOptState st;
  AxSimProfile p = {0};
  int rc = ax_train_config_parse(&cfg, argc, argv, &st);
  *help = rc == AX_OK && st.help;
  if (rc == AX_OK && !*help) rc = ax_train_config_check(&cfg, &st);
  if (rc == AX_OK && !*help && !out) rc = AX_FAIL("profile needs --out FILE");
  /* the command line is every rank's: where it is wrong, no rank starts MPI */
  int run = rc == AX_OK && !*help, launched = ax_launcher_rank(); /* -1: started alone */
  if (run && launched <= 0) rc = ax_sim_profile_measure(&cfg, &p);
  if (run && launched >= 0) rc = between_ranks(&cfg, &p, rc);
  if (rc == AX_OK && run && launched <= 0) rc = ax_sim_profile_save(&p, out);
  if (rc == AX_OK && run && launched <= 0 && p.allreduce_ranks)
    ax_log_result("profile: the all-reduce on %d ranks %.3g us + bytes / %.3g GB/s",
                  p.allreduce_ranks, p.allreduce_latency_s * 1e6, p.allreduce_bytes_per_s / 1e9);
  if (rc == AX_OK && run && launched <= 0)
    ax_log_result("profile: block forward %.4g ms, backward %.4g ms (in a stage of %d); "
                  "embedding +%.4g/+%.4g ms, "
                  "head and loss +%.4g/+%.4g ms (micro-batch %d x %d, %d thread(s)%s); AdamW %.3g "
                  "ns, norm %.3g ns, sum %.3g ns a parameter; copy %.3g GB/s; gradients down "
                  "%.3g ns, weights up %.3g ns, zeroed %.3g ns a parameter -> %s",
                  p.block_forward_s * 1e3, p.block_backward_s * 1e3, p.stage_blocks,
                  p.first_forward_s * 1e3,
                  p.first_backward_s * 1e3, p.last_forward_s * 1e3, p.last_backward_s * 1e3,
                  p.micro_batch, p.seq, p.threads,
                  p.dropout > 0 || p.attention_dropout > 0 ? ", dropout drawn" : "",
                  p.adamw_s_per_elem * 1e9,
                  p.norm_s_per_elem * 1e9, p.reduce_s_per_elem * 1e9, p.copy_bytes_per_s / 1e9,
                  p.download_s_per_elem * 1e9, p.upload_s_per_elem * 1e9,
                  p.zero_s_per_elem * 1e9, out);
  ax_sim_profile_free(&p);
  ax_train_config_free(&cfg);
  return rc;
}

int ax_cmd_profile(int argc, char **argv) {
  int help = 0;
  if (profile(argc, argv, &help) != AX_OK) {
    ax_print_error_once(); /* launcher rank 0's: a failing rank's message reaches it */
    return 1;
  }
  if (help) {
    printf("axonn profile: measure on this machine the compute and host costs that `axonn "
           "simulate --profile FILE` prices a run with (docs/simulator.md).\n\n"
           "  --out FILE  where to write the profile (key = value lines)\n\n"
           "Run on several ranks (mpiexec -n 2 axonn profile ...), it also times the all-reduce "
           "between them as the trainer runs it (--allreduce); rank 0 measures the rest alone "
           "and writes the file.\n\n"
           "and the options of `axonn train` (the model, --micro-batch, --device, --threads, "
           "--precision):\n\n");
    ax_options_print_help(&AX_TRAIN_OPTIONS, stdout);
  }
  return 0;
}
