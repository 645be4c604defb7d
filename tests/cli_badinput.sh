#!/bin/sh
# The bad-input corpus: every case is something a user or a batch system really does wrong, and
# each must end with exactly one line on stderr that says what is wrong, a non-zero exit (never
# a crash, never a hang: each case runs under `timeout`), no partial output left in the output
# directory, and nothing already there changed or lost. One-rank cases here; faults of
# multi-rank runs (killed, stopped and stuck ranks) are in tests/mpi_faults.sh. A flag the
# configuration ignores is not an error: the run goes on after one warning line.
#   bad NEEDLE CMD...   runs CMD (usually $AXONN ...) in a fresh state of $OUT
#   warns NEEDLE CMD... the same, but CMD exits 0 and its one line is a warning
. "$(dirname "$0")/testlib.sh"
OUT=$TMP/out        # where cases write; its contents are compared before and after
IN=$TMP/in          # inputs, prepared once
mkdir -p "$OUT" "$IN"
cases=0
RUN="--seq 16 --batch 4 --steps 3 --val-steps 0 --quiet"   # with --init
T="--layers 2 --hidden 32 --heads 2 $RUN"

# What is in $OUT: one line per entry, a file's with its type, size, modification and change
# times (to the nanosecond), inode, mode and link target. Any write to a file changes its
# times (and a file put in its place, its inode), and every case's binary runs for more than
# one tick of the file-time clock before it could write, so a change the old listing of every
# file's md5sum caught shows here too, with one process instead of six. A directory's line
# leaves out its times: a file made and removed again leaves nothing, as before. (find's order
# is the directories' own, the same while nothing changes, so no sort.)
snapshot() {
  find "$OUT" -type d -printf '%P %y %m\n' -o -printf '%P %y %s %T@ %C@ %i %m %l\n'
}
# $OUT as the last case left it, which the next case starts from (nothing else writes there
# between cases); empty where something else may have (fresh_out), so that the next case takes
# its own snapshot first
last=
fresh_out() { last=; }

# run_case CMD...: one case, its exit status in $rc, $OUT snapshotted before ($before) and after
run_case() {
  cases=$((cases + 1))
  before=${last:-$(snapshot)}
  timeout 120 "$@" >"$TMP/stdout" 2>"$TMP/stderr"; rc=$?
  after=$(snapshot)
  last=$after
  what="case $cases: $*"
}

# one_line NEEDLE: the case printed one line on stderr, with NEEDLE, and left $OUT as it was
one_line() {
  lines=0 # (wc -l without a process: the lines that end in a newline)
  while IFS= read -r _; do lines=$((lines + 1)); done <"$TMP/stderr"
  if [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr:"; cat "$TMP/stderr"; return; fi
  grep -q -- "$1" "$TMP/stderr" || { fail "$what: stderr lacks '$1':"; cat "$TMP/stderr"; }
  [ "$before" = "$after" ] || {
    fail "$what: changed $OUT:"
    printf '%s\n' "$before" >"$TMP/before"; printf '%s\n' "$after" >"$TMP/after"
    diff "$TMP/before" "$TMP/after"
  }
}

bad() {
  needle=$1; shift
  run_case "$@"
  if [ $rc -eq 0 ]; then fail "$what: exit 0, expected an error with '$needle'"; return; fi
  if [ $rc -eq 124 ]; then fail "$what: hung (killed after 120 s)"; return; fi
  if [ $rc -gt 128 ]; then fail "$what: died of signal $((rc - 128))"; cat "$TMP/stderr"; return; fi
  one_line "$needle"
}

warns() {
  needle=$1; shift
  run_case "$@"
  if [ $rc -ne 0 ]; then fail "$what: exit $rc, expected 0 and a warning with '$needle'"; cat "$TMP/stderr"; return; fi
  one_line "axonn: warning: .*$needle"
}

# ---------------------------------------------------------------- inputs
i=0; : >"$IN/text.txt"
while [ $i -lt 200 ]; do echo "to be or not to be, that is the question $i" >>"$IN/text.txt"; i=$((i + 1)); done
"$AXONN" prep --input "$IN/text.txt" --output "$IN/t" >/dev/null || fail "prep of the inputs"
"$AXONN" train $T --data "$IN/t_train.bin" --save "$IN/model.bin" >/dev/null ||
  fail "training the input model"
mkdir -p "$IN/dir"
# a shard header and a model header, with one field changed: poke FILE OFFSET INT32
poke() { printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($2 & 255)) $((($2 >> 8) & 255)) \
  $((($2 >> 16) & 255)) $((($2 >> 24) & 255)))" | dd of="$1" bs=1 seek="$3" conv=notrunc 2>/dev/null; }
