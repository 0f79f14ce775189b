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
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "method/objective.h"
#include "model/model.h"

// A line of a run's JSONL that is longer is not one of its records (ddptok writes ~400
// bytes): it is skipped like a cut one, without holding it.
#define JSONL_LINE_MAX (1 << 20)

// The points of one run's JSONL, streamed (any length: nothing is read whole), written to
// `out` as "step loss" lines when it is not NULL. Every line counts, whatever precedes it (a
// blank line, a NUL byte); a step keeps its 64 bits; a line that is not a record is
// skipped. Dies (exit 2) naming the file when it cannot be read.
static int64_t jsonl_points(FILE *in, const char *jsonl, FILE *out) {
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
            points++;
        }
        json_decref(j);
        n = 0, too_long = 0;
    } while (c != EOF);
    free(line);
    if (ferror(in)) die(EXIT_BAD_INPUT, "%s: cannot read: %s", jsonl, strerror(errno));
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
int64_t plot_jsonl_to_dat(const char *jsonl, const char *dat) {
    FILE *in = jsonl_open(jsonl);
    if (!in) return 0;
    FILE *out = fopen_nofollow(dat, "w");
    if (!out) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, write_error(errno));
    int64_t n = jsonl_points(in, jsonl, out);
    fclose(in);
    if (fclose(out) != 0) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, strerror(errno));
    return n;
}

// The points a run's JSONL holds (0 when it does not exist), nothing written.
static int64_t jsonl_count(const char *jsonl) {
    FILE *in = jsonl_open(jsonl);
    if (!in) return 0;
    int64_t n = jsonl_points(in, jsonl, NULL);
    fclose(in);
    return n;
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

static int plot_run(App *app) {
    const Config *cfg = &app->cfg;
    char dir[1024], path[1200], dat[1200];
    out_path(app, dir, sizeof dir, "plot");
    const char *runs[3] = {"continuous", "interrupted", "resumed"};

    // 1. Inputs first, nothing written: the loss curves (a JSONL of no step draws nothing,
    // and gnuplot refuses a plot of nothing), reference.h5, grads.h5 and gnuplot itself;
    // every missing one is named in one line with the command that makes it.
    int64_t have[3], points = 0;
    for (int i = 0; i < 3; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "train/%s.jsonl", runs[i]);
        out_path(app, path, sizeof path, rel);
        points += have[i] = jsonl_count(path);
    }
    char gpath[1024], rpath[1024], train_dir[1024];
    out_path(app, gpath, sizeof gpath, "grads.h5");
    out_path(app, rpath, sizeof rpath, "reference.h5");
    out_path(app, train_dir, sizeof train_dir, "train");
    Buf missing = {0};
    int W = cfg->train.world_size;
    char hint[HINT_MAX];  // each command as this user can run it (hint_command)
    if (access(rpath, F_OK) != 0)
        buf_printf(&missing, "; %s (run `%s`)", rpath, hint_command(hint, sizeof hint, "reference", 0, NULL));
    if (access(gpath, F_OK) != 0)
        buf_printf(&missing, "; %s (run `%s`)", gpath, hint_command(hint, sizeof hint, "parity", W, NULL));
    if (!points)
        buf_printf(&missing, "; a loss curve: no step in %s/continuous.jsonl, interrupted.jsonl or resumed.jsonl (run `%s`)",
                   train_dir, hint_command(hint, sizeof hint, "train", W, NULL));
    if (!in_path("gnuplot")) buf_printf(&missing, "; gnuplot (not in PATH: `apt-get install gnuplot-nox`)");
    if (missing.n) die(EXIT_BAD_INPUT, "plot needs what is missing: %s; nothing written", missing.s + 2);
    buf_free(&missing);

    // Per-mode, per-tensor worst ratio |g - g_ref| / (atol + rtol |g_ref|) of grads.h5
    // against reference.h5: the parity test passes a tensor exactly when it is <= 1.
    ModelShape m;
    model_shape(&m, cfg);
    float *ref = xmalloc(m.total * sizeof *ref), *g = xmalloc(m.total * sizeof *g);
    double worst[NORM_COUNT][N_PARAMS];
    hid_t rf = h5_open_read(rpath, NULL);
    hid_t gf = rf < 0 ? -1 : h5_open_read(gpath, NULL);
    if (rf < 0 || gf < 0) stop(EXIT_BAD_INPUT);
    if (h5_read_params(rf, rpath, "grad", &m, ref)) die(EXIT_BAD_INPUT, "plot: cannot read the reference gradient");
    for (int mode = 0; mode < NORM_COUNT; mode++) {
        if (h5_read_params(gf, gpath, normalization_names[mode], &m, g)) die(EXIT_BAD_INPUT, "plot: cannot read grads.h5");
        for (int p = 0; p < N_PARAMS; p++)
            worst[mode][p] = tolerance_ratio(g + m.offset[p], ref + m.offset[p], m.size[p], cfg->parity.atol, cfg->parity.rtol);
    }
    h5_close(rf), h5_close(gf);
    free(ref), free(g);

    // 2. The data files, the script and the figure.
    if (mkdir_p(dir)) die(EXIT_BAD_INPUT, "cannot create %s", dir);
    for (int i = 0; i < 3; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "train/%s.jsonl", runs[i]);
        out_path(app, path, sizeof path, rel);
        snprintf(dat, sizeof dat, "%s/loss-%s.dat", dir, runs[i]);
        if (have[i]) have[i] = plot_jsonl_to_dat(path, dat);  // a run still writing only grows
    }
    snprintf(dat, sizeof dat, "%s/parity.dat", dir);
    FILE *pd = fopen_nofollow(dat, "w");
    if (!pd) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, write_error(errno));
    fprintf(pd, "mode");
    for (int p = 0; p < N_PARAMS; p++) fprintf(pd, " %s", param_names[p]);
    fprintf(pd, "\n");
    for (int mode = 0; mode < NORM_COUNT; mode++) {
        fprintf(pd, "%s", normalization_names[mode]);
        for (int p = 0; p < N_PARAMS; p++) fprintf(pd, " %.6g", worst[mode][p] > 1e-6 ? worst[mode][p] : 1e-6);  // log scale floor
        fprintf(pd, "\n");
    }
    if (fclose(pd) != 0) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, strerror(errno));

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
        die(EXIT_BAD_INPUT, "gnuplot failed on %s (its own message is above)", gp);
    }
    made_note(png);  // gnuplot, ddptok's child, wrote it; ddptok renamed it into place
    say("plot: %s (loss curves of %s%s%s; gradient error per mode and tensor)\n", text_safe(png), have[0] ? "continuous " : "",
        have[1] ? "interrupted " : "", have[2] ? "resumed" : "");
    return 0;
}

const Command cmd_plot = {
    .name = "plot",
    .run = plot_run,
    .distributed = 0,
    .summary = "outputs/figure.png: loss curves and per-mode gradient error (gnuplot)",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "plot", 1}, {UNDER_OUTPUTS, "figure.png", 0}, {0}},
};
