/* trainer_ckpt.c — the trainer's checkpoints: writing one (every row-0 rank its stage's
 * tensors, rank 0 the manifest last), resuming from the newest complete one on any grid, and
 * the agreement on a stop request (SIGTERM/SIGUSR1) that ends a run at a step boundary. The
 * file format is src/io/checkpoint.h's; every rank's codec state files are in the manifest.
 * Writing and loading each start a watchdog phase. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi/mpi_util.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/core/timer.h"
#include "src/core/watchdog.h"
#include "src/io/checkpoint.h"
#include "src/io/ckpt_blob.h"
#include "trainer_impl.h"

static int multi(const AxTrainer *t) { return t->have_grid && t->grid.size > 1; }

int ax_trainer_agree_flag(AxTrainer *t, int local, int *any) {
  *any = local;
  AX_WD_NOTE(-1, "in the all-reduce of a flag over all ranks (the stop request on "
                 "SIGTERM/SIGUSR1, or a resume's agreement on what the checkpoint holds)");
  if (multi(t)) AX_MPI(MPI_Allreduce(&local, any, 1, MPI_INT, MPI_MAX, t->grid.world));
  return AX_OK;
}

/* The ranks that write checkpoints: the stages of row 0 (their tensor-parallel rank 0, which
 * gathers the stage whole: checkpoints hold whole tensors, whatever the grid). */
static int writes_checkpoints(const AxTrainer *t) {
  return t->grid.row == 0 && ax_grid_tp_index(&t->grid) == 0;
}

int ax_trainer_setup_checkpoints(AxTrainer *t) {
  const char *dir = t->cfg.ckpt.checkpoint_dir;
  if (!dir) return AX_OK;
  int rc = AX_OK;
  if (t->grid.rank == 0) {
    rc = ax_ckpt_make_dirs(dir, -1);
    if (rc == AX_OK) rc = ax_ckpt_lock(dir, &t->ckpt_lock);
  }
  AX_TRY(ax_grid_agree(&t->grid, rc));
  if (!writes_checkpoints(t)) return AX_OK;
  char probe[1100];
  snprintf(probe, sizeof probe, "%s/stage-%d.bin", dir, t->grid.stage);
  if (ax_file_check_writable(probe) != AX_OK) return ax_error_context("--checkpoint-dir");
  return AX_OK;
}

/* --debug-hang-mode checkpoint: this rank never gets past its part of the checkpoint (a test
 * kills it there: a checkpoint interrupted half-way must never be used). */
static void debug_hang(const AxTrainer *t, int step) {
  if (t->grid.rank != t->cfg.debug.debug_hang_rank || step != t->cfg.debug.debug_hang_step ||
      t->cfg.debug.debug_hang_mode != AX_DEBUG_HANG_CHECKPOINT)
    return;
  for (;;) nanosleep(&(struct timespec){1, 0}, NULL);
}

/* Row 0: the stage's weights and Adam moments whole at its tensor-parallel rank 0, which
 * writes them. */
static int write_own_stage(AxTrainer *t, const char *step_dir, AxCkptFile *mine) {
  AX_TRY(ax_trainer_state_to_host(t));
  float *const state[3] = {t->off.master, t->off.m, t->off.v};
  AxWholeStage w;
  AX_TRY(ax_trainer_whole_open(t, &w, state, 3, 0));
  int rc = ax_trainer_whole_gather(t, &w, state);
  if (rc == AX_OK && writes_checkpoints(t))
    rc = ax_ckpt_write_stage(step_dir, t->grid.stage, &t->model, &w.whole, t->grid.P, w.buf[0],
                             w.buf[1], w.buf[2], mine);
  ax_trainer_whole_close(&w);
  return rc;
}

/* Row 0 ranks write their stage (mine: its name, size and CRC). */
static int write_stages(AxTrainer *t, int step, const char *step_dir, AxCkptFile *mine) {
  int rc = t->grid.row == 0 ? write_own_stage(t, step_dir, mine) : AX_OK;
  debug_hang(t, step);
  return ax_grid_agree(&t->grid, rc);
}

/* ------------------------------------------------------------------ codec state */

