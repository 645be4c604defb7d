/* backend_common.c — what every backend shares (backend.h): the compute types' names and sizes,
 * and the share of the node's cores a rank takes. */
#include "backend.h"

const char *ax_dtype_name(AxDType t) {
  switch (t) {
  case AX_DTYPE_F32: return "fp32";
  case AX_DTYPE_BF16: return "bf16";
  case AX_DTYPE_F16: return "fp16";
  }
  return "?";
}

size_t ax_dtype_size(AxDType t) { return t == AX_DTYPE_F32 ? 4 : 2; }

void ax_backend_cpu_share(const AxBackendConfig *cfg, int *rank, int *size) {
  int shared = cfg->share_size > 0;
  *rank = shared ? cfg->share_rank : cfg->local_rank;
  *size = shared ? cfg->share_size : (cfg->local_size > 0 ? cfg->local_size : 1);
}
