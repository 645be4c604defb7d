/* sim_profile.h — what `axonn profile` measures on this machine for the schedule simulator,
 * and its file: one micro-batch's forward and backward of a transformer block (timed in a
 * stage as deep as the run's deepest), what the first stage adds (the embedding) and the last
 * (the LM head and the loss), the host AdamW per element and the gradient's sum of squares,
 * the all-reduce's local sum per element, the copy bandwidth a pipeline send pays, the
 * gradients' download, the weights' upload and the gradients' zeroing on the device, how
 * ranks that compute at once on this host slow each other down (shared cores, caches, memory,
 * other users), and, profiled on several ranks, the all-reduce between them. The file is `key = value` lines in the --config format (src/core/options.h),
 * the shape it was measured at first; the simulator refuses a profile of another shape. */
#ifndef AX_SIM_PROFILE_H
#define AX_SIM_PROFILE_H

#include <mpi.h>

#include "src/plan/machine.h"
#include "src/train/train_config.h"

typedef struct {
  /* the shape and set-up measured */
  char *device;
  int threads, precision; /* threads per rank; AxPrecision */
  int micro_batch, seq, hidden, heads, vocab;
  double dropout; /* --dropout: the blocks and the embedding timed with their masks drawn */
  double attention_dropout; /* --attention-dropout: the blocks timed with its masks drawn */
  int stage_blocks; /* blocks of the stage the blocks' times were measured in: the run's
                     * deepest (a one-block stage repeated keeps its weights in the caches) */
  /* seconds of one micro-batch: a block (its stage's time over its blocks), what an end adds */
  double block_forward_s, block_backward_s;
  double first_forward_s, first_backward_s; /* the first stage's extra: embedding */
  double last_forward_s, last_backward_s;   /* the last stage's extra: LM head, loss */
  /* the optimizer and communication on the host */
  double adamw_s_per_elem;  /* AdamW, per parameter, on the optimizer's threads */
  double norm_s_per_elem;   /* the gradient's sum of squares (host_sumsq.h), same threads */
  double reduce_s_per_elem; /* an all-reduce's local sum (dst += src), per element */
  double copy_bytes_per_s;  /* memcpy bandwidth: a pipeline send's copy out */
  /* between the device and the host arena, per parameter (0 where the device's fp32 weights
   * and gradients are the arena's: the CPU backend) */
  double download_s_per_elem; /* gradients down, as fp32 */
  double upload_s_per_elem;   /* new weights up, from fp32 */
  double zero_s_per_elem;     /* the device's gradients zeroed at a step's start */
  /* --optimizer device: AdamW and the norm where the weights are (the host's figures where
   * device memory is host memory) */
  double device_adamw_s_per_elem, device_norm_s_per_elem;
  /* "1,0.45,...": each rank's speed when 1, 2, ... ranks compute at once on this host (the
   * grid's ranks measured, at most AX_SIM_PROFILE_MAX_K): a block's time alone over its time
   * beside k - 1 copies of itself, the mean of several placements of the copies */
  char *concurrency_speed;
  /* "S1,...,SK": with --emulate-link, a computing rank's speed when k of the host's K ranks
   * compute (K as above) and the other K - k wait on the emulated link (polls that sleep,
   * link_emulator.h): a block's time alone over its time beside k - 1 computing and K - k
   * waiting copies, the mean of several placements; "none" without emulation */
  char *waiting_speed;
  /* the data-parallel all-reduce between ranks of this host, as the run sums (its --allreduce
   * algorithm, chunking and waits), timed when the profile runs on several ranks (`mpiexec -n
   * 2 axonn profile`; ax_sim_profile_measure_allreduce): a line fitted through sizes 1 KB to 4
   * MB, the least of 5 timings each; allreduce_ranks 0 where it was not measured (one rank) */
  int allreduce_ranks;
  double allreduce_latency_s, allreduce_bytes_per_s;
} AxSimProfile;

enum { AX_SIM_PROFILE_MAX_K = 16 };

/* The speeds of concurrency_speed (waiting_speed) into speed[AX_SIM_PROFILE_MAX_K]; returns
 * how many (>= 1; waiting_speed none: 0), or AX_ERR (-1) with the error recorded when the text
 * is not such a list. */
int ax_sim_profile_speeds(const AxSimProfile *p, double *speed);
int ax_sim_profile_waiting_speeds(const AxSimProfile *p, double *speed);

/* The elements the per-parameter figures (the host's AdamW, norm, sum and copy; the device's
 * copies, zeroing and optimizer) are timed over: the parameters of cfg's largest stage (a
 * rank's tensor-parallel share), as the trainer streams its whole arena through them, never
 * fewer than AX_SIM_PROFILE_MIN_ELEMS (4M) nor more than AX_SIM_PROFILE_MAX_ELEMS (128M:
 * 2 GiB of fp32 arrays, beyond any cache). Timed over 4M alone the arrays stayed in the H200
 * host's cache and AdamW read 0.10 ns a parameter where a 1.3B run's took ~3x that. */
enum { AX_SIM_PROFILE_MIN_ELEMS = 1 << 22, AX_SIM_PROFILE_MAX_ELEMS = 1 << 27 };
size_t ax_sim_profile_elems(const AxTrainConfig *cfg);
/* Measures cfg's model at its micro-batch on its device and threads (one process, no MPI). */
int ax_sim_profile_measure(const AxTrainConfig *cfg, AxSimProfile *p);
/* sim_measure_comm.c: the all-reduce fields above, timed over comm (collective; every rank
 * gets the same figures): cfg's --allreduce algorithm with the trainer's chunking and its
 * waits (polite where comm's ranks outnumber this host's cores). A communicator of one rank
 * leaves them 0 (not measured). */
int ax_sim_profile_measure_allreduce(MPI_Comm comm, const AxTrainConfig *cfg, AxSimProfile *p);
/* The seconds per byte a message of a ring all-reduce between this host's ranks costs, from
 * the measured all-reduce: on N ranks a ring takes 2 (N - 1) messages of m / N bytes and sums
 * (N - 1) / N of the values (at the profile's reduce_s_per_elem), so a message's share of the
 * measured m / bytes_per_s is what is left of it after the sums, over 2 (N - 1) / N. 0 where
 * the all-reduce was not measured (or the sums alone exceed it). */
double ax_sim_profile_ring_s_per_byte(const AxSimProfile *p);
int ax_sim_profile_save(const AxSimProfile *p, const char *path);
/* A profile file; an unknown key, a missing one, a bad number or one out of its key's range
 * (a count below 1, a copy bandwidth below 1 byte/s, a list of speeds that are not all
 * positive) is one error naming the key. */
int ax_sim_profile_load(const char *path, AxSimProfile *p);
/* AX_ERR naming the difference when p was not measured at cfg's shape. */
int ax_sim_profile_matches(const AxSimProfile *p, const AxTrainConfig *cfg);
void ax_sim_profile_free(AxSimProfile *p);
/* The machine a profile was measured on, for `simulate --profile` without --machine: this host
 * as one node of `ranks` ranks (--ranks-per-node still makes virtual nodes), a CPU, its online
 * cores, and links at half the profile's copy bandwidth (MPI copies a message in and out). */
void ax_sim_profile_machine(const AxSimProfile *p, int ranks, AxMachine *m);

#endif
