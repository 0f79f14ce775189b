// evaluate.c — `evaluate`: a model's test metrics and baselines (the newest checkpoint, or
// --checkpoint DIR) -> outputs/evaluate.json, with --per-sequence FILE each sequence's too
// (--ids: some of them only); with --protocol, the protocol's verdict on the resumed step-U
// model (resume check, parity, empty windows, matrix) -> report.json.
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "base/clock.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/budget.h"
#include "data/corpus.h"
#include "data/synthetic.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "store/checkpoint.h"
#include "train/evaluation.h"
#include "train/per_sequence.h"
#include "train/progress.h"
#include "train/trainer.h"

typedef struct {
    const char *checkpoint;  // --checkpoint DIR
    int protocol;            // --protocol: the protocol's verdict (report.json)
    const char *split;       // --split validation|test (NULL: test)
    const char *per_sequence;  // --per-sequence FILE: each sequence's numbers (per_sequence.h)
    const char *ids;         // --ids A,B,C|FILE: only these sequences' (with --per-sequence)
} EvaluateOptions;

static int evaluate_split_of(const App *app) {
    const char *split = ((const EvaluateOptions *)app->opts)->split;
    return split && !strcmp(split, "validation") ? SPLIT_VALIDATION : SPLIT_TEST;
}
static const char *split_name(int split) { return split == SPLIT_VALIDATION ? "validation" : "test"; }

// The generating process's own loss and argmax accuracy, and a unigram baseline fitted on
// the train split (add-one smoothing), over the supervised positions of `split`. An imported
// corpus has no known process: its best loss and accuracy are NaN (null in JSON).
static void baselines(const Config *cfg, const Corpus *corpus, int split, double *best_loss, double *best_acc, double *unigram) {
    int known = cfg->data.source == DATA_SOURCE_SYNTHETIC;
    Chain ch = {0};
    if (known) chain_build(&ch, cfg);
    int V = cfg->data.vocab_size;
    LabelRule rule = label_rule(cfg);
    double *freq = xcalloc((size_t)V, sizeof *freq), total = 0;
    Batch b;
    const BatchSpec spec = {BATCH_CONTEXTS, 1, cfg->data.max_length};  // the previous token is all a baseline reads
    batch_init(&b, &spec, EVALUATE_BATCH);
    // Every token of the train split, read through batch_build (the corpus's one reader)
    // under a rule that labels every position: its targets are the sequence's tokens.
    const LabelRule every = {0, -1, 0};
    int32_t ids[EVALUATE_BATCH];
    for (int i = corpus_split_begin(corpus, SPLIT_TRAIN), end = corpus_split_end(corpus, SPLIT_TRAIN); i < end;) {
        int m = 0;
        while (m < EVALUATE_BATCH && i < end) ids[m++] = i++;
        batch_build(&b, corpus, ids, m, &every, UNIT_TOKEN);
        for (int p = 0; p < b.T; p++) freq[b.target[p]] += 1, total += 1;
    }
    for (int v = 1; v < V; v++) freq[v] = (freq[v] + 1) / (total + V - 1);
    double ll = 0, lu = 0;
    int64_t hits = 0, n = 0;
    // The supervised positions are the ones batch_build labels (the model is scored on the
    // same); the last context token is the previous one (0 at the start).
    for (int32_t i = corpus_split_begin(corpus, split); i < corpus_split_end(corpus, split); i++) {
        batch_build(&b, corpus, &i, 1, &rule, UNIT_TOKEN);
        for (int p = 0; p < b.T; p++) {
            int prev = batch_prev(&b, p), next = b.target[p];
            lu -= log(freq[next]);
            n++;
            if (!known) continue;
            ll -= log(chain_prob(&ch, prev, next));
            int arg = 0;
            for (int j = 1; j < ch.S; j++)
                if (ch.prob[(size_t)prev * ch.S + j] > ch.prob[(size_t)prev * ch.S + arg]) arg = j;
            hits += ch.succ[(size_t)prev * ch.S + arg] == next;
        }
    }
    batch_free(&b);
    *best_loss = !known ? NAN : n ? ll / n : 0;
    *best_acc = !known ? NAN : n ? (double)hits / n : 0;
    *unigram = n ? lu / n : 0;
    free(freq);
    if (known) chain_free(&ch);
}

