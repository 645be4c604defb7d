/* provenance.h — where a run's figures came from, for the summary's provenance object
 * (docs/summary.md): the build (axonn's version, the git commit it was built from, the
 * compiler and flags, from the generated $(BUILD)/build_info.h), the process (its command
 * line and start time, recorded by main) and the batch job (the scheduler's job id). The
 * parts that need MPI or BLAS (hostnames of every rank, the MPI library, the BLAS) are
 * gathered in src/report/summary_provenance.c. */
#ifndef AX_PROVENANCE_H
#define AX_PROVENANCE_H

#include <stddef.h>

const char *ax_build_version(void); /* "0.2.0" */
const char *ax_build_commit(void);  /* `git describe --always --dirty`, or "unknown" */
const char *ax_build_compiler(void);
const char *ax_build_flags(void); /* the CFLAGS the library was compiled with */

/* Records the command line (kept by reference: main's argv) and the start time. */
void ax_provenance_start(int argc, char **argv);
/* The command line recorded (argc 0 when none was). */
char *const *ax_provenance_argv(int *argc);
/* The start time as ISO 8601 UTC ("2026-11-28T22:31:05Z"; now, when none was recorded). */
void ax_provenance_start_time(char *buf, size_t cap);
/* The batch job's id from SLURM_JOB_ID, LSB_JOBID or PBS_JOBID (NULL: none); *var names the
 * variable it came from. */
const char *ax_provenance_job_id(const char **var);

#endif
