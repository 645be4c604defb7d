#!/bin/sh
# --dp-sync-early 1 (real MPI): the data-parallel sum started during the last micro-batch's
# backward, each block's gradients as soon as its backward has written them
# (docs/compression.md, "The backward timeline"):
#  - on 1x2 and 2x2 (two data-parallel ranks: every element is summed as a + b either way) the
#    losses and final weights equal the late sum's (--dp-sync-early 0) bit for bit: on 1x2 the
#    default all-reduce with and without clipping, a ring over small chunks that cut the
#    tensors, and CaSync parts with the identity codec; on 2x2 the default and the identity;
#  - switched on, the header says how many of the sum's pieces started during the backward
#    (some: a block's gradients are final before the stage's backward ends); off, it says
#    nothing of the kind;
#  - with --compress auto, Espresso is handed the stage's measured backward timeline.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --steps 4 \
  --shuffle 0 --seed 7 --val-steps 0 --lr 3e-3 --threads 1"
E="--dp-sync-early 1"

ALL="plain: noclip:--grad-clip_0 ring:--allreduce_ring_--bucket-size_1000_--coarsening_3 \
  id:--compress_identity_--compress-min-bytes_0"
for grid in "1 2:$ALL" "2 2:plain: id:--compress_identity_--compress-min-bytes_0"; do
  paths=${grid#*:}; set -- ${grid%%:*}; np=$(($1 * $2)); g="--g-inter $1 --g-data $2"; n="g$1x$2"
  for v in $paths; do
    v=$(echo "$v" | tr _ ' ')
    path=${v%%:*}; args=${v#*:}
    # shellcheck disable=SC2086
    run "l$n$path" $np $g $args && run "e$n$path" $np $g $args $E || continue
    same_losses "e$n$path" "l$n$path" 0 0
    grep -q "^dp-sync-early: step 1 started [1-9][0-9]* of [0-9]* piece(s)" "$TMP/e$n$path.log" ||
      { fail "e$n$path: no pieces started during the backward"; cat "$TMP/e$n$path.log"; }
    ! grep -q "^dp-sync-early" "$TMP/l$n$path.log" || fail "l$n$path: an early sum without the flag"
  done
done

run auto 2 --g-data 2 --compress auto $E &&
  { grep -q "^  backward timeline (measured on the stage): [0-9.]* ms" "$TMP/auto.log" ||
      { fail "auto: Espresso got no backward timeline"; cat "$TMP/auto.log"; }; }
run autolate 2 --g-data 2 --compress auto &&
  { ! grep -q "backward timeline" "$TMP/autolate.log" || fail "autolate: a timeline without the flag"; }
finish
