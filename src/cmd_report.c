// cmd_report.c — evaluate (test metrics + the report), exercise, plot, clean, check-env.

#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml.h>

#include "checkpoint.h"
#include "commands.h"
#include "common.h"
#include "corpus.h"
#include "cuda_api.h"
#include "h5io.h"
#include "jsonio.h"
#include "progress.h"
#include "trainer.h"
#include "version.h"  // build/version.h, written by the Makefile

// Reads a whole text file, a regular one of at most 16 MiB (NULL when absent or not
// one). Caller frees.
static char *slurp(const char *path) {
    size_t n;
    char why[256];
    char *text = file_read_regular(path, 16 << 20, &n, why, sizeof why);
    while (text && n && (text[n - 1] == '\n' || text[n - 1] == ' ')) text[--n] = 0;
    return text;
}

// ---------------------------------------------------------------------------------------
// evaluate

typedef struct {
    int64_t sequences, tokens, correct;
    double loss_sum;
} Metrics;

// Loss and accuracy of θ over one split, in microbatches of up to 16 sequences.
static Metrics evaluate_split(const App *app, const Corpus *c, const ModelShape *m, const float *theta, int split) {
    const Config *cfg = &app->cfg;
    enum { EB = 16 };
    Compute *cc = app->compute->create(m, EB * cfg->data.max_length);
    app->compute->set_params(cc, theta);
    Batch b;
    batch_init(&b, EB * cfg->data.max_length, m->k);
    int32_t ids[EB];
    int n = 0;
    LabelRule rule = label_rule(cfg);
    Metrics r = {0, 0, 0, 0};
    WorkProgress progress;
    work_progress_init(&progress, "evaluate: sequences");
    for (int i = 0; i <= c->n; i++) {
        if (i < c->n && c->split[i] == split) ids[n++] = i, r.sequences++;
        if (n == EB || (i == c->n && n > 0)) {
            work_progress(&progress, i, c->n);
            batch_build(&b, c, ids, n, &rule, UNIT_TOKEN);
            r.loss_sum += app->compute->evaluate(cc, &b, &r.correct);
            r.tokens += b.T;
            n = 0;
        }
    }
    batch_free(&b);
    app->compute->destroy(cc);
    return r;
}

