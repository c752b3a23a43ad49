/* perf/train/corpus.h — the character-level text corpus `vkgrad train` learns.
 *
 * The text is the fortune cookies of Debian's `fortunes` package (installed by
 * ci/install-deps.sh; nothing is downloaded): every regular file of the
 * directory (default /usr/share/games/fortunes) whose name has no extension,
 * read in byte order of the names. A file is a list of records separated by
 * lines holding a single '%'. Record number r (counted over all files, from 0)
 * goes to the validation set when r % 10 == 9, to the training set otherwise;
 * each set is its records, each followed by "%\n", in order. The split is a
 * function of the files alone: perf/train_torch.py makes the same one.
 *
 * Tokens are bytes: a byte below 128 is its own token, any other byte is
 * token 0 (NUL never occurs in the text), so the vocabulary has 128 tokens.
 *
 *     struct train_corpus c;
 *     if (!train_corpus_load(&c, NULL, msg, sizeof msg)) fprintf(stderr, "%s\n", msg);
 *     ... c.train[0 .. c.n_train) ...
 *     train_corpus_free(&c);
 */
#ifndef VKGRAD_TRAIN_CORPUS_H
#define VKGRAD_TRAIN_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TRAIN_CORPUS_DIR   "/usr/share/games/fortunes"
#define TRAIN_CORPUS_VOCAB 128
#define TRAIN_CORPUS_EVERY 10 /* one record in this many is validation */

struct train_corpus {
    uint8_t *train, *val; /* tokens, each < TRAIN_CORPUS_VOCAB */
    size_t n_train, n_val;
    int n_files;
    long n_records_train, n_records_val;
    size_t cap_train, cap_val; /* allocated bytes of train and val */
};

/* The token of a byte of text. */
uint8_t train_corpus_token(unsigned char byte);
/* Read and split the corpus of dir (NULL: TRAIN_CORPUS_DIR). False with a
 * message (naming the directory and the Debian package) when it is missing
 * or too small to train on. */
bool train_corpus_load(struct train_corpus *c, const char *dir, char *msg, size_t msg_size);
/* Split the text of one file into c (for tests: no directory needed).
 * *record counts the records seen so far across calls. */
bool train_corpus_add_text(struct train_corpus *c, const char *text, size_t len, long *record);
void train_corpus_free(struct train_corpus *c);

#endif
