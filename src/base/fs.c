// fs.c — file-system helpers that never follow a planted link or block on a FIFO (see fs.h).
#include "base/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <stdint.h>
#include <unistd.h>

#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"

static char g_roots[2][1024];

void fs_roots_set(const char *outputs, const char *artifacts) {
    const char *r[2] = {outputs, artifacts};
    for (int i = 0; i < 2; i++) {
        snprintf(g_roots[i], sizeof g_roots[i], "%s", r[i] ? r[i] : "");
        for (size_t n = strlen(g_roots[i]); n > 1 && g_roots[i][n - 1] == '/';) g_roots[i][--n] = 0;
    }
}

// The length of the root `path` lies below (the root's own text), or 0.
static size_t below_root(const char *path) {
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(g_roots[i]);
        if (n && !strncmp(path, g_roots[i], n) && path[n] == '/') return n;
    }
    return 0;
}

// Each directory it creates is recorded as ddptok's (made.h); one that was there is not.
int mkdir_p(const char *path) {
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return error("%s: path too long", path);
    size_t root = below_root(buf);
    for (char *p = buf + root + 1; root && *p; p++) {  // below the user's directory: ddptok's, real ones only
        if (p[1] && p[1] != '/') continue;
        char keep = p[1];
        p[1] = 0;
        struct stat st;
        int there = lstat(buf, &st) == 0;
        if (there && !S_ISDIR(st.st_mode)) {
            error("%s: %s is there, where ddptok keeps a directory of its own: refused, left as it is (nothing is written "
                  "through it)", buf, what_is_there(st.st_mode));
            return -1;
        }
        p[1] = keep;
        if (!there) break;  // the rest is made below
    }
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

const char *what_is_there(unsigned mode) {
    return S_ISLNK(mode) ? "a symbolic link" : S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
           : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "something that is not a regular file";
}

int file_out_open(FileOut *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->fd = o->keep = -1;
    char dir[1100];
    if (snprintf(o->path, sizeof o->path, "%s", path) >= (int)sizeof o->path) return error("%s: path too long", path);
    dir_of(path, dir, sizeof dir);
    if (mkdir_p(dir)) return -1;
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%d", path, (int)getpid());
    o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (o->fd < 0 && errno == EEXIST)
        return error("%s: cannot write: %s already exists (a leftover or a planted file or link): refused, left as it is",
                     path, o->tmp);
    if (o->fd < 0) return error("%s: cannot write: %s", path, strerror(errno));
    o->keep = fcntl(o->fd, F_DUPFD_CLOEXEC, 0);
    if (o->keep < 0) {
        int e = errno;
        file_out_abort(o);
        return error("%s: cannot write: %s", path, strerror(e));
    }
    return 0;
}

FILE *file_out_stream(FileOut *o) {
    if (!o->f && o->fd >= 0) o->f = fdopen(o->fd, "w");
    return o->f;
}

void file_out_abort(FileOut *o) {
    if (o->f) fclose(o->f);
    else if (o->fd >= 0) close(o->fd);
    if (o->keep >= 0) close(o->keep);
    if (o->fd >= 0 || o->f) unlink(o->tmp);
    o->f = NULL, o->fd = o->keep = -1;
}

// Renames `tmp` to `path` (one directory) only over nothing or a regular file; 0, or -1 with
// `why`. Nothing there: RENAME_NOREPLACE. A regular file there: RENAME_EXCHANGE, then the old
// entry, now under `tmp`, is removed only when it is a regular file — a link, a device or a
// directory swapped in after the look goes back where it was, untouched. A file system with
// neither flag (EINVAL): the look (lstat), then rename, a window a swap can still hit.
int publish_over_regular(const char *tmp, const char *path, char *why, size_t whylen) {
    struct stat st;
    for (int tries = 0; tries < 16; tries++) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
        int plain = errno == EINVAL || errno == ENOSYS;
        if (!plain && errno != EEXIST) return snprintf(why, whylen, "%s", strerror(errno)), -1;
        if (lstat(path, &st) != 0) {
            if (errno == ENOENT) continue;  // gone meanwhile: try again
            return snprintf(why, whylen, "%s", strerror(errno)), -1;
        }
        if (!S_ISREG(st.st_mode)) return snprintf(why, whylen, "%s is there, not a regular file: refused, left as it is", what_is_there(st.st_mode)), -1;
        if (plain) return rename(tmp, path) == 0 ? 0 : (snprintf(why, whylen, "%s", strerror(errno)), -1);
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0) {
            if (errno == ENOENT) continue;
            if (errno == EINVAL || errno == ENOSYS) return rename(tmp, path) == 0 ? 0 : (snprintf(why, whylen, "%s", strerror(errno)), -1);
            return snprintf(why, whylen, "%s", strerror(errno)), -1;
        }
        if (lstat(tmp, &st) == 0 && S_ISREG(st.st_mode)) {  // the old file: its name goes, as rename would do
            if (unlink(tmp) != 0 && errno != ENOENT) warning("%s: the file it replaced is left as %s: %s", path, tmp, strerror(errno));
            return 0;
        }
        const char *what = what_is_there(st.st_mode);
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) != 0)
            return snprintf(why, whylen, "%s was swapped in while ddptok wrote, and now is %s (%s): move it back by hand", what, tmp,
                            strerror(errno)), -2;
        return snprintf(why, whylen, "%s was swapped in while ddptok wrote: refused, left as it is", what), -1;
    }
    return snprintf(why, whylen, "it keeps changing while ddptok writes it: refused"), -1;
}

