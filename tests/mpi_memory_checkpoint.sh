#!/bin/sh
# In-memory checkpoints (--memory-checkpoint-every, docs/memory-checkpoints.md) on 4 ranks as
# 2 virtual nodes of 2 (--ranks-per-node 2), real MPI, real files in shared memory:
#  - a rank killed (SIGKILL) mid-run; --resume recovers from memory and goes on bit for bit as
#    the run never interrupted (4x1: every node holds its own stages and its peer's replicas);
#  - node loss: the dead node's directory deleted too; its stages come from the peer's
#    replicas over MPI, still bit for bit;
#  - a corrupt copy (one byte of a stage file changed): its CRC rejects it and the peer's copy
#    is sent instead, bit for bit;
#  - both copies of one stage lost: falls back to the newest file checkpoint and says so;
#  - a rank killed inside the copy (slot emptied; files written; replicas sent): the
#    half-made copy is never used, the previous step is, bit for bit; a replica transfer that
#    fails inside a wait ends the job with one line, and it resumes from memory bit for bit;
#  - a different grid on restart (4x1 -> 2x2) within the file checkpoints' tolerance;
#  - with compression (2x2, onebit and compressed backpropagation): a recovery from memory
#    restarts the per-rank compression state and says so; it trains exactly as a file
#    checkpoint's resume with that state taken out, not as the run never interrupted; where its
#    cost model measured its costs again (1x4 over an emulated link) the warning says that too;
#    the summary's run.resumed says where each resumed run's state came from;
#  - a normal end leaves no files; `axonn shm-clean` removes a dead job's;
#  - 1x4 and 2x2, where each node CRCs half of each stage file it writes: every complete
#    copy's trailer and manifest hold the CRC of its bytes, and a killed run resumes from them
#    bit for bit;
#  - bad values (--replicas 0, more replicas than nodes, a bad --run-name) get one line;
#  - the summary's memory_checkpoints object counts the copies (made, complete, skipped) and
#    every rank's files and costs, null where a rank wrote no file (1x4).
# These runs send replicas before the next optimizer (--replica-schedule end), so which step is
# the newest whole copy does not depend on timing. Then the default schedule, replicas in the
# idle spans of an EMULATED link: a run is bit for bit the reference and says how its replicas
# travelled (on a fast link: checkpoints every step, none skipped, bytes sent in idle spans);
# killed, its node's memory lost, it resumes from memory bit for bit (from whichever step was
# whole: that depends on timing, and is not asserted). On a link too busy for any chunk, each
# copy's replicas go at the settle before the next checkpoint (late), none is skipped, and
# every step of that is deterministic.
. "$(dirname "$0")/mpilib.sh"

SHM=${AXONN_TEST_SHM:-/dev/shm}
if ! [ -d "$SHM" ] || ! [ -w "$SHM" ]; then
  echo "  $SHM is not a writable directory: the memory checkpoints go to $TMP/shm instead"
  SHM=$TMP/shm
  mkdir -p "$SHM"
