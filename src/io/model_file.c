/* model_file.c — llm.c fp32 model files, and Hugging Face GPT-2 directories read through the
 * same calls (hf_gpt2.h); see model_file.h. */
#include "model_file.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hf_gpt2.h"
#include "src/core/error.h"
#include "src/core/fileio.h"

enum { HEADER_INTS = 256 };

static int parse_header(const char *path, const int32_t *h, long long file_size,
                        AxGptConfig *cfg) {
  if (h[0] != AX_MODEL_MAGIC)
    return AX_FAIL("%s: bad magic %d (expected %d): not an llm.c model file", path, h[0],
                   AX_MODEL_MAGIC);
  if (h[1] != AX_MODEL_VERSION_F32)
    return AX_FAIL("%s: model file version %d is not supported (expected %d, fp32)%s", path,
                   h[1], AX_MODEL_VERSION_F32, h[1] == 5 ? "; this is a bf16 file" : "");
  *cfg = (AxGptConfig){.max_seq = h[2], .vocab = h[3], .layers = h[4], .heads = h[5],
                       .channels = h[6], .padded_vocab = h[7]};
  if (ax_gpt_config_check(cfg) != AX_OK) return ax_error_context("%s: bad header", path);
  long long expect = (long long)(HEADER_INTS * 4) + (long long)ax_gpt_num_params(cfg) * 4;
  if (file_size != expect)
    return AX_FAIL("%s: size mismatch: the header describes %zu parameters (%lld bytes with "
                   "the header) but the file has %lld bytes", path, ax_gpt_num_params(cfg),
                   expect, file_size);
  return AX_OK;
}

/* A NaN or infinity in a model file would train or sample garbage without a word. */
static int check_finite(const char *path, int id, const float *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isfinite(t[i]))
      return AX_FAIL("%s: tensor %s holds a non-finite value (%g) at element %zu", path,
                     ax_param_name(id), t[i], i);
  return AX_OK;
}

static int open_model(AxFile *f, const char *path, AxGptConfig *cfg) {
  AX_TRY(ax_file_open_read(f, path));
  int32_t h[HEADER_INTS];
  if (ax_file_read(f, h, sizeof h, "model header") != AX_OK ||
      parse_header(path, h, f->size, cfg) != AX_OK) {
    ax_file_close(f);
    return AX_ERR;
  }
  return AX_OK;
}

int ax_model_file_read_config(const char *path, AxGptConfig *cfg) {
  if (ax_hf_gpt2_is(path)) return ax_hf_gpt2_read_config(path, cfg);
  AxFile f;
  AX_TRY(open_model(&f, path, cfg));
  ax_file_close(&f);
  return AX_OK;
}

/* A Hugging Face GPT-2: the whole model read, then the layout's slices copied out. */
static int read_hf_stage(const char *path, const AxGptConfig *cfg, const AxStageLayout *layout,
                         float *dst) {
  float *all = ax_malloc(ax_gpt_num_params(cfg) * sizeof *all);
  if (!all) return AX_ERR;
  int rc = ax_hf_gpt2_read(path, cfg, all);
  for (int id = 0; id < AX_N_PARAMS && rc == AX_OK; id++) {
    if (!layout->has[id]) continue;
    memcpy(dst + layout->offset[id], all + layout->file_offset[id],
           layout->count[id] * sizeof *dst);
    rc = check_finite(path, id, dst + layout->offset[id], layout->count[id]);
  }
  free(all);
  return rc;
}

int ax_model_file_read_stage(const char *path, const AxGptConfig *cfg,
                             const AxStageLayout *layout, float *dst) {
  if (ax_hf_gpt2_is(path)) return read_hf_stage(path, cfg, layout, dst);
  AxFile f;
  AxGptConfig got;
  AX_TRY(open_model(&f, path, &got));
  if (memcmp(&got, cfg, sizeof got) != 0) {
    ax_file_close(&f);
    return AX_FAIL("%s: model dimensions changed while reading", path);
  }
  int rc = AX_OK;
  for (int id = 0; id < AX_N_PARAMS && rc == AX_OK; id++) {
    if (!layout->has[id]) continue;
    long long at = HEADER_INTS * 4 + (long long)layout->file_offset[id] * 4;
    float *t = dst + layout->offset[id];
    rc = ax_file_seek(&f, at);
    if (rc == AX_OK) rc = ax_file_read(&f, t, layout->count[id] * 4, ax_param_name(id));
    if (rc == AX_OK) rc = check_finite(path, id, t, layout->count[id]);
  }
  ax_file_close(&f);
  return rc;
}

/* The piece holding slice [file_off, file_off + n) of tensor id, or NULL. */
static const float *find_slice(const AxStageLayout *layouts, const float *const *pieces, int n,
                               int id, size_t file_off, size_t *avail) {
  for (int i = 0; i < n; i++) {
    const AxStageLayout *s = &layouts[i];
    if (!s->has[id] || file_off < s->file_offset[id] ||
        file_off >= s->file_offset[id] + s->count[id])
      continue;
    *avail = s->file_offset[id] + s->count[id] - file_off;
    return pieces[i] + s->offset[id] + (file_off - s->file_offset[id]);
  }
  return NULL;
}

int ax_model_file_write_stages(const char *path, const AxGptConfig *cfg,
                               const AxStageLayout *layouts, const float *const *pieces,
                               int n_pieces) {
  int32_t h[HEADER_INTS] = {AX_MODEL_MAGIC, AX_MODEL_VERSION_F32, cfg->max_seq, cfg->vocab,
                            cfg->layers, cfg->heads, cfg->channels, cfg->padded_vocab};
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  if (ax_file_write(&f, h, sizeof h) != AX_OK) goto fail;
  size_t file_off = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    size_t end = file_off + ax_param_size(cfg, id);
    while (file_off < end) {
      size_t avail;
      const float *src = find_slice(layouts, pieces, n_pieces, id, file_off, &avail);
      if (!src) {
        AX_FAIL("internal: no stage holds %s at element %zu", ax_param_name(id), file_off);
        goto fail;
      }
      if (avail > end - file_off) avail = end - file_off;
      if (ax_file_write(&f, src, avail * sizeof(float)) != AX_OK) goto fail;
      file_off += avail;
    }
  }
  return ax_file_commit(&f);
fail:
  ax_file_abort(&f);
  return AX_ERR;
}

int ax_model_file_write(const char *path, const AxGptConfig *cfg, const float *params) {
  AxStageLayout whole;
  ax_stage_layout(&whole, cfg, 0, cfg->layers, 1, 1);
  return ax_model_file_write_stages(path, cfg, &whole, &params, 1);
}
