// cmd_train.c — `train`: SGD updates, checkpoints, exact resume, lineages (SPEC §7).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "app.h"
#include "checkpoint.h"
#include "common.h"
#include "corpus.h"
#include "h5io.h"
#include "lifecycle.h"
#include "progress.h"
#include "trainer.h"

typedef struct {
    int continuous;      // --continuous
    const char *resume;  // --resume DIR|latest|auto
    int fresh;           // --fresh: move the lineage's checkpoints aside, start at step 1
} TrainOptions;

static void train_option(void *opts, const char *name, const char *value) {
    TrainOptions *o = opts;
    if (!strcmp(name, "--continuous")) o->continuous = 1;
    else if (!strcmp(name, "--resume")) o->resume = value;
    else o->fresh = 1;
    if (o->fresh && o->resume) die(EXIT_BAD_INPUT, "train: --fresh (start over) and --resume exclude each other");
}

static const TrainOptions *train_options(const App *app) { return app->opts; }

// One training run per lineage (`root` = artifacts/checkpoints or artifacts/continuous) at
// a time: two — a requeued job whose first incarnation is still ending, a job submitted
// twice — would publish into each other's lineage. Rank 0 holds an fcntl lock on
// root/.lock for the whole run; the system releases it when the process ends, however it
// ends. A held lock is waited for DDPTOK_LOCK_WAIT seconds (default 30, at most half of
// --comm-timeout), then refused
// naming the holder; a file system without locks is used unprotected, with a warning.
static int lock_lineage(const char *root, double comm_timeout) {
    static int fd = -1;  // kept open: closing it would release the lock
    char path[1100], holder[256] = "";
    snprintf(path, sizeof path, "%s/.lock", root);
    if (mkdir_p(root)) return -1;
    // Never through a link (its target would be overwritten with the holder's name), and a
    // regular file only (O_NONBLOCK: a FIFO cannot block the open).
    fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) close(fd), fd = -1, errno = EINVAL;
    if (fd < 0) return error("%s: cannot open: %s", path, write_error(errno));
    // The other ranks wait for this one in the next agreement, against --comm-timeout: a
    // longer wait here would end them with exit 4 instead of the holder's name.
    const char *w = getenv("DDPTOK_LOCK_WAIT");
    char *end = NULL;
    double wait = w ? strtod(w, &end) : 30, start = now_seconds();
    if (w && (end == w || *end || !(wait >= 0 && wait <= 1e6)))
        return error("DDPTOK_LOCK_WAIT=%s: expected a number of seconds in [0, 1e6]", w);
    if (wait > comm_timeout / 2) wait = comm_timeout / 2;
    for (int tries = 0;; tries++) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        if (fcntl(fd, F_SETLK, &fl) == 0) break;
        if (errno != EACCES && errno != EAGAIN) {
            say("train: WARNING: %s: no lock (%s): nothing stops a second run of this lineage\n", path, strerror(errno));
            return 0;
        }
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = 0;
        holder[strcspn(holder, "\n")] = 0;
        if (now_seconds() - start >= wait)
            return error("%s: held by %s: another `ddptok train` is writing this lineage (wait for it to end, or use "
                         "another paths.artifacts)", path, holder[0] ? holder : "another process");
        if (tries == 0) say("train: %s is held by %s; waiting up to %g s\n", path, holder[0] ? holder : "another process", wait);
        usleep(200 * 1000);
    }
    snprintf(holder, sizeof holder, "pid %d on %s\n", (int)getpid(), g_id.host);
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, holder, strlen(holder), 0);  // for a second run's message
    return 0;
}

static void trainer_to_state(const Trainer *t, const App *app, const char *lock, CheckpointState *s) {
    memset(s, 0, sizeof *s);
    s->step = t->step, s->world_size = t->W, s->rank = t->rank, s->A = t->sampler.A, s->B = t->sampler.B;
    s->config_yaml = config_to_yaml(&app->cfg);
    snprintf(s->lock, sizeof s->lock, "%s", lock);
    s->m = t->m;
    s->theta = xmalloc(t->m.total * sizeof(float));
    t->ops->get_params(t->cc, s->theta);
    optimizer_snapshot(t->opt, &s->opt);
    s->history = t->history;  // borrowed
    s->sampler_rng = t->sampler.rng;
    s->dropout_rng = t->dropout;
}

