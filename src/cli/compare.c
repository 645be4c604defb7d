/* compare.c — `axonn compare A.bin B.bin`: compares two llm.c model files tensor by tensor
 * (largest absolute difference, relative to the tensor's largest magnitude) and exits 1 when
 * any tensor differs by more than the tolerance.
 *
 * The key third of qkvb is reported on a line of its own and not judged: adding a vector b to
 * every key adds q.b to every score of a softmax row, which changes nothing, so the key bias
 * has no effect on the output, its gradient is zero in exact arithmetic and its trained value
 * is rounding noise that Adam amplifies (two runs summing in different orders disagree on it
 * in full while agreeing on everything that matters). It is judged only by --tol 0 (bit
 * identity) and when it holds a NaN. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/io/model_file.h"

typedef struct {
  double tol;
} CompareConfig;

static const AxOption COMPARE_OPTS[] = {
    {"tol", AX_OPT_FLOAT, offsetof(CompareConfig, tol), "1e-5", "X",
     "allowed max |a-b| / max |a| per tensor", 0, 1e30, NULL},
};
static const AxOptionTable COMPARE_TABLE = {
    "compare", "Usage: axonn compare A.bin B.bin [--tol X]: compare two model files.",
    COMPARE_OPTS, 1};

static float *read_model(const char *path, AxGptConfig *cfg, AxStageLayout *lay) {
  if (ax_model_file_read_config(path, cfg) != AX_OK) return NULL;
  ax_stage_layout(lay, cfg, 0, cfg->layers, 1, 1);
  float *p = ax_malloc(lay->total * sizeof *p);
  if (p && ax_model_file_read_stage(path, cfg, lay, p) != AX_OK) {
    free(p);
    return NULL;
  }
  return p;
}

/* Largest |a-b| and |a| over elements [lo, hi) of a tensor: those whose index modulo
 * `period` lies in [from, to) when `inside`, the others when not (period 1, from = to = 0,
 * inside 0: all of them). */
typedef struct {
  double diff, mag;
} Gap;

static Gap gap(const float *a, const float *b, size_t lo, size_t hi, size_t period, size_t from,
               size_t to, int inside) {
  Gap g = {0, 0};
  for (size_t i = lo; i < hi; i++) {
    size_t r = (i - lo) % period;
    if ((r >= from && r < to) != inside) continue;
    double d = fabs((double)a[i] - b[i]), m = fabs((double)a[i]);
    g.diff = d > g.diff || d != d ? d : g.diff;
    g.mag = m > g.mag ? m : g.mag;
  }
  return g;
}

static double relative(Gap g) { return g.mag > 0 ? g.diff / g.mag : g.diff; }

static int compare(const char *pa, const char *pb, double tol) {
  AxGptConfig ca, cb;
  AxStageLayout lay;
  float *a = read_model(pa, &ca, &lay), *b = a ? read_model(pb, &cb, &lay) : NULL;
  int rc = a && b ? AX_OK : AX_ERR;
  if (rc == AX_OK && memcmp(&ca, &cb, sizeof ca) != 0)
    rc = AX_FAIL("%s and %s have different model dimensions", pa, pb);
  double worst = 0;
  for (int id = 0; id < AX_N_PARAMS && rc == AX_OK; id++) {
    size_t lo = lay.offset[id], hi = lo + lay.count[id], c = (size_t)ca.channels;
    int qkvb = id == AX_P_QKVB; /* per layer: query, key, value biases of C each */
    Gap g = qkvb ? gap(a, b, lo, hi, 3 * c, c, 2 * c, 0) : gap(a, b, lo, hi, 1, 0, 0, 0);
    double rel = relative(g);
    worst = rel > worst || rel != rel ? rel : worst;
    ax_log("%-9s max |a-b| %.3e  max |a| %.3e  relative %.3e%s", ax_param_name(id), g.diff,
           g.mag, rel, qkvb ? "  (query and value parts)" : "");
    if (qkvb) {
      Gap k = gap(a, b, lo, hi, 3 * c, c, 2 * c, 1);
      double krel = relative(k);
      int judged = tol == 0 || krel != krel; /* bit identity covers it; NaN always fails */
      if (judged) worst = krel > worst || krel != krel ? krel : worst;
      ax_log("%-9s max |a-b| %.3e  max |a| %.3e  relative %.3e  %s", "qkvb key", k.diff, k.mag,
             krel, judged ? "" : "(not judged: the key bias has no effect on the output)");
    }
  }
  if (rc == AX_OK) {
    ax_log_result("largest relative difference %.3e (tolerance %.1e): %s", worst, tol,
                  worst <= tol ? "same" : "DIFFERENT");
    if (!(worst <= tol)) rc = AX_ERR;
  }
  free(a);
  free(b);
  return rc;
}

/* Exits 1 with the differences printed (no error line) when a tensor is out of tolerance. */
static int run_compare(void *config, const AxOptState *st) {
  const CompareConfig *c = config;
  if (st->n_positional != 2) return AX_FAIL("compare needs two model files");
  return compare(st->positional[0], st->positional[1], c->tol);
}

int ax_cmd_compare(int argc, char **argv) {
  static const AxCommandSpec spec = {&COMPARE_TABLE, sizeof(CompareConfig), 2, run_compare};
  return ax_command_run(&spec, argc, argv);
}
