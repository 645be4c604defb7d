/* tp_comm.c — dispatch of the tensor-parallel communication interface; see tp_comm.h. */
#include "tp_comm.h"

#include <string.h>

#include "error.h"

static int trivial(const AxTpComm *c, AxTpGroup g, AxTpReq **req) {
  if (req) *req = NULL;
  return c->size[g] == 1;
}

/* A gather or reduce-scatter over one rank: recv is send (copied where the buffers live). */
static int copy_alone(AxTpComm *c, const void *send, void *recv, size_t bytes) {
  if (send == recv) return AX_OK;
  if (c->ops && c->ops->local_copy) return c->ops->local_copy(c, recv, send, bytes);
  memcpy(recv, send, bytes);
  return AX_OK;
}

static int all_reduce(AxTpComm *c, AxTpGroup g, void *buf, size_t n, AxTpType t, AxTpReq **req) {
  if (trivial(c, g, req)) return AX_OK;
  return c->ops->all_reduce(c, g, buf, n, t, req);
}

static int all_gather(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                      AxTpType t, AxTpReq **req) {
  if (trivial(c, g, req)) return copy_alone(c, send, recv, n * ax_tp_type_size(t));
  return c->ops->all_gather(c, g, send, recv, n, t, req);
}

int ax_tp_all_reduce(AxTpComm *c, AxTpGroup g, void *buf, size_t n, AxTpReq **req) {
  return all_reduce(c, g, buf, n, c->type, req);
}

int ax_tp_all_gather(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                     AxTpReq **req) {
  return all_gather(c, g, send, recv, n, c->type, req);
}

int ax_tp_all_reduce_f32(AxTpComm *c, AxTpGroup g, float *buf, size_t n, AxTpReq **req) {
  return all_reduce(c, g, buf, n, AX_TP_F32, req);
}

int ax_tp_all_gather_f32(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                         AxTpReq **req) {
  return all_gather(c, g, send, recv, n, AX_TP_F32, req);
}

int ax_tp_reduce_scatter(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                         AxTpReq **req) {
  if (trivial(c, g, req)) return copy_alone(c, send, recv, n * ax_tp_type_size(c->type));
  return c->ops->reduce_scatter(c, g, send, recv, n, c->type, req);
}

int ax_tp_wait(AxTpComm *c, AxTpReq *req) { return req ? c->ops->wait(c, req) : AX_OK; }

void ax_tp_note_gemm(AxTpComm *c) {
  if (c->ops && c->ops->note_gemm) c->ops->note_gemm(c);
}

int ax_tp_progress(AxTpComm *c) {
  return c->ops && c->ops->progress ? c->ops->progress(c) : AX_OK;
}

void ax_tp_note_ahead(AxTpComm *c, int on) {
  if (c->ops && c->ops->ahead) c->ops->ahead(c, on);
}
