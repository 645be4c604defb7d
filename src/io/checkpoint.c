/* checkpoint.c — checkpoint files: stage files, the manifest, finding the newest complete
 * checkpoint and pruning old ones; see checkpoint.h. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/core/crc32.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/lockfile.h"
#include "src/core/log.h"
#include "src/core/stream_copy.h"

static const char MAGIC[8] = {'A', 'X', 'C', 'K', 'P', 'T', '0', '2'};
enum { HEADER_BYTES = 16, RECORD_BYTES = 40, MAX_RECORDS = 1 << 20, SECTION_ALIGN = 64 };

const char *ax_ckpt_step_dir(const char *dir, int step, char *buf) {
  snprintf(buf, 1024, "%s/step-%08d", dir, step);
  return buf;
}

enum { STEP_DIR_CAP = 1024, LONGEST_TAIL = 64 }; /* "/step-NNNNNNNN/.stage-NNN.bin.tmp.PID" */

int ax_ckpt_check_dir_name(const char *dir) {
  size_t n = strlen(dir);
  if (n == 0) return AX_FAIL("--checkpoint-dir is empty");
  if (n + LONGEST_TAIL >= STEP_DIR_CAP)
    return AX_FAIL("--checkpoint-dir is %zu bytes long; at most %d fit", n,
                   STEP_DIR_CAP - LONGEST_TAIL - 1);
  for (const char *p = dir; *p;) { /* every component within the file system's limit */
    size_t len = strcspn(p, "/");
    if (len > NAME_MAX)
      return AX_FAIL("--checkpoint-dir: a path component is %zu bytes long (at most %d)", len,
                     NAME_MAX);
    p += len + (p[len] == '/');
  }
  return AX_OK;
}

int ax_ckpt_lock(const char *dir, int *fd) {
  char path[STEP_DIR_CAP + 8], what[STEP_DIR_CAP + 32];
  snprintf(path, sizeof path, "%s/lock", dir);
  snprintf(what, sizeof what, "checkpoint directory %s", dir);
  return ax_lock_claim(AT_FDCWD, path, path, what, "--checkpoint-dir", 0, fd);
}

void ax_ckpt_unlock(int fd) { ax_lock_release(fd); }

static int make_dir(const char *path) {
  struct stat sb;
  if (mkdir(path, 0777) == 0) return AX_OK;
  if (errno != EEXIST) return AX_FAIL("cannot create directory %s: %s", path, strerror(errno));
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return AX_FAIL("cannot create directory %s: a file of that name exists", path);
  return AX_OK;
}

/* mkdir -p */
static int make_dirs(const char *dir) {
  char path[STEP_DIR_CAP];
  AX_TRY(ax_ckpt_check_dir_name(dir));
  snprintf(path, sizeof path, "%s", dir);
  for (char *p = path + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      AX_TRY(make_dir(path));
      *p = '/';
    }
  return make_dir(path);
}

int ax_ckpt_make_dirs(const char *dir, int step) {
  char buf[STEP_DIR_CAP];
  AX_TRY(make_dirs(dir));
  return step < 0 ? AX_OK : make_dir(ax_ckpt_step_dir(dir, step, buf));
}

/* ------------------------------------------------------------------ stage files */

/* Layer tensors, wte and wpe of the first stage, the final LayerNorm of the last; the tied
 * wte copy of the last stage is not stored. */
static int wanted(int id, int first, int last) {
  if (ax_param_is_layer(id)) return 1;
  return id == AX_P_WTE || id == AX_P_WPE ? first : last;
}

static unsigned long long round_up(unsigned long long x, unsigned long long to) {
  return (x + to - 1) / to * to;
}

