// made.c — the record of what ddptok made (see made.h).
#include "base/made.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"

#define RECORD_HEADER "# ddptok made these (one line each: kind, inode, birth time, [a file's size, mtime, ctime,] name); `ddptok clean` removes only what is listed here, unchanged\n"
#define RECORD_MAX ((size_t)64 << 20)  // a record larger than this is not ddptok's: nothing in it counts

typedef struct {
    char kind;       // 'd' directory, 'f' regular file, '?' anything else (never recorded)
    uint64_t ino;
    int64_t btime;   // ns since the epoch; 0: the file system keeps none
    // A file's content stamp: its size, modification and change times (ns) when ddptok had
    // written it. A write in place keeps the inode and its birth time but moves both times
    // (a program can set the mtime back — `cp -a`, `touch -d` — but not the ctime). A line
    // of an older ddptok has none (stamped 0): it proves nothing about the content.
    int stamped;
    uint64_t size;
    int64_t mtime, ctime;
} MadeId;

#define STATX_MADE (STATX_TYPE | STATX_INO | STATX_BTIME | STATX_SIZE | STATX_MTIME | STATX_CTIME)

static int64_t ns_of(struct statx_timestamp t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

static void id_from_statx(const struct statx *sx, MadeId *id) {
    memset(id, 0, sizeof *id);
    id->kind = S_ISDIR(sx->stx_mode) ? 'd' : S_ISREG(sx->stx_mode) ? 'f' : '?';
    id->ino = sx->stx_ino;
    id->btime = sx->stx_mask & STATX_BTIME ? ns_of(sx->stx_btime) : 0;
    unsigned stamp = STATX_SIZE | STATX_MTIME | STATX_CTIME;
    if (id->kind == 'f' && (sx->stx_mask & stamp) == stamp)
        id->stamped = 1, id->size = sx->stx_size, id->mtime = ns_of(sx->stx_mtime), id->ctime = ns_of(sx->stx_ctime);
}

// The identity of `path` itself (a link is not followed: its kind is '?'). 0 or -1 (errno).
static int id_of_path(const char *path, MadeId *id) {
    struct statx sx;
    if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_MADE, &sx) != 0) return -1;
    id_from_statx(&sx, id);
    return 0;
}

static int id_of_fd(int fd, MadeId *id) {
    struct statx sx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_MADE, &sx) != 0) return -1;
    id_from_statx(&sx, id);
    return 0;
}

// What a record line says of the entry there now (made.h MadeVerdict). The same inode, born
// at the same time: an inode number alone proves nothing (a file system reuses a freed one at
// once: ext4 gave a user's file, written where ddptok's had been removed, the same number), so
// where either side has no birth time (a file system that keeps none: ext4 with 128-byte
// inodes, NFS) nothing is proven. A file must also hold what ddptok wrote: its content stamp
// unchanged.
static MadeVerdict verdict_of(const MadeId *line, const MadeId *now) {
    if (line->kind != now->kind || line->ino != now->ino) return MADE_NOT;
    if (!line->btime || !now->btime) return MADE_UNPROVEN;
    if (line->btime != now->btime) return MADE_NOT;
    if (now->kind != 'f') return MADE_YES;
    if (!line->stamped || !now->stamped) return MADE_UNSTAMPED;
    return line->size == now->size && line->mtime == now->mtime && line->ctime == now->ctime ? MADE_YES : MADE_CHANGED;
}

// Where the record of `path` lives and the name it has there: a directory's own record and
// ".", or its directory's record and its last component.
static void record_of(const char *path, char kind, char *rec, size_t len, const char **name) {
    if (kind == 'd') {
        snprintf(rec, len, "%s/" MADE_RECORD, path);
        *name = ".";
        return;
    }
    char dir[1100];
    dir_of(path, dir, sizeof dir);
    snprintf(rec, len, "%s/" MADE_RECORD, dir);
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
}

// A name in a record: bytes that would break the line (spaces, controls) and '%' as %XX.
static void name_escape(Buf *b, const char *name) {
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p <= ' ' || *p == '%' || *p >= 0x7f) buf_printf(b, "%%%02X", *p);
        else buf_printf(b, "%c", *p);
}

static void name_unescape(char *s) {
    char *out = s;
    for (char *p = s; *p; p++) {
        unsigned v;
        if (*p == '%' && sscanf(p + 1, "%2x", &v) == 1 && p[1] && p[2]) *out++ = (char)v, p += 2;
        else *out++ = *p;
    }
    *out = 0;
}

