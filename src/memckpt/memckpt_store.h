/* memckpt.h — the node-local storage of in-memory checkpoints (Gemini; docs/memory-checkpoints.md).
 * A job's checkpoints live under ROOT/axonn-NAME/ (ROOT: --memory-dir, /dev/shm by default;
 * NAME: --run-name), one directory per node, node-K/, with three slots, slot-0/ to slot-2/. A
 * slot is a checkpoint step directory of src/io/checkpoint.h (stage files and manifest) holding
 * the stage files that node keeps: those its own ranks wrote and the replicas its peers sent.
 * A slot's manifest is removed before anything in it is overwritten and written last, so a
 * slot whose manifest parses is a finished copy, and each of its files is checked against the
 * manifest's size and CRC before it is used: a copy interrupted at any point is never read.
 * The files outlive the process (shared memory), not the node. No MPI here.
 * Shared memory is shared by every user of the node (memckpt_tree.c): a tree is made mode
 * 0700 with a marker file (axonn-tree) in ROOT/axonn-NAME, used only when it is this user's,
 * holds no link and nothing axonn does not write, and is opened without following links; a
 * live job holds each of its nodes' node-K/lock, and nothing removes a tree whose lock is
 * held. */
#ifndef AX_MEMCKPT_STORE_H
#define AX_MEMCKPT_STORE_H

#include <stddef.h>

enum { AX_MEMCKPT_SLOTS = 3, AX_MEMCKPT_MAX_FILES = 255, AX_MEMCKPT_PATH = 1024 };
#define AX_MEMCKPT_MARKER "axonn-tree" /* in ROOT/axonn-NAME: an axonn tree */
#define AX_MEMCKPT_LOCK "lock"         /* in node-K: held by the live job using that node */

/* A run name: 1-64 characters of [A-Za-z0-9._-]. */
int ax_memckpt_check_name(const char *name);
/* ROOT/axonn-NAME, and its node-K/slot-S (buf: AX_MEMCKPT_PATH bytes). */
const char *ax_memckpt_run_dir(const char *root, const char *name, char *buf);
const char *ax_memckpt_node_dir(const char *root, const char *name, int node, char *buf);
const char *ax_memckpt_slot_dir(const char *root, const char *name, int node, int slot,
                                char *buf);
/* Creates ROOT/axonn-NAME/node-K/slot-0 to slot-2 (existing ones are kept once checked: this
 * user's, no link, nothing axonn does not write) and takes node-K/lock for this process
 * (*lock_fd; release with ax_lock_release): fails naming the owner when a live job holds it. */
int ax_memckpt_open_node(const char *root, const char *name, int node, int *lock_fd);

/* A dead job's tree, claimed for removal: every node's lock held. */
enum { AX_MEMCKPT_MAX_LOCKS = 4096 };
typedef struct {
  int missing; /* there is no ROOT/axonn-NAME */
  int n_locks, locks[AX_MEMCKPT_MAX_LOCKS];
} AxMemTree;
/* Checks that ROOT/axonn-NAME is an axonn tree (marker, layout, this user's, no link) that no
 * live job holds, and takes its locks; fails, saying why, otherwise. */
int ax_memckpt_claim_tree(const char *root, const char *name, AxMemTree *tree);
void ax_memckpt_release_tree(AxMemTree *tree);
/* Removes ROOT/axonn-NAME once it holds nothing but its marker (a job's last node gone). */
int ax_memckpt_remove_run_dir(const char *root, const char *name);
/* Removes the slot's manifest: from now on it holds no checkpoint. */
int ax_memckpt_invalidate(const char *slot_dir);
/* Removes every file of the slot (the slot stays, empty). */
int ax_memckpt_empty(const char *slot_dir);
/* Writes slot_dir/name whole (through a temporary name: a reader never sees half of it). */
int ax_memckpt_put_file(const char *slot_dir, const char *name, const void *data, size_t size);

/* What one slot holds: the step of its manifest (-1: none that parses), its stage files, and
 * have[f] = 1 for each one present with the manifest's size and CRC; have[n_files] is the
 * manifest itself. */
typedef struct {
  int step, n_files;
  unsigned char have[AX_MEMCKPT_MAX_FILES + 1];
} AxMemSlot;

/* Never fails: an unreadable slot is one with step -1. */
void ax_memckpt_scan(const char *slot_dir, AxMemSlot *out);

/* Removes a directory tree without following links (what `axonn shm-clean` does to a claimed
 * tree and a normal exit to its node's); a missing one is not an error. */
int ax_memckpt_remove_tree(const char *path);

#endif
