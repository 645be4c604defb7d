/* trainer.c — building a training run on this rank: grid, this rank's stage of the model,
 * backend, optimizer, data and pipeline scheduler; the header lines; saving the model; and
 * tearing it all down. Every setup phase ends with an agreement across ranks, so a failure on
 * one rank stops every rank with that rank's message. The step itself is in train_step.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/gpt_init.h"
#include "mpi/cuda_aware.h"
#include "mpi/mpi_util.h"
#include "mpi/trace_merge.h"
#include "pipeline/partition.h"
#include "src/core/error.h"
#include "src/core/log.h"
#include "src/core/watchdog.h"
#include "src/io/checkpoint.h"
#include "src/io/model_file.h"
#include "trainer_impl.h"

_Static_assert(AX_PREC_BF16 == (int)AX_DTYPE_BF16 && AX_PREC_FP16 == (int)AX_DTYPE_F16,
               "AxPrecision mirrors AxDType");

enum { SYNTH_TRAIN_TOKENS = 2000000, SYNTH_VAL_TOKENS = 200000, TRACE_CAPACITY = 1 << 20 };

static int stage_first(const AxTrainer *t) { return t->grid.stage == 0; }
static int stage_last(const AxTrainer *t) { return t->grid.stage == t->grid.P - 1; }

static int setup_grid(AxTrainer *t) {
  int mpi = 0;
  MPI_Initialized(&mpi);
  if (!mpi) {
    if (ax_train_ranks(&t->cfg) != 1)
      return AX_FAIL("a grid of %lld ranks needs MPI (run under mpirun/srun/jsrun)",
                     ax_train_ranks(&t->cfg));
    ax_grid_solo(&t->grid);
    return AX_OK;
  }
  const int tp[3] = {t->cfg.grid.gx, t->cfg.grid.gy, t->cfg.grid.gz};
  AX_TRY(ax_grid_create_tp(&t->grid, t->cfg.grid.g_inter, t->cfg.grid.g_data, tp));
  t->have_grid = 1;
  ax_set_rank(t->grid.rank);
  /* the default chunking; polite waiting when this rank's CPU set is oversubscribed */
  t->grid.comm_cfg = ax_comm_config_default();
  t->grid.comm_cfg.polite = ax_mpi_polite_for(t->grid.share_size);
  t->grid.comm_cfg.traffic = &t->traffic;
  return AX_OK;
}

/* --emulate-link with one node (one process, or every rank on one machine and no
 * --ranks-per-node, or --ranks-per-node as large as the job): no message crosses the link. */
static void warn_one_node(const AxTrainer *t) {
  if (!ax_link_emulating(t->links) || ax_link_nodes(t->links) > 1) return;
  ax_warn("--emulate-link has no effect: all %d rank(s) are on one %snode, so no message crosses "
          "a link (to emulate one, run 2 or more ranks with --ranks-per-node N: virtual nodes of "
          "N ranks each)", t->grid.size, t->cfg.grid.ranks_per_node > 0 ? "virtual " : "");
}

/* Virtual nodes and the emulated link (a phase: a node spread over machines fails there only). */
static int setup_links(AxTrainer *t) {
  t->grid.comm_cfg.traffic = &t->traffic;
  if (!t->have_grid) return AX_OK;
  AxLinkEmuConfig lc = {.ranks_per_node = t->cfg.grid.ranks_per_node};
  /* Gemini's replica schedule learns each step's idle spans from the links' logs */
  lc.log_uses = t->cfg.memckpt.memory_checkpoint_every > 0 && t->cfg.memckpt.replica_schedule == AX_REPLICAS_IDLE;
  if (t->cfg.grid.emulate_link && ax_link_spec_parse(t->cfg.grid.emulate_link, &lc.link) != AX_OK)
    return ax_error_context("--emulate-link");
  AX_TRY(ax_link_emu_create(&t->links, t->grid.world, &lc));
  warn_one_node(t);
  t->grid.comm_cfg.links = t->links;
  ax_tp_mpi_init(&t->tpm, &t->grid); /* with the links: its collectives cross them too */
  return AX_OK;
}

static int setup_model(AxTrainer *t) {
  if (t->cfg.model.init) {
    AX_TRY(ax_model_file_read_config(t->cfg.model.init, &t->model));
  } else {
    t->model = ax_train_model_config(&t->cfg);
    AX_TRY(ax_gpt_config_check(&t->model));
  }
  if (t->cfg.model.seq > t->model.max_seq)
    return AX_FAIL("--seq %d exceeds the model's maximum sequence length %d", t->cfg.model.seq,
                   t->model.max_seq);
  t->shard = t->cfg.data.batch / t->cfg.grid.g_data;
  t->micro = t->cfg.data.micro_batch ? t->cfg.data.micro_batch : t->shard;
  t->n_micro = t->shard / t->micro;
  t->limit = t->cfg.grid.pipeline_limit ? t->cfg.grid.pipeline_limit : t->grid.P;
  if (t->limit > t->n_micro) t->limit = t->n_micro; /* never more in flight than there are */
  return AX_OK;
}

