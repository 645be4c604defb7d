/* bpe.h — GPT-2's byte-level BPE tokenizer, read from the two files GPT-2 ships:
 *   encoder.json  a JSON object from token (spelled in the byte alphabet, byte_alphabet.h) to id
 *   vocab.bpe     "#version: 0.2", then one merge "a b" per line; earlier lines merge first
 * Encoding splits the text with GPT-2's pre-tokenizer (pretok.h), then merges the bytes of each
 * piece by rank; it gives the ids of GPT-2's own encoder for any UTF-8 text, and any byte
 * string (valid UTF-8 or not) decodes back to itself. No special tokens: "<|endoftext|>" in
 * the text is encoded as ordinary characters. An encoder caches pieces it has seen, so one
 * AxBpe must not be used by two threads at once. */
#ifndef AX_BPE_H
#define AX_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "token_table.h"
#include "tokens.h"

typedef struct AxBpe AxBpe;


/* Reads DIR/encoder.json and DIR/vocab.bpe. */
int ax_bpe_load(AxBpe **out, const char *dir);
int ax_bpe_load_files(AxBpe **out, const char *encoder_json, const char *vocab_bpe);
void ax_bpe_free(AxBpe *b);

/* id -> bytes of the vocabulary (its eot is the id of "<|endoftext|>" when there is one). */
const AxTokenTable *ax_bpe_tokens(const AxBpe *b);

/* Appends the ids of text[0..n) to out. */
int ax_bpe_encode(AxBpe *b, const uint8_t *text, size_t n, AxTokens *out);

#endif