// Max |Δ| between the model and optimizer state of two checkpoints' rank-0 files; -1 if missing.
static double resume_diff(const char *a, const char *b) {
    char pa[1200], pb[1200];
    checkpoint_rank_path(pa, sizeof pa, a, 0);
    checkpoint_rank_path(pb, sizeof pb, b, 0);
    CheckpointState sa, sb;
    if (checkpoint_load(pa, &sa)) return -1;
    if (checkpoint_load(pb, &sb)) {
        checkpoint_state_free(&sa);
        return -1;
    }
    double d = -1;
    if (sa.m.total == sb.m.total && sa.step == sb.step && sa.opt.kind == sb.opt.kind) {
        d = sa.opt.steps == sb.opt.steps ? 0 : INFINITY;
        for (size_t i = 0; i < sa.m.total; i++) {
            d = fmax(d, fabs((double)sa.theta[i] - sb.theta[i]));
            for (int k = 0; k < optimizers[sa.opt.kind].n_states; k++)
                d = fmax(d, fabs((double)sa.opt.state[k][i] - sb.opt.state[k][i]));
        }
    } else error("%s and %s are not comparable (step %d vs %d)", pa, pb, sa.step, sb.step);
    checkpoint_state_free(&sa);
    checkpoint_state_free(&sb);
    return d;
}

// The test metrics of one checkpoint's model (rank 0's replica), the baselines printed
// beside them; dies (exit 2) when the checkpoint is unreadable or of other data. Every rank
// loads the model and evaluates its share of the test split (evaluation.h): the numbers are
// the same for any number of ranks.
typedef struct {
    SplitEval t;
    int step;
    double best_loss, best_acc, unigram;
    int subset;  // --ids: only some sequences were evaluated (no split metrics, no evaluate.json)
} TestReport;

// --- evaluate --per-sequence FILE [--ids A,B,C|FILE] -----------------------------------------
// Checked before anything is evaluated: the ids within the split, the file writable (rank 0
// looks, every rank learns what it saw); a refusal is one line, exit 2 on every rank, nothing
// written. Then each sequence's numbers (evaluator_run_sequences) -> FILE, by rank 0.
typedef struct {
    uint8_t *want;  // (n) the split's sequences asked for; NULL: every one
    int count;      // how many records the file holds
} SequenceChoice;

static SequenceChoice per_sequence_prepare(App *app, const Corpus *corpus, int split) {
    const EvaluateOptions *o = app->opts;
    SequenceChoice c = {NULL, corpus_split_count(corpus, split)};
    char why[1600] = "";
    if (o->ids) {
        int64_t *ids;
        int k, n = c.count;
        if (per_sequence_ids_parse(o->ids, &ids, &k, why, sizeof why)) die(EXIT_BAD_INPUT, "evaluate --ids %s", why);
        c.want = xcalloc(n ? (size_t)n : 1, 1), c.count = 0;
        for (int i = 0; i < k; i++) {
            if (ids[i] >= n) {
                if (n) die(EXIT_BAD_INPUT, "evaluate --ids %s: no sequence %lld in the %s split (its ids are 0..%d)", o->ids,
                           (long long)ids[i], split_name(split), n - 1);
                die(EXIT_BAD_INPUT, "evaluate --ids %s: no sequence %lld: the %s split has no sequence", o->ids, (long long)ids[i],
                    split_name(split));
            }
            c.count += !c.want[ids[i]], c.want[ids[i]] = 1;
        }
        free(ids);
    }
    if (app->comm.rank == 0 && per_sequence_target_check(o->per_sequence, why, sizeof why) == 0) why[0] = 0;
    comm_bcast(&app->comm, why, sizeof why, 0);
    if (why[0]) die(EXIT_BAD_INPUT, "evaluate --per-sequence %s", why);
    return c;
}

// The SHA-256 of the model's θ (P float32, as they lie in memory: little-endian) in hex.
static void params_digest(const float *theta, size_t P, char hex[65]) {
    Sha256 *h = sha256_begin();
    sha256_add(h, theta, P * sizeof *theta);
    sha256_hex(h, hex);
}