// The generating process's own loss and argmax accuracy, and a unigram baseline fitted on
// the train split (add-one smoothing), over the supervised test positions.
static void baselines(const Config *cfg, const Corpus *c, double *best_loss, double *best_acc, double *unigram) {
    Chain ch;
    chain_build(&ch, cfg);
    int V = cfg->data.vocab_size;
    LabelRule rule = label_rule(cfg);
    double *freq = xcalloc((size_t)V, sizeof *freq), total = 0;
    for (int i = 0; i < c->n; i++)
        if (c->split[i] == SPLIT_TRAIN)
            for (int64_t p = c->offsets[i]; p < c->offsets[i + 1]; p++) freq[c->tokens[p]] += 1, total += 1;
    for (int v = 1; v < V; v++) freq[v] = (freq[v] + 1) / (total + V - 1);
    double ll = 0, lu = 0;
    int64_t hits = 0, n = 0;
    // The supervised positions are the ones batch_build labels (the model is scored on the
    // same); the last context token is the previous one (0 at the start).
    int k = cfg->model.context;
    Batch b;
    batch_init(&b, cfg->data.max_length, k);
    for (int32_t i = 0; i < c->n; i++) {
        if (c->split[i] != SPLIT_TEST) continue;
        batch_build(&b, c, &i, 1, &rule, UNIT_TOKEN);
        for (int p = 0; p < b.T; p++) {
            int prev = b.ctx[(size_t)p * k + k - 1], next = b.target[p];
            ll -= log(chain_prob(&ch, prev, next));
            lu -= log(freq[next]);
            int arg = 0;
            for (int j = 1; j < ch.S; j++)
                if (ch.prob[(size_t)prev * ch.S + j] > ch.prob[(size_t)prev * ch.S + arg]) arg = j;
            hits += ch.succ[(size_t)prev * ch.S + arg] == next;
            n++;
        }
    }
    batch_free(&b);
    *best_loss = n ? ll / n : 0;
    *best_acc = n ? (double)hits / n : 0;
    *unigram = n ? lu / n : 0;
    free(freq);
    chain_free(&ch);
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
// beside them; dies (exit 2) when the checkpoint is unreadable or of other data.
typedef struct {
    Metrics t;
    int step;
    double loss, acc, best_loss, best_acc, unigram;
} TestReport;

static TestReport test_report(App *app, const Corpus *c, const char *dir, const char *missing_hint) {
    char path[1200];
    checkpoint_rank_path(path, sizeof path, dir, 0);
    CheckpointState s;
    if (access(path, F_OK) != 0) die(EXIT_BAD_INPUT, "%s", missing_hint);
    if (checkpoint_load(path, &s)) stop(EXIT_BAD_INPUT);  // it said why
    if (strcmp(s.lock, c->lock) != 0) die(EXIT_BAD_INPUT, "%s: trained on other data (data lock differs)", path);
    TestReport r;
    r.step = s.step;
    r.t = evaluate_split(app, c, &s.m, s.theta, SPLIT_TEST);
    checkpoint_state_free(&s);
    baselines(&app->cfg, c, &r.best_loss, &r.best_acc, &r.unigram);
    r.loss = r.t.tokens ? r.t.loss_sum / r.t.tokens : 0, r.acc = r.t.tokens ? (double)r.t.correct / r.t.tokens : 0;
    say("evaluate: step-%d model of %s on %lld test sequences (%lld supervised tokens)\n", r.step, dir,
        (long long)r.t.sequences, (long long)r.t.tokens);
    say("  test loss %.5f per token, token accuracy %.2f %%\n", r.loss, 100 * r.acc);
    say("  unigram baseline %.5f; best achievable (the generating chain) %.5f, %.2f %%\n", r.unigram, r.best_loss,
        100 * r.best_acc);
    return r;
}

static json_t *test_json(const TestReport *r) {
    return json_pack("{s:o, s:o, s:I, s:I, s:o, s:o, s:o}", "loss", json_num(r->loss), "token_accuracy", json_num(r->acc),
                     "sequences", (json_int_t)r->t.sequences, "tokens", (json_int_t)r->t.tokens, "unigram_loss",
                     json_num(r->unigram), "best_loss", json_num(r->best_loss), "best_accuracy", json_num(r->best_acc));
}

// evaluate --checkpoint DIR: any checkpoint (a continuous run's, an intermediate one), its
// test metrics only -> outputs/evaluate.json; the protocol's report.json is left alone.
static int evaluate_checkpoint(App *app, const Corpus *c) {
    char dir[1100], hint[1300];
    snprintf(dir, sizeof dir, "%s", app->checkpoint);
    for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/';) dir[--n] = 0;
    snprintf(hint, sizeof hint, "evaluate --checkpoint %s: no checkpoint there (expected a step-NNNN directory with "
             "rank-0000.h5)", dir);
    TestReport r = test_report(app, c, dir, hint);
    write_json(app, "evaluate.json", json_pack("{s:s, s:i, s:o}", "checkpoint", dir, "step", r.step, "test", test_json(&r)));
    return 0;
}

int cmd_evaluate(App *app) {
    const Config *cfg = &app->cfg;
    int U = cfg->train.updates;
    Corpus c;
    load_corpus_or_die(app, &c);
    if (app->checkpoint) {
        int rc = evaluate_checkpoint(app, &c);
        corpus_free(&c);
        return rc;
    }
    char resumed[1100], continuous[1100], path[1200], root[1024];
    art_path(app, root, sizeof root, "checkpoints");
    snprintf(resumed, sizeof resumed, "%s/step-%04d", root, U);
    art_path(app, root, sizeof root, "continuous");
    snprintf(continuous, sizeof continuous, "%s/step-%04d", root, U);
    checkpoint_rank_path(path, sizeof path, resumed, 0);
    char hint[1500];
    snprintf(hint, sizeof hint, "evaluate needs the step-%d model of the resumed run (%s): run train, then train --resume "
             "(or name any checkpoint: evaluate --checkpoint DIR)", U, path);
    TestReport r = test_report(app, &c, resumed, hint);
    double diff = resume_diff(resumed, continuous);

    char ppath[1024], epath[1024];
    out_path(app, ppath, sizeof ppath, "parity.json");
    out_path(app, epath, sizeof epath, "empty.json");
    // A missing report is "missing" below; one that is there but not JSON is said once and not ok.
    json_t *parity = json_read_file(ppath, access(ppath, F_OK) != 0), *empty = json_read_file(epath, access(epath, F_OK) != 0);
    int parity_ok = json_ok(parity), empty_ok = json_ok(empty);
    // The negative-control matrix of run/protocol.sh: outputs/matrix/<cell>/parity.json.
    json_t *matrix = json_object();
    int cells = 0, cells_ok = 0;
    char mdir[1024];
    out_path(app, mdir, sizeof mdir, "matrix");
    DIR *d = opendir(mdir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char p[1400];
        snprintf(p, sizeof p, "%s/%s/parity.json", mdir, e->d_name);
        if (e->d_name[0] == '.' || access(p, F_OK) != 0) continue;
        json_t *cell = json_read_file(p, 0);
        cells++, cells_ok += json_ok(cell);
        json_object_set_new(matrix, e->d_name, cell ? cell : json_null());
    }
    if (d) closedir(d);
    int ok = diff == 0 && parity_ok && empty_ok && r.loss < r.unigram && cells_ok == cells;

    if (diff < 0) say("  resume: no comparable continuous run at %s\n", continuous);
    else say("  resume: max |dtheta| between resumed and continuous step-%d models = %g\n", U, diff);
    say("  parity report %s, empty-window report %s, negative-control matrix %d/%d cells ok\n",
        parity ? (parity_ok ? "ok" : "NOT ok") : "missing", empty ? (empty_ok ? "ok" : "NOT ok") : "missing", cells_ok, cells);
    write_json(app, "report.json",
               json_pack("{s:o, s:o, s:{s:o, s:i}, s:o, s:o, s:b}", "parity", parity ? parity : json_null(), "matrix", matrix,
                         "resume", "max_abs_diff", diff < 0 ? json_null() : json_num(diff), "step", U, "empty",
                         empty ? empty : json_null(), "test", test_json(&r), "ok", ok));
    corpus_free(&c);
    say("evaluate: %s\n", ok ? "OK" : "FAILED (see above)");
    return ok ? 0 : EXIT_CHECK_FAILED;
}

// ---------------------------------------------------------------------------------------
// exercise: rank 0 keeps `short` tokens, rank 1 goes from `short` to `long` tokens.

typedef struct {
    double S;      // loss sum
    int64_t N;     // tokens
    float *g;      // (P) ∇S
} RankGrad;

static void rank_grad(const App *app, const ModelShape *m, const float *theta, const Corpus *mini, int seq, RankGrad *out) {
    Compute *cc = app->compute->create(m, corpus_len(mini, seq));
    app->compute->set_params(cc, theta);
    app->compute->zero_grad(cc);
    Batch b;
    batch_init(&b, corpus_len(mini, seq), m->k);
    int32_t id = seq;
    LabelRule all = {0, -1, 0};
    batch_build(&b, mini, &id, 1, &all, UNIT_TOKEN);
    out->S = app->compute->forward_backward(cc, &b, 1.0f, NULL);
    out->N = b.T;
    float *g = xmalloc((m->total + 1) * sizeof *g);
    app->compute->get_grad(cc, g);
    out->g = g;
    batch_free(&b);
    app->compute->destroy(cc);
}

int cmd_exercise(App *app) {
    const Config *cfg = &app->cfg;
    int ns = cfg->exercise.short_tokens, nl = cfg->exercise.long_tokens;
    if (nl > cfg->data.max_length || ns > cfg->data.max_length)
        die(EXIT_BAD_INPUT, "%s: exercise token counts must not exceed data.max_length (%d)", cfg->source, cfg->data.max_length);
    Corpus full;
    corpus_generate(&full, cfg);
    int picks[2] = {-1, -1}, np = 0;
    for (int i = 0; i < full.n && np < 2; i++)
        if (full.split[i] == SPLIT_TEST && corpus_len(&full, i) >= (nl > ns ? nl : ns)) picks[np++] = i;
    if (np < 2) die(EXIT_BAD_INPUT, "%s: no two test sequences of %d tokens", cfg->source, nl);
    // Mini corpus: rank 0's sequence, rank 1's short and long versions of one sequence.
    int lens[3] = {ns, ns, nl}, src[3] = {picks[0], picks[1], picks[1]};
    Corpus mini = {0};
    mini.n = 3;
    mini.offsets = xmalloc(4 * sizeof *mini.offsets);
    mini.offsets[0] = 0;
    for (int i = 0; i < 3; i++) mini.offsets[i + 1] = mini.offsets[i] + lens[i];
    mini.n_tokens = mini.offsets[3];
    mini.tokens = xmalloc((size_t)mini.n_tokens * sizeof *mini.tokens);
    mini.split = xcalloc(3, 1);
    for (int i = 0; i < 3; i++)
        memcpy(mini.tokens + mini.offsets[i], full.tokens + full.offsets[src[i]], (size_t)lens[i] * sizeof(int32_t));

    ModelShape m;
    float *theta = model_initial(cfg, &m);
    RankGrad rg[3];
    for (int i = 0; i < 3; i++) rank_grad(app, &m, theta, &mini, i, &rg[i]);

    say("exercise: rank 0 keeps %d tokens; rank 1 goes from %d to %d tokens (W = 2, dropout off)\n", ns, ns, nl);
    say("  by hand, with loss 1 per token on rank 0 and 3 on rank 1:\n");
    json_t *cases = json_array();
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        const RankGrad *a = &rg[0], *b = &rg[1 + k];
        double hand_mom = (1.0 + 3.0) / 2, hand_glob = (1.0 * a->N + 3.0 * b->N) / (double)(a->N + b->N);
        int64_t N = a->N + b->N;
        double loss_glob = (a->S + b->S) / N, loss_mom = (a->S / a->N + b->S / b->N) / 2;
        double maxd = 0, num = 0, den = 0;
        for (size_t i = 0; i < m.total; i++) {
            double gg = ((double)a->g[i] + b->g[i]) / N;
            double gm = ((double)a->g[i] / a->N + (double)b->g[i] / b->N) / 2;
            maxd = fmax(maxd, fabs(gg - gm));
            num += (gg - gm) * (gg - gm), den += gg * gg;
        }
        double rel = den > 0 ? sqrt(num / den) : 0;
        int equal = a->N == b->N;
        int case_ok = equal ? maxd <= cfg->parity.atol : maxd > cfg->parity.atol;
        ok &= case_ok;
        say("  case %d: counts %lld and %lld: mean of means %.4g, global mean %.4g%s\n", k + 1, (long long)a->N,
            (long long)b->N, hand_mom, hand_glob, equal ? " (equal counts: the formulas agree)" : " (the short rank weighs too much)");
        say("          real model: loss mean of means %.6f, global %.6f; gradients differ by max %.3g (relative L2 %.3g) -> %s\n",
            loss_mom, loss_glob, maxd, rel, equal ? (case_ok ? "coincide" : "SHOULD COINCIDE") : (case_ok ? "differ" : "SHOULD DIFFER"));
        json_array_append_new(
            cases, json_pack("{s:[I,I], s:{s:o, s:o}, s:{s:o, s:o, s:o, s:o}}", "counts", (json_int_t)a->N, (json_int_t)b->N,
                             "hand", "mean_of_means", json_num(hand_mom), "global", json_num(hand_glob), "model",
                             "mean_of_means_loss", json_num(loss_mom), "global_loss", json_num(loss_glob),
                             "grad_max_abs_diff", json_num(maxd), "grad_relative_l2_diff", json_num(rel)));
    }
    write_json(app, "exercise.json", json_pack("{s:o, s:b}", "cases", cases, "ok", ok));
    say("  W stays 2 in both cases; only N changes (24 -> %d). No extra division by the number of microbatches.\n", ns + nl);
    for (int i = 0; i < 3; i++) free(rg[i].g);
    free(theta);
    corpus_free(&mini);
    corpus_free(&full);
    return ok ? 0 : EXIT_CHECK_FAILED;
}

