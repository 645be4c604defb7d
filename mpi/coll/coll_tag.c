/* coll_tag.c — one tag per started collective: a per-communicator sequence number kept as an
 * MPI attribute of the communicator (the value itself is the counter, so nothing is allocated)
 * and mapped into tags 1024..32767 (MPI guarantees tags up to 32767). Every rank starts the
 * same operations in the same order, so they agree on each operation's tag. A duplicated
 * communicator starts its own sequence. */
#include <stdint.h>

#include "coll_internal.h"
#include "mpi/mpi_util.h"

enum { TAG_FIRST = 1024, TAG_LAST = 32767 };

static int g_keyval = MPI_KEYVAL_INVALID;

int ax_coll_next_tag(MPI_Comm comm, int *tag) {
  if (g_keyval == MPI_KEYVAL_INVALID)
    AX_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &g_keyval,
                                  NULL));
  void *value = NULL;
  int found = 0;
  AX_MPI(MPI_Comm_get_attr(comm, g_keyval, &value, &found));
  uintptr_t seq = found ? (uintptr_t)value : 0;
  *tag = TAG_FIRST + (int)(seq % (uintptr_t)(TAG_LAST - TAG_FIRST + 1));
  AX_MPI(MPI_Comm_set_attr(comm, g_keyval, (void *)(seq + 1)));
  return AX_OK;
}
