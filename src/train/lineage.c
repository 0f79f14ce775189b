// lineage.c — a lineage is the sequence of checkpoints one training run and its resumptions
// publish under one root (artifacts/checkpoints, or artifacts/continuous for the witness):
// its lock, where a run starts in it, and moving it aside (see lineage.h).
#include "train/lineage.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/made.h"
#include "base/report.h"
#include "store/checkpoint.h"
#include "store/rank_file.h"

// One training run per lineage (`root` = artifacts/checkpoints or artifacts/continuous) at
// a time: two — a requeued job whose first incarnation is still ending, a job submitted
// twice — would publish into each other's lineage. Rank 0 holds an fcntl lock on
// root/.lock for the whole run; the system releases it when the process ends, however it
// ends. A held lock is waited for DDPTOK_LOCK_WAIT seconds (default 30, at most half of
// --comm-timeout), then refused
// naming the holder; a file system without locks is used unprotected, with a warning.
int lineage_lock(const char *root, double comm_timeout) {
    static int fd = -1;  // kept open: closing it would release the lock
    char path[1100], holder[256] = "";
    snprintf(path, sizeof path, "%s/.lock", root);
    if (mkdir_p(root)) return -1;
    // Never through a link (its target would be overwritten with the holder's name), and a
    // regular file only (O_NONBLOCK: a FIFO cannot block the open).
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    int created = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) close(fd), fd = -1, errno = EINVAL;
    if (fd < 0) return error("%s: cannot open: %s", path, write_error(errno));
    if (created) made_note_fd(path, fd);
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
            say("train: WARNING: %s: no lock (%s): nothing stops a second run of this lineage\n", text_safe(path), strerror(errno));
            return 0;
        }
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = 0;
        holder[strcspn(holder, "\n")] = 0;
        if (now_seconds() - start >= wait)
            return error("%s: held by %s: another `ddptok train` is writing this lineage (wait for it to end, or use "
                         "another paths.artifacts)", path, holder[0] ? holder : "another process");
        if (tries == 0) say("train: %s is held by %s; waiting up to %g s\n", text_safe(path), holder[0] ? text_safe(holder) : "another process", wait);
        usleep(200 * 1000);
    }
    snprintf(holder, sizeof holder, "pid %d on %s\n", (int)getpid(), g_id.host);
    if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, holder, strlen(holder), 0);  // for a second run's message
    return 0;
}

// A lineage's checkpoints go aside, not away: into <root>.old-<UTC time>/ beside it, which
// is recorded as ddptok's (made.h: each step directory's own record moves with it, so clean
// removes what ddptok moved there and leaves anything else). Rank 0, under the lineage lock.
static int lineage_move_aside(const char *root, int count) {
    char aside[1200], stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&now));
    snprintf(aside, sizeof aside, "%s.old-%s", root, stamp);
    for (int k = 2; mkdir(aside, 0777) != 0; k++) {
        if (errno != EEXIST || k > 99) return error("%s: cannot create: %s", aside, strerror(errno));
        snprintf(aside, sizeof aside, "%s.old-%s-%d", root, stamp, k);
    }
    made_note(aside);
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
    if (!rc) say("train: --fresh: the %d checkpoint(s) of %s moved aside to %s/\n", count, text_safe(root), text_safe(aside));
    return rc;
}

// The train command line that continues (or starts over) this lineage, for hints: the
// user's own, with --continuous for the witness's lineage and `extra` after it.
static const char *train_hint(char *buf, size_t len, const LineageStart *how, const char *extra) {
    char opts[64];
    snprintf(opts, sizeof opts, "%s%s", how->continuous ? " --continuous" : "", extra);
    return hint_command(buf, len, "train", how->world_size, opts);
}

// A finished lineage (its newest checkpoint `dir` is step U): what to run next.
static const char *finished_hint(char *buf, size_t len, const LineageStart *how, const char *dir) {
    char eval[HINT_MAX], extra[HINT_MAX / 2] = "", fresh[HINT_MAX];
    if (how->continuous) hint_word(extra, sizeof extra, "--checkpoint"), hint_word(extra, sizeof extra, dir);
    hint_command(eval, sizeof eval, "evaluate", 0, extra);
    snprintf(buf, len, "evaluate its model: run `%s`; or start over, moving the checkpoints aside: run `%s`", eval,
             train_hint(fresh, sizeof fresh, how, " --fresh"));
    return buf;
}