/* The records of stage s and where its sections lie (see checkpoint.h). */
static int layout_stage(const AxGptConfig *m, int l0, int l1, int s, int P, AxCkptRecord **out,
                        int *n, AxCkptSections *sec) {
  AxStageLayout lay;
  ax_stage_layout(&lay, m, l0, l1, s == 0, s == P - 1);
  AxCkptRecord *r = ax_calloc(AX_N_PARAMS, sizeof *r);
  if (!r) return AX_ERR;
  int k = 0;
  size_t skip = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!lay.has[id]) continue;
    if (!wanted(id, s == 0, s == P - 1)) {
      if (k || lay.offset[id] != skip) { /* only a leading tensor can be left out */
        free(r);
        return AX_FAIL("internal: stage %d leaves out %s inside its arrays", s,
                       ax_param_name(id));
      }
      skip += lay.count[id];
      continue;
    }
    int layer = ax_param_is_layer(id);
    r[k++] = (AxCkptRecord){.file = s, .id = id, .l0 = layer ? l0 : 0, .l1 = layer ? l1 : 0,
                            .count = lay.count[id], .offset = lay.offset[id]};
  }
  /* a small tied copy stays in the sections (unrecorded: stage 0's file holds the tensor), so
   * they are the stage's arrays whole and its optimizer can write them (zero-copy) */
  if (skip * 4 <= lay.total) skip = 0;
  sec->skip = skip;
  sec->count = lay.total - skip;
  sec->data = round_up(HEADER_BYTES + (unsigned long long)k * RECORD_BYTES, SECTION_ALIGN);
  sec->stride = round_up(sec->count * sizeof(float), SECTION_ALIGN);
  sec->bytes = (size_t)(sec->data + 2 * sec->stride + sec->count * sizeof(float)) +
               sizeof(uint32_t);
  for (int i = 0; i < k; i++) {
    r[i].offset = sec->data + (r[i].offset - skip) * sizeof(float);
    r[i].stride = sec->stride;
  }
  *out = r;
  *n = k;
  return AX_OK;
}

int ax_ckpt_stage_records(const AxGptConfig *m, int l0, int l1, int s, int P,
                          AxCkptRecord **out, int *n) {
  AxCkptSections sec;
  return layout_stage(m, l0, l1, s, P, out, n, &sec);
}

int ax_ckpt_stage_sections(const AxGptConfig *m, const AxStageLayout *lay, int s, int P,
                           AxCkptSections *sec) {
  AxCkptRecord *r;
  int n;
  AX_TRY(layout_stage(m, lay->l0, lay->l1, s, P, &r, &n, sec));
  free(r);
  return AX_OK;
}

/* Writes into a file, or into memory (mem: a mapped slot file of exactly the stage's size);
 * pos counts the bytes written either way. */
typedef struct {
  AxFile f;
  unsigned char *mem;
  size_t pos;
  uint32_t crc;
  unsigned long long crc_lo, crc_hi; /* the bytes the CRC covers (all of them: 0, ULLONG_MAX) */
} CrcWriter;

static int sink(CrcWriter *w, const void *p, size_t n) {
  if (w->mem) ax_stream_copy(w->mem + w->pos, p, n);
  else AX_TRY(ax_file_write(&w->f, p, n));
  w->pos += n;
  return AX_OK;
}

/* The CRC of bytes [pos, pos + n) of the output, those of them it covers. */
static void crc_span(CrcWriter *w, const unsigned char *b, size_t n) {
  unsigned long long lo = w->pos > w->crc_lo ? w->pos : w->crc_lo;
  unsigned long long hi = w->pos + n < w->crc_hi ? w->pos + n : w->crc_hi;
  if (lo < hi) w->crc = ax_crc32(w->crc, b + (lo - w->pos), (size_t)(hi - lo));
}

enum { BLOCK = 256 << 10 };

/* In blocks that stay in cache between the CRC's read and the write's. */
static int put(CrcWriter *w, const void *p, size_t bytes) {
  for (const unsigned char *b = p; bytes > 0;) {
    size_t n = bytes < BLOCK ? bytes : BLOCK;
    crc_span(w, b, n);
    AX_TRY(sink(w, b, n));
    b += n, bytes -= n;
  }
  return AX_OK;
}

/* Bytes already in place in the memory written to: only CRC'd. */
static void keep(CrcWriter *w, size_t bytes) {
  crc_span(w, w->mem + w->pos, bytes);
  w->pos += bytes;
}

