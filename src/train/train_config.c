/* train_config.c — the option table of `axonn train` (one table, its entries marked by the
 * group of AxTrainConfig they fill), the compression in effect (the codec's recipe,
 * train_recipe.h, applied where the user gave nothing), the consistency checks, one function a
 * concern, and the warnings about flags the configuration ignores. */
#include "train_config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/plan/espresso.h"
#include "models/gpt_presets.h"
#include "mpi/coll/collectives.h"
#include "mpi/compress/codec.h"
#include "pipeline/backprop_compress.h"
#include "mpi/link/link_spec.h"
#include "mpi/sparse/sparse_sync.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/log.h"
#include "src/memckpt/memckpt_store.h"
#include "train_recipe.h"

#define OFF(f) offsetof(AxTrainConfig, f)
#define NORANGE 1, 0
#define INT(name, f, def, mv, help, lo, hi) {name, AX_OPT_INT, OFF(f), def, mv, help, lo, hi, NULL}
#define LNG(name, f, def, mv, help, lo, hi) {name, AX_OPT_LONG, OFF(f), def, mv, help, lo, hi, NULL}
#define FLT(name, f, def, mv, help, lo, hi) {name, AX_OPT_FLOAT, OFF(f), def, mv, help, lo, hi, NULL}
#define STR(name, f, def, mv, help) {name, AX_OPT_STRING, OFF(f), def, mv, help, NORANGE, NULL}
#define FLAG(name, f, help) {name, AX_OPT_FLAG, OFF(f), "0", NULL, help, NORANGE, NULL}
#define CHOICE(name, f, def, choices, help) \
  {name, AX_OPT_CHOICE, OFF(f), def, NULL, help, NORANGE, choices}

