// corpus.h — the synthetic corpus (docs/spec.md §2): a seeded sparse order-1 Markov chain, its
// splits and the data lock (the microbatch layout is data/batch.h). An imported
// corpus (data/import.h, docs/data.md) has the same layout and is read by the same corpus_read.
//
// Generating process (docs/model.md "Corpus"): token 0 is the begin state. For every
// state a in 0..V-1 the chain picks S = data.markov_support distinct successors uniformly
// from 1..V-1 and gives them Dirichlet(1, …, 1) weights. A sequence has a length uniform
// in [min_length, max_length] and starts from state 0. Sequences 0..n_train-1 are train,
// then validation, then test. All draws come from the corpus Philox stream.
#ifndef DDPTOK_CORPUS_H
#define DDPTOK_CORPUS_H

#include <stdint.h>

#include "base/sha256.h"
#include "config/budget.h"
#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SPLIT_TRAIN = 0, SPLIT_VALIDATION = 1, SPLIT_TEST = 2 };

// A corpus lives in memory (what prepare and import build before writing it, and small
// test corpora) or on disk (corpus_read: what training and evaluation use). On disk it is
// read on demand (docs/data.md "On disk"): a sequence's offsets and tokens are pread from
// corpus.h5's contiguous datasets in chunks (CORPUS_TOKEN_CHUNK tokens, CORPUS_OFFSET_CHUNK
// offsets: config/budget.h), each chunk checked
// against its SHA-256 from the import before use and kept in a bounded cache, so a rank
// holds the window it trains on, never the corpus.
typedef struct CorpusFile CorpusFile;

typedef struct {
    int n;             // sequences
    int64_t n_tokens;  // total tokens
    int32_t *tokens;   // in memory: (n_tokens); NULL on disk
    int64_t *offsets;  // in memory: (n+1): sequence i is tokens[offsets[i] : offsets[i+1]]
    uint8_t *split;    // in memory: (n)
    CorpusFile *file;  // on disk (corpus_read); NULL in memory
    int split_first[4];  // split s is sequences split_first[s] .. split_first[s + 1] - 1 (train, validation, test)
    char lock[65];     // data lock (hex SHA-256), see corpus_lock
    char content[65];  // its content digest (hex): what the lock binds beside the config's lines (corpus_read; "" in memory)
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
int corpus_file_len(CorpusFile *f, int i);
static inline int corpus_len(const Corpus *c, int i) {
    return c->file ? corpus_file_len(c->file, i) : (int)(c->offsets[i + 1] - c->offsets[i]);
}
int corpus_tokens(const Corpus *c, int i, int32_t *out);
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

// The generating chain: support (V, S) successor ids and probs (V, S) probabilities.
typedef struct {
    int V, S;
    int32_t *succ;   // (V, S)
    double *prob;    // (V, S)
} Chain;

void chain_build(Chain *ch, const Config *cfg);
void chain_free(Chain *ch);
// Probability of token b after state a (0 when b is not a successor).
double chain_prob(const Chain *ch, int a, int b);

void corpus_generate(Corpus *corpus, const Config *cfg);
void corpus_free(Corpus *corpus);

// Data lock (format 2): SHA-256 over every config field that decides which tokens a rank
// sees (seed, data.*, world size, bands, batch size, accumulation; under the global sampler
// the sampler and global_batch instead of the layout on ranks) and the corpus's content
// digest: SHA-256 over its size line, the chunk checksums of the tokens and of the offsets,
// and the split bytes (docs/file-formats.md). Every token is bound to the lock through its
// chunk's checksum, which reading checks, so start-up hashes the checksums, not the tokens.
void corpus_lock(const Corpus *corpus, const Config *cfg, char out[65]);
// The content digest of an in-memory corpus (hex), and its chunk checksums: tokens
// (ceil(n_tokens / CORPUS_TOKEN_CHUNK), 32), offsets (ceil((n + 1) / CORPUS_OFFSET_CHUNK), 32); caller frees.
void corpus_content_digest(const Corpus *corpus, char out[65], uint8_t **token_sums, uint8_t **offset_sums);
// Whether a lock stored by a checkpoint or a file is this corpus's under `cfg`: the current
// lock, or the format-1 lock older checkpoints carry (SHA-256 of the key lines and of every
// token, offset and split byte: computed once, by reading the whole corpus, only when asked).
int corpus_lock_accepts(const Corpus *corpus, const Config *cfg, const char *stored);

// Writes `<outputs>/data/corpus.h5` (docs/spec.md §10); 0 or -1.
int corpus_write(const Corpus *corpus, const Config *cfg, const char *path);
// What `import` writes beside the corpus (docs/data.md): the attribute `source` (the
// config's data.source), /document int64 (n): the source document each sequence was cut
// from, and n_attrs more string attributes (name, value pairs in attrs[2 * n_attrs]).
typedef struct {
    const int64_t *document;  // (n), or NULL
    int n_attrs;
    const char *const *attrs;
} CorpusProvenance;
int corpus_write_provenance(const Corpus *corpus, const Config *cfg, const char *path, const CorpusProvenance *p);
// Opens corpus.h5 for reads on demand (corpus->file) after checking what start-up can check
// without reading the tokens: its format, shapes against the config and the file size,
// its chunk checksums against its content digest, and its data lock against this config's;
// a mismatch is an error that says to run prepare (import, for data.source: imported).
// 0 or -1 (error printed).
int corpus_read(Corpus *corpus, const Config *cfg, const char *path);

// Shared by corpus.c (memory) and corpus_file.c (disk):
static inline int64_t corpus_chunks(int64_t count, int64_t chunk) { return (count + chunk - 1) / chunk; }
// The SHA-256 of each chunk of `chunk` elements of `elem` bytes (little-endian, as stored).
void corpus_sums(const void *data, size_t elem, int64_t count, int64_t chunk, uint8_t *out);
// The content digest's first line; the caller adds the tables and the split bytes.
void corpus_digest_begin(Sha256 **h, int64_t n, int64_t n_tokens);
// The format-2 lock of a content digest (hex) under `cfg`.
void corpus_lock_of(const Config *cfg, const char *content, char out[65]);
// The format-1 lock's key lines, hashed; the caller adds tokens, offsets and split bytes.
void corpus_lock_v1(const Config *cfg, Sha256 **h);
int corpus_file_lock_v1_matches(CorpusFile *f, const Config *cfg, const char *stored);
void corpus_file_close(CorpusFile *f);

#ifdef __cplusplus
}
#endif
#endif