// A non-finite loss or gradient (trainer_update): every rank is here together; rank 0
// names the step and the rank whose own loss sum is not finite, and the run stops (exit 1).
static void stop_diverged(App *app, const WindowStats *ws) {
    int from = comm_agree(&app->comm, isfinite(ws->S_r) ? 0 : app->comm.rank + 1);  // the highest such rank, + 1
    char where[64] = "after the gradient average (every rank's own loss sum is finite)";
    if (from) snprintf(where, sizeof where, "from rank %d (its loss sum is %g)", from - 1, ws->S_r);
    if (app->comm.rank == 0)
        error("step %d: non-finite %s %s: the run diverged (train.optimizer.lr = %g too high?); nothing of this step is "
              "applied or published", ws->step, isfinite(ws->loss) ? "gradient" : "loss", where, app->cfg.train.lr);
    stop(EXIT_CHECK_FAILED);
}

static void save_checkpoint(App *app, Trainer *t, const char *root, const char *lock) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/step-%04d", root, t->step);  // checkpoint_save creates it
    CheckpointState s;
    trainer_to_state(t, app, lock, &s);
    // Nothing non-finite is published: an update can overflow the parameters even when
    // the window's loss and gradient were finite. Replicas are identical: all agree.
    int finite = all_finite(s.theta, s.m.total);
    for (int i = 0; i < optimizers[s.opt.kind].n_states; i++) finite = finite && all_finite(s.opt.state[i], s.m.total);
    if (!finite) {
        if (app->comm.rank == 0)
            error("step %d: the parameters after the update are not finite: the run diverged (train.optimizer.lr = %g "
                  "too high?); %s not published", t->step, app->cfg.train.lr, dir);
        stop(EXIT_CHECK_FAILED);
    }
    int rc = checkpoint_save(&app->comm, dir, &s);
    s.history = NULL;  // borrowed from the trainer
    checkpoint_state_free(&s);
    if (rc) {  // the ranks that failed have said why; rank 0 says what it means
        if (app->comm.rank == 0) error("step %d: checkpoint %s not written; nothing was published", t->step, dir);
        stop(EXIT_BAD_INPUT);
    }
    say("checkpoint: %s (%d rank files)\n", dir, t->W);
}

// Loads this rank's file of `dir` into the trainer after checking that it belongs to this
// run. Every rank checks its own file; all agree before anyone goes on. Under the global
// sampler every rank loads rank 0's file: model, optimizer, the global stream and the
// windows drawn are the same in every rank file, and nothing in them depends on W, so the
// checkpoint resumes on any world size (elastic resume; README "Elastic resume").
static void resume_from(App *app, Trainer *t, const char *dir, const char *lock) {
    char path[1200], why[2600] = "";
    int elastic = t->global;
    checkpoint_rank_path(path, sizeof path, dir, elastic ? 0 : t->rank);
    CheckpointState s;
    int bad = checkpoint_load(path, &s) != 0;
    if (!bad) {
        Config stored;
        char err[512], what[512];
        int stored_ok = config_from_yaml(&stored, s.config_yaml, path, err, sizeof err) == 0;
        int stored_global = stored_ok && stored.train.sampler == SAMPLER_GLOBAL;
        if (s.world_size != t->W && !(elastic && stored_global))
            snprintf(why, sizeof why, "%s: written by %d ranks, this run has %d: the %s sampler cannot re-partition its "
                     "windows (each rank draws its own); only train.sampler: global resumes on another world size",
                     path, s.world_size, t->W, "bands");
        else if (s.rank != (elastic ? 0 : t->rank)) snprintf(why, sizeof why, "%s: holds rank %d, expected %d", path, s.rank, elastic ? 0 : t->rank);
        else if (strcmp(s.lock, lock) != 0)
            snprintf(why, sizeof why, "%s: data lock %.12s… differs from the current data's %.12s…", path, s.lock, lock);
        else if (!stored_ok)
            snprintf(why, sizeof why, "%s: stored config unreadable: %s", path, err);
        else if (config_diff_training(&stored, &app->cfg, what, sizeof what))
            snprintf(why, sizeof why, "%s: config differs (checkpoint vs now) at %s", path, what);
        else if (s.step >= app->cfg.train.updates)
            snprintf(why, sizeof why, "%s: already at step %d of %d updates: nothing to resume", path, s.step, app->cfg.train.updates);
        if (why[0]) error("%s", why), bad = 1;
    }
    char what[1200];
    snprintf(what, sizeof what, "resuming from %s", dir);
    comm_stop_if_any(&app->comm, bad, EXIT_BAD_INPUT, what);
    // Negative controls for the exact-resume test: DDPTOK_TEST_RESUME_SKIP names one part
    // of the state not to restore (rng, sampler, or an optimizer state tensor: momentum,
    // exp_avg, exp_avg_sq); the result must then differ.
    const char *skip = getenv("DDPTOK_TEST_RESUME_SKIP");
    skip = skip ? skip : "";
    t->step = s.step;
    t->ops->set_params(t->cc, s.theta);
    optimizer_restore(t->opt, &s.opt, skip);
    memcpy(t->history, s.history, (size_t)s.step * t->sampler.A * t->sampler.B * sizeof *t->history);
    if (strcmp(skip, "sampler") != 0) t->sampler.rng = s.sampler_rng;
    if (strcmp(skip, "rng") != 0) t->dropout = s.dropout_rng;
    if (skip[0]) say("train: TEST HOOK: not restoring '%s' on resume (DDPTOK_TEST_RESUME_SKIP)\n", skip);
    checkpoint_state_free(&s);
}