static const AxOption OPTIONS[] = {
    /* -- model (AxModelOptions) */
    STR("model", model.preset, NULL, "NAME",
        "model preset (gpt2-small, gpt2-medium, gpt2-large, gpt2-xl, gpt-12b, gpt-24b, gpt-50b, "
        "gpt-100b, gpt-5b, gpt-10b, gpt-20b, gpt-40b, gpt-80b); explicit flags override it"),
    STR("init", model.init, NULL, "FILE", "start from an llm.c fp32 model file (sets the model size)"),
    INT("layers", model.layers, "4", "N", "transformer blocks", 1, 100000),
    INT("hidden", model.hidden, "128", "N", "hidden size (channels)", 1, 1 << 20),
    INT("heads", model.heads, "4", "N", "attention heads (must divide --hidden)", 1, 1 << 16),
    INT("seq", model.seq, "64", "N", "sequence length (tokens per sequence)", 1, 1 << 20),
    INT("vocab", model.vocab, "256", "N", "vocabulary size (256 = bytes)", 2, 65536),
    FLT("dropout", model.dropout, "0", "P",
        "GPT-2's dropout in training: the embedding's output and each residual branch dropped "
        "with probability P (GPT-2: 0.1; 0: none)", 0, 0.9),
    FLT("attention-dropout", model.attention_dropout, "0", "P",
        "GPT's third dropout in training: each attention probability dropped with probability P "
        "before it weighs the values (GPT-2: 0.1; 0: none; explicit attention only)", 0, 0.9),
    /* -- data (AxDataOptions) */
    STR("data", data.shards, NULL, "PATTERN",
        "llm.c token shards (file, glob or comma list); none: built-in Markov corpus"),
    STR("val-data", data.val_shards, NULL, "PATTERN", "validation token shards"),
    INT("shuffle", data.shuffle, "1", "0|1", "shuffle batch windows each epoch (0: sequential)", 0, 1),
    LNG("seed", data.seed, "1337", "N", "seed for initialization, data order and sampling", 0,
        9.2e18),
    INT("batch", data.batch, "16", "N", "global batch size in sequences", 1, 1 << 24),
    INT("micro-batch", data.micro_batch, "0", "N",
        "sequences per micro-batch (0: the whole per-row shard)", 0, 1 << 24),
    /* -- grid (AxGridOptions) */
    INT("g-inter", grid.g_inter, "1", "P", "pipeline stages (inter-layer parallelism)", 1, 1 << 16),
    INT("g-data", grid.g_data, "1", "D",
        "data-parallel rows (unset: the job's ranks / (--g-inter x --gx x --gy x --gz))", 1,
        1 << 20),
    INT("gx", grid.gx, "1", "N", "tensor parallelism: ranks splitting heads, features and the "
        "vocabulary (docs/tensor-parallel.md)", 1, 1 << 16),
    INT("gy", grid.gy, "1", "N", "tensor parallelism: ranks splitting the hidden channels", 1, 1 << 16),
    INT("gz", grid.gz, "1", "N", "tensor parallelism: ranks splitting the sequences of a micro-batch "
        "and sharding every weight block", 1, 1 << 16),
    INT("tp-oar", grid.tp_oar, "1", "0|1", "tensor parallelism: overlap the backward all-reduces "
        "with the weight-gradient GEMMs (OAR)", 0, 1),
    INT("tp-ors", grid.tp_ors, "1", "0|1", "tensor parallelism: finish the weight gradients' "
        "reduce-scatters at the end of the backward (ORS; one more weight-sized buffer)", 0, 1),
    INT("tp-oag", grid.tp_oag, "1", "0|1", "tensor parallelism: start the next block's weight "
        "all-gathers before a block's forward (OAG)", 0, 1),
    INT("tp-ag-cache", grid.tp_ag_cache, "1", "0|1", "tensor parallelism: the weights "
        "all-gathered over Z are kept for the step's later micro-batches (gathered once a step, "
        "within --tp-gather-budget) and for the recompute of --checkpoint-activations", 0, 1),
    FLT("tp-gather-budget", grid.tp_gather_budget, "-1", "MB",
        "tensor parallelism with --tp-ag-cache 1: MB of gathered block weights kept across "
        "micro-batches, the first blocks first (-1: every block); blocks beyond it are gathered "
        "every micro-batch", -1, 1e12),
    INT("pipeline-limit", grid.pipeline_limit, "0", "N",
        "micro-batches in flight in the pipeline (0: --g-inter)", 0, 1 << 20),
    STR("stage-layers", grid.stage_layers, NULL, "N,N,...",
        "blocks per pipeline stage (default: as even as possible)"),
    CHOICE("allreduce", grid.allreduce, "auto", "auto|mpi|ring|rhd",
           "data-parallel all-reduce algorithm (mpi: MPI_Iallreduce, not with --emulate-link)"),
    INT("ranks-per-node", grid.ranks_per_node, "0", "N",
        "virtual nodes of N consecutive ranks (rank r on node r/N; N divides the job) for "
        "--emulate-link and the traffic counters (0: the real nodes)", 0, 1 << 20),
    STR("emulate-link", grid.emulate_link, NULL, "BW[,LAT]",
        "EMULATE a network between virtual nodes: every pipeline and all-reduce message between "
        "two nodes takes at least LAT + bytes/BW, one message at a time per link and direction "
        "(e.g. 10Gbps,5us, 100Gbps, 1.5GB/s,2ms; bps/Kbps/Mbps/Gbps or B/s with K/M/G; latency "
        "s/ms/us/ns; default: off); figures measured so are emulated"),
    /* -- compression (AxCompressionOptions) */
    STR("compress", compression.compress, "none", "auto|CODEC[:K=V,...]",
        "compress the data-parallel gradient sum (CaSync) with CODEC: none, identity, onebit, "
        "tbq, terngrad, dgc, graddrop, topk, randk, qsgd, efsignsgd, powersgd (e.g. "
        "onebit:ef=1, dgc:ratio=0.001, powersgd:rank=4, terngrad:bits=2; onebit, powersgd and "
        "dgc take their papers' recipes where the spec and flags leave them: "
        "docs/compression.md); "
        "auto: fuse the tensors (--fusion) and let Espresso decide each group's compression "
        "and scheme with --compress-codec (docs/compression.md)"),
    STR("compress-codec", compression.compress_codec, "onebit:ef=1", "CODEC[:K=V,...]",
        "the codec --compress auto applies where it decides to compress"),
    STR("fusion", compression.fusion, NULL, "auto|none|N",
        "tensor fusion before compression (Cupcake): auto, the optimal groups; none, each tensor "
        "alone; N, groups of at most N bytes (K/M/G) (default: auto with --compress auto, "
        "else none; only with --compress auto)"),
    STR("compress-scheme", compression.compress_scheme, "auto", "auto|OPTION",
        "under --compress auto, how each group not kept plain is summed: auto, Espresso's "
        "choice; or one of its options for every group (an ablation), e.g. cpu/flat/ag, "
        "cpu/2l/casync-ring, plain/2l/ar-ring (docs/compression.md lists them)"),
    STR("sparse-embedding-sync", compression.sparse_embedding_sync, "auto", "auto|zen|allgather|dense",
        "how the first stage sums its row-sparse input-embedding gradient over the data-parallel "
        "ranks (--g-inter 2 or more, --g-data 2 or more): Zen's balanced sparse sync, the "
        "naive all-gather of rows, or the dense all-reduce; auto: the cheapest under the "
        "link's cost at the first step (not with --fuse-embedding-sync)"),
    CHOICE("zen-owners", compression.zen_owners, "balanced", "hash|balanced",
           "Zen's owners of the embedding rows: balanced every step from every rank's rows "
           "(push imbalance below 1.1 on 2-16 ranks, for about the same bytes), or the thesis's "
           "hash h_0 (its push imbalance passes 1.1 on 8+ ranks; docs/compression.md)"),
    CHOICE("zen-hierarchy", compression.zen_hierarchy, "auto", "auto|flat",
           "Zen across nodes: auto, in two levels (inside each node, then between the nodes' "
           "ranks of the same local index, then inside again) where the data-parallel ranks of "
           "the first stage sit evenly 2 or more to a node on 2 or more nodes (--ranks-per-node "
           "or the real nodes), else flat; flat: one Zen over all of them"),
    CHOICE("compress-sync", compression.compress_sync, "ring", "ring|ps|ag",
           "how compressed gradients are summed: CaSync ring, co-located parameter server, or "
           "all-gather of every rank's encoding"),
    STR("compress-min-bytes", compression.compress_min_bytes, "auto", "auto|N",
        "compress all-reduce chunks of at least N bytes (K/M/G suffixes; auto: HiPress's cost "
        "model decides per chunk from encode, decode and send costs profiled at the start)"),
    STR("compress-warmup", compression.compress_warmup, "auto", "auto|N",
        "first N steps uncompressed: the data-parallel gradients and the pipeline's backward "
        "messages (--compress-backprop) travel in full (auto: the codec's recipe, a fraction "
        "of --steps: onebit 15%, powersgd 13%, dgc 25%; 0 for the other codecs; "
        "docs/compression.md)"),
    STR("compress-freeze-variance", compression.compress_freeze_variance, "auto", "auto|0|1",
        "1-bit Adam's recipe: Adam's second moment stops updating when compression starts "
        "(after --compress-warmup steps, which must be at least 1; auto: 1 for onebit and dgc "
        "when there is a warm-up, else 0)"),
    STR("compress-local-clip", compression.compress_local_clip, "auto", "auto|0|1",
        "DGC's local gradient clipping (Lin et al. §3.3): while the gradients are compressed, "
        "each data-parallel rank clips its own gradient's norm to --grad-clip / sqrt(G_data) "
        "before the codec accumulates it, in place of clipping the summed gradient (auto: 1 "
        "for dgc, else 0; needs --grad-clip > 0)"),
    INT("compress-remeasure", compression.compress_remeasure, "0", "0|1",
        "on --resume, measure the costs the compression decisions rest on again (0: take the "
        "figures the checkpointed run measured, so it decides as that run did and its codec "
        "state carries over; they are kept where grid, codec and link are the same)", 0, 1),
    INT("compress-vectors", compression.compress_vectors, "0", "0|1",
        "compress the 1-D tensors (biases, LayerNorm weights) too (0: they are summed plain, "
        "as PowerSGD's reference implementation does)", 0, 1),
    STR("compress-stages", compression.compress_stages, "all", "all|F",
        "selective stage compression (Optimus-CC §7): --compress applies to the data-parallel "
        "gradients of the earliest fraction F of the pipeline stages only, F in [0, 1), never "
        "the last stage, and there to every part the codec shrinks (all: every stage, the "
        "cost model decides); without --compress: PowerSGD with its recipe (Optimus-CC §9.1)"),
    STR("compress-backprop", compression.compress_backprop, "none", "none|powersgd[:rank=R]",
        "compressed backpropagation (Optimus-CC §5): backward activation gradients between "
        "stages travel as PowerSGD factors P and Q (default rank 16); needs --g-inter 2 or more"),
    INT("lazy-error", compression.lazy_error, "1", "0|1",
        "with --compress-backprop: a link's compression error is added to its next compressed "
        "message (lazy error propagation, Optimus-CC §5.1)", 0, 1),
    INT("epilogue-only", compression.epilogue_only, "1", "0|1",
        "with --compress-backprop: compress only the epilogue's backward messages, the last "
        "P-1-s micro-batches into stage s (Optimus-CC §5.2; 0: every backward message)", 0, 1),
    INT("fuse-embedding-sync", compression.fuse_embedding_sync, "0", "0|1",
        "one all-reduce of the tied embedding's gradient over the 2 x G_data ranks that hold it, "
        "instead of a first/last sum and two data-parallel sums (Optimus-CC §6)", 0, 1),
    /* -- optim (AxOptimOptions) */
    INT("steps", optim.steps, "500", "N", "optimizer steps", 0, 1 << 30),
    FLT("lr", optim.lr, "3e-3", "X", "peak learning rate", 0, 10),
    CHOICE("lr-schedule", optim.lr_schedule, "cosine", "constant|cosine",
           "learning-rate schedule after the warm-up"),
    INT("warmup", optim.warmup, "20", "N", "linear warm-up steps", 0, 1 << 30),
    FLT("min-lr-frac", optim.min_lr_frac, "0.1", "X", "cosine floor as a fraction of --lr", 0, 1),
    FLT("weight-decay", optim.weight_decay, "0.1", "X", "decoupled weight decay (AdamW)", 0, 10),
    FLAG("decay-all", optim.decay_all, "decay biases and LayerNorm parameters too"),
    FLT("beta1", optim.beta1, "0.9", "X", "Adam beta1", 0, 0.999999),
    FLT("beta2", optim.beta2, "0.95", "X", "Adam beta2", 0, 0.99999999),
    FLT("eps", optim.eps, "1e-8", "X", "Adam epsilon", 0, 1),
    FLT("grad-clip", optim.grad_clip, "1.0", "X", "clip the global gradient norm (0 = off)", 0, 1e30),
    INT("offload", optim.offload, "1", "0|1",
        "interleave the chunked gradient all-reduce with the host AdamW (0: all-reduce, then "
        "update)", 0, 1),
    CHOICE("optimizer", optim.optimizer_device, "host", "host|device",
           "where the fp32 master weights, Adam moments and AdamW live: host memory (AxoNN's "
           "offload) or device memory beside the weights (4x the model state there; on many "
           "ranks the gradients are summed first, in device memory with CUDA-aware MPI, else "
           "staged through host memory; no memory checkpoints, no --compress)"),
    LNG("bucket-size", optim.bucket_size, "16M", "N", "optimizer bucket size in elements", 1, 1e15),
    INT("coarsening", optim.coarsening, "4", "K", "buckets per all-reduce chunk", 1, 1 << 20),
    INT("optimizer-threads", optim.optimizer_threads, "0", "N",
        "host AdamW threads (0: the compute threads)", 0, 256),
    CHOICE("progress", optim.progress, "calls", "calls|thread",
           "how MPI moves the all-reduce while the host AdamW runs: progress calls between "
           "update sub-blocks, or a communication thread"),
    INT("dp-sync-early", optim.dp_sync_early, "0", "0|1",
        "start the data-parallel gradient sum during the last micro-batch's backward: each "
        "block's gradients as soon as they are final (1), or after the whole backward, AxoNN's "
        "step (0); needs --device cpu --precision fp32, --allreduce-dtype fp32, --progress "
        "calls, --optimizer host, no tensor parallelism and no loss scaling "
        "(docs/compression.md, \"The backward timeline\")", 0, 1),
    CHOICE("allreduce-dtype", optim.allreduce_dtype, "fp32", "fp32|bf16",
           "gradient all-reduce payload (bf16 halves the bytes; summed in fp32)"),
    CHOICE("loss-scaling", optim.loss_scaling, "auto", "auto|dynamic|off",
           "dynamic loss scaling (auto: on for fp16 compute)"),
    INT("loss-scale-window", optim.loss_scale_window, "200", "N",
        "dynamic loss scaling: clean steps in a row before the scale doubles (an overflow "
        "halves it and skips the step)", 1, 1 << 30),
    /* -- debug: an injected overflow (AxDebugOptions) */
    INT("debug-overflow-step", debug.debug_overflow_step, "0", "N",
        "testing: poison one gradient with inf at step N (0: never)", 0, 1 << 30),
    /* -- output: the memory plan only (AxOutputOptions) */
    FLAG("dry-run", output.dry_run, "print the memory plan per rank and exit without allocating"),
    /* -- exec (AxExecOptions) */
    STR("device", exec.device, "cpu", "cpu|cuda",
        "compute backend (cuda: the plugin libaxonn-cuda.so, loaded from $AXONN_PLUGIN_DIR or "
        "next to the binary)"),
    CHOICE("precision", exec.precision, "fp32", "fp32|bf16|fp16", "compute precision"),
    CHOICE("attention", exec.fused_attention, "explicit", "explicit|fused",
           "attention kernels: explicit (GEMMs and a stored T x T softmax) or fused (flash-style, "
           "where the backend has it: CUDA in bf16/fp16, head sizes 16-128; keeps no T x T "
           "matrix, slower today: docs/benchmarks.md)"),
    CHOICE("cuda-aware-mpi", exec.cuda_aware_mpi, "auto", "auto|0|1",
           "pipeline messages to MPI in device buffers (auto: on a GPU when MPI is CUDA-aware; "
           "0: staged through pinned host memory; 1: always, also on the CPU backend)"),
    INT("threads", exec.threads, "0", "N", "compute threads per rank (0: all cores of the rank)", 0,
        256),
    INT("bind", exec.bind, "1", "0|1", "pin compute threads to cores with hwloc", 0, 1),
    FLAG("checkpoint-activations", exec.checkpoint_activations,
         "keep only segment inputs and recompute blocks in the backward pass"),
    INT("ac", exec.ac, "0", "N",
        "blocks per checkpoint segment (0: the factor of L/P closest to sqrt(L))", 0, 1 << 20),
    /* -- output (AxOutputOptions) */
    STR("metrics", output.metrics, NULL, "FILE.csv",
        "write per-step metrics as CSV (--resume appends, after dropping the rows of steps "
        "after the checkpoint's)"),
    STR("metrics-jsonl", output.metrics_jsonl, NULL, "FILE.jsonl",
        "write per-step metrics as JSON lines, one object a step with the CSV's fields "
        "(--resume appends as for --metrics)"),
    STR("tensorboard", output.tensorboard, NULL, "DIR",
        "write per-step metrics as TensorBoard scalars: a new event file "
        "events.out.tfevents.TIME.HOST.PID in DIR (created when missing) per run"),
    STR("save", output.save, NULL, "FILE.bin", "write the trained model (llm.c fp32 format)"),
    INT("val-every", output.val_every, "100", "N", "validation loss every N steps (0: only at the end)",
        0, 1 << 30),
    STR("val-steps", output.val_steps_arg, "8", "N|all",
        "batches per validation, from the start of the validation data (0: no validation; all: "
        "every whole batch it holds, so the loss is the whole text's)"),
    STR("trace", output.trace, NULL, "FILE.json",
        "write a Chrome trace (Perfetto) of every rank's events in --trace-steps"),
    STR("trace-steps", output.trace_steps, "2-3", "A-B", "steps to trace"),
    INT("log-every", output.log_every, "0", "N",
        "progress line every N steps (0: about 20-40 lines; first and last step always)", 0,
        1 << 30),
    FLAG("quiet", output.quiet,
         "print nothing on stdout (errors and warnings still go to stderr; the summary only to "
         "--summary FILE)"),
    STR("summary", output.summary, NULL, "FILE.json", "write the end-of-run JSON summary"),
    INT("timing-skip", output.timing_skip, "1", "N", "warm-up steps left out of the timing", 0,
        1 << 30),
    INT("timing-steps", output.timing_steps, "10", "N", "steps averaged for the batch time", 1, 1 << 30),
    FLT("peak-tflops", output.peak_tflops, "0", "X",
        "peak per rank for % of peak (0: built-in table / measured CPU peak)", 0, 1e9),
    /* -- ckpt (AxCkptOptions) */
    STR("checkpoint-dir", ckpt.checkpoint_dir, NULL, "DIR", "write checkpoints here"),
    INT("checkpoint-every", ckpt.checkpoint_every, "0", "N", "checkpoint every N steps (0: never)", 0,
        1 << 30),
    INT("keep", ckpt.keep, "2", "K", "complete checkpoints kept", 1, 1 << 20),
    FLAG("resume", ckpt.resume, "continue from the newest complete checkpoint: in memory "
         "(--memory-checkpoint-every) or in --checkpoint-dir, whichever is newer"),
    /* -- memckpt (AxMemCkptOptions, src/memckpt/memckpt.h) */
    INT("memory-checkpoint-every", memckpt.memory_checkpoint_every, "0", "N",
        "checkpoint every N steps into node-local shared memory, replicated on peer nodes "
        "(Gemini, docs/memory-checkpoints.md; 0: never)", 0, 1 << 30),
    INT("replicas", memckpt.replicas, "0", "M", "copies of each node's memory checkpoint, its own "
        "counted: groups of M consecutive nodes hold each other's (0: 2, or 1 on one node)", 0,
        1 << 20),
    STR("run-name", memckpt.run_name, NULL, "NAME", "names the memory checkpoints (/dev/shm/axonn-NAME; "
        "default: run- and a hash of every option that shapes the training, not the grid, "
        "outputs or --steps, so a restart finds it and two different runs do not share it)"),
    STR("memory-dir", memckpt.memory_dir, "/dev/shm", "DIR", "where memory checkpoints live"),
    CHOICE("replica-schedule", memckpt.replica_schedule, "idle", "idle|end",
           "when memory-checkpoint replicas cross the network: in chunks in the idle spans of "
           "each step's link use, profiled over 20 steps, what does not fit waiting for the next "
           "steps' spans until the next checkpoint is due, then sent at that step's settle, and "
           "checkpoints taken less often where the spans cannot hold them (Gemini §6.5); or all "
           "of them at the next step's settle, after its loss"),
    FLT("replica-idle-share", memckpt.replica_idle_share, "0.8", "MU",
        "the share of each idle span replicas may fill (Gemini's mu)", 0.01, 1),
    /* -- debug (AxDebugOptions) */
    INT("debug-delay-stage", debug.debug_delay_stage, "-1", "S",
        "testing: slow down pipeline stage S (-1: none)", -1, 1 << 20),
    INT("debug-delay-ms", debug.debug_delay_ms, "0", "MS",
        "testing: sleep this long before each forward/backward on that stage", 0, 60000),
    INT("debug-forward-ms", debug.debug_forward_ms, "0", "MS",
        "testing: every stage sleeps this long before each forward (fixed compute)", 0, 60000),
    INT("debug-backward-ms", debug.debug_backward_ms, "0", "MS",
        "testing: every stage sleeps this long before each backward (fixed compute)", 0, 60000),
    FLT("step-timeout", debug.step_timeout, "1200", "SECONDS",
        "end the whole job with exit status 124 when the start-up, a step, a validation, a "
        "checkpoint or the final save takes longer on some rank, printing what that rank waits "
        "for (0: off)", 0,
        1e6),
    FLT("startup-timeout", debug.startup_timeout, "0", "SECONDS",
        "the start-up's limit instead (reading data, building the model, profiles; 0: "
        "--step-timeout's)", 0, 1e6),
    INT("debug-hang-rank", debug.debug_hang_rank, "-1", "R",
        "testing: world rank R stops making progress in step --debug-hang-step (-1: none)", -1,
        1 << 24),
    INT("debug-hang-step", debug.debug_hang_step, "1", "N",
        "testing: the step in which --debug-hang-rank stops", 1, 1 << 30),
    CHOICE("debug-hang-mode", debug.debug_hang_mode, "sleep",
           "sleep|drop|checkpoint|kill|copy-begin|copy-files|copy-replicas|replica-error",
           "testing: that rank sleeps forever in a forward, drops its next pipeline message, "
           "sleeps forever in that step's checkpoint after writing its file (a rank of row 0), "
           "kills itself (SIGKILL) as the step begins, or kills itself in the step's memory "
           "checkpoint: its slot's manifest removed, its files written, or its replicas handed over "
           "(what the idle schedule lets it send) with no manifest written yet; or, a rank that "
           "sends or receives replicas, its first pass of that copy's replicas inside one of "
           "its waits fails (an error, not a kill)"),
};

