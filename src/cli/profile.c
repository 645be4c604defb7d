/* profile.c — `axonn profile`: measures on this machine what `axonn simulate --profile` prices
 * a run with (src/sim/sim_profile.h): a block's forward and backward at the run's micro-batch,
 * the embedding's and head's extra, the host AdamW, a local sum and a copy. Takes the options of
 * `axonn train` (the model, micro-batch, device, threads) and --out FILE. One process. */
#include <stdio.h>

#include "commands.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/sim/sim_profile.h"
#include "src/train/train_config.h"

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
  if (rc == AX_OK && !*help) rc = ax_sim_profile_measure(&cfg, &p);
  if (rc == AX_OK && !*help) rc = ax_sim_profile_save(&p, out);
  if (rc == AX_OK && !*help)
    ax_log_result("profile: block forward %.4g ms, backward %.4g ms (in a stage of %d); "
                  "embedding +%.4g/+%.4g ms, "
                  "head and loss +%.4g/+%.4g ms (micro-batch %d x %d, %d thread(s)); AdamW %.3g "
                  "ns, norm %.3g ns, sum %.3g ns a parameter; copy %.3g GB/s; gradients down "
                  "%.3g ns, weights up %.3g ns, zeroed %.3g ns a parameter -> %s",
                  p.block_forward_s * 1e3, p.block_backward_s * 1e3, p.stage_blocks,
                  p.first_forward_s * 1e3,
                  p.first_backward_s * 1e3, p.last_forward_s * 1e3, p.last_backward_s * 1e3,
                  p.micro_batch, p.seq, p.threads, p.adamw_s_per_elem * 1e9,
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
    ax_print_error();
    return 1;
  }
  if (help) {
    printf("axonn profile: measure on this machine the compute and host costs that `axonn "
           "simulate --profile FILE` prices a run with (docs/simulator.md).\n\n"
           "  --out FILE  where to write the profile (key = value lines)\n\n"
           "and the options of `axonn train` (the model, --micro-batch, --device, --threads, "
           "--precision):\n\n");
    ax_options_print_help(&AX_TRAIN_OPTIONS, stdout);
  }
  return 0;
}