cp "$IN/t_train.bin" "$IN/magic.bin"; poke "$IN/magic.bin" 12345 0
cp "$IN/t_train.bin" "$IN/version.bin"; poke "$IN/version.bin" 7 4
cp "$IN/t_train.bin" "$IN/claims.bin"; poke "$IN/claims.bin" 99999999 8
head -c 2000 "$IN/t_train.bin" >"$IN/truncated.bin"
head -c 100 "$IN/t_train.bin" >"$IN/short.bin"
: >"$IN/empty.bin"
cp "$IN/t_val.bin" "$IN/oov_val.bin"; printf '\377\377' | dd of="$IN/oov_val.bin" bs=1 seek=1100 conv=notrunc 2>/dev/null
cp "$IN/model.bin" "$IN/mmagic.bin"; poke "$IN/mmagic.bin" 1 0
cp "$IN/model.bin" "$IN/mversion.bin"; poke "$IN/mversion.bin" 5 4
head -c 5000 "$IN/model.bin" >"$IN/mtrunc.bin"
cp "$IN/model.bin" "$IN/mheads.bin"; poke "$IN/mheads.bin" 3 20
cp "$IN/model.bin" "$IN/overflow.bin"; poke "$IN/overflow.bin" 1 16; poke "$IN/overflow.bin" 1073741824 24
poke "$IN/overflow.bin" 2147483647 28
cp "$IN/model.bin" "$IN/nan.bin"; printf '\000\000\300\177' | dd of="$IN/nan.bin" bs=1 seek=1500 conv=notrunc 2>/dev/null
python3 -c "print('#' + ' ' * 4094 + 'steps = 1')" >"$IN/long.cfg"
printf 'steps = 5# five steps\n' >"$IN/hash.cfg"
printf 'steps = 2\nthis is junk\n' >"$IN/junk.cfg"
head -c 512 "$AXONN" >"$IN/binary.cfg"
printf 'config = other.cfg\n' >"$IN/nested.cfg"
printf 'no-such-option = 1\n' >"$IN/unknown.cfg"