const AxOptionTable AX_TRAIN_OPTIONS = {
    "train",
    "Train a GPT-2 model (one process, or a G_inter x G_data grid under mpirun/srun/jsrun).\n"
    "Exit status: 0 done (also after SIGTERM/SIGUSR1 with --checkpoint-dir), 1 error, 124 the "
    "start-up or a step exceeded --step-timeout, 125 a rank was lost, 130 SIGINT.",
    OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0])};

/* --model: the preset's dimensions, except those the user gave explicitly. */
static int apply_preset(AxTrainConfig *cfg, const AxOptState *st) {
  if (!cfg->model.preset) return AX_OK;
  if (cfg->model.init && ax_gpt_preset_find(cfg->model.preset))
    return AX_FAIL("--model conflicts with --init: the model file sets the model");
  AxGptDimFields dims = {&cfg->model.layers, &cfg->model.hidden, &cfg->model.heads, &cfg->model.seq, &cfg->model.vocab};
  return ax_gpt_preset_apply(cfg->model.preset, &AX_TRAIN_OPTIONS, st, dims);
}

static int word_or_int(const char *flag, const char *text, const char *word, int max,
                       int *is_word, int *v);

int ax_train_config_parse(AxTrainConfig *cfg, int argc, char **argv, AxOptState *st) {
  memset(cfg, 0, sizeof *cfg);
  AX_TRY(ax_options_parse(&AX_TRAIN_OPTIONS, cfg, argc, argv, st));
  if (st->help) return AX_OK;
  int all;
  AX_TRY(word_or_int("val-steps", cfg->output.val_steps_arg, "all", 1 << 20, &all,
                     &cfg->output.val_steps));
  if (all) cfg->output.val_steps = AX_VAL_STEPS_ALL;
  AX_TRY(apply_preset(cfg, st));
  return ax_train_resolve_compression(cfg, st);
}