static void warn_why(const char *rec, const char *why) {
    static int warned;
    if (!warned) warning("%s: cannot record what ddptok made here (%s): `ddptok clean` will leave it", rec, why);
    warned = 1;
}
static void warn_once(const char *rec, int e) { warn_why(rec, strerror(e)); }

// Appends one line to the record `rec` (created with its header line if absent), in one write:
// only to a regular file with no other name (a hard link planted there would get ddptok's lines
// appended to the user's file), never through a link (fs.h open_in_place).
static int record_append(const char *rec, const char *line) {
    char why[160];
    int created = 0, fd = open_in_place(rec, O_WRONLY | O_APPEND, &created, why, sizeof why);
    if (fd < 0) return warn_why(rec, why), -1;
    Buf b = {0};
    buf_printf(&b, "%s%s", created ? RECORD_HEADER : "", line);
    ssize_t n = (ssize_t)b.n, w = write(fd, b.s, b.n);
    int e = errno;
    buf_free(&b);
    if (close(fd) != 0 && w == n) w = -1, e = errno;
    if (w != n) return warn_once(rec, w < 0 ? e : EIO), -1;
    return 0;
}

// One record line: "d INO BTIME ." or "f INO BTIME SIZE MTIME CTIME NAME" (an older ddptok's
// file line: "f INO BTIME NAME").
static void line_print(Buf *b, const MadeId *id, const char *name) {
    buf_printf(b, "%c %" PRIu64 " %" PRId64 " ", id->kind, id->ino, id->btime);
    if (id->kind == 'f' && id->stamped) buf_printf(b, "%" PRIu64 " %" PRId64 " %" PRId64 " ", id->size, id->mtime, id->ctime);
    name_escape(b, name);
    buf_printf(b, "\n");
}

static int note(const char *path, const MadeId *id) {
    if (id->kind == '?') return -1;  // only files and directories are ddptok's
    char rec[1200];
    const char *name;
    record_of(path, id->kind, rec, sizeof rec, &name);
    Buf line = {0};
    line_print(&line, id, name);
    int rc = record_append(rec, line.s);
    buf_free(&line);
    return rc;
}

int made_note(const char *path) {
    MadeId id;
    if (id_of_path(path, &id) != 0) return warn_once(path, errno), -1;
    return note(path, &id);
}

int made_note_fd(const char *path, int fd) {
    MadeId id;
    if (id_of_fd(fd, &id) != 0) return warn_once(path, errno), -1;
    return note(path, &id);
}

// One directory's record, parsed: its lines in order (a later line of a name wins).
typedef struct {
    char *text;
    int n;
    struct {
        MadeId id;
        char *name;
    } *line;
} Record;

static void record_free(Record *r) {
    free(r->text), free(r->line);
    memset(r, 0, sizeof *r);
}

// Reads the record of the directory open as `dirfd` (a regular file, not through a link);
// an absent, unreadable or oversized record has no lines, and a malformed line is skipped:
// either way, less counts as made.
static void record_read(int dirfd, Record *r) {
    memset(r, 0, sizeof *r);
    int fd = openat(dirfd, MADE_RECORD, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > RECORD_MAX) {
        close(fd);
        return;
    }
    size_t cap = (size_t)st.st_size, len = 0;
    r->text = xmalloc(cap + 1);
    for (ssize_t got; len < cap && (got = read(fd, r->text + len, cap - len)) != 0;) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        len += (size_t)got;
    }
    close(fd);
    r->text[len] = 0;
    int lines = 0;
    for (char *p = r->text, *next; *p; p = next) {
        if (!(next = strchr(p, '\n'))) break;  // a line cut mid-write
        *next++ = 0;
        MadeId id = {0};
        int used = 0, more = 0;
        if (p[0] == '#' || sscanf(p, "%c %" SCNu64 " %" SCNd64 " %n", &id.kind, &id.ino, &id.btime, &used) != 3 || !used ||
            (id.kind != 'd' && id.kind != 'f'))
            continue;
        // A file's stamp: three more numbers, then the name (one word: spaces are escaped).
        if (id.kind == 'f' && strchr(p + used, ' ') &&
            sscanf(p + used, "%" SCNu64 " %" SCNd64 " %" SCNd64 " %n", &id.size, &id.mtime, &id.ctime, &more) == 3 && more)
            id.stamped = 1, used += more;
        char *name = p + used;
        if (strchr(name, ' ')) continue;  // neither form
        name_unescape(name);
        if (!*name || strchr(name, '/') || (id.kind == 'd') != !strcmp(name, ".")) continue;
        if (r->n == lines) {
            r->line = realloc(r->line, (size_t)(lines = lines ? 2 * lines : 16) * sizeof *r->line);
            ASSERT(r->line);
        }
        r->line[r->n].id = id;
        r->line[r->n++].name = name;
    }
}