# ---------------------------------------------------------------- flags
bad "unknown command 'fly'" "$AXONN" fly
bad "unknown option --nope" "$AXONN" train --nope 1
# a misspelled flag: the nearest known one, for every subcommand's options
bad "unknown option --metric (did you mean --metrics? see" "$AXONN" train --metric m.csv
bad "unknown option --tensorbord (did you mean --tensorboard?" "$AXONN" train --tensorbord tb
bad "unknown option --keep-checkpoints (did you mean --keep?" "$AXONN" train --keep-checkpoints 3
bad "unknown option --g_data (did you mean --g-data?" "$AXONN" train --g_data 2
bad "unknown option --temprature (did you mean --temperature?" "$AXONN" sample --temprature 1
bad "--steps needs a value" "$AXONN" train --steps
bad "--steps expects an integer, got 'ten'" "$AXONN" train --steps ten
bad "--steps -1 is out of range \[0, 1073741824\]" "$AXONN" train --steps -1
bad "--val-steps 'x' is not all or an integer from 0 to" "$AXONN" train --val-steps x
bad "--layers 0 is out of range" "$AXONN" train --layers 0
bad "--batch 0 is out of range" "$AXONN" train --batch 0
bad "--hidden 99999999999 is out of range" "$AXONN" train --hidden 99999999999
bad "--lr expects a number, got 'nan'" "$AXONN" train --lr nan
bad "--lr expects a number, got 'inf'" "$AXONN" train --lr inf
bad "--lr -0.1 is out of range" "$AXONN" train --lr -0.1
bad "--dropout 1 is out of range" "$AXONN" train --dropout 1
bad "--dropout expects a number" "$AXONN" train --dropout 0.1x
bad "--attention-dropout 0.95 is out of range" "$AXONN" train --attention-dropout 0.95
bad "--loss-scale-window 0 is out of range" "$AXONN" train --loss-scale-window 0 --loss-scaling dynamic
bad "--beta1 1 is out of range" "$AXONN" train --beta1 1
bad "--tp-gather-budget -2 is out of range" "$AXONN" train --tp-gather-budget -2
bad "--grad-clip expects a number" "$AXONN" train --grad-clip 1e999
bad "--seed 17179869184G is out of range" "$AXONN" train --seed 17179869184G
bad "--seed 9223372036854775808 is out of range" "$AXONN" train --seed 9223372036854775808
bad "--seed -5 is out of range" "$AXONN" train --seed -5
bad "--bucket-size 17179869185G is out of range" "$AXONN" plan --bucket-size 17179869185G
bad "--bucket-size expects an integer, got '4X'" "$AXONN" train --bucket-size 4X
bad "--shuffle 2 is out of range" "$AXONN" train --shuffle 2
bad "--lr-schedule must be one of constant|cosine" "$AXONN" train --lr-schedule linear
bad "--quiet expects 0 or 1" "$AXONN" train --quiet=maybe
bad "--zen-hierarchy must be one of auto|flat" "$AXONN" train --zen-hierarchy two
bad "--zen-owners must be one of hash|balanced" "$AXONN" train --zen-owners random
bad "--threads 1000 is out of range" "$AXONN" train --threads 1000
bad "unexpected argument 'extra'" "$AXONN" train extra
bad "unexpected argument '-x'" "$AXONN" train -x
bad "--trace-steps '2-3junk' is not a range" "$AXONN" train $T --trace-steps 2-3junk
bad "--trace-steps '3-2' is not a range" "$AXONN" train $T --trace-steps 3-2
# integers inside an option's text never wrap past 32 or 64 bits (one checked reading for all)
bad "--trace-steps '99999999999-99999999999': 99999999999 is out of range \[1, 2147483647\]" "$AXONN" train $T --trace-steps 99999999999-99999999999
bad "--grid '99999999999,1,1,1,1': 99999999999 is out of range \[1, 2147483647\]" "$AXONN" plan --rank-grids --grid 99999999999,1,1,1,1
bad "--grid '1,2,2,8' is not G_inter,Gx,Gy,Gz,G_data" "$AXONN" plan --rank-grids --grid 1,2,2,8
bad "--models '1:32:2:16:4294967298:256': 4294967298 is out of range" "$AXONN" bench train --models 1:32:2:16:4294967298:256 --steps 1 --warmup 0 --size 64 --reps 1
bad "--vocabs '99999999999999999999': 99999999999999999999 is out of range" "$AXONN" bench sparse-sync --vocabs 99999999999999999999
bad "--coarsening '1,' is not a list of positive integers" "$AXONN" bench optimizer --params 1K --bucket-size 256 --coarsening 1,
# an option whose value another parser reads: one clean line, not the inner message nested
bad "error: --fusion expects auto, none or a byte count of at least 1 (K, M, G suffixes), got '0' (" "$AXONN" train $T --compress auto --fusion 0
bad "error: --fusion expects auto, none or a byte count of at least 1 (K, M, G suffixes), got '99999999999999999999' (" "$AXONN" train $T --compress auto --fusion 99999999999999999999
bad "error: --syncs 'ring,ps,ag': at most two CaSync algorithms" "$AXONN" bench compress --syncs ring,ps,ag --codec-rows 0
bad "--device 'tpu' is not cpu or cuda" "$AXONN" train $T --device tpu
bad "--device 'tpu' is not cpu or cuda" "$AXONN" plan --device tpu
bad "is more ranks than MPI can number" "$AXONN" plan --g-inter 4096 --g-data 1048576
bad "not divisible by --heads 3" "$AXONN" train --hidden 100 --heads 3
bad "not divisible by --micro-batch 3" "$AXONN" train --batch 8 --micro-batch 3
bad "not divisible by --g-data 3" "$AXONN" plan --batch 8 --g-data 3
bad "--g-inter 5 exceeds the 4 layers" "$AXONN" plan --g-inter 5
bad "entry 1 is not a number of layers from 1 to 4" "$AXONN" plan --g-inter 2 --stage-layers 4294967297,1
bad "entry 2 is not a number of layers from 1 to 4" "$AXONN" plan --g-inter 2 --stage-layers 4,0
bad "has fewer entries than --g-inter 2" "$AXONN" plan --g-inter 2 --stage-layers 4
bad "adds up to 3 layers, the model has 4" "$AXONN" plan --g-inter 2 --stage-layers 2,1
bad "needs 2 ranks, but the job has 1" "$AXONN" train $T --g-inter 2
# plan and --dry-run check the tensor-parallel shape as train does (issue 45, item 7)
bad "--gx 3 does not divide the 2 attention heads" "$AXONN" plan $T --gx 3
bad "--gx 3 does not divide the 2 attention heads" "$AXONN" train $T --gx 3 --dry-run
# tensor parallelism runs on --device cpu and cuda in every --precision (issue 50): what fails
# here is the job's size, and the device optimizer over the CPU backend's 16-bit storage
bad "needs 2 ranks, but the job has 1" "$AXONN" train $T --gx 2 --precision bf16
bad "needs 2 ranks, but the job has 1" "$AXONN" train $T --gz 2 --precision fp16 --loss-scaling dynamic
bad "--optimizer device on the cpu backend needs --precision fp32" "$AXONN" train $T --precision bf16 --optimizer device
bad "--gz 2 does not divide the 9 rows of a weight block" "$AXONN" plan --layers 2 --hidden 3 --heads 1 --seq 16 --batch 4 --gz 2
# --optimizer device runs on many ranks (issue 50): what fails here is the job's size
bad "needs 2 ranks, but the job has 1" "$AXONN" train $T --g-data 2 --optimizer device
bad "run it with --optimizer host" "$AXONN" train $T --optimizer device --memory-checkpoint-every 1
bad "--compress needs --optimizer host" "$AXONN" train $T --optimizer device --compress onebit
# --dp-sync-early 1: the sum runs in place on host fp32 gradients, progressed between blocks
bad "--dp-sync-early 2 is out of range" "$AXONN" train $T --dp-sync-early 2
bad "--dp-sync-early 1 needs --progress calls" "$AXONN" train $T --dp-sync-early 1 --progress thread
bad "--dp-sync-early 1 needs --allreduce-dtype fp32" "$AXONN" train $T --dp-sync-early 1 --allreduce-dtype bf16
bad "--dp-sync-early 1 needs --optimizer host" "$AXONN" train $T --dp-sync-early 1 --optimizer device
bad "--dp-sync-early 1 needs no loss scaling" "$AXONN" train $T --dp-sync-early 1 --loss-scaling dynamic
bad "--dp-sync-early 1 needs --device cpu --precision fp32" "$AXONN" train $T --dp-sync-early 1 --precision bf16
bad "--dp-sync-early 1 needs --compress-local-clip 0" "$AXONN" train $T --dp-sync-early 1 --compress dgc
bad "--compress-local-clip 'yes' is not auto or an integer from 0 to 1" "$AXONN" train $T --compress dgc --compress-local-clip yes
bad "--compress-remeasure 2 is out of range" "$AXONN" train $T --compress onebit --compress-remeasure 2
bad "--compress-local-clip 1 needs --grad-clip above 0" "$AXONN" train $T --compress dgc --compress-local-clip 1 --grad-clip 0
bad "--ac 2 needs --checkpoint-activations" "$AXONN" train $T --ac 2
bad "--resume needs --checkpoint-dir" "$AXONN" train $T --resume
bad "--val-data needs --data" "$AXONN" train $T --val-data "$IN/t_val.bin"