/* ------------------------------------------------------------ the compression recipe */

static void recipe_item(AxRecipeApplied *a, const char *what, const char *source,
                        const char *fmt, ...) AX_PRINTF(4, 5);
static void recipe_item(AxRecipeApplied *a, const char *what, const char *source,
                        const char *fmt, ...) {
  if (a->n >= (int)(sizeof a->item / sizeof a->item[0])) return;
  AxRecipeItem *it = &a->item[a->n++];
  it->what = what;
  it->source = source;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it->value, sizeof it->value, fmt, ap);
  va_end(ap);
}

/* --compress-stages F without --compress: Optimus-CC's codec. */
static int stages_codec(AxTrainConfig *cfg, const AxOptState *st) {
  double f;
  if (ax_options_was_set(&AX_TRAIN_OPTIONS, st, "compress") || ax_train_compresses(cfg) ||
      ax_train_compress_stage_fraction(cfg, &f) != AX_OK || f >= 1) {
    ax_error_clear(); /* a bad --compress-stages: checked by ax_train_config_check */
    return AX_OK;
  }
  char *codec = strdup(AX_STAGES_CODEC);
  if (!codec) return AX_FAIL("out of memory");
  free(cfg->compression.compress);
  cfg->compression.compress = codec;
  recipe_item(&cfg->compression.recipe, "compress",
              "Optimus-CC §7 and §9.1: selective stage compression with PowerSGD",
              "%s (--compress-stages %s without --compress)", AX_STAGES_CODEC,
              cfg->compression.compress_stages);
  return AX_OK;
}

/* The codec spec in effect: the recipe's keys the user's spec lacks, canonical when it parses. */
static int resolve_codec(AxTrainConfig *cfg, const char *spec, const AxCompressRecipe *r) {
  AxCompressionOptions *c = &cfg->compression;
  char keys[96], added[96] = "";
  /* a sparsity warm-up only where the spec gives none of its keys, a ratio where it gives
   * neither ratio nor k */
  int own_ramp = ax_codec_spec_has(spec, "ramp") || ax_codec_spec_has(spec, "ramp_from");
  int own_ratio = ax_codec_spec_has(spec, "ratio") || ax_codec_spec_has(spec, "k");
  ax_compress_recipe_keys(r, cfg->optim.beta1, c->warmup_steps, cfg->optim.steps,
                          !own_ramp, !own_ratio, keys, sizeof keys);
  AX_TRY(ax_codec_spec_defaults(spec, keys, c->codec_spec, sizeof c->codec_spec, added,
                                sizeof added));
  AxCodec *codec;
  if (ax_codec_parse(c->codec_spec, &codec) != AX_OK) {
    ax_error_clear(); /* reported by ax_train_config_check */
    return AX_OK;
  }
  snprintf(c->codec_spec, sizeof c->codec_spec, "%s", ax_codec_spec(codec));
  ax_codec_free(codec);
  if (r)
    recipe_item(&c->recipe, "codec", r->keys_source, "%s (%s%s)", c->codec_spec,
                *added ? "added: " : "every key given or the codec's own",
                *added ? added : "");
  if (r && r->sends > 0 && strstr(added, "ratio=")) {
    double ratio = ax_compress_recipe_ratio(r, cfg->optim.steps, c->warmup_steps);
    int after = cfg->optim.steps - c->warmup_steps;
    if (ratio > r->paper_ratio)
      recipe_item(&c->recipe, "codec", r->ratio_source,
                  "ratio=%.3g (a short run: the paper's %g would send each coordinate about %.2g "
                  "times in the %d steps after the %d plain ones, this ratio about %g)", ratio,
                  r->paper_ratio, r->paper_ratio * after, after, c->warmup_steps, r->sends);
    else
      recipe_item(&c->recipe, "codec", r->ratio_source,
                  "ratio=%g (the paper's: each coordinate sent about %.3g times in the %d steps "
                  "after the %d plain ones, at least %g)", ratio, ratio * after, after,
                  c->warmup_steps, r->sends);
  }
  if (r && r->ramp_fraction > 0 && strstr(added, "ramp="))
    recipe_item(&c->recipe, "codec", r->ramp_source,
                "ramp=%d,ramp_from=%d (the sparsity warm-up: %.3g%% of --steps %d, after the %d "
                "plain steps)", (int)floor(r->ramp_fraction * cfg->optim.steps + 1e-9),
                c->warmup_steps + 1, 100 * r->ramp_fraction, cfg->optim.steps, c->warmup_steps);
  return AX_OK;
}

