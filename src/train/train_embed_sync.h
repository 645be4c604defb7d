/* train_embed_sync.h — how a run summed the first stage's row-sparse wte gradient over its
 * data-parallel ranks (src/train/trainer_embed_sync.c), for the summary's embedding_sync
 * object (docs/summary.md): rank 0's column (the first stage, row 0), its first step. */
#ifndef AX_TRAIN_EMBED_SYNC_H
#define AX_TRAIN_EMBED_SYNC_H

#include "src/plan/sparse_cost.h"

typedef struct {
  int on;                 /* 0: no sparse embedding sync in this run (written as null) */
  const char *algo;       /* what the first step ran: "zen", "allgather", "dense" */
  const char *owners;     /* Zen's owners: "balanced", "hash" */
  int levels;             /* Zen: 2 in two levels (sparse_hier.h), else 1 */
  int nodes, per_node;    /* the data-parallel ranks' nodes and ranks to a node (1: uneven) */
  const char *decided_by; /* "--sparse-embedding-sync", "auto: cost model over the emulated
                             link", "auto: bytes alone (no link to price)" */
  int predicted;          /* auto: cost holds the first step's predictions */
  int priced;             /* their seconds are the link's (0: bytes alone, seconds meaningless) */
  AxSparseCostOut cost;
  unsigned long long rows_first; /* rows rank 0 touched in the first step */
} AxEmbedSyncReport;

#endif
