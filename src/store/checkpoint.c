// checkpoint.c — the collective checkpoint protocol: publish a step directory of rank files
// atomically, list the published ones, find the newest intact one (see checkpoint.h).
#include "store/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"

// A directory ddptok replaces or empties (step-NNNN, step-NNNN.tmp) must be absent or a
// real directory: a symbolic link or anything else in its place is refused and left as it
// is (its target untouched). 0 or -1 (error printed).
static int absent_or_directory(const char *dir) {
    struct stat st;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? 0 : error("%s: %s", dir, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return error("%s: a symbolic link where ddptok keeps a checkpoint directory: refused, left as it is", dir);
    if (!S_ISDIR(st.st_mode)) return error("%s: not a directory: refused, left as it is", dir);
    return 0;
}

// A checkpoint's own files, as checkpoint_save writes them: rank-NNNN.h5, SHA256SUMS and the
// record, each possibly still under its temporary name (NAME.tmp.PID: a crashed write).
static int checkpoint_file_name(const char *name) {
    int n = 0, pid = 0;
    char tail[2];
    const char *rest = NULL;
    if (sscanf(name, "rank-%*4[0-9].h5%n", &n) == 0 && n == 12) rest = name + n;
    else if (!strncmp(name, CHECKPOINT_MANIFEST, strlen(CHECKPOINT_MANIFEST))) rest = name + strlen(CHECKPOINT_MANIFEST);
    else if (!strncmp(name, MADE_RECORD, strlen(MADE_RECORD))) rest = name + strlen(MADE_RECORD);
    return rest && (!*rest || (sscanf(rest, ".tmp.%d%1s", &pid, tail) == 1 && pid > 0));
}

// Removes a step directory ddptok replaces or re-creates (the checkpoint a new one of the same
// step replaced, a crashed write's step-NNNN.tmp, this write's own when it fails): its
// checkpoint files go (regular files under a checkpoint's names, whoever copied them there, and
// whatever its record says ddptok made), and the directory with them. Anything else in it — a
// user's file, a link, a FIFO, a directory, even under a checkpoint's name — is not ddptok's to
// remove: the directory is kept whole, renamed BASE.kept-UTC beside it, and said so. 0, or -1
// (error printed) when it could not be removed or moved aside.
static int retire_step_dir(const char *path, const char *base) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return errno == ENOENT ? 0 : error("%s: cannot open: %s", path, strerror(errno));
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        close(fd);
        return error("%s: cannot list: %s", path, strerror(errno));
    }
    char first[256] = "";
    int kept = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        struct stat st;
        int ours = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                   (checkpoint_file_name(e->d_name) || made_is_at(fd, e->d_name));
        if (ours && unlinkat(fd, e->d_name, 0) == 0) continue;
        if (!kept++) snprintf(first, sizeof first, "%s", e->d_name);
    }
    closedir(d);
    close(fd);
    if (!kept) return rmdir(path) == 0 || errno == ENOENT ? 0 : error("%s: cannot remove: %s", path, strerror(errno));
    char aside[1200], stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&now));
    for (int k = 1;; k++) {
        snprintf(aside, sizeof aside, "%s.kept-%s%s%.0d", base, stamp, k > 1 ? "-" : "", k > 1 ? k : 0);
        if (renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE) == 0) break;
        if (errno != EEXIST || k > 99) return error("%s: holds what ddptok did not write (%s), and cannot be moved aside: %s", path, text_safe(first), strerror(errno));
    }
    warning("%s held what ddptok did not write (%s%s): its checkpoint files removed, the rest kept in %s", base, text_safe(first),
            kept > 1 ? ", ..." : "", aside);
    return 0;
}

// Publishes the complete step directory `tmp` as `dir`: a rename when nothing is there
// (RENAME_NOREPLACE); over an earlier checkpoint of that step, an exchange, after which the old
// one — now at `tmp` — is removed only if it is a real directory: a link or anything else
// swapped in for `dir` after absent_or_directory looked goes back, untouched. 0 or -1 (error
// printed).
static int publish_directory(const char *tmp, const char *dir) {
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE) == 0) return 0;
    if (errno == EINVAL || errno == ENOSYS)  // a file system without the flags: look, then rename
        return absent_or_directory(dir) || (rename(tmp, dir) != 0 && error("%s: cannot publish checkpoint: %s", dir, strerror(errno)));
    if (errno != EEXIST) return error("%s: cannot publish checkpoint: %s", dir, strerror(errno));
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) != 0) return error("%s: cannot publish checkpoint: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(tmp, &st) != 0) return 0;  // what it replaced is gone already
    if (S_ISDIR(st.st_mode)) return retire_step_dir(tmp, dir), 0;  // the checkpoint it replaced
    const char *what = what_is_there(st.st_mode);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) != 0)
        return error("%s: published, but %s swapped in for it meanwhile is now %s: move it back by hand", dir, what, tmp), -2;
    return error("%s: %s was swapped in where ddptok keeps a checkpoint directory: refused, left as it is", dir, what);
}

