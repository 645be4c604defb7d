/* link_spec.c — parsing and printing --emulate-link; see link_spec.h. */
#include "link_spec.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"

typedef struct {
  const char *name;
  double scale; /* to bytes per second, or to seconds */
} Unit;

static const Unit RATE_UNITS[] = {
    {"bps", 1.0 / 8},  {"Kbps", 1e3 / 8},  {"kbps", 1e3 / 8},  {"Mbps", 1e6 / 8},
    {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8}, {"b/s", 1.0 / 8},   {"Kb/s", 1e3 / 8},
    {"kb/s", 1e3 / 8}, {"Mb/s", 1e6 / 8},  {"Gb/s", 1e9 / 8},  {"Tb/s", 1e12 / 8},
    {"B/s", 1},        {"KB/s", 1e3},      {"kB/s", 1e3},      {"MB/s", 1e6},
    {"GB/s", 1e9},     {"TB/s", 1e12},
};
static const Unit TIME_UNITS[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};

enum { TEXT_CAP = 128 };
#define MIN_BYTES_PER_S (1.0 / 8) /* 1 bit/s */
#define MAX_LATENCY_S 3600.0

#define USAGE                                                                                    \
  "expected BANDWIDTH[,LATENCY] such as 10Gbps,5us, 100Gbps or 1.5GB/s,2ms (bandwidth in bps, " \
  "Kbps, Mbps, Gbps, Tbps or B/s, KB/s, MB/s, GB/s, TB/s; latency in s, ms, us, ns)"

/* The length of the decimal number text starts with: digits, one '.', an exponent (strtod
 * alone would also take hexadecimal, "inf" and "nan"). */
static size_t decimal_length(const char *text) {
  size_t i = 0, digits = 0;
  while (isdigit((unsigned char)text[i])) i++, digits++;
  if (text[i] == '.') {
    i++;
    while (isdigit((unsigned char)text[i])) i++, digits++;
  }
  if (!digits) return 0;
  if (text[i] == 'e' || text[i] == 'E') {
    size_t j = i + 1;
    if (text[j] == '+' || text[j] == '-') j++;
    if (isdigit((unsigned char)text[j])) {
      while (isdigit((unsigned char)text[j])) j++;
      i = j;
    }
  }
  return i;
}

/* "12.5unit": a non-negative finite decimal number followed by one of the units. */
static int number_with_unit(const char *text, const Unit *units, size_t n, const char *what,
                            double *out) {
  size_t len = decimal_length(text);
  if (!len) return AX_FAIL("'%s' is not a %s: %s", text, what, USAGE);
  char *end;
  double v = strtod(text, &end);
  if (end != text + len || !isfinite(v))
    return AX_FAIL("'%s' is not a %s: %s", text, what, USAGE);
  if (!*end) return AX_FAIL("%s '%s' has no unit: %s", what, text, USAGE);
  for (size_t i = 0; i < n; i++)
    if (!strcmp(end, units[i].name)) {
      *out = v * units[i].scale;
      return AX_OK;
    }
  return AX_FAIL("%s '%s': unknown unit '%s': %s", what, text, end, USAGE);
}

int ax_link_bandwidth_parse(const char *text, double *bytes_per_s) {
  AX_TRY(number_with_unit(text, RATE_UNITS, sizeof RATE_UNITS / sizeof *RATE_UNITS, "bandwidth",
                          bytes_per_s));
  if (*bytes_per_s < MIN_BYTES_PER_S)
    return AX_FAIL("bandwidth '%s' must be at least 1 bit/s", text);
  if (!isfinite(*bytes_per_s)) /* a finite number whose unit overflows it (1e300GB/s) */
    return AX_FAIL("bandwidth '%s' is out of range (not a finite number of bytes/s)", text);
  return AX_OK;
}

int ax_link_latency_parse(const char *text, double *seconds) {
  AX_TRY(number_with_unit(text, TIME_UNITS, sizeof TIME_UNITS / sizeof *TIME_UNITS, "latency",
                          seconds));
  if (*seconds > MAX_LATENCY_S) return AX_FAIL("latency '%s' exceeds an hour", text);
  return AX_OK;
}

static int parse_parts(char *bw, char *lat, AxLinkSpec *out) {
  AX_TRY(ax_link_bandwidth_parse(bw, &out->bytes_per_s));
  return lat ? ax_link_latency_parse(lat, &out->latency_s) : AX_OK;
}

int ax_link_spec_parse(const char *text, AxLinkSpec *out) {
  *out = (AxLinkSpec){0, 0};
  if (!text || !*text) return AX_FAIL("empty: %s", USAGE);
  if (strlen(text) >= TEXT_CAP) return AX_FAIL("'%.20s...' is too long: %s", text, USAGE);
  char copy[TEXT_CAP];
  snprintf(copy, sizeof copy, "%s", text);
  char *comma = strchr(copy, ','), *lat = NULL;
  if (comma) {
    *comma = 0;
    lat = comma + 1;
    if (!*lat) return AX_FAIL("'%s' ends with a comma and no latency: %s", text, USAGE);
  }
  int rc = parse_parts(copy, lat, out);
  if (rc != AX_OK) *out = (AxLinkSpec){0, 0};
  return rc;
}

static void format_rate(double bits, char *buf, size_t cap) {
  static const char *const PREFIX[] = {"", "K", "M", "G", "T"};
  int p = 0;
  while (p < 4 && bits >= 1e3) bits /= 1e3, p++;
  snprintf(buf, cap, "%.4g %sb/s", bits, PREFIX[p]);
}

static void format_time(double s, char *buf, size_t cap) {
  if (s == 0 || s >= 1) snprintf(buf, cap, "%.4g s", s);
  else if (s >= 1e-3) snprintf(buf, cap, "%.4g ms", s * 1e3);
  else if (s >= 1e-6) snprintf(buf, cap, "%.4g us", s * 1e6);
  else snprintf(buf, cap, "%.4g ns", s * 1e9);
}

void ax_link_spec_format(const AxLinkSpec *s, char *buf, size_t cap) {
  if (!s || s->bytes_per_s <= 0) {
    snprintf(buf, cap, "off");
    return;
  }
  char rate[32], lat[32];
  format_rate(s->bytes_per_s * 8, rate, sizeof rate);
  format_time(s->latency_s, lat, sizeof lat);
  snprintf(buf, cap, "%s, latency %s", rate, lat);
}