/* "auto" (*is_auto), or an integer in [0, max] into *v. */
/* text is `word` (*is_word = 1) or an integer from 0 to max (into *v). */
static int word_or_int(const char *flag, const char *text, const char *word, int max,
                       int *is_word, int *v) {
  *is_word = !strcmp(text, word);
  if (*is_word) return AX_OK;
  char *end;
  errno = 0;
  long x = strtol(text, &end, 10);
  if (end == text || *end || errno || x < 0 || x > max)
    return AX_FAIL("--%s '%s' is not %s or an integer from 0 to %d", flag, text, word, max);
  *v = (int)x;
  return AX_OK;
}

static int auto_or_int(const char *flag, const char *text, int max, int *is_auto, int *v) {
  return word_or_int(flag, text, "auto", max, is_auto, v);
}

/* --compress-warmup and --compress-freeze-variance: the user's, or the recipe's. */
static int resolve_schedule(AxTrainConfig *cfg, const AxCompressRecipe *r) {
  AxCompressionOptions *c = &cfg->compression;
  int is_auto;
  AX_TRY(auto_or_int("compress-warmup", c->compress_warmup, 1 << 30, &is_auto, &c->warmup_steps));
  if (is_auto) {
    c->warmup_steps = ax_compress_recipe_warmup(r, cfg->optim.steps);
    if (r)
      recipe_item(&c->recipe, "compress-warmup", r->warmup_source, "%d (%.3g%% of --steps %d)",
                  c->warmup_steps, 100 * r->warmup_fraction, cfg->optim.steps);
  }
  AX_TRY(auto_or_int("compress-freeze-variance", c->compress_freeze_variance, 1, &is_auto,
                     &c->freeze_variance));
  if (is_auto) {
    c->freeze_variance = r && r->freeze_variance && c->warmup_steps >= 1;
    if (r)
      recipe_item(&c->recipe, "compress-freeze-variance", r->freeze_source, "%d%s",
                  c->freeze_variance,
                  r->freeze_variance && !c->freeze_variance ? " (no warm-up to freeze after)" : "");
  }
  AX_TRY(auto_or_int("compress-local-clip", c->compress_local_clip, 1, &is_auto, &c->local_clip));
  if (is_auto) {
    c->local_clip = r && r->local_clip && cfg->optim.grad_clip > 0;
    if (r && r->local_clip)
      recipe_item(&c->recipe, "compress-local-clip", r->local_clip_source,
                  "%d (each rank's gradient norm clipped to --grad-clip %g / sqrt(%d) = %.4g)%s",
                  c->local_clip, cfg->optim.grad_clip, cfg->grid.g_data,
                  cfg->optim.grad_clip / sqrt(cfg->grid.g_data > 0 ? cfg->grid.g_data : 1),
                  c->local_clip ? "" : " (--grad-clip 0: no clipping)");
  }
  return AX_OK;
}

int ax_train_resolve_compression(AxTrainConfig *cfg, const AxOptState *st) {
  AxCompressionOptions *c = &cfg->compression;
  memset(&c->recipe, 0, sizeof c->recipe);
  c->codec_spec[0] = 0;
  AX_TRY(stages_codec(cfg, st));
  const char *spec = ax_train_compresses(cfg) ? ax_train_compress_auto(cfg) ? c->compress_codec
                                                                            : c->compress
                                              : NULL;
  const AxCompressRecipe *r = NULL;
  if (spec) {
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, ":"), spec);
    r = ax_compress_recipe(name);
  }
  AX_TRY(resolve_schedule(cfg, r)); /* first: a sparsity warm-up starts after the plain one */
  if (spec) AX_TRY(resolve_codec(cfg, spec, r));
  if (r && !ax_train_compress_auto(cfg) &&
      !ax_options_was_set(&AX_TRAIN_OPTIONS, st, "compress-vectors"))
    recipe_item(&c->recipe, "compress-vectors", AX_VECTORS_SOURCE, "0");
  c->recipe.codec = r ? r->codec : NULL;
  return AX_OK;
}

AxGptConfig ax_train_model_config(const AxTrainConfig *cfg) {
  AxGptConfig m = {.max_seq = cfg->model.seq, .vocab = cfg->model.vocab,
                   .padded_vocab = ax_gpt_pad_vocab(cfg->model.vocab), .layers = cfg->model.layers,
                   .heads = cfg->model.heads, .channels = cfg->model.hidden};
  return m;
}

/* --ranks-per-node against the grid; --emulate-link's text and the all-reduce it can carry. */
static int check_network(const AxTrainConfig *cfg) {
  int ranks = (int)ax_train_ranks(cfg);
  char tp[64] = "";
  if (ax_train_tp_ranks(cfg) > 1)
    snprintf(tp, sizeof tp, " x --gx %d x --gy %d x --gz %d", cfg->grid.gx, cfg->grid.gy, cfg->grid.gz);
  if (cfg->grid.ranks_per_node > 0 && ranks % cfg->grid.ranks_per_node)
    return AX_FAIL("--ranks-per-node %d does not divide the %d rank(s) of --g-inter %d x "
                   "--g-data %d%s", cfg->grid.ranks_per_node, ranks, cfg->grid.g_inter, cfg->grid.g_data, tp);
  if (!cfg->grid.emulate_link) return AX_OK;
  AxLinkSpec link;
  if (ax_link_spec_parse(cfg->grid.emulate_link, &link) != AX_OK)
    return ax_error_context("--emulate-link");
  if (cfg->grid.allreduce == AX_ALLREDUCE_MPI)
    return AX_FAIL("--allreduce mpi cannot run over --emulate-link: MPI_Iallreduce moves its "
                   "bytes itself, past the emulator (use auto, ring or rhd)");
  return AX_OK;
}

int ax_train_compresses(const AxTrainConfig *cfg) {
  return cfg->compression.compress && strcmp(cfg->compression.compress, "none") != 0;
}

int ax_train_compress_auto(const AxTrainConfig *cfg) {
  return cfg->compression.compress && strcmp(cfg->compression.compress, "auto") == 0;
}

const char *ax_train_codec_spec(const AxTrainConfig *cfg) {
  if (cfg->compression.codec_spec[0]) return cfg->compression.codec_spec;
  return ax_train_compress_auto(cfg) ? cfg->compression.compress_codec : cfg->compression.compress;
}

int ax_train_fusion(const AxTrainConfig *cfg, AxFusionSpec *spec) {
  const char *text = cfg->compression.fusion ? cfg->compression.fusion : ax_train_compress_auto(cfg) ? "auto" : "none";
  return ax_fusion_parse(text, spec);
}

int ax_train_compress_scheme(const AxTrainConfig *cfg, int *option) {
  const char *text = cfg->compression.compress_scheme ? cfg->compression.compress_scheme : "auto";
  *option = -1;
  if (!strcmp(text, "auto")) return AX_OK;
  *option = ax_espresso_option_find(text);
  if (*option < 0)
    return AX_FAIL("--compress-scheme %s is not auto or an Espresso option such as "
                   "cpu/flat/casync-ring, cpu/flat/ag, cpu/2l/a2a+ag or plain/2l/ar-ring "
                   "(docs/compression.md)", text);
  return AX_OK;
}

int ax_train_sparse_embedding_sync(const AxTrainConfig *cfg, int *is_auto, int *algo) {
  const char *text = cfg->compression.sparse_embedding_sync ? cfg->compression.sparse_embedding_sync : "auto";
  *is_auto = strcmp(text, "auto") == 0;
  if (*is_auto) return AX_OK;
  AxSparseSyncAlgo a;
  if (ax_sparse_sync_algo_parse(text, &a) != AX_OK)
    return ax_error_context("--sparse-embedding-sync");
  *algo = (int)a;
  return AX_OK;
}

