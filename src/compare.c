/* compare.c — `axonn compare A.bin B.bin`: compares two llm.c model files tensor by tensor
 * (largest absolute difference, relative to the tensor's largest magnitude) and exits 1 when
 * any tensor differs by more than the tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "error.h"
#include "log.h"
#include "model_file.h"
#include "options.h"

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

static int compare(const char *pa, const char *pb, double tol) {
  AxGptConfig ca, cb;
  AxStageLayout lay;
  float *a = read_model(pa, &ca, &lay), *b = a ? read_model(pb, &cb, &lay) : NULL;
  int rc = a && b ? AX_OK : AX_ERR;
  if (rc == AX_OK && memcmp(&ca, &cb, sizeof ca) != 0)
    rc = AX_FAIL("%s and %s have different model dimensions", pa, pb);
  double worst = 0;
  for (int id = 0; id < AX_N_PARAMS && rc == AX_OK; id++) {
    double diff = 0, mag = 0;
    for (size_t i = lay.offset[id]; i < lay.offset[id] + lay.count[id]; i++) {
      double d = fabs((double)a[i] - b[i]), m = fabs((double)a[i]);
      diff = d > diff || d != d ? d : diff;
      mag = m > mag ? m : mag;
    }
    double rel = mag > 0 ? diff / mag : diff;
    worst = rel > worst || rel != rel ? rel : worst;
    ax_log("%-9s max |a-b| %.3e  max |a| %.3e  relative %.3e", ax_param_name(id), diff, mag, rel);
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

int ax_cmd_compare(int argc, char **argv) {
  const char *files[2] = {NULL, NULL};
  char *rest[8] = {argv[0]};
  int n_rest = 1, n_files = 0;
  for (int i = 1; i < argc; i++) { /* file names apart, options to the parser */
    int takes_value = !strcmp(argv[i], "--tol") && i + 1 < argc;
    if (argv[i][0] != '-' && n_files < 2) {
      files[n_files++] = argv[i];
    } else if (n_rest + 2 <= 8) {
      rest[n_rest++] = argv[i];
      if (takes_value) rest[n_rest++] = argv[++i];
    }
  }
  CompareConfig c;
  AxOptState st;
  int rc = ax_options_parse(&COMPARE_TABLE, &c, n_rest, rest, &st);
  if (rc == AX_OK && st.help) {
    ax_options_print_help(&COMPARE_TABLE, stdout);
    return 0;
  }
  if (rc == AX_OK && n_files != 2) rc = AX_FAIL("compare needs two model files");
  if (rc == AX_OK) {
    rc = compare(files[0], files[1], c.tol);
    if (rc != AX_OK && !ax_error_pending()) return 1; /* differences were printed */
  }
  if (rc != AX_OK) ax_print_error();
  return rc == AX_OK ? 0 : 1;
}