// ---------------------------------------------------------------------------------------
// plot: gnuplot → outputs/figure.png

// Loss curve of one run from its JSONL into a two-column .dat; returns lines written.
static int jsonl_to_dat(const char *jsonl, const char *dat) {
    char *text = slurp(jsonl);
    if (!text) return 0;
    FILE *out = fopen_nofollow(dat, "w");
    if (!out) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, write_error(errno));
    int n = 0, step;
    double loss;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        // One JSON value per line (JSONL); a line that is not one (a run cut mid-write) is skipped.
        json_t *j = json_loads(line, 0, NULL);
        if (j && !json_unpack(j, "{s:i, s:F}", "step", &step, "loss", &loss)) fprintf(out, "%d %.9g\n", step, loss), n++;
        json_decref(j);
    }
    free(text);
    if (fclose(out) != 0) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, strerror(errno));
    return n;
}

// max_i |g_i - ref_i| / (atol + rtol |ref_i|): <= 1 exactly when every component passes
// (NaN counts as infinitely far).
static double tolerance_ratio(const float *g, const float *ref, size_t n, double atol, double rtol) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double bound = atol + rtol * fabs((double)ref[i]), err = fabs((double)g[i] - (double)ref[i]);
        double r = isnan(err) ? INFINITY : bound > 0 ? err / bound : err > 0 ? INFINITY : 0;
        if (r > worst) worst = r;
    }
    return worst;
}

