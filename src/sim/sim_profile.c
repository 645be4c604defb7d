/* sim_profile.c — the profile file of the schedule simulator: its keys, saving, loading and
 * the shape check; see sim_profile.h (sim_measure.c measures one). */
#include "sim_profile.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/fileio.h"

/* Every key's range is checked on load (src/core/options.c: one line naming the key): counts
 * from 1, precision 0 to 2, seconds from 0, the copy bandwidth from 1 byte/s (0 made a send
 * take forever: the simulated pipeline deadlocked), all finite. */
#define OFF(f) offsetof(AxSimProfile, f)
#define PINT(n, f, what, lo, hi) {n, AX_OPT_INT, OFF(f), NULL, "N", what, lo, hi, NULL}
#define PCOUNT(n, f, what) PINT(n, f, what, 1, 1 << 30)
#define PSEC(n, f, what) {n, AX_OPT_FLOAT, OFF(f), NULL, "X", what, 0, 1e18, NULL}
static const AxOption KEYS[] = {
    {"device", AX_OPT_STRING, OFF(device), NULL, "NAME", "device measured", 1, 0, NULL},
    PCOUNT("threads", threads, "threads per rank"),
    PINT("precision", precision, "0 fp32, 1 bf16, 2 fp16", 0, 2),
    PCOUNT("micro_batch", micro_batch, "sequences per micro-batch"),
    PCOUNT("seq", seq, "tokens per sequence"),
    PCOUNT("hidden", hidden, "hidden size"),
    PCOUNT("heads", heads, "attention heads"),
    PCOUNT("vocab", vocab, "vocabulary"),
    {"dropout", AX_OPT_FLOAT, OFF(dropout), NULL, "P",
     "the dropout the training forwards were timed with (0: none)", 0, 0.9, NULL},
    {"attention_dropout", AX_OPT_FLOAT, OFF(attention_dropout), NULL, "P",
     "the attention dropout the training forwards were timed with (0: none)", 0, 0.9, NULL},
    PCOUNT("stage_blocks", stage_blocks, "blocks of the stage a block was timed in"),
    PSEC("block_forward_s", block_forward_s, "a block's forward"),
    PSEC("block_backward_s", block_backward_s, "a block's backward"),
    PSEC("first_forward_s", first_forward_s, "the embedding's forward"),
    PSEC("first_backward_s", first_backward_s, "the embedding's backward"),
    PSEC("last_forward_s", last_forward_s, "the head's forward"),
    PSEC("last_backward_s", last_backward_s, "the head's and loss's backward"),
    PSEC("adamw_s_per_elem", adamw_s_per_elem, "AdamW per parameter"),
    PSEC("norm_s_per_elem", norm_s_per_elem, "the gradient's sum of squares per parameter"),
    PSEC("reduce_s_per_elem", reduce_s_per_elem, "a local sum per element"),
    {"copy_bytes_per_s", AX_OPT_FLOAT, OFF(copy_bytes_per_s), NULL, "X",
     "memcpy bandwidth (bytes/s)", 1, 1e18, NULL},
    PSEC("download_s_per_elem", download_s_per_elem, "a gradient to the host arena, as fp32"),
    PSEC("upload_s_per_elem", upload_s_per_elem, "a weight from the host arena"),
    PSEC("zero_s_per_elem", zero_s_per_elem, "a device gradient zeroed"),
    PSEC("device_adamw_s_per_elem", device_adamw_s_per_elem,
         "--optimizer device: AdamW per parameter"),
    PSEC("device_norm_s_per_elem", device_norm_s_per_elem,
         "--optimizer device: the norm per parameter"),
    {"concurrency_speed", AX_OPT_STRING, OFF(concurrency_speed), NULL, "S1,S2,...",
     "speed of each of k ranks computing at once", 1, 0, NULL},
    {"waiting_speed", AX_OPT_STRING, OFF(waiting_speed), NULL, "S1,S2,...",
     "speed of each of k ranks computing while the host's other ranks wait on the emulated "
     "link (none: not measured)", 1, 0, NULL},
    {"allreduce_ranks", AX_OPT_INT, OFF(allreduce_ranks), NULL, "N",
     "ranks the all-reduce was timed on (0: not measured)", 0, 1 << 20, NULL},
    {"allreduce_latency_s", AX_OPT_FLOAT, OFF(allreduce_latency_s), NULL, "X",
     "the measured all-reduce's latency", 0, 1e18, NULL},
    {"allreduce_bytes_per_s", AX_OPT_FLOAT, OFF(allreduce_bytes_per_s), NULL, "X",
     "the measured all-reduce's bytes per second (0: not measured)", 0, 1e18, NULL},
};
static const AxOptionTable PROFILE_FILE = {"simulate --profile", "a profile file", KEYS,
                                           (int)(sizeof KEYS / sizeof KEYS[0])};

int ax_sim_profile_save(const AxSimProfile *p, const char *path) {
  AxFile f;
  AX_TRY(ax_file_open_write(&f, path));
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) {
    ax_file_abort(&f);
    return AX_FAIL("out of memory writing the profile");
  }
  fprintf(mem, "# axonn profile: measured by `axonn profile` for `axonn simulate --profile`\n");
  ax_options_dump(&PROFILE_FILE, p, mem);
  fclose(mem);
  int rc = ax_file_write(&f, text, len);
  free(text);
  if (rc != AX_OK) {
    ax_file_abort(&f);
    return AX_ERR;
  }
  return ax_file_commit(&f);
}