# ---------------------------------------------------------------- the network: --emulate-link, --ranks-per-node
# For train and every MPI benchmark (on one rank here; tests/mpi_emulator.sh runs them under
# mpiexec): one line, non-zero exit, no output file (--summary, --metrics, --save, --json).
OUTS="--summary $OUT/s.json --metrics $OUT/m.csv --save $OUT/m.bin"
LINK="expected BANDWIDTH\[,LATENCY\] such as 10Gbps,5us"
for cmd in "train $T $OUTS" "bench p2p --json $OUT/p.jsonl" "bench allreduce --max-bytes 8K --json $OUT/a.jsonl" \
    "bench optimizer --params 1K --bucket-size 256 --json $OUT/o.jsonl"; do
  # shellcheck disable=SC2086
  set -- $cmd
  bad "--emulate-link: empty: $LINK" "$AXONN" "$@" --emulate-link ""
  bad "--emulate-link: bandwidth '10' has no unit: $LINK" "$AXONN" "$@" --emulate-link 10
  bad "--emulate-link: '10Gbps,' ends with a comma and no latency" "$AXONN" "$@" --emulate-link 10Gbps,
  bad "--emulate-link: 'abc' is not a bandwidth: $LINK" "$AXONN" "$@" --emulate-link abc
  bad "--emulate-link: '-5Gbps' is not a bandwidth" "$AXONN" "$@" --emulate-link -5Gbps
  bad "--emulate-link: latency '5parsecs': unknown unit 'parsecs'" "$AXONN" "$@" --emulate-link 10Gbps,5parsecs
  bad "--emulate-link: bandwidth '0Gbps' must be at least 1 bit/s" "$AXONN" "$@" --emulate-link 0Gbps
  bad "--emulate-link: bandwidth '0Mbps' must be at least 1 bit/s" "$AXONN" "$@" --emulate-link 0Mbps,5us
  bad "--emulate-link: '0x10Gbps' is not a bandwidth" "$AXONN" "$@" --emulate-link 0x10Gbps
  bad "--emulate-link: '-5us' is not a latency" "$AXONN" "$@" --emulate-link 10Gbps,-5us
  bad "--emulate-link: bandwidth '10Gbit': unknown unit 'Gbit'" "$AXONN" "$@" --emulate-link 10Gbit
  bad "--ranks-per-node -1 is out of range" "$AXONN" "$@" --ranks-per-node -1
  bad "--ranks-per-node expects an integer, got 'two'" "$AXONN" "$@" --ranks-per-node two
done
# --ranks-per-node that does not divide the job (one rank here)
bad "--ranks-per-node 2 does not divide the 1 rank(s) of --g-inter 1 x --g-data 1" "$AXONN" train $T $OUTS --ranks-per-node 2
bad "--ranks-per-node 2 does not divide the job's 1 rank(s)" "$AXONN" bench allreduce --max-bytes 8K --json "$OUT/a.jsonl" --ranks-per-node 2 --emulate-link 10Gbps
bad "--ranks-per-node 3 does not divide the job's 1 rank(s)" "$AXONN" bench optimizer --params 1K --bucket-size 256 --json "$OUT/o.jsonl" --ranks-per-node 3