static int put_zeros(CrcWriter *w, size_t bytes) {
  static const unsigned char zeros[SECTION_ALIGN];
  while (bytes > 0) {
    size_t n = bytes < sizeof zeros ? bytes : sizeof zeros;
    AX_TRY(put(w, zeros, n));
    bytes -= n;
  }
  return AX_OK;
}

/* The file: header, records, then each array's stored elements as a section (an array NULL:
 * already in place in the memory written to). */
static int write_stage_body(CrcWriter *w, int s, const AxCkptRecord *r, int n,
                            const AxCkptSections *sec, const float *const arrays[3]) {
  int32_t head[2] = {s, n};
  AX_TRY(put(w, MAGIC, sizeof MAGIC));
  AX_TRY(put(w, head, sizeof head));
  for (int i = 0; i < n; i++) {
    int32_t ids[4] = {r[i].id, r[i].l0, r[i].l1, 0};
    uint64_t sizes[3] = {r[i].count, r[i].offset, r[i].stride};
    AX_TRY(put(w, ids, sizeof ids));
    AX_TRY(put(w, sizes, sizeof sizes));
  }
  size_t bytes = sec->count * sizeof(float);
  for (int a = 0; a < 3; a++) {
    AX_TRY(put_zeros(w, (size_t)(sec->data + a * sec->stride) - w->pos));
    if (arrays[a]) AX_TRY(put(w, arrays[a] + sec->skip, bytes));
    else keep(w, bytes);
  }
  uint32_t crc = w->crc;
  return sink(w, &crc, sizeof crc);
}

const char *ax_ckpt_stage_file_name(int s, char *buf, size_t cap) {
  snprintf(buf, cap, "stage-%d.bin", s);
  return buf;
}

int ax_ckpt_stage_bytes(const AxGptConfig *m, const AxStageLayout *lay, int s, int P,
                        size_t *bytes) {
  AxCkptSections sec;
  AX_TRY(ax_ckpt_stage_sections(m, lay, s, P, &sec));
  *bytes = sec.bytes;
  return AX_OK;
}

/* Stage s's file through w (mem_bytes: the memory's size, checked; 0 for a file); info gets
 * the CRC'd bytes, before the trailer, and their CRC. */
static int write_stage(CrcWriter *w, int s, const AxGptConfig *m, const AxStageLayout *lay,
                       int P, const float *const arrays[3], size_t mem_bytes, AxCkptFile *info) {
  AxCkptRecord *r;
  AxCkptSections sec;
  int n;
  AX_TRY(layout_stage(m, lay->l0, lay->l1, s, P, &r, &n, &sec));
  int rc = AX_OK;
  if (w->mem && mem_bytes != sec.bytes)
    rc = AX_FAIL("internal: stage %d's file takes %zu bytes, not %zu", s, sec.bytes, mem_bytes);
  if (!w->mem && (!arrays[0] || !arrays[1] || !arrays[2]))
    rc = AX_FAIL("internal: stage %d's file written from missing arrays", s);
  if (rc == AX_OK) rc = write_stage_body(w, s, r, n, &sec, arrays);
  info->bytes = (unsigned long long)w->pos - sizeof(uint32_t);
  info->crc = w->crc;
  free(r);
  return rc;
}

int ax_ckpt_write_stage(const char *step_dir, int s, const AxGptConfig *m,
                        const AxStageLayout *lay, int P, const float *master, const float *am,
                        const float *av, AxCkptFile *info) {
  char path[1100];
  ax_ckpt_stage_file_name(s, info->name, sizeof info->name);
  snprintf(path, sizeof path, "%s/%s", step_dir, info->name);
  CrcWriter w = {.crc = 0, .crc_hi = ULLONG_MAX};
  AX_TRY(ax_file_open_write(&w.f, path));
  const float *const arrays[3] = {master, am, av};
  int rc = write_stage(&w, s, m, lay, P, arrays, 0, info);
  if (rc == AX_OK) return ax_file_commit(&w.f);
  ax_file_abort(&w.f);
  return rc;
}

