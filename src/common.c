// common.c — error reporting, allocation and small file-system helpers (see common.h).
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lifecycle.h"

Identity g_id = {0, 1, "?"};

void identity_init(int rank, int world) {
    g_id.rank = rank;
    g_id.world = world;
    if (gethostname(g_id.host, sizeof g_id.host) != 0) strcpy(g_id.host, "?");
    g_id.host[sizeof g_id.host - 1] = 0;
}

static void vreport(const char *fmt, va_list ap) {
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    if (g_id.world > 1) fprintf(stderr, "ddptok: rank %d: error: %s\n", g_id.rank, line);
    else fprintf(stderr, "ddptok: error: %s\n", line);
    fflush(stderr);
}

static int mpi_running(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

static void (*g_stop_hook)(int code);

void stop_hook_set(void (*hook)(int code)) { g_stop_hook = hook; }

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
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    stop(code);
}

void stop_abort(int code) {
    if (mpi_running() && g_id.world > 1) MPI_Abort(MPI_COMM_WORLD, code);
    stop(code);
}

void die_abort(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    stop_abort(code);
}

int error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(fmt, ap);
    va_end(ap);
    return -1;
}

void say(const char *fmt, ...) {
    if (g_id.rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
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
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
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
