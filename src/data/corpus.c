// corpus.c — synthetic corpus, data lock and corpus.h5.
#include "data/corpus.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/philox.h"
#include "base/report.h"
#include "base/sha256.h"
#include "io/h5io.h"

// ---------------------------------------------------------------------------------------
// The generating chain

static RngStream corpus_stream(const Config *cfg) { return rng_stream(cfg->seed, RNG_CORPUS, 0); }

// Builds the chain from a given stream (the corpus continues with the same stream).
static void chain_draw(Chain *ch, const Config *cfg, RngStream *rng) {
    int V = cfg->data.vocab_size, S = cfg->data.markov_support;
    ch->V = V, ch->S = S;
    ch->succ = xmalloc((size_t)V * S * sizeof *ch->succ);
    ch->prob = xmalloc((size_t)V * S * sizeof *ch->prob);
    // Row a: the first S steps of a Fisher–Yates shuffle of 1..V-1 (S distinct successors).
    // perm is the identity before every row: the row's swaps are undone in reverse, O(S)
    // per row instead of O(V) (a vocabulary of 2^20 took minutes; the draws are the same).
    int32_t *perm = xmalloc((size_t)(V - 1) * sizeof *perm), *picks = xmalloc((size_t)S * sizeof *picks);
    for (int i = 0; i < V - 1; i++) perm[i] = i + 1;
    for (int a = 0; a < V; a++) {
        double total = 0;
        for (int j = 0; j < S; j++) {
            int pick = picks[j] = j + (int)rng_below(rng, (uint32_t)(V - 1 - j));
            int32_t t = perm[j];
            perm[j] = perm[pick], perm[pick] = t;
            ch->succ[(size_t)a * S + j] = perm[j];
            double w = -log(1.0 - rng_uniform(rng));  // Exp(1): normalised gives Dirichlet(1)
            ch->prob[(size_t)a * S + j] = w;
            total += w;
        }
        for (int j = 0; j < S; j++) ch->prob[(size_t)a * S + j] /= total;
        for (int j = S - 1; j >= 0; j--) {
            int32_t t = perm[j];
            perm[j] = perm[picks[j]], perm[picks[j]] = t;
        }
    }
    free(perm), free(picks);
}

void chain_build(Chain *ch, const Config *cfg) {
    RngStream rng = corpus_stream(cfg);
    chain_draw(ch, cfg, &rng);
}

void chain_free(Chain *ch) {
    free(ch->succ);
    free(ch->prob);
}

double chain_prob(const Chain *ch, int a, int b) {
    for (int j = 0; j < ch->S; j++)
        if (ch->succ[(size_t)a * ch->S + j] == b) return ch->prob[(size_t)a * ch->S + j];
    return 0;
}

void corpus_generate(Corpus *corpus, const Config *cfg) {
    memset(corpus, 0, sizeof *corpus);
    RngStream rng = corpus_stream(cfg);
    Chain ch;
    chain_draw(&ch, cfg, &rng);
    int n = cfg->data.n_train + cfg->data.n_validation + cfg->data.n_test;
    int lo = cfg->data.min_length, span = cfg->data.max_length - lo + 1;
    corpus->n = n;
    corpus->offsets = xmalloc((size_t)(n + 1) * sizeof *corpus->offsets);
    corpus->split = xmalloc((size_t)n);
    corpus->offsets[0] = 0;
    for (int i = 0; i < n; i++) {
        corpus->offsets[i + 1] = corpus->offsets[i] + lo + (int)rng_below(&rng, (uint32_t)span);
        corpus->split[i] = i < cfg->data.n_train ? SPLIT_TRAIN
                      : i < cfg->data.n_train + cfg->data.n_validation ? SPLIT_VALIDATION : SPLIT_TEST;
    }
    corpus->n_tokens = corpus->offsets[n];
    corpus->tokens = xmalloc((size_t)corpus->n_tokens * sizeof *corpus->tokens);
    WorkProgress progress;
    work_progress_init(&progress, "corpus: sequences");
    for (int i = 0; i < n; i++) {
        if (i % 4096 == 0) work_progress(&progress, i, n);
        int state = 0;
        for (int64_t p = corpus->offsets[i]; p < corpus->offsets[i + 1]; p++) {
            double u = rng_uniform(&rng), acc = 0;
            int j = 0;
            for (; j < ch.S - 1; j++) {
                acc += ch.prob[(size_t)state * ch.S + j];
                if (u < acc) break;
            }
            state = ch.succ[(size_t)state * ch.S + j];
            corpus->tokens[p] = state;
        }
    }
    chain_free(&ch);
    corpus_index_splits(corpus);
    corpus_lock(corpus, cfg, corpus->lock);
}

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

