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
#include "base/fs.h"
#include "base/hint.h"
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "method/objective.h"
#include "model/model.h"

// The loss curve of one run (app.h). Every line counts, whatever precedes it (a blank line,
// a NUL byte); a step keeps its 64 bits.
int plot_jsonl_to_dat(const char *jsonl, const char *dat) {
    size_t len;
    char why[256];
    char *text = file_read_regular(jsonl, 16 << 20, &len, why, sizeof why);  // NULL when absent or not a regular file
    if (!text) return 0;
    FILE *out = fopen_nofollow(dat, "w");
    if (!out) die(EXIT_BAD_INPUT, "%s: cannot write: %s", dat, write_error(errno));
    int n = 0;
    json_int_t step;
    double loss;
    for (char *line = text, *end = text + len, *next; line < end; line = next) {
        next = memchr(line, '\n', (size_t)(end - line));
        next = next ? next + 1 : end;
        // One JSON value per line (JSONL); a line that is not one (a run cut mid-write) is skipped.
        json_t *j = json_loadb(line, (size_t)(next - line), 0, NULL);
        if (j && !json_unpack(j, "{s:I, s:F}", "step", &step, "loss", &loss))
            fprintf(out, "%lld %.9g\n", (long long)step, loss), n++;
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

static int plot_run(App *app) {
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
        have[i] = plot_jsonl_to_dat(path, dat);
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
    made_note(png);  // gnuplot, ddptok's child, wrote it; ddptok renamed it into place
    say("plot: %s (loss curves of %s%s%s; gradient error per mode and tensor)\n", png, have[0] ? "continuous " : "",
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