int ax_train_sparse_embedding_path(const AxTrainConfig *cfg) {
  int is_auto, algo = AX_SPARSE_SYNC_DENSE;
  if (ax_train_sparse_embedding_sync(cfg, &is_auto, &algo) != AX_OK) {
    ax_error_clear(); /* checked by ax_train_config_check */
    return 0;
  }
  return (is_auto || algo != AX_SPARSE_SYNC_DENSE) && cfg->grid.g_inter > 1 && cfg->grid.g_data > 1 &&
         !cfg->compression.fuse_embedding_sync && ax_train_tp_ranks(cfg) == 1;
}

/* --sparse-embedding-sync zen|allgather: a first stage whose wte gradient is row-sparse. */
static int check_sparse_embedding(const AxTrainConfig *cfg) {
  int is_auto, algo;
  AX_TRY(ax_train_sparse_embedding_sync(cfg, &is_auto, &algo));
  if (is_auto || algo == AX_SPARSE_SYNC_DENSE) return AX_OK;
  const char *name = cfg->compression.sparse_embedding_sync;
  if (cfg->compression.fuse_embedding_sync)
    return AX_FAIL("--sparse-embedding-sync %s and --fuse-embedding-sync 1 exclude each other: "
                   "the fused sum adds the last stage's dense LM-head gradient in first, so no "
                   "row-sparse gradient is left to sync (docs/compression.md)", name);
  if (cfg->grid.g_inter < 2 || cfg->grid.g_data < 2)
    return AX_FAIL("--sparse-embedding-sync %s needs --g-inter 2 or more (on one stage the "
                   "LM head makes wte's gradient dense) and --g-data 2 or more (got %d x %d)",
                   name, cfg->grid.g_inter, cfg->grid.g_data);
  if (ax_train_tp_ranks(cfg) > 1)
    return AX_FAIL("--sparse-embedding-sync %s does not run with tensor parallelism yet", name);
  return AX_OK;
}

int ax_train_compress_min_bytes(const AxTrainConfig *cfg, int *is_auto, long long *bytes) {
  const char *text = cfg->compression.compress_min_bytes ? cfg->compression.compress_min_bytes : "auto";
  *is_auto = strcmp(text, "auto") == 0;
  if (*is_auto) return AX_OK;
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  long long unit = 1;
  if (end != text && *end && !end[1]) {
    const char *units = "KMG";
    const char *u = strchr(units, *end);
    if (u) unit = 1LL << (10 * (u - units + 1)), end++;
  }
  if (end == text || *end || errno || v < 0 || v > (1LL << 50) / unit)
    return AX_FAIL("--compress-min-bytes '%s' is not auto or a size in bytes (e.g. 0, 65536, "
                   "4M)", text);
  *bytes = v * unit;
  return AX_OK;
}

int ax_train_compress_stage_fraction(const AxTrainConfig *cfg, double *fraction) {
  const char *text = cfg->compression.compress_stages ? cfg->compression.compress_stages : "all";
  *fraction = 1.0;
  if (!strcmp(text, "all")) return AX_OK;
  char *end;
  errno = 0;
  double f = strtod(text, &end);
  if (end == text || *end || errno || !(f >= 0 && f < 1))
    return AX_FAIL("--compress-stages %s is not all or a fraction in [0, 1)", text);
  *fraction = f;
  return AX_OK;
}

int ax_train_stages_requested(const AxTrainConfig *cfg) {
  double f;
  if (ax_train_compress_stage_fraction(cfg, &f) != AX_OK) {
    ax_error_clear(); /* checked by ax_train_config_check */
    return 0;
  }
  return ax_train_compresses(cfg) && f < 1;
}

int ax_train_compressed_stages(const AxTrainConfig *cfg, int stages) {
  double f;
  if (!ax_train_compresses(cfg)) return 0;
  if (ax_train_compress_stage_fraction(cfg, &f) != AX_OK) {
    ax_error_clear(); /* checked by ax_train_config_check */
    return 0;
  }
  if (f >= 1) return stages;
  int n = (int)floor(f * stages + 1e-9); /* 0.29 x 100 is 29 stages, not 28.999... */
  return n < stages ? n : stages - 1;
}

/* --compress-stages: all or a fraction, and only with --compress. */
static int check_compress_stages(const AxTrainConfig *cfg) {
  double f;
  AX_TRY(ax_train_compress_stage_fraction(cfg, &f));
  if (f < 1 && !ax_train_compresses(cfg))
    return AX_FAIL("--compress-stages %s needs --compress (it selects the stages whose "
                   "data-parallel gradients the codec compresses)", cfg->compression.compress_stages);
  return AX_OK;
}

int ax_train_backprop_on(const AxTrainConfig *cfg) {
  return cfg->compression.compress_backprop && strcmp(cfg->compression.compress_backprop, "none") != 0;
}

int ax_train_loss_scaling_on(const AxTrainConfig *cfg) {
  if (cfg->optim.loss_scaling == AX_LOSS_SCALING_AUTO) return cfg->exec.precision == AX_PREC_FP16;
  return cfg->optim.loss_scaling == AX_LOSS_SCALING_DYNAMIC;
}

void ax_train_message_shape(const AxTrainConfig *cfg, size_t *rows, size_t *cols) {
  size_t micro = (size_t)(cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / cfg->grid.g_data);
  *rows = micro / (size_t)cfg->grid.gz * (size_t)cfg->model.seq;
  *cols = (size_t)ax_train_model_config(cfg).channels / (size_t)cfg->grid.gy;
}

/* A compressed message must be smaller than the n x m one it replaces. */
static int check_message_size(const AxTrainConfig *cfg) {
  AxCodec *codec;
  size_t rows, cols;
  ax_train_message_shape(cfg, &rows, &cols);
  size_t n = rows * cols;
  AX_TRY(ax_backprop_codec(cfg->compression.compress_backprop, cols, cfg->compression.lazy_error, &codec));
  size_t bytes = ax_codec_p2p_max_bytes(codec, n);
  ax_codec_free(codec);
  if (bytes >= n * sizeof(float))
    return AX_FAIL("--compress-backprop %s: a compressed message (%zu bytes for %zu x %zu) is "
                   "not smaller than the %zu bytes it replaces; use a lower rank",
                   cfg->compression.compress_backprop, bytes, n / cols, cols, n * sizeof(float));
  return AX_OK;
}

/* --compress-backprop and its companions. */
static int check_backprop(const AxTrainConfig *cfg) {
  if (!ax_train_backprop_on(cfg)) return AX_OK;
  AX_TRY(check_message_size(cfg));
  if (cfg->grid.g_inter < 2)
    return AX_FAIL("--compress-backprop compresses the gradients sent between pipeline stages: "
                   "it needs --g-inter 2 or more (got %d)", cfg->grid.g_inter);
  if (cfg->exec.precision != AX_PREC_FP32)
    return AX_FAIL("--compress-backprop needs --precision fp32 (its codec encodes fp32 "
                   "gradients)");
  return AX_OK;
}

/* --compress and its companions: a codec that parses, a payload it can encode, the stages. */
static int check_compress(const AxTrainConfig *cfg) {
  int is_auto;
  long long min_bytes;
  AX_TRY(ax_train_compress_min_bytes(cfg, &is_auto, &min_bytes));
  AX_TRY(check_compress_stages(cfg));
  AX_TRY(check_sparse_embedding(cfg));
  AxFusionSpec fusion;
  AX_TRY(ax_train_fusion(cfg, &fusion));
  if (cfg->compression.fusion && !ax_train_compress_auto(cfg))
    return AX_FAIL("--fusion %s needs --compress auto (layer-wise compression sends each tensor "
                   "alone)", cfg->compression.fusion);
  int scheme;
  AX_TRY(ax_train_compress_scheme(cfg, &scheme));
  if (scheme >= 0 && !ax_train_compress_auto(cfg))
    return AX_FAIL("--compress-scheme %s needs --compress auto", cfg->compression.compress_scheme);
  if (!ax_train_compresses(cfg)) return AX_OK;
  AxCodec *codec;
  if (ax_codec_parse(ax_train_codec_spec(cfg), &codec) != AX_OK)
    return ax_error_context(ax_train_compress_auto(cfg) ? "--compress-codec" : "--compress");
  ax_codec_free(codec);
  if (cfg->optim.allreduce_dtype != 0)
    return AX_FAIL("--compress needs --allreduce-dtype fp32 (codecs encode fp32 gradients)");
  if (cfg->compression.local_clip && !(cfg->optim.grad_clip > 0))
    return AX_FAIL("--compress-local-clip 1 needs --grad-clip above 0 (the local threshold is "
                   "--grad-clip / sqrt(G_data))");
  if (cfg->compression.freeze_variance && cfg->compression.warmup_steps < 1)
    return AX_FAIL("--compress-freeze-variance needs --compress-warmup of at least 1 step (the "
                   "variance is frozen as the warm-up leaves it)");
  return AX_OK;
}

