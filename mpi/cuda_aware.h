/* cuda_aware.h — whether the MPI library can take CUDA device pointers (CUDA-aware MPI),
 * decided at run time, with a one-line reason for the run log; and from that whether the
 * pipeline's p2p engine hands MPI device buffers (mpi/link/p2p.h), and --optimizer device its
 * fp32 gradients' sums (offload/device_opt.h). Without it, pipeline messages go through pinned
 * host buffers (the staged path), and so do those gradients; the host optimizer's always do (it
 * works on them in host memory, offload/).
 *
 * Order of evidence: the option (forced off/on); the library's own query when it has one and
 * MPI is initialized (Open MPI's MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support; Open
 * MPI's mpi_built_with_cuda_support control variable); then the first of these environment
 * settings that is set to a clear yes/no (1/0, true/false, yes/no, on/off):
 *   MPICH_GPU_SUPPORT_ENABLED      Cray MPICH
 *   MPIR_CVAR_ENABLE_GPU           MPICH 4
 *   OMPI_MCA_pml_pami_enable_cuda  IBM Spectrum MPI (set by mpirun -gpu / jsrun --smpiargs=-gpu)
 *   OMPI_MCA_opal_cuda_support     Open MPI
 *   MV2_USE_CUDA                   MVAPICH2
 * and otherwise "not CUDA-aware". Nothing here touches CUDA. */
#ifndef AX_CUDA_AWARE_H
#define AX_CUDA_AWARE_H

#include <stddef.h>

/* forced: 0 auto, 1 off, 2 on (the choice index of --cuda-aware-mpi auto|0|1).
 * Returns 1 when device buffers may be handed to MPI, else 0; `why` (may be NULL) gets one
 * line, truncated to cap - 1 characters. */
int ax_cuda_aware_mpi(int forced, char *why, size_t cap);

/* Whether the p2p engine sends from and receives into device buffers
 * (AxP2PConfig.device_buffers), for --cuda-aware-mpi `forced` (as above) on a backend whose
 * memory is host memory or not (AxBackend.is_host): forced on, always (on the CPU backend too,
 * which tests the path without a GPU: its device memory is host memory); forced off, never;
 * auto, when the backend's memory is not host memory and ax_cuda_aware_mpi detects support.
 * `why` as above. */
int ax_mpi_device_buffers(int forced, int device_is_host, char *why, size_t cap);

#endif
