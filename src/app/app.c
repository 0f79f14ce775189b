// app.c — what every command shares: output paths, the corpus of this config, the
// agreement of all ranks on the config and options, JSON output, the vector comparison,
// the build line, and window 1 through the distributed path.
#include <cblas.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <yaml.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/budget.h"
#include "data/corpus.h"
#include "data/corpus_file.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "job/cuda_api.h"
#include "model/hf.h"
#include "train/trainer.h"
#include "version.h"  // build/version.h, written by the Makefile

int shipped_configs_dir(char *out, size_t len) {
    char bin[PATH_MAX], dir[PATH_MAX + 32];
    if (hint_program_dir(bin, sizeof bin)) return -1;
    const char *const under[] = {"configs", "../share/ddptok/configs"};  // a checkout's, then make install's
    for (int i = 0; i < 2; i++) {
        struct stat st;
        snprintf(dir, sizeof dir, "%s/%s", bin, under[i]);
        char real[PATH_MAX];
        if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && realpath(dir, real) && strlen(real) < len) {
            snprintf(out, len, "%s", real);
            return 0;
        }
    }
    return -1;
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int shipped_configs_names(const char *dir, char *out, size_t len) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    char *names[256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t k = strlen(e->d_name);
        if (k > 5 && e->d_name[0] != '.' && !strcmp(e->d_name + k - 5, ".yaml")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n; i++) {
        if (names[i] && used < len) used += snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);
        free(names[i]);
    }
    return n ? 0 : -1;
}

const char *config_locate(const char *given, char *out, size_t len) {
    snprintf(out, len, "%s", given);
    struct stat st;
    const char *name = !strncmp(given, "configs/", 8) ? given + 8 : given;
    char dir[PATH_MAX], path[PATH_MAX + 300];
    if (lstat(given, &st) == 0 || errno != ENOENT || strchr(name, '/') || !name[0] || name[0] == '.' ||
        shipped_configs_dir(dir, sizeof dir))
        return out;
    const char *const suffix[] = {"", ".yaml"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && strlen(path) < len) {
            snprintf(out, len, "%s", path);
            break;
        }
    }
    return out;
}

void report_identity_add(const App *app, const Corpus *corpus, json_t *report) {
    char digest[65];
    config_result_digest(&app->cfg, digest);
    char *yaml = config_to_yaml(&app->cfg);
    json_t *overrides = json_array();
    for (int i = 0; i < app->n_sets; i++)
        if (strncmp(app->sets[i], "paths.", 6) != 0) json_array_append_new(overrides, json_text(app->sets[i], NULL));
    json_object_set_new(report, "config", json_pack("{s:o, s:s, s:o, s:o}", "path", json_text(app->config_path, NULL), "digest",
                                                    digest, "yaml", json_text(yaml, NULL), "overrides", overrides));
    json_object_set_new(report, "data_lock", json_string(corpus->lock));
    free(yaml);
}

// `expected` (this config, or a cell's) against `other` made on a corpus of lock `other_lock`:
// the first key that differs, else the data lock the content of this corpus has under it.
static int identity_compare(Config *expected, const Corpus *corpus, const Config *other, const char *other_lock, char *why,
                            size_t len) {
    char err[600], what[600], lock[65];
    if (expected->train.world_size_auto && expected->train.world_size != other->train.world_size) {
        // auto, resolved here in one process: the report's run had its own ranks
        Config c = *expected;
        c.train.world_size = other->train.world_size;
        if (c.train.bands_auto) c.train.n_bands = 0;
        if (config_finish(&c, err, sizeof err) == 0) *expected = c;
    }
    if (config_diff_result(expected, other, what, sizeof what)) {
        char *vs = strstr(what, " vs ");
        if (vs) *vs = 0;
        snprintf(why, len, "another config's (differs at %s here vs %s there)", what, vs ? vs + 4 : "?");
        return -1;
    }
    if (!corpus->content[0]) return 0;
    corpus_data_lock_under(corpus, expected, lock);
    if (!other_lock || strcmp(lock, other_lock) != 0) {
        snprintf(why, len, "made on other data (data lock %.12s…, this corpus's %.12s…)", other_lock ? other_lock : "none", lock);
        return -1;
    }
    return 0;
}

int config_identity_check(const App *app, const Corpus *corpus, const Config *other, const char *other_lock, char *why,
                          size_t len) {
    Config expected = app->cfg;
    return identity_compare(&expected, corpus, other, other_lock, why, len);
}

