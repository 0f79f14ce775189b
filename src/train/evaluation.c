// evaluation.c — a model's exact loss over a whole split on any number of ranks (see
// evaluation.h).
#include "train/evaluation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/budget.h"
#include "io/h5io.h"

int corpus_file_byte_level(const char *path) {
    if (!path) return 0;
    error_capture(1);  // a corpus without provenance (prepare's) is simply not byte-level
    int fd = -1;
    int64_t size;
    hid_t f = h5_open_file(path, NULL, &fd, &size);  // its metadata: the corpus itself stays on disk
    char *format = f < 0 ? NULL : h5_attr_read_str(f, NULL, "import_format");
    error_capture(0);
    int byte_level = format && (!strcmp(format, "bytes") || !strcmp(format, "jsonl-text"));
    free(format);
    if (f >= 0) h5_close(f);
    if (fd >= 0) close(fd);
    return byte_level;
}

void evaluator_init(Evaluator *e, const Config *cfg, const Corpus *corpus, const char *corpus_path, const ComputeOps *ops,
                    Comm *comm, const ModelShape *m, Trainer *share) {
    memset(e, 0, sizeof *e);
    e->cfg = cfg, e->corpus = corpus, e->ops = ops, e->comm = comm;
    BatchSpec spec = model_batch_spec(m);
    // train.eval_batch sequences per pass (a chunk's EVALUATE_BATCH in one pass by default): its
    // buffers are in the budget's activations term, (B+E)*Lmax rows.
    e->per_pass = cfg->train.eval_batch >= 1 && cfg->train.eval_batch < EVALUATE_BATCH ? cfg->train.eval_batch : EVALUATE_BATCH;
    batch_init(&e->b, &spec, e->per_pass);
    // A pass that fits the trainer's host instance runs on it (the trainer's activations are
    // dead between updates; θ is already there; evaluate reads no gradient and no dropout
    // stream): no second instance, no staged θ (the memory of GPT-2 small, evaluation.h).
    if (share && !ops->on_device && share->ops == ops && e->b.cap <= share->micro[0].cap) e->cc = share->cc, e->borrowed = 1;
    else e->cc = ops->create(m, e->b.cap, cfg->train.first_layer);
    e->P = m->total;
    // Rank 0 reads the attribute; every rank learns it (the same metrics on every rank).
    e->byte_level = comm_agree(comm, comm->rank == 0 && cfg->data.source == DATA_SOURCE_IMPORTED &&
                                         corpus_file_byte_level(corpus_path)) != 0;
    e->test.drop_tail = getenv("DDPTOK_TEST_EVAL_DROP_TAIL") != NULL;
    e->test.padded = getenv("DDPTOK_TEST_EVAL_PADDED") != NULL;
    e->test.rank_sums = getenv("DDPTOK_TEST_EVAL_RANK_SUMS") != NULL;
    e->test.disturb = getenv("DDPTOK_TEST_EVAL_DISTURB") != NULL;
    e->test.skip_pass = getenv("DDPTOK_TEST_EVAL_SKIP_PASS") != NULL;
}

void evaluator_free(Evaluator *e) {
    if (e->cc && !e->borrowed) e->ops->destroy(e->cc);
    batch_free(&e->b);
    free(e->theta);
    free(e->row_loss), free(e->row_hit);
    memset(e, 0, sizeof *e);
}

void evaluator_set_params(Evaluator *e, const float *theta) {
    ASSERT(!e->borrowed);  // a borrowed instance holds the trainer's θ
    e->ops->set_params(e->cc, theta);
}

void evaluator_set_trainer(Evaluator *e, Trainer *t) {
    if (e->borrowed) {  // the trainer's own instance: its θ is the one to evaluate
        if (e->test.disturb) t->dropout.counter++;
        return;
    }
    if (e->test.disturb) t->dropout.counter++;  // DDPTOK_TEST_EVAL_DISTURB: as an evaluation drawing dropout from the trainer's stream
    if (!t->ops->on_device) {  // a host trainer's θ is host memory: copied straight in, no staged copy (P floats less)
        e->ops->set_params(e->cc, t->ops->param_buffer(t->cc));
        return;
    }
    if (!e->theta) e->theta = xmalloc(e->P * sizeof *e->theta);
    t->ops->get_params(t->cc, e->theta);  // reads θ only: the trainer's buffers and streams are left as they were
    e->ops->set_params(e->cc, e->theta);
}

