// plot.c — `plot`: gnuplot → outputs/figure.png
#include <errno.h>
#include <math.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/corpus_file.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "method/objective.h"
#include "method/optimizer.h"
#include "model/model.h"

// A line of a run's JSONL that is longer is not one of its records (ddptok writes ~400
// bytes): it is skipped like a cut one, without holding it.
#define JSONL_LINE_MAX (1 << 20)

// What plot learns of one run's curve while streaming its JSONL: its points, its steps, the
// config that made it (each record's "config_digest", config_result_digest of the run's
// config; "" for a log written before it was recorded: a record without one changes
// nothing) and, when `loss` is not NULL, the
// loss of each step 1..U (NaN where it has none) to compare curves.
typedef struct {
    int64_t points, first, last;
    char digest[65];
    int mixed;     // records of more than one config: not one run
    double *loss;  // (U + 1), or NULL
    int U;
    int W;         // the run's ranks (its records' rank_tokens), 0: unknown
    int64_t val_points;  // records with a "validation" loss (train.eval_every)
} Curve;

// The points of one run's JSONL, streamed (any length: nothing is read whole), written to
// `out` as "step loss" lines when it is not NULL. Every line counts, whatever precedes it (a
// blank line, a NUL byte); a step keeps its 64 bits; a line that is not a record is
// skipped. Dies (exit 2) naming the file when it cannot be read.
static int64_t jsonl_points(FILE *in, const char *jsonl, FILE *out, FILE *val, Curve *cv) {
    size_t cap = 4096, n = 0;  // grows with the longest line, up to JSONL_LINE_MAX
    char *line = xmalloc(cap);
    int too_long = 0, c;
    int64_t points = 0;
    json_int_t step;
    double loss;
    do {
        c = getc_unlocked(in);
        if (c != EOF && c != '\n') {
            if (n == cap && cap < JSONL_LINE_MAX) {
                line = realloc(line, cap *= 2);
                ASSERT(line != NULL);
            }
            if (n < cap) line[n++] = (char)c;
            else too_long = 1;
            continue;
        }
        json_t *j = n && !too_long ? json_loadb(line, n, 0, NULL) : NULL;
        if (j && !json_unpack(j, "{s:I, s:F}", "step", &step, "loss", &loss)) {
            if (out) fprintf(out, "%lld %.9g\n", (long long)step, loss);
            json_t *v = json_object_get(json_object_get(j, "validation"), "loss");
            if (val && json_is_number(v)) fprintf(val, "%lld %.9g\n", (long long)step, json_number_value(v));
            if (cv) {
                cv->val_points += json_is_number(v);
                size_t w = json_array_size(json_object_get(j, "rank_tokens"));  // W <= 64; beyond, the range says W
                json_t *range = json_object_get(json_object_get(j, "rank_tokens_range"), "ranks");
                if (!w && json_is_integer(range) && json_integer_value(range) > 0 && json_integer_value(range) <= MAX_WORLD)
                    w = (size_t)json_integer_value(range);
                if (w) cv->W = (int)w;
                const char *d = json_string_value(json_object_get(j, "config_digest"));
                if (d && d[0] && !cv->digest[0]) snprintf(cv->digest, sizeof cv->digest, "%s", d);  // a record without one: unknown
                else if (d && d[0] && strcmp(cv->digest, d) != 0) cv->mixed = 1;
                if (!points || step < cv->first) cv->first = step;
                if (!points || step > cv->last) cv->last = step;
                if (cv->loss && step >= 1 && step <= cv->U) cv->loss[step] = loss;
            }
            points++;
        }
        json_decref(j);
        n = 0, too_long = 0;
    } while (c != EOF);
    free(line);
    if (ferror(in)) die(EXIT_BAD_INPUT, "%s: cannot read: %s", jsonl, strerror(errno));
    if (cv) cv->points = points;
    return points;
}