// ---------------------------------------------------------------------------------------
// The lineage policy (README "Requeue and lineages")

// A lineage's checkpoints go aside, not away: into <root>.old-<UTC time>/ beside it.
// Rank 0, under the lineage lock.
static int lineage_move_aside(const char *root, int count) {
    char aside[1200], stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&now));
    snprintf(aside, sizeof aside, "%s.old-%s", root, stamp);
    for (int k = 2; mkdir(aside, 0777) != 0; k++) {
        if (errno != EEXIST || k > 99) return error("%s: cannot create: %s", aside, strerror(errno));
        snprintf(aside, sizeof aside, "%s.old-%s-%d", root, stamp, k);
    }
    DIR *d = opendir(root);
    if (!d) return error("%s: cannot list: %s", root, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        if (strncmp(e->d_name, "step-", 5) != 0) continue;  // step-NNNN and step-NNNN.tmp
        char from[1600], to[1600];
        snprintf(from, sizeof from, "%s/%s", root, e->d_name);
        snprintf(to, sizeof to, "%s/%s", aside, e->d_name);
        if (rename(from, to) != 0) rc = error("%s: cannot move aside to %s: %s", from, aside, strerror(errno));
    }
    closedir(d);
    if (!rc) rc = fsync_dir(root) || fsync_dir(aside);
    if (!rc) say("train: --fresh: the %d checkpoint(s) of %s moved aside to %s/\n", count, root, aside);
    return rc;
}

// Where this run starts. No --resume: a fresh start, refused on a lineage that holds
// checkpoints (a second `train` would silently restart at step 1 beside the first run's
// later checkpoints) unless --fresh moves them aside first. --resume DIR: that checkpoint.
// --resume latest: the newest intact checkpoint (damaged newer ones skipped with a
// warning). --resume auto (requeued jobs): the same; a fresh start on an empty lineage;
// nothing at all when the lineage is finished (step U published). Collective.
// Returns 1 (resume from `dir`), 0 (fresh start) or -1 (finished: nothing to do).
static int choose_start(App *app, const char *root, char *dir, size_t len) {
    Comm *comm = &app->comm;
    const char *how = train_options(app)->resume;
    if (how && strcmp(how, "latest") != 0 && strcmp(how, "auto") != 0) {
        snprintf(dir, len, "%s", how);
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
        return 1;
    }
    if (how) {
        // The global sampler resumes from rank 0's file on any W (resume_from): that is the
        // file every rank must find intact.
        int file_rank = app->cfg.train.sampler == SAMPLER_GLOBAL ? 0 : -1;
        int step = checkpoint_latest(comm, root, file_rank, dir, len), auto_ = !strcmp(how, "auto");
        if (step == -1 && auto_) return 0;
        if (step == -1) die(EXIT_BAD_INPUT, "--resume latest: no checkpoint under %s", root);
        if (step == -2)
            die(EXIT_BAD_INPUT, "--resume %s: no intact checkpoint under %s (each one is damaged, see above): start over "
                                "with --fresh (moves them aside)", how, root);
        if (auto_ && step >= app->cfg.train.updates) {
            say("train: %s is step %d of %d: this lineage is finished, nothing to do (--resume auto)\n", dir, step,
                app->cfg.train.updates);
            return -1;
        }
        return 1;
    }
    int *steps, n = checkpoint_list(comm, root, &steps), newest = n ? steps[0] : 0;
    free(steps);
    if (n && !train_options(app)->fresh)
        die(EXIT_BAD_INPUT, "%s already holds %d checkpoint(s), the newest step-%04d: continue it with --resume latest, or "
                            "start over with --fresh (moves them aside)", root, n, newest);
    if (n) comm_stop_if_any(comm, comm->rank == 0 ? lineage_move_aside(root, n) : 0, EXIT_BAD_INPUT, "moving the lineage aside");
    return 0;
}