/* Both lists of speeds read as speeds (the options parser knows them as text only). */
static int check_speeds(const AxSimProfile *p, const char *path) {
  double speed[AX_SIM_PROFILE_MAX_K];
  if (ax_sim_profile_speeds(p, speed) < 0 || ax_sim_profile_waiting_speeds(p, speed) < 0)
    return ax_error_context("%s", path);
  return AX_OK;
}

int ax_sim_profile_load(const char *path, AxSimProfile *p) {
  AxOptState st;
  memset(p, 0, sizeof *p);
  int rc = ax_options_parse_file(&PROFILE_FILE, p, path, &st);
  for (int i = 0; rc == AX_OK && i < PROFILE_FILE.n_opts; i++)
    if (!ax_options_was_set(&PROFILE_FILE, &st, KEYS[i].name))
      rc = AX_FAIL("profile %s has no '%s = ...' line (write it with `axonn profile`)", path,
                   KEYS[i].name);
  if (rc == AX_OK) rc = check_speeds(p, path);
  if (rc != AX_OK) {
    ax_sim_profile_free(p);
    return ax_error_pending() ? AX_ERR : AX_FAIL("cannot read profile %s", path);
  }
  return AX_OK;
}

int ax_sim_profile_matches(const AxSimProfile *p, const AxTrainConfig *cfg) {
  int micro = cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / cfg->grid.g_data;
  const struct { const char *name; int profile, run; } dims[] = {
      {"micro-batch", p->micro_batch, micro}, {"seq", p->seq, cfg->model.seq},
      {"hidden", p->hidden, cfg->model.hidden},     {"heads", p->heads, cfg->model.heads},
      {"vocab", p->vocab, cfg->model.vocab},        {"precision", p->precision, cfg->exec.precision}};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
    if (dims[i].profile != dims[i].run)
      return AX_FAIL("the profile was measured at --%s %d, this run has %d: profile it with "
                     "the run's options (axonn profile ...)", dims[i].name, dims[i].profile,
                     dims[i].run);
  const struct { const char *name; double profile, run; } rates[] = {
      {"dropout", p->dropout, cfg->model.dropout},
      {"attention-dropout", p->attention_dropout, cfg->model.attention_dropout}};
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
    if (rates[i].profile != rates[i].run)
      return AX_FAIL("the profile was measured at --%s %g, this run has %g: profile it with "
                     "the run's options (axonn profile ...)", rates[i].name, rates[i].profile,
                     rates[i].run);
  if (strcmp(p->device, cfg->exec.device))
    return AX_FAIL("the profile was measured on --device %s, this run has %s", p->device,
                   cfg->exec.device);
  return AX_OK;
}

static int parse_speeds(const char *key, const char *text, double *speed) {
  const char *at = text ? text : "";
  int n = 0;
  while (*at && n < AX_SIM_PROFILE_MAX_K) {
    char *end;
    speed[n] = strtod(at, &end);
    if (end == at || !(speed[n] > 0) || !isfinite(speed[n]) || (*end && *end != ','))
      return AX_FAIL("profile: %s '%s' is not a list of speeds like 1,0.5", key, text);
    n++;
    at = *end ? end + 1 : end;
  }
  if (n == 0) return AX_FAIL("profile: %s is empty", key);
  return n;
}

int ax_sim_profile_speeds(const AxSimProfile *p, double *speed) {
  return parse_speeds("concurrency_speed", p->concurrency_speed, speed);
}

int ax_sim_profile_waiting_speeds(const AxSimProfile *p, double *speed) {
  if (p->waiting_speed && strcmp(p->waiting_speed, "none") == 0) return 0;
  return parse_speeds("waiting_speed", p->waiting_speed, speed);
}

void ax_sim_profile_free(AxSimProfile *p) { ax_options_free(&PROFILE_FILE, p); }

double ax_sim_profile_ring_s_per_byte(const AxSimProfile *p) {
  int n = p->allreduce_ranks;
  if (n < 2 || !(p->allreduce_bytes_per_s > 0)) return 0;
  double sums = (n - 1.0) / n * p->reduce_s_per_elem / sizeof(float);
  double left = 1.0 / p->allreduce_bytes_per_s - sums;
  return left > 0 ? left * n / (2.0 * (n - 1)) : 0;
}

void ax_sim_profile_machine(const AxSimProfile *p, int ranks, AxMachine *m) {
  memset(m, 0, sizeof *m);
  char host[AX_MACHINE_NAME_MAX - 16] = "this host";
  gethostname(host, sizeof host - 1);
  snprintf(m->name, sizeof m->name, "%s (profiled)", host);
  m->gpus_per_node = ranks > 0 ? ranks : 1;
  m->intra_bytes_per_s = m->inter_bytes_per_s = p->copy_bytes_per_s / 2;
  snprintf(m->device, sizeof m->device, "cpu");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  m->cores_per_node = cores > 0 ? (int)cores : 1;
}
