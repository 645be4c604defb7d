/* coll_mpi.c — AX_ALLREDUCE_MPI: the library's MPI_Iallreduce behind the same start/test/wait
 * interface (and its blocking MPI_Allreduce, the benchmark's baseline). fp32 uses MPI_SUM;
 * bf16 and fp16 user-defined commutative sums (fp32 add, round to nearest even) created on
 * first use and freed when MPI finalizes. The bytes it moves are
 * invisible to us, so it counts what the ring would have moved (also as traffic, traffic.h), and
 * it cannot run over the emulated link (link_emulator.h). */
#include <limits.h>

#include "coll_internal.h"
#include "mpi/mpi_util.h"
#include "mpi/world_rank.h"
#include "reduce_local.h"

/* The 16-bit sums, by AxCommType (AX_COMM_BF16, AX_COMM_F16; fp32 has MPI_SUM) */
static MPI_Op g_sum16[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};

static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  ax_reduce_add_bf16(inout, in, (size_t)*len);
}

static void f16_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  ax_reduce_add_f16(inout, in, (size_t)*len);
}

/* Delete callback of an attribute on MPI_COMM_SELF: runs at the start of MPI_Finalize. */
static int free_sum16(MPI_Comm comm, int keyval, void *value, void *extra) {
  (void)comm, (void)keyval, (void)value, (void)extra;
  for (int t = 0; t < 3; t++)
    if (g_sum16[t] != MPI_OP_NULL) MPI_Op_free(&g_sum16[t]);
  return MPI_SUCCESS;
}

static int sum16_op(AxCommType type, MPI_Op *out) {
  if (g_sum16[type] == MPI_OP_NULL) {
    int keyval;
    AX_MPI(MPI_Op_create(type == AX_COMM_BF16 ? bf16_sum : f16_sum, 1, &g_sum16[type]));
    AX_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_sum16, &keyval, NULL));
    AX_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL));
  }
  *out = g_sum16[type];
  return AX_OK;
}

/* The MPI sum operation for `type`; fails for counts MPI's int cannot hold. */
static int sum_op(AxCommType type, size_t count, MPI_Op *sum) {
  if (count > INT_MAX)
    return AX_FAIL("all-reduce (mpi): %zu elements exceed MPI's int count", count);
  *sum = MPI_SUM;
  return type == AX_COMM_F32 ? AX_OK : sum16_op(type, sum);
}

int ax_mpi_allreduce_blocking(MPI_Comm comm, void *buf, size_t count, AxCommType type) {
  MPI_Op sum = MPI_SUM;
  AX_TRY(sum_op(type, count, &sum));
  AX_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, (int)count,
                       type == AX_COMM_F32 ? MPI_FLOAT : MPI_UINT16_T, sum, comm));
  return AX_OK;
}

/* What the ring would send, as the traffic of op's class (to the right neighbour). */
static void count_as_ring(const AxColl *op) {
  if (op->size < 2) return;
  int right = ax_mpi_world_rank_of(op->world, op->size, (op->rank + 1) % op->size);
  ax_traffic_add(op->cc.traffic, op->cc.traffic_class, ax_link_crosses(op->cc.links, right),
                 op->mpi_bytes.sent);
}

int ax_mpi_allreduce_start(AxColl *op, void *buf, size_t count) {
  MPI_Op sum = MPI_SUM;
  if (ax_link_emulating(op->cc.links))
    return AX_FAIL("the all-reduce 'mpi' (MPI_Iallreduce) cannot run over the emulated link: MPI "
                   "moves its bytes itself (use ring, rhd or auto)");
  AX_TRY(sum_op(op->type, count, &sum));
  op->uses_mpi = 1;
  ax_ring_allreduce_bytes(count, op->esz, op->rank, op->size, &op->mpi_bytes);
  count_as_ring(op);
  AX_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, op->dtype, sum, op->comm, &op->mpi_req));
  return AX_OK;
}

int ax_mpi_allreduce_test(AxColl *op, int *done) {
  int flag = 1;
  if (!op->finished) AX_MPI(MPI_Test(&op->mpi_req, &flag, MPI_STATUS_IGNORE));
  if (flag && !op->finished) {
    op->finished = 1;
    if (op->bytes) {
      op->bytes->sent += op->mpi_bytes.sent;
      op->bytes->received += op->mpi_bytes.received;
    }
  }
  *done = op->finished;
  return AX_OK;
}
