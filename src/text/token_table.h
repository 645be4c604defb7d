/* token_table.h — the text of every token id of a vocabulary (id -> bytes), and llm.c's
 * tokenizer file that stores it (gpt2_tokenizer.bin, written by llm.c's train_gpt2.py):
 *   header of 256 uint32: [0] = 20240328, [1] = version (1 or 2), [2] = vocabulary size,
 *   [3] = id of <|endoftext|> (version 2; version 1 means GPT-2's 50256);
 *   then for each id in order a uint8 length (>= 1) and that many bytes.
 * The BPE encoder (bpe.h) builds the same table from encoder.json. */
#ifndef AX_TOKEN_TABLE_H
#define AX_TOKEN_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define AX_TOKENIZER_MAGIC 20240328
#define AX_GPT2_EOT 50256

typedef struct {
  int vocab;         /* number of tokens */
  int eot;           /* id of <|endoftext|>, or -1 when the vocabulary has none */
  uint8_t *bytes;    /* every token's bytes, back to back */
  uint32_t *offsets; /* token i is bytes[offsets[i] .. offsets[i + 1]) (vocab + 1 entries) */
} AxTokenTable;

/* Reads and validates an llm.c tokenizer file (magic, version, sizes, every length, nothing
 * missing and nothing left over). On failure the table is empty and the error names the file. */
int ax_token_table_read(AxTokenTable *t, const char *path);
void ax_token_table_free(AxTokenTable *t);

/* The bytes of token `id` (0 <= id < vocab) and their count. */
const uint8_t *ax_token_bytes(const AxTokenTable *t, int id, size_t *len);

/* The text of n token ids, back to back, in a new buffer (free with free()); fails on an id
 * outside the vocabulary. */
int ax_token_table_decode(const AxTokenTable *t, const int32_t *ids, size_t n, uint8_t **text,
                          size_t *len);

#endif