/* The compression states a rank keeps across steps, each in a per-rank file of its own:
 * --compress's (codec-R.bin: error feedback, momentum, PowerSGD's Q per part), the figures
 * its cost model decided on (measured-R.bin: train_measured.h; taken back at set-up,
 * ax_trainer_keep_measured, not by the resume) and --compress-backprop's (backprop-R.bin: the
 * link's residual and Q). */
typedef enum { STATE_CODEC = 0, STATE_BACKPROP, STATE_MEASURED, N_STATES } StateKind;

static const char *const STATE_PREFIX[N_STATES] = {"codec", "backprop", "measured"};
static const char *const STATE_OPTION[N_STATES] = {"--compress", "--compress-backprop",
                                                   "--compress"};

static void state_file_name(StateKind k, int rank, char *buf, size_t cap) {
  snprintf(buf, cap, "%s-%d.bin", STATE_PREFIX[k], rank);
}

static int has_state(const AxTrainer *t, StateKind k) {
  return k == STATE_CODEC ? t->codec != NULL
         : k == STATE_MEASURED ? t->measured.n > 0
                               : t->have_backprop;
}

/* What the measured figures belong to: the configuration that decides which figures the cost
 * model measures and what they mean (a resume with another link, grid, codec or stage
 * selection measures again), and how many bytes they are. */
static void measured_label(const AxTrainer *t, size_t bytes, char *buf, size_t cap) {
  const AxCompressionOptions *c = &t->cfg.compression;
  const AxGridOptions *g = &t->cfg.grid;
  snprintf(buf, cap, "measured codec %s sync %d scheme %s stages %s min-bytes %s fusion %s "
           "grid %dx%d tp %d rank %d micro %d link %s rpn %d allreduce %d dtype %d early %d "
           "bytes %zu", ax_train_codec_spec(&t->cfg), c->compress_sync,
           c->compress_scheme ? c->compress_scheme : "-", c->compress_stages,
           c->compress_min_bytes, c->fusion ? c->fusion : "-", t->grid.P, t->grid.D,
           ax_grid_tp_size(&t->grid), t->grid.rank, t->micro,
           g->emulate_link ? g->emulate_link : "-", g->ranks_per_node, g->allreduce,
           t->cfg.optim.allreduce_dtype, t->cfg.optim.dp_sync_early, bytes);
}

/* What a rank's state belongs to: a resume restores it only into the same (the decisions
 * included: a part's state must go back to the same part, compressed the same way). */
static void state_label(const AxTrainer *t, StateKind k, char *buf, size_t cap) {
  if (k == STATE_BACKPROP) {
    ax_trainer_backprop_label(t, buf, cap);
    return;
  }
  if (k == STATE_MEASURED) {
    measured_label(t, t->measured.n, buf, cap);
    return;
  }
  snprintf(buf, cap, "codec %s sync %s grid %dx%d rank %d chunks %d layer-wise parts %d "
           "bucket %lld coarsening %d decisions %08x", ax_codec_spec(t->codec),
           ax_casync_algo_name(t->gc.algo), t->grid.P, t->grid.D, t->grid.rank, t->gc.n_chunks,
           t->gc.n_parts, t->cfg.optim.bucket_size, t->cfg.optim.coarsening,
           (unsigned)ax_grad_compress_fingerprint(&t->gc));
}

/* This rank's state file of a kind: its name, its label and a buffer of the state's size. */
typedef struct {
  char label[AX_BLOB_LABEL_MAX], name[64];
  size_t bytes;
  void *buf;
} StateBlob;

static int state_blob(const AxTrainer *t, StateKind k, StateBlob *b) {
  state_label(t, k, b->label, sizeof b->label);
  state_file_name(k, t->grid.rank, b->name, sizeof b->name);
  b->bytes = k == STATE_CODEC      ? ax_grad_compress_state_bytes(&t->gc)
             : k == STATE_MEASURED ? t->measured.n
                                   : ax_backprop_state_bytes(&t->backprop);
  b->buf = ax_malloc(b->bytes + 1);
  return b->buf ? AX_OK : AX_ERR;
}

/* Every rank its states (error-feedback residuals differ between ranks); info[k]: the file of
 * kind k as the manifest lists it (an empty name where the rank keeps no such state). */