fi
NAME=t$$
derived=
# (this trap replaces testlib.sh's, so it removes $TMP too)
cleanup_shm() { rm -rf "$SHM/axonn-$NAME" ${derived:+"$derived"}; chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"; }
LOCK_NAME=lock
trap cleanup_shm EXIT

COMMON="--layers 4 --hidden 32 --heads 2 --seq 16 --batch 8 --micro-batch 2 --steps 10 \
  --shuffle 0 --seed 7 --val-every 5 --val-steps 1 --threads 1 --ranks-per-node 2 \
  --memory-checkpoint-every 1 --memory-dir $SHM --replica-schedule end"
P4="--g-inter 4"

# killed NAME ARGS...: a run that must die (one of its ranks kills itself)
killed() {
  name=$1; shift
  # shellcheck disable=SC2086
  timeout 120 $MPIEXEC -n 4 "$AXONN" train $COMMON --metrics "$TMP/$name.csv" "$@" \
    >"$TMP/$name.log" 2>&1
  rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || { fail "$name: exit $rc, expected a killed job"; return 1; }
}
expect_log() { grep -q -- "$2" "$TMP/$1.log" || { fail "$1: no '$2' in its output"; cat "$TMP/$1.log"; }; }
# keep_tree KEY: a copy of what a killed job left in memory, so that one killed job serves
# several recoveries; put_back KEY: that memory as the job left it, in place of the current one
keep_tree() { cp -a "$SHM/axonn-$NAME" "$TMP/tree-$1" || fail "$1: cannot keep the killed job's tree"; }
put_back() { rm -rf "$SHM/axonn-$NAME"; cp -a "$TMP/tree-$1" "$SHM/axonn-$NAME"; }

# summary_ckpt NAME WANT: the summary's memory_checkpoints object holds WANT (JSON; its key
# "_positive" lists members that must be above 0), and each rank's costs are positive where it
# wrote files (the steady cost: at least 4) and null elsewhere (tests/cli_summary.sh: a run
# without memory checkpoints has no such object)
summary_ckpt() {
  python3 - "$TMP/$1.json" "$2" <<'PY' || fail "$1: the summary's memory_checkpoints object is wrong"
import json, sys
c = json.load(open(sys.argv[1]))["memory_checkpoints"]
want = json.loads(sys.argv[2])
positive = want.pop("_positive", [])
bad = {k: c[k] for k in want if c[k] != want[k]}
bad.update({k: c[k] for k in positive if not c[k] > 0})
# (steady: the files after each of the 3 slots' first fill, so a rank needs 4 files for one)
for k, least in (("copy_thread_cpu_ms_per_file", 1), ("copy_thread_cpu_ms_per_file_steady", 4),
                 ("join_and_settle_ms_per_copy", 0)):
    wrote = [f >= least for f in c["files_written"]]
    if [v is not None and v > 0 for v in c[k]] != wrote:
        bad[k] = c[k]
if bad:
    print("unexpected:", bad)
    sys.exit(1)
PY
}

# copies_whole NAME LEAST: every complete copy in memory is whole (its trailer and its manifest
# both hold zlib's CRC of the file's bytes), and there are at least LEAST stage files in them
copies_whole() {
  python3 - "$SHM/axonn-$NAME" "$2" <<'PY' || fail "$1: a copy whose CRC is not its bytes'"
import glob, os, struct, sys, zlib
seen = 0
for man in glob.glob(os.path.join(sys.argv[1], "node-*", "slot-*", "manifest")):
    for line in open(man):
        f = line.split()
        if f[0] != "file":
            continue
        data = open(os.path.join(os.path.dirname(man), f[1]), "rb").read()
        size, crc = int(f[2]), int(f[3], 16)
        assert len(data) == size + 4, (man, f)
        assert zlib.crc32(data[:size]) == crc, (man, f, hex(zlib.crc32(data[:size])))
        assert struct.unpack("<I", data[size:])[0] == crc, (man, f)
        seen += 1
assert seen >= int(sys.argv[2]), seen
PY
}

# resumed NAME WANT: the summary's run.resumed is WANT (JSON)
resumed() {
  python3 -c 'import json, sys
got = json.load(open(sys.argv[1]))["run"]["resumed"]
sys.exit(got != json.loads(sys.argv[2]) and "run.resumed: %s" % got)' "$TMP/$1.json" "$2" ||
    fail "$1: the summary's run.resumed is not $2"
}

run ref 4 $P4 --run-name "$NAME" --summary "$TMP/ref.json" || exit 1
expect_log ref "memory checkpoints: every 1 step"
# 10 copies, all complete; each rank wrote its stage file 10 times. Zero-copy: the optimizers
# of stages 0-2 wrote theirs in place; the last stage (one block) keeps a tied wte copy too
# large for its file (over a quarter of its arrays), so its copy thread copies
# (replicas at the end: none in idle spans, none late)
summary_ckpt ref '{"every": 1, "replicas": 2, "nodes": 2, "replica_schedule": "end",
  "copies": 10, "copies_complete": 10, "skipped": 0, "interval": 1, "late": 0,
  "replica_bytes_in_spans": 0, "_positive": ["replica_bytes_outside_spans"],
  "files_written": [10, 10, 10, 10], "files_in_place": [10, 10, 10, 0]}'