// A split with no supervised token has no loss: 0/0 is an error (exit 2, every rank), never a
// loss of 0 with exit 0. Says why — no sequence, or sequences the label rule leaves without a
// label — and what gives the split tokens.
static void __attribute__((noreturn)) no_tokens(App *app, const Corpus *corpus, int split, const char *corpus_path,
                                                const SplitEval *t) {
    const Config *cfg = &app->cfg;
    const char *name = split_name(split), *other = split_name(split == SPLIT_TEST ? SPLIT_VALIDATION : SPLIT_TEST);
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    char fix[HINT_MAX + 400], hint[HINT_MAX], lead[HINT_MAX + 200] = "";
    if (t->sequences == 0 && imported)
        snprintf(fix, sizeof fix, "import again with data.import.%s_fraction above 0 (%g now) and more than one document", name,
                 split == SPLIT_TEST ? cfg->data.import.test_fraction : cfg->data.import.validation_fraction);
    else if (t->sequences == 0) snprintf(fix, sizeof fix, "set data.splits.%s above 0 and prepare again", name);
    else snprintf(fix, sizeof fix, "the label rule leaves none of them a label (data.unsupervised_prefix %d, data.ignore_token %d, "
                  "data.max_labels %d)", cfg->data.unsupervised_prefix, cfg->data.ignore_token, cfg->data.max_labels);
    if (t->sequences == 0 && imported) {  // the fraction does nothing where the split came from the inputs' names
        size_t n = strlen(fix);
        snprintf(fix + n, sizeof fix - n, " (imported with --split-from-names: an input named %s)", split == SPLIT_TEST ? "test" : "val");
    }
    int other_split = split == SPLIT_TEST ? SPLIT_VALIDATION : SPLIT_TEST;
    if (corpus_split_count(corpus, other_split) > 0 && t->sequences == 0 && !((const EvaluateOptions *)app->opts)->protocol) {
        // What works now comes first: the split the data has.
        char extra[1400] = "";
        const char *named = ((const EvaluateOptions *)app->opts)->checkpoint;
        if (named) hint_word(extra, sizeof extra, "--checkpoint"), hint_word(extra, sizeof extra, named);
        if (split == SPLIT_TEST) hint_word(extra, sizeof extra, "--split"), hint_word(extra, sizeof extra, "validation");
        snprintf(lead, sizeof lead, "score the %s split: run `%s`; or ", other, hint_command(hint, sizeof hint, "evaluate", 0, extra));
    }
    die(EXIT_BAD_INPUT, "evaluate: the %s split of %s has no supervised token (%lld sequences): there is no %s loss to report; %s%s",
        name, corpus_path, (long long)t->sequences, name, lead, fix);
}

// The records -> --per-sequence FILE (rank 0; a failure stops every rank, exit 2), and what
// they add up to printed. With --ids, the only numbers of this run (no split metrics).
static void per_sequence_publish(App *app, const Corpus *corpus, const char *dir, int step, int split, const char *digest,
                                 const SequenceEval *seq, const SequenceChoice *choice) {
    const EvaluateOptions *o = app->opts;
    int n = corpus_split_count(corpus, split);
    int64_t tokens = 0, correct = 0;
    double loss_sum = 0;
    for (int i = 0; i < n; i++)
        if (!choice->want || choice->want[i]) tokens += seq[i].tokens, correct += seq[i].correct, loss_sum += seq[i].loss_sum;
    int rc = 0;
    if (app->comm.rank == 0) {
        json_t *header = json_pack("{s:s, s:i, s:s, s:o, s:i, s:s, s:s, s:s, s:i, s:i, s:I, s:I}", "format", PER_SEQUENCE_FORMAT,
                                   "version", PER_SEQUENCE_VERSION, "split", split_name(split), "checkpoint", json_text(dir, NULL),
                                   "step", step, "model", model_kind_names[app->cfg.model.kind], "params_sha256", digest,
                                   "corpus_lock", corpus->corpus_lock, "split_sequences", n, "count", choice->count, "tokens",
                                   (json_int_t)tokens, "correct", (json_int_t)correct);
        rc = per_sequence_write(o->per_sequence, header, seq, choice->want, n);
    }
    if (comm_agree(&app->comm, rc ? EXIT_BAD_INPUT : 0)) stop(EXIT_BAD_INPUT);  // rank 0 said why
    if (choice->want)
        say("evaluate: step-%d model of %s on %d of the %d %s sequences (--ids): %lld supervised tokens, loss %.5f per token, "
            "token accuracy %.2f %%\n", step, text_safe(dir), choice->count, n, split_name(split), (long long)tokens,
            tokens ? loss_sum / (double)tokens : NAN, tokens ? 100.0 * (double)correct / (double)tokens : NAN);
    say("evaluate: %d per-sequence record%s (id, tokens, loss_sum, loss, correct) -> %s\n", choice->count,
        choice->count == 1 ? "" : "s", text_safe(o->per_sequence));
}

