// common.c — error reporting, allocation and small file-system helpers (see common.h).
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle.h"

Identity g_id = {0, 1, "?"};

// die()'s own communicator: its agreement and gather never meet another collective.
static MPI_Comm g_die_comm = MPI_COMM_NULL;

#define REPORT_LEN 2048          // one error line, at most
#define DIE_TOGETHER_SECONDS 5.0 // how long die() waits for the other ranks to fail too

void identity_init(int rank, int world) {
    g_id.rank = rank;
    g_id.world = world;
    if (gethostname(g_id.host, sizeof g_id.host) != 0) strcpy(g_id.host, "?");
    g_id.host[sizeof g_id.host - 1] = 0;
    int init = 0, fin = 0;  // called again once MPI is up (lifecycle_init runs before MPI_Init)
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (world > 1 && init && !fin && g_die_comm == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &g_die_comm);
}

void text_clean(char *dst, size_t len, const char *src, const char *keep) {
    size_t i = 0;
    for (; len && i < len - 1 && src[i]; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c < 0x20 && !strchr(keep, c)) || c == 0x7F ? '?' : (char)c;
    }
    if (len) dst[i] = 0;
}

static void print_report(const char *who, const char *kind, const char *line) {
    char clean[REPORT_LEN];
    text_clean(clean, sizeof clean, line, "");
    fprintf(stderr, "ddptok: %s%s%s: %s\n", who, who[0] ? ": " : "", kind, clean);  // one write (stderr is unbuffered)
    fflush(stderr);
}

// error_capture(1): error() keeps its first line here instead of printing it.
static int g_capturing = 0;
static char g_captured[REPORT_LEN];

const char *error_capture(int on) {
    g_capturing = on;
    if (on) g_captured[0] = 0;
    return g_captured;
}

// One "error:" line (kept instead while error_capture is on) or "warning:" line of this rank.
static void vreport(const char *kind, const char *fmt, va_list ap) {
    char line[REPORT_LEN], who[32] = "";
    vsnprintf(line, sizeof line, fmt, ap);
    if (g_capturing && !strcmp(kind, "error")) {
        if (!g_captured[0]) snprintf(g_captured, sizeof g_captured, "%s", line);
        return;
    }
    if (g_id.world > 1) snprintf(who, sizeof who, "rank %d", g_id.rank);
    print_report(who, kind, line);
}

static int mpi_running(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

static void (*g_stop_hook)(int code);

void stop_hook_set(void (*hook)(int code)) { g_stop_hook = hook; }

// "ranks 0-3,6" (or "rank 2") for the ranks r with same[r] set.
static void rank_list(const char *same, int world, char *out, size_t len) {
    int n = 0, count = 0;
    for (int r = 0; r < world; r++) count += same[r] != 0;
    n = snprintf(out, len, "rank%s ", count > 1 ? "s" : "");
    const char *sep = "";
    for (int r = 0; r < world && n < (int)len; r++) {
        if (!same[r] || (r > 0 && same[r - 1])) continue;
        int end = r;
        while (end + 1 < world && same[end + 1]) end++;
        n += end == r ? snprintf(out + n, len - (size_t)n, "%s%d", sep, r)
                      : snprintf(out + n, len - (size_t)n, "%s%d-%d", sep, r, end);
        sep = ",";
    }
}

// When every rank dies (a config error, a bad --set: every rank reads the same input),
// rank 0 prints each distinct line once with the ranks that saw it. Returns 0 when the
// others did not all arrive within DIE_TOGETHER_SECONDS (this rank then reports alone).
static int report_together(const char *line) {
    if (g_die_comm == MPI_COMM_NULL || !mpi_running()) return 0;
    MPI_Request req;
    if (MPI_Ibarrier(g_die_comm, &req) != MPI_SUCCESS) return 0;
    double start = now_seconds();
    for (int done = 0; !done;) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
        if (!done && now_seconds() - start > DIE_TOGETHER_SECONDS) return 0;
        if (!done) usleep(1000);
    }
    char mine[REPORT_LEN] = "", *all = g_id.rank == 0 ? xcalloc((size_t)g_id.world, REPORT_LEN) : NULL;
    snprintf(mine, sizeof mine, "%s", line);
    watchdog_arm("the gather of the error lines");  // a rank stopped after the barrier cannot hang it
    MPI_Gather(mine, REPORT_LEN, MPI_CHAR, all, REPORT_LEN, MPI_CHAR, 0, g_die_comm);
    watchdog_disarm();
    if (g_id.rank == 0) {
        char *same = xcalloc((size_t)g_id.world, 1), *printed = xcalloc((size_t)g_id.world, 1), who[1200];
        for (int r = 0; r < g_id.world; r++) {
            if (printed[r]) continue;
            for (int q = r; q < g_id.world; q++)
                same[q] = !printed[q] && !strcmp(all + (size_t)q * REPORT_LEN, all + (size_t)r * REPORT_LEN);
            for (int q = 0; q < r; q++) same[q] = 0;
            rank_list(same, g_id.world, who, sizeof who);
            print_report(who, "error", all + (size_t)r * REPORT_LEN);
            for (int q = r; q < g_id.world; q++) printed[q] |= same[q];
        }
        free(same), free(printed), free(all);
    }
    return 1;
}