int report_identity_check(const App *app, const Corpus *corpus, const json_t *report, int cell, char *why, size_t len) {
    const json_t *c = json_object_get(report, "config");
    const char *yaml = json_string_value(json_object_get(c, "yaml")), *lock = json_string_value(json_object_get(report, "data_lock"));
    const char *path = json_string_value(json_object_get(c, "path"));
    if (!yaml || !lock) {
        snprintf(why, len, "records no config or data lock (made before ddptok recorded them): not this config's as far as "
                 "anyone can tell");
        return -1;
    }
    char err[700];
    Config stored, expected = app->cfg;
    if (config_from_yaml(&stored, yaml, "its recorded config", err, sizeof err)) {
        snprintf(why, len, "its recorded config does not parse (%s)", err);
        return -1;
    }
    const json_t *overrides = json_object_get(c, "overrides");
    size_t n = cell ? json_array_size(overrides) : 0;
    char **sets = xcalloc(n + 1, sizeof *sets);
    for (size_t i = 0; i < n; i++) sets[i] = (char *)json_string_value(json_array_get(overrides, i));
    int bad = 0;
    for (size_t i = 0; i < n && !bad; i++) bad = !sets[i];
    if (bad || (n && config_set_many(&expected, sets, (int)n, err, sizeof err))) {
        snprintf(why, len, "its --set overrides do not apply to this config (%s)", bad ? "not strings" : err);
        free(sets);
        return -1;
    }
    free(sets);
    char phrase[800];
    if (identity_compare(&expected, corpus, &stored, lock, phrase, sizeof phrase)) {
        snprintf(why, len, "%s%s%s%s", phrase, path ? " (made with " : "", path ? path : "", path ? ")" : "");
        return -1;
    }
    return 0;
}

void say_next_train(const App *app, const char *who) {
    char hint[HINT_MAX];
    // train.world_size: auto resolved here, in one process, to 1: the run's W is the ranks it is
    // launched on, which a hint of -np 1 hid (the global sampler trains the same on any W).
    if (app->cfg.train.world_size_auto && app->cfg.train.sampler == SAMPLER_GLOBAL)
        say("%s: to train on it, run `%s` (train.world_size: auto: W is the ranks you launch, any W >= 1; the global "
            "sampler trains the same on each)\n", who, hint_command(hint, sizeof hint, "train", -1, NULL));
    else say("%s: to train on it, run `%s`\n", who, hint_command(hint, sizeof hint, "train", app->cfg.train.world_size, NULL));
}

void out_path(const App *app, char *buf, size_t len, const char *rel) {
    snprintf(buf, len, "%s/%s", app->cfg.paths.outputs, rel);
}

// The run's W in one log: its first record's rank_tokens (or rank_tokens_range), when that
// record's config_digest is this config's at that W. 0: no such record.
static int log_world(const Config *cfg, const char *path) {
    char why[256], err[600], digest[65];
    FILE *in = fopen_regular(path, why, sizeof why);
    if (!in) return 0;
    char *line = NULL;
    size_t cap = 0;
    int W = 0;
    for (int i = 0; i < 8 && !W && getline(&line, &cap, in) > 0; i++) {
        json_t *j = json_loads(line, 0, NULL);
        json_t *range = json_object_get(json_object_get(j, "rank_tokens_range"), "ranks");
        json_int_t w = json_is_array(json_object_get(j, "rank_tokens")) ? (json_int_t)json_array_size(json_object_get(j, "rank_tokens"))
                       : json_is_integer(range) ? json_integer_value(range) : 0;
        const char *d = json_string_value(json_object_get(j, "config_digest"));
        if (w >= 1 && w <= MAX_WORLD && d) {
            Config c = *cfg;
            c.train.world_size = (int)w;
            if (c.train.bands_auto) c.train.n_bands = 0;
            if (config_finish(&c, err, sizeof err) == 0 && (config_result_digest(&c, digest), strcmp(digest, d) == 0)) W = (int)w;
            else i = 8;  // another config's log (or of another W): not this run's
        }
        json_decref(j);
    }
    free(line);
    fclose(in);
    return W;
}

int app_run_world(const Config *cfg, char *which, size_t len) {
    const char *runs[] = {"interrupted", "resumed", "continuous"};
    for (int i = 0; i < 3; i++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/train/%s.jsonl", cfg->paths.outputs, runs[i]);
        int W = log_world(cfg, path);
        if (W) {
            snprintf(which, len, "%s", path);
            return W;
        }
    }
    snprintf(which, len, "%s/train/*.jsonl", cfg->paths.outputs);
    return 0;
}

void art_path(const App *app, char *buf, size_t len, const char *rel) {
    snprintf(buf, len, "%s/%s", app->cfg.paths.artifacts, rel);
}

