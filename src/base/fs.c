// fs.c — file-system helpers that never follow a planted link or block on a FIFO (see fs.h).
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"

// Each directory it creates is recorded as ddptok's (made.h); one that was there is not.
int mkdir_p(const char *path) {
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return error("%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) == 0) made_note(buf);
        else if (errno != EEXIST) return error("%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) == 0) made_note(buf);
    else if (errno != EEXIST) return error("%s: cannot create directory: %s", buf, strerror(errno));
    return 0;
}

int fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return error("%s: cannot open directory: %s", path, strerror(errno));
    int rc = fsync(fd);
    close(fd);
    return rc == 0 ? 0 : error("%s: fsync failed: %s", path, strerror(errno));
}

void dir_of(const char *path, char *dir, size_t len) {
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, len, ".");
}

int write_file_atomic(const char *path, const char *data, size_t len) {
    char tmp[1100], dir[1100];
    dir_of(path, dir, sizeof dir);
    if (mkdir_p(dir)) return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST)
        return error("%s: cannot write: %s already exists (a leftover or a planted file or link): refused, left as it is",
                     path, tmp);
    if (fd < 0) return error("%s: cannot write: %s", path, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, data + done, len - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            close(fd);
            unlink(tmp);
            return error("%s: cannot write: %s", path, strerror(errno));
        }
        done += (size_t)w;
    }
    int failed = fsync(fd) != 0, e = errno;  // NFS and quotas report a full disk here
    if (close(fd) != 0 && !failed) failed = 1, e = errno;
    if (failed) {
        unlink(tmp);
        return error("%s: cannot write (fsync/close): %s", path, strerror(e));
    }
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        return error("%s: cannot publish (rename from %s): %s", path, tmp, strerror(errno));
    }
    made_note(path);
    return fsync_dir(dir);
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? strerror(EISDIR) : S_ISFIFO(m) ? "a FIFO, not a regular file" : S_ISCHR(m) ? "a character device, not a regular file"
           : S_ISBLK(m) ? "a block device, not a regular file" : S_ISSOCK(m) ? "a socket, not a regular file" : "not a regular file";
}

// A descriptor of `path` for reading, only if it is a regular file (O_NONBLOCK: a FIFO
// never blocks the open; fstat on that descriptor); -1 with the reason in `why`.
static int open_regular(const char *path, struct stat *st, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return -1;
    }
    int stat_failed = fstat(fd, st) != 0;
    if (stat_failed || !S_ISREG(st->st_mode)) {
        snprintf(why, whylen, "%s", stat_failed ? strerror(errno) : file_kind(st->st_mode));
        close(fd);
        return -1;
    }
    return fd;
}

int open_regular_fd(const char *path, int64_t *size, char *why, size_t whylen) {
    struct stat st;
    int fd = open_regular(path, &st, why, whylen);
    if (fd >= 0 && size) *size = (int64_t)st.st_size;
    return fd;
}

FILE *fopen_regular(const char *path, char *why, size_t whylen) {
    struct stat st;
    int fd = open_regular(path, &st, why, whylen);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "r");
    if (fd >= 0 && !f) snprintf(why, whylen, "%s", strerror(errno)), close(fd);
    return f;
}

char *file_read_regular(const char *path, size_t max, size_t *len, char *why, size_t whylen) {
    struct stat st;
    int fd = open_regular(path, &st, why, whylen);
    if (fd < 0) return NULL;
    if ((uint64_t)st.st_size > max) {
        char a[32], b[32];
        format_bytes((uint64_t)st.st_size, a, sizeof a), format_bytes(max, b, sizeof b);
        snprintf(why, whylen, "too large (%s; at most %s)", a, b);
        close(fd);
        return NULL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = xmalloc(cap + 1);
    for (;;) {  // to EOF: the size may change (or be 0, as in /proc) while reading
        if (n == cap) {
            if (cap > max) {
                snprintf(why, whylen, "grew beyond %zu bytes while being read", max);
                free(buf), close(fd);
                return NULL;
            }
            buf = realloc(buf, (cap *= 2) + 1);
            ASSERT(buf);
        }
        ssize_t got = read(fd, buf + n, cap - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(why, whylen, "%s", strerror(errno));
            free(buf), close(fd);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

FILE *fopen_nofollow(const char *path, const char *mode) {
    int append = mode[0] == 'a', flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : 0);
    int fd = open(path, flags | O_EXCL, 0666), created = fd >= 0;
    if (fd < 0 && errno == EEXIST) fd = open(path, flags, 0666);
    if (fd < 0) return NULL;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : !append && ftruncate(fd, 0) != 0 ? errno : 0;
    if (e) {
        close(fd);
        errno = e;
        return NULL;
    }
    if (created || !append) made_note_fd(path, fd);  // its contents are ddptok's now
    flags = fcntl(fd, F_GETFL);
    if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    FILE *f = fdopen(fd, append ? "a" : "w");
    if (!f) close(fd);
    return f;
}

const char *write_error(int e) {
    return e == ELOOP ? "a symbolic link: refused (ddptok never writes through one)"
           : e == EINVAL ? "not a regular file: refused" : strerror(e);
}

// Empties the directory open as `fd` (closed here), `depth` levels down, never following a link.
static int remove_entries(int fd, const char *path, int depth) {
    if (depth > 32) {
        close(fd);
        return error("%s: cannot remove: more than 32 directory levels (not something ddptok wrote)", path);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return error("%s: cannot remove: %s", path, strerror(errno));
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (unlinkat(fd, e->d_name, 0) == 0) continue;
        if (errno != EISDIR && errno != EPERM) {
            rc = error("%s/%s: cannot remove: %s", path, e->d_name, strerror(errno));
            continue;
        }
        int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        char sp[1200];
        snprintf(sp, sizeof sp, "%s/%s", path, e->d_name);
        if (sub < 0) rc = error("%s: cannot remove: %s", sp, strerror(errno));
        else if (remove_entries(sub, sp, depth + 1) == 0 && unlinkat(fd, e->d_name, AT_REMOVEDIR) != 0)
            rc = error("%s: cannot remove: %s", sp, strerror(errno));
    }
    closedir(d);
    return rc;
}

int remove_tree(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : error("%s: cannot remove: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))  // a file or a link: the name goes, a link's target stays
        return unlink(path) == 0 ? 0 : error("%s: cannot remove: %s", path, strerror(errno));
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return error("%s: cannot remove: %s", path, strerror(errno));
    if (remove_entries(fd, path, 0)) return -1;
    return rmdir(path) == 0 ? 0 : error("%s: cannot remove: %s", path, strerror(errno));
}