static int setup_partition(AxTrainer *t) {
  int P = t->grid.P, s = t->grid.stage;
  t->first_block = ax_malloc((size_t)(P + 1) * sizeof *t->first_block);
  if (!t->first_block) return AX_ERR;
  AX_TRY(ax_partition(t->model.layers, P, t->cfg.grid.stage_layers, t->first_block));
  int l0 = t->first_block[s], l1 = t->first_block[s + 1], ac = 0;
  if (t->cfg.exec.checkpoint_activations)
    ac = t->cfg.exec.ac ? t->cfg.exec.ac : ax_partition_default_ac(l1 - l0, t->model.layers);
  if (ac > l1 - l0)
    return AX_FAIL("--ac %d exceeds the %d block(s) of stage %d", ac, l1 - l0, s);
  t->spec = (AxStageSpec){.l0 = l0, .l1 = l1, .first = stage_first(t), .last = stage_last(t),
                          .B = t->micro, .T = t->cfg.model.seq,
                          .n_slots = ax_sched_slots(s, P, t->limit), .ac = ac,
                          .tp = ax_trainer_tp_on(t) ? &t->tpm.comm : NULL,
                          .oar = t->cfg.grid.tp_oar, .ors = t->cfg.grid.tp_ors, .oag = t->cfg.grid.tp_oag,
                          .ag_cache = t->cfg.grid.tp_ag_cache,
                          .gather_budget_mb = t->cfg.grid.tp_gather_budget,
                          .dropout = (float)t->cfg.model.dropout,
                          .attention_dropout = (float)t->cfg.model.attention_dropout,
                          .dropout_seed = (uint64_t)t->cfg.data.seed};
  return AX_OK;
}

static int setup_backend(AxTrainer *t) {
  AxBackendConfig bc = {.device = t->cfg.exec.device,
                        .dtype = (AxDType)t->cfg.exec.precision,
                        .threads = t->cfg.exec.threads,
                        .bind = t->cfg.exec.bind,
                        .fused_attention = t->cfg.exec.fused_attention,
                        .cpu_storage16 = 1, /* --device cpu --precision bf16|fp16 */
                        .local_rank = t->grid.local_rank,
                        .local_size = t->grid.local_size,
                        .share_rank = t->grid.share_rank,
                        .share_size = t->grid.share_size};
  t->be = t->make_backend ? t->make_backend(&bc, t->make_backend_ctx) : ax_backend_create(&bc);
  if (!t->be) return AX_ERR;
  /* where MPI gets device memory: the pipeline's messages, the device optimizer's gradients */
  t->device_buffers = ax_mpi_device_buffers(t->cfg.exec.cuda_aware_mpi, t->be->is_host,
                                            t->mpi_path_why, sizeof t->mpi_path_why);
  ax_tp_mpi_bind(&t->tpm, t->be, t->device_buffers); /* the layers' buffers are the backend's */
  int opt_threads = t->cfg.optim.optimizer_threads ? t->cfg.optim.optimizer_threads : t->be->threads;
  t->opt_pool = ax_pool_create(opt_threads, NULL, NULL);
  return t->opt_pool ? AX_OK : AX_ERR;
}

/* The fp32 master weights (host arena) from --init or the seeded initialization, both of the
 * whole stage (this rank keeps its shards). */
static int load_params(AxTrainer *t) {
  float *const master[1] = {t->off.master};
  AxWholeStage w;
  AX_TRY(ax_trainer_whole_open(t, &w, master, 1, 1));
  int rc = AX_OK;
  if (t->cfg.model.init)
    rc = ax_model_file_read_stage(t->cfg.model.init, &t->model, &w.whole, w.buf[0]);
  else
    ax_gpt_init_stage(&t->model, &w.whole, (uint64_t)t->cfg.data.seed, w.buf[0]);
  if (rc == AX_OK) ax_trainer_whole_extract(t, &w, master);
  ax_trainer_whole_close(&w);
  return rc;
}

int ax_trainer_decay_segments(const AxStageLayout *lay, int decay_all,
                              AxParamSegment segs[AX_N_PARAMS]) {
  int n = 0;
  for (int id = 0; id < AX_N_PARAMS; id++)
    if (lay->has[id])
      segs[n++] = (AxParamSegment){lay->offset[id], lay->count[id],
                                   decay_all || ax_param_decays(id), 0};
  return n;
}

/* --optimizer device: where this rank's gradients are summed (offload/device_opt.h): nothing
 * to sum without data-parallel peers or a tied copy of wte at the other end of the row. */
