/* tp_comm.h — the communication interface tensor-parallel layers are given, as they are given
 * the device backend: collectives over the X, Y or Z group of a Gx x Gy x Gz grid, blocking
 * (req == NULL) or started now and finished by wait (req != NULL). Buffers hold the layers'
 * compute type (AxTpComm.type: activations, weights and their gradients; fp32, bf16 or fp16)
 * or, in the _f32 calls, fp32 row statistics. 16-bit sums are formed in fp32 and rounded to
 * nearest even at each step, as the data-parallel sum's bf16 payloads are. Model code
 * never calls MPI; mpi/coll/tp_mpi.h implements this over axonn's own collectives (the interface
 * lives in core, below both). A group of size 1 is never communicated on.
 *
 * The buffers are the layers' own: in the memory of the backend they compute on, which may be a
 * device's (the implementation stages them through host memory or hands them to a CUDA-aware
 * MPI; the caller's kernels that wrote them need not have finished, and those that read a
 * result are issued after its wait).
 *
 * Every rank of a group must issue the same operations on it in the same order. Buffers stay
 * untouched until the operation is waited for. Every function returns AX_OK or AX_ERR with the
 * error recorded (src/core/error.h). */
#ifndef AX_TP_COMM_H
#define AX_TP_COMM_H

#include <stddef.h>

typedef enum { AX_TP_X = 0, AX_TP_Y = 1, AX_TP_Z = 2 } AxTpGroup;
/* Element types, numbered as backend.h's AxDType. */
typedef enum { AX_TP_F32 = 0, AX_TP_BF16 = 1, AX_TP_F16 = 2 } AxTpType;

static inline size_t ax_tp_type_size(AxTpType t) { return t == AX_TP_F32 ? 4 : 2; }

typedef struct AxTpReq AxTpReq; /* one started operation */
typedef struct AxTpComm AxTpComm;

typedef struct {
  /* in-place sum of n elements of type t over the group */
  int (*all_reduce)(AxTpComm *c, AxTpGroup g, void *buf, size_t n, AxTpType t, AxTpReq **req);
  /* recv = the group's send blocks of n elements each, in group-rank order */
  int (*all_gather)(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                    AxTpType t, AxTpReq **req);
  /* send holds group-size blocks of n elements; recv = block (own rank) summed over the group */
  int (*reduce_scatter)(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                        AxTpType t, AxTpReq **req);
  int (*wait)(AxTpComm *c, AxTpReq *req); /* finishes and frees req; NULL is a no-op */
  /* A GEMM of a layer begins: counts the started collectives not yet waited for. */
  void (*note_gemm)(AxTpComm *c);
  /* Drives every started collective on without blocking (between chunks of compute). */
  int (*progress)(AxTpComm *c);
  /* dst = src, `bytes` in the buffers' memory (a gather over a group of one); NULL: memcpy */
  int (*local_copy)(AxTpComm *c, void *dst, const void *src, size_t bytes);
  /* on = 1: the collectives started until ahead(c, 0) are prefetches started ahead of the
   * compute that needs them (a step's first weights), counted apart. */
  void (*ahead)(AxTpComm *c, int on);
} AxTpCommOps;

struct AxTpComm {
  const AxTpCommOps *ops; /* NULL when every group has size 1 */
  int size[3];            /* Gx, Gy, Gz */
  int coord[3];           /* x, y, z of this rank */
  AxTpType type;          /* the layers' compute type (0, fp32, unless the implementation is
                           * told otherwise) */
  void *impl;
};

static inline int ax_tp_size(const AxTpComm *c, AxTpGroup g) { return c->size[g]; }
static inline int ax_tp_coord(const AxTpComm *c, AxTpGroup g) { return c->coord[g]; }

/* The operations through the table on n elements of the compute type (c->type), doing nothing
 * on a group of one (*req = NULL then). */
int ax_tp_all_reduce(AxTpComm *c, AxTpGroup g, void *buf, size_t n, AxTpReq **req);
int ax_tp_all_gather(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                     AxTpReq **req);
int ax_tp_reduce_scatter(AxTpComm *c, AxTpGroup g, const void *send, void *recv, size_t n,
                         AxTpReq **req);
/* The same on fp32 statistics (LayerNorm's row sums, the cross-entropy's maxima and sums). */
int ax_tp_all_reduce_f32(AxTpComm *c, AxTpGroup g, float *buf, size_t n, AxTpReq **req);
int ax_tp_all_gather_f32(AxTpComm *c, AxTpGroup g, const float *send, float *recv, size_t n,
                         AxTpReq **req);
int ax_tp_wait(AxTpComm *c, AxTpReq *req);
/* The compute's points of contact (no-ops without communication): a GEMM begins; a chunk of
 * compute ended, so started collectives may move on. */
void ax_tp_note_gemm(AxTpComm *c);
int ax_tp_progress(AxTpComm *c);
/* Brackets collectives started ahead of the step's compute (on = 1, then 0). */
void ax_tp_note_ahead(AxTpComm *c, int on);

#endif
