/* bench_coarsening.c — the --coarsening list that bench allreduce and bench optimizer share
 * (bucket-size multiples to time), read through the options' checked integer list; see
 * bench.h. */
#include "bench.h"

#include "src/core/error.h"
#include "src/core/options.h"

int ax_bench_coarsening(const char *text, int *ks, int *n) {
  static const AxIntList KS = {"coarsening", ",", "a list of positive integers like 1,2,4,8", 1,
                               1 << 20, 1, AX_BENCH_MAX_K};
  long long v[AX_BENCH_MAX_K];
  AX_TRY(ax_options_int_list(&KS, text, v, n));
  for (int i = 0; i < *n; i++) ks[i] = (int)v[i];
  return AX_OK;
}
