/* summary_provenance.c — the summary's provenance object: the build and the process
 * (src/core/provenance.h), the MPI library, the BLAS, and the hostnames of every rank
 * (gathered to rank 0, each named once in rank order); see summary.h and docs/summary.md. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "src/backend/backend.h"
#include "src/core/error.h"
#include "src/core/provenance.h"
#include "summary.h"

/* The library's first line (MPICH's goes on with its configure options). */
static void mpi_library(AxProvenance *p) {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0, major = 0, minor = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) len = 0;
  text[len < (int)sizeof text ? len : (int)sizeof text - 1] = 0;
  text[strcspn(text, "\n")] = 0;
  for (char *c = text; *c; c++) *c = *c == '\t' ? ' ' : *c; /* MPICH: "Version:\t4.0.2" */
  size_t k = strlen(text);
  while (k && (text[k - 1] == ' ' || text[k - 1] == '\t' || text[k - 1] == '\r')) text[--k] = 0;
  snprintf(p->mpi_library, sizeof p->mpi_library, "%s", text[0] ? text : "unknown");
  MPI_Get_version(&major, &minor);
  snprintf(p->mpi_standard, sizeof p->mpi_standard, "%d.%d", major, minor);
}

/* Rank order, each host once. */
static void keep_unique(AxProvenance *p, const char *all, int n) {
  for (int r = 0; r < n; r++) {
    const char *h = all + (size_t)r * AX_PROVENANCE_HOST;
    int seen = 0;
    for (int k = 0; k < p->n_hosts && !seen; k++)
      seen = !strcmp(p->hosts + (size_t)k * AX_PROVENANCE_HOST, h);
    if (!seen) memcpy(p->hosts + (size_t)p->n_hosts++ * AX_PROVENANCE_HOST, h, AX_PROVENANCE_HOST);
  }
}

int ax_summary_provenance_gather(AxProvenance *p, const AxGrid *g, const char *my_host) {
  memset(p, 0, sizeof *p);
  int n = g && g->world != MPI_COMM_NULL ? g->size : 1, root = !g || g->rank == 0;
  char mine[AX_PROVENANCE_HOST] = {0}, *all = NULL;
  snprintf(mine, sizeof mine, "%s", my_host);
  if (root) {
    mpi_library(p);
    snprintf(p->blas, sizeof p->blas, "%s", ax_backend_blas_name());
    all = ax_malloc((size_t)n * AX_PROVENANCE_HOST);
    p->hosts = ax_malloc((size_t)n * AX_PROVENANCE_HOST);
  }
  int rc = !root || (all && p->hosts) ? AX_OK : AX_ERR;
  if (n > 1) {
    rc = ax_grid_agree(g, rc);
    if (rc == AX_OK && MPI_Gather(mine, AX_PROVENANCE_HOST, MPI_CHAR, all, AX_PROVENANCE_HOST,
                                  MPI_CHAR, 0, g->world) != MPI_SUCCESS)
      rc = AX_FAIL("MPI_Gather of the hostnames failed");
  } else if (rc == AX_OK) {
    memcpy(all, mine, sizeof mine);
  }
  if (rc == AX_OK && root) keep_unique(p, all, n);
  free(all);
  return rc;
}

void ax_summary_provenance_free(AxProvenance *p) {
  free(p->hosts);
  p->hosts = NULL;
  p->n_hosts = 0;
}

void ax_summary_provenance_json(AxJsonW *j, const AxProvenance *p) {
  if (!p) {
    ax_jsonw_null(j, "provenance");
    return;
  }
  char start[32];
  const char *job_var, *job = ax_provenance_job_id(&job_var);
  int argc;
  char *const *argv = ax_provenance_argv(&argc);
  ax_provenance_start_time(start, sizeof start);
  ax_jsonw_object(j, "provenance");
  ax_jsonw_str(j, "axonn_version", ax_build_version());
  ax_jsonw_str(j, "git_commit", ax_build_commit());
  ax_jsonw_str(j, "compiler", ax_build_compiler());
  ax_jsonw_str(j, "build_flags", ax_build_flags());
  ax_jsonw_str(j, "mpi_library", p->mpi_library);
  ax_jsonw_str(j, "mpi_standard", p->mpi_standard);
  ax_jsonw_str(j, "blas", p->blas);
  ax_jsonw_array(j, "hostnames");
  for (int k = 0; k < p->n_hosts; k++) ax_jsonw_str(j, NULL, p->hosts + (size_t)k * AX_PROVENANCE_HOST);
  ax_jsonw_end(j);
  ax_jsonw_str(j, "job_id", job);
  ax_jsonw_str(j, "job_id_from", job_var);
  ax_jsonw_str(j, "start_time", start);
  ax_jsonw_array(j, "command_line");
  for (int i = 0; i < argc; i++) ax_jsonw_str(j, NULL, argv[i]);
  ax_jsonw_end(j);
  ax_jsonw_end(j);
}
