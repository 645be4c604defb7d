/* mpi_util.c — checked MPI calls and (polite) waiting; see mpi_util.h. */
#include "mpi_util.h"

#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/simd.h"
#include "src/core/start_cpus.h"

static int polite(const AxCommConfig *cc) { return cc && cc->polite; }

int ax_mpi_fail_at(int code, const char *call, const char *file, int line) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) len = 0;
  msg[len] = 0;
  return ax_fail_at(file, line, "MPI call failed: %s: %s", call, len ? msg : "unknown error");
}

void ax_mpi_relax(const AxCommConfig *cc) {
  if (polite(cc)) {
    sched_yield();
  } else {
    ax_cpu_relax();
  }
}

int ax_mpi_wait(const AxCommConfig *cc, MPI_Request *req, MPI_Status *status) {
  if (!polite(cc)) {
    AX_MPI(MPI_Wait(req, status ? status : MPI_STATUS_IGNORE));
    return AX_OK;
  }
  for (;;) {
    int done = 0;
    AX_MPI(MPI_Test(req, &done, status ? status : MPI_STATUS_IGNORE));
    if (done) return AX_OK;
    ax_mpi_relax(cc);
  }
}

int ax_mpi_waitall(const AxCommConfig *cc, int n, MPI_Request *reqs) {
  for (int i = 0; i < n; i++) AX_TRY(ax_mpi_wait(cc, &reqs[i], NULL));
  return AX_OK;
}

int ax_mpi_waitany(const AxCommConfig *cc, int n, MPI_Request *reqs, int *index,
                   MPI_Status *status) {
  if (!polite(cc)) {
    AX_MPI(MPI_Waitany(n, reqs, index, status ? status : MPI_STATUS_IGNORE));
    return AX_OK;
  }
  for (;;) {
    int done = 0;
    AX_MPI(MPI_Testany(n, reqs, index, &done, status ? status : MPI_STATUS_IGNORE));
    if (done) return AX_OK; /* also when every request is null: index = MPI_UNDEFINED */
    ax_mpi_relax(cc);
  }
}

/* The CPU set this rank started with (unknown: empty, all alike), not our binding since. */
static cpu_set_t my_cpus(void) {
  cpu_set_t mine;
  ax_start_cpus(&mine);
  return mine;
}

/* Our index among the node's ranks whose CPU set equals ours, and their number. */
static int same_cpus(MPI_Comm node, int me, int n, int *share_rank, int *share_size) {
  cpu_set_t mine = my_cpus(), *all = ax_malloc((size_t)n * sizeof *all);
  if (!all) return AX_ERR;
  int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, node);
  *share_rank = *share_size = 0;
  for (int r = 0; rc == MPI_SUCCESS && r < n; r++)
    if (CPU_EQUAL(&all[r], &mine)) {
      *share_rank += r < me;
      (*share_size)++;
    }
  free(all);
  if (rc != MPI_SUCCESS) return ax_mpi_fail_at(rc, "MPI_Allgather(CPU sets)", __FILE__, __LINE__);
  return AX_OK;
}

