/* bench_link.c — the MPI benchmarks' network options; see bench_link.h. */
#include "bench_link.h"

#include <string.h>

#include "src/core/error.h"
#include "src/core/log.h"

int ax_bench_link_check(const AxBenchLinkOpts *o, AxLinkSpec *spec) {
  *spec = (AxLinkSpec){0, 0};
  if (o->emulate_link && ax_link_spec_parse(o->emulate_link, spec) != AX_OK)
    return ax_error_context("--emulate-link");
  return AX_OK;
}

int ax_bench_link_start(const AxBenchLinkOpts *o, MPI_Comm world, AxLinkEmu **out) {
  AxLinkEmuConfig lc = {.ranks_per_node = o->ranks_per_node};
  AX_TRY(ax_bench_link_check(o, &lc.link));
  return ax_link_emu_create(out, world, &lc);
}

void ax_bench_link_header(const AxLinkEmu *e, const AxBenchLinkOpts *o) {
  if (!e || (!o->emulate_link && o->ranks_per_node == 0)) return;
  char what[320];
  ax_link_describe(e, what, sizeof what);
  ax_log("# network: %s%s", what,
         ax_link_emulating(e) ? "; the times below are EMULATED" : "");
}

void ax_bench_link_delta(const AxTraffic *after, const AxTraffic *before,
                         unsigned long long *bytes, unsigned long long *crossed) {
  *bytes = ax_traffic_bytes(after, AX_TRAFFIC_N_CLASSES) -
           ax_traffic_bytes(before, AX_TRAFFIC_N_CLASSES);
  *crossed = ax_traffic_crossed(after, AX_TRAFFIC_N_CLASSES) -
             ax_traffic_crossed(before, AX_TRAFFIC_N_CLASSES);
}
