/* hf_gpt2.h — GPT-2 in Hugging Face's layout: a directory with `model.safetensors` (the
 * safetensors format: an 8-byte little-endian header length, a JSON header naming each tensor's
 * dtype, shape and byte range, then the data) and `config.json` (GPT2Config), as
 * `transformers.GPT2LMHeadModel.from_pretrained(DIR)` loads it. The tensors carry the names of
 * Hugging Face's GPT2Model ("wte.weight", "h.0.attn.c_attn.weight", ..., "ln_f.weight"), fp32,
 * the matrices in Conv1D's [in, out] layout (llm.c's are [out, in]: transposed on the way),
 * wte with the real vocabulary's rows only (the LM head is tied to it). Readers take the
 * directory or the .safetensors file (config.json beside it), accept only F32 and check every
 * name, shape and byte range; the result is in llm.c's parameter order (models/gpt_config.h),
 * wte padded with zero rows. */
#ifndef AX_HF_GPT2_H
#define AX_HF_GPT2_H

#include "models/gpt_config.h"

/* Whether path is a Hugging Face GPT-2 (a directory holding model.safetensors, or a file
 * whose name ends in .safetensors). */
int ax_hf_gpt2_is(const char *path);
/* GPT2Config's dropouts: resid_pdrop and embd_pdrop (axonn's --dropout drops both places),
 * attn_pdrop (--attention-dropout). */
typedef struct {
  double resid_embd, attn;
} AxHfDropout;
/* Writes cfg's model (params: llm.c order, ax_gpt_num_params floats) into directory dir
 * (created if missing; the two files written atomically), config.json with drop's dropouts. */
int ax_hf_gpt2_write(const char *dir, const AxGptConfig *cfg, const AxHfDropout *drop,
                     const float *params);
/* The dimensions (config.json's n_head, the tensors' shapes); padded_vocab as the trainer
 * pads (ax_gpt_pad_vocab). */
int ax_hf_gpt2_read_config(const char *path, AxGptConfig *cfg);
/* Every parameter, llm.c order, into params (ax_gpt_num_params(cfg) floats). */
int ax_hf_gpt2_read(const char *path, const AxGptConfig *cfg, float *params);

#endif
