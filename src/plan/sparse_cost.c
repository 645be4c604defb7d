/* sparse_cost.c — the costs of sparse_cost.h: each algorithm's messages to a rank's peers on its
 * node and on the others, priced by comm_model.h's ax_comm_price. */
#include "sparse_cost.h"

#include <math.h>

#include "comm_model.h"

typedef unsigned long long u64;

/* One message of `bytes` to each of `peers` peers over link l, added to c. */
static void messages(AxSparseCost *c, double bytes, int peers, const AxSparseLink *l,
                     int crossing) {
  if (peers <= 0) return;
  u64 b;
  double s;
  ax_comm_price(AX_COLL_P2P, (u64)ceil(bytes), 1, 2, l->bytes_per_s, l->latency_s, &b, &s);
  c->bytes += b * (u64)peers;
  c->inter_bytes += crossing ? b * (u64)peers : 0;
  c->seconds += s * peers;
}

/* Each of `parts` (bytes) to every peer of a group of p ranks, `local` of them on this node. */
static void to_peers(AxSparseCost *c, const double *parts, int n_parts, int p, int local,
                     const AxSparseCostIn *in) {
  for (int i = 0; i < n_parts; i++) {
    messages(c, parts[i], local - 1, &in->intra, 0);
    messages(c, parts[i], p - local, &in->inter, 1);
  }
}

/* Zen on p ranks (local of them on a node) over v rows, n_max rows the busiest holds, u the
 * union. */
static void zen_level(AxSparseCost *c, const AxSparseCostIn *in, int p, int local, double v,
                      double n_max, double u) {
  double C = (double)in->cols;
  const double parts[4] = {in->balanced ? ceil(v / 8) : 4, n_max * (4 + 4 * C) / p,
                           ceil(v / (8.0 * p)), 4 * C * u / p};
  to_peers(c, parts, 4, p, local, in);
}

static void dense(AxSparseCost *c, const AxSparseCostIn *in) {
  int N = in->ranks, one_node = in->per_node >= N;
  const AxSparseLink *l = one_node ? &in->intra : &in->inter;
  ax_comm_price(AX_COLL_ALLREDUCE, (u64)in->rows * in->cols, 4, N, l->bytes_per_s, l->latency_s,
                &c->bytes, &c->seconds);
  c->inter_bytes = one_node ? 0 : c->bytes;
}

void ax_sparse_cost(const AxSparseCostIn *in, AxSparseCostOut *out) {
  *out = (AxSparseCostOut){0};
  int N = in->ranks, g = in->per_node < 1 ? 1 : in->per_node > N ? N : in->per_node;
  double V = in->rows, C = (double)in->cols, most = 0, all = 0;
  for (int r = 0; r < N; r++) {
    all += (double)in->counts[r];
    most = fmax(most, (double)in->counts[r]);
  }
  double u = fmin(V, all);
  const double gather[2] = {4, most * (4 + 4 * C)};
  to_peers(&out->by[AX_SPARSE_COST_ALLGATHER], gather, 2, N, g, in);
  dense(&out->by[AX_SPARSE_COST_DENSE], in);
  AxSparseCost *z = &out->by[AX_SPARSE_COST_ZEN];
  if (in->hierarchical && g >= 2 && N / g >= 2) {
    int n = N / g;
    zen_level(z, in, g, g, V, most, u); /* inside the node; its pull carries W_l, ~U / g */
    zen_level(z, in, n, 1, V / g, fmin(V, all / n) / g, u / g);
  } else {
    zen_level(z, in, N, g, V, most, u);
  }
  out->choice = AX_SPARSE_COST_ZEN;
  for (int a = 1; a < AX_SPARSE_COST_N; a++)
    if (out->by[a].seconds < out->by[out->choice].seconds) out->choice = a;
}