static AxDeviceSum device_sum_path(const AxTrainer *t) {
  int sums = t->grid.D > 1 || (t->grid.P > 1 && (t->spec.first || t->spec.last));
  int host_only = t->cfg.optim.allreduce_dtype == 1 || ax_train_sparse_embedding_path(&t->cfg) ||
                  ax_link_emulating(t->links);
  return ax_device_sum_path(sums, t->be->is_host, t->device_buffers,
                            t->be->dtype == AX_DTYPE_F32, host_only);
}

static int setup_stage(AxTrainer *t) {
  AX_TRY(ax_stage_create(&t->stage, t->be, &t->model, &t->spec));
  const AxStageLayout *layout = ax_stage_layout_of(t->stage);
  AxParamSegment segs[AX_N_PARAMS];
  AxDeviceSum sum = t->cfg.optim.optimizer_device ? device_sum_path(t) : AX_DEVICE_SUM_HOST;
  AxOffloadConfig oc = {.bucket_size = (size_t)t->cfg.optim.bucket_size,
                        .coarsening = t->cfg.optim.coarsening,
                        .wire_bf16 = t->cfg.optim.allreduce_dtype == 1,
                        .single_chunk = !t->cfg.optim.offload,
                        .state_only = sum == AX_DEVICE_SUM_NONE,
                        .grads_on_device = sum == AX_DEVICE_SUM_DEVICE,
                        .segs = segs,
                        .n_segs = ax_trainer_decay_segments(layout, t->cfg.optim.decay_all, segs)};
  AX_TRY(ax_offload_init(&t->off, t->be, layout->total, ax_stage_params(t->stage),
                         ax_stage_grads(t->stage), &oc, t->opt_pool));
  AX_TRY(load_params(t));
  ax_loss_scale_init(&t->loss_scale, ax_train_loss_scaling_on(&t->cfg),
                     t->cfg.optim.loss_scale_window);
  AX_TRY(t->be->ops->upload_f32(t->be, ax_stage_params(t->stage), t->off.master, layout->total,
                                AX_STREAM_COMPUTE));
  if (t->cfg.optim.optimizer_device) {
    AX_TRY(ax_device_opt_init(&t->dopt, &t->off, ax_stage_params(t->stage)));
    AX_TRY(ax_device_opt_from_host(&t->dopt));
  }
  return ax_sync(t->be);
}

static int setup_synthetic(AxTrainer *t) {
  if (t->model.vocab < 128)
    return AX_FAIL("the built-in corpus is byte text and needs --vocab >= 128 (got %d); give "
                   "--data for other vocabularies", t->model.vocab);
  t->corpus = ax_malloc((SYNTH_TRAIN_TOKENS + SYNTH_VAL_TOKENS) * sizeof *t->corpus);
  if (!t->corpus) return AX_ERR;
  ax_markov_generate(&t->markov, (uint64_t)t->cfg.data.seed + 1, t->corpus, SYNTH_TRAIN_TOKENS);
  ax_markov_generate(&t->markov, (uint64_t)t->cfg.data.seed + 2, t->corpus + SYNTH_TRAIN_TOKENS,
                     SYNTH_VAL_TOKENS);
  AX_TRY(ax_loader_open_tokens(&t->train, t->corpus, SYNTH_TRAIN_TOKENS, t->cfg.data.batch,
                               t->cfg.model.seq, t->model.vocab, t->cfg.data.shuffle,
                               (uint64_t)t->cfg.data.seed));
  AX_TRY(ax_loader_open_tokens(&t->val, t->corpus + SYNTH_TRAIN_TOKENS, SYNTH_VAL_TOKENS,
                               t->cfg.data.batch, t->cfg.model.seq, t->model.vocab, 0, 0));
  t->have_val = 1;
  return AX_OK;
}

/* --val-steps all: the validation data's whole batches, counted from its files (or the built-in
 * corpus's size) on every rank, so the stages between, which read no data, loop as often. */
static int count_val_batches(AxTrainer *t) {
  if (t->cfg.output.val_steps != AX_VAL_STEPS_ALL) return AX_OK;
  size_t bt = (size_t)t->cfg.data.batch * (size_t)t->cfg.model.seq, n = 0;
  if (!t->cfg.data.shards) {
    n = (SYNTH_VAL_TOKENS - 1) / bt;
  } else if (t->cfg.data.val_shards) {
    AxLoader count;
    AX_TRY(ax_loader_open(&count, t->cfg.data.val_shards, t->cfg.data.batch, t->cfg.model.seq,
                          t->model.vocab, 0, 0));
    n = ax_loader_windows(&count);
    ax_loader_close(&count);
  }
  if (n > 1 << 20) return AX_FAIL("--val-steps all: %zu batches, more than 2^20", n);
  t->cfg.output.val_steps = (int)n;
  return AX_OK;
}