// A double through the int64 sum exactly: its bits, on the one rank that has it (0 elsewhere).
static int64_t bits_of(double x) {
    int64_t v;
    memcpy(&v, &x, sizeof v);
    return v;
}
static double double_of(int64_t v) {
    double x;
    memcpy(&x, &v, sizeof x);
    return x;
}

// The sequences' records to every rank: each is non-zero on the one rank that evaluated it, so
// an int64 sum of [loss bits, tokens, correct] carries it exactly; in blocks of SEQ_BLOCK.
#define SEQ_BLOCK 65536
static void sequences_exchange(Comm *comm, SequenceEval *seq, int n) {
    if (comm->world == 1) return;
    int64_t *x = xmalloc((size_t)3 * SEQ_BLOCK * sizeof *x);
    comm_label(comm, "the evaluation's all-reduce (per-sequence losses, tokens)");
    for (int at = 0; at < n; at += SEQ_BLOCK) {
        int m = n - at < SEQ_BLOCK ? n - at : SEQ_BLOCK;
        for (int i = 0; i < m; i++)
            x[3 * i] = bits_of(seq[at + i].loss_sum), x[3 * i + 1] = seq[at + i].tokens, x[3 * i + 2] = seq[at + i].correct;
        comm->ops->allreduce_sum_i64(comm, x, 3 * m);
        for (int i = 0; i < m; i++)
            seq[at + i].loss_sum = double_of(x[3 * i]), seq[at + i].tokens = x[3 * i + 1], seq[at + i].correct = x[3 * i + 2];
    }
    free(x);
}

// A pass's positions into its sequences' records: position t is slot pos[t] / L's (batch.h),
// the split's sequence ids[slot] - first; its losses added in position order.
static void pass_sequences(const Batch *b, const int32_t *ids, int first, const double *row_loss, const int32_t *row_hit,
                           SequenceEval *seq) {
    for (int t = 0; t < b->T; t++) {
        SequenceEval *r = &seq[ids[b->pos[t] / b->L] - first];
        r->loss_sum += row_loss[t], r->tokens++, r->correct += row_hit[t];
    }
}

// Whether the pass of ids[0..k) holds a wanted sequence (want NULL: every pass is computed).
static int pass_wanted(const uint8_t *want, const int32_t *ids, int k, int first) {
    if (!want) return 1;
    for (int i = 0; i < k; i++)
        if (want[ids[i] - first]) return 1;
    return 0;
}

static void run_split(Evaluator *e, int split, const uint8_t *want, SequenceEval *seq, SplitEval *out);

void evaluator_run(Evaluator *e, int split, SplitEval *out) { run_split(e, split, NULL, NULL, out); }

void evaluator_run_sequences(Evaluator *e, int split, const uint8_t *want, SequenceEval *seq, SplitEval *out) {
    int n = corpus_split_count(e->corpus, split);
    memset(seq, 0, (size_t)n * sizeof *seq);
    if (!e->row_loss) {  // (cap) a pass's rows
        e->row_loss = xmalloc((size_t)e->b.cap * sizeof *e->row_loss);
        e->row_hit = xmalloc((size_t)e->b.cap * sizeof *e->row_hit);
    }
    run_split(e, split, want, seq, out);
    sequences_exchange(e->comm, seq, n);
}