// The JSONL opened for reading, or NULL when it does not exist; dies (exit 2) naming it when
// it is there but cannot be read (a directory, a FIFO, no permission).
static FILE *jsonl_open(const char *jsonl) {
    char why[256];
    FILE *in = fopen_regular(jsonl, why, sizeof why);
    if (!in && errno != ENOENT) die(EXIT_BAD_INPUT, "%s: cannot read: %s", jsonl, why);
    return in;
}

// The loss curve of one run (app.h).
// The loss curve (and, when `val_dat` is not NULL, the validation points) of one run into .dat files.
static int64_t jsonl_to_dats(const char *jsonl, const char *dat, const char *val_dat) {
    FILE *in = jsonl_open(jsonl);
    if (!in) return 0;
    FileOut out, vo;
    if (file_out_open(&out, dat) || !file_out_stream(&out)) stop(EXIT_BAD_INPUT);  // it said why
    if (val_dat && (file_out_open(&vo, val_dat) || !file_out_stream(&vo))) {
        file_out_abort(&out);
        stop(EXIT_BAD_INPUT);
    }
    int64_t n = jsonl_points(in, jsonl, out.f, val_dat ? vo.f : NULL, NULL);
    fclose(in);
    if (file_out_commit(&out)) {
        if (val_dat) file_out_abort(&vo);
        stop(EXIT_BAD_INPUT);
    }
    if (val_dat && file_out_commit(&vo)) stop(EXIT_BAD_INPUT);
    return n;
}

int64_t plot_jsonl_to_dat(const char *jsonl, const char *dat) { return jsonl_to_dats(jsonl, dat, NULL); }

// The curve a run's JSONL holds (no point when it does not exist), nothing written.
static void jsonl_curve(const char *jsonl, Curve *cv) {
    FILE *in = jsonl_open(jsonl);
    if (!in) return;
    jsonl_points(in, jsonl, NULL, NULL, cv);
    fclose(in);
}

// `s` with every character but [A-Za-z0-9 ._/,:=+-] replaced by '?': a user's string (the
// config's path) that can go inside a quoted gnuplot string, read as plain text.
static void plain_text(char *out, size_t len, const char *s) {
    size_t n = 0;
    for (; *s && n + 1 < len; s++, n++)
        out[n] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ._/,:=+-", *s) ? *s : '?';
    out[n] = 0;
}