static int write_codec_state(AxTrainer *t, const char *step_dir, AxCkptFile info[N_STATES]) {
  for (int k = 0; k < N_STATES; k++) {
    if (!has_state(t, (StateKind)k)) continue;
    StateBlob b;
    AX_TRY(state_blob(t, (StateKind)k, &b));
    int rc = k == STATE_CODEC ? ax_grad_compress_save(&t->gc, b.buf)
             : k == STATE_BACKPROP ? ax_backprop_state_save(&t->backprop, b.buf)
                                   : (memcpy(b.buf, t->measured.bytes, b.bytes), AX_OK);
    if (rc == AX_OK)
      rc = ax_ckpt_blob_write(step_dir, b.name, b.label, b.buf, b.bytes, &info[k]);
    free(b.buf);
    AX_TRY(rc);
  }
  return AX_OK;
}

/* A rank's files of a checkpoint: its stage file (row 0's writers; an empty name elsewhere),
 * then its state files, one of each kind. */
enum { OWN_FILES = 1 + N_STATES };

/* Rank 0 puts every rank's `mine` together: row 0's stage files into files[stage] (row 0's
 * stage s is world rank s x Gx·Gy·Gz) and every state file, rank by rank, into *states
 * (*n_states of them; rank 0 frees it). */
static int gather_files(AxTrainer *t, const AxCkptFile *mine, AxCkptFile *files,
                        AxCkptFile **states, int *n_states) {
  int size = multi(t) ? t->grid.size : 1, n = 0;
  *states = NULL;
  *n_states = 0;
  AxCkptFile *all = t->grid.rank == 0 ? ax_calloc((size_t)size * OWN_FILES, sizeof *all) : NULL;
  if (t->grid.rank == 0 && !all) return AX_ERR;
  AX_WD_NOTE(0, "gathering the checkpoint files' sizes and CRCs at rank 0");
  if (multi(t))
    AX_MPI(MPI_Gather(mine, OWN_FILES * sizeof *mine, MPI_BYTE, all, OWN_FILES * sizeof *mine,
                      MPI_BYTE, 0, t->grid.world));
  else
    memcpy(all, mine, OWN_FILES * sizeof *mine);
  if (!all) return AX_OK;
  for (int s = 0; s < t->grid.P; s++) files[s] = all[s * ax_grid_tp_size(&t->grid) * OWN_FILES];
  for (int i = 0; i < size * OWN_FILES; i++) /* the states to the front, in place */
    if (i % OWN_FILES && all[i].name[0]) all[n++] = all[i];
  *states = all;
  *n_states = n;
  return AX_OK;
}

/* Restores this rank's state of a kind; *status: 0 restored (or nothing to restore), 1 none in
 * the checkpoint, 2 written by another codec or grid (both: the state starts fresh). */
static int read_state(AxTrainer *t, StateKind k, const char *step_dir, int *status) {
  *status = 0;
  if (!has_state(t, k)) return AX_OK;
  StateBlob b;
  AX_TRY(state_blob(t, k, &b));
  int found, same;
  int rc = ax_ckpt_blob_read(step_dir, b.name, b.label, b.buf, b.bytes, &found, &same);
  if (rc == AX_OK && found && same)
    rc = k == STATE_CODEC ? ax_grad_compress_load(&t->gc, b.buf, b.bytes)
                          : ax_backprop_state_load(&t->backprop, b.buf, b.bytes);
  free(b.buf);
  *status = !found ? 1 : !same ? 2 : 0;
  return rc;
}

/* Rank 0: the name of a file of kind k the checkpoint holds (its manifest lists them; an
 * older manifest lists none: then rank 0's, when present); 0 when it holds none. */
static int held_state(const char *step_dir, const AxCkptManifest *man, StateKind k, char *name,
                      size_t cap) {
  size_t n = strlen(STATE_PREFIX[k]);
  for (int i = 0; i < man->n_states; i++)
    if (!strncmp(man->states[i].name, STATE_PREFIX[k], n) && man->states[i].name[n] == '-') {
      snprintf(name, cap, "%s", man->states[i].name);
      return 1;
    }
  char path[1200];
  state_file_name(k, 0, name, cap);
  snprintf(path, sizeof path, "%s/%s", step_dir, name);
  return man->n_states == 0 && access(path, F_OK) == 0;
}

