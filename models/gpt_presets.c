/* gpt_presets.c — the preset table; see gpt_presets.h. */
#include "gpt_presets.h"

#include <stddef.h>
#include <string.h>

#include "src/core/error.h"

static const AxGptPreset PRESETS[] = {
    {"gpt2-small", 12, 768, 12, 1024, 50257},
    {"gpt2-medium", 24, 1024, 16, 1024, 50257},
    {"gpt2-large", 36, 1280, 20, 1024, 50257},
    {"gpt2-xl", 48, 1600, 25, 1024, 50257},
    /* AxoNN weak scaling: sequence 512, vocabulary 51200 */
    {"gpt-12b", 48, 4512, 24, 512, 51200},
    {"gpt-24b", 48, 6336, 36, 512, 51200},
    {"gpt-50b", 96, 6528, 48, 512, 51200},
    {"gpt-100b", 96, 9360, 60, 512, 51200},
    /* 4D tensor parallelism (Singh et al.) */
    {"gpt-5b", 24, 4096, 32, 2048, 51200},
    {"gpt-10b", 32, 5120, 40, 2048, 51200},
    {"gpt-20b", 32, 7168, 56, 2048, 51200},
    {"gpt-40b", 38, 9216, 72, 2048, 51200},
    {"gpt-80b", 42, 12288, 96, 2048, 51200},
};
enum { N_PRESETS = sizeof PRESETS / sizeof PRESETS[0] };

const AxGptPreset *ax_gpt_preset_find(const char *name) {
  for (int i = 0; i < N_PRESETS; i++)
    if (strcmp(PRESETS[i].name, name) == 0) return &PRESETS[i];
  return NULL;
}

const char *ax_gpt_preset_names(void) {
  static char buf[512];
  if (!buf[0])
    for (int i = 0; i < N_PRESETS; i++) {
      if (i) strcat(buf, ", ");
      strcat(buf, PRESETS[i].name);
    }
  return buf;
}

int ax_gpt_preset_apply(const char *name, const AxOptionTable *t, const AxOptState *st,
                        AxGptDimFields dims) {
  const AxGptPreset *p = ax_gpt_preset_find(name);
  if (!p) return AX_FAIL("--model '%s' is not a preset; known: %s", name, ax_gpt_preset_names());
  const struct { const char *name; int *field; int value; } fields[] = {
      {"layers", dims.layers, p->layers}, {"hidden", dims.hidden, p->hidden},
      {"heads", dims.heads, p->heads},    {"seq", dims.seq, p->seq},
      {"vocab", dims.vocab, p->vocab}};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if (!ax_options_was_set(t, st, fields[i].name)) *fields[i].field = fields[i].value;
  return AX_OK;
}