void stop(int code) {
    if (g_stop_hook) {  // during start-up: tell the other ranks first (lifecycle.c)
        void (*hook)(int) = g_stop_hook;
        g_stop_hook = NULL;
        hook(code);
    }
    // Every rank gets here together for a collective decision: finalize cleanly. A rank
    // that stalls now would hang the others in MPI_Finalize: the watchdog bounds it.
    if (mpi_running()) {
        test_stall("shutdown");
        watchdog_arm("shutdown (MPI_Finalize)");
        MPI_Finalize();
    }
    exit(code);
}

void die(int code, const char *fmt, ...) {
    char line[REPORT_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (report_together(line)) stop(code);
    error("%s", line);
    // Alone. During start-up stop() tells the others (the start-up agreement); later they
    // are elsewhere, maybe in a collective, and finalizing could wait for them: abort.
    if (g_stop_hook) stop(code);
    stop_abort(code);
}

void stop_abort(int code) {
    if (mpi_running() && g_id.world > 1) MPI_Abort(MPI_COMM_WORLD, code);
    stop(code);
}

void die_abort(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
    stop_abort(code);
}

int error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
    return -1;
}

void warning(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("warning", fmt, ap);
    va_end(ap);
}

void say(const char *fmt, ...) {
    if (g_id.rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    char *text;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    ASSERT(n >= 0);
    text_clean(text, (size_t)n + 1, text, "\n\t");
    fputs(text, stdout);
    free(text);
    fflush(stdout);
}

void bug_at(const char *file, int line, const char *cond) {
    die_abort(EXIT_INTERNAL, "BUG at %s:%d on %s: assertion '%s' failed", file, line, g_id.host, cond);
}

void *xmalloc_impl(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) die_abort(EXIT_INTERNAL, "out of memory allocating %zu bytes at %s:%d", n, file, line);
    return p;
}

void *xcalloc_impl(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die_abort(EXIT_INTERNAL, "out of memory allocating %zu x %zu bytes at %s:%d", n, size, file, line);
    return p;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int mkdir_p(const char *path) {
    char buf[1024];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return error("%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return error("%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return error("%s: cannot create directory: %s", buf, strerror(errno));
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
    return fsync_dir(dir);
}

uint64_t memory_available(void) {
    uint64_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = size_mul(kb, 1024);
        fclose(f);
    }
    if (!avail) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = size_mul((uint64_t)pages, (uint64_t)page);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < avail)
        avail = (uint64_t)rl.rlim_cur;
    // DDPTOK_MEMORY_LIMIT=N[KMG]: a lower budget (a shared node; the fuzz targets).
    const char *env = getenv("DDPTOK_MEMORY_LIMIT");
    char *end;
    unsigned long long lim = env ? strtoull(env, &end, 10) : 0;
    if (lim) {
        int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
        uint64_t bytes = size_mul(lim, (uint64_t)1 << shift);
        if (!avail || bytes < avail) avail = bytes;
    }
    return avail ? avail : UINT64_MAX;  // unknown: do not refuse on a guess
}