void check_corpus_in_memory(const App *app) {
    const Config *cfg = &app->cfg;
    char err[700], what[300], b[32];
    format_bytes(budget_corpus_bytes(cfg), b, sizeof b);
    snprintf(what, sizeof what, "the corpus in memory (largest: corpus n*(Lmax*4+9) = %s x 3, with its file image: "
             "data.splits.* x data.max_length)", b);
    if (budget_check_bytes(what, size_mul(budget_corpus_bytes(cfg), 3), "make those keys smaller", err, sizeof err))
        die(EXIT_BAD_INPUT, "%s: %s", cfg->source, err);
}

void load_corpus_or_die(App *app, Corpus *corpus) {
    char path[1024];
    out_path(app, path, sizeof path, "data/corpus.h5");
    error_capture(1);
    int rc = corpus_read(corpus, &app->cfg, path);
    const char *why = error_capture(0);
    // Every rank missing the same corpus (the usual case: not prepared yet) says it once.
    if (!comm_agree(&app->comm, rc == 0)) die(EXIT_BAD_INPUT, "%s", why);
    if (rc) error("%s", why);
    if (!rc) {  // train.epochs -> train.updates: the same on every rank (the same corpus), so every rank stops alike
        error_capture(1);
        int bad = sampler_resolve_epochs(&app->cfg, corpus);
        const char *epochs_why = error_capture(0);
        if (bad) die(EXIT_BAD_INPUT, "%s", epochs_why);
    }
    char what[1100];
    snprintf(what, sizeof what, "reading %s", path);
    comm_stop_if_any(&app->comm, rc, EXIT_BAD_INPUT, what);
}

// One broadcast of rank 0's digests (config_run_digest and the options' SHA-256) and one
// agreement when every rank runs the same (the usual case); only when a digest differs
// somewhere do the texts travel (rank 0's config YAML and options, parsed and compared on
// every rank), so the rank that differs can name the key. Was: the texts every time, and
// rank 0's YAML parsed on every rank (O(W) bytes: train.rank_bands has W pairs).
void agree_on_run(App *app, const char *comm_name) {
    Comm *comm = &app->comm;
    if (comm->world == 1) return;
    Buf ob = {0};
    buf_printf(&ob, "%s --backend %s --comm %s --comm-timeout %g%s", app->command, app->backend, comm_name, app->comm_timeout,
               app->options ? app->options : "");
    const char *opts = ob.s;
    char mine[3][65], theirs[3][65];  // the config, the options, θ0 as train.init_from read it here ("" without)
    config_run_digest(&app->cfg, mine[0]);
    snprintf(mine[2], sizeof mine[2], "%s", hf_import_digest());
    Sha256 *h = sha256_begin();
    sha256_add(h, opts, strlen(opts));
    sha256_hex(h, mine[1]);
    memcpy(theirs, mine, sizeof theirs);
    comm_bcast(comm, theirs, sizeof theirs, 0);
    if (!comm_agree(comm, memcmp(mine, theirs, sizeof mine) != 0)) {
        buf_free(&ob);
        return;
    }
    char *yaml = config_to_yaml(&app->cfg);
    int64_t n[2] = {(int64_t)strlen(yaml) + 1, (int64_t)strlen(opts) + 1};
    comm_bcast(comm, n, sizeof n, 0);
    char *yaml0 = xmalloc((size_t)n[0]), *opts0 = xmalloc((size_t)n[1]);
    if (comm->rank == 0) memcpy(yaml0, yaml, (size_t)n[0]), memcpy(opts0, opts, (size_t)n[1]);
    comm_bcast(comm, yaml0, (size_t)n[0], 0);
    comm_bcast(comm, opts0, (size_t)n[1], 0);
    Config cfg0;
    char err[512], what[600];
    int bad = 0;
    if (config_from_yaml(&cfg0, yaml0, "rank 0's config", err, sizeof err)) bad = error("%s", err);
    else if (config_diff_run(&app->cfg, &cfg0, what, sizeof what))
        bad = error("%s: differs from rank 0's config at %s (here vs rank 0): every rank must run the same config",
                    app->config_path, what);
    else if (strcmp(opts, opts0) != 0)
        bad = error("options differ from rank 0's: '%s' here, '%s' on rank 0", opts, opts0);
    else if (strcmp(mine[2], theirs[2]) != 0)  // node-local copies that differ, a directory rewritten as the job started
        bad = error("train.init_from %s: rank %d read other weights than rank 0 (θ0 SHA-256 %.16s here, %.16s on rank 0): every rank "
                    "must start from the same bytes", app->cfg.train.init_from, comm->rank, mine[2], theirs[2]);
    free(yaml), free(yaml0), free(opts0);
    buf_free(&ob);
    comm_stop_if_any(comm, bad, EXIT_BAD_INPUT, "to agree with rank 0 on the config, options and θ0");
}