# ---------------------------------------------------------------- flags the configuration ignores
# One warning each (issue 47), even under --quiet ($T has it); the run goes on.
warns "--lazy-error has no effect without --compress-backprop" "$AXONN" train $T --lazy-error 0
warns "--loss-scale-window has no effect without dynamic loss scaling" "$AXONN" train $T --loss-scale-window 5
warns "Adam's variance is frozen after a warm-up of 1 step(s), fewer than the 20" "$AXONN" train $T --compress onebit --steps 12
warns "--attention has no effect here: the fused attention runs on --device cuda" "$AXONN" train $T --attention fused
warns "--compress-sync has no effect under --compress auto" "$AXONN" train $T --compress auto --compress-sync ps
warns "--compress-min-bytes has no effect under --compress auto" "$AXONN" train $T --compress auto --compress-min-bytes 0
warns "--compress-codec has no effect without --compress auto" "$AXONN" train $T --compress onebit --compress-codec identity
warns "--replica-idle-share has no effect with --replica-schedule end" "$AXONN" train $T --replica-schedule end --replica-idle-share 0.5 --memory-checkpoint-every 1 --memory-dir "$IN"
warns "--epilogue-only has no effect without --compress-backprop" "$AXONN" train $T --epilogue-only 0
warns "--dp-sync-early has no effect with --g-data 1" "$AXONN" train $T --dp-sync-early 1
warns "--compress-sync has no effect without --compress (no gradient" "$AXONN" train $T --compress-sync ps
warns "--compress-min-bytes has no effect without --compress (no gradient" "$AXONN" train $T --compress-min-bytes 4K
warns "--compress-local-clip has no effect without --compress (no gradient" "$AXONN" train $T --compress-local-clip 1
warns "--compress-remeasure has no effect without --compress (no gradient" "$AXONN" train $T --compress-remeasure 1
warns "--compress-remeasure has no effect without --resume (a run that starts fresh" "$AXONN" train $T --compress onebit --compress-remeasure 1
warns "--replica-schedule has no effect without --memory-checkpoint-every" "$AXONN" train $T --replica-schedule end
warns "--zen-owners has no effect here: Zen sums the first stage's embedding rows only with --g-inter 2+" "$AXONN" train $T --zen-owners hash
warns "--zen-hierarchy has no effect here: Zen sums" "$AXONN" train $T --zen-hierarchy flat
warns "--emulate-link has no effect: all 1 rank(s) are on one node, so no message crosses a link (to emulate one, run 2 or more ranks with --ranks-per-node N" "$AXONN" train $T --emulate-link 1Gbps
# where the flag applies, nothing is said
run_case "$AXONN" train $T --compress auto --compress-codec identity
[ $rc -eq 0 ] && [ ! -s "$TMP/stderr" ] || { fail "$what: exit $rc, stderr:"; cat "$TMP/stderr"; }
# MPI's own all-reduce cannot go through the emulated link
bad "--allreduce mpi cannot run over --emulate-link" "$AXONN" train $T $OUTS --allreduce mpi --emulate-link 10Gbps,5us
bad "--algos mpi cannot run over --emulate-link" "$AXONN" bench allreduce --max-bytes 8K --json "$OUT/a.jsonl" --algos ring,mpi --emulate-link 10Gbps
bad "--algos mpi-blocking cannot run over --emulate-link" "$AXONN" bench allreduce --max-bytes 8K --json "$OUT/a.jsonl" --algos mpi-blocking --emulate-link 10Gbps
bad "--allreduce mpi cannot run over --emulate-link" "$AXONN" bench optimizer --params 1K --bucket-size 256 --json "$OUT/o.jsonl" --allreduce mpi --emulate-link 10Gbps

# ---------------------------------------------------------------- --config files
bad "is a directory" "$AXONN" train --config "$IN/dir"
bad "cannot open config file" "$AXONN" train --config "$IN/missing.cfg"
bad "long.cfg:1: line longer than 4096 bytes" "$AXONN" train $T --config "$IN/long.cfg"
bad "hash.cfg:1: --steps expects an integer, got '5# five steps'" "$AXONN" train $T --config "$IN/hash.cfg"
bad "junk.cfg:2: expected \`name = value\`" "$AXONN" train $T --config "$IN/junk.cfg"
bad "binary.cfg:1: not a line of text" "$AXONN" train $T --config "$IN/binary.cfg"
bad "cannot include another" "$AXONN" train $T --config "$IN/nested.cfg"
bad "unknown.cfg:1: unknown option --no-such-option" "$AXONN" train $T --config "$IN/unknown.cfg"
bad "--config needs a file name" "$AXONN" train $T --config

# ---------------------------------------------------------------- data and model files
bad "cannot open" "$AXONN" train $T --data "$IN/missing.bin"
bad "it is a directory" "$AXONN" train $T --data "$IN/dir"
bad "no token shard matches" "$AXONN" train $T --data "$IN/none_*.bin"
bad "bad magic 12345" "$AXONN" train $T --data "$IN/magic.bin"
bad "version 7 is not supported" "$AXONN" train $T --data "$IN/version.bin"
bad "the header says 99999999 tokens" "$AXONN" train $T --data "$IN/claims.bin"
bad "size mismatch" "$AXONN" train $T --data "$IN/truncated.bin"
bad "shorter than the 1024-byte header" "$AXONN" train $T --data "$IN/short.bin"
bad "shorter than the 1024-byte header" "$AXONN" train $T --data "$IN/empty.bin"
bad "outside the vocabulary of 50" "$AXONN" train $T --data "$IN/t_train.bin" --vocab 50
bad "--val-data: shard 1 holds token 65535" "$AXONN" train $T --data "$IN/t_train.bin" --val-data "$IN/oov_val.bin" --val-steps 1 --save "$OUT/m.bin"
bad "bad magic 1" "$AXONN" train $RUN --init "$IN/mmagic.bin"
bad "this is a bf16 file" "$AXONN" train $RUN --init "$IN/mversion.bin"
bad "size mismatch" "$AXONN" train $RUN --init "$IN/mtrunc.bin"
bad "bad header: --hidden 32 is not divisible by --heads 3" "$AXONN" sample --model "$IN/mheads.bin"
bad "bad header: a model of" "$AXONN" sample --model "$IN/overflow.bin"
bad "bad header: a model of" "$AXONN" compare "$IN/overflow.bin" "$IN/model.bin"
bad "bad header: a model of" "$AXONN" plan --init "$IN/overflow.bin"
bad "tensor wte holds a non-finite value" "$AXONN" sample --model "$IN/nan.bin"
bad "tensor wte holds a non-finite value" "$AXONN" train $RUN --init "$IN/nan.bin"
bad "exceeds the model's maximum sequence length 16" "$AXONN" train --init "$IN/model.bin" --seq 64
bad "conflicts with --init" "$AXONN" train --init "$IN/model.bin" --layers 3
bad "conflicts with --init" "$AXONN" train --init "$IN/model.bin" --model gpt2-small
bad "is not a preset" "$AXONN" train --model gpt5