static TestReport test_report(App *app, const Corpus *corpus, const char *dir, const char *missing_hint,
                              const SequenceChoice *choice) {
    char path[1200], corpus_path[1024];
    checkpoint_rank_path(path, sizeof path, dir, 0);
    CheckpointState s;
    int rc = access(path, F_OK) != 0 ? 1 : checkpoint_load(path, &s) ? 2 : !corpus_lock_accepts(corpus, &app->cfg, s.lock) ? 3 : 0;
    // Every rank reads the same file: each says nothing more than rank 0 would, and all stop together.
    if (!comm_agree(&app->comm, rc == 0)) {
        if (rc == 1) die(EXIT_BAD_INPUT, "%s", missing_hint);
        if (rc == 3) {
            char train[HINT_MAX];
            die(EXIT_BAD_INPUT, "%s: trained on other data (its data lock is not this corpus's: the corpus was prepared or imported "
                "again since, or with other data keys): evaluate a model of this corpus: train one: run `%s`", path,
                hint_command(train, sizeof train, "train", app->cfg.train.world_size, " --fresh"));
        }
        stop(EXIT_BAD_INPUT);  // it said why
    }
    TestReport r = {0};
    r.step = s.step;
    out_path(app, corpus_path, sizeof corpus_path, "data/corpus.h5");
    Evaluator e;
    evaluator_init(&e, &app->cfg, corpus, corpus_path, app->compute, &app->comm, &s.m, NULL);
    e.progress = 1;
    evaluator_set_params(&e, s.theta);
    int split = evaluate_split_of(app);
    const char *name = split_name(split);
    const EvaluateOptions *o = app->opts;
    SequenceEval *seq = NULL;
    char digest[65] = "";
    if (o->per_sequence) {
        seq = xmalloc(((size_t)corpus_split_count(corpus, split) + 1) * sizeof *seq);  // (n): 24 bytes a sequence
        evaluator_run_sequences(&e, split, choice->want, seq, &r.t);
        params_digest(s.theta, s.m.total, digest);
        r.subset = choice->want != NULL;
    } else evaluator_run(&e, split, &r.t);
    evaluator_free(&e);
    checkpoint_state_free(&s);
    if (r.subset) {
        per_sequence_publish(app, corpus, dir, r.step, split, digest, seq, choice);
        free(seq);
        return r;
    }
    if (!r.t.tokens) no_tokens(app, corpus, split, corpus_path, &r.t);
    baselines(&app->cfg, corpus, split, &r.best_loss, &r.best_acc, &r.unigram);
    say("evaluate: step-%d model of %s on %lld %s sequences (%lld supervised tokens)\n", r.step, text_safe(dir),
        (long long)r.t.sequences, name, (long long)r.t.tokens);
    say("  %s loss %.5f per token, token accuracy %.2f %%\n", name, r.t.loss, 100 * r.t.accuracy);
    if (isnan(r.t.bits_per_byte)) say("  %.5f bits/token\n", r.t.bits_per_token);
    else say("  %.5f bits/token, %.5f bits/byte (byte-level data)\n", r.t.bits_per_token, r.t.bits_per_byte);
    if (isnan(r.best_loss)) say("  unigram baseline %.5f; best achievable unknown (imported data)\n", r.unigram);
    else say("  unigram baseline %.5f; best achievable (the generating chain) %.5f, %.2f %%\n", r.unigram, r.best_loss,
             100 * r.best_acc);
    if (seq) per_sequence_publish(app, corpus, dir, r.step, split, digest, seq, choice);
    free(seq);
    return r;
}

static json_t *test_json(const TestReport *r) {
    return json_pack("{s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "loss", json_num(r->t.loss), "token_accuracy",
                     json_num(r->t.accuracy), "sequences", (json_int_t)r->t.sequences, "tokens", (json_int_t)r->t.tokens,
                     "unigram_loss", json_num(r->unigram), "best_loss", json_num(r->best_loss), "best_accuracy",
                     json_num(r->best_acc), "bits_per_token", json_num(r->t.bits_per_token), "bits_per_byte",
                     json_num(r->t.bits_per_byte));
}