void corpus_free(Corpus *corpus) {
    if (corpus->file) corpus_file_close(corpus->file);
    free(corpus->tokens);
    free(corpus->offsets);
    free(corpus->split);
    memset(corpus, 0, sizeof *corpus);
}

// The key lines of the lock (config_lock_fields) after a format line.
static int lock_fields(const Config *cfg, const char *format, char *buf, size_t len) {
    int n = snprintf(buf, len, "%s\n", format);
    return n + config_lock_fields(cfg, buf + n, len - (size_t)n);
}
enum { LOCK_FIELDS_MAX = 64 + 16 * 48 + MAX_BANDS * 24 };  // the bands: a list, or `auto` (config_lock_fields)

void corpus_sums(const void *data, size_t elem, int64_t count, int64_t chunk, uint8_t *out) {
    const char *p = data;
    for (int64_t c = 0; c * chunk < count; c++) {
        int64_t k = count - c * chunk < chunk ? count - c * chunk : chunk;
        Sha256 *h = sha256_begin();
        sha256_add(h, p + (size_t)(c * chunk) * elem, (size_t)k * elem);
        sha256_digest(h, out + 32 * c);
    }
}

void corpus_digest_begin(Sha256 **h, int64_t n, int64_t n_tokens) {
    char line[160];
    int len = snprintf(line, sizeof line, "ddptok-corpus-v2 sequences=%lld tokens=%lld chunks=%d,%d\n", (long long)n,
                       (long long)n_tokens, CORPUS_TOKEN_CHUNK, CORPUS_OFFSET_CHUNK);
    *h = sha256_begin();
    sha256_add(*h, line, (size_t)len);
}

void corpus_content_digest(const Corpus *corpus, char out[65], uint8_t **token_sums, uint8_t **offset_sums) {
    ASSERT(!corpus->file);
    int64_t nt = corpus_chunks(corpus->n_tokens, CORPUS_TOKEN_CHUNK), no = corpus_chunks((int64_t)corpus->n + 1, CORPUS_OFFSET_CHUNK);
    uint8_t *ts = xmalloc((size_t)(nt ? nt : 1) * 32), *os = xmalloc((size_t)no * 32);
    corpus_sums(corpus->tokens, sizeof *corpus->tokens, corpus->n_tokens, CORPUS_TOKEN_CHUNK, ts);
    corpus_sums(corpus->offsets, sizeof *corpus->offsets, (int64_t)corpus->n + 1, CORPUS_OFFSET_CHUNK, os);
    Sha256 *h;
    corpus_digest_begin(&h, corpus->n, corpus->n_tokens);
    sha256_add(h, ts, (size_t)nt * 32);
    sha256_add(h, os, (size_t)no * 32);
    sha256_add(h, corpus->split, (size_t)corpus->n);
    sha256_hex(h, out);
    if (token_sums) *token_sums = ts;
    else free(ts);
    if (offset_sums) *offset_sums = os;
    else free(os);
}

void corpus_lock_of(const Config *cfg, const char *content, char out[65]) {
    char fields[LOCK_FIELDS_MAX];
    int n = lock_fields(cfg, "ddptok-data-lock-v2", fields, sizeof fields);
    Sha256 *h = sha256_begin();
    sha256_add(h, fields, (size_t)n);
    sha256_add(h, "content ", 8);
    sha256_add(h, content, 64);
    sha256_add(h, "\n", 1);
    sha256_hex(h, out);
}