# an optimizer writing into the slots trains as one that does not, bit for bit
run plain 4 $P4 --memory-checkpoint-every 0 && tail_equal ref plain &&
  { cmp -s "$TMP/ref.bin" "$TMP/plain.bin" || fail "ref: its saved model differs from plain's"; }
# 1x4: the two ranks of a node train the same stage, so only the first of them writes it
run dp 4 --g-data 4 --run-name "$NAME" --summary "$TMP/dp.json" &&
  summary_ckpt dp '{"nodes": 2, "copies": 10, "copies_complete": 10, "files_written": [10, 0, 10, 0],
  "files_in_place": [10, 0, 10, 0]}'
run dp_plain 4 --g-data 4 --memory-checkpoint-every 0 && tail_equal dp dp_plain &&
  { cmp -s "$TMP/dp.bin" "$TMP/dp_plain.bin" || fail "dp: its saved model differs from dp_plain's"; }
[ -e "$SHM/axonn-$NAME" ] && fail "a normal end left $SHM/axonn-$NAME"

# Zero-copy's other paths, against runs without memory checkpoints:
#  - every 2 steps: between checkpoints the state stays in its slot while it may, and moves
#    when that slot holds the newest complete copy or the one in flight;
#  - a skipped step (a forced overflow at step 5): the update writes nothing, so that step's
#    copy copies the state from where it is; killed as step 7 begins, the run resumes from
#    step 5's copy (made so) bit for bit
run every2 4 $P4 --run-name "$NAME" --memory-checkpoint-every 2 && tail_equal every2 plain &&
  { cmp -s "$TMP/every2.bin" "$TMP/plain.bin" || fail "every2: its saved model differs from plain's"; }
run skip 4 $P4 --run-name "$NAME" --debug-overflow-step 5 --summary "$TMP/skip.json" &&
  summary_ckpt skip '{"copies": 10, "files_in_place": [9, 9, 9, 0]}'
run skip_plain 4 $P4 --memory-checkpoint-every 0 --debug-overflow-step 5 &&
  tail_equal skip skip_plain
killed skip_kill $P4 --run-name "$NAME" --debug-overflow-step 5 --debug-hang-rank 3 \
  --debug-hang-step 7 --debug-hang-mode kill
run skip_resume 4 $P4 --run-name "$NAME" --debug-overflow-step 5 --resume &&
  tail_equal skip_resume skip_plain
expect_log skip_resume "step 5 recovered from memory (every node its own)"

# 1x4 again, a rank dies as step 7 begins. Both nodes write stage 0, each CRCs half of the
# file, and the settle puts the halves together. Every complete copy on each node is whole.
# The resume reads each node's own copy and goes on bit for bit.
killed dp_kill --g-data 4 --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 7 \
  --debug-hang-mode kill
copies_whole dp_kill 2  # step 5's copy of stage 0 on each of the two nodes, at least
run dp_resume 4 --g-data 4 --run-name "$NAME" --resume --summary "$TMP/dp_resume.json" &&
  tail_equal dp_resume dp
resumed dp_resume '{"from": "memory", "step": 5, "compression_state": null}'
expect_log dp_resume "step 5 recovered from memory (every node its own)"

# 2x2: both nodes write stages 0 and 1, each CRCs half of each file; the settle meets the
# stages' halves interleaved in rank order (once it mixed them up, and a lost rank restarted
# the run from step 1)
G22="--g-inter 2 --g-data 2"
run grid22 4 $G22 --run-name "$NAME" --summary "$TMP/grid22.json" || exit 1
# its last stage (two blocks) keeps its small tied wte copy in its file, unrecorded: zero-copy
# there too, and the kill below resumes from such files
summary_ckpt grid22 '{"copies": 10, "files_in_place": [10, 10, 10, 10]}'
run grid22_plain 4 $G22 --memory-checkpoint-every 0 && tail_equal grid22 grid22_plain
killed grid22_kill $G22 --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 7 \
  --debug-hang-mode kill
copies_whole grid22_kill 4  # step 5's copies of stages 0 and 1 on each of the two nodes
run grid22_resume 4 $G22 --run-name "$NAME" --resume && tail_equal grid22_resume grid22
expect_log grid22_resume "step 5 recovered from memory (every node its own)"