/* Only the first stage (tokens) and the last (targets) of each row read data. */
static int setup_data(AxTrainer *t) {
  AX_TRY(count_val_batches(t));
  t->floor = NAN;
  if (!t->cfg.data.shards) {
    ax_markov_build(&t->markov, (uint64_t)t->cfg.data.seed);
    t->floor = t->markov.entropy_rate;
  }
  if (!stage_first(t) && !stage_last(t)) {
    t->have_val = t->cfg.data.shards ? t->cfg.data.val_shards != NULL : 1; /* takes part in validation */
    return AX_OK;
  }
  size_t n = (size_t)t->shard * t->cfg.model.seq;
  t->inputs = ax_malloc(n * sizeof *t->inputs);
  t->targets = t->inputs ? ax_malloc(n * sizeof *t->targets) : NULL;
  if (!t->targets) return AX_ERR;
  t->have_data = 1;
  if (!t->cfg.data.shards) return setup_synthetic(t);
  AX_TRY(ax_loader_open(&t->train, t->cfg.data.shards, t->cfg.data.batch, t->cfg.model.seq, t->model.vocab,
                        t->cfg.data.shuffle, (uint64_t)t->cfg.data.seed));
  if (t->cfg.data.val_shards) {
    AX_TRY(ax_loader_open(&t->val, t->cfg.data.val_shards, t->cfg.data.batch, t->cfg.model.seq, t->model.vocab, 0,
                          0));
    AX_TRY(ax_loader_check_vocab(&t->val, "--val-data")); /* not at the first validation */
    t->have_val = 1;
  }
  return AX_OK;
}

static int setup_scheduler(AxTrainer *t) {
  AxSchedConfig sc = {.pipe = t->grid.pipe, .stage = t->grid.stage, .P = t->grid.P,
                      .limit = t->limit, .max_micro = t->n_micro,
                      .act_bytes = ax_stage_message_bytes(t->stage),
                      .be = t->be, .trace = &t->trace, .cc = t->grid.comm_cfg,
                      .device_buffers = t->device_buffers,
                      .backprop = t->have_backprop ? &t->backprop : NULL,
                      .lockstep = &t->grid.cell};
  AX_TRY(ax_trainer_make_ops(t, &sc.ops));
  AX_TRY(ax_sched_init(&t->sched, &sc));
  t->have_sched = 1;
  if (t->cfg.debug.debug_delay_stage == t->grid.stage) t->sched.delay_ms = t->cfg.debug.debug_delay_ms;
  t->sched.forward_ms = t->cfg.debug.debug_forward_ms;
  t->sched.backward_ms = t->cfg.debug.debug_backward_ms;
  return AX_OK;
}

static int setup_trace(AxTrainer *t) {
  ax_trace_off(&t->trace);
  if (!t->cfg.output.trace) return AX_OK;
  int lo = 0, hi = 0;
  ax_train_trace_range(&t->cfg, &lo, &hi); /* checked by ax_train_config_check */
  AX_TRY(ax_trace_init(&t->trace, lo, hi, TRACE_CAPACITY));
  return t->have_grid ? ax_trace_align(&t->trace, t->grid.world) : AX_OK;
}

/* The emulated link, or the virtual nodes asked for (nothing otherwise). */
static void print_network(const AxTrainer *t) {
  if (!ax_link_emulating(t->links) && t->cfg.grid.ranks_per_node == 0) return;
  char what[320];
  ax_link_describe(t->links, what, sizeof what);
  if (!ax_link_emulating(t->links)) {
    ax_log("network: %s; traffic counted by virtual node", what);
    return;
  }
  ax_log("network: %s: every pipeline and all-reduce message between virtual nodes is delayed "
         "as that link would deliver it (MPI's own small sums are not); the times of this run "
         "are EMULATED", what);
}

/* --fuse-embedding-sync: over how many ranks the tied wte's gradient is summed. */
static void print_embedding_sync(const AxTrainer *t) {
  if (!t->cfg.compression.fuse_embedding_sync) return;
  if (t->grid.P == 1)
    ax_log("embedding sync: nothing to fuse (one stage holds the only copy of wte)");
  else
    ax_log("embedding sync: fused: one all-reduce of the tied wte gradient over its %d holders "
           "(first and last stage of every row); the data-parallel sum leaves wte out",
           2 * t->grid.D);
}

static const char *on_off(int on) { return on ? "on" : "off"; }

/* How this run orders the data-parallel all-reduce and the host AdamW (train_step.c's
 * reduce_and_update), and why. */