void format_bytes(uint64_t bytes, char *out, size_t len) {
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6) v /= 1024, u++;
    if (u == 0) snprintf(out, len, "%llu bytes", (unsigned long long)bytes);
    else snprintf(out, len, "%.1f %s", v, units[u]);
}

// What a file that is not regular is, for messages.
static const char *file_kind(mode_t m) {
    return S_ISDIR(m) ? strerror(EISDIR) : S_ISFIFO(m) ? "a FIFO, not a regular file" : S_ISCHR(m) ? "a character device, not a regular file"
           : S_ISBLK(m) ? "a block device, not a regular file" : S_ISSOCK(m) ? "a socket, not a regular file" : "not a regular file";
}

char *file_read_regular(const char *path, size_t max, size_t *len, char *why, size_t whylen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, whylen, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    int stat_failed = fstat(fd, &st) != 0;
    if (stat_failed || !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s", stat_failed ? strerror(errno) : file_kind(st.st_mode));
        close(fd);
        return NULL;
    }
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
    int append = mode[0] == 'a';
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (append ? O_APPEND : 0), 0666);
    if (fd < 0) return NULL;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : !append && ftruncate(fd, 0) != 0 ? errno : 0;
    if (e) {
        close(fd);
        errno = e;
        return NULL;
    }
    int flags = fcntl(fd, F_GETFL);
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

void buf_printf(Buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        ASSERT(need >= 0);
        if (b->s && b->n + (size_t)need < b->cap) {
            b->n += (size_t)need;
            return;
        }
        b->cap = (b->cap + (size_t)need + 1) * 2;
        b->s = realloc(b->s, b->cap);
        ASSERT(b->s);
        b->s[b->n] = 0;
    }
}

void buf_free(Buf *b) {
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
}

Sha256 *sha256_begin(void) {
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    int ok = md && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;
    ASSERT(ok);
    return md;
}

void sha256_add(Sha256 *h, const void *data, size_t n) {
    int ok = EVP_DigestUpdate(h, data, n) == 1;
    ASSERT(ok);
}

void sha256_hex(Sha256 *h, char out[65]) {
    unsigned char d[32];
    unsigned len = 0;
    int ok = EVP_DigestFinal_ex(h, d, &len) == 1 && len == 32;
    ASSERT(ok);
    EVP_MD_CTX_free(h);
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", d[i]);
    out[64] = 0;
}

int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255) return 1 << 20;
    int row[256];  // Levenshtein, one row: row[j] = distance(a[0..i), b[0..j))
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[lb];
}

const char *closest_name(const char *word, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = 1 << 20, limit = (int)strlen(word) / 3 > 2 ? (int)strlen(word) / 3 : 2;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(word, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    return best_d <= limit ? best : NULL;
}

// The user's --config and --set arguments, shell-quoted, for hints that repeat them.
static char g_hint_args[4096] = "";

static void append_word(const char *word) {
    size_t n = strlen(g_hint_args);
    int plain = word[0] != 0;
    for (const char *p = word; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._=/,:+-@%", *p)) plain = 0;
    if (plain) snprintf(g_hint_args + n, sizeof g_hint_args - n, " %s", word);
    else {  // 'it'\''s' quoting
        n += (size_t)snprintf(g_hint_args + n, sizeof g_hint_args - n, " '");
        for (const char *p = word; *p && n + 5 < sizeof g_hint_args; p++)
            n += (size_t)snprintf(g_hint_args + n, sizeof g_hint_args - n, *p == '\'' ? "'\\''" : "%c", *p);
        snprintf(g_hint_args + n, sizeof g_hint_args - n, "'");
    }
}

void hint_args_set(const char *config_path, char *const *sets, int n_sets) {
    g_hint_args[0] = 0;
    if (config_path) append_word("--config"), append_word(config_path);
    for (int i = 0; i < n_sets; i++) append_word("--set"), append_word(sets[i]);
}

const char *hint_args(void) { return g_hint_args; }