# ---------------------------------------------------------------- outputs: checked before the first step
bad "--save: cannot write /proc/x.bin" "$AXONN" train $T --save /proc/x.bin
bad "--save: cannot write $OUT: it is a directory" "$AXONN" train $T --save "$OUT"
long=$OUT/$(python3 -c "print('x' * 300)")
bad "--save: cannot write" "$AXONN" train $T --save "$long.bin"
bad "--trace: cannot write $IN/dir: it is a directory" "$AXONN" train $T --trace "$IN/dir"
bad "--summary: cannot write $IN/dir: it is a directory" "$AXONN" train $T --summary "$IN/dir"
bad "cannot create metrics file" "$AXONN" train $T --metrics "$IN/dir"
bad "--checkpoint-dir is [0-9]* bytes long; at most 959 fit" "$AXONN" train $T --checkpoint-dir "$OUT/$(python3 -c "print('d/' * 497)")" --checkpoint-every 1
bad "a path component is 300 bytes long" "$AXONN" train $T --checkpoint-dir "$long" --checkpoint-every 1
bad "cannot create directory $IN/t_train.bin: a file of that name exists" "$AXONN" train $T --checkpoint-dir "$IN/t_train.bin" --checkpoint-every 1
bad "cannot create directory /proc/ck" "$AXONN" train $T --checkpoint-dir /proc/ck --checkpoint-every 1
mkfifo "$IN/fifo"
bad "--save: cannot write $IN/fifo: not a regular file (a FIFO)" "$AXONN" train $T --save "$IN/fifo"
bad "cannot write /dev/full: No space left on device" "$AXONN" bench train --models 1:32:2:16:2:256 --steps 1 --warmup 0 --size 64 --reps 1 --json /dev/full
bad "cannot write /proc/x.json" "$AXONN" bench train --models a --json /proc/x.json
bad "--models 1:32:2:16:0:256: --batch 0 is out of range" "$AXONN" bench train --models 1:32:2:16:0:256
bad "is not a, b or L:C:NH:T:B:V" "$AXONN" bench train --models 1:32:2:16:2:256junk

# ---------------------------------------------------------------- other subcommands
bad "sample needs --model" "$AXONN" sample
bad "sample needs --model" "$AXONN" sample --prompt -h
bad "--temperature -1 is out of range" "$AXONN" sample --model "$IN/model.bin" --temperature -1
bad "--tokens 0 is out of range" "$AXONN" sample --model "$IN/model.bin" --tokens 0
bad "cannot read $IN/dir: it is a directory" "$AXONN" prep --input "$IN/dir" --output "$OUT/p"
bad "needs --input FILE and --output PREFIX" "$AXONN" prep --input "$IN/text.txt"
bad "--val-fraction 2 is out of range" "$AXONN" prep --input "$IN/text.txt" --output "$OUT/p" --val-fraction 2
bad "cannot open $IN/none.txt" "$AXONN" prep --input "$IN/text.txt" "$IN/none.txt" --output "$OUT/p"
bad "standard input (-) is given twice" "$AXONN" prep - "$IN/text.txt" - --output "$OUT/p"
bad "--eot needs --tokenizer gpt2" "$AXONN" prep --input "$IN/text.txt" --output "$OUT/p" --eot
bad "--progress -1 is out of range" "$AXONN" prep --input "$IN/text.txt" --output "$OUT/p" --progress -1
bad "compare needs two model files" "$AXONN" compare "$IN/model.bin"
bad "unexpected argument" "$AXONN" compare "$IN/model.bin" "$IN/model.bin" "$IN/model.bin"
bad "unknown option --bogus1" "$AXONN" compare a b --tol 1 --tol 2 --tol 3 --tol 4 --bogus1 --bogus2
bad "export needs --checkpoint DIR --output FILE" "$AXONN" export --checkpoint "$IN/dir"
bad "no complete checkpoint in $IN/dir" "$AXONN" export --checkpoint "$IN/dir" --output "$OUT/e.bin"
bad "llmc|safetensors" "$AXONN" export --checkpoint "$IN/dir" --output "$OUT/e" --format onnx
bad "no complete checkpoint in $IN/dir" "$AXONN" export --checkpoint "$IN/dir" --output "$OUT/e" --format safetensors
bad "unknown benchmark 'fly'" "$AXONN" bench fly

