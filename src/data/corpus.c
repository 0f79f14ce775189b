// corpus.c — synthetic corpus, data lock, corpus.h5 and the microbatch layout.
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
    free(corpus->tokens);
    free(corpus->offsets);
    free(corpus->split);
    memset(corpus, 0, sizeof *corpus);
}

void corpus_lock(const Corpus *corpus, const Config *cfg, char out[65]) {
    Sha256 *h = sha256_begin();
    char fieldsbuf[64 + 16 * 48 + MAX_WORLD * 24];  // the key lines the table puts in the lock (config_lock_fields)
    int n = snprintf(fieldsbuf, sizeof fieldsbuf, "ddptok-data-lock-v1\n");
    n += config_lock_fields(cfg, fieldsbuf + n, sizeof fieldsbuf - (size_t)n);
    sha256_add(h, fieldsbuf, (size_t)n);
    sha256_add(h, corpus->tokens, (size_t)corpus->n_tokens * sizeof *corpus->tokens);
    sha256_add(h, corpus->offsets, (size_t)(corpus->n + 1) * sizeof *corpus->offsets);
    sha256_add(h, corpus->split, (size_t)corpus->n);
    sha256_hex(h, out);
}

// ---------------------------------------------------------------------------------------
// corpus.h5

int corpus_write_provenance(const Corpus *corpus, const Config *cfg, const char *path, const CorpusProvenance *p) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    hsize_t nt = (hsize_t)corpus->n_tokens, no = (hsize_t)corpus->n + 1, ns = (hsize_t)corpus->n;
    int rc = h5_write(o.file, "tokens", H5T_NATIVE_INT32, 1, &nt, corpus->tokens) ||
             h5_write(o.file, "offsets", H5T_NATIVE_INT64, 1, &no, corpus->offsets) ||
             h5_write(o.file, "split", H5T_NATIVE_UINT8, 1, &ns, corpus->split) ||
             h5_attr_i64(o.file, "vocab_size", cfg->data.vocab_size) || h5_attr_i64(o.file, "seed", cfg->seed) ||
             h5_attr_str(o.file, "data_lock", corpus->lock);
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

// What a corpus.h5 holds must be what `cfg` generates before anything uses it: shapes
// from the config (checked before allocating), offsets from 0 to the token count with
// every length in [min_length, max_length], the splits in their order, token ids in
// 1..V-1. The data lock (a plain SHA-256 anyone can recompute) then says whether it is
// this config's corpus; these checks say whether it is safe to index with. An imported
// corpus (docs/data.md) has as many sequences as the import found, and its splits in
// document order (each 0, 1 or 2); everything else is checked alike.
static int corpus_validate(const Corpus *corpus, const Config *cfg, const char *path) {
    int V = cfg->data.vocab_size, lo = cfg->data.min_length, hi = cfg->data.max_length;
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    if (corpus->offsets[0] != 0 || corpus->offsets[corpus->n] != corpus->n_tokens)
        return error("%s: offsets run from %lld to %lld, expected 0 to the %lld tokens", path, (long long)corpus->offsets[0],
                     (long long)corpus->offsets[corpus->n], (long long)corpus->n_tokens);
    for (int i = 0; i < corpus->n; i++) {
        int64_t len = corpus->offsets[i + 1] - corpus->offsets[i];
        if (corpus->offsets[i + 1] < corpus->offsets[i] || len < lo || len > hi)
            return error("%s: sequence %d has offsets %lld..%lld (length %lld), expected a length in [%d, %d] "
                         "(data.min_length, data.max_length)", path, i, (long long)corpus->offsets[i], (long long)corpus->offsets[i + 1],
                         (long long)len, lo, hi);
        if (imported) {
            if (corpus->split[i] > SPLIT_TEST || (i > 0 && corpus->split[i] < corpus->split[i - 1]))
                return error("%s: sequence %d has split %d after %d, expected 0, 1 or 2 (train, validation, test), grouped in "
                             "that order", path, i, corpus->split[i], i > 0 ? corpus->split[i - 1] : 0);
            continue;
        }
        int want = i < cfg->data.n_train ? SPLIT_TRAIN : i < cfg->data.n_train + cfg->data.n_validation ? SPLIT_VALIDATION : SPLIT_TEST;
        if (corpus->split[i] != want) return error("%s: sequence %d has split %d, expected %d", path, i, corpus->split[i], want);
    }
    for (int64_t p = 0; p < corpus->n_tokens; p++)
        if (corpus->tokens[p] < 1 || corpus->tokens[p] >= V)
            return error("%s: token %lld is %d, expected an id in [1, %d] (data.vocab_size - 1)", path, (long long)p,
                         corpus->tokens[p], V - 1);
    return 0;
}

// What makes this config's corpus.h5: "prepare --config FILE" or "import --config FILE ...".
static const char *remedy(const Config *cfg, char *buf, size_t len) {
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    return hint_command(buf, len, imported ? "import" : "prepare", 0, imported ? " --format F --input PATH" : NULL);
}

