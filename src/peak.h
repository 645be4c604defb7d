/* peak.h — the peak FLOP/s a rank is measured against: the measured SGEMM rate of the CPU
 * backend (what `axonn bench gemm` prints), and the dense half-precision tensor-core peaks of
 * the GPUs the paper and its successors ran on (V100 125, A100 312, H100/H200 989 TFLOP/s). */
#ifndef AX_PEAK_H
#define AX_PEAK_H

#include <stddef.h>

#include "backend.h"

/* Median GFLOP/s of `reps` n x n x n GEMMs (C = A B^T) through the backend, after one warm-up. */
int ax_gemm_gflops(AxBackend *be, int n, int reps, double *out);

/* The CPU SGEMM peak of one rank: a CPU backend with these threads and binding (threads <= 0:
 * the rank's share of the cores), n = 1024, median of 3 (about 0.1 to 0.5 s). */
int ax_peak_cpu_gflops(int threads, int bind, int share_rank, int share_size, double *gflops);

/* Dense fp16/bf16 peak in TFLOP/s of a GPU whose name contains V100, A100, H100 or H200;
 * 0 when the name is not in the table. */
double ax_peak_gpu_table(const char *gpu_name);

/* The model of the first NVIDIA GPU the driver lists (/proc/driver/nvidia/gpus/ * /information),
 * e.g. "Tesla V100-SXM2-16GB"; 0 and an empty name when there is none. */
int ax_peak_gpu_name(char *name, size_t cap);

/* Median of n values (sorts v in place). */
double ax_median(double *v, int n);

#endif
