/* procstat.h — what Linux's /proc says about a process of this machine: running, stopped,
 * exited (with its status), killed (by which signal) or gone. The watchdog (watchdog.h) uses
 * it to tell a lost rank from a slow one among the ranks of its own node.
 *
 * A process is named by its pid, its start time (clock ticks after boot: a recycled pid has
 * another) and the machine's boot id (a rank on another machine, or in a PID namespace of its
 * own, cannot be checked: ax_proc_checkable says so). Reading a state costs one open, read and
 * close of /proc/PID/stat: a watchdog-thread operation, never one for the hot path. */
#ifndef AX_PROCSTAT_H
#define AX_PROCSTAT_H

typedef struct {
  int pid;
  unsigned long long start;     /* field 22 of /proc/PID/stat; 0: unknown */
  unsigned long long boot_hash; /* hash of /proc/sys/kernel/random/boot_id; 0: unknown */
} AxProcId;

typedef enum {
  AX_PROC_RUNNING, /* running or sleeping */
  AX_PROC_STOPPED, /* stopped by a signal (SIGSTOP, SIGTSTP) or a tracer */
  AX_PROC_EXITED,  /* a zombie that exited: code = its exit status */
  AX_PROC_KILLED,  /* a zombie killed by a signal: code = the signal */
  AX_PROC_GONE,    /* no such process any more (reaped), or another one with its pid */
} AxProcState;

/* This process. Fields it cannot read stay 0. */
void ax_proc_self(AxProcId *me);
/* 1 when `other` (from another rank) runs on this machine, in this PID namespace, and is
 * alive now: then ax_proc_state can follow it. */
int ax_proc_checkable(const AxProcId *other, const AxProcId *me);
/* The state of a process ax_proc_checkable accepted; *code as described above (else 0). */
AxProcState ax_proc_state(const AxProcId *p, int *code);
/* "running", "stopped", "exited", "killed", "gone". */
const char *ax_proc_state_name(AxProcState s);

#endif
