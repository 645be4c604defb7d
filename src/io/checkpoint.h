/* checkpoint.h — the on-disk checkpoint: a directory per saved step, DIR/step-NNNNNNNN/, with
 *   stage-S.bin  written by the rank of stage S in data-parallel row 0: a header, a table of
 *                records (each one parameter tensor over a range of layers: the tied wte
 *                once, on stage 0), then three sections, the stage's fp32 master weights, Adam
 *                m and Adam v, each the stage's flat array as the optimizer holds it (less a
 *                last stage's leading tied wte copy where that is over a quarter of the array;
 *                a smaller one stays, with no record) and 64-byte aligned, and a CRC-32 trailer of
 *                everything before it; so the optimizer can write a memory checkpoint's
 *                moments in place (docs/memory-checkpoints.md, "Zero-copy");
 *   codec-R.bin, backprop-R.bin  rank R's compression state (ckpt_blob.h), where the run
 *                compresses (--compress, --compress-backprop);
 *   manifest     written by rank 0 last, text: step, optimizer step count, data position,
 *                loss scale, model and batch shape, every stage file and every state file with
 *                its size and CRC-32, every record, and a CRC-32 of the manifest itself.
 * State is stored per parameter tensor and layer, not per rank layout, so a checkpoint
 * written on one grid resumes on any other. Every file goes to a temporary name, is fsync'd
 * and renamed; a step directory without a valid manifest, or whose files do not match it,
 * is incomplete or corrupt and is passed over for the previous one. Every field of a manifest
 * is range-checked when it is read. A run holds DIR/lock (an fcntl lock, gone when its owner
 * dies) so two runs never write one directory. */
#ifndef AX_CHECKPOINT_H
#define AX_CHECKPOINT_H

#include <stdint.h>

#include "models/gpt_config.h"

typedef struct {
  int file;              /* index into the manifest's files */
  int id, l0, l1;        /* tensor; layers [l0, l1) for per-layer tensors, 0..0 otherwise */
  unsigned long long count, offset; /* elements; byte offset of the master weights */
  unsigned long long stride;        /* bytes from the master weights to m, and from m to v */
} AxCkptRecord;

/* Where a stage file's sections lie: the master weights at byte `data`, m and v `stride`
 * bytes apart, each `count` elements: the stage's flat arrays from element `skip` on. */
typedef struct {
  unsigned long long data, stride;
  size_t skip, count, bytes; /* bytes: the whole file, trailer included */
} AxCkptSections;

typedef struct {
  char name[32];
  unsigned long long bytes;
  uint32_t crc;
} AxCkptFile;

enum { AX_CKPT_DATA_MAX = 1024 };

typedef struct {
  int step;
  long long adam_steps, data_position, skipped;
  /* what the run was started with (resume warns when they differ); absent in older
   * manifests: have_run = 0 */
  int have_run;
  long long seed;
  double lr;
  char data[AX_CKPT_DATA_MAX]; /* --data, or "-" for the built-in corpus */
  /* the run's --dropout and --attention-dropout (the export's config.json says them); absent
   * in older manifests: have_dropout = 0 */
  int have_dropout;
  double dropout, attention_dropout;
  float loss_scale;
  int clean_steps;
  AxGptConfig model;
  int batch, seq, stages;
  AxCkptFile *files; /* the stage files: files[s] is stage s's */
  int n_files;
  /* the per-rank state files (codec-R.bin, backprop-R.bin): a resume needs them as much as
   * the stage files; none in older manifests (n_states = 0) */
  AxCkptFile *states;
  int n_states;
  AxCkptRecord *records;
  int n_records;
} AxCkptManifest;

/* The step directory DIR/step-NNNNNNNN (buf holds 1024 bytes; ax_ckpt_check_dir_name says
 * whether DIR fits). */
const char *ax_ckpt_step_dir(const char *dir, int step, char *buf);
/* Fails (before anything is created) when the paths under DIR would not fit. */
int ax_ckpt_check_dir_name(const char *dir);
/* Takes DIR/lock for this process (DIR must exist): fails, naming the owner, when another
 * live run holds it. *fd is -1 when the file system has no locks (a warning says so). */
int ax_ckpt_lock(const char *dir, int *fd);
void ax_ckpt_unlock(int fd);
/* Creates DIR and DIR/step-N (rank 0, before anyone writes); step < 0: only DIR. */
int ax_ckpt_make_dirs(const char *dir, int step);

