/* byte_alphabet.h — GPT-2's byte-to-unicode alphabet: each of the 256 byte values stands for
 * one printable character, so that encoder.json and vocab.bpe can spell any byte string as
 * text. Bytes '!'..'~', U+00A1..U+00AC and U+00AE..U+00FF stand for themselves; the other 68
 * (controls, space, DEL, U+0080..U+00A0, U+00AD) take U+0100, U+0101, ... in byte order, so
 * the space is 'Ġ' (U+0120) and the newline 'Ċ' (U+010A). */
#ifndef AX_BYTE_ALPHABET_H
#define AX_BYTE_ALPHABET_H

#include <stddef.h>
#include <stdint.h>

/* The character that stands for byte b. */
uint32_t ax_byte_to_unicode(uint8_t b);
/* The byte that code point cp stands for, or -1 when cp is not in the alphabet. */
int ax_unicode_to_byte(uint32_t cp);

/* Spells UTF-8 text written in the alphabet as the bytes it stands for. out holds at least n
 * bytes (never more are needed); returns the byte count, or -1 when the text has a character
 * outside the alphabet or is not valid UTF-8. */
long ax_alphabet_to_bytes(const uint8_t *text, size_t n, uint8_t *out);

#endif
