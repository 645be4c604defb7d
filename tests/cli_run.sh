#!/bin/sh
# What a run shows while it trains: progress lines every --log-every steps (the first and the
# last always; automatic: 20 to 40 lines), each with step/total, loss, lr, ms, tokens/s, FLOP/s,
# elapsed time and ETA, while the metrics CSV keeps every step; --quiet prints none.
# Only the shape of the output is checked, never a speed or a time.
set -u
AXONN=${AXONN:-bin/axonn}
TMP=$(mktemp -d /tmp/axonn-run-XXXXXX)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

TINY="--layers 1 --hidden 16 --heads 1 --seq 8 --batch 2 --threads 1 --val-steps 0"

# steps NAME: the step numbers of NAME's progress lines, space-separated
steps() { sed -n 's/^step *\([0-9]*\)\/.*/\1/p' "$TMP/$1.out" | tr '\n' ' ' | sed 's/ $//'; }

# --log-every 10 on 50 steps: 1, 10, 20, ..., 50
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 50 --log-every 10 --metrics "$TMP/every.csv" >"$TMP/every.out" ||
  fail "train --log-every 10"
[ "$(steps every)" = "1 10 20 30 40 50" ] || fail "--log-every 10 printed steps: $(steps every)"
[ "$(wc -l <"$TMP/every.csv")" -eq 51 ] || fail "metrics CSV lacks steps: $(wc -l <"$TMP/every.csv") lines"
line='^step +[0-9]+/50 \| loss [0-9.]+ \| lr [0-9.e+-]+ \| +[0-9.]+ ms \| +[0-9]+ tok/s \| [0-9.]+ [GT]FLOP/s \| grad norm [0-9.]+ \| elapsed [0-9.:]+s? \| ETA [0-9.:]+s?$'
bad=$(grep '^step ' "$TMP/every.out" | grep -Evc "$line")
[ "$bad" -eq 0 ] || { fail "$bad progress line(s) not of the expected form:"; grep '^step ' "$TMP/every.out" | grep -Ev "$line"; }

# automatic: 100 steps give 20 to 40 lines, the first and the last among them
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 100 >"$TMP/auto.out" || fail "train (automatic --log-every)"
n=$(grep -c '^step ' "$TMP/auto.out")
[ "$n" -ge 20 ] && [ "$n" -le 40 ] || fail "automatic --log-every printed $n lines on 100 steps"
case " $(steps auto) " in *" 1 "*" 100 "*) ;; *) fail "first or last step missing: $(steps auto)" ;; esac

# an odd interval still ends on the last step; --quiet prints no step line
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 7 --log-every 3 >"$TMP/odd.out" || fail "train --log-every 3"
[ "$(steps odd)" = "1 3 6 7" ] || fail "--log-every 3 on 7 steps printed: $(steps odd)"
# shellcheck disable=SC2086
"$AXONN" train $TINY --steps 5 --quiet >"$TMP/quiet.out" || fail "train --quiet"
grep -q '^step ' "$TMP/quiet.out" && fail "--quiet printed progress lines"

if [ $fails -ne 0 ]; then echo "cli_run: $fails failure(s)"; exit 1; fi
echo "cli_run: all checks passed"