// Runs gnuplot on `script` with `dir` as its working directory: no shell, an argv, so no
// path reaches a command line; 0 when it exited 0.
static int run_gnuplot(const char *dir, const char *script) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    char *argv[] = {"gnuplot", (char *)script, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ), status = 0;
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return error("cannot start gnuplot: %s", strerror(rc));
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return error("gnuplot: %s", strerror(errno));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int cmd_plot(App *app) {
    const Config *cfg = &app->cfg;
    char dir[1024], path[1200], dat[1200];
    out_path(app, dir, sizeof dir, "plot");
    if (mkdir_p(dir)) die(EXIT_BAD_INPUT, "cannot create %s", dir);
    const char *runs[3] = {"continuous", "interrupted", "resumed"};
    int have[3];
    for (int i = 0; i < 3; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "train/%s.jsonl", runs[i]);
        out_path(app, path, sizeof path, rel);
        snprintf(dat, sizeof dat, "%s/loss-%s.dat", dir, runs[i]);
        have[i] = jsonl_to_dat(path, dat);
    }
    // Per-mode, per-tensor worst ratio |g - g_ref| / (atol + rtol |g_ref|) of grads.h5
    // against reference.h5: the parity test passes a tensor exactly when it is <= 1.
    ModelShape m;
    model_shape(&m, cfg);
    char gpath[1024], rpath[1024];
    out_path(app, gpath, sizeof gpath, "grads.h5");
    out_path(app, rpath, sizeof rpath, "reference.h5");
    float *ref = xmalloc(m.total * sizeof *ref), *g = xmalloc(m.total * sizeof *g);
    char rhint[4200], ghint[4200];
    snprintf(rhint, sizeof rhint, "plot needs it: run `ddptok reference%s` first", hint_args());
    snprintf(ghint, sizeof ghint, "plot needs it: run `mpirun -np %d ddptok parity%s` first", app->cfg.train.world_size,
             hint_args());
    hid_t rf = h5_open_read(rpath, rhint);
    hid_t gf = rf < 0 ? -1 : h5_open_read(gpath, ghint);
    if (rf < 0 || gf < 0) stop(EXIT_BAD_INPUT);
    snprintf(dat, sizeof dat, "%s/parity.dat", dir);
    FILE *pd = fopen_nofollow(dat, "w");
    if (!pd) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, write_error(errno));
    fprintf(pd, "mode");
    for (int p = 0; p < N_PARAMS; p++) fprintf(pd, " %s", param_names[p]);
    fprintf(pd, "\n");
    if (h5_read_params(rf, rpath, "grad", &m, ref)) die(EXIT_BAD_INPUT, "plot: cannot read the reference gradient");
    for (int mode = 0; mode < NORM_COUNT; mode++) {
        if (h5_read_params(gf, gpath, normalization_names[mode], &m, g)) die(EXIT_BAD_INPUT, "plot: cannot read grads.h5");
        fprintf(pd, "%s", normalization_names[mode]);
        for (int p = 0; p < N_PARAMS; p++) {
            double worst = tolerance_ratio(g + m.offset[p], ref + m.offset[p], m.size[p], cfg->parity.atol, cfg->parity.rtol);
            fprintf(pd, " %.6g", worst > 1e-6 ? worst : 1e-6);  // log scale floor
        }
        fprintf(pd, "\n");
    }
    if (fclose(pd) != 0) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, strerror(errno));
    h5_close(rf), h5_close(gf);
    free(ref), free(g);

    // gnuplot runs in the plot directory and its script names only fixed relative files:
    // no user string (paths.outputs) enters the script or a command line.
    char png[1024], tmp[1200], gp[1200];
    out_path(app, png, sizeof png, "figure.png");
    snprintf(tmp, sizeof tmp, "%s/figure.tmp.png", dir);
    snprintf(gp, sizeof gp, "%s/figure.gp", dir);
    FILE *f = fopen_nofollow(gp, "w");
    if (!f) die(EXIT_BAD_INPUT, "%s: cannot write: %s", gp, write_error(errno));
    fprintf(f,
            "set terminal pngcairo size 1400,560 font 'sans,10'\nset output 'figure.tmp.png'\nset multiplot layout 1,2\n"
            "set title 'Training loss (global token mean)'\nset xlabel 'update'\nset ylabel 'loss per token'\nset grid\n"
            "plot ");
    const char *styles[3] = {"lw 3 lc rgb '#999999'", "lw 1.5 lc rgb '#1f77b4'", "lw 1.5 dt 2 lc rgb '#d62728'"};
    int first = 1;
    for (int i = 0; i < 3; i++)
        if (have[i])
            fprintf(f, "%s'loss-%s.dat' using 1:2 with lines %s title '%s'", first ? "" : ", ", runs[i], styles[i], runs[i]),
                first = 0;
    if (first) fprintf(f, "NaN notitle");
    fprintf(f,
            "\nset title 'Window-1 gradient error vs the single-process reference'\nset logscale y\nset format y '10^{%%L}'\n"
            "set ylabel 'worst |g - g_{ref}| / (atol + rtol |g_{ref}|) per tensor'\nset xlabel ''\nset style data histograms\n"
            "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\nset boxwidth 0.9\nset xtics rotate by -15\n"
            "set key below horizontal maxrows 2\nset yrange [1e-6:*]\nset xtics font ',8'\n"
            "plot 'parity.dat' using 2:xtic(1) title columnheader(2), '' using 3 title columnheader(3), "
            "'' using 4 title columnheader(4), '' using 5 title columnheader(5), '' using 6 title columnheader(6), "
            "1 with lines lw 2 dt 2 lc rgb 'black' title 'bound (atol %g, rtol %g): passes below'\nunset multiplot\n",
            cfg->parity.atol, cfg->parity.rtol);
    if (fclose(f) != 0) die(EXIT_BAD_INPUT, "%s: cannot write: %s", gp, strerror(errno));
    if (run_gnuplot(dir, "figure.gp") != 0 || rename(tmp, png) != 0) {
        unlink(tmp);
        die(EXIT_BAD_INPUT, "gnuplot failed on %s (is gnuplot installed? `apt-get install gnuplot-nox`)", gp);
    }
    say("plot: %s (loss curves of %s%s%s; gradient error per mode and tensor)\n", png, have[0] ? "continuous " : "",
        have[1] ? "interrupted " : "", have[2] ? "resumed" : "");
    return 0;
}