int corpus_read(Corpus *corpus, const Config *cfg, const char *path) {
    memset(corpus, 0, sizeof *corpus);
    char make[HINT_MAX], hint[HINT_MAX + 16];
    remedy(cfg, make, sizeof make);
    snprintf(hint, sizeof hint, "run `%s` first", make);
    hid_t f = h5_open_read(path, hint);
    if (f < 0) return -1;
    int rc = -1;
    char *stored = NULL, *source = NULL;
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    int64_t n = (int64_t)cfg->data.n_train + cfg->data.n_validation + cfg->data.n_test;
    int64_t nt = h5_size(f, path, "tokens", NULL, NULL), ns = h5_size(f, path, "split", NULL, NULL),
            no = h5_size(f, path, "offsets", NULL, NULL);
    if (nt < 0 || ns < 0 || no < 0) goto out;
    // Which command made it: an imported corpus says so ("source"); prepare's has no such attribute.
    if (H5Aexists(f, "source") > 0 && !(source = h5_attr_read_str(f, path, "source"))) goto out;
    if (strcmp(source ? source : "synthetic", data_source_names[cfg->data.source]) != 0) {
        error("%s: a corpus of data.source %s, this config has data.source %s: run `%s`", path,
              source ? (strcmp(source, "imported") ? "(unknown)" : "imported") : "synthetic", data_source_names[cfg->data.source],
              make);
        goto out;
    }
    // Shapes from the config (an imported corpus: one offset more than sequences), before allocating.
    if (imported) n = ns;
    if (ns != n || no != n + 1 || n < 1 || n > INT32_MAX) {
        if (imported)
            error("%s: %lld sequences and %lld offsets, expected 1..2^31-1 sequences and one offset more: run `%s`", path,
                  (long long)ns, (long long)no, make);
        else
            error("%s: %lld sequences and %lld offsets, this config has %lld sequences (data.splits.*): run `%s`", path, (long long)ns, (long long)no, (long long)n, make);
        goto out;
    }
    if (nt < n * cfg->data.min_length || nt > n * cfg->data.max_length) {
        error("%s: %lld tokens, expected %lld..%lld for %lld sequences of lengths [%d, %d]", path, (long long)nt,
              (long long)(n * cfg->data.min_length), (long long)(n * cfg->data.max_length), (long long)n,
              cfg->data.min_length, cfg->data.max_length);
        goto out;
    }
    corpus->n = (int)ns;
    corpus->n_tokens = nt;
    corpus->tokens = xmalloc((size_t)nt * sizeof *corpus->tokens);
    corpus->offsets = xmalloc((size_t)(ns + 1) * sizeof *corpus->offsets);
    corpus->split = xmalloc((size_t)ns);
    if (h5_read(f, path, "tokens", H5T_NATIVE_INT32, nt, corpus->tokens) ||
        h5_read(f, path, "offsets", H5T_NATIVE_INT64, ns + 1, corpus->offsets) ||
        h5_read(f, path, "split", H5T_NATIVE_UINT8, ns, corpus->split) || corpus_validate(corpus, cfg, path))
        goto out;
    corpus_index_splits(corpus);
    if (!(stored = h5_attr_read_str(f, path, "data_lock"))) goto out;
    if (!is_sha256_hex(stored)) {
        error("%s: its data_lock is not a SHA-256 (damaged): %s", path, hint);
        goto out;
    }
    corpus_lock(corpus, cfg, corpus->lock);
    if (strcmp(stored, corpus->lock) != 0) {
        error("%s: data lock %.12s… does not match this config's %.12s… (%s with another config or modified): run `%s`", path,
              stored, corpus->lock, imported ? "imported" : "prepared", make);
        goto out;
    }
    rc = 0;
out:
    free(stored);
    free(source);
    h5_close(f);
    if (rc) corpus_free(corpus);
    return rc;
}

// ---------------------------------------------------------------------------------------
// Microbatch layout

void batch_init(Batch *b, int cap, int k) {
    memset(b, 0, sizeof *b);
    b->cap = cap;
    b->k = k;
    b->ctx = xmalloc((size_t)cap * k * sizeof *b->ctx);
    b->target = xmalloc((size_t)cap * sizeof *b->target);
    b->pos = xmalloc((size_t)cap * sizeof *b->pos);
    b->weight = xmalloc((size_t)cap * sizeof *b->weight);
}

void batch_free(Batch *b) {
    free(b->ctx);
    free(b->target);
    free(b->pos);
    free(b->weight);
    memset(b, 0, sizeof *b);
}

void batch_build(Batch *b, const Corpus *corpus, const int32_t *ids, int B, const LabelRule *rule, LossUnit unit) {
    int L = 0;
    for (int s = 0; s < B; s++)
        if (ids[s] >= 0 && corpus_len(corpus, ids[s]) > L) L = corpus_len(corpus, ids[s]);
    b->B = B, b->L = L, b->T = 0, b->sequences = 0, b->ns_min = 0, b->ns_max = 0;
    b->padded = (int64_t)B * L;
    int k = b->k;
    for (int s = 0; s < B; s++) {
        if (ids[s] < 0) continue;
        const int32_t *x = corpus->tokens + corpus->offsets[ids[s]];
        int len = corpus_len(corpus, ids[s]), first = b->T;
        for (int t = rule->prefix; t < len; t++) {
            if (x[t] == rule->ignore_token) continue;
            if (rule->max_labels && b->T - first == rule->max_labels) break;
            ASSERT(b->T < b->cap);
            int32_t *ctx = b->ctx + (size_t)b->T * k;
            for (int j = 0; j < k; j++) ctx[j] = t - k + j >= 0 ? x[t - k + j] : 0;
            b->target[b->T] = x[t];
            b->pos[b->T] = s * L + t;
            b->T++;
        }
        int n = b->T - first;
        if (n == 0) continue;
        b->ns_min = b->sequences ? (n < b->ns_min ? n : b->ns_min) : n;
        b->ns_max = n > b->ns_max ? n : b->ns_max;
        b->sequences++;
        float w = loss_units[unit].position_weight(n);
        for (int i = first; i < b->T; i++) b->weight[i] = w;
    }
}