static const char *optimizer_order(const AxTrainer *t) {
  if (t->grid.D == 1) return "host AdamW by chunk (one data-parallel replica: no all-reduce)";
  if (!t->cfg.optim.offload) return "all-reduce, then host AdamW (--offload 0)";
  if (t->cfg.optim.grad_clip > 0)
    return "all-reduce, then host AdamW: clipping (--grad-clip) needs the whole gradient's norm "
           "before any update (--grad-clip 0 interleaves them, AxoNN's Section V-C)";
  return "all-reduce interleaved with host AdamW (each chunk updated as soon as it is summed)";
}

/* "dynamic (scale 65536; doubled after 200 clean steps, halved on an overflow)" or "off". */
static const char *loss_scaling_text(const AxTrainer *t, char *buf, size_t cap) {
  if (!t->loss_scale.enabled) return "off";
  snprintf(buf, cap, "dynamic (scale %g; doubled after %d clean steps, halved on an overflow)",
           t->loss_scale.scale, t->loss_scale.growth_interval);
  return buf;
}

/* Where the optimizer runs, its chunks and the all-reduce's, for the header. */
static void print_optimizer(const AxTrainer *t) {
  char scaling[96];
  if (t->cfg.optim.optimizer_device) {
    ax_log("optimizer: AdamW and the gradient norm in device memory (--optimizer device): "
           "%.1f MB of fp32 master weights and moments there%s; the host arena holds their "
           "copy for files; %s; loss scaling %s", t->dopt.mem_bytes / 1e6,
           t->be->is_host ? " (the arena itself: device memory is host memory)" : "",
           ax_device_sum_describe(t->dopt.sum), loss_scaling_text(t, scaling, sizeof scaling));
    return;
  }
  ax_log("optimizer: %s; %d bucket(s) of %zu, %d chunk(s) of %zu elements; all-reduce %s in %s; "
         "loss scaling %s", optimizer_order(t), t->off.n_buckets, t->off.bucket,
         t->off.n_chunks, t->off.chunk,
         ax_allreduce_algo_name((AxAllreduceAlgo)t->cfg.grid.allreduce),
         t->off.wire ? "bf16" : "fp32", loss_scaling_text(t, scaling, sizeof scaling));
}

/* Gz > 1: the gathered weights kept across micro-batches (--tp-ag-cache, --tp-gather-budget). */
static void print_gather_cache(const AxTrainer *t) {
  if (t->grid.tp[2] == 1) return;
  size_t bytes;
  int kept = ax_stage_gather_kept(t->stage, &bytes), n = t->spec.l1 - t->spec.l0;
  char budget[48];
  if (t->cfg.grid.tp_gather_budget < 0)
    snprintf(budget, sizeof budget, "-1, the default: every block");
  else
    snprintf(budget, sizeof budget, "%g MB", t->cfg.grid.tp_gather_budget);
  if (!t->cfg.grid.tp_ag_cache) {
    ax_log("tensor parallel: all-gather cache off (--tp-ag-cache 0): the weights are gathered "
           "over Z every micro-batch");
    return;
  }
  ax_log("tensor parallel: gathered weights kept across a step's micro-batches for %d of rank "
         "0's %d blocks (%.2f MB; --tp-gather-budget %s)%s", kept, n, bytes / 1e6, budget,
         kept < n ? "; the others gathered every micro-batch" : "");
}

/* --gx/--gy/--gz: the grid and what each rank keeps of the model. */
static void print_tensor_parallel(const AxTrainer *t) {
  if (!ax_trainer_tp_on(t)) return;
  const int *g = t->grid.tp;
  AxStageLayout whole;
  ax_stage_layout(&whole, &t->model, t->spec.l0, t->spec.l1, t->spec.first, t->spec.last);
  ax_log("tensor parallel: %d x %d x %d (Gx heads and features, Gy channels, Gz sequences and "
         "weight shards) = %d ranks per stage; rank 0 keeps %.2fM of its stage's %.2fM "
         "parameters; OAR %s, ORS %s, OAG %s%s; collectives over X, Y, Z as tensor_parallel "
         "traffic; %s", g[0], g[1], g[2], ax_grid_tp_size(&t->grid),
         ax_stage_layout_of(t->stage)->total / 1e6, whole.total / 1e6, on_off(t->cfg.grid.tp_oar),
         on_off(t->cfg.grid.tp_ors), on_off(t->cfg.grid.tp_oag),
         !t->spec.ac ? "" : t->cfg.grid.tp_ag_cache ? "; all-gather cache on" : "; all-gather cache off",
         ax_tp_mpi_describe(&t->tpm));
  print_gather_cache(t);
}