# 2x2 with one rank a node: nodes 0 and 2 write stage 0, nodes 1 and 3 stage 1, so the replica
# groups are drawn along the data-parallel rows ({0, 2}, {1, 3}) and no replica is sent (in
# groups of consecutive nodes each node sent its file to a node of the other stage); node 0's
# memory lost, its stage comes from node 2's own copy
run grid22n 4 $G22 --ranks-per-node 1 --run-name "$NAME" --summary "$TMP/grid22n.json" &&
  summary_ckpt grid22n '{"nodes": 4, "copies": 10, "copies_complete": 10,
  "replica_bytes_in_spans": 0, "replica_bytes_outside_spans": 0}'
killed grid22n_kill $G22 --ranks-per-node 1 --run-name "$NAME" --debug-hang-rank 3 \
  --debug-hang-step 7 --debug-hang-mode kill
rm -rf "$SHM/axonn-$NAME/node-0"
run grid22n_resume 4 $G22 --ranks-per-node 1 --run-name "$NAME" --resume &&
  tail_equal grid22n_resume grid22n
expect_log grid22n_resume "stage-0.bin of step 5: node 2's memory; sent from node 2 to node 0"

# a rank dies as step 7 begins: step 6's copy never finished, step 5 is whole in memory
# (what this job leaves serves the node loss and the corrupt copy below too: the same job, the
# same step, put back before each)
killed kill $P4 --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 7 --debug-hang-mode kill &&
  keep_tree kill
run kill_resume 4 $P4 --run-name "$NAME" --resume && tail_equal kill_resume ref
expect_log kill_resume "step 5 recovered from memory (every node its own)"
[ -e "$SHM/axonn-$NAME" ] && fail "the resumed run's normal end left $SHM/axonn-$NAME"

# node loss: node 1's memory is gone with it; node 0's replicas of stages 2 and 3 go over MPI
put_back kill
rm -rf "$SHM/axonn-$NAME/node-1"
run node_resume 4 $P4 --run-name "$NAME" --resume && tail_equal node_resume ref
expect_log node_resume "stage-3.bin of step 5: node 0's memory; sent from node 0 to node 1"

# node 1's copy of stage 3 corrupt (one byte flipped in its data): the CRC rejects it
put_back kill
f="$SHM/axonn-$NAME/node-1/slot-1/stage-3.bin"
[ -f "$f" ] || fail "corrupt: no $f"
b=$(od -An -tu1 -j2000 -N1 "$f" | tr -d ' ')  # byte 2000, replaced by its complement
printf "\\$(printf '%03o' $((255 - b)))" | dd of="$f" bs=1 seek=2000 conv=notrunc 2>/dev/null
[ "$(od -An -tu1 -j2000 -N1 "$f" | tr -d ' ')" = $((255 - b)) ] || fail "corrupt: byte not changed"
run corrupt_resume 4 $P4 --run-name "$NAME" --resume && tail_equal corrupt_resume ref
expect_log corrupt_resume "stage-3.bin of step 5: node 0's memory; sent from node 0 to node 1"

# both copies of stage 2 lost: the file checkpoint of step 4
killed lost $P4 --run-name "$NAME" --checkpoint-dir "$TMP/ck" --checkpoint-every 4 \
  --debug-hang-rank 3 --debug-hang-step 7 --debug-hang-mode kill
rm -f "$SHM/axonn-$NAME"/node-*/slot-*/stage-2.bin
run lost_resume 4 $P4 --run-name "$NAME" --checkpoint-dir "$TMP/ck" --resume &&
  tail_equal lost_resume ref
expect_log lost_resume "no memory checkpoint that the nodes hold whole"
expect_log lost_resume "continuing from $TMP/ck/step-00000004"
rm -rf "$TMP/ck"

# With compression (2x2: onebit on the data-parallel sums, PowerSGD between the stages, both
# forced and without a warm-up, so both keep error feedback from the first step): a memory
# checkpoint holds one file a stage and no per-rank compression state, so a recovery from
# memory restarts that state (as DeepSpeed's 1-bit Adam does at every load) and says so. It
# trains on exactly as a resume from a file checkpoint of the same step whose compression state
# was taken out, and not as the run never interrupted, which a file checkpoint with its
# compression state continues bit for bit.
CODEC="$G22 --compress onebit --compress-min-bytes 0 --compress-warmup 0
  --compress-backprop powersgd:rank=2"
