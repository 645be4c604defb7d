/* tp_mpi.h — the tensor-parallel communication interface (src/core/tp_comm.h) over the grid's
 * X, Y and Z communicators and axonn's own collectives (collectives.h), counting every byte sent
 * per group and operation, and as tensor-parallel traffic in the grid's counters.
 *
 * Where the buffers live (ax_tp_mpi_bind): in host memory (no backend bound, or one whose
 * memory is host memory: the CPU backend), the collectives read and write them in place. In a
 * device's memory, each operation is host-staged: its input is copied down into pinned host
 * buffers (kept in a pool for reuse) once the compute stream has written it, the collective
 * runs on them, and its result is copied back up when it is waited for. With CUDA-aware MPI
 * (device_buffers) the all-reduces instead hand the device buffers to MPI's own all-reduce
 * (MPI_Iallreduce; our ring adds on the host, which cannot read device memory), unless the
 * link is emulated (MPI's collectives cannot be); gathers and reduce-scatters stay staged.
 * The layers' buffers hold the bound backend's compute type (fp32 before any bind): bf16 and
 * fp16 travel as such, summed in fp32 and rounded at each step (AX_COMM_BF16, AX_COMM_F16) by
 * our ring, staged also under CUDA-aware MPI (its all-reduce would run our 16-bit sum, a
 * user-defined operation, on device pointers); the fp32 row statistics go direct there. */
#ifndef AX_MPI_TP_MPI_H
#define AX_MPI_TP_MPI_H

#include "collectives.h"
#include "mpi/grid.h"
#include "src/backend/backend.h"
#include "src/core/tp_comm.h"

typedef enum { AX_TP_OP_ALLREDUCE = 0, AX_TP_OP_ALLGATHER, AX_TP_OP_REDUCE_SCATTER, AX_TP_OPS } AxTpOp;

/* What this rank's collectives moved and waited, per group (X, Y, Z) and operation. */
typedef struct {
  AxCommBytes bytes[3][AX_TP_OPS]; /* payload bytes sent and received */
  unsigned long long calls[3][AX_TP_OPS];
  double wait_s[3]; /* seconds blocked finishing the group's collectives (not overlapped) */
  /* The overlaps' evidence (deterministic counts, not times), per operation over all groups */
  unsigned long long started[AX_TP_OPS]; /* started with a request: left running (overlapped) */
  unsigned long long started_ahead[AX_TP_OPS]; /* of those, prefetches started ahead of the
                                                * step's compute (the first weights, OAG) */
  unsigned long long gemms;              /* GEMMs the layers began */
  unsigned long long in_flight_at_gemm[AX_TP_OPS]; /* over those GEMMs: started, not waited */
  unsigned long long progress_calls;     /* progress calls made with a collective in flight */
  /* bytes copied between device and host memory to stage the collectives (device backends) */
  unsigned long long staged_down, staged_up;
} AxTpStats;

typedef struct AxTpStage AxTpStage; /* one pinned host buffer of the staging pool */

typedef struct {
  AxTpComm comm;         /* hand &comm to the layers */
  const AxGrid *grid;    /* must outlive this */
  AxCommConfig cc;       /* the grid's configuration, counting as tensor-parallel traffic */
  AxTpStats stats;
  AxTpReq *in_flight;          /* the started collectives not yet waited for, newest first */
  int n_in_flight[AX_TP_OPS];  /* how many of them per operation */
  AxBackend *be;               /* the buffers' backend; NULL: host memory */
  int on_device;               /* 1: the buffers are in device memory (staged or CUDA-aware) */
  int device_all_reduce;       /* 1: all-reduces on device buffers through CUDA-aware MPI */
  AxTpStage *pool;             /* the staging buffers, busy or free */
  int n_pool, cap_pool;
  int ahead;                   /* starting prefetches ahead of the compute (ahead(c, 1)) */
} AxTpMpi;

/* Binds t to the grid's tensor-parallel communicators (grid->comm_cfg is copied now); its
 * buffers are in host memory until ax_tp_mpi_bind says otherwise. */
void ax_tp_mpi_init(AxTpMpi *t, const AxGrid *grid);
/* The buffers are in be's memory, of its compute type (where that memory is host memory, the
 * collectives read them in place); device_buffers: MPI takes device pointers
 * (mpi/cuda_aware.h). be must outlive t's use; call ax_tp_mpi_release before destroying it. */
void ax_tp_mpi_bind(AxTpMpi *t, AxBackend *be, int device_buffers);
/* Frees the staging pool (no collective may be in flight). */
void ax_tp_mpi_release(AxTpMpi *t);
/* One line for the run log: where the collectives' buffers are and how they reach MPI. */
const char *ax_tp_mpi_describe(const AxTpMpi *t);
const char *ax_tp_op_name(AxTpOp op);
/* sum += now - before, field by field (what a step added). */
void ax_tp_stats_add_delta(AxTpStats *sum, const AxTpStats *now, const AxTpStats *before);

#endif
