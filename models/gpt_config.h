/* gpt_config.h — GPT-2 dimensions, the parameter tensors in llm.c model-file order, and the
 * flat layout of a pipeline stage's parameters (a contiguous range of blocks, plus the
 * embedding on the first stage and final LayerNorm + tied LM head on the last). */
#ifndef AX_GPT_CONFIG_H
#define AX_GPT_CONFIG_H

#include <stddef.h>

typedef struct {
  int max_seq;      /* maxT: rows of wpe */
  int vocab;        /* V: real vocabulary; logits and loss cover these */
  int padded_vocab; /* Vp: rows of wte (V rounded up to 128 unless a file says otherwise) */
  int layers;       /* L */
  int heads;        /* NH */
  int channels;     /* C */
} AxGptConfig;

typedef enum {
  AX_P_WTE, AX_P_WPE, AX_P_LN1W, AX_P_LN1B, AX_P_QKVW, AX_P_QKVB, AX_P_ATTPROJW, AX_P_ATTPROJB,
  AX_P_LN2W, AX_P_LN2B, AX_P_FCW, AX_P_FCB, AX_P_FCPROJW, AX_P_FCPROJB, AX_P_LNFW, AX_P_LNFB,
  AX_N_PARAMS
} AxParamId;

/* The largest model, in bytes of fp32 parameters, that sizes and offsets can address with room
 * to spare (2^62). */
#define AX_GPT_MAX_BYTES 4.6e18

/* Checks the dimensions make sense (C divisible by NH, sizes positive, the parameter count
 * addressable, ...). */
int ax_gpt_config_check(const AxGptConfig *c);
int ax_gpt_pad_vocab(int vocab);

const char *ax_param_name(int id);
int ax_param_is_layer(int id);  /* one slice per block (ln1w ... fcprojb) */
int ax_param_decays(int id);    /* matrices get weight decay; biases and LayerNorm do not */
size_t ax_param_per_layer(const AxGptConfig *c, int id); /* layer tensors: one block's slice */
size_t ax_param_size(const AxGptConfig *c, int id);      /* whole tensor, all layers */
size_t ax_gpt_num_params(const AxGptConfig *c);          /* as stored in the file (Vp rows) */

typedef struct {
  int l0, l1;       /* blocks [l0, l1) */
  int first, last;  /* owns the embedding / the final LayerNorm, LM head and loss */
  int has[AX_N_PARAMS];
  size_t offset[AX_N_PARAMS];      /* where the slice starts in the stage's flat buffer */
  size_t count[AX_N_PARAMS];       /* elements in the slice */
  size_t cols[AX_N_PARAMS];        /* a matrix's row length (its shard's under tensor
                                    * parallelism, tp_shard.h); 0: a 1-D tensor */
  unsigned replicas[AX_N_PARAMS];  /* the tensor-parallel groups (1 << AxTpGroup) of more than
                                    * one rank whose ranks all hold this slice; 0: none */
  size_t file_offset[AX_N_PARAMS]; /* where the slice starts among the file's parameters */
  size_t total;                    /* elements in the stage's flat buffer */
} AxStageLayout;

void ax_stage_layout(AxStageLayout *s, const AxGptConfig *c, int l0, int l1, int first,
                     int last);

/* Training FLOPs of one step of B sequences of T tokens by Narayanan's bound
 * (forward + backward: 72·B·T·L·C²·(1 + T/(6C) + V/(12·L·C)); with activation recomputation
 * one more forward of the blocks: 96·B·T·L·C²·(1 + T/(6C) + V/(16·L·C))). */
double ax_gpt_train_flops(const AxGptConfig *c, long long B, int T, int recompute);

#endif
