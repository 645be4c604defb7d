/* mpi_util.h — checked MPI calls and waiting. AX_MPI(call) turns an MPI failure into a
 * recorded error with the MPI error string, file, line and rank. Waiting goes through
 * ax_mpi_wait, ax_mpi_waitall and ax_mpi_waitany, which take the caller's AxCommConfig
 * (comm_config.h): in polite mode (ranks outnumber the CPUs they run on) they poll with
 * MPI_Test and yield the CPU between polls so oversubscribed runs progress; otherwise they are
 * MPI's own waits. Nothing here is process-wide: the mode is the caller's. */
#ifndef AX_MPI_UTIL_H
#define AX_MPI_UTIL_H

#include <mpi.h>

#include "comm_config.h"
#include "src/core/error.h"

int ax_mpi_fail_at(int code, const char *call, const char *file, int line);
#define AX_MPI(call)                                                                             \
  do {                                                                                           \
    int ax_mpi_rc_ = (call);                                                                     \
    if (ax_mpi_rc_ != MPI_SUCCESS) return ax_mpi_fail_at(ax_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)

/* Where this rank sits on its node (MPI_COMM_TYPE_SHARED): its index among the node's ranks
 * and their number (which GPU it takes), and its index among those that started with the
 * same CPU affinity set and their number (which cores it binds: the launcher's binding, or
 * all of the node's ranks when it bound none). */
typedef struct {
  int local_rank, local_size;
  int share_rank, share_size;
} AxNodeRanks;
/* Collective over comm; call it before binding anything. */
int ax_mpi_node_ranks(MPI_Comm comm, AxNodeRanks *out);
/* Whether this rank should wait politely (AxCommConfig.polite): 1 when the ranks of this node
 * that share this rank's CPU set outnumber its CPUs (with no launcher binding: the node's ranks
 * and CPUs), or when AXONN_POLITE_WAIT=1 (=0 forces 0). Collective over comm. */
int ax_mpi_auto_polite(MPI_Comm comm);
/* The same for a caller that already knows its share_size (ax_mpi_node_ranks). */
int ax_mpi_polite_for(int share_size);

/* cc: the caller's configuration (NULL: busy waiting). */
int ax_mpi_wait(const AxCommConfig *cc, MPI_Request *req, MPI_Status *status);
int ax_mpi_waitall(const AxCommConfig *cc, int n, MPI_Request *reqs);
/* Waits until one of reqs completes; *index gets it (MPI_UNDEFINED if all are null). */
int ax_mpi_waitany(const AxCommConfig *cc, int n, MPI_Request *reqs, int *index,
                   MPI_Status *status);
/* Blocking send/receive of any number of floats (split into messages under 2^31 bytes). */
int ax_mpi_send_floats(const float *buf, size_t n, int dest, int tag, MPI_Comm comm);
int ax_mpi_recv_floats(const AxCommConfig *cc, float *buf, size_t n, int src, int tag,
                       MPI_Comm comm);

/* Rank 0's all[r] = rank r's `bytes` bytes at mine (all: only rank 0's is written; comm
 * MPI_COMM_NULL or of one rank: a copy). Collective over comm. */
/* Collective over comm, whose ranks share memory: `bytes` that comm's rank 0 allocates and
 * every rank maps (MPI_Win_allocate_shared), 8-byte aligned, at *base; free with MPI_Win_free.
 * `what` names it in the error. Its contents are for the caller to initialize. */
int ax_mpi_shared_segment(MPI_Comm comm, MPI_Aint bytes, const char *what, MPI_Win *win,
                          char **base);
int ax_mpi_gather_bytes(MPI_Comm comm, const void *mine, size_t bytes, void *all);

/* Agreement after a phase that may fail on some ranks only (collective over comm): every
 * rank passes its status and all learn whether any failed; the lowest failing rank's message
 * is forwarded to rank 0, which prints it with that rank named. AX_OK when all succeeded. */
int ax_mpi_agree(MPI_Comm comm, int status);
/* The same, waiting for the others with cc's manners (a rank that yields while it waits lets
 * an oversubscribed node's other ranks reach the agreement sooner). */
int ax_mpi_agree_as(const AxCommConfig *cc, MPI_Comm comm, int status);

/* One polling pause: a yield in polite mode, a CPU pause otherwise (cc NULL: busy). */
void ax_mpi_relax(const AxCommConfig *cc);

#endif