# ---------------------------------------------------------------- launch templates, scaling drivers
S=scripts/launch
bad "--warn 40 must be less than --time 30" $S/slurm-srun.sh -n 4 --warn 40 --batch "$OUT/j.sh" -- x
bad "--warn must be minutes" $S/lsf-jsrun.sh -n 6 --warn 5m --batch "$OUT/j.lsf" -- x
bad "--warn needs a batch system" $S/mpirun.sh -n 2 --warn 5 --dry-run -- x
bad "--chain needs --batch FILE" $S/slurm-srun.sh -n 4 --chain 2 -- x --checkpoint-dir c
bad "the command has no --checkpoint-dir" $S/lsf-jsrun.sh -n 6 --chain 2 --batch "$OUT/j.lsf" -- x
bad "--chain must be a positive integer (got '0')" $S/slurm-srun.sh -n 4 --chain 0 --batch "$OUT/j.sh" -- x
bad "--chain needs a batch system" $S/mpirun.sh -n 2 --chain 2 --batch "$OUT/j.sh" -- x --checkpoint-dir c
bad "'gcc;rm' is not a module name" $S/slurm-srun.sh -n 4 --modules "gcc;rm" --batch "$OUT/j.sh" -- x
bad "--modules needs --batch FILE" $S/mpirun.sh -n 2 --modules gcc --dry-run -- x
bad "--bind must be core or none (got 'socket')" $S/mpirun.sh -n 2 --bind socket --dry-run -- x
bad "not divisible by G_data 3" scripts/scaling/strong --model 4x32x2 --gpus 1,3 --base-batch 8 \
  --fixed-batch --print --out "$OUT/s"
bad "--base-batch must be positive" scripts/scaling/strong --fixed-batch --base-batch 0 --print --out "$OUT/s"

# ---------------------------------------------------------------- writes that must not replace
# A device node and a symlink named as an output: the device is written, never replaced; the
# link is followed to its target and stays a link. /dev/full fails with its error.
mknod "$IN/mynull" c 1 3 2>/dev/null && {
  "$AXONN" train $T --save "$IN/mynull" --summary "$IN/mynull" >/dev/null ||
    fail "--save to a null device node"
  [ -c "$IN/mynull" ] || fail "--save replaced the device node with a regular file"
}
[ -e "$IN/mynull" ] || echo "skipped: device-node case (mknod needs root)"
ln -s target.bin "$IN/mylink"
"$AXONN" train $T --save "$IN/mylink" >/dev/null || fail "--save through a symlink"
[ -L "$IN/mylink" ] || fail "--save replaced the symlink"
"$AXONN" compare "$IN/mylink" "$IN/target.bin" --tol 0 >/dev/null 2>&1 || fail "--save did not write the symlink's target"
ls -a "$IN" | grep -q '\.tmp\.' && fail "a temporary file was left next to the outputs"
bad "cannot write /dev/full: No space left on device" "$AXONN" train $T --summary /dev/full
[ -c /dev/full ] || fail "/dev/full is no longer a device"
# a device that refuses every write is found before the first step (a write of nothing
# probes it), so the run leaves nothing behind: no metrics file in $OUT
bad "error: --summary: cannot write /dev/full: No space left on device" "$AXONN" train $T --summary /dev/full --metrics "$OUT/m.csv"
bad "error: --trace: cannot write /dev/full: No space left on device" "$AXONN" train $T --trace /dev/full --metrics "$OUT/m.csv"
bad "error: --save: cannot write /dev/full: No space left on device" "$AXONN" train $T --save /dev/full --metrics "$OUT/m.csv"
bad "error: --trace: cannot write /dev/full: No space left on device" "$AXONN" simulate --machine summit $T --trace /dev/full --metrics "$OUT/m.csv"
bad "error: --summary: cannot write /dev/full: No space left on device" "$AXONN" simulate --machine summit $T --summary /dev/full --metrics "$OUT/m.csv"
bad "error: --summary: cannot write /proc/x.json" "$AXONN" simulate --machine summit $T --summary /proc/x.json --metrics "$OUT/m.csv"
bad "cannot write metrics file /dev/full: No space left on device" "$AXONN" train $T --metrics /dev/full
bad "cannot write metrics file /dev/full: No space left on device" "$AXONN" train $T --metrics-jsonl /dev/full
bad "cannot create metrics file $IN/dir" "$AXONN" train $T --metrics-jsonl "$IN/dir"
# --tensorboard: a file where the directory should be; the CSV opened before it is removed
bad "--tensorboard: $IN/t_train.bin is not a directory" "$AXONN" train $T --tensorboard "$IN/t_train.bin" --metrics "$OUT/m.csv"
bad "--tensorboard: cannot create directory $IN/t_train.bin/tb: Not a directory" "$AXONN" train $T --tensorboard "$IN/t_train.bin/tb"
# --resume appends to --metrics: a file that is not axonn's metrics is refused, untouched
printf 'time,loss\n1,2\n' >"$IN/other.csv"
bad "cannot append to metrics file $IN/other.csv: its first line is not the header step,loss" "$AXONN" train $T --checkpoint-dir "$IN/ckr" --resume --metrics "$IN/other.csv"
[ "$(cat "$IN/other.csv")" = "$(printf 'time,loss\n1,2')" ] || fail "--resume changed a metrics file it refused"

