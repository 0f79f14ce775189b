// corpus_file.h — corpus.h5 read on demand (docs/data.md "On disk"): the on-disk source of
// data/corpus.h. corpus_read checks at start-up what needs no token — the format, every
// dataset's type, shape and place, the tree's root against the content digest, the corpus lock
// against this config's — in O(1) reads, and keeps a descriptor and the two roots. Every later
// read is a pread of whole chunks, each checked against its checksum, which is itself taken
// from a page checked against the page above it, up to the root held in memory: what start-up
// verified is what every read is checked against, whatever happens to the file meanwhile.
// Checked chunks and pages stay in direct-mapped caches whose sizes come from the config.
#ifndef DDPTOK_CORPUS_FILE_H
#define DDPTOK_CORPUS_FILE_H

#include <stdint.h>

#include "base/sha256.h"
#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

// Opens corpus.h5 for reads on demand (corpus->file); a mismatch is one line (error printed)
// ending with what makes this config's corpus: `prepare`, or the exact `import` command
// corpus.h5 records. 0 or -1.
int corpus_read(Corpus *corpus, const Config *cfg, const char *path);

// The file source behind data/corpus.h's accessors.
int corpus_file_len(CorpusFile *f, int i);
int corpus_file_tokens(CorpusFile *f, int i, int32_t *out);
void corpus_file_lengths(CorpusFile *f, int first, int n, int32_t *out);
void corpus_file_warm(CorpusFile *f, const int32_t *ids, int n);
CorpusReads corpus_file_reads(CorpusFile *f);
void corpus_file_close(CorpusFile *f);
// Whether `stored` is the format-2 / format-1 data lock of this file's data under cfg
// (computed once, reading the tokens: see corpus_lock_accepts).
int corpus_file_lock_v2_matches(CorpusFile *f, const Config *cfg, const char *stored);
int corpus_file_lock_v1_matches(CorpusFile *f, const Config *cfg, const char *stored);

#ifdef __cplusplus
}
#endif
#endif