void ax_trainer_print_header(const AxTrainer *t) {
  const AxGptConfig *m = &t->model;
  if (ax_grid_print(&t->grid, t->be->desc) != AX_OK) ax_error_clear();
  const char *from = t->weights_from[0] ? t->weights_from : t->cfg.model.init;
  char dropout[128] = "";
  if (t->spec.dropout > 0 || t->spec.attention_dropout > 0)
    snprintf(dropout, sizeof dropout,
             " | dropout %g (embedding and residual branches), %g (attention probabilities)",
             t->spec.dropout, t->spec.attention_dropout);
  ax_log("axonn train: GPT-2 L=%d C=%d NH=%d T=%d V=%d (padded %d) | %.2fM parameters%s%s%s",
         m->layers, m->channels, m->heads, t->cfg.model.seq, m->vocab, m->padded_vocab,
         ax_gpt_num_params(m) / 1e6, from ? " from " : " (random init)", from ? from : "",
         dropout);
  ax_log("batch: %d sequences x %d tokens = %d tokens/step; per row %d micro-batch(es) of %d; "
         "pipeline limit %d; activation checkpointing: %s", t->cfg.data.batch, t->cfg.model.seq,
         t->cfg.data.batch * t->cfg.model.seq, t->n_micro, t->micro, t->limit,
         on_off(t->spec.ac));
  for (int s = 0; s < t->grid.P && t->grid.P > 1; s++)
    ax_log("  stage %d: blocks %d-%d%s%s", s, t->first_block[s], t->first_block[s + 1] - 1,
           s == 0 ? " + embedding" : "", s == t->grid.P - 1 ? " + final LayerNorm, LM head, loss" : "");
  const AxStageLayout *lay = ax_stage_layout_of(t->stage);
  ax_log("memory (rank 0): device %.1f MB weights + %.1f MB gradients + %.1f MB activations%s; "
         "host arena %.1f MB (%s%s)",
         lay->total * t->be->esz / 1e6, lay->total * t->be->esz / 1e6,
         ax_stage_arena_bytes(t->stage) / 1e6,
         t->dopt.mem_bytes ? " + the optimizer state (below)" : "", t->off.arena_bytes / 1e6,
         t->off.params_alias ? "Adam moments; the fp32 weights are the master weights"
                             : "fp32 master weights, Adam moments",
         t->off.grads && !t->off.grads_alias ? ", gradient staging" : "");
  print_network(t);
  ax_trainer_print_compress(t);
  ax_trainer_print_backprop(t);
  if (t->device_buffers)
    ax_log("MPI path: stage messages sent from and received into device buffers (%s); "
           "gradients summed in %s memory", t->mpi_path_why,
           t->dopt.sum == AX_DEVICE_SUM_DEVICE ? "device" : "host");
  else if (!strcmp(t->cfg.exec.device, "cuda"))
    ax_log("MPI path: stage messages and gradients staged through pinned host buffers (%s)",
           t->mpi_path_why);
  print_optimizer(t);
  print_embedding_sync(t);
  print_tensor_parallel(t);
  ax_memckpt_print(t->mc);
  if (!isnan(t->floor))
    ax_log("data: built-in order-2 Markov corpus (seed %lld): %d train / %d val tokens; "
           "entropy rate = loss floor %.4f nats/token", t->cfg.data.seed, SYNTH_TRAIN_TOKENS,
           SYNTH_VAL_TOKENS, t->floor);
  else if (t->have_data)
    ax_log("data: %s (%zu tokens, %zu batches/epoch)%s%s (%d batches a validation)",
           t->cfg.data.shards, ax_loader_tokens(&t->train), ax_loader_windows(&t->train),
           t->have_val ? "; validation: " : "; no validation data",
           t->have_val ? t->cfg.data.val_shards : "", t->cfg.output.val_steps);
}

/* Rank 0 receives the parameters of row 0's other stages (from their tensor-parallel rank 0,
 * world rank stage x Gx·Gy·Gz) and writes the whole model. `mine`: rank 0's whole stage. */
static int gather_and_write(AxTrainer *t, const char *path, const float *mine) {
  int P = t->grid.P, T = ax_grid_tp_size(&t->grid);
  AxStageLayout *lay = ax_calloc((size_t)P, sizeof *lay);
  const float **pieces = ax_calloc((size_t)P, sizeof *pieces);
  int rc = lay && pieces ? AX_OK : AX_ERR;
  for (int s = 0; s < P && rc == AX_OK; s++) {
    ax_stage_layout(&lay[s], &t->model, t->first_block[s], t->first_block[s + 1], s == 0,
                    s == P - 1);
    if (s == 0) {
      pieces[s] = mine;
    } else {
      float *buf = ax_malloc(lay[s].total * sizeof *buf);
      pieces[s] = buf;
      /* row 0's stage s is world rank s; the pipeline communicator carries only pipeline
       * messages (its receives are pre-posted for any tag) */
      AX_WD_NOTE(s * T, "receiving the weights of stage %d from rank %d", s, s * T);
      rc = buf ? ax_mpi_recv_floats(&t->grid.comm_cfg, buf, lay[s].total, s * T, 77,
                                    t->grid.world)
               : AX_ERR;
    }
  }
  AX_WD_NOTE(-1, "writing the model file");
  if (rc == AX_OK) rc = ax_model_file_write_stages(path, &t->model, lay, pieces, P);
  for (int s = 1; s < P && pieces; s++) free((void *)pieces[s]);
  free(pieces);
  free(lay);
  return rc;
}

