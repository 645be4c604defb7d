/* unicode_class.h — what GPT-2's pre-tokenizer needs to know about text: UTF-8 decoding (strict,
 * so every byte string can be walked) and the class of a code point: letter (\p{L}), number
 * (\p{N}), whitespace (JavaScript's \s) or other. The ranges are generated from Unicode's data
 * by scripts/gen-unicode-tables.py into src/text/unicode_tables.c. */
#ifndef AX_UNICODE_CLASS_H
#define AX_UNICODE_CLASS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { AX_UNI_OTHER, AX_UNI_LETTER, AX_UNI_NUMBER, AX_UNI_SPACE } AxUniClass;

typedef struct {
  uint32_t first, last;
} AxCodeRange;

/* The generated tables (sorted, disjoint) and the Unicode version they come from. */
extern const AxCodeRange AX_UNICODE_LETTERS[], AX_UNICODE_NUMBERS[], AX_UNICODE_SPACES[];
extern const size_t AX_UNICODE_LETTERS_COUNT, AX_UNICODE_NUMBERS_COUNT, AX_UNICODE_SPACES_COUNT;
extern const char AX_UNICODE_VERSION[];

/* Stands for a byte that does not start a valid UTF-8 sequence (its class is "other"). */
#define AX_UTF8_INVALID 0xFFFFFFFFu

/* Decodes the character at s[0] (n >= 1 bytes available): returns its length in bytes and
 * sets *cp. Overlong forms, surrogates, values past U+10FFFF and truncated sequences are
 * invalid: length 1 and *cp = AX_UTF8_INVALID. */
size_t ax_utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

AxUniClass ax_unicode_class(uint32_t cp);

#endif