void corpus_lock(const Corpus *corpus, const Config *cfg, char out[65]) {
    char content[65];
    corpus_content_digest(corpus, content, NULL, NULL);
    corpus_lock_of(cfg, content, out);
}

// Format 1: the key lines, then every token, offset and split byte (what checkpoints of
// ddptok 0.9 and older carry). `read` gives the bytes of the three arrays in order.
void corpus_lock_v1(const Config *cfg, Sha256 **h) {
    char fields[LOCK_FIELDS_MAX];
    int n = lock_fields(cfg, "ddptok-data-lock-v1", fields, sizeof fields);
    *h = sha256_begin();
    sha256_add(*h, fields, (size_t)n);
}

int corpus_lock_accepts(const Corpus *corpus, const Config *cfg, const char *stored) {
    if (strcmp(stored, corpus->lock) == 0) return 1;
    if (corpus->file) return corpus_file_lock_v1_matches(corpus->file, cfg, stored);
    Sha256 *h;
    corpus_lock_v1(cfg, &h);
    sha256_add(h, corpus->tokens, (size_t)corpus->n_tokens * sizeof *corpus->tokens);
    sha256_add(h, corpus->offsets, (size_t)(corpus->n + 1) * sizeof *corpus->offsets);
    sha256_add(h, corpus->split, (size_t)corpus->n);
    char v1[65];
    sha256_hex(h, v1);
    return strcmp(stored, v1) == 0;
}

// ---------------------------------------------------------------------------------------
// corpus.h5

int corpus_write_provenance(const Corpus *corpus, const Config *cfg, const char *path, const CorpusProvenance *p) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    char content[65];
    uint8_t *ts, *os;
    corpus_content_digest(corpus, content, &ts, &os);
    hsize_t nt = (hsize_t)corpus->n_tokens, no = (hsize_t)corpus->n + 1, ns = (hsize_t)corpus->n;
    hsize_t dt[2] = {(hsize_t)corpus_chunks(corpus->n_tokens, CORPUS_TOKEN_CHUNK), 32},
            dof[2] = {(hsize_t)corpus_chunks((int64_t)corpus->n + 1, CORPUS_OFFSET_CHUNK), 32};
    int rc = h5_write(o.file, "tokens", H5T_STD_I32LE, 1, &nt, corpus->tokens) ||
             h5_write(o.file, "offsets", H5T_STD_I64LE, 1, &no, corpus->offsets) ||
             h5_write(o.file, "split", H5T_NATIVE_UINT8, 1, &ns, corpus->split) ||
             h5_write(o.file, "token_sha256", H5T_NATIVE_UINT8, 2, dt, ts) ||
             h5_write(o.file, "offset_sha256", H5T_NATIVE_UINT8, 2, dof, os) || h5_attr_i64(o.file, "format", 2) ||
             h5_attr_i64(o.file, "token_chunk", CORPUS_TOKEN_CHUNK) || h5_attr_i64(o.file, "offset_chunk", CORPUS_OFFSET_CHUNK) ||
             h5_attr_str(o.file, "content_sha256", content) ||
             h5_attr_i64(o.file, "vocab_size", cfg->data.vocab_size) || h5_attr_i64(o.file, "seed", cfg->seed) ||
             h5_attr_str(o.file, "data_lock", corpus->lock);
    free(ts), free(os);
    if (!rc && p) {
        rc = h5_attr_str(o.file, "source", data_source_names[cfg->data.source]) ||
             (p->document && h5_write(o.file, "document", H5T_NATIVE_INT64, 1, &ns, p->document));
        for (int i = 0; !rc && i < p->n_attrs; i++) rc = h5_attr_str(o.file, p->attrs[2 * i], p->attrs[2 * i + 1]);
    }
    if (rc) return h5out_fail(&o, "the corpus");
    return h5out_commit(&o, NULL);
}

int corpus_write(const Corpus *corpus, const Config *cfg, const char *path) {
    return corpus_write_provenance(corpus, cfg, path, NULL);
}