// A model's test metrics -> outputs/evaluate.json (report.json is left alone): the
// checkpoint --checkpoint names (a continuous run's, an intermediate one), or without it the
// newest intact checkpoint of the training lineage (artifacts/checkpoints). Exit 0: the
// protocol's verdict is --protocol's.
static int evaluate_checkpoint(App *app, const Corpus *corpus) {
    char dir[1100], hint[HINT_MAX + 1300];
    const char *named = ((const EvaluateOptions *)app->opts)->checkpoint;
    if (named) {
        snprintf(dir, sizeof dir, "%s", named);
        for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/';) dir[--n] = 0;
        snprintf(hint, sizeof hint, "evaluate --checkpoint %s: no checkpoint there (expected a step-NNNN directory with "
                 "rank-0000.h5)", dir);
    } else {
        char root[1024], train[HINT_MAX];
        art_path(app, root, sizeof root, "checkpoints");
        int step = checkpoint_latest(&app->comm, root, 0, dir, sizeof dir);
        hint_command(train, sizeof train, "train", app->cfg.train.world_size, NULL);
        if (step == -1)
            die(EXIT_BAD_INPUT, "evaluate: no checkpoint under %s to evaluate: train a model first: run `%s` (or name one: "
                "evaluate --checkpoint DIR)", root, train);
        if (step == -2) die(EXIT_BAD_INPUT, "evaluate: no intact checkpoint under %s (each one is damaged, see above)", root);
        snprintf(hint, sizeof hint, "%s: no checkpoint there", dir);
    }
    SequenceChoice choice = {NULL, 0};
    if (((const EvaluateOptions *)app->opts)->per_sequence) choice = per_sequence_prepare(app, corpus, evaluate_split_of(app));
    TestReport r = test_report(app, corpus, dir, hint, &choice);
    free(choice.want);
    if (r.subset) return 0;  // --ids: the records are this run's result (evaluate.json is the whole split's)
    if (app->comm.rank == 0)
        write_json(app, "evaluate.json",
                   json_pack("{s:o, s:i, s:o}", "checkpoint", json_text(dir, NULL), "step", r.step,
                             split_name(evaluate_split_of(app)), test_json(&r)));
    if (!named)
        say("evaluate: the protocol's verdict (resume vs continuous, parity, empty windows): run `%s`\n",
            hint_command(hint, sizeof hint, "evaluate", 0, " --protocol"));
    say("evaluate: its training and validation loss curves: run `%s`\n", hint_command(hint, sizeof hint, "plot", 0, NULL));
    return 0;
}

// ddptok's reports nest 3 levels. report.json carries them and indents every level on its
// own lines, so a deeper one grew quadratically (a 4 MiB parity.json of nested arrays made
// a 6.3 GB report.json and a 15 GB process): one nested deeper is refused, in one line.
#define REPORT_MAX_DEPTH 8

static json_t *read_report(const char *path, int quiet) {
    json_t *j = json_read_file(path, quiet);
    int depth = json_depth(j);
    if (depth <= REPORT_MAX_DEPTH) return j;
    error("%s: nested %d levels deep, at most %d expected (ddptok's reports nest 3): not read", path, depth,
          REPORT_MAX_DEPTH);
    json_decref(j);
    return NULL;
}

// The reports that report.json gathers (app.h).
void protocol_reports_read(const App *app, ProtocolReports *r) {
    char ppath[1024], epath[1024];
    out_path(app, ppath, sizeof ppath, "parity.json");
    out_path(app, epath, sizeof epath, "empty.json");
    // A missing report is quietly NULL ("missing" in evaluate's summary); one that is there
    // but cannot be read or parsed is said once and not ok.
    r->parity = read_report(ppath, access(ppath, F_OK) != 0), r->empty = read_report(epath, access(epath, F_OK) != 0);
    r->parity_ok = json_ok(r->parity), r->empty_ok = json_ok(r->empty);
    // The negative-control matrix of run/protocol.sh: outputs/matrix/<cell>/parity.json.
    r->matrix = json_object();
    r->cells = 0, r->cells_ok = 0;
    char mdir[1024];
    out_path(app, mdir, sizeof mdir, "matrix");
    DIR *d = opendir(mdir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[1400];
        snprintf(p, sizeof p, "%s/%s/parity.json", mdir, e->d_name);
        if (e->d_name[0] == '.' || access(p, F_OK) != 0) continue;
        json_t *cell = read_report(p, 0);
        int ok = json_ok(cell);
        r->cells++;
        // report.json names a cell by its directory: a name that is not UTF-8 is no JSON key
        // (made valid, two names could meet in one key).
        int exact;
        json_t *name = json_text(e->d_name, &exact);
        if (!exact) {
            error("%s/%s: a cell name that is not UTF-8 cannot be a key of report.json: not ok", mdir, e->d_name);
            json_decref(cell);
        } else {
            int set = json_object_set_new(r->matrix, json_string_value(name), cell ? cell : json_null());
            ASSERT(set == 0);  // a valid key: fails only without memory
            r->cells_ok += ok;
        }
        json_decref(name);
    }
    if (d) closedir(d);
}