int ax_train_grid_from_world(AxTrainConfig *cfg, const AxOptState *st, int world) {
  if (ax_options_was_set(&AX_TRAIN_OPTIONS, st, "g-data")) return AX_OK;
  long long others = ax_train_tp_ranks(cfg) * cfg->grid.g_inter;
  if (world % others == 0) cfg->grid.g_data = (int)(world / others);
  return AX_OK;
}

long long ax_train_ranks(const AxTrainConfig *cfg) {
  return ax_train_tp_ranks(cfg) * cfg->grid.g_inter * cfg->grid.g_data;
}

long long ax_train_tp_ranks(const AxTrainConfig *cfg) {
  return (long long)cfg->grid.gx * cfg->grid.gy * cfg->grid.gz;
}

AxTpComm ax_train_tp_sizes(const AxTrainConfig *cfg) {
  return (AxTpComm){.size = {cfg->grid.gx, cfg->grid.gy, cfg->grid.gz}};
}

/* --gx/--gy/--gz: what tensor parallelism runs with so far (every --precision, as without it:
 * the layers and their collectives carry the compute type). */
static int check_tensor_parallel(const AxTrainConfig *cfg) {
  if (ax_train_tp_ranks(cfg) == 1) return AX_OK;
  int micro = cfg->data.micro_batch ? cfg->data.micro_batch : cfg->data.batch / cfg->grid.g_data;
  if (micro % cfg->grid.gz)
    return AX_FAIL("--gz %d does not divide the %d sequences of a micro-batch", cfg->grid.gz, micro);
  return AX_OK;
}

/* --memory-checkpoint-every and its options (with compression too: a recovery from memory
 * restarts the per-rank compression state, trainer_ckpt.c). */
static int check_memory_checkpoints(const AxTrainConfig *cfg) {
  int copy_kill = cfg->debug.debug_hang_mode >= AX_DEBUG_HANG_COPY_BEGIN;
  if (cfg->debug.debug_hang_rank >= 0 && copy_kill && !cfg->memckpt.memory_checkpoint_every)
    return AX_FAIL("--debug-hang-mode copy-* and replica-error need --memory-checkpoint-every");
  if (!cfg->memckpt.memory_checkpoint_every) return AX_OK;
  if (cfg->memckpt.run_name) AX_TRY(ax_memckpt_check_name(cfg->memckpt.run_name));
  return AX_OK;
}

/* --optimizer device: the state copied to the host arena only for files; on many ranks the
 * gradients summed first (offload/device_opt.h), codecs excepted. */
static int check_device_optimizer(const AxTrainConfig *cfg) {
  if (!cfg->optim.optimizer_device) return AX_OK;
  if (cfg->memckpt.memory_checkpoint_every)
    return AX_FAIL("--memory-checkpoint-every copies the optimizer state from host memory: run "
                   "it with --optimizer host");
  if (strcmp(cfg->compression.compress, "none"))
    return AX_FAIL("--compress needs --optimizer host (codecs work on the host gradients)");
  return AX_OK;
}

/* --dp-sync-early 1: the gradients summed in place in host memory while the backward runs,
 * progressed by calls between its blocks (offload/interleave.h, AxEarlySum). */
static int check_early_sync(const AxTrainConfig *cfg) {
  if (!cfg->optim.dp_sync_early) return AX_OK;
  const char *why = NULL;
  if (strcmp(cfg->exec.device, "cpu") != 0 || cfg->exec.precision != AX_PREC_FP32)
    why = "--device cpu --precision fp32 (the gradients summed where the backward writes them)";
  else if (cfg->optim.allreduce_dtype) why = "--allreduce-dtype fp32";
  else if (cfg->optim.progress) why = "--progress calls (the backward's blocks progress it)";
  else if (cfg->optim.optimizer_device) why = "--optimizer host";
  else if (ax_train_tp_ranks(cfg) > 1) why = "no tensor parallelism (--gx/--gy/--gz 1)";
  else if (cfg->optim.loss_scaling == AX_LOSS_SCALING_DYNAMIC || cfg->debug.debug_overflow_step)
    why = "no loss scaling (an overflow is checked before the sum)";
  else if (cfg->compression.local_clip)
    why = "--compress-local-clip 0 (local clipping scales each rank's whole gradient before the "
          "sum starts)";
  return why ? AX_FAIL("--dp-sync-early 1 needs %s", why) : AX_OK;
}

/* Flags the user set that this configuration ignores: one warning each (rank 0), and the run
 * goes on. --emulate-link on one node is warned about by the trainer, which knows the nodes. */
static void warn_inapplicable(const AxTrainConfig *cfg, const AxOptState *st) {
  int strategy = ax_train_compress_auto(cfg), plain = !ax_train_compresses(cfg);
  int no_memckpt = cfg->memckpt.memory_checkpoint_every == 0;
  const char *sync = cfg->compression.sparse_embedding_sync;
  int no_zen = cfg->grid.g_inter < 2 || cfg->grid.g_data < 2 ||
               cfg->compression.fuse_embedding_sync || !strcmp(sync, "dense") ||
               !strcmp(sync, "allgather");
  int no_fused = cfg->exec.fused_attention &&
                 (strcmp(cfg->exec.device, "cuda") != 0 || cfg->exec.precision == AX_PREC_FP32);
  const struct { const char *flag; int ignored; const char *why; } flags[] = {
      {"lazy-error", !ax_train_backprop_on(cfg),
       "without --compress-backprop (it only tunes compressed backpropagation)"},
      {"epilogue-only", !ax_train_backprop_on(cfg),
       "without --compress-backprop (it only chooses which micro-batches it compresses)"},
      {"compress-sync", plain, "without --compress (no gradient is compressed)"},
      {"compress-sync", strategy,
       "under --compress auto (Espresso picks each group's scheme)"},
      {"compress-min-bytes", plain, "without --compress (no gradient is compressed)"},
      {"compress-min-bytes", strategy,
       "under --compress auto (Espresso decides which groups to compress)"},
      {"compress-vectors", plain, "without --compress (no gradient is compressed)"},
      {"compress-local-clip", plain, "without --compress (no gradient is compressed)"},
      {"compress-remeasure", plain, "without --compress (no gradient is compressed)"},
      {"compress-remeasure", !plain && !cfg->ckpt.resume,
       "without --resume (a run that starts fresh measures its costs)"},
      {"compress-vectors", strategy,
       "under --compress auto (Espresso keeps every vector alone and plain)"},
      {"compress-codec", !strategy,
       "without --compress auto (it names the codec --compress auto applies)"},
      {"replica-schedule", no_memckpt, "without --memory-checkpoint-every (no replicas)"},
      {"replica-idle-share", no_memckpt, "without --memory-checkpoint-every (no replicas)"},
      {"replica-idle-share",
       !no_memckpt && cfg->memckpt.replica_schedule == AX_REPLICAS_AT_END,
       "with --replica-schedule end (it is the share of idle spans the idle schedule fills)"},
      {"zen-owners", no_zen,
       "here: Zen sums the first stage's embedding rows only with --g-inter 2+, --g-data 2+, "
       "--sparse-embedding-sync auto or zen, and no --fuse-embedding-sync"},
      {"zen-hierarchy", no_zen,
       "here: Zen sums the first stage's embedding rows only with --g-inter 2+, --g-data 2+, "
       "--sparse-embedding-sync auto or zen, and no --fuse-embedding-sync"},
      {"loss-scale-window", !ax_train_loss_scaling_on(cfg),
       "without dynamic loss scaling (--loss-scaling dynamic, or auto with --precision fp16)"},
      {"dp-sync-early", cfg->grid.g_data < 2,
       "with --g-data 1 (there is no data-parallel sum to start early)"},
      {"attention", no_fused,
       "here: the fused attention runs on --device cuda in bf16 or fp16 (this run: explicit)"},
  };
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
    if (flags[i].ignored && ax_options_was_set(&AX_TRAIN_OPTIONS, st, flags[i].flag))
      ax_warn("--%s has no effect %s", flags[i].flag, flags[i].why);
}