// Logs are per run, never appended to or overwritten: a file an earlier run left is first
// renamed with the UTC time of its last write (interrupted.jsonl ->
// interrupted.20261130T064500Z.jsonl), then the run creates its own (O_EXCL|O_NOFOLLOW).
static FILE *log_create(const char *path) {
    char dir[1200];
    dir_of(path, dir, sizeof dir);
    if (mkdir_p(dir)) return NULL;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            error("%s: cannot write: %s", path, S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
            return NULL;
        }
        char stamp[32], aside[1300];
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&st.st_mtime));
        const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
        int stem = dot && (!slash || dot > slash) ? (int)(dot - path) : (int)strlen(path);
        for (int k = 1;; k++) {
            char n[16] = "";
            if (k > 1) snprintf(n, sizeof n, "-%d", k);
            snprintf(aside, sizeof aside, "%.*s.%s%s%s", stem, path, stamp, n, path + stem);
            if (renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE) == 0) break;
            if (errno != EEXIST || k > 99) {
                error("%s: cannot move the earlier run's log aside to %s: %s", path, aside, strerror(errno));
                return NULL;
            }
        }
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) error("%s: cannot write: %s", path, strerror(errno));
    return f;
}

// 0, or -1 with one line when a log line did not reach the file (a full disk).
static int log_check(FILE *f, const char *path) {
    if (!f) return 0;
    if (fflush(f) == 0 && !ferror(f)) return 0;
    return error("%s: cannot write: %s", path, errno ? strerror(errno) : "write error");
}