run codec_ref 4 $CODEC --run-name "$NAME" --summary "$TMP/codec_ref.json" || exit 1
resumed codec_ref null
killed codec_kill $CODEC --run-name "$NAME" --checkpoint-dir "$TMP/ck" --checkpoint-every 5 \
  --debug-hang-rank 3 --debug-hang-step 7 --debug-hang-mode kill
run codec_mem 4 $CODEC --run-name "$NAME" --resume --summary "$TMP/codec_mem.json"
expect_log codec_mem "step 5 recovered from memory"
resumed codec_mem '{"from": "memory", "step": 5, "compression_state": "restarted"}'
expect_log codec_mem "not the compression state of --compress and --compress-backprop"
awk -F, 'NR == FNR { l[$1] = $2; next } FNR > 1 && $2 != l[$1] { d = 1 } END { exit !d }' \
  "$TMP/codec_ref.csv" "$TMP/codec_mem.csv" ||
  fail "codec_mem: the losses of the run never interrupted, though its codec state restarted"
run codec_file 4 $CODEC --run-name "$NAME" --checkpoint-dir "$TMP/ck" --resume \
  --summary "$TMP/codec_file.json" && tail_equal codec_file codec_ref
resumed codec_file '{"from": "file", "step": 5, "compression_state": "restored"}'
step5=$TMP/ck/step-00000005
ls "$step5"/codec-*.bin "$step5"/backprop-*.bin >/dev/null 2>&1 ||
  fail "codec_kill: no compression state in $step5"
rm -f "$step5"/codec-*.bin "$step5"/backprop-*.bin
python3 - "$step5/manifest" <<'PY' || fail "codec_kill: cannot take the states out of its manifest"
import sys, zlib
path = sys.argv[1]
lines = open(path).read().splitlines(True)
assert lines[-1].startswith("crc ")
text = "".join(l for l in lines[:-1] if not l.startswith(("state codec-", "state backprop-")))
open(path, "w").write(text + "crc %08x\n" % zlib.crc32(text.encode()))
PY
run codec_fresh 4 $CODEC --run-name "$NAME" --checkpoint-dir "$TMP/ck" --resume \
  --summary "$TMP/codec_fresh.json" && tail_equal codec_fresh codec_mem
expect_log codec_fresh "holds no such state"
resumed codec_fresh '{"from": "file", "step": 5, "compression_state": "restarted"}'
rm -rf "$TMP/ck"
# where the cost model decides (over an emulated link), the recovered run measured its costs
# again, a file checkpoint holding none of them, and the warning says so too
COSTED="--g-data 4 --compress onebit --compress-warmup 0 --emulate-link 1Gbps,50us"
killed costed_kill $COSTED --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 7 \
  --debug-hang-mode kill
run costed_mem 4 $COSTED --run-name "$NAME" --resume
expect_log costed_mem "its cost model decides on costs measured at this start"
! grep -q "costs measured at this start" "$TMP/codec_mem.log" ||
  fail "codec_mem: its warning names costs measured again, though it measured none"

# killed inside the copy of step 6, at three points: step 5 is used
for point in begin files replicas; do
  killed "copy_$point" $P4 --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 6 \
    --debug-hang-mode "copy-$point"
  run "copy_${point}_resume" 4 $P4 --run-name "$NAME" --resume &&
    tail_equal "copy_${point}_resume" ref
  expect_log "copy_${point}_resume" "step 5 recovered from memory"
done

# a replica transfer that fails inside a wait (an error, not a kill: rank 3's pass in a wait of
# step 6's copy, where the next step's pipeline receives wait for the stages before it): the
# failure is kept and returned by the next tick or settle, so the job ends at once with one
# line naming it, and resumes from memory bit for bit
killed repl_error $P4 --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 6 \
  --debug-hang-mode replica-error
