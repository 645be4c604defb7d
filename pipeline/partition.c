/* partition.c — stage block ranges; see partition.h. */
#include "partition.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "src/core/error.h"

static int parse_spec(int L, int P, const char *spec, int *first_block) {
  const char *p = spec;
  first_block[0] = 0;
  for (int s = 0; s < P; s++) {
    char *end;
    errno = 0;
    long n = strtol(p, &end, 10);
    if (end == p || errno || n < 1 || n > L)
      return AX_FAIL("--stage-layers '%s': entry %d is not a number of layers from 1 to %d "
                     "(every stage holds at least one block)", spec, s + 1, L);
    first_block[s + 1] = first_block[s] + (int)n;
    if (s < P - 1) {
      if (*end != ',')
        return AX_FAIL("--stage-layers '%s' has fewer entries than --g-inter %d", spec, P);
      p = end + 1;
    } else if (*end != 0) {
      return AX_FAIL("--stage-layers '%s' has more entries than --g-inter %d", spec, P);
    }
  }
  if (first_block[P] != L)
    return AX_FAIL("--stage-layers '%s' adds up to %d layers, the model has %d", spec,
                   first_block[P], L);
  return AX_OK;
}

int ax_partition(int L, int P, const char *spec, int *first_block) {
  if (P > L)
    return AX_FAIL("--g-inter %d exceeds the %d layers: every stage needs at least one block",
                   P, L);
  if (spec && *spec) return parse_spec(L, P, spec, first_block);
  int base = L / P, extra = L % P;
  first_block[0] = 0;
  for (int s = 0; s < P; s++) first_block[s + 1] = first_block[s] + base + (s < extra ? 1 : 0);
  return AX_OK;
}

int ax_partition_default_ac(int n_blocks, int L) {
  double target = sqrt((double)L);
  int best = 1;
  for (int f = 1; f <= n_blocks; f++)
    if (n_blocks % f == 0 && fabs(f - target) < fabs(best - target)) best = f;
  return best;
}
