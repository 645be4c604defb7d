/* ops_lowrank.c — the low-rank operators PowerSGD is composed of, on an n-value range viewed
 * as a rows x cols matrix M (row-major, M[i][j] = x[i*cols + j], zero beyond n) and thin
 * factors of r columns (row-major too: P[i][l] = P[i*r + l]). Sums run in double, in index
 * order, so the results depend only on the inputs. */
#include <math.h>
#include <string.h>

#include "ops.h"

/* The values of row i present in x (the last row may be short). */
static size_t row_len(size_t n, size_t cols, size_t i) {
  size_t start = i * cols;
  return start >= n ? 0 : n - start < cols ? n - start : cols;
}

void ax_op_mat_thin(const float *x, size_t n, size_t rows, size_t cols, const float *q, int r,
                    float *p) {
  double acc[AX_OP_MAX_RANK];
  for (size_t i = 0; i < rows; i++) {
    const float *m = x + i * cols;
    size_t len = row_len(n, cols, i);
    for (int l = 0; l < r; l++) acc[l] = 0;
    for (size_t j = 0; j < len; j++)
      for (int l = 0; l < r; l++) acc[l] += (double)m[j] * q[j * (size_t)r + l];
    for (int l = 0; l < r; l++) p[i * (size_t)r + l] = (float)acc[l];
  }
}

void ax_op_mat_t_thin(const float *x, size_t n, size_t rows, size_t cols, const float *p, int r,
                      double *acc, float *q) {
  if (cols && r) memset(acc, 0, cols * (size_t)r * sizeof *acc);
  for (size_t i = 0; i < rows; i++) {
    const float *m = x + i * cols, *pi = p + i * (size_t)r;
    size_t len = row_len(n, cols, i);
    for (size_t j = 0; j < len; j++)
      for (int l = 0; l < r; l++) acc[j * (size_t)r + l] += (double)m[j] * pi[l];
  }
  for (size_t e = 0; e < cols * (size_t)r; e++) q[e] = (float)acc[e];
}

/* x = P Q^T (sub: x -= P Q^T), the first n values. */
void ax_op_outer(const float *p, const float *q, size_t rows, size_t cols, int r, size_t n,
                 float *x, int sub) {
  for (size_t i = 0; i < rows; i++) {
    const float *pi = p + i * (size_t)r;
    float *m = x + i * cols;
    size_t len = row_len(n, cols, i);
    for (size_t j = 0; j < len; j++) {
      double s = 0;
      for (int l = 0; l < r; l++) s += (double)pi[l] * q[j * (size_t)r + l];
      m[j] = sub ? (float)((double)m[j] - s) : (float)s;
    }
  }
}

static double dot_cols(const double *a, int r, size_t rows, int u, int v) {
  double s = 0;
  for (size_t i = 0; i < rows; i++) s += a[i * (size_t)r + u] * a[i * (size_t)r + v];
  return s;
}

/* Modified Gram-Schmidt, twice over ("twice is enough"), in double; a column left with less
 * than 1e-5 of its norm (numerically in the span of the earlier ones) or none becomes 0. */
void ax_op_orthonormalize(float *p, size_t rows, int r, double *work) {
  for (size_t e = 0; e < rows * (size_t)r; e++) work[e] = p[e];
  for (int v = 0; v < r; v++) {
    double before = sqrt(dot_cols(work, r, rows, v, v));
    for (int pass = 0; pass < 2; pass++)
      for (int u = 0; u < v; u++) {
        double d = dot_cols(work, r, rows, u, v);
        for (size_t i = 0; i < rows; i++) work[i * (size_t)r + v] -= d * work[i * (size_t)r + u];
      }
    double after = sqrt(dot_cols(work, r, rows, v, v));
    double inv = after > 1e-5 * before && after > 0 ? 1.0 / after : 0.0;
    for (size_t i = 0; i < rows; i++) work[i * (size_t)r + v] *= inv;
  }
  for (size_t e = 0; e < rows * (size_t)r; e++) p[e] = (float)work[e];
}
