/* sample.c — `axonn sample`: generates tokens from a saved model. The prompt and the output go
 * through sample_text.h: bytes for byte-level models (vocabulary <= 256), token ids for larger
 * vocabularies, or text through llm.c's tokenizer file (--tokenizer) and GPT-2's BPE files
 * (--bpe-dir, which also encode a text prompt). A prompt longer than the model's context
 * conditions the output through its last tokens. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "models/gpt_stage.h"
#include "src/backend/backend.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/options.h"
#include "src/core/rng.h"
#include "src/io/model_file.h"
#include "src/text/sample_text.h"

typedef struct {
  char *model, *prompt, *tokenizer, *bpe_dir;
  int tokens, threads;
  double temperature;
  long long seed;
} SampleConfig;

#define SOFF(f) offsetof(SampleConfig, f)
static const AxOption SAMPLE_OPTS[] = {
    {"model", AX_OPT_STRING, SOFF(model), NULL, "FILE", "llm.c fp32 model file", 1, 0, NULL},
    {"prompt", AX_OPT_STRING, SOFF(prompt), "", "TEXT",
     "text to continue (for vocabularies over 256: token ids like 1,2,3, or text with "
     "--bpe-dir); past the model's context, its last tokens are what the model sees", 1, 0, NULL},
    {"tokenizer", AX_OPT_STRING, SOFF(tokenizer), NULL, "FILE",
     "llm.c tokenizer file (gpt2_tokenizer.bin): print tokens as text, <|endoftext|> as itself "
     "(without it, vocabularies over 256 print token ids)", 1, 0, NULL},
    {"bpe-dir", AX_OPT_STRING, SOFF(bpe_dir), NULL, "DIR",
     "GPT-2's encoder.json and vocab.bpe: encode a text --prompt (and print text when "
     "--tokenizer is not given)", 1, 0, NULL},
    {"tokens", AX_OPT_INT, SOFF(tokens), "200", "N", "tokens to generate", 1, 1 << 20, NULL},
    {"temperature", AX_OPT_FLOAT, SOFF(temperature), "1.0", "X",
     "softmax temperature (0: greedy)", 0, 100, NULL},
    {"seed", AX_OPT_LONG, SOFF(seed), "1337", "N", "sampling seed", 0, 9.2e18, NULL},
    {"threads", AX_OPT_INT, SOFF(threads), "0", "N", "compute threads (0: all cores)", 0, 256,
     NULL},
};
static const AxOptionTable SAMPLE_TABLE = {
    "sample", "Generate text from a saved model.", SAMPLE_OPTS,
    (int)(sizeof SAMPLE_OPTS / sizeof SAMPLE_OPTS[0])};

typedef struct {
  AxGptConfig cfg;
  AxBackend *be;
  AxGptStage *stage;
  AxSampleText text;
  int window;
  int32_t *ctx;
  float *logits;
} Sampler;

static int choose(const float *logits, int V, double temperature, AxRng *r) {
  int best = 0;
  for (int i = 1; i < V; i++) best = logits[i] > logits[best] ? i : best;
  if (temperature <= 0) return best;
  double sum = 0, u;
  for (int i = 0; i < V; i++) sum += exp((logits[i] - logits[best]) / temperature);
  u = ax_rng_double(r) * sum;
  for (int i = 0; i < V; i++) {
    u -= exp((logits[i] - logits[best]) / temperature);
    if (u <= 0) return i;
  }
  return best;
}

/* Generates c->tokens tokens after the n in s->ctx; the context slides when it is full. */
static int continue_text(const SampleConfig *c, Sampler *s, int n) {
  AxRng r;
  ax_rng_seed(&r, (uint64_t)c->seed);
  for (int k = 0; k < c->tokens; k++) {
    for (int i = n; i < s->window; i++) s->ctx[i] = 0; /* causal: padding is never seen */
    AX_TRY(ax_stage_forward(s->stage, 0, s->ctx, NULL, AX_MEM_HOST));
    AX_TRY(ax_stage_logits_at(s->stage, 0, n - 1, s->logits));
    int tok = choose(s->logits, s->cfg.vocab, c->temperature, &r);
    if (n == s->window) { /* full: drop the oldest token */
      memmove(s->ctx, s->ctx + 1, (size_t)(s->window - 1) * sizeof *s->ctx);
      n--;
    }
    s->ctx[n++] = tok;
    ax_sample_text_emit(&s->text, tok);
  }
  putchar('\n');
  return AX_OK;
}

/* Prints the whole prompt; the model sees its last `window` tokens. */
static int generate(const SampleConfig *c, Sampler *s) {
  AxTokens prompt = {0};
  int rc = ax_sample_text_prompt(&s->text, c->prompt, &prompt);
  if (rc == AX_OK) {
    for (size_t i = 0; i < prompt.n; i++) ax_sample_text_emit(&s->text, prompt.ids[i]);
    size_t keep = prompt.n < (size_t)s->window ? prompt.n : (size_t)s->window;
    memcpy(s->ctx, prompt.ids + prompt.n - keep, keep * sizeof *s->ctx);
    rc = continue_text(c, s, (int)keep);
  }
  ax_tokens_free(&prompt);
  return rc;
}

static int run_sample(const SampleConfig *c) {
  if (!c->model) return AX_FAIL("sample needs --model FILE");
  Sampler s;
  memset(&s, 0, sizeof s);
  AX_TRY(ax_model_file_read_config(c->model, &s.cfg));
  AX_TRY(ax_sample_text_open(&s.text, s.cfg.vocab, c->tokenizer, c->bpe_dir));
  s.window = s.cfg.max_seq;
  AxBackendConfig bc = {.device = "cpu", .dtype = AX_DTYPE_F32, .threads = c->threads,
                        .bind = 0, .local_size = 1};
  AxStageSpec spec = {.l0 = 0, .l1 = s.cfg.layers, .first = 1, .last = 1, .B = 1,
                      .T = s.window, .n_slots = 1};
  int rc = (s.be = ax_backend_create(&bc)) ? AX_OK : AX_ERR;
  if (rc == AX_OK) rc = ax_stage_create(&s.stage, s.be, &s.cfg, &spec);
  float *host = NULL;
  if (rc == AX_OK) {
    size_t total = ax_stage_layout_of(s.stage)->total;
    host = ax_malloc(total * sizeof *host);
    s.ctx = ax_malloc((size_t)s.window * sizeof *s.ctx);
    s.logits = ax_malloc((size_t)s.cfg.vocab * sizeof *s.logits);
    rc = host && s.ctx && s.logits ? AX_OK : AX_ERR;
    if (rc == AX_OK)
      rc = ax_model_file_read_stage(c->model, &s.cfg, ax_stage_layout_of(s.stage), host);
    if (rc == AX_OK)
      rc = s.be->ops->upload_f32(s.be, ax_stage_params(s.stage), host, total, AX_STREAM_COMPUTE);
  }
  if (rc == AX_OK) rc = generate(c, &s);
  free(host);
  free(s.ctx);
  free(s.logits);
  ax_stage_destroy(s.stage);
  ax_backend_destroy(s.be);
  ax_sample_text_close(&s.text);
  return rc;
}

static int run_sample_command(void *config, const AxOptState *st) {
  (void)st;
  return run_sample(config);
}

int ax_cmd_sample(int argc, char **argv) {
  static const AxCommandSpec spec = {&SAMPLE_TABLE, sizeof(SampleConfig), 0, run_sample_command};
  return ax_command_run(&spec, argc, argv);
}