int file_out_commit(FileOut *o) {
    char dir[1100], why[1600];
    int failed = 0, e = 0;
    if (o->f) {
        if (fflush(o->f) != 0 || ferror(o->f)) failed = 1, e = errno ? errno : EIO;
        if (!failed && fsync(o->fd) != 0) failed = 1, e = errno;
        if (fclose(o->f) != 0 && !failed) failed = 1, e = errno;
        o->f = NULL, o->fd = -1;
    } else {
        if (fsync(o->fd) != 0) failed = 1, e = errno;  // NFS and quotas report a full disk here
        if (close(o->fd) != 0 && !failed) failed = 1, e = errno;
        o->fd = -1;
    }
    if (failed) {
        unlink(o->tmp), close(o->keep), o->keep = -1;
        return error("%s: cannot write (fsync/close): %s", o->path, strerror(e));
    }
    int rc = publish_over_regular(o->tmp, o->path, why, sizeof why);
    if (rc == -1) unlink(o->tmp);
    if (rc) {
        close(o->keep), o->keep = -1;
        return error("%s: cannot write: %s", o->path, why);
    }
    made_note_fd(o->path, o->keep);  // this very file, whatever the name shows meanwhile
    close(o->keep), o->keep = -1;
    dir_of(o->path, dir, sizeof dir);
    return fsync_dir(dir);
}

int write_file_atomic(const char *path, const char *data, size_t len) {
    FileOut o;
    if (file_out_open(&o, path)) return -1;
    for (size_t done = 0; done < len;) {
        ssize_t w = write(o.fd, data + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            int e = errno;
            file_out_abort(&o);
            return error("%s: cannot write: %s", path, strerror(e));
        }
        done += (size_t)w;
    }
    return file_out_commit(&o);
}

int open_in_place(const char *path, int flags, int *created, char *why, size_t whylen) {
    *created = 0;
    int fd = open(path, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd >= 0) *created = 1;
    else if (errno != EEXIST) return snprintf(why, whylen, "%s", strerror(errno)), -1;
    else {
        struct stat before, st;
        if (lstat(path, &before) != 0) return snprintf(why, whylen, "%s", strerror(errno)), -1;
        if (!S_ISREG(before.st_mode)) return snprintf(why, whylen, "%s is there, not a regular file: refused, left as it is", what_is_there(before.st_mode)), -1;
        fd = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return snprintf(why, whylen, "%s", write_error(errno)), -1;
        const char *bad = fstat(fd, &st) != 0 ? strerror(errno)
                          : !S_ISREG(st.st_mode) || st.st_ino != before.st_ino || st.st_dev != before.st_dev ? "swapped while ddptok opened it: refused"
                                                                                                               : NULL;
        if (!bad && st.st_nlink != 1) {
            snprintf(why, whylen, "a file with %ju names (a hard link): refused, left as it is (ddptok rewrites in place only a file that has "
                     "no other name)", (uintmax_t)st.st_nlink);
            return close(fd), -1;
        }
        if (bad) return snprintf(why, whylen, "%s", bad), close(fd), -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? strerror(EISDIR) : S_ISFIFO(m) ? "a FIFO, not a regular file" : S_ISCHR(m) ? "a character device, not a regular file"
           : S_ISBLK(m) ? "a block device, not a regular file" : S_ISSOCK(m) ? "a socket, not a regular file" : "not a regular file";
}

// A descriptor of `path` for reading, only if it is a regular file (O_NONBLOCK: a FIFO
// never blocks the open; fstat on that descriptor); -1 with the reason in `why`.
static int open_regular(const char *path, struct stat *st, char *why, size_t whylen) {
    if (stat(path, st) == 0 && !S_ISREG(st->st_mode)) {  // a device is not even opened (its open may act: a tape rewinds)
        snprintf(why, whylen, "%s", file_kind(st->st_mode));
        return -1;
    }
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
