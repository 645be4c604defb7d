/* partition.h — which blocks each pipeline stage owns. L blocks over P stages as evenly as
 * possible (the first L % P stages take one more: the last stage also carries the LM head),
 * or as given by --stage-layers "3,3,2". */
#ifndef AX_PARTITION_H
#define AX_PARTITION_H

/* Fills first_block[0..P] so stage s owns blocks [first_block[s], first_block[s+1]).
 * spec may be NULL or empty for the even split. */
int ax_partition(int L, int P, const char *spec, int *first_block);

/* The factor of n_blocks closest to sqrt(L): the paper's checkpoint interval (axonn-ipdps22,
 * section V-A). */
int ax_partition_default_ac(int n_blocks, int L);

#endif
