/* traffic.c — the class names and sums of the traffic counters; see traffic.h. */
#include "traffic.h"

static const char *const NAMES[] = {
#define AX_TRAFFIC_NAME_(id, name) name,
    AX_TRAFFIC_CLASSES(AX_TRAFFIC_NAME_)
#undef AX_TRAFFIC_NAME_
};

const char *ax_traffic_class_name(AxTrafficClass c) {
  return (unsigned)c < AX_TRAFFIC_N_CLASSES ? NAMES[c] : "?";
}

static unsigned long long sum(const AxTraffic *t, int c, int local, int crossed) {
  unsigned long long n = 0;
  for (int k = 0; k < AX_TRAFFIC_N_CLASSES; k++)
    if (c == AX_TRAFFIC_N_CLASSES || c == k)
      n += (local ? t->bytes[k][AX_TRAFFIC_LOCAL] : 0) +
           (crossed ? t->bytes[k][AX_TRAFFIC_CROSSED] : 0);
  return n;
}

unsigned long long ax_traffic_bytes(const AxTraffic *t, int c) { return sum(t, c, 1, 1); }
unsigned long long ax_traffic_crossed(const AxTraffic *t, int c) { return sum(t, c, 0, 1); }

void ax_traffic_add_delta(AxTraffic *into, const AxTraffic *after, const AxTraffic *before) {
  for (int k = 0; k < AX_TRAFFIC_N_CLASSES; k++)
    for (int x = 0; x < 2; x++) into->bytes[k][x] += after->bytes[k][x] - before->bytes[k][x];
}