// Whether `name` is an executable in PATH (where posix_spawnp will look for it).
static int in_path(const char *name) {
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    for (const char *p = path;; p++) {
        size_t n = strcspn(p, ":");
        char file[1200];
        snprintf(file, sizeof file, "%.*s/%s", n ? (int)n : 1, n ? p : ".", name);
        if (access(file, X_OK) == 0) return 1;
        p += n;
        if (!*p) return 0;
    }
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

// Runs gnuplot on `script` with `dir` as its working directory and its standard output on
// `out` (the figure: gnuplot opens no file for writing, so none it could be tricked into): no
// shell, an argv, so no path reaches a command line; 0 when it exited 0.
static int run_gnuplot(const char *dir, const char *script, int out) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO);
    char *argv[] = {"gnuplot", (char *)script, NULL};
    // The script is UTF-8 (Δ, ✓): under a locale that is not (C, POSIX, none) gnuplot warned
    // "iconv failed to convert degree sign" on every plot; it gets C.UTF-8 then (glibc's own).
    const char *loc = getenv("LC_ALL");
    if (!loc || !*loc) loc = getenv("LC_CTYPE");
    if (!loc || !*loc) loc = getenv("LANG");
    int utf8 = loc && (strcasestr(loc, "utf-8") || strcasestr(loc, "utf8"));
    size_t n = 0;
    while (environ[n]) n++;
    char **env = xmalloc((n + 2) * sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (utf8 || strncmp(environ[i], "LC_ALL=", 7) != 0) env[k++] = environ[i];
    if (!utf8) env[k++] = "LC_ALL=C.UTF-8";
    env[k] = NULL;
    pid_t pid;
    int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, env), status = 0;
    free(env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return error("cannot start gnuplot: %s", strerror(rc));
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return error("gnuplot: %s", strerror(errno));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

// Which runs' curves the figure may draw together: a curve keeps its place only when the run
// that wrote it had this config (the JSONL's config_digest = this config's, with the run's own
// W where train.world_size is auto; a log written before the digest was recorded is taken as
// it is); another config's curve is labelled so and left out of every comparison, and a log
// whose records come from two configs is two runs appended: refused.
enum { CURVE_THIS = 0, CURVE_UNKNOWN, CURVE_OTHER };

// This config's digest as a run on W ranks had it (train.world_size: auto is the ranks launched).
static void digest_at(const Config *cfg, int W, char out[65]) {
    Config c = *cfg;
    char err[600];
    if (cfg->train.world_size_auto && W > 0 && W != c.train.world_size) {
        c.train.world_size = W;
        if (c.train.bands_auto) c.train.n_bands = 0;
        if (config_finish(&c, err, sizeof err)) c = *cfg;
    }
    config_result_digest(&c, out);
}

// The parity panel's inputs are this config's: parity.json made by this config on this corpus
// (report_identity_check), grads.h5 by that same parity run (its config_digest and data lock
// are parity.json's), reference.h5 of that data. 1, or 0 with why in `why`.
static int parity_is_ours(App *app, const char *jpath, const char *gpath, const char *rpath, json_t **pj, char *why, size_t len) {
    char hint[HINT_MAX];
    int W = app->cfg.train.world_size;
    if (access(rpath, F_OK) != 0 || access(gpath, F_OK) != 0 || access(jpath, F_OK) != 0) {
        snprintf(why, len, "no %s (run `%s`)", access(rpath, F_OK) != 0 ? "reference.h5" : access(gpath, F_OK) != 0 ? "grads.h5" : "parity.json",
                 access(rpath, F_OK) != 0 ? hint_command(hint, sizeof hint, "reference", 0, NULL) : hint_command(hint, sizeof hint, "parity", W, NULL));
        return 0;
    }
    Corpus corpus;
    char cpath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    error_capture(1);
    int unreadable = corpus_read(&corpus, &app->cfg, cpath);
    const char *err = error_capture(0);
    if (unreadable) {
        snprintf(why, len, "this config's corpus cannot be read (%s)", err);
        return 0;
    }
    *pj = json_read_file(jpath, 0);
    char phrase[900];
    int ours = *pj && report_identity_check(app, &corpus, *pj, 0, phrase, sizeof phrase) == 0;
    if (!*pj) snprintf(why, len, "%s cannot be read", jpath);
    else if (!ours) snprintf(why, len, "%s is %.700s (run `%s`)", jpath, phrase, hint_command(hint, sizeof hint, "parity", W, NULL));
    if (ours) {  // grads.h5 of the same run, reference.h5 of the same data
        const char *digest = json_string_value(json_object_get(json_object_get(*pj, "config"), "digest"));
        const char *lock = json_string_value(json_object_get(*pj, "data_lock"));
        hid_t gf = h5_open_read(gpath, NULL), rf = gf < 0 ? -1 : h5_open_read(rpath, NULL);
        char *gd = gf < 0 ? NULL : h5_attr_read_str(gf, gpath, "config_digest"), *gl = gf < 0 ? NULL : h5_attr_read_str(gf, gpath, "data_lock");
        char *rl = rf < 0 ? NULL : h5_attr_read_str(rf, rpath, "data_lock");
        if (!gd || !gl || strcmp(gd, digest) || strcmp(gl, lock))
            ours = 0, snprintf(why, len, "%s is not the one parity.json's run wrote (run `%s`)", gpath, hint_command(hint, sizeof hint, "parity", W, NULL));
        else if (!rl || strcmp(rl, lock))
            ours = 0, snprintf(why, len, "%s is of other data (run `%s`)", rpath, hint_command(hint, sizeof hint, "reference", 0, NULL));
        free(gd), free(gl), free(rl);
        if (gf >= 0) h5_close(gf);
        if (rf >= 0) h5_close(rf);
    }
    corpus_free(&corpus);
    if (!ours) json_decref(*pj), *pj = NULL;
    return ours;
}

static int plot_run(App *app) {
    const Config *cfg = &app->cfg;
    char dir[1024], path[1200], dat[1200], val_dat[1200];
    out_path(app, dir, sizeof dir, "plot");
    const char *runs[3] = {"continuous", "interrupted", "resumed"};
    int U = cfg->train.updates;

    // 1. Inputs first, nothing written: the loss curves (a JSONL of no step draws nothing,
    // and gnuplot refuses a plot of nothing) and gnuplot itself; each missing one is named in
    // one line with the command that makes it. The parity panel (reference.h5, grads.h5,
    // parity.json) is drawn when those are this config's, and left out, said why, otherwise.
    Curve cv[3];
    int64_t have[3], points = 0;
    for (int i = 0; i < 3; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "train/%s.jsonl", runs[i]);
        out_path(app, path, sizeof path, rel);
        cv[i] = (Curve){.U = U, .loss = xmalloc((size_t)(U + 1) * sizeof(double))};
        for (int s = 0; s <= U; s++) cv[i].loss[s] = NAN;
        jsonl_curve(path, &cv[i]);
        points += have[i] = cv[i].points;
        if (cv[i].mixed)
            die(EXIT_BAD_INPUT, "%s: its records come from more than one config (config_digest changes): two runs in one log, "
                                "which plot will not draw as one curve; move it aside", path);
    }
    char gpath[1024], rpath[1024], jpath[1024], train_dir[1024];
    out_path(app, gpath, sizeof gpath, "grads.h5");
    out_path(app, rpath, sizeof rpath, "reference.h5");
    out_path(app, jpath, sizeof jpath, "parity.json");
    out_path(app, train_dir, sizeof train_dir, "train");
    Buf missing = {0};
    int W = cfg->train.world_size;
    char hint[HINT_MAX];  // each command as this user can run it (hint_command)
    if (!points)
        buf_printf(&missing, "; a loss curve: no step in %s/continuous.jsonl, interrupted.jsonl or resumed.jsonl (run `%s`)",
                   train_dir, hint_command(hint, sizeof hint, "train", W, NULL));
    if (!in_path("gnuplot")) buf_printf(&missing, "; gnuplot (not in PATH: `apt-get install gnuplot-nox`)");
    if (missing.n) die(EXIT_BAD_INPUT, "plot needs what is missing: %s; nothing written", missing.s + 2);
    buf_free(&missing);

    json_t *pj = NULL;
    char no_parity[HINT_MAX + 2048] = "";
    int parity = parity_is_ours(app, jpath, gpath, rpath, &pj, no_parity, sizeof no_parity);

    // What each normalization must do (parity.json's "expected": passes, coincides, rejected)
    // and the window's counts, from the parity run that wrote grads.h5.
    json_t *modes = pj ? json_object_get(pj, "modes") : NULL;
    const char *expected[NORM_COUNT];
    for (int mode = 0; parity && mode < NORM_COUNT; mode++) {
        expected[mode] = json_string_value(json_object_get(json_object_get(modes, normalization_names[mode]), "expected"));
        if (!expected[mode] || (strcmp(expected[mode], "passes") && strcmp(expected[mode], "coincides") && strcmp(expected[mode], "rejected")))
            die(EXIT_BAD_INPUT, "%s: modes.%s.expected: expected passes, coincides or rejected (run `%s` again)", jpath,
                normalization_names[mode], hint_command(hint, sizeof hint, "parity", W, NULL));
    }
    Buf counts = {0};  // "N = 153 + 437"
    json_t *rc = json_object_get(pj, "rank_counts");
    for (size_t r = 0; r < json_array_size(rc); r++)
        buf_printf(&counts, "%s%lld", r ? " + " : "N = ", (long long)json_integer_value(json_array_get(rc, r)));

    // Which config made each curve.
    int kind[3];
    for (int i = 0; i < 3; i++) {
        char digest[65];
        digest_at(cfg, cv[i].W, digest);
        kind[i] = !cv[i].digest[0] ? CURVE_UNKNOWN : strcmp(cv[i].digest, digest) ? CURVE_OTHER : CURVE_THIS;
        if (have[i] && kind[i] == CURVE_OTHER)
            say("plot: WARNING: %s/%s.jsonl was written by a run of another config (config_digest %.12s) than this "
                "plot's%s (%.12s): labelled so and left out of the comparison\n", text_safe(train_dir), runs[i], cv[i].digest,
                text_safe(hint_args()), digest);
    }
    // The main lineage against the uninterrupted run, step by step, where both are of this
    // config: the exact resume shows as max |Δloss| = 0 (the logs keep 9 digits). What is
    // compared is named as it happened: interrupted + resumed, or a train that ran to its end
    // (interrupt_at 0), or an interrupted run not resumed yet.
    int64_t compared = 0;
    double max_diff = 0;
    int joinable = have[0] && kind[0] != CURVE_OTHER;
    for (int s = 1; joinable && s <= U; s++) {
        double other = NAN;
        for (int i = 1; i < 3 && isnan(other); i++)
            if (have[i] && kind[i] != CURVE_OTHER) other = cv[i].loss[s];
        if (isnan(other) || isnan(cv[0].loss[s])) continue;
        compared++;
        double d = fabs(other - cv[0].loss[s]);
        if (d > max_diff || isnan(d)) max_diff = d;
    }
    for (int i = 0; i < 3; i++) free(cv[i].loss);
    int resumed = have[2] && kind[2] != CURVE_OTHER, lineage_end = have[1] ? (int)cv[1].last : 0;
    char what_vs[200];
    if (resumed) snprintf(what_vs, sizeof what_vs, "interrupted at step %d + resumed vs the uninterrupted run", lineage_end);
    else if (lineage_end >= U) snprintf(what_vs, sizeof what_vs, "train (not interrupted) vs train --continuous");
    else snprintf(what_vs, sizeof what_vs, "interrupted at step %d (not resumed) vs the uninterrupted run", lineage_end);

    // Per-mode, per-tensor worst ratio |g - g_ref| / (atol + rtol |g_ref|) of grads.h5
    // against reference.h5: the parity test passes a tensor exactly when it is <= 1.
    ModelShape m;
    model_shape(&m, cfg);
    double worst[NORM_COUNT][MODEL_MAX_TENSORS];
    if (parity) {
        float *ref = xmalloc(m.total * sizeof *ref), *g = xmalloc(m.total * sizeof *g);
        hid_t rf = h5_open_read(rpath, NULL);
        hid_t gf = rf < 0 ? -1 : h5_open_read(gpath, NULL);
        if (rf < 0 || gf < 0) stop(EXIT_BAD_INPUT);
        if (h5_read_params(rf, rpath, "grad", &m, ref)) die(EXIT_BAD_INPUT, "plot: cannot read the reference gradient");
        for (int mode = 0; mode < NORM_COUNT; mode++) {
            if (h5_read_params(gf, gpath, normalization_names[mode], &m, g)) die(EXIT_BAD_INPUT, "plot: cannot read grads.h5");
            for (int p = 0; p < m.n_tensors; p++)
                worst[mode][p] = tolerance_ratio(g + m.offset[p], ref + m.offset[p], m.size[p], cfg->parity.atol, cfg->parity.rtol);
        }
        h5_close(rf), h5_close(gf);
        free(ref), free(g);
    }

    // 2. The data files, the script and the figure.
    if (mkdir_p(dir)) stop(EXIT_BAD_INPUT);  // it said why
    int64_t val[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "train/%s.jsonl", runs[i]);
        out_path(app, path, sizeof path, rel);
        snprintf(dat, sizeof dat, "%s/loss-%s.dat", dir, runs[i]);
        snprintf(val_dat, sizeof val_dat, "%s/val-%s.dat", dir, runs[i]);
        if (have[i]) have[i] = jsonl_to_dats(path, dat, val_dat);  // a run still writing only grows
        val[i] = have[i] ? cv[i].val_points : 0;
    }
    if (parity) {
        snprintf(dat, sizeof dat, "%s/parity.dat", dir);
        FileOut pdo;
        if (file_out_open(&pdo, dat) || !file_out_stream(&pdo)) stop(EXIT_BAD_INPUT);  // it said why
        FILE *pd = pdo.f;
        fprintf(pd, "mode");
        for (int p = 0; p < m.n_tensors; p++) fprintf(pd, " %s", m.name[p]);
        fprintf(pd, "\n");
        for (int mode = 0; mode < NORM_COUNT; mode++) {
            fprintf(pd, "%s", normalization_names[mode]);
            for (int p = 0; p < m.n_tensors; p++) fprintf(pd, " %.6g", worst[mode][p] > 1e-6 ? worst[mode][p] : 1e-6);  // log scale floor
            fprintf(pd, "\n");
        }
        if (file_out_commit(&pdo)) stop(EXIT_BAD_INPUT);
    }

    // gnuplot runs in the plot directory and its script names only fixed relative files; the
    // one user string in it (the config's path, in the title) is plain_text, printed with
    // noenhanced: no user string reaches a command line or gnuplot's syntax.
    char png[1024], gp[1200], cfg_text[256];
    plain_text(cfg_text, sizeof cfg_text, app->config_path);
    out_path(app, png, sizeof png, "figure.png");
    snprintf(gp, sizeof gp, "%s/figure.gp", dir);
    FileOut gpo;
    if (file_out_open(&gpo, gp) || !file_out_stream(&gpo)) stop(EXIT_BAD_INPUT);  // it said why
    FILE *f = gpo.f;
    fprintf(f, "set encoding utf8\nset terminal pngcairo size %d,680 font 'sans,10'\nset output\n"
               "set multiplot layout 1,%d title \"%s: W = %d ranks, A = %d, B = %d, %d updates, %s lr %g, %s unit\" noenhanced "
               "font ',12'\n",
            parity ? 1400 : 900, parity ? 2 : 1, cfg_text, W, cfg->train.accumulation, cfg->train.batch_size_per_rank, U,
            optimizer_names[cfg->train.optimizer], cfg->train.hyper.lr, loss_unit_names[cfg->train.loss_unit]);
    // The comparison, where there is one, is the panel's second title line.
    if (compared && max_diff == 0)
        fprintf(f, "set title \"Loss (global token mean): training, and validation where logged\\n%s: identical "
                   "(max |Δloss| = 0 over %lld steps)\" noenhanced tc rgb '#006400'\n", what_vs, (long long)compared);
    else if (compared)
        fprintf(f, "set title \"Loss (global token mean): training, and validation where logged\\n%s: NOT identical "
                   "(max |Δloss| = %.3g over %lld steps)\" noenhanced tc rgb '#b00000'\n", what_vs, max_diff, (long long)compared);
    else fprintf(f, "set title 'Loss (global token mean): training, and validation where logged'\n");
    fprintf(f, "set xlabel 'update'\nset ylabel 'loss per token'\nset grid\nset key top right noenhanced\n%s",
            parity ? "set bmargin 11\n" : "");  // the parity panel's legend sits below both
    fprintf(f, "plot ");
    const char *styles[3] = {"lw 3 lc rgb '#999999'", "lw 1.5 lc rgb '#1f77b4'", "lw 1.5 dt 2 lc rgb '#d62728'"};
    const char *val_styles[3] = {"pt 7 ps 1.2 lc rgb '#555555'", "pt 5 ps 1 lc rgb '#ff7f0e'", "pt 9 ps 1 lc rgb '#2ca02c'"};
    char what[3][160];
    snprintf(what[0], sizeof what[0], "continuous (uninterrupted witness)");
    if (resumed) snprintf(what[1], sizeof what[1], "interrupted at step %d", lineage_end);
    else if (lineage_end >= U) snprintf(what[1], sizeof what[1], "train (not interrupted)");
    else snprintf(what[1], sizeof what[1], "interrupted at step %d (not resumed)", lineage_end);
    snprintf(what[2], sizeof what[2], "resumed");
    int first = 1;
    for (int i = 0; i < 3; i++) {
        if (!have[i]) continue;
        fprintf(f, "%s'loss-%s.dat' using 1:2 with lines %s title \"%s, steps %lld-%lld%s\"", first ? "" : ", ", runs[i], styles[i],
                what[i], (long long)cv[i].first, (long long)cv[i].last, kind[i] == CURVE_OTHER ? " (ANOTHER CONFIG: not compared)" : "");
        if (val[i])
            fprintf(f, ", 'val-%s.dat' using 1:2 with linespoints %s title \"%s: validation loss (%lld point%s)\"", runs[i],
                    val_styles[i], what[i], (long long)val[i], val[i] == 1 ? "" : "s");
        first = 0;
    }
    fprintf(f, "\n");
    int verdict_ok = 1;
    if (parity) {
        // The parity panel: each mode's cluster is named with what it must do and what it did;
        // a decade above the highest bar leaves room for the verdicts at its top.
        double top = 100;
        for (int mode = 0; mode < NORM_COUNT; mode++)
            for (int p = 0; p < m.n_tensors; p++)
                if (isfinite(worst[mode][p]) && worst[mode][p] * 10 > top) top = pow(10, ceil(log10(worst[mode][p])) + 1);
        fprintf(f, "set title \"Window-1 gradient error vs the single-process reference (%s; atol %g, rtol %g)\" noenhanced tc default\n"
                   "set logscale y\nset format y '10^{%%L}'\n"
                   "set ylabel 'worst |g - g_{ref}| / (atol + rtol |g_{ref}|) per tensor'\nset xlabel ''\nset style data histograms\n"
                   "set style histogram clustered gap 1\nset style fill solid 0.8 border -1\nset boxwidth 0.9\n"
                   "%s\nset yrange [1e-6:%g]\nset xtics font ',8' noenhanced (",
                counts.n ? counts.s : "", cfg->parity.atol, cfg->parity.rtol,
                // a model of many tensors (the GPT's 16) lists them below in more columns, one colour each
                m.n_tensors > 6 ? "set key below horizontal maxcols 6 font ',8' samplen 1.5 spacing 0.9" : "set key below horizontal maxcols 3",
                top);
        for (int mode = 0; mode < NORM_COUNT; mode++) {
            int pass = 1;
            for (int p = 0; p < m.n_tensors; p++) pass &= worst[mode][p] <= 1;
            int must_pass = strcmp(expected[mode], "rejected") != 0, ok = pass == must_pass;
            verdict_ok &= ok;
            fprintf(f, "%s\"", mode ? ", " : "");
            int line = 0;  // the name broken at hyphens into lines of about 6 to 14 characters
            for (const char *c = normalization_names[mode]; *c; c++, line++) {
                fputc(*c, f);
                if (*c == '-' && line >= 5 && strlen(normalization_names[mode]) > 14 && strlen(c + 1) > 4) fputs("\\n", f), line = -1;
            }
            fprintf(f, "\\n%s\\n%s: %s\" %d",
                    !must_pass ? "MUST BE REJECTED" : !strcmp(expected[mode], "passes") ? "MUST PASS" : "must coincide (these counts)",
                    pass ? "passes" : "rejected", ok ? "ok" : "WRONG", mode);
        }
        fprintf(f, ")\n");
        // Above each cluster, its verdict against what it must do: green when as it must be.
        for (int mode = 0; mode < NORM_COUNT; mode++) {
            int pass = 1;
            for (int p = 0; p < m.n_tensors; p++) pass &= worst[mode][p] <= 1;
            int ok = pass == (strcmp(expected[mode], "rejected") != 0);
            fprintf(f, "set label %d \"%s %s\" at %d, graph 0.96 center noenhanced font ',9' tc rgb '%s'\n", 10 + mode,
                    pass ? "passes" : "rejected", ok ? "✓" : "✗ WRONG", mode, ok ? "#006400" : "#b00000");
        }
        fprintf(f, "plot 'parity.dat'");  // one bar per tensor of the model (columns 2 .. n_tensors + 1)
        static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                              "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#000000"};
        for (int p = 0; p < m.n_tensors; p++) {
            fprintf(f, "%s using %d title columnheader(%d)", p ? ", ''" : "", p + 2, p + 2);
            if (m.n_tensors > 6) fprintf(f, " lc rgb '%s'", colours[p % 16]);
        }
        fprintf(f, ", 1 with lines lw 2 dt 2 lc rgb 'black' title 'the bound: passes below'\n");
    }
    buf_free(&counts);
    fprintf(f, "unset multiplot\n");
    json_decref(pj);
    if (file_out_commit(&gpo)) stop(EXIT_BAD_INPUT);
    FileOut figure;  // gnuplot writes the figure to its standard output, this file
    if (file_out_open(&figure, png)) stop(EXIT_BAD_INPUT);
    if (run_gnuplot(dir, "figure.gp", figure.fd) != 0) {
        file_out_abort(&figure);
        die(EXIT_BAD_INPUT, "gnuplot failed on %s (its own message is above)", gp);
    }
    if (file_out_commit(&figure)) stop(EXIT_BAD_INPUT);
    Buf drawn = {0}, vals = {0};
    for (int i = 0; i < 3; i++) {
        if (have[i]) buf_printf(&drawn, "%s%s", drawn.n ? ", " : "", runs[i]);
        if (val[i]) buf_printf(&vals, "%s%s", vals.n ? ", " : "", runs[i]);
    }
    if (vals.n) buf_printf(&drawn, "; validation loss of %s", vals.s);
    else buf_printf(&drawn, "; no validation loss logged (train.eval_every)");
    buf_free(&vals);
    // Why nothing was compared, when nothing was: the curve that is missing or another config's.
    int others = have[1] || have[2], mine = (have[1] && kind[1] != CURVE_OTHER) || (have[2] && kind[2] != CURVE_OTHER);
    const char *no_comparison = !have[0] ? "no uninterrupted run (continuous.jsonl) to compare with"
                                : kind[0] == CURVE_OTHER ? "the uninterrupted run is another config's: nothing compared"
                                : !others ? "no interrupted or resumed run to compare with the uninterrupted one"
                                : !mine ? "the interrupted and resumed runs are another config's: nothing compared"
                                        : "no step that both the uninterrupted and the interrupted + resumed runs logged";
    char verdict[400];
    if (parity) snprintf(verdict, sizeof verdict, "gradient error per mode and tensor: %s", verdict_ok ? "every mode as it must be" : "a mode NOT as it must be");
    else snprintf(verdict, sizeof verdict, "no parity panel: %s", no_parity);
    say("plot: %s (loss curves of %s; %s; %s)\n", text_safe(png), drawn.s,
        !compared ? no_comparison
        : max_diff == 0 ? (snprintf(what_vs + strlen(what_vs), sizeof what_vs - strlen(what_vs), ": identical (max |Δloss| = 0)"), what_vs)
                        : (snprintf(what_vs + strlen(what_vs), sizeof what_vs - strlen(what_vs), ": NOT identical"), what_vs),
        text_safe(verdict));
    buf_free(&drawn);
    return 0;
}

const Command cmd_plot = {
    .name = "plot",
    .run = plot_run,
    .distributed = 0,
    .summary = "outputs/figure.png: the training and validation loss curves of this config's runs, and the per-mode gradient "
               "error where parity's reports are this config's (gnuplot)",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "plot", 1}, {UNDER_OUTPUTS, "figure.png", 0}, {0}},
};