// ---------------------------------------------------------------------------------------
// clean --scope generated

static void clean_path(const App *app, const char *path, int *found, int *failed) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    (*found)++;
    say("%s %s%s\n", app->dry_run ? "would remove" : "removing", path, S_ISDIR(st.st_mode) ? "/" : "");
    // Never through a link: a linked directory loses the link, not its target's files.
    if (!app->dry_run && remove_tree(path) != 0) (*failed)++;
}

int cmd_clean(App *app) {
    if (!app->scope || strcmp(app->scope, "generated") != 0)
        die(EXIT_BAD_INPUT, "clean: --scope generated is required (the only scope: what ddptok wrote)");
    static const char *outputs[] = {"data", "train", "logs", "plot", "matrix", "reference.h5", "grads.h5", "parity.json",
                                    "empty.json", "report.json", "evaluate.json", "check_loss.json", "exercise.json", "figure.png"};
    static const char *artifacts[] = {"checkpoints", "continuous"};  // and what train --fresh moved aside: NAME.old-*
    int found = 0, failed = 0;
    char path[1024];
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        out_path(app, path, sizeof path, outputs[i]);
        clean_path(app, path, &found, &failed);
    }
    for (size_t i = 0; i < sizeof artifacts / sizeof *artifacts; i++) {
        art_path(app, path, sizeof path, artifacts[i]);
        clean_path(app, path, &found, &failed);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.old-", artifacts[i]);
        struct dirent **aside;
        int n = scandir(app->cfg.paths.artifacts, &aside, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            if (!strncmp(aside[k]->d_name, prefix, strlen(prefix))) {
                art_path(app, path, sizeof path, aside[k]->d_name);
                clean_path(app, path, &found, &failed);
            }
            free(aside[k]);
        }
        if (n >= 0) free(aside);
    }
    say("clean: %d generated path(s) %s%s\n", found, app->dry_run ? "would be removed (dry run: nothing changed)" : "removed",
        failed ? ", some could not be removed" : "");
    return failed ? EXIT_BAD_INPUT : 0;
}

