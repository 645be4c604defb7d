/* sim_costs.h — the cost model of `axonn simulate`: turns a run's options (the train option
 * table), a machine (machine.h) and either a profile measured here (sim_profile.h) or the
 * machine's device (peak FLOP/s x efficiency) into the seconds the simulator (pipeline/
 * sim_engine.h) takes, and runs it.
 *
 *   compute  per stage: its blocks' forward and backward (+ the recomputed forward with
 *            activation checkpointing), the embedding on the first stage, the LM head and loss
 *            on the last; from the profile, or FLOPs (ax_gpt_train_flops: a block's share and the
 *            head's) / (peak x efficiency); --debug-forward-ms/--debug-backward-ms/
 *            --debug-delay-* added as the trainer sleeps them
 *   network  alpha-beta: ranks on nodes as the trainer places them (rank = row x G_inter +
 *            stage; node = rank / --ranks-per-node, else the machine's gpus_per_node); within a
 *            node intra_bw and no latency, across inter_bw and the latency; --emulate-link
 *            replaces the inter-node link, as it does in a run
 *   sums     the column's ring all-reduce of each chunk (k x bucket elements) in closed form:
 *            2 (D-1) (alpha + bytes / (D beta)) + the local sums; the tied embedding's over 2
 *   AdamW    per element from the profile, or 28 bytes per parameter over host_bw (weights,
 *            gradient, moments in and out) and 4 for the norm; on a GPU the gradients down
 *            and the weights up as fp32 over host_link_bw (the profile: measured), each
 *            chunk's upload behind the next chunk's AdamW, the last one's excess charged
 *   sharing  ranks computing at once on one host (a CPU machine) slow each other down: the
 *            profile's measured speeds, or cores_per_node shared; rows run in step. With
 *            cores_per_node, ranks are pinned (or not) by the trainer's binding rule
 *            (src/backend/binding_rule.h) and pinned ranks share only their own core; on an
 *            oversubscribed host (not pinned) waiting ranks, which poll, share it too, and
 *            a message waits for its receiver to be scheduled (a latency on every link)
 *
 * What is not simulated: tensor parallelism, compression, memory checkpoints, validation,
 * file checkpoints, loss scaling's overflow check, the CUDA streams' overlap. */
#ifndef AX_SIM_COSTS_H
#define AX_SIM_COSTS_H

#include "src/plan/machine.h"
#include "models/gpt_config.h"
#include "sim_engine.h"
#include "sim_profile.h"
#include "src/train/train_config.h"

typedef struct {
  AxSimConfig sim;
  /* what sim points to */
  double *fwd, *bwd, *send, *chunk_costs;
  int *core; /* [P]: row 0's cores when the trainer would pin its ranks; else NULL */
  double waiter_weight; /* the host's cores oversubscribed: a waiting rank's share (sim_engine.h) */
  double handoff_s;     /* the host's cores oversubscribed: a message's wait for its receiver to
                         * be scheduled, added to every link's latency */
  AxSimLink *link;
  AxSimTail *tail;
  double speed[AX_SIM_PROFILE_MAX_K];
  int n_speed;
  double waiting[AX_SIM_PROFILE_MAX_K]; /* the profile's waiting_speed */
  int n_waiting;
  const double *sim_waiting; /* waiting, where it describes the host (sim_engine.h); else NULL */
  /* the run */
  AxGptConfig model;
  int P, D, ranks, n_micro, micro, limit, recompute;
  int ranks_per_node;
  double peak_tflops_per_rank; /* NAN when unknown */
  char peak_source[192];
  char costs[384];   /* where compute costs came from, and how a host's ranks share it */
  char network[320]; /* the links */
} AxSimModel;

/* Builds the model of one step of cfg on machine m; prof NULL: priced from m's device. */
int ax_sim_model_build(AxSimModel *sm, const AxTrainConfig *cfg, const AxMachine *m,
                       const AxSimProfile *prof);
void ax_sim_model_free(AxSimModel *sm);

#endif
