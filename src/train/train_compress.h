/* train_compress.h — the decision of selective compression for one all-reduce chunk and how
 * a decision table is printed, shared by the trainer (train_compress.c) and `axonn plan`
 * (plan_compress.c), so the plan shows exactly what a run would decide from the same costs. */
#ifndef AX_TRAIN_COMPRESS_H
#define AX_TRAIN_COMPRESS_H

#include <stddef.h>

#include "mpi/casync_cost.h"
#include "train_config.h"

/* How chunks are chosen: the cost model (*is_auto) or a size threshold (--compress-min-bytes). */
int ax_compress_policy(const AxTrainConfig *cfg, const AxCodec *codec, int *is_auto,
                       long long *min_bytes);
/* A chunk of `count` floats on `ranks` data-parallel ranks: the cost model (is_auto; c's
 * ratio is set for this size), or compress when it is at least min_bytes (K = ranks). */
AxCasyncChoice ax_compress_decide(const AxCodec *codec, AxCasyncCosts *c, AxCasyncAlgo algo,
                                  int ranks, int is_auto, long long min_bytes, size_t count);
void ax_compress_print_costs(const AxCasyncCosts *k, const char *send_source);
void ax_compress_print_choice(const char *what, size_t bytes, const AxCasyncChoice *ch,
                              int is_auto);

/* plan_compress.c: the decision table of every stage for cfg (`axonn plan`), from this
 * machine's profiled codec costs and --emulate-link (or an assumed link, said so). */
int ax_plan_print_compress(const AxTrainConfig *cfg, const size_t *stage_params, int stages);

#endif