/* Rank 0, a run that keeps no state of kind k (resumed without that option): one line when the
 * checkpoint holds some, naming the codec it was written with; the run goes on without it. */
static void warn_dropped(const char *step_dir, StateKind k) {
  AxCkptManifest man;
  char name[64], label[AX_BLOB_LABEL_MAX], spec[AX_BLOB_LABEL_MAX] = "?";
  if (ax_ckpt_load_manifest(step_dir, 0, &man) != AX_OK) {
    ax_error_clear();
    return;
  }
  int held = held_state(step_dir, &man, k, name, sizeof name);
  ax_ckpt_manifest_free(&man);
  if (!held) return;
  if (ax_ckpt_blob_label(step_dir, name, label, sizeof label) == AX_OK)
    sscanf(label, "%*s %511s", spec); /* "codec SPEC ...", "backprop SPEC ..." */
  ax_error_clear();
  ax_warn("resume: %s holds %s state (codec %s: error feedback, momentum, Q) that this run, "
          "without %s, drops and trains on without; resume with the same %s to continue the "
          "checkpointed run exactly", step_dir, STATE_OPTION[k], spec, STATE_OPTION[k],
          STATE_OPTION[k]);
}

/* *outcome: AX_CODEC_STATE_RESTORED where every state the run keeps came back, RESTARTED where
 * some started fresh, NONE where it keeps none (the same on every rank). */
static int resume_codec_state(AxTrainer *t, const char *step_dir, int *outcome) {
  *outcome = AX_CODEC_STATE_NONE;
  for (int k = 0; k < N_STATES; k++) {
    int status = 0, worst, kept;
    if (k == STATE_MEASURED) continue; /* taken back at set-up (ax_trainer_keep_measured) */
    AX_TRY(ax_trainer_agree_flag(t, has_state(t, (StateKind)k), &kept));
    if (!kept) {
      if (t->grid.rank == 0) warn_dropped(step_dir, (StateKind)k);
      continue;
    }
    AX_TRY(ax_grid_agree(&t->grid, read_state(t, (StateKind)k, step_dir, &status)));
    AX_TRY(ax_trainer_agree_flag(t, status, &worst));
    if (*outcome != AX_CODEC_STATE_RESTARTED)
      *outcome = worst ? AX_CODEC_STATE_RESTARTED : AX_CODEC_STATE_RESTORED;
    if (worst && t->grid.rank == 0)
      ax_warn("resume: %s holds %s; the compression state of %s (error feedback, momentum, Q) "
              "starts fresh, so this run does not continue the checkpointed one bit for bit",
              step_dir,
              worst == 1 ? "no such state (written without it?)"
                         : "the state of another codec, grid or chunking", STATE_OPTION[k]);
  }
  return AX_OK;
}

/* A recovery from memory: a memory checkpoint holds one file a stage, and the compression
 * state is one a rank (error feedback, momentum, Q), so it starts fresh, as DeepSpeed's 1-bit
 * Adam resets its errors at every load (docs/memory-checkpoints.md), and the cost model's
 * figures are those of this start unless a file checkpoint of the run held them (every rank
 * measures or none: ax_trainer_keep_measured); rank 0 says so. */
static int codec_state_restarts(AxTrainer *t, int step, int *outcome) {
  int kept = has_state(t, STATE_CODEC) || has_state(t, STATE_BACKPROP), any;
  AX_TRY(ax_trainer_agree_flag(t, kept, &any));
  *outcome = any ? AX_CODEC_STATE_RESTARTED : AX_CODEC_STATE_NONE;
  int remeasured = has_state(t, STATE_MEASURED) && !ax_measured_replaying(&t->measured);
  if (any && t->grid.rank == 0)
    ax_warn("resume: the memory checkpoint of step %d holds the weights and Adam's state but "
            "not the compression state of %s (error feedback, momentum, Q: one a rank), which "
            "starts fresh%s; this run does not continue the checkpointed one bit for bit",
            step, t->codec && t->have_backprop ? "--compress and --compress-backprop"
                  : t->codec                   ? "--compress"
                                               : "--compress-backprop",
            remeasured ? ", and its cost model decides on costs measured at this start (no file "
                         "checkpoint of the run holds the first start's: a part near "
                         "break-even may be compressed otherwise)"
                       : "");
  return AX_OK;
}

