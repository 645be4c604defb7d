/* espresso_internal.h — what espresso.c (the options, their stages, the timeline) shares with
 * espresso_search.c (Algorithms 4.1 and 4.2) and espresso_exhaustive.c: the stage table of one
 * problem and the timeline state the searches copy and extend tensor by tensor. */
#ifndef AX_ESPRESSO_INTERNAL_H
#define AX_ESPRESSO_INTERNAL_H

#include "espresso.h"

enum { ESP_MAX_STAGES = 12, ESP_GPU = 0, ESP_CPU = 1, ESP_INTRA = 1, ESP_INTER = 2 };

/* One step of a tensor's synchronization: it holds the links of `links` (ESP_INTRA |
 * ESP_INTER) for `dur` seconds, and device dev (ESP_GPU, ESP_CPU; -1: none) for the first
 * `work` of them; `lat` of `dur` is its messages' latency, which runs while the stage waits
 * for its links (so a link is held at least dur - lat by it). */
typedef struct {
  double dur, work, lat;
  int links, dev;
} AxEspressoStage;

typedef struct {
  double s, e;
} AxEspressoSpan;

/* A device's busy time after the computation so far: sorted disjoint spans v[head..len). */
typedef struct {
  AxEspressoSpan *v;
  int head, len, cap;
} AxEspressoBusy;

typedef struct {
  double compute_end;    /* the computation of the tensors so far ends */
  double link_free[2];   /* intra, inter: the last stage on the link ends */
  double latest;         /* the latest end of anything so far */
  AxEspressoBusy dev[2]; /* GPU, CPU */
} AxEspressoState;

/* One problem's stages for every tensor and applicable option, and the searches' scratch. */
typedef struct {
  const AxEspressoProblem *p;
  int n;
  int *first;          /* n * N_OPTIONS + 1 offsets into stages */
  AxEspressoStage *stages;
  double *chain;       /* n * N_OPTIONS: the stages' durations added up (INFINITY: n/a) */
  double *link[2];     /* n * N_OPTIONS: the time each link is held */
  double *work[2];     /* n * N_OPTIONS: the codec work on the GPU and on the CPU */
  double *suf_compute; /* n + 1: compute_s[k] + ... + compute_s[n-1] */
  double *suf;         /* 2 * (n + 1) scratch: link time of tensors k.. under a strategy */
  uint32_t ok;         /* bit o: option o applies */
  long long evaluations;
} AxEspressoCtx;

#define ESP_AT(c, i, o) ((size_t)(i) * AX_ESPRESSO_N_OPTIONS + (size_t)(o))

int ax_espresso_ctx_init(AxEspressoCtx *c, const AxEspressoProblem *p);
void ax_espresso_ctx_free(AxEspressoCtx *c);
/* AX_OK when choices[n] are all applicable options. */
int ax_espresso_check_choices(const AxEspressoCtx *c, const int *choices);

int ax_espresso_state_new(const AxEspressoCtx *c, AxEspressoState *s);
void ax_espresso_state_free(AxEspressoState *s);
void ax_espresso_state_reset(AxEspressoState *s);
void ax_espresso_state_copy(AxEspressoState *dst, const AxEspressoState *src);

/* Tensor i with option o appended to the timeline s; rec (may be NULL) gets its timeline. */
void ax_espresso_step(const AxEspressoCtx *c, AxEspressoState *s, int i, int o,
                      AxEspressoDecision *rec);
/* c->suf from strategy S. */
void ax_espresso_suffix(AxEspressoCtx *c, const int *S);
/* A lower bound on F of any completion of s (tensors k.. still to come) whose links need
 * suf[l * (n + 1) + k..] and whose last tensor's stages take last_chain. */
double ax_espresso_bound(const AxEspressoCtx *c, const AxEspressoState *s, int k, const double *suf,
                         double last_chain);
/* Tensors from..n-1 of S appended to s (c->suf must hold S's); INFINITY as soon as the bound
 * reaches `cutoff` (so the result is F only when it is below cutoff). */
double ax_espresso_run(AxEspressoCtx *c, AxEspressoState *s, const int *S, int from, double cutoff,
                       AxEspressoDecision *rec);
/* F(S) from an empty timeline, cut off at `cutoff` as ax_espresso_run. */
double ax_espresso_eval(AxEspressoCtx *c, AxEspressoState *s, const int *S, double cutoff,
                        AxEspressoDecision *rec);

/* espresso_exhaustive.c: the best strategy into S, which holds one of F = f on entry; its F
 * into *seconds. */
int ax_espresso_ctx_exhaustive(AxEspressoCtx *c, int *S, double f, double *seconds);

#endif