// One part of the protocol's verdict (evaluate --protocol).
typedef struct {
    int missing, failed;
} Verdict;

// "  NAME: ok" / "NOT ok", or "missing (PATH): run `COMMAND`" naming what produces it, or
// "not counted: PATH is WHY: run `COMMAND`" for a report of another config (`other`).
static void verdict_report(Verdict *v, const char *name, const json_t *report, int ok, const char *path, const char *other,
                           const char *command, int ranks) {
    char hint[HINT_MAX];
    if (other[0]) {
        v->missing++;
        say("  %s: not counted: %s is %s: run `%s`\n", name, text_safe(path), text_safe(other),
            hint_command(hint, sizeof hint, command, ranks, NULL));
    } else if (!report) {
        v->missing++;
        say("  %s: missing (%s): run `%s`\n", name, text_safe(path), hint_command(hint, sizeof hint, command, ranks, NULL));
    } else {
        v->failed += !ok;
        say("  %s: %s\n", name, ok ? "ok" : "NOT ok");
    }
}

// A report of another config or other data (report_identity_check) is dropped: *report NULL,
// the reason in `other` and in `not_counted` (report.json) under its path.
static void keep_own(const App *app, const Corpus *corpus, json_t **report, int *ok, const char *path, char *other, size_t len,
                     json_t *not_counted) {
    if (!*report || report_identity_check(app, corpus, *report, 0, other, len) == 0) return;
    json_object_set_new(not_counted, path, json_text(other, NULL));
    json_decref(*report);
    *report = NULL, *ok = 0;
}

// The matrix cells of this config (each: this config with the cell's own --set) stay; the
// others are named in `other` and counted out.
static void keep_own_cells(const App *app, const Corpus *corpus, ProtocolReports *rep, Buf *other, json_t *not_counted) {
    const char *name;
    json_t *cell, *tmp;
    int dropped = 0;
    json_object_foreach_safe(rep->matrix, tmp, name, cell) {
        char why[900];
        if (json_is_null(cell) || report_identity_check(app, corpus, cell, 1, why, sizeof why) == 0) continue;
        if (!dropped++) buf_printf(other, "%s: %s", name, why);
        char key[1200];
        snprintf(key, sizeof key, "matrix/%s", name);
        json_object_set_new(not_counted, key, json_text(why, NULL));
        rep->cells--, rep->cells_ok -= json_ok(cell);
        json_object_del(rep->matrix, name);
    }
    if (dropped > 1) buf_printf(other, " (and %d more cell%s)", dropped - 1, dropped == 2 ? "" : "s");
}

// The checkpoint at `path` (rank 0's file) is this config's and of this data: 1; else 0 with
// "WHAT run's step-U model (PATH) is WHY" in `other`.
static int own_checkpoint(const App *app, const Corpus *corpus, const char *path, const char *what, char *other, size_t len) {
    CheckpointState s;
    if (checkpoint_load(path, &s)) return 1;  // unreadable: resume_diff says so
    char why[800];
    int own = config_identity_check(app, corpus, &s.cfg, s.lock, why, sizeof why) == 0;
    if (!own) snprintf(other, len, "%s run's step-%d model (%s) is %s", what, s.step, path, why);
    checkpoint_state_free(&s);
    return own;
}

