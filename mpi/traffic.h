/* traffic.h — bytes sent by this rank, by class (what they are for) and by whether they left
 * the sender's virtual node (link_emulator.h). Every message our engines send is counted once,
 * when it is handed to the link layer (ax_link_isend), as its payload bytes; the class travels
 * with the operation that sends (AxLinkMsg.cls: the p2p engine picks forward or backward by
 * direction, a collective takes AxCommConfig.traffic_class), never with global state.
 *
 * Classes are one X-macro list: adding one (say tensor_parallel) is one line below, and the
 * summary's JSON, the benchmarks and the tests pick it up by iterating. Class 0 is `other`, so
 * a configuration that never set a class counts there. Not thread-safe: counted by whichever
 * thread drives MPI at the time (one at a time, as the engines require). */
#ifndef AX_TRAFFIC_H
#define AX_TRAFFIC_H

#include <stddef.h>

/* X(ENUM_SUFFIX, "json_name") */
#define AX_TRAFFIC_CLASSES(X)                                                                    \
  X(OTHER, "other")                         /* loss agreement, model gathers, benchmarks, ... */ \
  X(PIPELINE_FORWARD, "pipeline_forward")   /* activations to the next stage */                 \
  X(PIPELINE_BACKWARD, "pipeline_backward") /* activation gradients to the previous stage */    \
  X(DATA_PARALLEL, "data_parallel")         /* the gradient all-reduce over the rows */         \
  X(EMBEDDING_SYNC, "embedding_sync")       /* the tied wte sum of its holders (row ends) */    \
  X(TENSOR_PARALLEL, "tensor_parallel")     /* the collectives inside tensor-parallel layers */ \
  X(CHECKPOINT_REPLICA, "checkpoint_replica") /* memory checkpoints to peer nodes, recovery */

typedef enum {
#define AX_TRAFFIC_ENUM_(id, name) AX_TRAFFIC_##id,
  AX_TRAFFIC_CLASSES(AX_TRAFFIC_ENUM_)
#undef AX_TRAFFIC_ENUM_
  AX_TRAFFIC_N_CLASSES
} AxTrafficClass;

enum { AX_TRAFFIC_LOCAL = 0, AX_TRAFFIC_CROSSED = 1 }; /* within the virtual node, or not */

typedef struct {
  unsigned long long bytes[AX_TRAFFIC_N_CLASSES][2]; /* [class][AX_TRAFFIC_LOCAL/CROSSED] */
} AxTraffic;

/* "pipeline_forward", ...; "?" outside the enum. */
const char *ax_traffic_class_name(AxTrafficClass c);

/* Counts `bytes` of class c (t NULL: nothing). */
static inline void ax_traffic_add(AxTraffic *t, AxTrafficClass c, int crossed, size_t bytes) {
  if (t && (unsigned)c < AX_TRAFFIC_N_CLASSES)
    t->bytes[c][crossed ? AX_TRAFFIC_CROSSED : AX_TRAFFIC_LOCAL] += bytes;
}

/* Bytes of class c (c = AX_TRAFFIC_N_CLASSES: every class): all of them, or crossed only. */
unsigned long long ax_traffic_bytes(const AxTraffic *t, int c);
unsigned long long ax_traffic_crossed(const AxTraffic *t, int c);
/* *into += after - before (what happened between two snapshots). */
void ax_traffic_add_delta(AxTraffic *into, const AxTraffic *after, const AxTraffic *before);

#endif