/* Row 0: each stage whole at its tensor-parallel rank 0, which sends it to rank 0 (or, there,
 * writes the file). */
static int save_row0(AxTrainer *t, const char *path) {
  AX_TRY(ax_trainer_state_to_host(t));
  float *const master[1] = {t->off.master};
  AxWholeStage w;
  AX_TRY(ax_trainer_whole_open(t, &w, master, 1, 0));
  int rc = ax_trainer_whole_gather(t, &w, master);
  if (rc == AX_OK && ax_grid_tp_index(&t->grid) == 0) {
    if (t->grid.stage == 0) {
      rc = gather_and_write(t, path, w.buf[0]);
    } else {
      AX_WD_NOTE(0, "sending the weights of stage %d to rank 0", t->grid.stage);
      ax_traffic_add(&t->traffic, AX_TRAFFIC_OTHER, ax_link_crosses(t->links, 0),
                     w.whole.total * sizeof(float));
      rc = ax_mpi_send_floats(w.buf[0], w.whole.total, 0, 77, t->grid.world);
    }
  }
  ax_trainer_whole_close(&w);
  return rc;
}

int ax_trainer_save(AxTrainer *t, const char *path) {
  AX_TRY(ax_trainer_check_replicas(t)); /* the file keeps one copy of each */
  int rc = t->grid.row == 0 ? save_row0(t, path) : AX_OK; /* the master weights are the model */
  AX_WD_NOTE(0, "in the agreement that rank 0 saved the model");
  AX_TRY(ax_grid_agree(&t->grid, rc));
  ax_log("saved model to %s", path);
  return AX_OK;
}

int ax_trainer_finish(AxTrainer *t) {
  if (!t->cfg.output.trace) return AX_OK;
  int rc = AX_OK;
  AX_WD_NOTE(0, "merging the trace at rank 0");
  AxRankLayout layout = ax_grid_layout(&t->grid);
  if (t->have_grid)
    rc = ax_trace_merge_write(&t->trace, t->grid.world, t->cfg.output.trace, &layout);
  else
    rc = ax_trace_write_json(t->cfg.output.trace, t->trace.ev, &t->trace.n, 1, &layout);
  AX_TRY(ax_grid_agree(&t->grid, rc));
  ax_log("wrote trace of steps %s to %s", t->cfg.output.trace_steps, t->cfg.output.trace);
  return AX_OK;
}

int ax_trainer_recomputes(const AxTrainer *t) { return t->spec.ac > 0; }

double ax_trainer_flops_per_step(const AxTrainer *t) {
  return ax_gpt_train_flops(&t->model, t->cfg.data.batch, t->cfg.model.seq, ax_trainer_recomputes(t));
}

int ax_trainer_peak_shapes(const AxTrainer *t, int gpu, AxGemmShape out[AX_PEAK_MAX_SHAPES]) {
  AxGemmShape model[AX_GPT_GEMMS];
  int n = ax_gpt_gemm_shapes(&t->model, t->micro * t->cfg.model.seq, model);
  return ax_peak_shapes(model, n, gpu, out);
}

double ax_trainer_loss_floor(const AxTrainer *t) { return t->floor; }
const AxGptConfig *ax_trainer_model(const AxTrainer *t) { return &t->model; }
const AxGrid *ax_trainer_grid(const AxTrainer *t) { return &t->grid; }
int ax_trainer_val_batches(const AxTrainer *t) { return t->cfg.output.val_steps; }

void ax_trainer_loss_scale(const AxTrainer *t, double *scale, long long *skipped) {
  *scale = t->loss_scale.scale;
  *skipped = t->loss_scale.skipped;
}
size_t ax_trainer_device_peak_bytes(const AxTrainer *t) { return t->be->device_peak_bytes; }
const AxTrace *ax_trainer_trace(const AxTrainer *t) { return &t->trace; }
const AxLinkEmu *ax_trainer_links(const AxTrainer *t) { return t->links; }
const AxTraffic *ax_trainer_traffic(const AxTrainer *t) { return &t->traffic; }

const AxTpStats *ax_trainer_step_tp(const AxTrainer *t) { return &t->step_tp; }

const AxTraffic *ax_trainer_step_traffic(const AxTrainer *t, int *steps) {
  *steps = t->traffic_steps;
  return &t->step_traffic;
}