int checkpoint_save(Comm *comm, const char *dir, const CheckpointState *s) {
    char tmp[1100], path[1200], parent[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    int rc = 0;
    if (comm->rank == 0) {  // leftovers of a crashed write go; tmp is then made afresh, by this process
        dir_of(dir, parent, sizeof parent);
        rc = absent_or_directory(tmp) || absent_or_directory(dir) || retire_step_dir(tmp, tmp) || mkdir_p(parent);
        if (!rc && mkdir(tmp, 0777) != 0) rc = error("%s: cannot create directory: %s", tmp, strerror(errno));
        if (!rc) made_note(tmp);  // its record, inside it, is published with it (made.h)
    }
    if (comm_agree(comm, rc ? 1 : 0)) return -1;
    checkpoint_rank_path(path, sizeof path, tmp, s->rank);
    char sum[65] = "";
    rc = rank_file_write(path, s, sum);
    if (comm_agree(comm, rc ? 1 : 0)) {
        if (comm->rank == 0) retire_step_dir(tmp, tmp);
        return -1;
    }
    // Rank 0 writes the manifest of every rank file's SHA-256 ...
    char *sums = comm->rank == 0 ? xcalloc((size_t)comm->world, 65) : NULL;
    comm_gather_str(comm, sum, sums, 65);
    if (comm->rank == 0) {
        Buf m = {0};
        for (int r = 0; r < comm->world; r++) buf_printf(&m, "%s  rank-%04d.h5\n", sums + (size_t)r * 65, r);
        // Every rank wrote into the same directory only if paths.artifacts is shared: checked
        // at the first checkpoint under this parent (W file look-ups on rank 0, ~0.1-1 ms each
        // on a parallel file system: docs/scaling.md), not at every one — whether the ranks
        // share it does not change during a run.
        static char checked[1100];
        int check = strcmp(checked, parent) != 0;
        for (int r = 0; check && r < comm->world && !rc; r++) {
            checkpoint_rank_path(path, sizeof path, tmp, r);
            if (access(path, R_OK) != 0)
                rc = error("%s: rank %d wrote it, but rank 0 cannot see it: paths.artifacts must be on a file system "
                           "that every rank shares", path, r);
        }
        if (check && !rc) snprintf(checked, sizeof checked, "%s", parent);
        snprintf(path, sizeof path, "%s/" CHECKPOINT_MANIFEST, tmp);
        if (!rc) rc = write_file_atomic(path, m.s, m.n);
        buf_free(&m);
        free(sums);
    }
    // ... and, every file complete, publishes the directory atomically.
    if (comm->rank == 0 && !rc) {
        if (fsync_dir(tmp)) rc = -1;
        else rc = publish_directory(tmp, dir);
        if (!rc) rc = fsync_dir(parent);
    }
    if (comm->rank == 0 && rc && rc != -2) retire_step_dir(tmp, tmp);  // nothing published, nothing left
    return comm_agree(comm, rc ? 1 : 0) ? -1 : 0;
}

int checkpoint_step_of(const char *name) {
    if (strncmp(name, "step-", 5) != 0 || name[5] < '0' || name[5] > '9') return -1;
    char *end, canon[32];
    errno = 0;
    long long step = strtoll(name + 5, &end, 10);
    if (*end || errno || step > INT_MAX) return -1;
    snprintf(canon, sizeof canon, "step-%04d", (int)step);
    return strcmp(canon, name) == 0 ? (int)step : -1;
}

static int step_desc(const void *a, const void *b) { return *(const int *)b - *(const int *)a; }

int checkpoint_list(Comm *comm, const char *root, int **steps) {
    int n = 0, cap = 16;
    int *list = xmalloc((size_t)cap * sizeof *list);
    DIR *d = comm->rank == 0 ? opendir(root) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int step = checkpoint_step_of(e->d_name);  // published (step-NNNN.tmp is an unpublished write)
        if (step < 0) continue;
        if (n == cap) {
            list = realloc(list, (size_t)(cap *= 2) * sizeof *list);
            ASSERT(list);
        }
        list[n++] = step;
    }
    if (d) closedir(d);
    qsort(list, (size_t)n, sizeof *list, step_desc);
    int64_t count = n;  // rank 0 lists (every rank must try the same candidates)
    comm_bcast(comm, &count, sizeof count, 0);
    if (comm->rank != 0) {
        list = realloc(list, ((size_t)count + 1) * sizeof *list);
        ASSERT(list);
    }
    if (count) comm_bcast(comm, list, (size_t)count * sizeof *list, 0);
    *steps = list;
    return (int)count;
}

int checkpoint_latest(Comm *comm, const char *root, int file_rank, char *out, size_t len) {
    int *steps, n = checkpoint_list(comm, root, &steps), found = -1;
    for (int i = 0; i < n && found < 0; i++) {
        char dir[1100], path[1200], why[1024];
        snprintf(dir, sizeof dir, "%s/step-%04d", root, steps[i]);
        checkpoint_rank_path(path, sizeof path, dir, file_rank >= 0 ? file_rank : comm->rank);
        CheckpointState s;
        error_capture(1);  // a damaged file is a warning here, not an error
        int bad = checkpoint_load(path, &s) != 0;
        if (!bad) {  // read from rank 0's file alone (the global sampler): every other rank file is intact too
            if (file_rank >= 0) bad = checkpoint_verify_share(dir, s.world_size, comm->rank, comm->world) != 0;
            checkpoint_state_free(&s);
        }
        snprintf(why, sizeof why, "%s", error_capture(0));
        // The lowest rank with a damaged file says why, in one line; all go to the next.
        int first_bad = comm_agree(comm, bad ? comm->world - comm->rank : 0);
        if (!first_bad) {
            snprintf(out, len, "%s", dir);
            found = i;
        } else if (comm->world - first_bad == comm->rank)
            warning("%s skipped (damaged): %s", dir, why);
    }
    int step = found < 0 ? (n ? -2 : -1) : steps[found];
    free(steps);
    return step;
}
