/* train_timeline.c — the stage's backward timeline that --compress auto hands to Espresso
 * under --dp-sync-early: when each tensor's gradient is final in a backward, from its start,
 * measured on this rank's own stage before the first step (a probe of its forward and backward
 * of one micro-batch on zeros, the fastest of three, then the slowest rank of the
 * data-parallel column, so the column decides alike), and which block's backward makes a
 * tensor final (the early sum's rule too, train_early_sync.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "trainer_impl.h"

int ax_trainer_final_after(const AxTrainer *t, const AxTensorRange *r) {
  return r->layer >= 0 ? r->layer - t->spec.l0 : -1;
}

/* One forward and backward of micro-batch slot 0 on zeros (nothing sent): the stage records
 * its backward's timeline; the gradients are zeroed after. */
static int probe_once(AxTrainer *t, const void *zeros) {
  const int32_t *tokens = zeros;
  AX_TRY(ax_stage_forward(t->stage, 0, t->spec.first ? tokens : NULL, t->spec.first ? NULL : zeros,
                          AX_MEM_HOST));
  double mean;
  if (t->spec.last) AX_TRY(ax_stage_loss_backward(t->stage, 0, tokens, 1e-6f, &mean));
  else AX_TRY(ax_stage_backward(t->stage, 0, zeros, AX_MEM_HOST));
  AX_TRY(ax_sync(t->be));
  return ax_stage_zero_grads(t->stage);
}

/* done[blocks] and *total: the fastest of three probes, then the slowest rank's of the
 * column. */
static int probe_timeline(AxTrainer *t, double *done, int blocks, double *total) {
  enum { PROBES = 3 };
  size_t bytes = ax_stage_message_bytes(t->stage);
  size_t tok = (size_t)t->micro * (size_t)t->cfg.model.seq * sizeof(int32_t);
  void *zeros = ax_calloc(bytes > tok ? bytes : tok, 1);
  if (!zeros) return AX_ERR;
  int rc = AX_OK;
  *total = INFINITY;
  for (int k = 0; k < PROBES && rc == AX_OK; k++) {
    const double *d;
    double tot;
    if ((rc = probe_once(t, zeros)) != AX_OK) break;
    ax_stage_backward_timeline(t->stage, &d, &tot);
    if (tot < *total) *total = tot, memcpy(done, d, (size_t)blocks * sizeof *done);
  }
  free(zeros);
  AX_TRY(rc);
  done[blocks] = *total;
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, done, blocks + 1, MPI_DOUBLE, MPI_MAX, t->grid.data));
  *total = done[blocks];
  return AX_OK;
}

int ax_trainer_backward_timeline(AxTrainer *t, const AxTensorRange *tr, int n, double *ready,
                                 double *total) {
  int blocks = t->spec.l1 - t->spec.l0;
  double *done = ax_calloc((size_t)blocks + 1, sizeof *done);
  if (!done) return AX_ERR;
  int rc = probe_timeline(t, done, blocks, total);
  for (int i = 0; i < n && rc == AX_OK; i++) {
    int b = ax_trainer_final_after(t, &tr[i]);
    ready[i] = b >= 0 ? done[b] : *total;
  }
  free(done);
  return rc;
}
