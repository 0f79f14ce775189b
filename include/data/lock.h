// lock.h — the two locks (docs/data.md "Two locks"; docs/file-formats.md).
//
//   corpus lock  what corpus.h5 carries: SHA-256 of "ddptok-corpus-lock-v1\n", the corpus
//                lock's key lines (config_corpus_lock_fields: the keys that decide the
//                content and how it was cut — V, the length rule, the split rule; for
//                prepare's corpus also the seed, the splits' sizes and the chain's support)
//                and "content <the content digest>\n" (data/digest.h). Never the world size,
//                bands, batch, accumulation, the sampler, or an imported corpus's seed: those
//                change without a re-import.
//   data lock    what plan.h5, reference.h5, grads.h5 and every checkpoint carry (format 3):
//                SHA-256 of "ddptok-data-lock-v3\n", every key line of the data lock
//                (config_lock_fields: the corpus's and the layout's) and
//                "corpus <the corpus lock>\n". A checkpoint trained on other data, or under
//                another layout, is refused by it.
// Checkpoints written before format 3 carry a format-2 lock (over format 2's content digest)
// or a format-1 lock (over every token, offset and split byte); corpus_lock_accepts
// (data/corpus.h) computes those once, by reading the corpus, only when a file carries one.
#ifndef DDPTOK_LOCK_H
#define DDPTOK_LOCK_H

#include "base/sha256.h"
#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

// The corpus lock (hex) of a content digest under cfg; split_by_hash = 0 for an import that
// kept its inputs' own split (import --split-from-names: then "split=names").
void corpus_lock_of(const Config *cfg, int split_by_hash, const char *content, char out[65]);
// The data lock (hex) of a corpus lock under cfg.
void data_lock_of(const Config *cfg, const char *corpus_lock, char out[65]);
// Format 2's data lock of a format-2 content digest (data/digest.h corpus_digest_v2_begin).
void data_lock_v2_of(const Config *cfg, const char *content_v2, char out[65]);
// Format 1's data lock: the key lines, hashed; the caller adds every token (int32), offset
// (int64) and split byte, in order, and finishes the hash.
void data_lock_v1_begin(const Config *cfg, Sha256 **h);

#ifdef __cplusplus
}
#endif
#endif