// The last line of `name` in r, or -1.
static int record_find(const Record *r, const char *name) {
    for (int i = r->n - 1; i >= 0; i--)
        if (!strcmp(r->line[i].name, name)) return i;
    return -1;
}

static int id_at(int dirfd, const char *name, MadeId *id) {
    struct statx sx;
    if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW, STATX_MADE, &sx) != 0) return -1;
    id_from_statx(&sx, id);
    return 0;
}

MadeVerdict made_verdict_at(int dirfd, const char *name) {
    MadeId id;
    if (id_at(dirfd, name, &id) != 0 || id.kind == '?') return MADE_NOT;
    int fd = dirfd;
    if (id.kind == 'd') {  // its own record, read through the directory itself (no link followed)
        MadeId opened;
        fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return MADE_NOT;
        if (id_of_fd(fd, &opened) != 0 || opened.ino != id.ino || opened.btime != id.btime) return close(fd), MADE_NOT;
    }
    Record r;
    record_read(fd, &r);
    if (fd != dirfd) close(fd);
    int i = record_find(&r, id.kind == 'd' ? "." : name);
    MadeVerdict v = i < 0 ? MADE_NOT : verdict_of(&r.line[i].id, &id);
    record_free(&r);
    return v;
}

int made_is_at(int dirfd, const char *name) { return made_verdict_at(dirfd, name) == MADE_YES; }

// The directory of `path` opened, and its last component.
static int open_parent(const char *path, const char **name) {
    char dir[1100];
    dir_of(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int made_is(const char *path) {
    const char *name;
    int fd = open_parent(path, &name);
    if (fd < 0) return 0;
    int ok = made_is_at(fd, name);
    close(fd);
    return ok;
}

int made_is_fd(const char *path, int fd) {
    MadeId id;
    const char *name;
    if (id_of_fd(fd, &id) != 0 || id.kind != 'f') return 0;
    int dirfd = open_parent(path, &name);
    if (dirfd < 0) return 0;
    Record r;
    record_read(dirfd, &r);
    close(dirfd);
    int i = record_find(&r, name), ok = i >= 0 && verdict_of(&r.line[i].id, &id) == MADE_YES;
    record_free(&r);
    return ok;
}

int made_compact_at(int dirfd, int keep_self) {
    Record r;
    record_read(dirfd, &r);
    Buf out = {0};
    int kept = 0;
    for (int i = 0; i < r.n; i++) {
        if (record_find(&r, r.line[i].name) != i) continue;  // an older line of a name
        int self = !strcmp(r.line[i].name, ".");
        MadeId now;
        if (self && !keep_self) continue;
        // A line stays while its entry is there, the same inode (whatever its stamp says: it is
        // checked again each time, and a changed file keeps being called changed).
        if ((self ? id_of_fd(dirfd, &now) : id_at(dirfd, r.line[i].name, &now)) != 0 || verdict_of(&r.line[i].id, &now) == MADE_NOT)
            continue;
        if (!kept++) buf_printf(&out, "%s", RECORD_HEADER);
        line_print(&out, &r.line[i].id, r.line[i].name);
    }
    record_free(&r);
    int rc = 0;
    if (!kept) {
        if (unlinkat(dirfd, MADE_RECORD, 0) != 0 && errno != ENOENT) rc = error("%s: cannot remove: %s", MADE_RECORD, strerror(errno));
    } else {  // not write_file_atomic: that would record the record
        char tmp[64];
        snprintf(tmp, sizeof tmp, MADE_RECORD ".tmp.%d", (int)getpid());
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) rc = error("%s: cannot write: %s", tmp, write_error(errno));
        else {
            int bad = write(fd, out.s, out.n) != (ssize_t)out.n;
            if (close(fd) != 0) bad = 1;
            if (bad || renameat(dirfd, tmp, dirfd, MADE_RECORD) != 0)
                rc = error("%s: cannot rewrite: %s", MADE_RECORD, strerror(errno)), unlinkat(dirfd, tmp, 0);
        }
    }
    buf_free(&out);
    return rc;
}
