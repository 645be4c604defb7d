#!/bin/sh
# testlib.sh — what every tests/*.sh script shares (sourced, not run): the binary under test,
# a temporary directory removed at exit, failure counting, the one-line-error check, and the
# verdict. tests/mpilib.sh adds the multi-rank helpers on top.
#   TEST_NAME     the script's name, for its directory and verdict (default: from $0)
#   fail MSG      counts a failure and says what
#   expect_error NEEDLE ARGS...   $AXONN ARGS fails (exit 1, or 2 for a usage error) with exactly
#                 one line on stderr matching NEEDLE (a grep pattern)
#   finish        prints the verdict and exits with it
set -u
AXONN=${AXONN:-bin/axonn}
TEST_NAME=${TEST_NAME:-$(basename "$0" .sh)}
TMP=$(mktemp -d "/tmp/axonn-$TEST_NAME-XXXXXX")
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

expect_error() {
  needle=$1; shift
  "$AXONN" "$@" >"$TMP/expect.out" 2>"$TMP/expect.err"; rc=$?
  lines=$(wc -l <"$TMP/expect.err")
  if [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
    fail "'$*' exited $rc; expected 1 or 2 with '$needle'"; return
  fi
  if [ "$lines" -ne 1 ]; then fail "'$*' printed $lines lines on stderr:"; cat "$TMP/expect.err"; return; fi
  grep -q -- "$needle" "$TMP/expect.err" || { fail "'$*': stderr lacks '$needle':"; cat "$TMP/expect.err"; }
}

finish() {
  if [ "$fails" -ne 0 ]; then echo "$TEST_NAME: $fails failure(s)"; exit 1; fi
  echo "$TEST_NAME: all checks passed"
  exit 0
}