int ax_mpi_node_ranks(MPI_Comm comm, AxNodeRanks *out) {
  MPI_Comm node;
  AX_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int rc = MPI_Comm_rank(node, &out->local_rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(node, &out->local_size);
  int status = rc == MPI_SUCCESS
                   ? same_cpus(node, out->local_rank, out->local_size, &out->share_rank,
                               &out->share_size)
                   : ax_mpi_fail_at(rc, "MPI_Comm_rank/size(node)", __FILE__, __LINE__);
  MPI_Comm_free(&node);
  return status;
}

int ax_mpi_auto_polite(MPI_Comm comm) {
  AxNodeRanks nr = {.share_size = 1};
  if (ax_mpi_node_ranks(comm, &nr) != AX_OK) {
    ax_error_clear();
    nr.share_size = 1;
  }
  return ax_mpi_polite_for(nr.share_size);
}

int ax_mpi_polite_for(int share_size) {
  cpu_set_t mine = my_cpus();
  long cpus = CPU_COUNT(&mine) ? CPU_COUNT(&mine) : sysconf(_SC_NPROCESSORS_ONLN);
  int yes = cpus > 0 && share_size > cpus;
  const char *env = getenv("AXONN_POLITE_WAIT");
  if (env && (*env == '0' || *env == '1')) yes = *env == '1';
  return yes;
}

enum { CHUNK_FLOATS = 1 << 28 }; /* 1 GiB per message */

int ax_mpi_send_floats(const float *buf, size_t n, int dest, int tag, MPI_Comm comm) {
  for (size_t off = 0; off < n; off += CHUNK_FLOATS) {
    int count = (int)(n - off < CHUNK_FLOATS ? n - off : CHUNK_FLOATS);
    AX_MPI(MPI_Send(buf + off, count, MPI_FLOAT, dest, tag, comm));
  }
  return AX_OK;
}

int ax_mpi_recv_floats(const AxCommConfig *cc, float *buf, size_t n, int src, int tag,
                       MPI_Comm comm) {
  for (size_t off = 0; off < n; off += CHUNK_FLOATS) {
    int count = (int)(n - off < CHUNK_FLOATS ? n - off : CHUNK_FLOATS);
    MPI_Request req;
    AX_MPI(MPI_Irecv(buf + off, count, MPI_FLOAT, src, tag, comm, &req));
    AX_TRY(ax_mpi_wait(cc, &req, NULL));
  }
  return AX_OK;
}

int ax_mpi_shared_segment(MPI_Comm comm, MPI_Aint bytes, const char *what, MPI_Win *win,
                          char **base) {
  int rank, disp;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  MPI_Aint got;
  void *mine = NULL;
  AX_MPI(MPI_Win_allocate_shared(rank == 0 ? bytes : 0, 1, MPI_INFO_NULL, comm, &mine, win));
  AX_MPI(MPI_Win_shared_query(*win, 0, &got, &disp, base));
  if (got < bytes || (uintptr_t)*base % sizeof(long long))
    return AX_FAIL("internal: the shared %s is %ld bytes at %p", what, (long)got, (void *)*base);
  return AX_OK;
}

int ax_mpi_gather_bytes(MPI_Comm comm, const void *mine, size_t bytes, void *all) {
  int size = 1;
  if (comm != MPI_COMM_NULL) AX_MPI(MPI_Comm_size(comm, &size));
  if (size == 1) {
    if (all) memcpy(all, mine, bytes);
    return AX_OK;
  }
  AX_MPI(MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, comm));
  return AX_OK;
}

int ax_mpi_agree(MPI_Comm comm, int status) { return ax_mpi_agree_as(NULL, comm, status); }

int ax_mpi_agree_as(const AxCommConfig *cc, MPI_Comm comm, int status) {
  int rank, size;
  AX_MPI(MPI_Comm_rank(comm, &rank));
  AX_MPI(MPI_Comm_size(comm, &size));
  int mine = status == AX_OK ? size : rank, first = size;
  MPI_Request req;
  AX_MPI(MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm, &req));
  AX_TRY(ax_mpi_wait(cc, &req, NULL));
  if (first == size) return AX_OK;
  if (first == 0) { /* rank 0 failed itself: it holds the message */
    if (rank != 0) {
      ax_error_clear();
      AX_FAIL("rank 0 failed");
    }
    return AX_ERR;
  }
  char msg[1024] = "";
  if (rank == first) {
    snprintf(msg, sizeof msg, "%s", ax_error_message());
    AX_MPI(MPI_Send(msg, sizeof msg, MPI_CHAR, 0, 0, comm));
  } else if (rank == 0) {
    AX_MPI(MPI_Recv(msg, sizeof msg, MPI_CHAR, first, 0, comm, MPI_STATUS_IGNORE));
  }
  ax_error_clear();
  if (rank != 0) return AX_FAIL("rank %d failed", first);
  return ax_fail_forwarded(msg);
}
