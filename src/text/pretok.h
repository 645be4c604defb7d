/* pretok.h — GPT-2's pre-tokenizer: splits UTF-8 text into the pieces that byte-level BPE
 * encodes one at a time, exactly as the regular expression of GPT-2's encoder (as the npm
 * package gpt-3-encoder runs it, with JavaScript's \s):
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Bytes that are not valid UTF-8 count as "other" characters (the class of punctuation), one
 * byte each, so every byte string splits into pieces that cover it exactly. */
#ifndef AX_PRETOK_H
#define AX_PRETOK_H

#include <stddef.h>
#include <stdint.h>

/* The end (exclusive) of the piece that starts at text[pos]; pos < n. Calling it again from
 * the returned offset walks the whole text. */
size_t ax_pretok_next(const uint8_t *text, size_t n, size_t pos);

#endif