/* The records stage s of P (blocks [l0, l1)) writes, offsets from the start of its file. */
int ax_ckpt_stage_records(const AxGptConfig *m, int l0, int l1, int s, int P,
                          AxCkptRecord **out, int *n);
int ax_ckpt_stage_sections(const AxGptConfig *m, const AxStageLayout *lay, int s, int P,
                           AxCkptSections *sec);
/* "stage-S.bin": the name of stage s's file (buf: at least 32 bytes). */
const char *ax_ckpt_stage_file_name(int s, char *buf, size_t cap);
/* Writes stage-S.bin into step_dir (atomically) from the stage's flat master/m/v arrays
 * (layout lay); returns its size and CRC. */
int ax_ckpt_write_stage(const char *step_dir, int s, const AxGptConfig *m,
                        const AxStageLayout *lay, int P, const float *master, const float *am,
                        const float *av, AxCkptFile *info);
/* The size in bytes of that file, and the same file's bytes written into memory instead
 * (dst: `bytes` of it, exactly that size; the memory checkpoints' mapped slot files, whose
 * manifest is removed first), with non-temporal stores; info as above, but for the CRC: that
 * of part `part` of `parts` of the CRC'd bytes alone (ax_ckpt_crc_part), which is also what
 * the trailer holds until the caller puts the whole file's there. With parts = 1 the file is
 * the written one, byte for byte. Nodes holding identical copies of a stage CRC a part each
 * and put the parts' CRCs together (ax_ckpt_crc_of_parts). An array passed as NULL is in
 * place in dst already (an optimizer wrote it there): it is only CRC'd. */
int ax_ckpt_stage_bytes(const AxGptConfig *m, const AxStageLayout *lay, int s, int P,
                        size_t *bytes);
int ax_ckpt_fill_stage(void *dst, size_t bytes, int s, const AxGptConfig *m,
                       const AxStageLayout *lay, int P, const float *master, const float *am,
                       const float *av, int part, int parts, AxCkptFile *info);
/* Bytes [lo, hi) of part k of `parts` of crc_bytes CRC'd bytes (a stage file's size less its
 * 4-byte trailer), and the CRC of all of them from each part's. */
void ax_ckpt_crc_part(unsigned long long crc_bytes, int part, int parts, unsigned long long *lo,
                      unsigned long long *hi);
uint32_t ax_ckpt_crc_of_parts(const uint32_t *crcs, int parts, unsigned long long crc_bytes);
int ax_ckpt_write_manifest(const char *step_dir, const AxCkptManifest *man);

/* Reads and validates step_dir's manifest and (when check_files) every file's size and
 * CRC, the state files' included. AX_ERR with the reason when anything is missing or wrong. */
int ax_ckpt_load_manifest(const char *step_dir, int check_files, AxCkptManifest *man);
void ax_ckpt_manifest_free(AxCkptManifest *man);
/* Whether step_dir's copy of one of a manifest's files has its size and CRC (AX_ERR with
 * the reason when it is missing or corrupt): a stage file, or a state file, whose `bytes` are
 * its size less the 4-byte CRC trailer either way. */
int ax_ckpt_check_file(const char *step_dir, const AxCkptFile *cf);
/* needed[f] = 1 (n_files entries, the rest untouched) for every file a stage of layout lay
 * reads from (ax_ckpt_read_stage). */
void ax_ckpt_stage_files(const AxCkptManifest *man, const AxStageLayout *lay,
                         unsigned char *needed);
/* The newest complete checkpoint under dir: *found = 0 when there is none. Corrupt or
 * incomplete ones are reported (warning) and skipped. step_dir holds 1024 bytes. */
int ax_ckpt_find_latest(const char *dir, int *found, char *step_dir, AxCkptManifest *man);
/* Fills a stage's flat master/m/v (layout lay) from the checkpoint's records (am and av may
 * be NULL: weights only). */
int ax_ckpt_read_stage(const char *step_dir, const AxCkptManifest *man,
                       const AxStageLayout *lay, float *master, float *am, float *av);
/* Removes complete checkpoints beyond the newest `keep` (never `just_written`, which counts as
 * one of them) and incomplete step directories older than the newest complete one. */
int ax_ckpt_prune(const char *dir, int keep, int just_written);

#endif
