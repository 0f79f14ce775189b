// synthetic.c — prepare's Markov corpus (see synthetic.h).
#include "data/synthetic.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/philox.h"
#include "base/report.h"
#include "data/writer.h"

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

// ---------------------------------------------------------------------------------------
// The sequences: every length is drawn first (n of them), then every token, from one stream.

static int split_of(const Config *cfg, int64_t i) {
    return i < cfg->data.n_train ? SPLIT_TRAIN : i < (int64_t)cfg->data.n_train + cfg->data.n_validation ? SPLIT_VALIDATION : SPLIT_TEST;
}

static int64_t n_sequences(const Config *cfg) { return (int64_t)cfg->data.n_train + cfg->data.n_validation + cfg->data.n_test; }

// The stream after the chain (the lengths start there), and the chain itself when `ch`.
static RngStream after_chain(const Config *cfg, Chain *ch) {
    RngStream rng = corpus_stream(cfg);
    Chain tmp;
    chain_draw(ch ? ch : &tmp, cfg, &rng);
    if (!ch) chain_free(&tmp);
    return rng;
}

static int draw_length(const Config *cfg, RngStream *rng) {
    int lo = cfg->data.min_length, span = cfg->data.max_length - lo + 1;
    return lo + (int)rng_below(rng, (uint32_t)span);
}

void synthetic_tokens(const Config *cfg, int64_t tokens[3]) {
    RngStream rng = after_chain(cfg, NULL);
    tokens[0] = tokens[1] = tokens[2] = 0;
    for (int64_t i = 0, n = n_sequences(cfg); i < n; i++) tokens[split_of(cfg, i)] += draw_length(cfg, &rng);
}

int synthetic_emit(const Config *cfg, SequenceEmit emit, void *ctx) {
    Chain ch;
    RngStream lengths = after_chain(cfg, &ch), rng = lengths;
    int64_t n = n_sequences(cfg);
    for (int64_t i = 0; i < n; i++) (void)draw_length(cfg, &rng);  // the tokens' draws start after every length
    int32_t *seq = xmalloc((size_t)cfg->data.max_length * sizeof *seq);
    WorkProgress progress;
    work_progress_init(&progress, "corpus: sequences");
    int rc = 0;
    for (int64_t i = 0; i < n && !rc; i++) {
        if (i % 4096 == 0) work_progress(&progress, i, n);
        int len = draw_length(cfg, &lengths), state = 0;
        for (int p = 0; p < len; p++) {
            double u = rng_uniform(&rng), acc = 0;
            int j = 0;
            for (; j < ch.S - 1; j++) {
                acc += ch.prob[(size_t)state * ch.S + j];
                if (u < acc) break;
            }
            state = seq[p] = ch.succ[(size_t)state * ch.S + j];
        }
        rc = emit(ctx, split_of(cfg, i), seq, len);
    }
    free(seq);
    chain_free(&ch);
    return rc;
}

// In memory: the arrays grow to the sizes synthetic_tokens gives.
typedef struct {
    Corpus *c;
    int64_t at;
} MemoryFill;

static int fill_memory(void *ctx, int split, const int32_t *ids, int len) {
    MemoryFill *m = ctx;
    Corpus *c = m->c;
    memcpy(c->tokens + c->offsets[m->at], ids, (size_t)len * sizeof *ids);
    c->offsets[m->at + 1] = c->offsets[m->at] + len;
    c->split[m->at++] = (uint8_t)split;
    return 0;
}

void corpus_generate(Corpus *corpus, const Config *cfg) {
    memset(corpus, 0, sizeof *corpus);
    int64_t tokens[3], n = n_sequences(cfg);
    synthetic_tokens(cfg, tokens);
    corpus->n = (int)n;
    corpus->n_tokens = tokens[0] + tokens[1] + tokens[2];
    corpus->tokens = xmalloc((size_t)corpus->n_tokens * sizeof *corpus->tokens);
    corpus->offsets = xmalloc((size_t)(n + 1) * sizeof *corpus->offsets);
    corpus->split = xmalloc((size_t)n);
    corpus->offsets[0] = 0;
    MemoryFill m = {corpus, 0};
    synthetic_emit(cfg, fill_memory, &m);
    int rc = corpus_memory_seal(corpus, cfg, 1);
    ASSERT(rc == 0);
}

// On disk: each sequence appended to its split's region of corpus.h5 as it is drawn.
static int add_to_writer(void *ctx, int split, const int32_t *ids, int len) { return corpus_writer_add(ctx, split, ids, len, -1); }

int synthetic_write(const Config *cfg, const char *path) {
    CorpusShape shape;
    synthetic_tokens(cfg, shape.tokens);
    shape.sequences[0] = cfg->data.n_train, shape.sequences[1] = cfg->data.n_validation, shape.sequences[2] = cfg->data.n_test;
    CorpusWriter *w;
    if (corpus_writer_open(&w, path, &shape, cfg, NULL)) return -1;
    if (synthetic_emit(cfg, add_to_writer, w)) return corpus_writer_abort(w), -1;
    return corpus_writer_finish(w, NULL);
}