// evaluate --protocol: the protocol's verdict on the resumed step-U model (what run/protocol.sh
// ends with) -> outputs/report.json: its test metrics, then each part — the resume check
// against the continuous run, the parity and empty-window reports, the matrix, the model
// beating the unigram baseline — with, for each part that is missing, the command that
// makes it. Exit 0 only when every part is there and holds.
static int evaluate_protocol(App *app, const Corpus *corpus) {
    const Config *cfg = &app->cfg;
    int U = cfg->train.updates, W = cfg->train.world_size;
    char resumed[1100], continuous[1100], path[1200], root[1024], cpath[1200];
    art_path(app, root, sizeof root, "checkpoints");
    snprintf(resumed, sizeof resumed, "%s/step-%04d", root, U);
    int *steps, n = checkpoint_list(&app->comm, root, &steps), newest = n ? steps[0] : 0;
    free(steps);
    art_path(app, root, sizeof root, "continuous");
    snprintf(continuous, sizeof continuous, "%s/step-%04d", root, U);
    checkpoint_rank_path(path, sizeof path, resumed, 0);
    checkpoint_rank_path(cpath, sizeof cpath, continuous, 0);
    char train[HINT_MAX], resume[HINT_MAX], hint[2 * HINT_MAX + 1600];
    hint_command(train, sizeof train, "train", W, NULL);
    hint_command(resume, sizeof resume, "train", W, " --resume latest");
    if (n && newest < U) snprintf(hint, sizeof hint, "evaluate --protocol judges the resumed step-%d model (%s), not there yet: run `%s`", U, path, resume);
    else snprintf(hint, sizeof hint, "evaluate --protocol judges the resumed step-%d model (%s), not there: run `%s`, then `%s`", U, path, train, resume);

    // Everything is read before anything is printed: a report that cannot be read says so
    // (stderr) before the metrics, not between them.
    // Under N ranks the reports are read and judged once, by rank 0; every rank evaluates its
    // share of the test split.
    int lead = app->comm.rank == 0;
    double diff = -1;
    char why[1024] = "";
    int have_continuous = access(cpath, F_OK) == 0;
    // Only this config's runs and reports count (each records its config and data lock): one
    // of another config or of other data is named, with why, and not counted.
    char other_run[1400] = "";
    if (have_continuous && lead) {
        error_capture(1);
        if (own_checkpoint(app, corpus, path, "the resumed", other_run, sizeof other_run))
            own_checkpoint(app, corpus, cpath, "the continuous", other_run, sizeof other_run);
        if (!other_run[0]) diff = resume_diff(resumed, continuous);
        snprintf(why, sizeof why, "%s", error_capture(0));
    }
    ProtocolReports rep = {0};
    char ppath[1024], epath[1024], parity_other[900] = "", empty_other[900] = "";
    out_path(app, ppath, sizeof ppath, "parity.json");
    out_path(app, epath, sizeof epath, "empty.json");
    Buf cells_other = {0};
    json_t *not_counted = json_object();
    if (lead) {
        protocol_reports_read(app, &rep);
        keep_own(app, corpus, &rep.parity, &rep.parity_ok, ppath, parity_other, sizeof parity_other, not_counted);
        keep_own(app, corpus, &rep.empty, &rep.empty_ok, epath, empty_other, sizeof empty_other, not_counted);
        keep_own_cells(app, corpus, &rep, &cells_other, not_counted);
    }
    const SequenceChoice none = {NULL, 0};
    TestReport r = test_report(app, corpus, resumed, hint, &none);

    Verdict v = {0, 0};
    if (other_run[0]) {
        char fresh[HINT_MAX];
        v.missing++;
        say("  resume: not counted: %s: run `%s`\n", text_safe(other_run),
            hint_command(fresh, sizeof fresh, "train", W, strstr(other_run, "the continuous") ? " --continuous --fresh" : " --fresh"));
    } else if (!have_continuous) {
        char cont[HINT_MAX];
        v.missing++;
        say("  resume: the continuous run's step-%d model is missing (%s): run `%s`\n", U, text_safe(continuous),
            hint_command(cont, sizeof cont, "train", W, " --continuous"));
    } else if (diff < 0) {
        v.failed++;
        say("  resume: NOT ok: the continuous run's step-%d model is not comparable: %s\n", U, text_safe(why[0] ? why : continuous));
    } else {
        v.failed += diff != 0;
        say("  resume: max |dtheta| between resumed and continuous step-%d models = %g: %s\n", U, diff, diff == 0 ? "ok" : "NOT ok");
    }
    verdict_report(&v, "parity report", rep.parity, rep.parity_ok, ppath, parity_other, "parity", W);
    verdict_report(&v, "empty-window report", rep.empty, rep.empty_ok, epath, empty_other, "check-empty", W);
    if (rep.cells) say("  negative-control matrix: %d/%d cells ok\n", rep.cells_ok, rep.cells);
    else say("  negative-control matrix: none (run/protocol.sh makes its cells; not required)\n");
    if (cells_other.n) say("  negative-control matrix: not counted: %s\n", text_safe(cells_other.s));
    buf_free(&cells_other);
    v.failed += rep.cells_ok != rep.cells;
    int beats = r.t.loss < r.unigram;
    v.failed += !beats;
    say("  test loss below the unigram baseline: %s\n", beats ? "yes" : "NO");
    int ok = !v.missing && !v.failed;
    if (lead)
        write_json(app, "report.json",
                   json_pack("{s:o, s:o, s:{s:o, s:i}, s:o, s:o, s:o, s:b}", "parity", rep.parity ? rep.parity : json_null(),
                             "matrix", rep.matrix, "resume", "max_abs_diff", diff < 0 ? json_null() : json_num(diff), "step",
                             U, "empty", rep.empty ? rep.empty : json_null(), "test", test_json(&r), "not_counted",
                             not_counted, "ok", ok));
    else json_decref(not_counted);
    if (ok) say("evaluate --protocol: OK\n");
    else if (!v.failed) say("evaluate --protocol: INCOMPLETE (%d part%s missing: run the command%s above)\n", v.missing, v.missing == 1 ? "" : "s", v.missing == 1 ? "" : "s");
    else say("evaluate --protocol: FAILED (%d part%s not ok%s)\n", v.failed, v.failed == 1 ? "" : "s", v.missing ? ", some missing" : "");
    return comm_agree(&app->comm, lead && !ok ? EXIT_CHECK_FAILED : 0);  // rank 0's verdict, on every rank
}