void write_json(const App *app, const char *rel, json_t *j) {
    char path[1024];
    out_path(app, path, sizeof path, rel);
    if (json_write_file(path, j)) stop_abort(EXIT_BAD_INPUT);
}

Compare compare_vectors(const float *g, const float *ref, size_t n, double atol, double rtol) {
    Compare c = {(int64_t)n, 0, 0, -1};
    double worst_excess = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)g[i] - (double)ref[i]);
        double excess = err - (atol + rtol * fabs((double)ref[i]));
        if (!(excess <= 0)) c.violations++;  // NaN counts as a violation
        if (err > c.max_abs_err || isnan(err)) c.max_abs_err = isnan(err) ? INFINITY : err;
        if (excess > worst_excess || isnan(excess)) worst_excess = isnan(excess) ? INFINITY : excess, c.worst = (int64_t)i;
    }
    return c;
}

// Runs window 1 from θ0 with `mode` through the distributed path; returns the averaged
// gradient (P) in `grad`, the statistics in `ws` and, if `f`, the facts (whose per-rank
// counts go to `rank` (W)). Returns 0 or EXIT_EMPTY_WINDOW (on every rank).
int window_gradient_clipped(App *app, const Config *cfg, const Corpus *corpus, const float *theta0, Normalization mode,
                            int per_rank_clip, float *grad, WindowStats *ws, WindowFacts *f, Counts *rank) {
    Trainer t;
    comm_stop_if_any(&app->comm, trainer_init(&t, cfg, corpus, app->compute, &app->comm, theta0), EXIT_BAD_INPUT,
                     "setting up the window");
    if (per_rank_clip) t.clip_per_rank = 1, t.overlap = 0;
    int rc = trainer_window(&t, mode, 0, ws);
    if (!rc) {
        float *g = xmalloc((t.m.total + 1) * sizeof *g);
        trainer_gradient(&t, g);
        memcpy(grad, g, t.m.total * sizeof *g);
        free(g);
    }
    if (f) {
        f->W = t.W, f->A = t.A;
        f->global = ws->global;
        for (int r = 0; r < t.W; r++) rank[r] = count_exchange_rank(&t.counts, r);
        f->ns_max = comm_agree(&app->comm, ws->ns_max);
        f->ns_min = -comm_agree(&app->comm, ws->local.sequences ? -ws->ns_min : -(1 << 30));
    }
    ws->rank_counts = ws->rank_seqs = NULL;
    trainer_free(&t);
    return rc;
}

int window_gradient(App *app, const Config *cfg, const Corpus *corpus, const float *theta0, Normalization mode, float *grad,
                    WindowStats *ws, WindowFacts *f, Counts *rank) {
    return window_gradient_clipped(app, cfg, corpus, theta0, mode, 0, grad, ws, f, rank);
}

void build_info(char *out, size_t len) {
    char mpi[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(mpi, &n);
    mpi[strcspn(mpi, ",\n")] = 0;  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
    unsigned h5[3] = {0, 0, 0};
    H5get_libversion(&h5[0], &h5[1], &h5[2]);
    char cuda[600] = "CUDA backend: not built in";
#ifdef DDPTOK_CUDA
    // The module is named, not opened: NCCL's version once something has opened it.
    char module[512], nccl[32];
    int there = cuda_module_path(module, sizeof module);
    const CudaModule *cm = cuda_module_loaded();
    if (cm) {
        cm->nccl_version(nccl, sizeof nccl);
        snprintf(cuda, sizeof cuda, "CUDA backend: built in, NCCL %s, module %s", nccl, module);
    } else snprintf(cuda, sizeof cuda, "CUDA backend: built in, module %s%s", module, there ? ", opened on use" : " missing");
#endif
    // The sgemm kernel OpenBLAS picked at run time (OPENBLAS_CORETYPE overrides it): an
    // OpenBLAS older than the CPU falls back to its SSE3 kernel, ~3x slower on sgemm.
    const char *core = openblas_get_corename();
    int generic = (!strcasecmp(core, "prescott") || !strcasecmp(core, "core2") || !strcasecmp(core, "katmai")) &&
                  __builtin_cpu_supports("avx2");
    snprintf(out, len, "ddptok %s (%s); %s, HDF5 %u.%u.%u, libyaml %s, jansson %s, %s; BLAS kernel %s%s", DDPTOK_VERSION, cuda,
             mpi, h5[0], h5[1], h5[2], yaml_get_version_string(), jansson_version_str(), openblas_get_config(), core,
             generic ? " (a generic kernel on an AVX2 CPU: OPENBLAS_CORETYPE=Haswell or SkylakeX makes sgemm ~3x faster)"
                     : "");
}
