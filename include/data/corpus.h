// corpus.h — the corpus a command trains and evaluates on (docs/spec.md §2, docs/data.md):
// n sequences of tokens, grouped by split (train, then validation, then test), and its two
// locks (data/lock.h). The container here; where the tokens come from is a source:
//   in memory   tokens, offsets and split arrays (small corpora: exercise, the tests; built
//               by data/synthetic.h corpus_generate), sealed with corpus_memory_seal;
//   on disk     corpus.h5 read on demand (data/corpus_file.h corpus_read: what training and
//               evaluation use): a rank holds the window it trains on, never the corpus.
// corpus.h5 is written by data/writer.h, whose sources are prepare's generator
// (data/synthetic.h) and the users' files (data/import.h).
#ifndef DDPTOK_CORPUS_H
#define DDPTOK_CORPUS_H

#include <stdint.h>

#include "config/config.h"
#include "data/digest.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SPLIT_TRAIN = 0, SPLIT_VALIDATION = 1, SPLIT_TEST = 2 };

typedef struct CorpusFile CorpusFile;

typedef struct {
    int n;             // sequences
    int64_t n_tokens;  // total tokens
    int32_t *tokens;   // in memory: (n_tokens); NULL on disk
    int64_t *offsets;  // in memory: (n+1): sequence i is tokens[offsets[i] : offsets[i+1]]
    uint8_t *split;    // in memory: (n)
    CorpusFile *file;  // on disk (corpus_read); NULL in memory
    int split_first[4];  // split s is sequences split_first[s] .. split_first[s + 1] - 1 (train, validation, test)
    char content[65];      // the content digest (data/digest.h), hex
    char corpus_lock[65];  // the corpus lock: corpus.h5's (its content and cutting rules), hex
    char lock[65];         // the data lock (the corpus lock and the layout's keys): plan, reference, checkpoints
    int split_by_hash;     // its split came from the document hash (not an import's --split-from-names)
} Corpus;

// Sequences are grouped by split: train first, then validation, then test (an import keeps
// document order within each). Fills split_first from split; -1 if not grouped.
int corpus_index_splits(Corpus *corpus);
static inline int corpus_split_begin(const Corpus *c, int split) { return c->split_first[split]; }
static inline int corpus_split_end(const Corpus *c, int split) { return c->split_first[split + 1]; }
static inline int corpus_split_count(const Corpus *c, int split) { return c->split_first[split + 1] - c->split_first[split]; }

// Length of sequence i, and its tokens copied to out (room for data.max_length); on disk,
// a chunk that fails its checksum, or a length or id outside the config's rules, ends the
// process with one line naming the file, the sequence and the rule (exit 2).
int corpus_len(const Corpus *c, int i);
int corpus_tokens(const Corpus *c, int i, int32_t *out);
// The lengths of sequences first .. first + n - 1 into out (n of them): the bands sampler's
// scans. Reads their offsets only.
void corpus_lengths(const Corpus *c, int first, int n, int32_t *out);
// Reads the chunks of sequences ids[0..n-1] (-1 skipped) into the cache ahead of use (a
// prefetch thread may call it while the training thread reads): errors are left for the
// reader that needs the chunk to report.
void corpus_warm(const Corpus *c, const int32_t *ids, int n);
// On (1) for the calling thread: its reads are the prefetch's (not waits), and where the
// training thread would stop on a failed check, corpus_len gives min_length and
// corpus_tokens 0 tokens instead (the training thread then meets the same data and reports it).
void corpus_warming(int on);
// What reading has cost so far (on disk; zeros in memory): chunks read and checked, their
// bytes and seconds (any thread), and the seconds a reader that needed a chunk spent loading
// it (corpus_len, corpus_tokens: the waits a prefetch did not spare).
typedef struct {
    int64_t chunks, bytes;
    double seconds, waited;
} CorpusReads;
CorpusReads corpus_reads(const Corpus *c);
void corpus_free(Corpus *corpus);

// Whether a data lock stored by a checkpoint or a file is this corpus's under `cfg`: the
// current lock, or a format-2 or format-1 lock of the same data (older checkpoints; computed
// once, by reading the corpus, only when asked: data/lock.h).
int corpus_lock_accepts(const Corpus *corpus, const Config *cfg, const char *stored);
// The data lock this corpus's content has under another config (a report's, a matrix cell's).
void corpus_data_lock_under(const Corpus *corpus, const Config *cfg, char out[65]);

// An in-memory corpus whose n, n_tokens, tokens, offsets and split are filled: its splits
// indexed, its content digest and locks computed (as corpus.h5 of the same data would hold).
// -1 when the split is not grouped.
int corpus_memory_seal(Corpus *corpus, const Config *cfg, int split_by_hash);

#ifdef __cplusplus
}
#endif
#endif