// ---------------------------------------------------------------------------------------
// check-env

void build_info(char *out, size_t len) {
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(mpi, &n);
    mpi[strcspn(mpi, ",\n")] = 0;  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
    unsigned h5[3] = {0, 0, 0};
    H5get_libversion(&h5[0], &h5[1], &h5[2]);
    char cuda[64] = "CUDA backend: not built in";
#ifdef DDPTOK_CUDA
    char nccl[32];
    nccl_version_string(nccl, sizeof nccl);
    snprintf(cuda, sizeof cuda, "CUDA backend: built in, NCCL %s", nccl);
#endif
    // The sgemm kernel OpenBLAS picked at run time (OPENBLAS_CORETYPE overrides it): an
    // OpenBLAS older than the CPU falls back to its SSE3 kernel, ~3x slower on sgemm.
    const char *core = openblas_get_corename();
    int generic = (!strcasecmp(core, "prescott") || !strcasecmp(core, "core2") || !strcasecmp(core, "katmai")) &&
                  __builtin_cpu_supports("avx2");
    snprintf(out, len, "ddptok %s (%s); %s, HDF5 %u.%u.%u, libyaml %s, %s; BLAS kernel %s%s", DDPTOK_VERSION, cuda, mpi,
             h5[0], h5[1], h5[2], yaml_get_version_string(), openblas_get_config(), core,
             generic ? " (a generic kernel on an AVX2 CPU: OPENBLAS_CORETYPE=Haswell or SkylakeX makes sgemm ~3x faster)"
                     : "");
}