expect_log repl_error "error: memory checkpoint replicas, in a wait: a failure injected into a pass inside a wait"
[ "$(grep -c "error:" "$TMP/repl_error.log")" -eq 1 ] ||
  { fail "repl_error: not one error line"; cat "$TMP/repl_error.log"; }
run repl_error_resume 4 $P4 --run-name "$NAME" --resume && tail_equal repl_error_resume ref
expect_log repl_error_resume "recovered from memory"

# a different grid on restart, with the run name derived from the run (not the grid)
killed grid $P4 --debug-hang-rank 3 --debug-hang-step 7 --debug-hang-mode kill
derived=$(sed -n 's|.*memory checkpoints: every 1 step(s) into \([^ ]*\)/node-K.*|\1|p' "$TMP/grid.log")
[ -n "$derived" ] && [ -d "$derived" ] || fail "grid: no memory checkpoint directory ($derived)"
run grid_resume 4 --g-inter 2 --g-data 2 --resume && same_losses grid_resume ref
expect_log grid_resume "step 5 recovered from memory"

# the idle-span schedule over a fast emulated link (a stage file of 0.2 MB takes 16 us of it):
# every step checkpointed, none skipped, replicas sent in idle spans (a copy may still be late,
# the first one profiled from one step: not asserted)
IDLE="--replica-schedule idle --emulate-link 100Gbps"
run idle 4 $P4 --run-name "$NAME" $IDLE --summary "$TMP/idle.json" && tail_equal idle ref
expect_log idle "replicas go in chunks of at most 4 MB into 80% of each idle span of the link"
expect_log idle "10 copies replicated (idle-span schedule), 1.0 step(s) each on average, [0-9]* late"
expect_log idle "; 0 due checkpoint(s) skipped (taken every 1 step(s), asked every 1)"
summary_ckpt idle '{"replica_schedule": "idle", "copies": 10, "copies_complete": 10, "skipped": 0,
  "interval": 1, "_positive": ["replica_bytes_in_spans"]}'
expect_log idle "memory checkpoints: rank 0 wrote its stage file [0-9]* time(s), [0-9.]* ms of its copy thread's CPU each"
[ -e "$SHM/axonn-$NAME" ] && fail "idle: a normal end left $SHM/axonn-$NAME"
killed idle_kill $P4 --run-name "$NAME" $IDLE --debug-hang-rank 3 --debug-hang-step 7 \
  --debug-hang-mode kill
rm -rf "$SHM/axonn-$NAME/node-1"
run idle_resume 4 $P4 --run-name "$NAME" $IDLE --resume && tail_equal idle_resume ref
expect_log idle_resume "recovered from memory (own nodes and peer replicas)"

# a link never idle long enough (32 Mb/s and mu 0.01: a stage file of 0.2 MB takes 0.05 s, so
# only a span of 5 s would hold it, far longer than any step here, however loaded; 8 Mb/s, as
# before, made the run 8.0 s against 5.5 s, under load, with the same losses): no chunk
# fits, the run says so, and each copy's replicas go at the settle of the next step, before
# the next checkpoint (late). So every step is checkpointed (none skipped), the copies of
# steps 1-9 are late (step 10's is sent at the end), nothing travels in idle spans, and a
# rank killed as step 7 begins leaves step 5 (step 6's copy in flight).
STARVED="--replica-schedule idle --emulate-link 32Mbps --replica-idle-share 0.01"
run starved 4 $P4 --run-name "$NAME" $STARVED --summary "$TMP/starved.json" &&
  tail_equal starved ref
expect_log starved "no idle span of the link holds a chunk of 256 KB"
expect_log starved "10 copies replicated (idle-span schedule), 1.0 step(s) each on average, 9 late (the leftover sent at the settle before the next checkpoint); 0 due checkpoint(s) skipped (taken every 1 step(s), asked every 1); rank 0 sent 0.0 MB in idle spans"
summary_ckpt starved '{"replica_schedule": "idle", "copies": 10, "copies_complete": 10,
  "skipped": 0, "interval": 1, "late": 9, "replica_bytes_in_spans": 0,
  "_positive": ["replica_bytes_outside_spans"]}'
killed starved_kill $P4 --run-name "$NAME" $STARVED --debug-hang-rank 3 --debug-hang-step 7 \
  --debug-hang-mode kill
