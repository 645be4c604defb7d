/* link_spec.h — the text of --emulate-link BW[,LATENCY]: a bandwidth with its unit, in bits
 * (bps, Kbps, Mbps, Gbps, Tbps; also b/s, Kb/s, ...) or bytes per second (B/s, KB/s, MB/s,
 * GB/s, TB/s), prefixes decimal as network rates are (K = 1e3, M = 1e6, G = 1e9; k for K too),
 * and an optional latency (s, ms, us, ns; default 0): "10Gbps,5us", "100Gbps", "1.5GB/s,2ms".
 * Plain parsing and printing, no MPI. */
#ifndef AX_LINK_SPEC_H
#define AX_LINK_SPEC_H

#include <stddef.h>

typedef struct {
  double bytes_per_s; /* > 0 when parsed; 0: no emulated link */
  double latency_s;   /* >= 0 */
} AxLinkSpec;

/* Parses text into *out; AX_ERR with the reason recorded (the caller names the flag). */
int ax_link_spec_parse(const char *text, AxLinkSpec *out);
/* One part alone, with the same units: "25GB/s" (at least 1 bit/s, and finite in bytes/s) and
 * "5us" (at most an hour). */
int ax_link_bandwidth_parse(const char *text, double *bytes_per_s);
int ax_link_latency_parse(const char *text, double *seconds);
/* "10 Gb/s, latency 5 us" (or "off"). */
void ax_link_spec_format(const AxLinkSpec *s, char *buf, size_t cap);

#endif
