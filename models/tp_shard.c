/* tp_shard.c — the shard layout and the copy between whole tensors and shards; see
 * tp_shard.h. */
#include "tp_shard.h"

#include <string.h>

#include "src/core/crc32.h"
#include "src/core/error.h"
#include "tp_block.h"

int ax_tp_stage_check(const AxGptConfig *c, const AxTpComm *tp, int B) {
  AxBlockDims d = {B, 1, c->channels, c->heads};
  AX_TRY(ax_tp_block_check(tp, &d));
  int Gx = tp->size[AX_TP_X], Gz = tp->size[AX_TP_Z];
  if (c->padded_vocab % (Gx * Gz))
    return AX_FAIL("--gx %d x --gz %d does not divide the %d rows of the padded vocabulary", Gx,
                   Gz, c->padded_vocab);
  return AX_OK;
}

/* One shard as rows of a whole tensor: shard row r is whole row row0 + r (or, for qkv,
 * ax_tp_qkv_row(qkv_base + r)), columns [col0, col0 + cols) of rows of ld elements. */
typedef struct {
  int rows, cols, ld, col0;
  int row0;
  int qkv_base; /* -1: rows are consecutive */
} Runs;

static Runs runs_of(const AxGptConfig *c, const AxTpComm *tp, int id) {
  const int C = c->channels, Gx = tp->size[AX_TP_X], Gy = tp->size[AX_TP_Y];
  const int Gz = tp->size[AX_TP_Z], x = tp->coord[AX_TP_X], y = tp->coord[AX_TP_Y];
  const int z = tp->coord[AX_TP_Z], Cx = C / Gx, Cy = C / Gy;
  switch (id) {
  case AX_P_QKVW: return (Runs){3 * Cx / Gz, Cy, C, y * Cy, 0, z * (3 * Cx / Gz)};
  case AX_P_QKVB: return (Runs){3 * Cx, 1, 1, 0, 0, 0};
  case AX_P_ATTPROJW: return (Runs){Cy / Gz, Cx, C, x * Cx, y * Cy + z * (Cy / Gz), -1};
  case AX_P_FCW: return (Runs){4 * Cx / Gz, Cy, C, y * Cy, 4 * x * Cx + z * (4 * Cx / Gz), -1};
  case AX_P_FCPROJW: return (Runs){Cy / Gz, 4 * Cx, 4 * C, 4 * x * Cx, y * Cy + z * (Cy / Gz), -1};
  case AX_P_FCB: return (Runs){1, 4 * Cx, 4 * C, 4 * x * Cx, 0, -1};
  case AX_P_WTE: {
    int vr = c->padded_vocab / Gx / Gz;
    return (Runs){vr, Cy, C, y * Cy, x * (c->padded_vocab / Gx) + z * vr, -1};
  }
  case AX_P_WPE: return (Runs){c->max_seq, Cy, C, y * Cy, 0, -1};
  default: return (Runs){1, Cy, C, y * Cy, 0, -1}; /* ln*, attprojb, fcprojb, lnf* */
  }
}

static size_t runs_elems(const Runs *r) { return (size_t)r->rows * (size_t)r->cols; }

void ax_tp_stage_layout(AxStageLayout *s, const AxGptConfig *c, int l0, int l1, int first,
                        int last, const AxTpComm *tp) {
  ax_stage_layout(s, c, l0, l1, first, last);
  size_t off = 0;
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!s->has[id]) continue;
    Runs r = runs_of(c, tp, id);
    s->offset[id] = off;
    s->count[id] = runs_elems(&r) * (ax_param_is_layer(id) ? (size_t)(l1 - l0) : 1);
    if (s->cols[id]) s->cols[id] = (size_t)r.cols; /* a matrix's shard rows */
    for (int g = 0; g < 3; g++)
      if (tp->size[g] > 1) s->replicas[id] |= ax_tp_param_replicas(id) & (1u << g);
    off += s->count[id];
  }
  s->total = off;
}

/* Copies one slice (a layer's part of a layer tensor, or a whole other tensor). */
static void copy_slice(const AxTpComm *tp, int C, const Runs *r, float *whole, float *shard,
                       AxTpCopyDir dir) {
  size_t bytes = (size_t)r->cols * sizeof(float);
  for (int i = 0; i < r->rows; i++) {
    int row = r->qkv_base < 0 ? r->row0 + i : ax_tp_qkv_row(tp, C, r->qkv_base + i);
    float *w = whole + (size_t)row * (size_t)r->ld + (size_t)r->col0;
    float *s = shard + (size_t)i * (size_t)r->cols;
    if (dir == AX_TP_EXTRACT)
      memcpy(s, w, bytes);
    else
      memcpy(w, s, bytes);
  }
}

void ax_tp_shard_copy(const AxGptConfig *c, const AxStageLayout *whole,
                      const AxStageLayout *mine, const AxTpComm *tp, float *whole_buf,
                      float *shard_buf, AxTpCopyDir dir) {
  for (int id = 0; id < AX_N_PARAMS; id++) {
    if (!mine->has[id]) continue;
    Runs r = runs_of(c, tp, id);
    int layers = ax_param_is_layer(id) ? mine->l1 - mine->l0 : 1;
    size_t per_whole = ax_param_is_layer(id) ? ax_param_per_layer(c, id) : 0;
    for (int l = 0; l < layers; l++)
      copy_slice(tp, c->channels, &r, whole_buf + whole->offset[id] + (size_t)l * per_whole,
                 shard_buf + mine->offset[id] + (size_t)l * runs_elems(&r), dir);
  }
}

unsigned ax_tp_param_replicas(int id) {
  const unsigned X = 1u << AX_TP_X, Y = 1u << AX_TP_Y, Z = 1u << AX_TP_Z;
  switch (id) {
  case AX_P_WTE: case AX_P_QKVW: case AX_P_ATTPROJW: case AX_P_FCW: case AX_P_FCPROJW: return 0;
  case AX_P_QKVB: case AX_P_FCB: return Y | Z;
  default: return X | Z; /* wpe, LayerNorms, attprojb, fcprojb, lnf */
  }
}

int ax_tp_param_counted(const AxTpComm *tp, int id) {
  unsigned rep = ax_tp_param_replicas(id);
  for (int g = 0; g < 3; g++)
    if ((rep >> g & 1u) && tp->coord[g] != 0) return 0;
  return 1;
}

void ax_tp_replica_crcs(const AxStageLayout *lay, const float *buf, uint32_t crc[AX_N_PARAMS]) {
  for (int id = 0; id < AX_N_PARAMS; id++)
    if (lay->has[id] && ax_tp_param_replicas(id))
      crc[id] = ax_crc32(crc[id], buf + lay->offset[id], lay->count[id] * sizeof *buf);
}