run starved_resume 4 $P4 --run-name "$NAME" $STARVED --resume && tail_equal starved_resume ref
expect_log starved_resume "step 5 recovered from memory (every node its own)"

# shm-clean removes what a dead job left
# (the same killed job's tree serves the links planted below: put back there)
killed clean $P4 --run-name "$NAME" --debug-hang-rank 3 --debug-hang-step 3 --debug-hang-mode kill
[ -d "$SHM/axonn-$NAME" ] || fail "clean: the killed job left no memory checkpoints"
keep_tree clean
"$AXONN" shm-clean --run-name "$NAME" --memory-dir "$SHM" >/dev/null || fail "shm-clean failed"
[ -e "$SHM/axonn-$NAME" ] && fail "shm-clean left $SHM/axonn-$NAME"

# ---------------------------------------------------------------- a node's shared memory
# /dev/shm is every user's: a tree is used only when it is this user's, holds no link and
# nothing axonn does not write; a live job's tree is locked; shm-clean removes only axonn
# trees that no live job holds (README, "In-memory checkpoints"). One rank unless said.
ONE="--layers 2 --hidden 32 --heads 2 --seq 16 --batch 4 --steps 3 --threads 1 --val-steps 0 \
  --quiet --summary /dev/null --memory-checkpoint-every 1 --memory-dir $SHM"
TREE=$SHM/axonn-$NAME
VICTIM=$TMP/victim
mkdir -p "$VICTIM"
for i in 0 1 2; do echo "precious $i" >"$VICTIM/f$i"; done
victims_intact() {
  for i in 0 1 2; do
    [ "$(cat "$VICTIM/f$i" 2>/dev/null)" = "precious $i" ] || fail "$1: $VICTIM/f$i was changed or removed"
  done
}
# links planted in the slots: refused before anything is written through them
rm -rf "$TREE"
for i in 0 1 2; do mkdir -p "$TREE/node-0/slot-$i"; ln -s "$VICTIM/f$i" "$TREE/node-0/slot-$i/stage-0.bin"; done
# shellcheck disable=SC2086
expect_error "slot-0/stage-0.bin is a symbolic link, which axonn never writes" train $ONE --run-name "$NAME"
victims_intact "planted links"
# the run directory itself a link, or open to other users: refused
rm -rf "$TREE"; ln -s "$VICTIM" "$TREE"
# shellcheck disable=SC2086
expect_error "axonn-$NAME is a symbolic link or not a directory" train $ONE --run-name "$NAME"
rm -f "$TREE"; mkdir -m 0777 "$TREE"; chmod 0777 "$TREE"
# shellcheck disable=SC2086
expect_error "can be written by other users (mode 777)" train $ONE --run-name "$NAME"
if [ "$(id -u)" -eq 0 ]; then # another user's tree (made here by root, given away)
  chmod 0700 "$TREE"; chown 65534 "$TREE"
  # shellcheck disable=SC2086
  expect_error "belongs to user id 65534, not to this user" train $ONE --run-name "$NAME"
else
  echo "  skipped: a tree of another user (needs root to give one away)"
fi
rm -rf "$TREE"
# --resume with a killed job's slots replaced by links to another directory: refused, and
# that directory's files are all still there
put_back clean  # a job killed in step 3 (above)
for i in 0 1 2; do rm -rf "$TREE/node-1/slot-$i"; ln -s "$VICTIM" "$TREE/node-1/slot-$i"; done
expect_job_error "node-1/slot-0 is a symbolic link or not a directory" 4 $P4 --run-name "$NAME" --resume
victims_intact "resume through links"
rm -rf "$TREE"

# a live job's tree (a job held in step 3's forward, --debug-hang-mode sleep, its watchdog off,
# so it is alive for as long as the checks take): shm-clean keeps it, a second job of that name
# is refused and leaves it whole; once the job is killed, shm-clean removes it
# shellcheck disable=SC2086
"$AXONN" train $ONE --steps 5 --step-timeout 0 --debug-hang-rank 0 --debug-hang-step 3 \
  --run-name "$NAME" >"$TMP/live.log" 2>&1 &
