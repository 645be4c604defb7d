/* link_bell.c — the link emulator's doorbells; see link_bell.h. */
#include "link_bell.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "mpi/mpi_util.h"
#include "src/core/error.h"

/* Processes share these through memory they map at different addresses: lock-free atomics
 * only, and futexes keyed on the shared page (not FUTEX_PRIVATE_FLAG). */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && ATOMIC_LLONG_LOCK_FREE == 2,
               "the doorbells need lock-free atomics");
_Static_assert(sizeof(atomic_uint) == 4, "a futex word is 32 bits");

enum { LINE = 64 };

typedef struct {
  atomic_uint count;   /* the futex word */
  atomic_int sleepers; /* processes asleep on it (a ring skips the wake-up when none) */
  atomic_llong busy_until;
} Bell;

_Static_assert(sizeof(Bell) <= LINE, "a bell fits its cache line");

static Bell *bell(const AxLinkBells *b, int rank) {
  return (Bell *)(void *)(b->base + (size_t)rank * LINE);
}

int ax_link_bells_on(const AxLinkBells *b) { return b && b->base; }

#ifdef __linux__
static int create(AxLinkBells *b, MPI_Comm world) {
  int size, rank, machine_size;
  MPI_Comm machine;
  AX_MPI(MPI_Comm_size(world, &size));
  AX_MPI(MPI_Comm_rank(world, &rank));
  AX_MPI(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &machine));
  int rc = MPI_Comm_size(machine, &machine_size);
  MPI_Comm_free(&machine);
  AX_MPI(rc);
  if (machine_size != size) return AX_OK; /* ranks on other machines: off */
  AX_TRY(ax_mpi_shared_segment(world, (MPI_Aint)size * LINE, "doorbells", &b->win, &b->base));
  if (rank == 0) /* sequentially consistent stores: visible before the barrier ends */
    for (int r = 0; r < size; r++) {
      atomic_store(&bell(b, r)->count, 0);
      atomic_store(&bell(b, r)->sleepers, 0);
      atomic_store(&bell(b, r)->busy_until, 0);
    }
  AX_MPI(MPI_Barrier(world)); /* nobody rings before the bells are set */
  b->n = size;
  b->me = rank;
  return AX_OK;
}

static long futex(atomic_uint *word, int op, unsigned val, const struct timespec *t) {
  return syscall(SYS_futex, (unsigned *)(void *)word, op, val, t, NULL, FUTEX_BITSET_MATCH_ANY);
}
#endif

int ax_link_bells_create(AxLinkBells *b, MPI_Comm world) {
  memset(b, 0, sizeof *b);
  b->win = MPI_WIN_NULL;
#ifdef __linux__
  int rc = create(b, world);
  if (rc != AX_OK) ax_link_bells_destroy(b);
  return rc;
#else
  (void)world;
  return AX_OK;
#endif
}

void ax_link_bells_destroy(AxLinkBells *b) {
  if (b->win != MPI_WIN_NULL) MPI_Win_free(&b->win);
  memset(b, 0, sizeof *b);
  b->win = MPI_WIN_NULL;
}

AxLinkBells ax_link_bells_private(void *line) {
  AxLinkBells b = {MPI_WIN_NULL, NULL, 0, 0};
#ifdef __linux__
  b.base = line;
  b.n = 1;
  atomic_init(&bell(&b, 0)->count, 0);
  atomic_init(&bell(&b, 0)->sleepers, 0);
  atomic_init(&bell(&b, 0)->busy_until, 0);
#else
  (void)line;
#endif
  return b;
}

void ax_link_bell_ring(const AxLinkBells *b, int to, long long busy_until) {
  if (!ax_link_bells_on(b) || to < 0 || to >= b->n) return;
  Bell *x = bell(b, to);
  long long old = atomic_load(&x->busy_until);
  while (old < busy_until && !atomic_compare_exchange_weak(&x->busy_until, &old, busy_until)) {
  }
  atomic_fetch_add(&x->count, 1);
#ifdef __linux__
  if (atomic_load(&x->sleepers) > 0) futex(&x->count, FUTEX_WAKE, (unsigned)INT32_MAX, NULL);
#endif
}

unsigned ax_link_bell_count(const AxLinkBells *b) {
  return ax_link_bells_on(b) ? atomic_load(&bell(b, b->me)->count) : 0;
}

long long ax_link_bell_busy_until(const AxLinkBells *b) {
  return ax_link_bells_on(b) ? atomic_load(&bell(b, b->me)->busy_until) : 0;
}

void ax_link_bell_sleep(const AxLinkBells *b, unsigned seen, long long t_ns) {
  struct timespec until = {(time_t)(t_ns / 1000000000LL), (long)(t_ns % 1000000000LL)};
  if (!ax_link_bells_on(b)) {
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL);
    return;
  }
#ifdef __linux__
  /* The sleeper is counted before the kernel compares the count, and a ring adds before it
   * looks for sleepers: either the ring sees this sleeper, or the kernel sees the new count. */
  Bell *x = bell(b, b->me);
  atomic_fetch_add(&x->sleepers, 1);
  futex(&x->count, FUTEX_WAIT_BITSET, seen, &until); /* absolute, CLOCK_MONOTONIC */
  atomic_fetch_sub(&x->sleepers, 1);
#endif
}
