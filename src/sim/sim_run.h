/* sim_run.h — `axonn simulate`: one step of a run simulated on a machine (sim_costs.h,
 * src/sim/sim_engine.h), reported as a real run reports itself: the summary line and JSON
 * (marked "simulated": true, with a "simulation" object: per-rank idle fraction, bubble, the
 * phases), --summary FILE, --metrics CSV rows and --trace FILE in the format of a real
 * --trace, so a prediction and a measurement compare field by field and open side by side. */
#ifndef AX_SIM_RUN_H
#define AX_SIM_RUN_H

#include "src/plan/machine.h"
#include "sim_profile.h"
#include "src/train/train_config.h"

/* prof NULL: compute priced from the machine's device. A run the simulator does not model
 * (tensor parallelism, --compress, --compress-backprop) is refused with one error. */
int ax_sim_simulate(const AxTrainConfig *cfg, const AxMachine *m, const AxSimProfile *prof);

#endif
