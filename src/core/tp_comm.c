/* tp_comm.c — dispatch of the tensor-parallel communication interface; see tp_comm.h. */
#include "tp_comm.h"

#include <string.h>

#include "error.h"

void ax_tp_comm_solo(AxTpComm *c) {
  memset(c, 0, sizeof *c);
  for (int d = 0; d < 3; d++) c->size[d] = 1;
}

static int trivial(const AxTpComm *c, AxTpGroup g, AxTpReq **req) {
  if (req) *req = NULL;
  return c->size[g] == 1;
}

int ax_tp_all_reduce(AxTpComm *c, AxTpGroup g, float *buf, size_t n, AxTpReq **req) {
  if (trivial(c, g, req)) return AX_OK;
  return c->ops->all_reduce(c, g, buf, n, req);
}

int ax_tp_all_gather(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                     AxTpReq **req) {
  if (trivial(c, g, req)) {
    if (send != recv) memcpy(recv, send, n * sizeof *recv);
    return AX_OK;
  }
  return c->ops->all_gather(c, g, send, recv, n, req);
}

int ax_tp_reduce_scatter(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                         AxTpReq **req) {
  if (trivial(c, g, req)) {
    if (send != recv) memcpy(recv, send, n * sizeof *recv);
    return AX_OK;
  }
  return c->ops->reduce_scatter(c, g, send, recv, n, req);
}

int ax_tp_wait(AxTpComm *c, AxTpReq *req) { return req ? c->ops->wait(c, req) : AX_OK; }
