/* comm_model.h — the communication model of 5D training (axonn-4d-hybrid §V): for a GPT model,
 * a batch, a grid G_inter x Gx x Gy x Gz x G_data and a machine, every collective one training
 * step issues, exactly as docs/tensor-parallel.md lists them, with the bytes a rank sends and
 * the seconds that takes.
 *
 * Bytes are those of our ring collectives (mpi/coll/collectives.h): an all-gather or reduce-scatter
 * of `count` elements per rank sends (p-1)·count·e; a ring all-reduce of n elements sends
 * 2(p-1)/p·n·e when p divides n, otherwise the exact per-rank formula of collectives.h, of
 * which the model takes the largest over the ranks (the slowest rank ends the collective); a
 * point-to-point message sends its elements. Time = bytes / beta of the group (Eq. 1-3), plus
 * the machine's latency once per ring step (p-1 for all-gather and reduce-scatter, 2(p-1) for
 * an all-reduce, 1 for a message; the paper and the built-in machines leave it at 0).
 *
 * Bandwidths (Eq. 10, placement-aware): the groups nest x, y, z, pipe, data (the rank layout of
 * docs/tensor-parallel.md); group i is inside a node when the product of the sizes of levels
 * 0..i is at most G_node (beta_intra), else beta_inter / min(G_node, product of levels 0..i-1).
 * Pipeline messages and the tied-embedding all-reduce (first and last stage) run at the pipe
 * level's bandwidth. Placement-agnostic: every group at beta_inter (§V-A).
 *
 * Stages: L blocks over G_inter stages as pipeline/partition.h splits them evenly; the step's
 * time is the busiest stage's (the largest per-stage total), and the entries listed are that
 * stage's. Everything here is arithmetic, without MPI. */
#ifndef AX_COMM_MODEL_H
#define AX_COMM_MODEL_H

#include "machine.h"
#include "models/gpt_config.h"

typedef struct {
  int inter, x, y, z, data; /* G_inter, Gx, Gy, Gz, G_data */
} AxRankGrid;

typedef enum {
  AX_COLL_ALLGATHER, AX_COLL_REDUCE_SCATTER, AX_COLL_ALLREDUCE, AX_COLL_P2P
} AxCollKind;
/* The communicator a collective runs on; the first five in the order of the hierarchy. */
typedef enum {
  AX_GROUP_X, AX_GROUP_Y, AX_GROUP_Z, AX_GROUP_PIPE, AX_GROUP_DATA, AX_GROUP_TIED, AX_N_GROUPS
} AxCommGroup;
/* The classes the totals are kept by (the paper's t_AG,z, t_RS,z, t_AR,y, t_AR,x, t_AR,data,
 * and ours): AR_y and AR_x hold every collective over Y and over X (the loss's all-gather of
 * row maxima over X included); AR_z the all-reduces of the vectors replicated over Z. */
typedef enum {
  AX_CLASS_AG_Z, AX_CLASS_RS_Z, AX_CLASS_AR_Y, AX_CLASS_AR_X, AX_CLASS_AR_Z, AX_CLASS_AR_DATA,
  AX_CLASS_P2P, AX_CLASS_TIED, AX_N_CLASSES
} AxCommClass;

typedef struct {
  AxGptConfig model; /* L, C, NH, V, Vp, maxT */
  int seq;           /* T: tokens per sequence */
  long long batch;   /* B: sequences per step over all data-parallel rows */
  int micro_batch;   /* Bm: sequences per micro-batch of a row; 0: ax_comm_micro_batch's rule */
  int elem_size;     /* bytes of a weight, activation or gradient element: 4, or 2 (bf16, fp16) */
  int checkpoint;    /* activation checkpointing: the blocks' forward collectives run twice */
  int ag_cache;      /* the all-gathered weights are kept for the step's later micro-batches
                      * and the recompute: gathered once a step */
  int placement_aware; /* Eq. 10; 0: every group at beta_inter */
} AxCommSetup;

enum { AX_COMM_NAME_MAX = 32, AX_COMM_MAX_ENTRIES = 48 };

typedef struct {
  char name[AX_COMM_NAME_MAX]; /* "AG_z qkv", "AR_y fc fwd" */
  AxCollKind kind;
  AxCommGroup group;
  AxCommClass cls;
  int group_size;
  int elem_size;
  unsigned long long elems; /* per call: all-gather: sent per rank; reduce-scatter: received
                               per rank; all-reduce: the buffer; p2p: the message */
  unsigned long long calls; /* per step */
  unsigned long long bytes; /* sent per rank per step */
  double seconds;           /* per step */
} AxCommEntry;

typedef struct {
  AxRankGrid grid;
  int micro_batch;            /* Bm used */
  long long n_micro;          /* micro-batches per step per row */
  int stage;                  /* the busiest stage, whose entries these are */
  double beta[AX_N_GROUPS];   /* bytes/s of each group */
  AxCommEntry entries[AX_COMM_MAX_ENTRIES]; /* only collectives that send something */
  int n_entries;
  double class_seconds[AX_N_CLASSES];
  unsigned long long class_bytes[AX_N_CLASSES];
  double seconds;             /* the step's communication time (the busiest stage's) */
  unsigned long long bytes;   /* sent per rank of that stage per step */
} AxCommPrediction;

const char *ax_comm_class_name(AxCommClass c); /* "AG_z", ..., "p2p", "tied" */
const char *ax_comm_group_name(AxCommGroup g); /* "x", ..., "tied" */
const char *ax_comm_kind_name(AxCollKind k);   /* "allgather", ..., "p2p" */
int ax_comm_grid_ranks(const AxRankGrid *g, long long *ranks); /* AX_ERR on overflow */

/* The micro-batch of grid g: s->micro_batch when given; otherwise the largest multiple of Gz
 * that divides the row's B/G_data sequences and still leaves at least G_inter micro-batches
 * (the whole row batch when G_inter = 1), or Gz itself when none leaves that many. 0 when Gz
 * does not divide B/G_data (or G_data does not divide B). */
int ax_comm_micro_batch(const AxCommSetup *s, const AxRankGrid *g);

/* NULL when the implementation can run g (docs/tensor-parallel.md's divisibility rules, P <= L,
 * the batch split); otherwise the first rule it breaks, written into why. */
const char *ax_comm_grid_problem(const AxCommSetup *s, const AxRankGrid *g, char *why,
                                 size_t cap);

/* beta[group] of grid g on machine m (Eq. 10 when aware). */
void ax_comm_bandwidths(const AxMachine *m, const AxRankGrid *g, int aware,
                        double beta[AX_N_GROUPS]);

/* One collective priced as every entry of a prediction is: the bytes a rank sends (an all-reduce:
 * the ring's busiest rank) and the seconds, bytes / beta plus latency once per ring step (a
 * message: once). p < 2: a collective sends nothing and costs 0. */
void ax_comm_price(AxCollKind kind, unsigned long long elems, int esz, int p, double beta,
                   double latency, unsigned long long *bytes, double *seconds);

/* The prediction for one grid; AX_ERR with the broken rule recorded when g is not valid. */
int ax_comm_predict(const AxCommSetup *s, const AxMachine *m, const AxRankGrid *g,
                    AxCommPrediction *out);

#endif