static int write_manifest(AxTrainer *t, int step, const char *step_dir, AxCkptFile *files,
                          AxCkptFile *states, int n_states) {
  AxCkptManifest man;
  int rc = ax_trainer_build_manifest(t, step, files, &man);
  man.states = states;
  man.n_states = n_states;
  if (rc == AX_OK) rc = ax_ckpt_write_manifest(step_dir, &man);
  if (rc == AX_OK) rc = ax_ckpt_prune(t->cfg.ckpt.checkpoint_dir, t->cfg.ckpt.keep, step);
  free(man.records);
  return rc;
}

int ax_trainer_checkpoint(AxTrainer *t, int step) {
  ax_wd_phase(AX_WD_CHECKPOINT, step);
  AX_WD_NOTE(-1, "creating the checkpoint directory");
  double t0 = ax_now();
  char step_dir[1024];
  ax_ckpt_step_dir(t->cfg.ckpt.checkpoint_dir, step, step_dir);
  int rc = t->grid.rank == 0 ? ax_ckpt_make_dirs(t->cfg.ckpt.checkpoint_dir, step) : AX_OK;
  AX_TRY(ax_grid_agree(&t->grid, rc));
  AxCkptFile *files = ax_calloc((size_t)t->grid.P, sizeof *files), mine[OWN_FILES],
             *states = NULL;
  int n_states = 0;
  memset(mine, 0, sizeof mine);
  AX_WD_NOTE(-1, "writing the checkpoint file of stage %d, then agreeing that all were written",
             t->grid.stage);
  rc = ax_grid_agree(&t->grid, write_codec_state(t, step_dir, mine + 1));
  if (rc == AX_OK) rc = files ? write_stages(t, step, step_dir, mine) : AX_ERR;
  if (rc == AX_OK) rc = gather_files(t, mine, files, &states, &n_states);
  AX_WD_NOTE(0, t->grid.rank == 0 ? "writing the checkpoint manifest"
                                   : "waiting for rank 0 to write the checkpoint manifest");
  if (rc == AX_OK && t->grid.rank == 0)
    rc = write_manifest(t, step, step_dir, files, states, n_states);
  free(states);
  free(files);
  AX_TRY(ax_grid_agree(&t->grid, rc));
  ax_log("checkpoint: step %d written to %s in %.2f s", step, step_dir, ax_now() - t0);
  return AX_OK;
}

/* ------------------------------------------------------------------ resume */

/* Rank 0 finds the newest complete checkpoint and tells everyone its directory and step
 * (*found = 0 when there is none, or no --checkpoint-dir), once: a second call (the resume
 * after the set-up's measured costs) takes the first one's answer. */
static int agree_on_latest(AxTrainer *t, int *found, char *step_dir, int *step) {
  int rc = AX_OK;
  if (t->latest.known) {
    *found = t->latest.found, *step = t->latest.step;
    memcpy(step_dir, t->latest.dir, sizeof t->latest.dir);
    return AX_OK;
  }
  *found = 0;
  *step = -1;
  if (!t->cfg.ckpt.checkpoint_dir) return AX_OK;
  if (t->grid.rank == 0) {
    AxCkptManifest man;
    rc = ax_ckpt_find_latest(t->cfg.ckpt.checkpoint_dir, found, step_dir, &man);
    if (rc == AX_OK && *found) {
      *step = man.step;
      ax_ckpt_manifest_free(&man);
    }
  }
  AX_TRY(ax_grid_agree(&t->grid, rc));
  if (multi(t)) {
    AX_MPI(MPI_Bcast(found, 1, MPI_INT, 0, t->grid.world));
    AX_MPI(MPI_Bcast(step, 1, MPI_INT, 0, t->grid.world));
    AX_MPI(MPI_Bcast(step_dir, 1024, MPI_CHAR, 0, t->grid.world));
  }
  t->latest.known = 1, t->latest.found = *found, t->latest.step = *step;
  memcpy(t->latest.dir, step_dir, sizeof t->latest.dir);
  return AX_OK;
}

/* This rank's measured figures in step_dir, when it holds them under this run's label; *kept
 * = 0 when not (none, or another configuration's). */
