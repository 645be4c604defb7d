/* gpt_presets.h — named model shapes: GPT-2 sizes, the weak-scaling models of the AxoNN paper
 * (IPDPS'22, Table II) and the GPT-5B..80B models of the 4D tensor-parallel paper. */
#ifndef AX_GPT_PRESETS_H
#define AX_GPT_PRESETS_H

#include "src/core/options.h"

typedef struct {
  const char *name;
  int layers, hidden, heads, seq, vocab;
} AxGptPreset;

/* NULL when the name is unknown. */
const AxGptPreset *ax_gpt_preset_find(const char *name);
/* "gpt2-small, gpt2-medium, ..." for error messages. */
const char *ax_gpt_preset_names(void);

/* --model NAME in a command whose option table t has the int options layers, hidden, heads, seq
 * and vocab: each of them the user did not give (st) takes the preset's value. An unknown name
 * is an error listing the presets. */
typedef struct {
  int *layers, *hidden, *heads, *seq, *vocab;
} AxGptDimFields;
int ax_gpt_preset_apply(const char *name, const AxOptionTable *t, const AxOptState *st,
                        AxGptDimFields dims);

#endif
