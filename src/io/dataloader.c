/* dataloader.c — windows over token shards, sequential or shuffled; see dataloader.h. */
#include "dataloader.h"

#include <glob.h>
#include <stdlib.h>
#include <string.h>

#include "src/core/error.h"
#include "src/core/rng.h"

static int add_shard(AxLoader *L, const AxShard *s) {
  AxShard *grown = realloc(L->shards, (size_t)(L->n_shards + 1) * sizeof *grown);
  if (!grown) return AX_FAIL("out of memory");
  L->shards = grown;
  L->shards[L->n_shards++] = *s;
  return AX_OK;
}

static int open_path(AxLoader *L, const char *path) {
  AxShard s;
  AX_TRY(ax_shard_open(&s, path));
  if (add_shard(L, &s) != AX_OK) {
    ax_shard_close(&s);
    return AX_ERR;
  }
  return AX_OK;
}

/* One comma-separated item: a glob if it has wildcards and matches, else a plain path. */
static int open_item(AxLoader *L, const char *item) {
  if (!strpbrk(item, "*?[")) return open_path(L, item);
  glob_t g;
  int rc = glob(item, 0, NULL, &g);
  if (rc != 0) {
    globfree(&g);
    return AX_FAIL("no token shard matches %s", item);
  }
  for (size_t i = 0; i < g.gl_pathc && rc == 0; i++) rc = open_path(L, g.gl_pathv[i]);
  globfree(&g);
  return rc == 0 ? AX_OK : AX_ERR;
}

static int index_windows(AxLoader *L, const char *what) {
  size_t bt = (size_t)L->B * (size_t)L->T;
  L->first_window = ax_calloc((size_t)L->n_shards + 1, sizeof *L->first_window);
  if (!L->first_window) return AX_ERR;
  for (int i = 0; i < L->n_shards; i++) {
    size_t n = L->shards[i].n, windows = n > 0 ? (n - 1) / bt : 0;
    if (windows == 0)
      return AX_FAIL("%s: shard %d has %zu tokens, fewer than one batch needs (B*T+1 = %zu)",
                     what, i, n, bt + 1);
    L->first_window[i + 1] = L->first_window[i] + windows;
  }
  if (L->first_window[L->n_shards] > UINT32_MAX)
    return AX_FAIL("%s: too many batches per epoch", what);
  L->perm_epoch = -1;
  return AX_OK;
}

static void init_loader(AxLoader *L, int B, int T, int vocab, int shuffle, uint64_t seed) {
  memset(L, 0, sizeof *L);
  L->B = B;
  L->T = T;
  L->vocab = vocab;
  L->shuffle = shuffle;
  L->seed = seed;
}

int ax_loader_open(AxLoader *L, const char *pattern, int B, int T, int vocab, int shuffle,
                   uint64_t seed) {
  init_loader(L, B, T, vocab, shuffle, seed);
  char *copy = strdup(pattern);
  if (!copy) return AX_FAIL("out of memory");
  int rc = AX_OK;
  char *save = NULL;
  for (char *item = strtok_r(copy, ",", &save); item && rc == AX_OK;
       item = strtok_r(NULL, ",", &save))
    rc = open_item(L, item);
  free(copy);
  if (rc == AX_OK && L->n_shards == 0) rc = AX_FAIL("no token shard given in '%s'", pattern);
  if (rc == AX_OK) rc = index_windows(L, pattern);
  if (rc != AX_OK) ax_loader_close(L);
  return rc;
}

int ax_loader_open_tokens(AxLoader *L, const uint16_t *tokens, size_t n, int B, int T,
                          int vocab, int shuffle, uint64_t seed) {
  init_loader(L, B, T, vocab, shuffle, seed);
  AxShard s = {.tokens = tokens, .n = n};
  int rc = add_shard(L, &s);
  if (rc == AX_OK) rc = index_windows(L, "token array");
  if (rc != AX_OK) ax_loader_close(L);
  return rc;
}

size_t ax_loader_windows(const AxLoader *L) { return L->first_window[L->n_shards]; }

size_t ax_loader_tokens(const AxLoader *L) {
  size_t n = 0;
  for (int i = 0; i < L->n_shards; i++) n += L->shards[i].n;
  return n;
}

static int make_perm(AxLoader *L, long long epoch) {
  size_t total = ax_loader_windows(L);
  if (!L->perm && !(L->perm = ax_malloc(total * sizeof *L->perm))) return AX_ERR;
  AxRng r;
  ax_rng_seed(&r, L->seed ^ (0xD1B54A32D192ED03ULL * (uint64_t)(epoch + 1)));
  for (size_t i = 0; i < total; i++) L->perm[i] = (uint32_t)i;
  for (size_t i = total; i > 1; i--) { /* Fisher-Yates */
    size_t j = (size_t)ax_rng_below(&r, i);
    uint32_t t = L->perm[i - 1];
    L->perm[i - 1] = L->perm[j];
    L->perm[j] = t;
  }
  L->perm_epoch = epoch;
  return AX_OK;
}

int ax_loader_next(AxLoader *L, int seq0, int nseq, int32_t *inputs, int32_t *targets) {
  size_t total = ax_loader_windows(L);
  long long epoch = L->consumed / (long long)total;
  size_t w = (size_t)(L->consumed % (long long)total);
  if (L->shuffle) {
    if (L->perm_epoch != epoch) AX_TRY(make_perm(L, epoch));
    w = L->perm[w];
  }
  int s = 0;
  while (w >= L->first_window[s + 1]) s++;
  const AxShard *sh = &L->shards[s];
  size_t T = (size_t)L->T;
  const uint16_t *src = sh->tokens + (w - L->first_window[s]) * (size_t)L->B * T + seq0 * T;
  size_t n = (size_t)nseq * T;
  for (size_t i = 0; i < n + 1; i++) {
    if (src[i] >= L->vocab)
      return AX_FAIL("token shard %d: token %u is outside the vocabulary of %d", s, src[i],
                     L->vocab);
  }
  for (size_t i = 0; i < n; i++) {
    inputs[i] = src[i];
    targets[i] = src[i + 1];
  }
  L->consumed++;
  return AX_OK;
}

int ax_loader_check_vocab(const AxLoader *L, const char *what) {
  for (int s = 0; s < L->n_shards; s++) {
    const AxShard *sh = &L->shards[s];
    for (size_t i = 0; i < sh->n; i++)
      if (sh->tokens[i] >= L->vocab)
        return AX_FAIL("%s: shard %d holds token %u at position %zu, outside the vocabulary of "
                       "%d", what, s + 1, sh->tokens[i], i, L->vocab);
  }
  return AX_OK;
}

void ax_loader_set_position(AxLoader *L, long long consumed) { L->consumed = consumed; }
long long ax_loader_position(const AxLoader *L) { return L->consumed; }

void ax_loader_close(AxLoader *L) {
  for (int i = 0; i < L->n_shards; i++) ax_shard_close(&L->shards[i]);
  free(L->shards);
  free(L->first_window);
  free(L->perm);
  memset(L, 0, sizeof *L);
}
