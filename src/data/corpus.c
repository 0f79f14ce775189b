// corpus.c — the corpus container and its in-memory source (see corpus.h); the on-disk
// source is corpus_file.c.
#include "data/corpus.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/budget.h"
#include "data/corpus_file.h"
#include "data/lock.h"

int corpus_index_splits(Corpus *corpus) {
    int s = 0;
    corpus->split_first[0] = 0;
    for (int i = 0; i < corpus->n; i++) {
        if (corpus->split[i] < s || corpus->split[i] > SPLIT_TEST) return -1;
        while (s < corpus->split[i]) corpus->split_first[++s] = i;
    }
    while (s < SPLIT_TEST + 1) corpus->split_first[++s] = corpus->n;
    return 0;
}

int corpus_len(const Corpus *c, int i) {
    return c->file ? corpus_file_len(c->file, i) : (int)(c->offsets[i + 1] - c->offsets[i]);
}

int corpus_tokens(const Corpus *c, int i, int32_t *out) {
    if (c->file) return corpus_file_tokens(c->file, i, out);
    int len = corpus_len(c, i);
    memcpy(out, c->tokens + c->offsets[i], (size_t)len * sizeof *out);
    return len;
}

void corpus_lengths(const Corpus *c, int first, int n, int32_t *out) {
    if (c->file) {
        corpus_file_lengths(c->file, first, n, out);
        return;
    }
    for (int k = 0; k < n; k++) out[k] = (int32_t)(c->offsets[first + k + 1] - c->offsets[first + k]);
}

void corpus_warm(const Corpus *c, const int32_t *ids, int n) {
    if (c->file) corpus_file_warm(c->file, ids, n);
}

CorpusReads corpus_reads(const Corpus *c) {
    CorpusReads r = {0, 0, 0, 0};
    return c->file ? corpus_file_reads(c->file) : r;
}

void corpus_free(Corpus *corpus) {
    if (corpus->file) corpus_file_close(corpus->file);
    free(corpus->tokens);
    free(corpus->offsets);
    free(corpus->split);
    memset(corpus, 0, sizeof *corpus);
}

// ---------------------------------------------------------------------------------------
// In memory: the digests as corpus.h5 holds them (data/digest.h), computed over the arrays.

// The stored bytes of tokens [first, first + n): uint16 or int32 little-endian.
static void stored_tokens(const Corpus *c, int tb, int64_t first, int64_t n, uint8_t *out) {
    for (int64_t p = 0; p < n; p++) {
        uint32_t v = (uint32_t)c->tokens[first + p];
        for (int b = 0; b < tb; b++) out[p * tb + b] = (uint8_t)(v >> (8 * b));
    }
}

// The root of the tree over one array's chunk checksums (level 0 in sums, caller frees).
static void array_root(const void *data, size_t elem, int64_t count, int64_t chunk, uint8_t root[32], uint8_t **sums) {
    int64_t chunks = corpus_chunks(count, chunk);
    CorpusTree t;
    corpus_tree_shape(&t, chunks);
    uint8_t *level0 = xmalloc((size_t)chunks * 32), *tree = xmalloc((size_t)t.total * 32);
    corpus_sums(data, elem, count, chunk, level0);
    corpus_tree_build(&t, level0, tree);
    memcpy(root, tree + 32 * (t.total - 1), 32);
    free(tree);
    if (sums) *sums = level0;
    else free(level0);
}

void corpus_data_lock_under(const Corpus *corpus, const Config *cfg, char out[65]) {
    char corpus_lock[65];
    corpus_lock_of(cfg, corpus->split_by_hash, corpus->content, corpus_lock);
    data_lock_of(cfg, corpus_lock, out);
}

int corpus_memory_seal(Corpus *c, const Config *cfg, int split_by_hash) {
    ASSERT(!c->file && c->n >= 1);
    if (corpus_index_splits(c)) return -1;
    int tb = corpus_token_bytes(cfg->data.vocab_size);
    uint8_t *raw = xmalloc((size_t)(c->n_tokens ? c->n_tokens : 1) * (size_t)tb), troot[32], oroot[32];
    stored_tokens(c, tb, 0, c->n_tokens, raw);
    array_root(raw, (size_t)tb, c->n_tokens, CORPUS_TOKEN_CHUNK, troot, NULL);
    array_root(c->offsets, sizeof *c->offsets, (int64_t)c->n + 1, CORPUS_OFFSET_CHUNK, oroot, NULL);
    free(raw);
    int64_t counts[3];
    for (int s = 0; s < 3; s++) counts[s] = corpus_split_count(c, s);
    corpus_content_digest(c->n, c->n_tokens, tb, counts, troot, oroot, c->content);
    c->split_by_hash = split_by_hash;
    corpus_lock_of(cfg, split_by_hash, c->content, c->corpus_lock);
    data_lock_of(cfg, c->corpus_lock, c->lock);
    return 0;
}

// Format 2 (in memory): chunk checksums of the tokens as int32 and of the offsets, the split bytes.
static int memory_lock_v2_matches(const Corpus *c, const Config *cfg, const char *stored) {
    Sha256 *h;
    corpus_digest_v2_begin(&h, c->n, c->n_tokens);
    int64_t nt = corpus_chunks(c->n_tokens, CORPUS_TOKEN_CHUNK), no = corpus_chunks((int64_t)c->n + 1, CORPUS_OFFSET_CHUNK);
    uint8_t *ts = xmalloc((size_t)(nt ? nt : 1) * 32), *os = xmalloc((size_t)no * 32);
    corpus_sums(c->tokens, sizeof *c->tokens, c->n_tokens, CORPUS_TOKEN_CHUNK, ts);
    corpus_sums(c->offsets, sizeof *c->offsets, (int64_t)c->n + 1, CORPUS_OFFSET_CHUNK, os);
    sha256_add(h, ts, (size_t)nt * 32);
    sha256_add(h, os, (size_t)no * 32);
    sha256_add(h, c->split, (size_t)c->n);
    free(ts), free(os);
    char content[65], v2[65];
    sha256_hex(h, content);
    data_lock_v2_of(cfg, content, v2);
    return strcmp(stored, v2) == 0;
}

int corpus_lock_accepts(const Corpus *corpus, const Config *cfg, const char *stored) {
    if (strcmp(stored, corpus->lock) == 0) return 1;
    if (corpus->file) return corpus_file_lock_v2_matches(corpus->file, cfg, stored) || corpus_file_lock_v1_matches(corpus->file, cfg, stored);
    if (memory_lock_v2_matches(corpus, cfg, stored)) return 1;
    Sha256 *h;
    data_lock_v1_begin(cfg, &h);
    sha256_add(h, corpus->tokens, (size_t)corpus->n_tokens * sizeof *corpus->tokens);
    sha256_add(h, corpus->offsets, (size_t)(corpus->n + 1) * sizeof *corpus->offsets);
    sha256_add(h, corpus->split, (size_t)corpus->n);
    char v1[65];
    sha256_hex(h, v1);
    return strcmp(stored, v1) == 0;
}