void ax_trainer_destroy(AxTrainer *t) {
  if (!t) return;
  ax_memckpt_free(t->mc); /* joins a copy still running */
  t->mc = NULL;
  if (t->have_sched) ax_sched_destroy(&t->sched);
  if (t->have_backprop) ax_backprop_free(&t->backprop);
  ax_link_emu_destroy(t->links); /* after the engines that send through it */
  ax_trace_free(&t->trace);
  ax_grad_compress_free(&t->gc);
  ax_measured_free(&t->measured);
  ax_codec_free(t->codec);
  ax_shaped_codecs_free(&t->shaped);
  ax_compress_auto_free(&t->auto_compress);
  ax_two_level_free(&t->two_level);
  ax_trainer_free_embed_sync(t);
  ax_trainer_free_early_sync(t); /* before the offload its sum works on */
  ax_device_opt_free(&t->dopt);
  ax_offload_free(&t->off);
  ax_stage_destroy(t->stage);
  ax_pool_destroy(t->opt_pool);
  ax_tp_mpi_release(&t->tpm); /* its pinned buffers are the backend's */
  ax_backend_destroy(t->be);
  ax_loader_close(&t->train);
  ax_loader_close(&t->val);
  free(t->corpus);
  free(t->inputs);
  free(t->targets);
  free(t->first_block);
  ax_ckpt_unlock(t->ckpt_lock);
  if (t->have_grid) ax_grid_destroy(&t->grid);
  free(t);
}

/* One set-up phase, agreed by every rank; what it does is noted for the watchdog (a start-up
 * that outlives --step-timeout names it, or that this rank waits for the others). */
static int phase(AxTrainer *t, int (*fn)(AxTrainer *), const char *what) {
  AX_WD_NOTE(-1, what);
  int rc = fn(t);
  ax_wd_detail("done here, waiting for every other rank to finish it", 0, -1);
  return ax_grid_agree(&t->grid, rc);
}

int ax_trainer_create(AxTrainer **out, const AxTrainConfig *cfg) {
  return ax_trainer_create_on(out, cfg, NULL, NULL);
}

int ax_trainer_create_on(AxTrainer **out, const AxTrainConfig *cfg, AxBackendMaker make,
                         void *ctx) {
  *out = NULL;
  AxTrainer *t = ax_calloc(1, sizeof *t);
  if (!t) return AX_ERR;
  t->make_backend = make;
  t->make_backend_ctx = ctx;
  t->cfg = *cfg;
  t->ckpt_lock = -1;
  t->replicas_differ = t->tied_differ = -1;
  t->lr = (AxLrSchedule){.cosine = cfg->optim.lr_schedule == AX_LR_COSINE, .lr = cfg->optim.lr,
                         .min_frac = cfg->optim.min_lr_frac, .warmup = cfg->optim.warmup,
                         .total = cfg->optim.steps};
  ax_trace_off(&t->trace);
  AX_WD_NOTE(-1, "creating the process grid");
  int rc = setup_grid(t);
  if (rc == AX_OK) rc = phase(t, setup_links, "setting up the links");
  if (rc == AX_OK) rc = phase(t, setup_model, "building the model");
  if (rc == AX_OK) rc = phase(t, setup_partition, "partitioning the layers");
  if (rc == AX_OK) rc = phase(t, setup_backend, "starting the compute backend");
  if (rc == AX_OK) rc = phase(t, setup_stage, "creating this rank's stage");
  if (rc == AX_OK)
    rc = phase(t, ax_trainer_keep_measured, "reading the checkpoint's measured costs");
  if (rc == AX_OK)
    rc = phase(t, ax_trainer_setup_compress, "setting up compression (profiling the codec)");
  if (rc == AX_OK)
    rc = phase(t, ax_trainer_setup_embed_sync, "setting up the embedding synchronization");
  if (rc == AX_OK)
    rc = phase(t, ax_trainer_setup_early_sync, "setting up the early data-parallel sum");
  if (rc == AX_OK) rc = phase(t, setup_data, "opening the training data");
  if (rc == AX_OK) rc = phase(t, setup_trace, "setting up the trace");
  if (rc == AX_OK) rc = phase(t, ax_trainer_setup_checkpoints, "setting up checkpoints");
  if (rc == AX_OK) rc = phase(t, ax_trainer_setup_memckpt, "setting up memory checkpoints");
  if (rc == AX_OK)
    rc = phase(t, ax_trainer_setup_backprop, "setting up backprop compression");
  if (rc == AX_OK) rc = phase(t, setup_scheduler, "setting up the pipeline schedule");
  if (rc != AX_OK) {
    ax_trainer_destroy(t);
    return AX_ERR;
  }
  *out = t;
  return AX_OK;
}