# ---------------------------------------------------------------- checkpoints
CK=$OUT/ck
ckpt() { fresh_out; "$AXONN" train $T --quiet=0 --checkpoint-dir "$CK" "$@" >"$TMP/ck.log" 2>&1; }
steps() { (cd "$CK" && ls -d step-* 2>/dev/null | tr '\n' ' '); }
# --keep counts complete checkpoints only and never deletes the one just written; incomplete
# directories older than the newest complete one go
ckpt --steps 8 --checkpoint-every 4 --keep 1 || fail "checkpointed run"
mkdir "$CK/step-00000012" "$CK/step-00000001"
ckpt --steps 11 --checkpoint-every 2 --keep 1 --resume || { fail "resumed run"; cat "$TMP/ck.log"; }
[ "$(steps)" = "step-00000010 step-00000012 " ] || fail "--keep 1 after the resume left: $(steps)"
ckpt --steps 12 --checkpoint-every 2 --keep 2 --resume || fail "second resume"
grep -q "continuing from $CK/step-00000010 (step 10)" "$TMP/ck.log" || { fail "resume did not take step 10"; cat "$TMP/ck.log"; }
[ "$(steps)" = "step-00000010 step-00000012 " ] || fail "--keep 2 left: $(steps)"
# a resume that changes the data, the seed, the learning rate or the dropout is told so
ckpt --steps 14 --checkpoint-every 2 --resume --seed 7 --lr 1e-3 --data "$IN/t_train.bin" --dropout 0.1
for w in "--seed 7 differs from the 1337" "--lr 0.001 differs from the 0.003" "--data '$IN/t_train.bin' differs from '-'" \
  "--dropout 0.1 --attention-dropout 0 differ from the 0 and 0"; do
  grep -q -- "warning: resume: $w" "$TMP/ck.log" || { fail "no warning: $w"; cat "$TMP/ck.log"; }
done
# manifest fields are range-checked, not only CRC-checked: a checkpoint whose manifest says
# data position -5 or step -5 (with a valid CRC) is reported and the previous one is used
edit_manifest() { python3 - "$1" "$2" "$3" <<'PY'
import sys, zlib
path, key, value = sys.argv[1:]
lines = open(path).read().split("\n")[:-2]  # drop the crc line and the final newline
lines = [key + " " + value if l.split(" ")[0] == key else l for l in lines]
text = "\n".join(lines) + "\n"
open(path, "w").write(text + "crc %08x\n" % zlib.crc32(text.encode()))
PY
}
edit_manifest "$CK/step-00000014/manifest" data_position -5
ckpt --steps 15 --resume --keep 5
grep -q "step-00000014 is incomplete or corrupt.*data position -5" "$TMP/ck.log" || { fail "data position -5 not reported"; cat "$TMP/ck.log"; }
grep -q "continuing from $CK/step-00000012" "$TMP/ck.log" || fail "did not fall back to step 12"
edit_manifest "$CK/step-00000012/manifest" step -5
"$AXONN" export --checkpoint "$CK/step-00000012" --output "$OUT/e.bin" 2>"$TMP/err" &&
  fail "export of a manifest with step -5"
grep -q "step -5" "$TMP/err" || { fail "step -5 not reported"; cat "$TMP/err"; }
edit_manifest "$CK/step-00000012/manifest" step 12
edit_manifest "$CK/step-00000012/manifest" dropout "1.5 0"
"$AXONN" export --checkpoint "$CK/step-00000012" --output "$OUT/e.bin" 2>"$TMP/err" &&
  fail "export of a manifest with dropout 1.5"
grep -q "dropout 1.5 or attention dropout 0 is out of range" "$TMP/err" || { fail "dropout 1.5 not reported"; cat "$TMP/err"; }
rm -rf "$CK"
# two runs on one directory: the second is refused, naming the first; a dead owner's lock is
# stale (the lock dies with its process)
"$AXONN" train $T --steps 100000 --checkpoint-dir "$CK" --checkpoint-every 100000 >/dev/null 2>&1 &
owner=$!
i=0; while [ ! -e "$CK/lock" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
fresh_out # (the owner made $CK)
bad "is in use by another run (pid $owner on" "$AXONN" train $T --checkpoint-dir "$CK" --checkpoint-every 1
kill -9 $owner; wait $owner 2>/dev/null
ckpt --steps 2 --checkpoint-every 1 || fail "a dead run's lock blocked the next run"

if [ $fails -ne 0 ]; then echo "cli_badinput: $fails failure(s) in $cases cases"; exit 1; fi
echo "cli_badinput: all $cases cases passed"