static int train_run(App *app) {
    const Config *cfg = &app->cfg;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    ModelShape m;
    float *theta0 = model_initial(cfg, &m);
    Trainer t;
    comm_stop_if_any(&app->comm, trainer_init(&t, cfg, &corpus, app->compute, &app->comm, theta0), EXIT_BAD_INPUT,
                     "setting up training");
    free(theta0);

    // The continuous run is the witness: its checkpoints live apart from the main lineage.
    char root[1024], dir[1100];
    art_path(app, root, sizeof root, train_options(app)->continuous ? "continuous" : "checkpoints");
    comm_stop_if_any(&app->comm, app->comm.rank == 0 ? lock_lineage(root, app->comm.timeout) : 0, EXIT_BAD_INPUT, "locking the lineage");
    int resuming = choose_start(app, root, dir, sizeof dir);
    if (resuming < 0) {  // --resume auto on a finished lineage
        trainer_free(&t);
        corpus_free(&corpus);
        return 0;
    }
    if (resuming) resume_from(app, &t, dir, corpus.lock);
    const char *run = train_options(app)->continuous ? "continuous" : resuming ? "resumed" : "interrupted";  // names its logs
    int stop_at = train_options(app)->continuous || resuming || cfg->train.interrupt_at == 0 ? cfg->train.updates : cfg->train.interrupt_at;
    say("train (%s): %s backend, %s comm, W = %d, steps %d..%d of %d, %s unit, %s\n", run, app->compute->name,
        app->comm.ops->name, t.W, t.step + 1, stop_at, cfg->train.updates, loss_unit_names[cfg->train.loss_unit],
        normalization_names[cfg->train.normalization]);
    if (cfg->train.normalization != loss_units[cfg->train.loss_unit].product)
        say("train: WARNING: train.normalization %s is a negative control for the %s unit (its product is %s)\n",
            normalization_names[cfg->train.normalization], loss_unit_names[cfg->train.loss_unit],
            normalization_names[loss_units[cfg->train.loss_unit].product]);

    // Logs: one JSON line per update (rank 0), one line per window per rank; per run.
    char jsonl_path[1200], log_path[1200], rel[256];
    FILE *jsonl = NULL, *log = NULL;
    snprintf(rel, sizeof rel, "train/%s.jsonl", run);
    out_path(app, jsonl_path, sizeof jsonl_path, rel);
    snprintf(rel, sizeof rel, "logs/%s/rank-%d.log", run, t.rank);
    out_path(app, log_path, sizeof log_path, rel);
    int bad = app->comm.rank == 0 && !(jsonl = log_create(jsonl_path));
    if (!bad && !(log = log_create(log_path))) bad = 1;
    comm_stop_if_any(&app->comm, bad, EXIT_BAD_INPUT, "opening its training log");

    int rc = 0, log_bad = 0;
    TrainProgress progress;
    train_progress_init(&progress, t.step, stop_at, cfg->train.updates, cfg->train.log_every);
    while (t.step < stop_at) {
        WindowStats ws;
        int wrc = trainer_update(&t, stop_requested() || log_bad, &ws);
        if (wrc == EXIT_EMPTY_WINDOW)
            die(EXIT_EMPTY_WINDOW, "step %d: no supervised position in the window on any rank (N = 0); every rank stops "
                                   "(nothing applied, nothing written for this step)", ws.step);
        if (wrc == EXIT_CHECK_FAILED) stop_diverged(app, &ws);
        char when[40];
        utc_timestamp(when, sizeof when);
        fprintf(log, "time=%s run=%s rank=%d step=%d N_r=%lld S_r=%.9g N=%lld loss=%.9g seconds=%.6f\n", when, run, t.rank,
                ws.step, (long long)ws.local.tokens, ws.S_r, (long long)ws.global.tokens, ws.loss, ws.seconds);
        train_progress_step(&progress, &ws, t.W, jsonl);
        // A line that did not reach the disk is not ignored: the rank asks to stop at the
        // next window boundary (through the count all-reduce), then every rank stops (exit 2).
        if (!log_bad) log_bad = log_check(log, log_path) || log_check(jsonl, jsonl_path);
        if (ws.stop_requested) {
            comm_stop_if_any(&app->comm, log_bad, EXIT_BAD_INPUT, "writing its training log");
            say("train: stop requested (SIGUSR1) — checkpointing at step %d and exiting with %d (resume with --resume latest|auto)\n",
                t.step, EXIT_REQUEUE);
            save_checkpoint(app, &t, root, corpus.lock);
            rc = EXIT_REQUEUE;
            break;
        }
        if (t.step == stop_at || (cfg->train.checkpoint_every && t.step % cfg->train.checkpoint_every == 0))
            save_checkpoint(app, &t, root, corpus.lock);
    }
    if (jsonl && fclose(jsonl) != 0 && !log_bad) log_bad = error("%s: cannot write: %s", jsonl_path, strerror(errno));
    if (fclose(log) != 0 && !log_bad) log_bad = error("%s: cannot write: %s", log_path, strerror(errno));
    comm_stop_if_any(&app->comm, log_bad, EXIT_BAD_INPUT, "writing its training log");
    if (!rc) say("train (%s): done at step %d%s\n", run, t.step, t.step < cfg->train.updates ? " (interrupted as configured)" : "");
    train_progress_summary(&progress, run);
    trainer_free(&t);
    corpus_free(&corpus);
    return rc;
}

const Command cmd_train = {
    .name = "train",
    .run = train_run,
    .distributed = 1,
    .summary = "SGD updates; stops at interrupt_at unless --continuous or --resume (auto: latest, a fresh start, or nothing when "
               "finished); refuses a lineage that has checkpoints unless --resume, or --fresh (moves them aside)",
    .usage = "[--continuous] [--resume DIR|latest|auto | --fresh]",
    .options = (const CommandOption[]){{"--continuous", 0}, {"--resume", 1}, {"--fresh", 0}, {NULL, 0}},
    .opts_size = sizeof(TrainOptions),
    .parse_option = train_option,
};
