/* gpt_stage.h — a pipeline stage of GPT-2: blocks [l0, l1), plus the token/position embedding
 * on the first stage and the final LayerNorm, tied LM head and cross-entropy on the last.
 * A single process is one stage that is both first and last.
 *
 * The stage owns its flat parameter and gradient buffers (model-file order, see
 * gpt_config.h) and one activation arena sized at creation: `n_slots` micro-batches can be in
 * flight (stashed between their forward and backward). With activation checkpointing
 * (ac > 0) a slot keeps only the input of every segment of `ac` blocks and the segment is
 * recomputed in the backward pass; otherwise it keeps every block's activations.
 * Nothing here allocates after creation, and nothing here knows about MPI.
 *
 * With spec.tp the stage is this rank's part of a Gx x Gy x Gz tensor-parallel grid
 * (docs/tensor-parallel.md, tp_layers.h): its flat buffers hold the rank's shards
 * (tp_shard.h's layout), a micro-batch's sequences are split over Z and the stage's input and
 * output activations are [B/Gz · T, C/Gy]; every tensor-parallel collective goes through
 * spec.tp. It needs a backend with the tensor-parallel kernels (ax_backend_has_tp) computing
 * in fp32, in host or device memory. */
#ifndef AX_GPT_STAGE_H
#define AX_GPT_STAGE_H

#include <stdint.h>

#include "gpt_block.h"
#include "gpt_config.h"
#include "src/backend/backend.h"
#include "src/core/tp_comm.h"

enum { AX_GPT_GEMMS = 5 };
/* The products a block and the LM head compute, at `rows` rows (sequences per micro-batch x
 * T): qkv (rows x 3C x C), attention projection (rows x C x C), fc (rows x 4C x C), fc
 * projection (rows x C x 4C), LM head (rows x V x C). Returns AX_GPT_GEMMS. */
int ax_gpt_gemm_shapes(const AxGptConfig *c, int rows, AxGemmShape out[AX_GPT_GEMMS]);

typedef struct AxGptStage AxGptStage;

typedef struct {
  int l0, l1;      /* blocks owned */
  int first, last; /* embedding / head */
  int B, T;        /* micro-batch: sequences and tokens per sequence (T <= max_seq) */
  int n_slots;     /* micro-batches in flight at once */
  int ac;          /* checkpoint segment length in blocks; 0 keeps every activation */
  AxTpComm *tp;    /* tensor-parallel grid (not owned); NULL: the whole layers on this rank */
  int oar;         /* tensor parallel: the dI all-reduces overlap the dW GEMMs (OAR) */
  int ors;         /* tensor parallel: dŴ reduce-scatters finished at the end of the backward
                    * (ORS; a dŴ buffer per matrix per block) */
  int oag;         /* tensor parallel: the next block's all-gathers start before a block's
                    * forward (OAG) */
  int ag_cache;    /* tensor parallel: a recompute reuses the forward's gathered weights, and
                    * the weights gathered in a pass are kept for its later micro-batches */
  double gather_budget_mb; /* tensor parallel with ag_cache: MB (1e6 bytes) of gathered block
                            * weights kept across micro-batches, the first blocks first; < 0:
                            * every block. Blocks beyond it are gathered every micro-batch. */
  float dropout;           /* GPT-2's dropout probability (dropout.h), in [0, 1); 0: none */
  float attention_dropout; /* the attention probabilities' (dropout.h; explicit attention) */
  uint64_t dropout_seed;   /* the masks' seed */
} AxStageSpec;

/* Bytes of device memory for activations (arena) with this spec, without allocating; with the
 * explicit attention's T x T probabilities (--attention fused keeps B*NH*T floats instead). */
size_t ax_stage_activation_bytes(const AxGptConfig *cfg, const AxStageSpec *spec, size_t esz);

int ax_stage_create(AxGptStage **out, AxBackend *be, const AxGptConfig *cfg,
                    const AxStageSpec *spec);
void ax_stage_destroy(AxGptStage *st);

const AxStageLayout *ax_stage_layout_of(const AxGptStage *st);
const AxStageSpec *ax_stage_spec(const AxGptStage *st);
/* Flat device buffers of layout.total elements of the compute type. */
void *ax_stage_params(AxGptStage *st);
void *ax_stage_grads(AxGptStage *st);
size_t ax_stage_arena_bytes(const AxGptStage *st);
/* Bytes of the stage's output activation (and of its gradient): [B·T, C], or with tensor
 * parallelism this rank's block [B/Gz · T, C/Gy]. */
