/* export.c — `axonn export --checkpoint DIR --output FILE.bin`: the llm.c fp32 model file
 * from a checkpoint (the newest complete one under DIR, or DIR itself when it is a step
 * directory), whatever grid wrote it; with --format safetensors, a Hugging Face GPT-2
 * directory instead (src/io/hf_gpt2.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/io/checkpoint.h"
#include "src/io/hf_gpt2.h"
#include "src/io/model_file.h"

typedef struct {
  char *checkpoint, *output;
  int format; /* 0: llm.c, 1: safetensors */
} ExportConfig;

static const AxOption EXPORT_OPTS[] = {
    {"checkpoint", AX_OPT_STRING, offsetof(ExportConfig, checkpoint), NULL, "DIR",
     "--checkpoint-dir of a run (newest complete checkpoint) or one step-N directory", 1, 0,
     NULL},
    {"output", AX_OPT_STRING, offsetof(ExportConfig, output), NULL, "FILE.bin|DIR",
     "model file to write (llm.c fp32 format), or with --format safetensors the directory "
     "(created if missing) of model.safetensors and config.json", 1, 0, NULL},
    {"format", AX_OPT_CHOICE, offsetof(ExportConfig, format), "llmc", NULL,
     "llmc: llm.c's fp32 model file; safetensors: a Hugging Face GPT-2 that "
     "transformers.GPT2LMHeadModel.from_pretrained(DIR) loads (fp32, Conv1D layout; --init, "
     "sample and compare read it back)", 0, 0, "llmc|safetensors"},
};
static const AxOptionTable EXPORT_TABLE = {
    "export", "Write the llm.c model file (or a Hugging Face GPT-2) of a checkpoint.",
    EXPORT_OPTS,
    (int)(sizeof EXPORT_OPTS / sizeof EXPORT_OPTS[0])};

static int find_step_dir(const char *dir, char *step_dir, AxCkptManifest *man) {
  char path[1100];
  snprintf(path, sizeof path, "%s/manifest", dir);
  if (access(path, F_OK) == 0) {
    snprintf(step_dir, 1024, "%s", dir);
    return ax_ckpt_load_manifest(step_dir, 1, man);
  }
  int found;
  AX_TRY(ax_ckpt_find_latest(dir, &found, step_dir, man));
  return found ? AX_OK : AX_FAIL("no complete checkpoint in %s", dir);
}

static int export_model(const ExportConfig *c) {
  if (!c->checkpoint || !c->output) return AX_FAIL("export needs --checkpoint DIR --output FILE");
  char step_dir[1024];
  AxCkptManifest man;
  AX_TRY(find_step_dir(c->checkpoint, step_dir, &man));
  AxStageLayout lay;
  ax_stage_layout(&lay, &man.model, 0, man.model.layers, 1, 1);
  float *params = ax_malloc(lay.total * sizeof *params);
  int rc = params ? ax_ckpt_read_stage(step_dir, &man, &lay, params, NULL, NULL) : AX_ERR;
  const AxHfDropout drop = {man.dropout, man.attention_dropout}; /* 0 where not recorded */
  if (rc == AX_OK)
    rc = c->format ? ax_hf_gpt2_write(c->output, &man.model, &drop, params)
                   : ax_model_file_write(c->output, &man.model, params);
  if (rc == AX_OK)
    printf("exported step %d of %s (%zu parameters) to %s%s\n", man.step, step_dir, lay.total,
           c->output, c->format ? " (model.safetensors, config.json)" : "");
  if (rc == AX_OK && c->format && man.have_dropout)
    printf("config.json: resid_pdrop and embd_pdrop %g (--dropout), attn_pdrop %g "
           "(--attention-dropout), as the run trained\n", drop.resid_embd, drop.attn);
  else if (rc == AX_OK && c->format)
    printf("config.json: resid_pdrop, embd_pdrop and attn_pdrop 0: the checkpoint predates "
           "recording its run's dropout\n");
  free(params);
  ax_ckpt_manifest_free(&man);
  return rc;
}

static int run_export(void *config, const AxOptState *st) {
  (void)st;
  return export_model(config);
}

int ax_cmd_export(int argc, char **argv) {
  static const AxCommandSpec spec = {&EXPORT_TABLE, sizeof(ExportConfig), 0, run_export};
  return ax_command_run(&spec, argc, argv);
}