static int read_measured(AxTrainer *t, const char *step_dir, int *kept) {
  char name[64], path[1200], label[AX_BLOB_LABEL_MAX], mine[AX_BLOB_LABEL_MAX];
  const char *at;
  size_t bytes = 0;
  *kept = 0;
  state_file_name(STATE_MEASURED, t->grid.rank, name, sizeof name);
  snprintf(path, sizeof path, "%s/%s", step_dir, name);
  if (access(path, F_OK) != 0) return AX_OK;
  AX_TRY(ax_ckpt_blob_label(step_dir, name, label, sizeof label));
  if (!(at = strstr(label, " bytes ")) || sscanf(at, " bytes %zu", &bytes) != 1 || !bytes)
    return AX_OK;
  measured_label(t, bytes, mine, sizeof mine);
  if (strcmp(label, mine) != 0) return AX_OK;
  unsigned char *buf = ax_malloc(bytes);
  if (!buf) return AX_ERR;
  int found, same, rc = ax_ckpt_blob_read(step_dir, name, mine, buf, bytes, &found, &same);
  if (rc == AX_OK && found && same) rc = ax_measured_replay(&t->measured, buf, bytes);
  *kept = rc == AX_OK && found && same;
  free(buf);
  return rc;
}

int ax_trainer_keep_measured(AxTrainer *t) {
  if (!t->cfg.ckpt.resume || t->cfg.compression.compress_remeasure ||
      !ax_train_compresses(&t->cfg))
    return AX_OK;
  int found, step, kept, lacking;
  char step_dir[1024] = {0};
  AX_TRY(agree_on_latest(t, &found, step_dir, &step));
  if (!found) return AX_OK;
  AX_TRY(ax_grid_agree(&t->grid, read_measured(t, step_dir, &kept)));
  AX_TRY(ax_trainer_agree_flag(t, !kept, &lacking));
  if (lacking) { /* every rank measures, or none */
    ax_measured_free(&t->measured);
    return AX_OK;
  }
  if (t->grid.rank == 0)
    ax_log("resume: compression decides on the costs the run of %s measured at its start "
           "(its measured-*.bin), so it decides every part as that run did; "
           "--compress-remeasure 1 measures them again", step_dir);
  return AX_OK;
}

int ax_trainer_resume(AxTrainer *t, int *step) {
  ax_wd_phase(AX_WD_RESUME, 0);
  AX_WD_NOTE(0, "finding the newest complete checkpoint");
  *step = 0;
  int found = 0, file_step, from_memory;
  char step_dir[1024] = {0};
  double t0 = ax_now(); /* the file checkpoint's time: found, checked and read */
  AX_TRY(agree_on_latest(t, &found, step_dir, &file_step));
  AX_TRY(ax_memckpt_recover(t->mc, file_step, &from_memory, step));
  if (!from_memory && !found) {
    ax_log("resume: no complete checkpoint in %s; starting from step 1",
           t->cfg.ckpt.checkpoint_dir ? t->cfg.ckpt.checkpoint_dir : "memory");
    return AX_OK;
  }
  t->resumed.from = from_memory ? AX_RESUMED_MEMORY : AX_RESUMED_FILE;
  if (!from_memory) {
    AX_WD_NOTE(-1, "reading the checkpoint");
    AX_TRY(ax_grid_agree(&t->grid, ax_trainer_load_checkpoint(t, step_dir, step)));
    AX_TRY(resume_codec_state(t, step_dir, &t->resumed.codec_state));
    ax_log("resume: continuing from %s (step %d); found and read in %.3f s%s", step_dir, *step,
           ax_now() - t0, t->mc ? "; memory held nothing newer" : "");
    snprintf(t->weights_from, sizeof t->weights_from, "checkpoint %s (step %d)", step_dir,
             *step);
  } else {
    AX_TRY(codec_state_restarts(t, *step, &t->resumed.codec_state));
    snprintf(t->weights_from, sizeof t->weights_from, "memory checkpoint of run %s (step %d)",
             t->run_name, *step);
  }
  t->resumed.step = *step;
  if (*step >= t->cfg.optim.steps)
    ax_warn("resume: the checkpoint is at step %d, --steps is %d: nothing left to do", *step,
            t->cfg.optim.steps);
  return AX_OK;
}

void ax_trainer_resume_report(const AxTrainer *t, AxResumeReport *out) { *out = t->resumed; }