// Whether the checkpoint `dir` is one this run can continue: of this config's trajectory and
// this data; 1, or 0 with why ("config differs at KEY: a there vs b here", "trained on other
// data ...") in `why`. An unreadable one is left to the resume's own checks (1).
static int resumable_here(const LineageStart *how, const char *dir, char *why, size_t len) {
    if (!how->cfg || !how->corpus) return 1;
    char path[1200], what[600];
    checkpoint_rank_path(path, sizeof path, dir, 0);
    CheckpointState s;
    error_capture(1);
    int unreadable = checkpoint_load(path, &s);
    error_capture(0);
    if (unreadable) return 1;
    int ok = 1;
    if (s.world_size != how->cfg->train.world_size && how->cfg->train.sampler != SAMPLER_GLOBAL)
        ok = 0, snprintf(why, len, "written by %d rank%s, this run has %d (the bands sampler resumes on its own world size only)",
                         s.world_size, s.world_size == 1 ? "" : "s", how->cfg->train.world_size);
    else if (!corpus_lock_accepts(how->corpus, how->cfg, s.lock))
        ok = 0, snprintf(why, len, "trained on other data: its data lock %.12s… is not this corpus's %.12s… (the corpus was "
                         "prepared or imported again since, or with other data keys)", s.lock, how->corpus->lock);
    else if (config_diff_training(&s.cfg, how->cfg, what, sizeof what))
        ok = 0, snprintf(why, len, "of another config: it differs at %s (checkpoint vs now)", what);
    checkpoint_state_free(&s);
    return ok;
}

// Where this run starts. No --resume: a fresh start, refused on a lineage that holds
// checkpoints (a second `train` would silently restart at step 1 beside the first run's
// later checkpoints) unless --fresh moves them aside first. --resume DIR: that checkpoint.
// --resume latest: the newest intact checkpoint (damaged newer ones skipped with a
// warning). --resume auto (requeued jobs): the same; a fresh start on an empty lineage;
// nothing at all when the lineage is finished (step U published). Collective.
int lineage_start(Comm *comm, const LineageStart *how_, const char *root, char *dir, size_t len) {
    const char *how = how_->resume;
    if (how && strcmp(how, "latest") != 0 && strcmp(how, "auto") != 0) {
        snprintf(dir, len, "%s", how);
        size_t n = strlen(dir);
        while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
        return 1;
    }
    if (how) {
        // The global sampler resumes from rank 0's file on any W (resume_from): that is the
        // file every rank must find intact.
        int file_rank = how_->global ? 0 : -1;
        int step = checkpoint_latest(comm, root, file_rank, dir, len), auto_ = !strcmp(how, "auto");
        if (step == -1 && auto_) return 0;
        char hint[HINT_MAX], next[2 * HINT_MAX + 128];
        if (step == -1)
            die(EXIT_BAD_INPUT, "--resume latest: no checkpoint under %s: start the run: run `%s`", root,
                train_hint(hint, sizeof hint, how_, ""));
        if (step == -2)
            die(EXIT_BAD_INPUT, "--resume %s: no intact checkpoint under %s (each one is damaged, see above): start over: "
                                "run `%s` (moves them aside)", how, root, train_hint(hint, sizeof hint, how_, " --fresh"));
        if (auto_ && step >= how_->updates) {
            say("train: %s is step %d of %d: this lineage is finished, nothing to do (--resume auto)\n", text_safe(dir), step,
                how_->updates);
            return -1;
        }
        // Every rank says the same line, so the job prints it once (was: one line per rank
        // file from the resume checks).
        if (step >= how_->updates)
            die(EXIT_BAD_INPUT, "--resume latest: %s is step %d of %d: this lineage is finished, nothing to resume (%s)",
                dir, step, how_->updates, finished_hint(next, sizeof next, how_, dir));
        return 1;
    }
    int *steps, n = checkpoint_list(comm, root, &steps), newest = n ? steps[0] : 0;
    free(steps);
    if (n && !how_->fresh) {
        char hint[HINT_MAX], fresh[HINT_MAX], next[2 * HINT_MAX + 128], dir_newest[1100];
        snprintf(dir_newest, sizeof dir_newest, "%s/step-%04d", root, newest);
        char why[900];
        // Every rank reads the same file: each says the same line, printed once.
        if (!resumable_here(how_, dir_newest, why, sizeof why))
            die(EXIT_BAD_INPUT, "%s already holds %d checkpoint(s) of another run: the newest, step-%04d, is %s: it cannot be "
                "continued here; start over: run `%s` (moves them aside), or keep them and give this run its own "
                "paths.artifacts (--set paths.artifacts=DIR)", root, n, newest, why, train_hint(fresh, sizeof fresh, how_, " --fresh"));
        if (newest >= how_->updates)
            die(EXIT_BAD_INPUT, "%s already holds %d checkpoint(s), the newest step-%04d: the run is finished (%s)", root, n,
                newest, finished_hint(next, sizeof next, how_, dir_newest));
        die(EXIT_BAD_INPUT, "%s already holds %d checkpoint(s), the newest step-%04d: continue it: run `%s`; or start over: "
                            "run `%s` (moves them aside)", root, n, newest, train_hint(hint, sizeof hint, how_, " --resume latest"),
            train_hint(fresh, sizeof fresh, how_, " --fresh"));
    }
    if (n) comm_stop_if_any(comm, comm->rank == 0 ? lineage_move_aside(root, n) : 0, EXIT_BAD_INPUT, "moving the lineage aside");
    return 0;
}
