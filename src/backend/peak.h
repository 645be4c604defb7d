/* peak.h — the peak FLOP/s a rank is measured against: the GEMM rate of the CPU backend
 * measured at the shapes of the run's own matmuls (and a square reference), as `axonn train`'s
 * summary and `axonn bench train` both do; the square sweep of `axonn bench gemm`; and the
 * dense half-precision tensor-core peaks of the GPUs the paper and its successors ran on
 * (V100 125, A100 312, H100/H200 989 TFLOP/s). */
#ifndef AX_PEAK_H
#define AX_PEAK_H

#include <stddef.h>

#include "backend.h"

enum {
  AX_PEAK_MAX_SHAPES = 6, /* five matmuls of a GPT and the square reference */
  AX_PEAK_DIM_CAP = 2048, /* CPU: larger dimensions are measured at this size (the rate no
                           * longer depends on them; it keeps a GPT-2-sized LM head under a
                           * second); a GPU measures the shapes as they are */
  AX_PEAK_SQUARE = 1024,  /* the square reference: CPU */
  AX_PEAK_SQUARE_GPU = 8192
};

/* The best rate measured, and where. */
typedef struct {
  double gflops;
  AxGemmShape best;
  int n_shapes;
} AxPeakResult;

/* The shapes to measure for a model whose GEMMs are `model` (n of them, at most
 * AX_PEAK_MAX_SHAPES - 1): on the CPU (gpu 0) each dimension capped at AX_PEAK_DIM_CAP plus
 * AX_PEAK_SQUARE cubed, on a GPU as they are plus AX_PEAK_SQUARE_GPU cubed. Returns how many
 * (<= AX_PEAK_MAX_SHAPES). */
int ax_peak_shapes(const AxGemmShape *model, int n, int gpu, AxGemmShape *out);

/* The peak over shapes: at each, one warm-up call and one timed call that sizes a sample, then
 * up to 5 samples (at least 2; each of enough back-to-back calls to last 5 ms; stopping after
 * 0.2 s), the best sample counting. The best, not the median: noise from other processes only
 * ever slows a sample down. */
int ax_peak_measure(AxBackend *be, const AxGemmShape *shapes, int n, AxPeakResult *out);

/* ax_peak_measure on a CPU backend with these threads and binding (threads <= 0: the rank's
 * share of the cores), as a training rank has them. */
int ax_peak_cpu(int threads, int bind, int share_rank, int share_size,
                const AxGemmShape *shapes, int n, AxPeakResult *out);

/* Median GFLOP/s of `reps` n x n x n GEMMs (C = A B^T) through the backend, after one warm-up
 * (`axonn bench gemm`). */
int ax_gemm_gflops(AxBackend *be, int n, int reps, double *out);

/* Dense fp16/bf16 peak in TFLOP/s of a GPU whose name contains V100, A100, H100, H200 or
 * MI250X (one GCD); 0 when the name is not in the table. */
double ax_peak_gpu_table(const char *gpu_name);

/* The model of the first NVIDIA GPU the driver lists (/proc/driver/nvidia/gpus/ * /information),
 * e.g. "Tesla V100-SXM2-16GB"; 0 and an empty name when there is none. */
int ax_peak_gpu_name(char *name, size_t cap);

/* Median of n values (sorts v in place). */
double ax_median(double *v, int n);
/* The smallest of n values (0 for none): a timing's best round, where other work on a shared
 * machine can only have added time. */
double ax_least(const double *v, int n);

#endif
