/* mpitestutil.h — helpers of the multi-rank Check suites (tests/mpitest_*.c): MPI start-up,
 * per-rank failure records that all ranks then agree on (so no rank is left waiting in a
 * collective when another fails), and a bound on hangs: the library's watchdog
 * (src/core/watchdog.h) ends the whole job when one run takes longer than its deadline,
 * printing what the scheduler or p2p engine was waiting for and the run's description. */
#ifndef AX_MPITESTUTIL_H
#define AX_MPITESTUTIL_H

#include <check.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mpi/comm_config.h"
#include "src/core/error.h"

extern int mt_rank, mt_size;

/* MPI_Init_thread (serialized, as axonn train), rank and size, ax_set_rank. */
void mt_init(int *argc, char ***argv);
/* Records a failure of this rank ("[rank r of n] FAILED: ...") unless ok. Returns ok. */
int mt_expect(int ok, const char *fmt, ...) AX_PRINTF(2, 3);
/* Every rank learns whether any rank recorded a failure since the last call; the Check test
 * fails on all of them together. */
void mt_assert_all_ok(const char *what);
/* Starts the watchdog (call outside the tests; ends the job if it cannot): any run (mt_run_begin .. mt_run_end) longer than timeout_s ends the job
 * (status 124) after printing the watchdog's line and this rank's current run description. */
void mt_watchdog_start(double timeout_s);
void mt_watchdog_stop(void);
/* Runs the suite without forking (tu_run_nofork) inside mt_watchdog_start(timeout_s) ..
 * mt_watchdog_stop; returns its failure count. */
int mt_run_watched(Suite *suite, double timeout_s);
/* The default collective settings, polite where this job's ranks oversubscribe the cores
 * (ax_mpi_auto_polite over MPI_COMM_WORLD): what the suites' collectives run with. */
AxCommConfig mt_comm_config(void);
/* A run begins: its deadline starts and `fmt` describes it in a time-out report. */
void mt_run_begin(const char *fmt, ...) AX_PRINTF(1, 2);
void mt_run_end(void);
/* After the suite: LeakSanitizer's check while MPI is still up (MPI_Finalize unloads MPICH's
 * UCX modules, whose still-referenced allocations it would otherwise report as leaks of an
 * unknown module; an empty MPI_Init/MPI_Finalize program shows the same bytes), then
 * MPI_Finalize. Free your communicators first. Returns rc, the process's exit status. */
int mt_finish(int rc);
/* Collective: rank 0 makes a new directory /tmp/axonn-mt-TAG-XXXXXX and every rank gets its
 * name in dir (cap bytes); 0 when it could not (dir empty on every rank). */
int mt_shared_dir(char *dir, size_t cap, const char *tag);
/* Collective: after every rank is done with it, rank 0 removes the directory and what is in it. */
void mt_shared_dir_remove(const char *dir);
/* Sleeps for `us` microseconds. */
void mt_sleep_us(long us);

/* ---- data of the collective suites */

/* malloc of at least one byte; a failure fails the Check test. */
void *mt_xmalloc(size_t bytes);
/* A new copy of x[n]. */
float *mt_copy(const float *x, size_t n);
/* n non-integer floats of rank `rank` for `salt`, of magnitude up to 1 + rank (every rank can
 * make every other rank's). */
float *mt_inputs(size_t n, int rank, uint64_t salt);
/* The first index where a and b differ bit for bit, or n. */
size_t mt_first_difference(const float *a, const float *b, size_t n);
/* Collective over MPI_COMM_WORLD: 1 when every rank holds the same n floats, bit for bit. */
int mt_replicas_agree(const float *x, size_t n);

#endif
