/* tp_shard.h — where a rank's tensor-parallel shards sit in the whole model
 * (docs/tensor-parallel.md): the flat layout of a stage's shards on one rank of a Gx x Gy x Gz
 * grid, the copy between a whole stage's tensors (gpt_config.h's layout, as files and the
 * initialization have them) and one rank's shards, and which ranks count a tensor that several
 * hold. Everything here is layout arithmetic: no communication (only the sizes and coordinates
 * of the AxTpComm are read), so it also describes other ranks than this one.
 *
 * Shards, per block and in the stage's flat order (model-file order, shards in place of the
 * whole tensors): the matrices' Ŵ shards of tp_block.h (qkv's rows in ax_tp_qkv_row order),
 * qkvb and fcb over X, the other block vectors over Y; wte's rows over X and then Z, its columns
 * over Y ([Vp/(Gx·Gz), C/Gy]); wpe [maxT, C/Gy]; lnfw and lnfb [C/Gy]. With a 1 x 1 x 1 grid the
 * layout and the copy are the identity. */
#ifndef AX_TP_SHARD_H
#define AX_TP_SHARD_H

#include <stdint.h>

#include "gpt_config.h"
#include "src/core/tp_comm.h"

/* The grid fits the model and a micro-batch of B sequences: the block's divisibility
 * (ax_tp_block_check) and the vocabulary's rows over X and Z. One clear error otherwise. */
int ax_tp_stage_check(const AxGptConfig *c, const AxTpComm *tp, int B);

/* Like ax_stage_layout, with this rank's shard sizes as the counts and their row lengths as
 * cols (file_offset stays the whole tensors'), and the groups replicating each tensor. The same
 * on every rank of a grid: sizes depend on Gx, Gy, Gz only. */
void ax_tp_stage_layout(AxStageLayout *s, const AxGptConfig *c, int l0, int l1, int first,
                        int last, const AxTpComm *tp);

typedef enum {
  AX_TP_EXTRACT, /* whole -> shards */
  AX_TP_INSERT   /* shards -> their places in whole (nothing else of whole is written) */
} AxTpCopyDir;

/* Copies between a whole stage (whole_buf laid out as `whole`, ax_stage_layout) and the shards
 * of rank tp (shard_buf laid out as `mine`, ax_tp_stage_layout of the same stage and rank). */
void ax_tp_shard_copy(const AxGptConfig *c, const AxStageLayout *whole,
                      const AxStageLayout *mine, const AxTpComm *tp, float *whole_buf,
                      float *shard_buf, AxTpCopyDir dir);

/* The groups over which tensor `id` is replicated, as a mask of 1 << AxTpGroup: the block
 * vectors over Y (qkvb, fcb) or over X (the others) and Z; wpe and lnf over X and Z. Gradients
 * of Z-replicated tensors are partial sums over the rank's sequences, summed over Z once a
 * step; X and Y replicas compute the same values. */
unsigned ax_tp_param_replicas(int id);
/* This rank is the one copy of tensor `id` among its replicas that counts it (coordinate 0 in
 * every replicating group): global sums (the gradient norm) take each element once. */
int ax_tp_param_counted(const AxTpComm *tp, int id);
/* Feeds the values buf (a rank's shards, laid out as lay) holds of each replicated tensor
 * (ax_tp_param_replicas nonzero) to crc[id] (ax_crc32; others untouched). The replicas of a
 * tensor hold the same rows and columns of it, so where they are alike bit for bit their CRCs
 * are equal over every group that replicates it. */
void ax_tp_replica_crcs(const AxStageLayout *lay, const float *buf, uint32_t crc[AX_N_PARAMS]);

#endif
