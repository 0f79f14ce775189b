// digest.h — how corpus.h5's contents are hashed (docs/file-formats.md, format 3).
//
// Level 0 is the chunk checksums: SHA-256 of each chunk of CORPUS_TOKEN_CHUNK tokens (or
// CORPUS_OFFSET_CHUNK offsets, config/budget.h) as stored, little-endian. Above them a tree of
// pages: level k + 1 row p is the SHA-256 of level k's rows [P·p, P·p + P) (P =
// CORPUS_TREE_PAGE rows of 32 bytes, 4 KiB; the last page of a level may be short), up to a
// level of one row, the root. The content digest hashes a line of the corpus's sizes, the
// sequences per split and the two roots: 32 bytes at start-up vouch for every token, and a
// reader checks each page it uses against the page above it, up to the root it holds, so a
// checksum used at read time is one verified against the digest (docs/data.md "On disk").
#ifndef DDPTOK_DIGEST_H
#define DDPTOK_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CORPUS_TREE_PAGE = 128, CORPUS_TREE_LEVELS_MAX = 16 };

// Bytes per stored token: uint16 when every id fits (data.vocab_size <= 65536), else int32.
static inline int corpus_token_bytes(int vocab_size) { return vocab_size <= 65536 ? 2 : 4; }
static inline int64_t corpus_chunks(int64_t count, int64_t chunk) { return (count + chunk - 1) / chunk; }

// The tree over `chunks` level-0 rows: levels 1..top (top holds the root alone; at least one
// level), each level's rows and its first row in the tree dataset (levels concatenated).
typedef struct {
    int levels;                                 // levels above level 0
    int64_t rows[CORPUS_TREE_LEVELS_MAX + 1];   // rows[0] = chunks, rows[k] = ceil(rows[k-1] / P)
    int64_t first[CORPUS_TREE_LEVELS_MAX + 1];  // level k >= 1: its first row in the tree dataset
    int64_t total;                              // rows of the tree dataset
} CorpusTree;
void corpus_tree_shape(CorpusTree *t, int64_t chunks);

// The SHA-256 of each chunk of `chunk` elements of `elem` bytes (as stored) into out.
void corpus_sums(const void *data, size_t elem, int64_t count, int64_t chunk, uint8_t *out);
// The SHA-256 of n rows (n <= CORPUS_TREE_PAGE) of 32 bytes: one page.
void corpus_page_sum(const uint8_t *rows, int64_t n, uint8_t out[32]);
// Levels 1..top over level-0 rows in memory: tree holds t->total rows.
void corpus_tree_build(const CorpusTree *t, const uint8_t *level0, uint8_t *tree);

// The content digest (hex): SHA-256 of "ddptok-corpus-v3 sequences=n tokens=T token_bytes=B
// chunks=1024,512 page=128 splits=a,b,c\n" and the token and offset roots.
void corpus_content_digest(int64_t n, int64_t n_tokens, int token_bytes, const int64_t split_counts[3],
                           const uint8_t token_root[32], const uint8_t offset_root[32], char out[65]);
// Format 2's content digest (what checkpoints written before format 3 bound): SHA-256 of its
// first line, the chunk checksums of the tokens as int32 and of the offsets, and the split
// bytes. The first line here; the caller adds the rest.
void corpus_digest_v2_begin(Sha256 **h, int64_t n, int64_t n_tokens);

#ifdef __cplusplus
}
#endif
#endif