void ax_ckpt_crc_part(unsigned long long crc_bytes, int part, int parts, unsigned long long *lo,
                      unsigned long long *hi) {
  *lo = crc_bytes * (unsigned long long)part / (unsigned long long)parts;
  *hi = crc_bytes * (unsigned long long)(part + 1) / (unsigned long long)parts;
}

uint32_t ax_ckpt_crc_of_parts(const uint32_t *crcs, int parts, unsigned long long crc_bytes) {
  uint32_t crc = 0;
  for (int k = 0; k < parts; k++) {
    unsigned long long lo, hi;
    ax_ckpt_crc_part(crc_bytes, k, parts, &lo, &hi);
    crc = ax_crc32_combine(crc, crcs[k], hi - lo);
  }
  return crc;
}

int ax_ckpt_fill_stage(void *dst, size_t bytes, int s, const AxGptConfig *m,
                       const AxStageLayout *lay, int P, const float *master, const float *am,
                       const float *av, int part, int parts, AxCkptFile *info) {
  if (parts < 1 || part < 0 || part >= parts || bytes < sizeof(uint32_t))
    return AX_FAIL("internal: part %d of %d of a %zu-byte stage file", part, parts, bytes);
  ax_ckpt_stage_file_name(s, info->name, sizeof info->name);
  CrcWriter w = {.mem = dst, .crc = 0};
  ax_ckpt_crc_part(bytes - sizeof(uint32_t), part, parts, &w.crc_lo, &w.crc_hi);
  const float *const arrays[3] = {master, am, av};
  return write_stage(&w, s, m, lay, P, arrays, bytes, info);
}

/* ------------------------------------------------------------------ manifest */

static void print_manifest(FILE *o, const AxCkptManifest *man) {
  const AxGptConfig *m = &man->model;
  fprintf(o, "axonn-checkpoint 1\nstep %d\nadam_steps %lld\ndata_position %lld\n", man->step,
          man->adam_steps, man->data_position);
  fprintf(o, "loss_scale %.9g %d %lld\n", man->loss_scale, man->clean_steps, man->skipped);
  fprintf(o, "model %d %d %d %d %d %d\nbatch %d %d\nstages %d\n", m->layers, m->channels,
          m->heads, m->vocab, m->padded_vocab, m->max_seq, man->batch, man->seq, man->stages);
  if (man->have_run)
    fprintf(o, "seed %lld\nlr %.17g\ndata %s\n", man->seed, man->lr, man->data);
  if (man->have_dropout)
    fprintf(o, "dropout %.17g %.17g\n", man->dropout, man->attention_dropout);
  for (int i = 0; i < man->n_files; i++)
    fprintf(o, "file %s %llu %08x\n", man->files[i].name, man->files[i].bytes,
            man->files[i].crc);
  for (int i = 0; i < man->n_states; i++)
    fprintf(o, "state %s %llu %08x\n", man->states[i].name, man->states[i].bytes,
            man->states[i].crc);
  for (int i = 0; i < man->n_records; i++) {
    const AxCkptRecord *r = &man->records[i];
    fprintf(o, "record %d %d %d %d %llu %llu %llu\n", r->file, r->id, r->l0, r->l1, r->count,
            r->offset, r->stride);
  }
}

int ax_ckpt_write_manifest(const char *step_dir, const AxCkptManifest *man) {
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return AX_FAIL("out of memory writing the manifest");
  print_manifest(mem, man);
  fclose(mem);
  char path[1100], tail[32];
  snprintf(path, sizeof path, "%s/manifest", step_dir);
  snprintf(tail, sizeof tail, "crc %08x\n", ax_crc32(0, text, len));
  AxFile f;
  int rc = ax_file_open_write(&f, path);
  if (rc == AX_OK) rc = ax_file_write(&f, text, len);
  if (rc == AX_OK) rc = ax_file_write(&f, tail, strlen(tail));
  if (rc == AX_OK) rc = ax_file_commit(&f);
  else ax_file_abort(&f);
  free(text);
  return rc;
}

