/* rank_layout.c — a rank's place in the process grid and its label; see rank_layout.h. */
#include "rank_layout.h"

#include <stdio.h>

static int at_least_1(int v) { return v > 0 ? v : 1; }

AxRankLayout ax_rank_layout_plain(int P) { return (AxRankLayout){at_least_1(P), {1, 1, 1}}; }

AxRankCoords ax_rank_coords(const AxRankLayout *l, int r) {
  AxRankCoords c;
  for (int d = 0; d < 3; d++) {
    int n = at_least_1(l->tp[d]);
    c.tc[d] = r % n;
    r /= n;
  }
  int P = at_least_1(l->P);
  c.stage = r % P;
  c.row = r / P;
  return c;
}

const char *ax_rank_label(const AxRankLayout *l, int r, char *buf, size_t cap) {
  AxRankCoords c = ax_rank_coords(l, r);
  int tp = at_least_1(l->tp[0]) * at_least_1(l->tp[1]) * at_least_1(l->tp[2]);
  if (tp > 1)
    snprintf(buf, cap, "rank %d (stage %d, x %d y %d z %d, row %d)", r, c.stage, c.tc[0],
             c.tc[1], c.tc[2], c.row);
  else
    snprintf(buf, cap, "rank %d (stage %d, row %d)", r, c.stage, c.row);
  return buf;
}
