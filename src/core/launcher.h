/* launcher.h — what the launcher (mpiexec, srun, jsrun) told this process through its
 * environment, read before MPI starts, so that an error found before MPI_Init is said once. */
#ifndef AX_LAUNCHER_H
#define AX_LAUNCHER_H

/* This process's rank as its launcher set it (MPICH/Hydra and PMIx PMI_RANK/PMIX_RANK, Open
 * MPI, MVAPICH, Cray PALS, IBM jsrun, Slurm SLURM_PROCID), or -1 when no launcher variable is
 * set: the program was started alone, as a one-rank job. */
int ax_launcher_rank(void);

/* An error found before MPI starts, in what every rank read alike (the command line): printed by
 * the launcher's rank 0 (or the lone process) with its rank, dropped on the others. */
void ax_print_error_once(void);

#endif
