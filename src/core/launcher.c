/* launcher.c — the launcher's rank variables; see launcher.h. */
#include "launcher.h"

#include <stdlib.h>

#include "error.h"
#include "log.h"

int ax_launcher_rank(void) {
  static const char *const vars[] = {"PMI_RANK",          "PMIX_RANK",   "OMPI_COMM_WORLD_RANK",
                                     "MV2_COMM_WORLD_RANK", "PALS_RANKID", "JSM_NAMESPACE_RANK",
                                     "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end;
    if (!v || !*v) continue;
    long r = strtol(v, &end, 10);
    if (!*end && r >= 0 && r <= 1L << 30) return (int)r;
  }
  return -1;
}

void ax_print_error_once(void) {
  int rank = ax_launcher_rank();
  ax_set_rank(rank < 0 ? 0 : rank);
  if (rank <= 0) ax_print_error();
  else ax_error_clear();
}