/* Appends a file (stage or state) to a manifest's list; 0 when out of memory. */
static int add_file(AxCkptFile **list, int *n, const char *name, unsigned long long bytes,
                    unsigned crc) {
  AxCkptFile *f = realloc(*list, (size_t)(*n + 1) * sizeof *f);
  if (!f) return 0;
  *list = f;
  f[*n] = (AxCkptFile){.bytes = bytes, .crc = crc};
  snprintf(f[(*n)++].name, sizeof f->name, "%s", name);
  return 1;
}

static int parse_line(AxCkptManifest *man, const char *line) {
  AxGptConfig *m = &man->model;
  char name[32];
  unsigned long long a, b, c;
  unsigned crc;
  AxCkptRecord r;
  int got;
  if (sscanf(line, "step %d", &man->step) == 1) return 1;
  if (sscanf(line, "adam_steps %lld", &man->adam_steps) == 1) return 1;
  if (sscanf(line, "data_position %lld", &man->data_position) == 1) return 1;
  if (sscanf(line, "loss_scale %f %d %lld", &man->loss_scale, &man->clean_steps,
             &man->skipped) == 3) return 1;
  if (sscanf(line, "model %d %d %d %d %d %d", &m->layers, &m->channels, &m->heads, &m->vocab,
             &m->padded_vocab, &m->max_seq) == 6) return 1;
  if (sscanf(line, "batch %d %d", &man->batch, &man->seq) == 2) return 1;
  if (sscanf(line, "stages %d", &man->stages) == 1) return 1;
  if (sscanf(line, "seed %lld", &man->seed) == 1) return man->have_run = 1;
  if (sscanf(line, "lr %lf", &man->lr) == 1) return man->have_run = 1;
  if (sscanf(line, "dropout %lf %lf", &man->dropout, &man->attention_dropout) == 2)
    return man->have_dropout = 1;
  if (!strncmp(line, "data ", 5)) {
    snprintf(man->data, sizeof man->data, "%s", line + 5);
    return man->have_run = 1;
  }
  if (sscanf(line, "file %31s %llu %x", name, &a, &crc) == 3)
    return add_file(&man->files, &man->n_files, name, a, crc);
  if (sscanf(line, "state %31s %llu %x", name, &a, &crc) == 3)
    return add_file(&man->states, &man->n_states, name, a, crc);
  got = sscanf(line, "record %d %d %d %d %llu %llu %llu", &r.file, &r.id, &r.l0, &r.l1, &a, &b,
               &c);
  if (got == 6 || got == 7) {
    AxCkptRecord *rs = realloc(man->records, (size_t)(man->n_records + 1) * sizeof *rs);
    if (!rs) return 0;
    man->records = rs;
    r.count = a;
    r.offset = b;
    r.stride = got == 7 ? c : a * sizeof(float); /* before sections: each record's arrays in turn */
    rs[man->n_records++] = r;
    return 1;
  }
  return strncmp(line, "axonn-checkpoint 1", 18) == 0;
}

/* One record: a tensor of the model, whole or a range of its layers, inside its file. */
static int check_record(const char *path, const AxCkptManifest *man, const AxCkptRecord *r) {
  const AxGptConfig *m = &man->model;
  if (r->file < 0 || r->file >= man->n_files || r->id < 0 || r->id >= AX_N_PARAMS)
    return AX_FAIL("%s: record of file %d, tensor %d does not exist", path, r->file, r->id);
  int layer = ax_param_is_layer(r->id);
  unsigned long long want = layer ? (unsigned long long)(r->l1 - r->l0) *
                                        ax_param_per_layer(m, r->id)
                                  : ax_param_size(m, r->id);
  if ((layer && (r->l0 < 0 || r->l1 <= r->l0 || r->l1 > m->layers)) ||
      (!layer && (r->l0 || r->l1)) || r->count != want)
    return AX_FAIL("%s: record of %s (layers %d-%d, %llu elements) does not fit the model",
                   path, ax_param_name(r->id), r->l0, r->l1, r->count);
  unsigned long long bytes = man->files[r->file].bytes, data = r->count * sizeof(float);
  if (r->stride < data || r->offset > bytes || r->stride > (bytes - r->offset) / 2 ||
      data > bytes - r->offset - 2 * r->stride)
    return AX_FAIL("%s: record of %s lies outside %s", path, ax_param_name(r->id),
                   man->files[r->file].name);
  return AX_OK;
}

