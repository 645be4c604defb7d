/* plan_odds.c — `axonn plan --failure-odds`: the probability that a job recovers from its
 * in-memory checkpoints when k of its N nodes fail at once, under Gemini's group and ring
 * placements of m copies per shard (src/plan/failure_odds.h; docs/memory-checkpoints.md). */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "src/core/command.h"
#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/jsonw.h"
#include "src/plan/failure_odds.h"

typedef struct {
  int failure_odds, nodes, replicas, failed;
  char *json;
} OddsConfig;

#define OFF(f) offsetof(OddsConfig, f)
static const AxOption OPTIONS[] = {
    {"failure-odds", AX_OPT_FLAG, OFF(failure_odds), "0", NULL,
     "the odds of recovering from in-memory checkpoints after k node failures (this mode)", 1,
     0, NULL},
    {"nodes", AX_OPT_INT, OFF(nodes), "0", "N", "nodes (machines) of the job (required)", 0,
     AX_FAILURE_ODDS_MAX_NODES, NULL},
    {"replicas", AX_OPT_INT, OFF(replicas), "2", "M",
     "copies of each node's checkpoint shard, its own included (the thesis's m)", 1,
     AX_FAILURE_ODDS_MAX_NODES, NULL},
    {"failed", AX_OPT_INT, OFF(failed), "0", "K",
     "list k = 1..K nodes failing at once (0: up to min(N, M + 2))", 0,
     AX_FAILURE_ODDS_MAX_NODES, NULL},
    {"json", AX_OPT_STRING, OFF(json), NULL, "FILE", "also write the table as JSON", 1, 0, NULL},
};
static const AxOptionTable TABLE = {
    "plan --failure-odds",
    "The probability that every checkpoint shard keeps a copy in CPU memory when k of N nodes\n"
    "fail at once (all k-sets equally likely), under Gemini's group and ring placements of M\n"
    "copies (wang-thesis §6.4; docs/memory-checkpoints.md).",
    OPTIONS, (int)(sizeof OPTIONS / sizeof OPTIONS[0])};

/* Gemini's figures for 16 nodes and 2 copies (wang-thesis §6.7.2, Figure 6.9; Corollary 6.1). */
enum { THESIS_NODES = 16, THESIS_REPLICAS = 2 };
static const struct {
  int failed;
  double percent;
} THESIS_GROUP[] = {{2, 93.3}, {3, 80.0}};

static int check_config(OddsConfig *c) {
  if (c->nodes < 1) return AX_FAIL("--nodes N is required (a positive number of nodes)");
  if (c->replicas > c->nodes)
    return AX_FAIL("--replicas %d is more than --nodes %d (the copies of a shard sit on distinct "
                   "nodes)", c->replicas, c->nodes);
  if (c->failed > c->nodes)
    return AX_FAIL("--failed %d is more than --nodes %d", c->failed, c->nodes);
  if (!c->failed) c->failed = c->replicas + 2 < c->nodes ? c->replicas + 2 : c->nodes;
  return AX_OK;
}

/* Percent with three decimals, or three significant digits when that would show nothing. */
static void print_percent(double p) {
  if (p == 0 || p >= 1e-5) printf(" %10.3f%%", 100 * p);
  else printf(" %10.3g%%", 100 * p);
}

static void print_layout(int N, int m) {
  int first, size;
  (void)ax_replica_block(N, m, AX_PLACE_GROUP, N - 1, &first, &size);
  if (size == m)
    printf("group: %d groups of %d consecutive nodes; each node holds its group's %d shards\n",
           N / m, m, m);
  else if (first == 0)
    printf("group: %d nodes are fewer than 2 x %d, so all form one ring (as ring below)\n", N, m);
  else
    printf("group: %d groups of %d consecutive nodes, then nodes %d..%d as a ring of %d (%d is "
           "not a multiple of %d; thesis Algorithm 6.1)\n", first / m, m, first, N - 1, size,
           N, m);
  printf("ring:  node i's shard on nodes i..i+%d (mod %d)\n", m - 1, N);
}

static void print_table(const OddsConfig *c, const double *group, const double *ring) {
  printf("failure odds: %d nodes, %d copies of each checkpoint shard; k nodes fail at once, "
         "every k-set equally likely; P(recover from CPU memory):\n", c->nodes, c->replicas);
  print_layout(c->nodes, c->replicas);
  printf("%5s %11s %11s\n", "k", "group", "ring");
  for (int k = 1; k <= c->failed; k++) {
    printf("%5d", k);
    print_percent(group[k]);
    print_percent(ring[k]);
    printf("\n");
  }
}

/* For 16 nodes and 2 copies: the thesis's figures beside the closed form's. */
static int print_thesis(const OddsConfig *c) {
  if (c->nodes != THESIS_NODES || c->replicas != THESIS_REPLICAS) return AX_OK;
  printf("thesis (Gemini, wang-thesis §6.7.2 and Corollary 6.1), 16 nodes, 2 copies, group:");
  for (size_t i = 0; i < sizeof THESIS_GROUP / sizeof THESIS_GROUP[0]; i++) {
    double p;
    AX_TRY(ax_failure_odds_group_formula(c->nodes, c->replicas, THESIS_GROUP[i].failed, &p));
    printf("%s k=%d %.1f%% (thesis %.1f%%)", i ? "," : "", THESIS_GROUP[i].failed, 100 * p,
           THESIS_GROUP[i].percent);
  }
  printf("\n");
  return AX_OK;
}

static int write_json(const OddsConfig *c, const double *group, const double *ring) {
  AxFile f;
  AX_TRY(ax_file_open_write(&f, c->json));
  AxJsonW j;
  ax_jsonw_init(&j, f.f);
  ax_jsonw_object(&j, NULL);
  ax_jsonw_int(&j, "nodes", c->nodes);
  ax_jsonw_int(&j, "replicas", c->replicas);
  ax_jsonw_array(&j, "odds");
  for (int k = 1; k <= c->failed; k++) {
    ax_jsonw_object(&j, NULL);
    ax_jsonw_int(&j, "failed", k);
    ax_jsonw_num(&j, "group", group[k]);
    ax_jsonw_num(&j, "ring", ring[k]);
    ax_jsonw_end(&j);
  }
  ax_jsonw_end(&j);
  ax_jsonw_end(&j);
  fputc('\n', f.f);
  return ax_file_commit(&f);
}

static int report(const OddsConfig *c, double *group, double *ring) {
  AX_TRY(ax_failure_odds_all(c->nodes, c->replicas, AX_PLACE_GROUP, group));
  AX_TRY(ax_failure_odds_all(c->nodes, c->replicas, AX_PLACE_RING, ring));
  print_table(c, group, ring);
  AX_TRY(print_thesis(c));
  return c->json ? write_json(c, group, ring) : AX_OK;
}

static int run(void *config, const AxOptState *st) {
  OddsConfig *c = config;
  (void)st;
  AX_TRY(check_config(c));
  if (c->json) AX_TRY(ax_file_check_writable(c->json));
  double *group = ax_calloc((size_t)c->nodes + 1, sizeof *group);
  double *ring = ax_calloc((size_t)c->nodes + 1, sizeof *ring);
  int rc = group && ring ? report(c, group, ring) : AX_ERR;
  free(group);
  free(ring);
  return rc;
}

int ax_cmd_plan_odds(int argc, char **argv) {
  static const AxCommandSpec spec = {&TABLE, sizeof(OddsConfig), 0, run};
  return ax_command_run(&spec, argc, argv);
}