int cmd_check_env(App *app) {
    Comm *cm = &app->comm;
    int W = cm->world;
    char device[200] = "none (cpu backend)", uuid[33] = "";
#ifdef DDPTOK_CUDA
    if (app->compute->on_device) {
        cuda_describe_device(device, sizeof device);
        cuda_device_uuid(uuid);
    }
#endif
    char mine[400], *all = xcalloc((size_t)W, 400), *uuids = xcalloc((size_t)W, 33);
    snprintf(mine, sizeof mine, "host %s, local rank %d of %d, %s", g_id.host, cm->local_rank, cm->local_size, device);
    comm_gather_str(cm, mine, all, 400);
    comm_gather_str(cm, uuid, uuids, 33);
    // One test all-reduce through the data plane with exact sums: counts rank+1 sum to
    // W(W+1)/2; floats rank+1 average to (W+1)/2.
    int64_t cnt = cm->rank + 1;
    float v[4] = {(float)(cm->rank + 1), 1.0f, 0.0f, 2.0f * (float)(cm->rank + 1)};
    cm->ops->allreduce_sum_i64(cm, &cnt, 1);
#ifdef DDPTOK_CUDA
    if (cm->ops->device_buffers) {
        void *d = cuda_upload(v, sizeof v);
        cm->ops->allreduce_avg_f32(cm, d, 4);
        cuda_download_free(d, v, sizeof v);
    } else
#endif
        cm->ops->allreduce_avg_f32(cm, v, 4);
    int ok = cnt == (int64_t)W * (W + 1) / 2 && v[0] == (float)(W + 1) / 2 && v[1] == 1.0f && v[2] == 0.0f && v[3] == (float)(W + 1);
    ok = comm_agree(cm, !ok) == 0;
    char info[1024];
    build_info(info, sizeof info);
    say("%s\n", info);  // the NCCL version is in it
    say("check-env: backend %s, comm %s, MPI world %d\n", app->compute->name, cm->ops->name, W);
    for (int r = 0; r < W && cm->rank == 0; r++) say("  rank %d: %s\n", r, all + (size_t)r * 400);
    say("  test all-reduce: int64 sum %lld (expected %lld), float average %g (expected %g): %s\n", (long long)cnt,
        (long long)W * (W + 1) / 2, v[0], (W + 1) / 2.0, ok ? "ok" : "WRONG");
    int dual_ok = 1;
    if (app->dual && cm->rank == 0) {
        dual_ok = W == 2 && uuids[0] && uuids[33] && strcmp(uuids, uuids + 33) != 0;
        say("check-env --dual: %s\n", dual_ok ? "2 ranks on 2 distinct GPUs: ok"
                                               : "FAILED: needs exactly 2 ranks on 2 distinct GPUs (cuda backend)");
    }
    comm_bcast(cm, &dual_ok, sizeof dual_ok, 0);
    free(all), free(uuids);
    return ok && dual_ok ? 0 : EXIT_CHECK_FAILED;
}