/* Every field against its range (the CRC only says the text is what was written). */
static int check_fields(const char *path, const AxCkptManifest *man) {
  if (man->step < 0 || man->adam_steps < 0 || man->adam_steps > man->step ||
      man->skipped < 0 || man->skipped > man->step || man->data_position < 0 ||
      man->clean_steps < 0 || !isfinite(man->loss_scale) || man->loss_scale <= 0)
    return AX_FAIL("%s: step %d, optimizer steps %lld, skipped %lld, data position %lld or "
                   "loss scale %g is out of range", path, man->step, man->adam_steps,
                   man->skipped, man->data_position, man->loss_scale);
  if (ax_gpt_config_check(&man->model) != AX_OK) return ax_error_context("%s", path);
  if (man->batch < 1 || man->seq < 1 || man->seq > man->model.max_seq || man->stages < 1 ||
      man->stages > man->model.layers)
    return AX_FAIL("%s: batch %d, sequence %d or %d stages do not fit the model", path,
                   man->batch, man->seq, man->stages);
  if (man->have_dropout && !(man->dropout >= 0 && man->dropout < 1 &&
                             man->attention_dropout >= 0 && man->attention_dropout < 1))
    return AX_FAIL("%s: dropout %g or attention dropout %g is out of range", path, man->dropout,
                   man->attention_dropout);
  for (int i = 0; i < man->n_records; i++) AX_TRY(check_record(path, man, &man->records[i]));
  return AX_OK;
}

static int read_text(const char *path, char **text, size_t *len) {
  AxFile f;
  AX_TRY(ax_file_open_read(&f, path));
  *len = (size_t)f.size;
  *text = ax_malloc(*len + 1);
  int rc = *text ? ax_file_read(&f, *text, *len, "the manifest") : AX_ERR;
  ax_file_close(&f);
  if (rc == AX_OK) (*text)[*len] = 0;
  return rc;
}

static int parse_manifest(const char *path, char *text, size_t len, AxCkptManifest *man) {
  char *crc_line = len >= 13 ? text + len - 13 : NULL;
  unsigned want;
  if (!crc_line || sscanf(crc_line, "crc %8x\n", &want) != 1)
    return AX_FAIL("%s: no CRC line (incomplete)", path);
  if (ax_crc32(0, text, len - 13) != want) return AX_FAIL("%s: CRC mismatch (corrupt)", path);
  *crc_line = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
    if (!parse_line(man, line)) return AX_FAIL("%s: unreadable line '%s'", path, line);
  if (man->n_files < 1 || man->n_records < 1 || man->stages != man->n_files)
    return AX_FAIL("%s: lists %d file(s) for %d stage(s)", path, man->n_files, man->stages);
  return check_fields(path, man);
}

int ax_ckpt_check_file(const char *step_dir, const AxCkptFile *cf) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", step_dir, cf->name);
  AxFile f;
  AX_TRY(ax_file_open_read(&f, path));
  int rc = AX_OK;
  if ((unsigned long long)f.size != cf->bytes + 4)
    rc = AX_FAIL("%s: %lld bytes, the manifest says %llu", path, f.size, cf->bytes + 4);
  uint32_t crc = 0, stored = 0;
  char buf[1 << 16];
  for (unsigned long long left = cf->bytes; rc == AX_OK && left;) {
    size_t n = left < sizeof buf ? (size_t)left : sizeof buf;
    rc = ax_file_read(&f, buf, n, "checkpoint data");
    crc = ax_crc32(crc, buf, n);
    left -= n;
  }
  if (rc == AX_OK) rc = ax_file_read(&f, &stored, sizeof stored, "the CRC trailer");
  if (rc == AX_OK && (crc != cf->crc || stored != cf->crc))
    rc = AX_FAIL("%s: CRC mismatch (corrupt)", path);
  ax_file_close(&f);
  return rc;
}