static void run_split(Evaluator *e, int split, const uint8_t *want, SequenceEval *seq, SplitEval *out) {
    double t0 = now_seconds();
    const Corpus *corpus = e->corpus;
    int W = e->comm->world, rank = e->comm->rank;
    int first = corpus_split_begin(corpus, split), n = corpus_split_count(corpus, split);
    int64_t C = (n + EVALUATE_BATCH - 1) / EVALUATE_BATCH;
    memset(out, 0, sizeof *out);
    out->split = split, out->sequences = n, out->chunks = C;
    // The exchange: [the C chunks' loss sums as bits | tokens, correct]; with the rank-sums
    // control the W ranks' sums instead of the chunks'.
    int64_t slots = e->test.rank_sums ? W : C;
    int64_t *x = xcalloc((size_t)slots + 2, sizeof *x);
    LabelRule rule = label_rule(e->cfg);
    int32_t ids[EVALUATE_BATCH];
    double mine = 0;
    WorkProgress progress;
    work_progress_init(&progress, "evaluate: sequences");
    // DDPTOK_TEST_EVAL_DROP_TAIL, the negative control of "no dropped tail": only the first
    // W·floor(n/W) sequences, as a sampler that drops the last uneven share would.
    int keep = e->test.drop_tail ? n - n % W : n;
    for (int64_t c = rank; c < C; c += W) {
        int from = first + (int)(c * EVALUATE_BATCH), m = keep - (int)(c * EVALUATE_BATCH);
        if (m > EVALUATE_BATCH) m = EVALUATE_BATCH;
        if (m <= 0) continue;
        // The chunk in passes of per_pass sequences (train.eval_batch): each sequence's losses are
        // the same floats whatever else shares its pass (a row's arithmetic reads only its own
        // sequence); the chunk's sum adds the passes' sums, in order.
        double s = 0;
        for (int q = 0; q < m; q += e->per_pass) {
            int k = m - q < e->per_pass ? m - q : e->per_pass;
            if (e->test.skip_pass && q) continue;  // DDPTOK_TEST_EVAL_SKIP_PASS: a chunk's first pass only
            for (int i = 0; i < k; i++) ids[i] = from + q + i;
            if (!pass_wanted(want, ids, k, first)) continue;
            batch_build(&e->b, corpus, ids, k, &rule, UNIT_TOKEN);
            s += e->ops->evaluate(e->cc, &e->b, &x[slots + 1], seq ? e->row_loss : NULL, seq ? e->row_hit : NULL);
            if (seq) pass_sequences(&e->b, ids, first, e->row_loss, e->row_hit, seq);
            x[slots] += e->test.padded ? e->b.padded : e->b.T;  // DDPTOK_TEST_EVAL_PADDED: padding in the denominator
        }
        if (e->test.rank_sums) mine += s;
        else x[c] = bits_of(s);
        if (e->progress && rank == 0) work_progress(&progress, (c + 1) * EVALUATE_BATCH, n);
    }
    if (e->test.rank_sums) x[rank] = bits_of((double)(float)mine);  // as the float gradient all-reduce would carry it
    // One int64 sum: each loss slot is non-zero on one rank only, so its bits arrive exact.
    static const char *const sums_of[] = {"the evaluation's all-reduce (train split: loss sums, tokens)",
                                          "the evaluation's all-reduce (validation split: loss sums, tokens)",
                                          "the evaluation's all-reduce (test split: loss sums, tokens)"};
    comm_label(e->comm, sums_of[split]);  // what a timeout here names: not the trainer's count all-reduce
    if (W > 1 && slots + 2 > 0) e->comm->ops->allreduce_sum_i64(e->comm, x, (int)(slots + 2));
    for (int64_t c = 0; c < slots; c++) out->loss_sum += double_of(x[c]);  // in chunk order, on every rank
    out->tokens = x[slots], out->correct = x[slots + 1];
    free(x);
    // No supervised token: no loss at all (NaN), never 0/0 written as a loss of 0.
    out->loss = out->tokens ? out->loss_sum / (double)out->tokens : NAN;
    out->accuracy = out->tokens ? (double)out->correct / (double)out->tokens : NAN;
    out->bits_per_token = out->loss / log(2.0);
    out->bits_per_byte = e->byte_level ? out->bits_per_token : NAN;
    out->seconds = now_seconds() - t0;
}
