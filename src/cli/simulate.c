/* simulate.c — `axonn simulate`: the run that `axonn train` with the same options would make,
 * simulated on a machine (src/sim/sim_run.h) and reported as a run reports itself (summary
 * marked simulated, --summary, --metrics, --trace). Its own options, --machine and --profile,
 * are taken out of argv (without --machine, the host a --profile measured is the machine); the
 * rest are train's, parsed and checked by train's own code. One process, no MPI. */
#include <stdio.h>

#include "commands.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/plan/machine.h"
#include "src/sim/sim_profile.h"
#include "src/sim/sim_run.h"
#include "src/train/train_config.h"

static void usage(void) {
  printf("axonn simulate: predict a training run without running it: a discrete-event "
         "simulation of one step of the message-driven schedule on every rank (docs/"
         "simulator.md), reported as `axonn train` reports a run.\n\n"
         "  --machine NAME|FILE  the cluster: %s, or a machine file (data/machines/, "
         "src/plan/machine.h); default with --profile: the host profiled (one node, its "
         "cores, links at half the profile's copy bandwidth)\n"
         "  --profile FILE       compute costs measured by `axonn profile` (default: the "
         "machine's device, peak x efficiency)\n\n"
         "and the options of `axonn train` (the model, grid, batch, and --summary, --trace, "
         "--metrics, --steps, --timing-*):\n\n", ax_machine_names());
  ax_options_print_help(&AX_TRAIN_OPTIONS, stdout);
}

static int simulate(int argc, char **argv, int *help) {
  const char *machine = NULL, *profile = NULL;
  AX_TRY(ax_options_take(&argc, argv, "machine", &machine));
  AX_TRY(ax_options_take(&argc, argv, "profile", &profile));
  AxTrainConfig cfg;
  AxOptState st;
  int rc = ax_train_config_parse(&cfg, argc, argv, &st);
  *help = rc == AX_OK && st.help;
  if (rc == AX_OK && !*help) rc = ax_train_config_check(&cfg, &st);
  if (rc == AX_OK && !*help && !machine && !profile)
    rc = AX_FAIL("simulate needs --machine NAME|FILE (%s, or a machine file) or --profile FILE "
                 "(the host it measured)", ax_machine_names());
  AxMachine m;
  AxSimProfile prof = {0};
  if (rc == AX_OK && !*help && machine) rc = ax_machine_resolve(machine, &m);
  if (rc == AX_OK && !*help && profile) rc = ax_sim_profile_load(profile, &prof);
  if (rc == AX_OK && !*help && !machine) ax_sim_profile_machine(&prof, (int)ax_train_ranks(&cfg), &m);
  if (rc == AX_OK && !*help) rc = ax_train_check_outputs(&cfg);
  if (rc == AX_OK && !*help) rc = ax_sim_simulate(&cfg, &m, profile ? &prof : NULL);
  ax_sim_profile_free(&prof);
  ax_train_config_free(&cfg);
  return rc;
}

int ax_cmd_simulate(int argc, char **argv) {
  int help = 0;
  if (simulate(argc, argv, &help) != AX_OK) {
    ax_print_error();
    return 1;
  }
  if (help) usage();
  return 0;
}