int ax_ckpt_load_manifest(const char *step_dir, int check_files, AxCkptManifest *man) {
  memset(man, 0, sizeof *man);
  man->step = -1; /* a manifest without its step line is out of range */
  char path[1100], *text = NULL;
  size_t len;
  snprintf(path, sizeof path, "%s/manifest", step_dir);
  int rc = read_text(path, &text, &len);
  if (rc == AX_OK) rc = parse_manifest(path, text, len, man);
  free(text);
  for (int i = 0; rc == AX_OK && check_files && i < man->n_files; i++)
    rc = ax_ckpt_check_file(step_dir, &man->files[i]);
  for (int i = 0; rc == AX_OK && check_files && i < man->n_states; i++)
    rc = ax_ckpt_check_file(step_dir, &man->states[i]);
  if (rc != AX_OK) ax_ckpt_manifest_free(man);
  return rc;
}

void ax_ckpt_manifest_free(AxCkptManifest *man) {
  free(man->files);
  free(man->states);
  free(man->records);
  memset(man, 0, sizeof *man);
}

/* ------------------------------------------------------------------ finding and pruning */

/* Steps of the step-N directories under dir, newest first. */
static int list_steps(const char *dir, int **steps, int *n) {
  *steps = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? AX_OK : AX_FAIL("cannot read %s: %s", dir, strerror(errno));
  struct dirent *e;
  int cap = 0;
  while ((e = readdir(d))) {
    int step;
    char extra;
    if (sscanf(e->d_name, "step-%d%c", &step, &extra) != 1) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      int *s = realloc(*steps, (size_t)cap * sizeof *s);
      if (!s) break;
      *steps = s;
    }
    (*steps)[(*n)++] = step;
  }
  closedir(d);
  for (int i = 1; i < *n; i++) /* insertion sort, descending */
    for (int j = i; j > 0 && (*steps)[j] > (*steps)[j - 1]; j--) {
      int t = (*steps)[j];
      (*steps)[j] = (*steps)[j - 1];
      (*steps)[j - 1] = t;
    }
  return AX_OK;
}

int ax_ckpt_find_latest(const char *dir, int *found, char *step_dir, AxCkptManifest *man) {
  int *steps, n;
  *found = 0;
  AX_TRY(list_steps(dir, &steps, &n));
  for (int i = 0; i < n && !*found; i++) {
    ax_ckpt_step_dir(dir, steps[i], step_dir);
    if (ax_ckpt_load_manifest(step_dir, 1, man) == AX_OK) {
      *found = 1;
    } else {
      ax_warn("checkpoint %s is incomplete or corrupt, skipping it: %s", step_dir,
              ax_error_message());
      ax_error_clear();
    }
  }
  free(steps);
  return AX_OK;
}

static void remove_step_dir(const char *path) {
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  char file[1400];
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      snprintf(file, sizeof file, "%s/%s", path, e->d_name);
      unlink(file);
    }
  closedir(d);
  rmdir(path);
}

/* A step directory with a valid manifest (its files are written before it). */
static int has_manifest(const char *step_dir) {
  AxCkptManifest man;
  int ok = ax_ckpt_load_manifest(step_dir, 0, &man) == AX_OK;
  if (ok)
    ax_ckpt_manifest_free(&man);
  else
    ax_error_clear();
  return ok;
}

int ax_ckpt_prune(const char *dir, int keep, int just_written) {
  int *steps, n, kept = 1; /* just_written */
  AX_TRY(list_steps(dir, &steps, &n));
  char path[STEP_DIR_CAP];
  for (int i = 0; i < n; i++) { /* newest first */
    if (steps[i] >= just_written) continue; /* it, and newer ones this run did not write */
    ax_ckpt_step_dir(dir, steps[i], path);
    if (!has_manifest(path) || ++kept > keep) remove_step_dir(path);
  }
  free(steps);
  return AX_OK;
}