// --split with --protocol: refused (also under --check); the protocol judges the test split.
static void evaluate_check(const App *app) {
    const EvaluateOptions *o = app->opts;
    if (o && o->protocol && o->split)
        die(EXIT_BAD_INPUT, "evaluate --split %s: not with --protocol (the protocol's verdict is on the test split)", o->split);
    if (o && o->protocol && o->per_sequence)
        die(EXIT_BAD_INPUT, "evaluate --per-sequence %s: not with --protocol (it scores a model: --checkpoint DIR, or the newest)",
            o->per_sequence);
    if (o && o->ids && !o->per_sequence)
        die(EXIT_BAD_INPUT, "evaluate --ids %s: only with --per-sequence FILE (the ids say which sequences' records it holds)", o->ids);
    if (o && o->ids) {  // the list or the file read now, for --check too; the range once the corpus is read
        int64_t *ids;
        int k;
        char why[1600];
        if (per_sequence_ids_parse(o->ids, &ids, &k, why, sizeof why)) die(EXIT_BAD_INPUT, "evaluate --ids %s", why);
        free(ids);
    }
}

static int evaluate_run(App *app) {
    const EvaluateOptions *o = app->opts;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    int rc = o->protocol ? evaluate_protocol(app, &corpus) : evaluate_checkpoint(app, &corpus);
    corpus_free(&corpus);
    return rc;
}

const Command cmd_evaluate = {
    .name = "evaluate",
    .run = evaluate_run,
    .check_options = evaluate_check,
    .distributed = DISTRIBUTED_ANY,
    .summary = "a model's test metrics and baselines (the newest checkpoint, or --checkpoint DIR) -> outputs/evaluate.json; "
               "--per-sequence FILE: each sequence's loss too; --protocol: the protocol's verdict (resume vs continuous, parity, empty windows) -> outputs/report.json",
    .options = (const CommandOption[]){
        OPTION_STRING("--checkpoint", EvaluateOptions, checkpoint, "DIR",
                      "that checkpoint's model instead of the newest intact one"),
        OPTION_FLAG("--protocol", EvaluateOptions, protocol,
                    "the protocol's verdict on the resumed step-U model (resume vs continuous, parity, empty windows) -> "
                    "outputs/report.json", .excludes = "--checkpoint"),
        OPTION_CHOICE("--split", EvaluateOptions, split, "validation|test", ((const char *const[]){"validation", "test", NULL}),
                      "the split to score (default test); evaluate.json names it"),
        OPTION_STRING("--per-sequence", EvaluateOptions, per_sequence, "FILE",
                      "also each sequence's tokens, loss sum, mean loss and hits -> FILE (JSON Lines, by id: its index in the "
                      "split; a header line first; not with --protocol)"),
        OPTION_STRING("--ids", EvaluateOptions, ids, "A,B,C|FILE",
                      "with --per-sequence: only these sequences (ids, or a file of them); evaluate.json is then left alone"),
        OPTION_END,
    },
    .opts_size = sizeof(EvaluateOptions),
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "report.json", 0}, {UNDER_OUTPUTS, "evaluate.json", 0}, {0}},
};