size_t ax_stage_message_bytes(const AxGptStage *st);

int ax_stage_zero_grads(AxGptStage *st);
/* Before a pass of forwards (a training step, a validation) whose parameters may have changed
 * since the last: forgets the weights gathered over Z and, with spec.oag, starts gathering the
 * first block's and wte's now, ahead of the compute. Nothing without spec.tp or where Gz = 1. */
int ax_stage_begin_pass(AxGptStage *st);
/* Tensor parallel: the blocks whose gathered weights are kept across the micro-batches of a
 * pass (0 where Gz = 1 or the cache is off) and their bytes. */
int ax_stage_gather_kept(const AxGptStage *st, size_t *bytes);
/* Tensor parallel, once a step after the last backward: sums the gradients of the tensors
 * replicated over Z (partial sums over this rank's sequences) over Z. Nothing otherwise. */
int ax_stage_reduce_replicas(AxGptStage *st);

/* With spec.dropout: the next ax_stage_forward is a training forward of the micro-batch whose
 * first sequence is `first_sequence` of step `step`'s whole (global) batch; it and its backward
 * drop the elements every layout of the run drops there. A forward without it drops nothing
 * (validation, sampling). */
void ax_stage_set_dropout_origin(AxGptStage *st, uint64_t step, uint64_t first_sequence);

/* Forward of one micro-batch into `slot`. The first stage takes host tokens [B*T] (the whole
 * micro-batch's; with tensor parallelism it reads its Z rank's sequences); the others take the
 * previous stage's output activation ([B*T, C], or this rank's block of it) as received, in host memory (uploaded)
 * or in device memory (copied device to device), as input_mem says. */
int ax_stage_forward(AxGptStage *st, int slot, const int32_t *tokens_host, const void *input,
                     AxMemKind input_mem);
/* The stage's output activation for `slot` after ax_stage_forward (non-last stages); valid
 * until the next call on this stage. */
void *ax_stage_output(AxGptStage *st, int slot);

/* Last stage, after ax_stage_forward(slot): final LayerNorm, logits, cross-entropy against
 * host targets [B*T], and (when dloss != 0) the backward pass through the whole stage with
 * d(total loss)/d(token loss) = dloss. *loss_mean is the mean loss of the micro-batch's tokens
 * on this rank (tensor parallel: of its Z rank's sequences). */
int ax_stage_loss_backward(AxGptStage *st, int slot, const int32_t *targets_host, float dloss,
                           double *loss_mean);
/* Non-last stage: backward of `slot` from the gradient of its output (as the output) as received, in
 * host or device memory as doutput_mem says. */
int ax_stage_backward(AxGptStage *st, int slot, const void *doutput, AxMemKind doutput_mem);
/* Non-first stage, after a backward: gradient w.r.t. the stage input, valid until the next
 * call on this stage. */
void *ax_stage_dinput(AxGptStage *st);

/* The backward's timeline, as the stage records it on every backward (a clock read per block):
 * when the gradients of each block are final in this micro-batch's backward. `after_block`
 * (may be NULL), when set, is called after block b's backward (b local, from n_blocks - 1 down
 * to 0; not with tensor parallelism) with its gradients written: the caller may hand them on
 * (the trainer's early data-parallel sum); the stage itself never communicates. */
typedef int (*AxStageBlockHook)(void *ctx, int block);
void ax_stage_set_block_hook(AxGptStage *st, AxStageBlockHook after_block, void *ctx);
/* The last backward's timeline: done_s[b] (b local, n_blocks of them) seconds from the
 * backward's start to block b's end; *total_s the whole backward's (the embedding's
 * included). Returns the blocks. */
int ax_stage_backward_timeline(const AxGptStage *st, const double **done_s, double *total_s);

/* Last stage: logits of token position `pos` of sequence 0 after ax_stage_forward(slot)
 * (for sampling), copied to host floats [vocab]. Not with tensor parallelism. */
int ax_stage_logits_at(AxGptStage *st, int slot, int pos, float *out_host);

#endif