/* ------------------------------------------------------------------ reading a stage */

static int read_span(const char *step_dir, const AxCkptManifest *man, const AxCkptRecord *r,
                     size_t skip, size_t count, float *const dst[3]) {
  char path[1100];
  snprintf(path, sizeof path, "%s/%s", step_dir, man->files[r->file].name);
  AxFile f;
  AX_TRY(ax_file_open_read(&f, path));
  int rc = AX_OK;
  for (int a = 0; a < 3 && rc == AX_OK; a++) {
    if (!dst[a]) continue;
    rc = ax_file_seek(&f, (long long)(r->offset + a * r->stride + skip * sizeof(float)));
    if (rc == AX_OK) rc = ax_file_read(&f, dst[a], count * sizeof(float), ax_param_name(r->id));
  }
  ax_file_close(&f);
  return rc;
}

/* One tensor of the stage: every record of it that overlaps the stage's layers. */
/* The layers [a, b) of record r a stage of layout lay reads (non-layer tensors: 0..1); 0 when
 * it reads none of them. */
static int record_overlap(const AxCkptRecord *r, const AxStageLayout *lay, int *a, int *b) {
  int layer = ax_param_is_layer(r->id);
  *a = layer ? (r->l0 > lay->l0 ? r->l0 : lay->l0) : 0;
  *b = layer ? (r->l1 < lay->l1 ? r->l1 : lay->l1) : 1;
  return *a < *b;
}

void ax_ckpt_stage_files(const AxCkptManifest *man, const AxStageLayout *lay,
                         unsigned char *needed) {
  for (int i = 0; i < man->n_records; i++) {
    const AxCkptRecord *r = &man->records[i];
    int a, b;
    if (r->id < 0 || r->id >= AX_N_PARAMS || !lay->has[r->id] || r->file < 0 ||
        r->file >= man->n_files)
      continue;
    if (record_overlap(r, lay, &a, &b)) needed[r->file] = 1;
  }
}

static int read_tensor(const char *step_dir, const AxCkptManifest *man,
                       const AxStageLayout *lay, int id, float *const arrays[3]) {
  int layer = ax_param_is_layer(id);
  size_t per = layer ? ax_param_per_layer(&man->model, id) : lay->count[id], covered = 0;
  for (int i = 0; i < man->n_records; i++) {
    const AxCkptRecord *r = &man->records[i];
    if (r->id != id || r->file < 0 || r->file >= man->n_files) continue;
    int a, b;
    if (!record_overlap(r, lay, &a, &b)) continue;
    if (!layer && r->count != lay->count[id])
      return AX_FAIL("checkpoint record %s has %llu elements, the model needs %zu",
                     ax_param_name(id), r->count, lay->count[id]);
    size_t dst_off = lay->offset[id] + (size_t)(layer ? a - lay->l0 : 0) * per;
    float *const dst[3] = {arrays[0] + dst_off, arrays[1] ? arrays[1] + dst_off : NULL,
                           arrays[2] ? arrays[2] + dst_off : NULL};
    AX_TRY(read_span(step_dir, man, r, (size_t)(layer ? a - r->l0 : 0) * per,
                     (size_t)(b - a) * per, dst));
    covered += (size_t)(b - a) * per;
  }
  if (covered != lay->count[id])
    return AX_FAIL("checkpoint %s lacks part of %s (%zu of %zu elements)", step_dir,
                   ax_param_name(id), covered, lay->count[id]);
  return AX_OK;
}

int ax_ckpt_read_stage(const char *step_dir, const AxCkptManifest *man,
                       const AxStageLayout *lay, float *master, float *am, float *av) {
  float *const arrays[3] = {master, am, av};
  for (int id = 0; id < AX_N_PARAMS; id++)
    if (lay->has[id]) AX_TRY(read_tensor(step_dir, man, lay, id, arrays));
  return AX_OK;
}
