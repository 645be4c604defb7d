#!/bin/sh
# Optimus-CC's fused embedding synchronization (--fuse-embedding-sync 1; real MPI):
#  - on 2x2 the tied wte's gradient is summed once over its 4 holders instead of over each
#    row's pair and then again in the data-parallel sum: final weights within 1e-6 of the
#    unfused run (the same sums in another order), losses within 1e-5 of the 1x1 run; the
#    same through every path of the data-parallel sum (interleaved by calls or a thread, all
#    chunks first, --offload 0, chunks that cut wte, identity CaSync parts bit for bit as the
#    plain sum; bf16 on the wire within 1e-2 of unfused bf16);
#  - on 4x1 and 2x1 the fused sum is the pair's: bit for bit the unfused run; on 1x1 and 1x2
#    there is no tied copy: nothing changes;
#  - the summary's embedding_sync + data_parallel bytes shrink as the paper's volume model
#    says (per holder V(3D-2)/D -> V(2D-1)/D, V = wte's bytes), printed.
. "$(dirname "$0")/mpilib.sh"

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --steps 5 \
  --shuffle 0 --seed 7 --val-steps 0 --lr 3e-3 --threads 1"
FE="--fuse-embedding-sync 1"

run ref 1 || exit 1
run fe1x1 1 $FE && same_losses fe1x1 ref 0 0
for grid in "2 2" "4 1" "2 1" "1 2"; do
  set -- $grid; np=$(($1 * $2)); g="--g-inter $1 --g-data $2"; n="g$1x$2"
  run "$n" $np $g && run "fe$n" $np $g $FE || continue
  if [ "$2" -gt 1 ] && [ "$1" -gt 1 ]; then
    same_losses "fe$n" "$n" 1e-6 1e-6
  else
    same_losses "fe$n" "$n" 0 0 # the same all-reduce over the same two ranks, or none
  fi
  same_losses "fe$n" ref 1e-5
done
grep -q "^embedding sync: fused: one all-reduce of the tied wte gradient over its 4 holders" \
  "$TMP/feg2x2.log" || { fail "feg2x2: no embedding sync line in the header"; cat "$TMP/feg2x2.log"; }

# every path of the data-parallel sum leaves wte out (2x2)
G="--g-inter 2 --g-data 2"
for v in "calls:--grad-clip 0" "thread:--grad-clip 0 --progress thread" "plain:--offload 0" \
         "cut:--grad-clip 0 --bucket-size 1000 --coarsening 3"; do
  path=${v%%:*}; args=${v#*:} # (run and same_losses set $name)
  # shellcheck disable=SC2086
  run "u$path" 4 $G $args && run "f$path" 4 $G $args $FE && same_losses "f$path" "u$path" 1e-6 1e-6
done
C="--allreduce ring --bucket-size 1000 --coarsening 3"
run fring 4 $G $C $FE && run fid 4 $G $C $FE --compress identity --compress-min-bytes 0 &&
  same_losses fid fring 0 0
run ubf16 4 $G --allreduce-dtype bf16 && run fbf16 4 $G --allreduce-dtype bf16 $FE &&
  same_losses fbf16 ubf16 1e-2 2e-2

# the bytes: embedding_sync + data_parallel per step, unfused and fused, against the model
run ubytes 4 $G --allreduce ring --sparse-embedding-sync dense --summary "$TMP/u.json" &&
  run fbytes 4 $G --allreduce ring $FE --summary "$TMP/f.json" &&
  python3 - "$TMP/u.json" "$TMP/f.json" <<'PY' || fail "fused embedding bytes are not what the volume model says"
import json, sys
def load(path):
    d = json.load(open(path))
    return d, d["communication"]["per_step"]
(du, u), (df, f) = load(sys.argv[1]), load(sys.argv[2])
P, D = du["run"]["g_inter"], du["run"]["g_data"]
V = du["model"]["padded_vocab"] * du["model"]["hidden"] * 4  # wte's fp32 bytes
holders = [r for r in range(P * D) if r % P in (0, P - 1)]
def both(k):
    return k["embedding_sync"]["bytes"] + k["data_parallel"]["bytes"]
bad = 0
for name, per in (("unfused", u), ("fused", f)):
    print("%s: embedding_sync %d + data_parallel %d = %d bytes per step (all ranks)" %
          (name, per["sum"]["embedding_sync"]["bytes"], per["sum"]["data_parallel"]["bytes"],
           both(per["sum"])))
for r in holders:
    ku, kf = u["ranks"][r], f["ranks"][r]
    # the ring on p ranks sends 2V(p-1)/p when p divides wte's elements
    want_u = V + 2 * V * (D - 1) // D          # the pair, then the column: V(3D-2)/D
    want_f = 2 * V * (2 * D - 1) // (2 * D)    # all 2D holders at once: V(2D-1)/D
    got = (ku["embedding_sync"]["bytes"], kf["embedding_sync"]["bytes"],
           ku["data_parallel"]["bytes"] - kf["data_parallel"]["bytes"])
    want = (V, want_f, want_u - V)
    if got != want:
        print("rank %d: embedding_sync unfused/fused and the data_parallel drop %r, the model "
              "says %r" % (r, got, want))
        bad = 1
if not both(f["sum"]) < both(u["sum"]):
    print("fused is not less"); bad = 1
print("per holder: unfused V(3D-2)/D = %d, fused V(2D-1)/D = %d bytes (V = %d, D = %d)" %
      (V * (3 * D - 2) // D, V * (2 * D - 1) // D, V, D))
sys.exit(bad)
PY

finish
