/* dataloader.h — batches from llm.c token shards (or an in-memory token array).
 * A batch is a window of B*T+1 tokens: sequence b reads inputs [b*T, b*T+T) and targets
 * shifted by one. Sequential order (shuffle 0) advances windows by B*T through the shards in
 * order and wraps at the end; shuffle 1 visits every window once per epoch in an order
 * drawn from (seed, epoch). The position is one number (windows consumed), so a checkpoint
 * can restore it exactly. A data-parallel rank asks for just its own sequences. */
#ifndef AX_DATALOADER_H
#define AX_DATALOADER_H

#include <stddef.h>
#include <stdint.h>

#include "shard.h"

typedef struct {
  AxShard *shards;
  int n_shards;
  size_t *first_window; /* prefix sums of windows per shard, n_shards + 1 entries */
  int B, T, vocab;
  int shuffle;
  uint64_t seed;
  long long consumed;
  uint32_t *perm;
  long long perm_epoch;
} AxLoader;

/* pattern: a file, a glob ("data/train_*.bin") or a comma-separated list of either. */
int ax_loader_open(AxLoader *L, const char *pattern, int B, int T, int vocab, int shuffle,
                   uint64_t seed);
/* Batches over a token array the caller keeps alive (e.g. the synthetic corpus). */
int ax_loader_open_tokens(AxLoader *L, const uint16_t *tokens, size_t n, int B, int T,
                          int vocab, int shuffle, uint64_t seed);
/* Fills inputs/targets [nseq*T] with sequences [seq0, seq0+nseq) of the next window and
 * advances. Fails if a token is outside the vocabulary. */
int ax_loader_next(AxLoader *L, int seq0, int nseq, int32_t *inputs, int32_t *targets);
/* Fails, naming the shard and position, when any token of any shard is outside the
 * vocabulary (ax_loader_next finds it only when it reaches that batch). */
int ax_loader_check_vocab(const AxLoader *L, const char *what);
void ax_loader_set_position(AxLoader *L, long long consumed);
long long ax_loader_position(const AxLoader *L);
size_t ax_loader_windows(const AxLoader *L);
size_t ax_loader_tokens(const AxLoader *L);
void ax_loader_close(AxLoader *L);

#endif
