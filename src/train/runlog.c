// runlog.c — a run's own log files, never appended to or overwritten (see runlog.h).
#include "train/runlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/made.h"
#include "base/report.h"

int runlog_set_aside(const char *path, char *aside, size_t len) {
    if (aside && len) aside[0] = 0;
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : error("%s: cannot read: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return error("%s: cannot write: %s", path, S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    // A log that a run is writing now (it holds a lock on it: runlog_create) is never moved:
    // another train with the same paths.outputs (its own paths.artifacts, or another
    // config's) moved a live JSONL and rank logs aside under their writer.
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        int live = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
        close(fd);
        if (live)
            return error("%s: a run is writing this log now (another train with this paths.outputs): its logs are never moved; "
                         "give this run its own --set paths.outputs=DIR, or wait for that one to end", path);
    }
    char stamp[32], to[1300];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&st.st_mtime));
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    int stem = dot && (!slash || dot > slash) ? (int)(dot - path) : (int)strlen(path);
    int made = made_is(path);  // the earlier log keeps its record under its new name
    for (int k = 1;; k++) {
        char n[16] = "";
        if (k > 1) snprintf(n, sizeof n, "-%d", k);
        snprintf(to, sizeof to, "%.*s.%s%s%s", stem, path, stamp, n, path + stem);
        if (renameat2(AT_FDCWD, path, AT_FDCWD, to, RENAME_NOREPLACE) == 0) {
            if (made) made_note(to);
            if (aside && len) snprintf(aside, len, "%s", to);
            return 0;
        }
        if (errno != EEXIST || k > 99) return error("%s: cannot move the earlier run's log aside to %s: %s", path, to, strerror(errno));
    }
}

FILE *runlog_create(const char *path) {
    char dir[1200];
    dir_of(path, dir, sizeof dir);
    if (mkdir_p(dir)) return NULL;
    if (runlog_set_aside(path, NULL, 0)) return NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) made_note_fd(path, fd);
    if (fd >= 0) (void)flock(fd, LOCK_EX | LOCK_NB);  // held while the run writes (runlog_set_aside); goes with the process
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) error("%s: cannot write: %s", path, strerror(errno));
    return f;
}

int runlog_check(FILE *f, const char *path) {
    if (!f) return 0;
    if (fflush(f) == 0 && !ferror(f)) return 0;
    return error("%s: cannot write: %s", path, errno ? strerror(errno) : "write error");
}