/* 1-bit Adam freezes Adam's variance as the warm-up leaves it: a warm-up shorter than the
 * 1 / (1 - beta2) steps its average spans freezes an average of fewer steps, and a short
 * run's recipe warm-up (a fraction of --steps) can be that short: a 12-step onebit run with
 * the recipe's 1 plain step diverged (docs/compression.md, "Recipes"). One warning. */
static void warn_short_freeze(const AxTrainConfig *cfg) {
  const AxCompressionOptions *c = &cfg->compression;
  if (!ax_train_compresses(cfg) || !c->freeze_variance || !(cfg->optim.beta2 < 1)) return;
  int span = (int)ceil(1.0 / (1.0 - cfg->optim.beta2) - 1e-9);
  if (c->warmup_steps >= span || c->warmup_steps >= cfg->optim.steps) return;
  ax_warn("Adam's variance is frozen after a warm-up of %d step(s), fewer than the %d its "
          "average spans (1 / (1 - --beta2 %g)); such a variance can make training diverge: "
          "give --compress-warmup %d or more, or --compress-freeze-variance 0",
          c->warmup_steps, span, cfg->optim.beta2, span);
}

int ax_train_config_check(const AxTrainConfig *cfg, const AxOptState *st) {
  if (strcmp(cfg->exec.device, "cpu") != 0 && strcmp(cfg->exec.device, "cuda") != 0)
    return AX_FAIL("--device '%s' is not cpu or cuda", cfg->exec.device);
  if (ax_train_ranks(cfg) > INT_MAX)
    return AX_FAIL("--g-inter %d x --g-data %d x --gx %d x --gy %d x --gz %d is more ranks than "
                   "MPI can number", cfg->grid.g_inter, cfg->grid.g_data, cfg->grid.gx, cfg->grid.gy, cfg->grid.gz);
  if (cfg->data.batch % cfg->grid.g_data)
    return AX_FAIL("--batch %d is not divisible by --g-data %d", cfg->data.batch, cfg->grid.g_data);
  int shard = cfg->data.batch / cfg->grid.g_data;
  if (cfg->data.micro_batch && shard % cfg->data.micro_batch)
    return AX_FAIL("the per-row batch shard of %d sequences (--batch %d / --g-data %d) is not "
                   "divisible by --micro-batch %d", shard, cfg->data.batch, cfg->grid.g_data,
                   cfg->data.micro_batch);
  if (cfg->data.micro_batch > shard)
    return AX_FAIL("--micro-batch %d exceeds the per-row batch shard of %d sequences",
                   cfg->data.micro_batch, shard);
  if (cfg->model.init) {
    static const char *const dims[] = {"layers", "hidden", "heads", "vocab"};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
      if (ax_options_was_set(&AX_TRAIN_OPTIONS, st, dims[i]))
        return AX_FAIL("--%s conflicts with --init: the model file sets the model size",
                       dims[i]);
  }
  if (cfg->exec.ac && !cfg->exec.checkpoint_activations)
    return AX_FAIL("--ac %d needs --checkpoint-activations", cfg->exec.ac);
  int lo, hi;
  AX_TRY(ax_train_trace_range(cfg, &lo, &hi));
  if (cfg->debug.debug_delay_stage >= cfg->grid.g_inter)
    return AX_FAIL("--debug-delay-stage %d does not exist with --g-inter %d",
                   cfg->debug.debug_delay_stage, cfg->grid.g_inter);
  if (cfg->debug.debug_hang_rank >= ax_train_ranks(cfg))
    return AX_FAIL("--debug-hang-rank %d does not exist with %lld rank(s)", cfg->debug.debug_hang_rank,
                   ax_train_ranks(cfg));
  if (cfg->debug.debug_hang_rank >= 0 && cfg->debug.debug_hang_mode == AX_DEBUG_HANG_DROP && cfg->grid.g_inter < 2)
    return AX_FAIL("--debug-hang-mode drop needs pipeline messages (--g-inter 2 or more)");
  long long tp_ranks = ax_train_tp_ranks(cfg);
  if ((cfg->debug.debug_hang_rank >= cfg->grid.g_inter * tp_ranks || cfg->debug.debug_hang_rank % tp_ranks) &&
      cfg->debug.debug_hang_mode == AX_DEBUG_HANG_CHECKPOINT)
    return AX_FAIL("--debug-hang-mode checkpoint needs a rank that writes checkpoints (row 0, "
                   "tensor coordinates 0: ranks 0 to %lld in steps of %lld)",
                   (cfg->grid.g_inter - 1) * tp_ranks, tp_ranks);
  if (cfg->ckpt.checkpoint_every && !cfg->ckpt.checkpoint_dir)
    return AX_FAIL("--checkpoint-every needs --checkpoint-dir");
  if (cfg->ckpt.resume && !cfg->ckpt.checkpoint_dir && !cfg->memckpt.memory_checkpoint_every)
    return AX_FAIL("--resume needs --checkpoint-dir or --memory-checkpoint-every");
  if (ax_options_was_set(&AX_TRAIN_OPTIONS, st, "replicas") && cfg->memckpt.replicas < 1)
    return AX_FAIL("--replicas %d: at least 1 (a node's own copy counts)", cfg->memckpt.replicas);
  AX_TRY(check_memory_checkpoints(cfg));
  AX_TRY(check_device_optimizer(cfg));
  AX_TRY(check_early_sync(cfg));
  if (cfg->data.val_shards && !cfg->data.shards)
    return AX_FAIL("--val-data needs --data (without --data the built-in corpus is used)");
  AX_TRY(check_compress(cfg));
  AX_TRY(check_tensor_parallel(cfg)); /* before the message sizes it divides */
  AX_TRY(check_backprop(cfg));
  AX_TRY(check_network(cfg));
  warn_inapplicable(cfg, st);
  warn_short_freeze(cfg);
  return AX_OK;
}

int ax_train_check_outputs(const AxTrainConfig *cfg) {
  const struct { const char *flag, *path; } outputs[] = {
      {"--save", cfg->output.save}, {"--summary", cfg->output.summary}, {"--trace", cfg->output.trace}};
  for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++)
    if (outputs[i].path && ax_file_check_writable(outputs[i].path) != AX_OK)
      return ax_error_context("%s", outputs[i].flag);
  return AX_OK;
}

int ax_train_trace_range(const AxTrainConfig *cfg, int *lo, int *hi) {
  static const AxIntList RANGE = {"trace-steps", "-", "a range like 2-3", 1, INT_MAX, 2, 2};
  long long v[2];
  int n;
  AX_TRY(ax_options_int_list(&RANGE, cfg->output.trace_steps, v, &n));
  if (v[1] < v[0])
    return AX_FAIL("--trace-steps '%s' is not a range like 2-3 (it ends before it starts)",
                   cfg->output.trace_steps);
  *lo = (int)v[0];
  *hi = (int)v[1];
  return AX_OK;
}

void ax_train_config_free(AxTrainConfig *cfg) { ax_options_free(&AX_TRAIN_OPTIONS, cfg); }
