// digest.c — corpus.h5's chunk checksums, their tree and the content digest (see digest.h).
#include "data/digest.h"

#include <stdio.h>
#include <string.h>

#include "base/report.h"
#include "config/budget.h"

void corpus_tree_shape(CorpusTree *t, int64_t chunks) {
    memset(t, 0, sizeof *t);
    ASSERT(chunks >= 1);
    t->rows[0] = chunks;
    do {
        ASSERT(t->levels < CORPUS_TREE_LEVELS_MAX);
        t->levels++;
        t->rows[t->levels] = corpus_chunks(t->rows[t->levels - 1], CORPUS_TREE_PAGE);
        t->first[t->levels] = t->total;
        t->total += t->rows[t->levels];
    } while (t->rows[t->levels] > 1);
}

void corpus_sums(const void *data, size_t elem, int64_t count, int64_t chunk, uint8_t *out) {
    const char *p = data;
    for (int64_t c = 0; c * chunk < count; c++) {
        int64_t k = count - c * chunk < chunk ? count - c * chunk : chunk;
        Sha256 *h = sha256_begin();
        sha256_add(h, p + (size_t)(c * chunk) * elem, (size_t)k * elem);
        sha256_digest(h, out + 32 * c);
    }
}

void corpus_page_sum(const uint8_t *rows, int64_t n, uint8_t out[32]) {
    ASSERT(n >= 1 && n <= CORPUS_TREE_PAGE);
    Sha256 *h = sha256_begin();
    sha256_add(h, rows, (size_t)n * 32);
    sha256_digest(h, out);
}

void corpus_tree_build(const CorpusTree *t, const uint8_t *level0, uint8_t *tree) {
    const uint8_t *below = level0;
    for (int k = 1; k <= t->levels; k++) {
        uint8_t *level = tree + 32 * t->first[k];
        for (int64_t p = 0; p < t->rows[k]; p++) {
            int64_t n = t->rows[k - 1] - p * CORPUS_TREE_PAGE;
            corpus_page_sum(below + 32 * p * CORPUS_TREE_PAGE, n < CORPUS_TREE_PAGE ? n : CORPUS_TREE_PAGE, level + 32 * p);
        }
        below = level;
    }
}

void corpus_content_digest(int64_t n, int64_t n_tokens, int token_bytes, const int64_t split_counts[3],
                           const uint8_t token_root[32], const uint8_t offset_root[32], char out[65]) {
    char line[256];
    int len = snprintf(line, sizeof line, "ddptok-corpus-v3 sequences=%lld tokens=%lld token_bytes=%d chunks=%d,%d page=%d "
                       "splits=%lld,%lld,%lld\n", (long long)n, (long long)n_tokens, token_bytes, CORPUS_TOKEN_CHUNK,
                       CORPUS_OFFSET_CHUNK, CORPUS_TREE_PAGE, (long long)split_counts[0], (long long)split_counts[1],
                       (long long)split_counts[2]);
    Sha256 *h = sha256_begin();
    sha256_add(h, line, (size_t)len);
    sha256_add(h, token_root, 32);
    sha256_add(h, offset_root, 32);
    sha256_hex(h, out);
}

void corpus_digest_v2_begin(Sha256 **h, int64_t n, int64_t n_tokens) {
    char line[160];
    int len = snprintf(line, sizeof line, "ddptok-corpus-v2 sequences=%lld tokens=%lld chunks=%d,%d\n", (long long)n,
                       (long long)n_tokens, CORPUS_TOKEN_CHUNK, CORPUS_OFFSET_CHUNK);
    *h = sha256_begin();
    sha256_add(*h, line, (size_t)len);
}
