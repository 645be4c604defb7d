/* model_file.h — the llm.c fp32 model file: 256 int32 header ([0]=20240326, [1]=3, [2]=maxT,
 * [3]=V, [4]=L, [5]=NH, [6]=C, [7]=padded V) followed by every parameter tensor in the order
 * of gpt_config.h, fp32. Reads validate the header and the file size and can read just one
 * pipeline stage's slices; writes are atomic (temporary file, fsync, rename). The readers
 * also take a Hugging Face GPT-2 (a directory with model.safetensors and config.json, or the
 * .safetensors file: hf_gpt2.h), so --init, sample and compare read either. */
#ifndef AX_MODEL_FILE_H
#define AX_MODEL_FILE_H

#include "models/gpt_config.h"

#define AX_MODEL_MAGIC 20240326
#define AX_MODEL_VERSION_F32 3

int ax_model_file_read_config(const char *path, AxGptConfig *cfg);
/* Reads the slices `layout` owns into dst (layout.total floats). */
int ax_model_file_read_stage(const char *path, const AxGptConfig *cfg,
                             const AxStageLayout *layout, float *dst);

/* Writes a model whose parameters arrive as stage pieces: pieces[i] holds layout[i].total
 * floats; together the layouts must cover every tensor slice (stages of one pipeline). */
int ax_model_file_write_stages(const char *path, const AxGptConfig *cfg,
                               const AxStageLayout *layouts, const float *const *pieces,
                               int n_pieces);
/* Writes a whole model held in one buffer in file order. */
int ax_model_file_write(const char *path, const AxGptConfig *cfg, const float *params);

#endif
