/* sample_text.h — how `axonn sample` reads its prompt and prints tokens. Without a tokenizer,
 * byte-level models (vocabulary <= 256) take text and print text, larger vocabularies take and
 * print token ids. With llm.c's tokenizer file (--tokenizer gpt2_tokenizer.bin) tokens print as
 * their bytes (<|endoftext|> as the text "<|endoftext|>"); with GPT-2's BPE files (--bpe-dir)
 * a text prompt is encoded, and tokens print as text when no tokenizer file is given. */
#ifndef AX_SAMPLE_TEXT_H
#define AX_SAMPLE_TEXT_H

#include "bpe.h"
#include "token_table.h"

typedef struct {
  int vocab;                 /* the model's vocabulary */
  AxTokenTable file;         /* --tokenizer (vocab 0 without) */
  AxBpe *bpe;                /* --bpe-dir, or NULL */
  const AxTokenTable *print; /* the table that prints tokens, or NULL */
} AxSampleText;

/* Either path may be NULL. A tokenizer with fewer tokens than the model is an error. */
int ax_sample_text_open(AxSampleText *t, int model_vocab, const char *tokenizer,
                        const char *bpe_dir);
void ax_sample_text_close(AxSampleText *t);

/* All the prompt's token ids; an empty prompt gives one start token: <|endoftext|> when the
 * tokenizer has it, otherwise a newline for byte-level models and 0 for others. */
int ax_sample_text_prompt(AxSampleText *t, const char *prompt, AxTokens *out);

/* Prints one token to stdout. */
void ax_sample_text_emit(const AxSampleText *t, int token);

#endif