live=$!
i=0
while [ ! -e "$TREE/node-0/$LOCK_NAME" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
expect_error "is in use by a live job (pid [0-9]* on " shm-clean --run-name "$NAME" --memory-dir "$SHM"
[ -d "$TREE/node-0/slot-0" ] || fail "shm-clean removed a live job's tree"
# shellcheck disable=SC2086
expect_error "memory-checkpoint directory .*node-0 is in use by another run (pid [0-9]* on .*); give each run its own --run-name" \
  train $ONE --run-name "$NAME"
"$AXONN" shm-clean --all --memory-dir "$SHM" >"$TMP/all_live.log" 2>&1
[ -d "$TREE/node-0/slot-0" ] || fail "shm-clean --all removed a live job's tree"
grep -q "kept $TREE: .*in use by a live job" "$TMP/all_live.log" || fail "shm-clean --all: no word on the live tree"
kill -KILL $live 2>/dev/null
wait $live 2>/dev/null
"$AXONN" shm-clean --run-name "$NAME" --memory-dir "$SHM" >/dev/null || fail "shm-clean of the killed job failed"
[ -e "$TREE" ] && fail "shm-clean left the killed job's $TREE"

# default names: two runs that differ only in --lr get two trees (each killed at step 2)
tree_of() { sed -n 's|.*memory checkpoints: every 1 step(s) into \([^ ]*\)/node-K.*|\1|p' "$TMP/$1.log"; }
for lr in 0.001 0.002; do
  # shellcheck disable=SC2086
  "$AXONN" train $ONE --quiet=0 --lr $lr --debug-hang-rank 0 --debug-hang-step 2 \
    --debug-hang-mode kill >"$TMP/lr$lr.log" 2>&1
done
tree1=$(tree_of lr0.001); tree2=$(tree_of lr0.002)
[ -n "$tree1" ] && [ -d "$tree1" ] && [ -d "$tree2" ] || fail "lr: no trees ($tree1, $tree2)"
[ "$tree1" != "$tree2" ] || fail "runs differing in --lr share the memory-checkpoint tree $tree1"
# shm-clean --all removes those dead jobs' trees and nothing else named axonn-*
mkdir -p "$SHM/axonn-$NAME-src/node-0"; echo notes >"$SHM/axonn-$NAME-notes.txt"
"$AXONN" shm-clean --all --memory-dir "$SHM" >"$TMP/all.log" 2>&1 || fail "shm-clean --all failed"
[ -e "$tree1" ] || [ -e "$tree2" ] && fail "shm-clean --all left a dead job's tree"
[ -d "$SHM/axonn-$NAME-src/node-0" ] || fail "shm-clean --all removed a directory axonn did not write"
[ -f "$SHM/axonn-$NAME-notes.txt" ] || fail "shm-clean --all removed a file axonn did not write"
rm -rf "$SHM/axonn-$NAME-src" "$SHM/axonn-$NAME-notes.txt"

# a --memory-dir too small for one copy (a 300 KB tmpfs, where this machine lets root mount
# one): one line, and no metrics file, stage file or tree left behind
SMALL=$TMP/small
mkdir -p "$SMALL"
if mount -t tmpfs -o size=300k tmpfs "$SMALL" 2>/dev/null; then
  # shellcheck disable=SC2086
  expect_error "No space left on device" train $ONE --layers 4 --hidden 64 --memory-dir "$SMALL" \
    --run-name "$NAME" --metrics "$TMP/full.csv"
  [ -e "$TMP/full.csv" ] && fail "a full --memory-dir left a metrics file"
  [ -z "$(ls -A "$SMALL")" ] || { fail "a full --memory-dir left files:"; find "$SMALL"; }
  umount "$SMALL"
else
  echo "  skipped: a full --memory-dir (cannot mount a small tmpfs here)"
fi

expect_job_error "--replicas 0: at least 1" 4 $P4 --run-name "$NAME" --replicas 0
expect_job_error "--replicas 3 exceeds the job's 2 node(s)" 4 $P4 --run-name "$NAME" --replicas 3
expect_job_error "--run-name 'a/b': only letters" 4 $P4 --run-name a/b
finish
