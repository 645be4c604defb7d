/* train_watchdog.h — `axonn train`'s side of the watchdog (src/core/watchdog.h): the MPI settings
 * under which a rank can report a failed call or a lost peer in one line, every rank's process
 * identity, and MPI_Abort as the way to end the job. */
#ifndef AX_TRAIN_WATCHDOG_H
#define AX_TRAIN_WATCHDOG_H

#include "train_config.h"

/* After MPI_Init: MPI_ERRORS_RETURN on MPI_COMM_WORLD (and so on every communicator made from
 * it): a failing call returns to AX_MPI, which reports it in one line. */
void ax_train_mpi_errors_return(void);
/* Collective over MPI_COMM_WORLD, before the trainer is created: starts the watchdog with
 * --step-timeout seconds (0: no deadline), every rank's process identity (to watch this node's
 * others) and, on more than one rank, SIGINT and SIGABRT handling (a single process keeps the
 * default: Ctrl-C just ends it); then the start-up phase begins, so that a rank stuck before
 * its first step (setting up, profiling a codec, opening data) is reported like a stuck step. */
int ax_train_watchdog_start(const AxTrainConfig *cfg);
void ax_train_watchdog_stop(void);

#endif
