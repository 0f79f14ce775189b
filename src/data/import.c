// import.c — the import's common parts (docs/data.md): the input files (found, ordered, read
// in order and hashed as read), decoding token arrays, and the two passes: the document
// rules (split by keyed hash or by the inputs' names, cut to data.max_length, drop below
// data.min_length) counted, then the pieces placed into corpus.h5 by the writer. The readers
// of each format are import_<format>.c.
#include "data/import.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/testpoint.h"
#include "base/sha256.h"
#include "config/budget.h"
#include "data/writer.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the readers and the split hash take host ints as little-endian");

const char *const import_format_names[IMPORT_FORMAT_COUNT] = {"bytes", "llmc", "nanogpt", "megatron", "jsonl", "jsonl-text"};

const ImportReader import_readers[IMPORT_FORMAT_COUNT] = {
    [IMPORT_BYTES] = {import_read_bytes, NULL, 1, DOCS_AT_FILE_END, 0, 1, 0},
    [IMPORT_LLMC] = {import_read_llmc, import_probe_llmc, 1, DOCS_STREAM, 1, 0, 0},
    [IMPORT_NANOGPT] = {import_read_nanogpt, import_probe_nanogpt, 1, DOCS_STREAM, 1, 0, 0},
    [IMPORT_MEGATRON] = {import_read_megatron, import_probe_megatron, 2, DOCS_OWN, 1, 0, 0},
    [IMPORT_JSONL] = {import_read_jsonl, NULL, 1, DOCS_OWN, 1, 0, 1},
    [IMPORT_JSONL_TEXT] = {import_read_jsonl, NULL, 1, DOCS_OWN, 0, 0, 1},
};

const int token_type_size[TOK_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 8};
const char *const token_type_names[TOK_TYPE_COUNT] = {"uint8", "int8", "int16", "uint16", "int32", "uint32", "int64"};


// ---------------------------------------------------------------------------------------
// The progress line over both passes' bytes

struct ImportProgress {
    WorkProgress line;
    int64_t done, total;
};

static void progress_add(ImportProgress *p, int64_t n) {
    if (!p) return;
    p->done += n;
    work_progress(&p->line, p->done, p->total);
}

// ---------------------------------------------------------------------------------------
// The hasher: a second thread hashes what the readers read, from copies of the blocks, in the
// order they were read (a queue of HASH_JOBS blocks: bounded memory), so that the SHA-256 of
// the inputs (a fifth of import's hashing for uint16 shards) overlaps the reader's own work.
// The hash is the same bytes in the same order either way: DDPTOK_IMPORT_THREADS=1 hashes on
// the reader's thread, =2 on the hasher even for inputs under 16 MiB (which by default hash on
// the reader's: the thread would cost more); tests/test_import.sh compares the corpora, byte for byte.

enum { HASH_JOBS = 8, HASH_BLOCK = 1 << 20 };

typedef struct {
    ImportFile *f;
    int64_t at;
    size_t n;
} HashJob;

struct ImportHasher {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t ready, room;
    HashJob job[HASH_JOBS];
    unsigned char *block[HASH_JOBS];  // (HASH_BLOCK) each job's copy
    int head, count, quit;
};

// The SHA-256s (the file's and the marks') of bytes [at, at + n).
static void hash_bytes(ImportFile *f, const unsigned char *p, int64_t at, size_t n) {
    if (f->sha) sha256_add(f->sha, p, n);
    for (int k = 0; k < IMPORT_MARKS; k++) {
        if (!f->mark_sha[k]) continue;
        int64_t a = at > f->mark[k][0] ? at : f->mark[k][0], b = at + (int64_t)n < f->mark[k][1] ? at + (int64_t)n : f->mark[k][1];
        if (a < b) sha256_add(f->mark_sha[k], p + (a - at), (size_t)(b - a));
        if (at + (int64_t)n >= f->mark[k][1]) sha256_digest(f->mark_sha[k], f->mark_sum[k]), f->mark_sha[k] = NULL;
    }
}

static void *hasher_main(void *arg) {
    ImportHasher *h = arg;
    pthread_mutex_lock(&h->mu);
    for (;;) {
        while (!h->count && !h->quit) pthread_cond_wait(&h->ready, &h->mu);
        if (!h->count) break;
        HashJob j = h->job[h->head];
        unsigned char *p = h->block[h->head];
        pthread_mutex_unlock(&h->mu);
        hash_bytes(j.f, p, j.at, j.n);
        pthread_mutex_lock(&h->mu);
        h->head = (h->head + 1) % HASH_JOBS, h->count--;
        pthread_cond_broadcast(&h->room);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

static ImportHasher *hasher_start(int64_t input_bytes) {
    const char *t = getenv("DDPTOK_IMPORT_THREADS");
    if ((t && !strcmp(t, "1")) || (input_bytes < ((int64_t)16 << 20) && !(t && !strcmp(t, "2"))))
        return NULL;  // small inputs: a thread and its 8 MiB would cost more than they save (DDPTOK_IMPORT_THREADS=2 forces it)
    ImportHasher *h = xcalloc(1, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->ready, NULL), pthread_cond_init(&h->room, NULL);
    for (int k = 0; k < HASH_JOBS; k++) h->block[k] = xmalloc(HASH_BLOCK);
    if (pthread_create(&h->thread, NULL, hasher_main, h) != 0) {
        for (int k = 0; k < HASH_JOBS; k++) free(h->block[k]);
        free(h);
        return NULL;  // one thread then: the same bytes hashed
    }
    return h;
}

static void hasher_stop(ImportHasher *h) {
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    h->quit = 1;
    pthread_cond_signal(&h->ready);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->thread, NULL);
    for (int k = 0; k < HASH_JOBS; k++) free(h->block[k]);
    pthread_cond_destroy(&h->ready), pthread_cond_destroy(&h->room), pthread_mutex_destroy(&h->mu);
    free(h);
}

// Queues bytes [at, at + n) of f (copied) for the hasher, or hashes them here without one.
static void hash_later(ImportFile *f, const unsigned char *p, int64_t at, size_t n) {
    ImportHasher *h = f->hasher;
    if (!h) return hash_bytes(f, p, at, n);
    while (n > 0) {
        size_t k = n < HASH_BLOCK ? n : HASH_BLOCK;
        pthread_mutex_lock(&h->mu);
        while (h->count == HASH_JOBS) pthread_cond_wait(&h->room, &h->mu);
        int slot = (h->head + h->count) % HASH_JOBS;
        pthread_mutex_unlock(&h->mu);
        memcpy(h->block[slot], p, k);  // the slot is this thread's until counted
        pthread_mutex_lock(&h->mu);
        h->job[slot] = (HashJob){f, at, k};
        h->count++;
        pthread_cond_signal(&h->ready);
        pthread_mutex_unlock(&h->mu);
        p += k, at += (int64_t)k, n -= k;
    }
}

// Waits until the hasher has hashed everything queued (of f and of any file before it).
static void hash_sync(ImportFile *f) {
    ImportHasher *h = f->hasher;
    if (!h) return;
    pthread_mutex_lock(&h->mu);
    while (h->count) pthread_cond_wait(&h->room, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

// ---------------------------------------------------------------------------------------
// One input file, read in order and hashed as read

int import_file_open(ImportFile *f, const ImportSpec *spec, const char *path) {
    memset(f, 0, sizeof *f);
    f->path = path;
    f->fd = -1;
    f->progress = spec ? spec->progress : NULL;
    f->hasher = spec ? spec->hasher : NULL;
    // stat first (a device is never opened: a tape rewinds on open), then O_NONBLOCK (opening a
    // FIFO swapped in meanwhile must not wait for a writer); fstat on the same descriptor
    // decides, so what is read is what was checked.
    char why[256];
    int fd = open_regular_fd(path, &f->size, why, sizeof why);
    if (fd < 0) return error("%s: cannot open: %s", path, why);
    f->fd = fd;
    f->sha = spec && spec->no_file_sha ? NULL : sha256_begin();
    f->hashing = 1;
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return 0;
}

int import_file_close(ImportFile *f, char sha[65]) {
    int rc = 0;
    hash_sync(f);
    if (sha && f->hashing) {
        if (f->hashed != f->size) rc = error("%s: read %lld of its %lld bytes (BUG: a reader must read every byte)", f->path,
                                             (long long)f->hashed, (long long)f->size);
        else if (f->sha) sha256_hex(f->sha, sha), f->sha = NULL;
        else snprintf(sha, 65, "-");  // not taken in this pass
    }
    if (f->sha) {
        unsigned char drop[32];
        sha256_digest(f->sha, drop);
    }
    for (int k = 0; k < IMPORT_MARKS; k++)
        if (f->mark_sha[k]) {
            unsigned char drop[32];
            sha256_digest(f->mark_sha[k], drop);
        }
    if (f->fd >= 0) close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
    return rc;
}

void import_file_mark(ImportFile *f, int k, int64_t from, int64_t to) {
    ASSERT(k >= 0 && k < IMPORT_MARKS && f->hashed <= from && from <= to);
    f->mark[k][0] = from, f->mark[k][1] = to;
    f->mark_sha[k] = sha256_begin();
}

// Bytes [at, at + n) of the file, read at the frontier: kept (the head), hashed with the marks they pass.
static void hash_frontier(ImportFile *f, const unsigned char *p, int64_t at, size_t n) {
    enum { AHEAD = 16 << 20 };  // the kernel reads the next 16 MiB while these are used (a cold file's reads overlap the work)
    if (at / (AHEAD / 4) != (at + (int64_t)n) / (AHEAD / 4)) posix_fadvise(f->fd, at + (int64_t)n, AHEAD, POSIX_FADV_WILLNEED);
    if (at < IMPORT_HEAD) memcpy(f->head + at, p, (size_t)(IMPORT_HEAD - at < (int64_t)n ? IMPORT_HEAD - at : (int64_t)n));
    hash_later(f, p, at, n);
    f->hashed += (int64_t)n;
    progress_add(f->progress, (int64_t)n);
}

static int pread_exact(const ImportFile *f, int64_t off, void *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(f->fd, (char *)buf + got, n - got, (off_t)(off + (int64_t)got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return error("%s: offset %lld: cannot read %zu bytes: %s", f->path, (long long)(off + (int64_t)got), n - got,
                         r < 0 ? strerror(errno) : "the file ended early (changed while importing?)");
        got += (size_t)r;
    }
    return 0;
}

int import_file_read(ImportFile *f, int64_t off, void *buf, size_t n) {
    ASSERT(off >= 0 && (uint64_t)off + n <= (uint64_t)f->size);
    if (pread_exact(f, off, buf, n)) return -1;
    unsigned char *p = buf;
    if (off < f->hashed) {  // a look again at the first bytes: they must be what was hashed
        int64_t again = f->hashed - off < (int64_t)n ? f->hashed - off : (int64_t)n;
        ASSERT(off + again <= IMPORT_HEAD);  // a reader reads in order (BUG otherwise)
        if (memcmp(p, f->head + off, (size_t)again) != 0)
            return import_fail(f, off, "its first bytes changed while it was read (another program writing it?): import it when it no "
                               "longer changes");
        p += again, off += again, n -= (size_t)again;
    }
    ASSERT(n == 0 || off == f->hashed);
    if (n) hash_frontier(f, p, off, n);
    return 0;
}

void import_cursor_open(ImportCursor *c, ImportFile *f, int mark) {
    hash_sync(f);  // the first read's hash of the region, complete
    ASSERT(mark >= 0 && mark < IMPORT_MARKS && !f->mark_sha[mark] && f->hashed >= f->mark[mark][1]);
    memset(c, 0, sizeof *c);
    c->f = f, c->mark = mark, c->at = f->mark[mark][0], c->end = f->mark[mark][1];
    c->sha = sha256_begin();
    c->cap = 1 << 16;
    c->buf = xmalloc(c->cap);
}

int import_cursor_next(ImportCursor *c, void *out, size_t n) {
    unsigned char *o = out;
    while (n > 0) {
        if (c->used == c->have) {
            int64_t left = c->end - c->at;
            size_t k = left < (int64_t)c->cap ? (size_t)left : c->cap;
            ASSERT(k > 0);  // the caller reads inside the region
            if (pread_exact(c->f, c->at, c->buf, k)) return -1;
            sha256_add(c->sha, c->buf, k);
            c->at += (int64_t)k, c->have = k, c->used = 0;
        }
        size_t take = c->have - c->used < n ? c->have - c->used : n;
        memcpy(o, c->buf + c->used, take);
        c->used += take, o += take, n -= take;
    }
    return 0;
}

int import_cursor_close(ImportCursor *c) {
    unsigned char sum[32];
    int rc = 0;
    if (c->at != c->end || c->used != c->have) {
        sha256_digest(c->sha, sum);
        rc = error("%s: bytes %lld..%lld read again only in part (BUG)", c->f->path, (long long)c->f->mark[c->mark][0],
                   (long long)c->end);
    } else {
        sha256_digest(c->sha, sum);
        if (memcmp(sum, c->f->mark_sum[c->mark], 32) != 0)
            rc = import_fail(c->f, c->f->mark[c->mark][0], "bytes %lld..%lld differ from their first read: the file changed while it "
                             "was imported (another program writing it?): import it when it no longer changes",
                             (long long)c->f->mark[c->mark][0], (long long)c->end);
    }
    free(c->buf);
    memset(c, 0, sizeof *c);
    return rc;
}

void import_cursor_drop(ImportCursor *c) {
    if (c->sha) {
        unsigned char sum[32];
        sha256_digest(c->sha, sum);
    }
    free(c->buf);
    memset(c, 0, sizeof *c);
}

int import_fail(const ImportFile *f, int64_t off, const char *fmt, ...) {
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return error("%s: offset %lld: %s", f->path, (long long)off, what);
}

// ---------------------------------------------------------------------------------------
// Token arrays

// The n tokens of raw decoded into v (int64), one loop per type (the compiler vectorizes each).
static void decode_tokens(const unsigned char *raw, int64_t n, TokenType type, int64_t *v) {
    switch (type) {
#define DECODE(T, C)                                            \
    case T:                                                     \
        for (int64_t i = 0; i < n; i++) {                       \
            C x;                                                \
            memcpy(&x, raw + i * (int64_t)sizeof x, sizeof x);  \
            v[i] = x;                                           \
        }                                                       \
        return;
        DECODE(TOK_U8, uint8_t)
        DECODE(TOK_I8, int8_t)
        DECODE(TOK_I16, int16_t)
        DECODE(TOK_U16, uint16_t)
        DECODE(TOK_I32, int32_t)
        DECODE(TOK_U32, uint32_t)
        DECODE(TOK_I64, int64_t)
#undef DECODE
    default: break;
    }
    ASSERT(!"a token type");
}

// The first token of v[from, n) that is not a valid id (outside [0, vocab)), or n.
static int64_t first_bad(const int64_t *v, int64_t from, int64_t n, int64_t vocab) {
    int64_t worst = 0;
    for (int64_t k = from; k < n; k++) worst |= (uint64_t)v[k] >= (uint64_t)vocab;  // vectorizes; the exact one found below
    if (!worst) return n;
    for (int64_t k = from; k < n; k++)
        if ((uint64_t)v[k] >= (uint64_t)vocab) return k;
    return n;
}

int import_tokens(const ImportSpec *spec, ImportFile *f, int64_t off, int64_t count, TokenType type, DocSink *sink) {
    enum { CHUNK = 1 << 16 };  // tokens per read
    int size = token_type_size[type];
    ASSERT(count >= 0 && off >= 0 && (uint64_t)off + (uint64_t)count * (uint64_t)size <= (uint64_t)f->size);
    size_t cap = (size_t)(count < CHUNK ? count : CHUNK);  // a Megatron sequence may be a few tokens
    unsigned char *raw = xmalloc(cap * (size_t)size + 1);
    int64_t *v = xmalloc(cap * sizeof *v + 1);
    int32_t *ids = xmalloc(cap * sizeof *ids + 1);
    int rc = 0;
    for (int64_t done = 0; done < count && !rc;) {
        int64_t n = count - done < CHUNK ? count - done : CHUNK, from = 0;
        int64_t at = off + done * size;
        if ((rc = import_file_read(f, at, raw, (size_t)(n * size)))) break;
        decode_tokens(raw, n, type, v);
        // runs of ids between separators (no --eot: none; a -1 is then refused, never a break),
        // each checked and handed over as one add
        while (from <= n && !rc) {
            int64_t end = from;
            if (spec->eot >= 0)
                while (end < n && v[end] != spec->eot) end++;
            else end = n;
            int64_t bad = first_bad(v, from, end, spec->vocab);
            if (bad < end) {
                rc = import_fail(f, at + bad * size, "token %lld is %lld, expected a %s id in [0, %lld] (data.vocab_size - 2: "
                                 "ddptok's ids are the file's + 1)%s", (long long)(done + bad), (long long)v[bad],
                                 token_type_names[type], (long long)spec->vocab - 1,
                                 v[bad] < 0 && spec->eot < 0 ? "; a negative id is no separator: give --eot ID for the one that is" : "");
                break;
            }
            for (int64_t k = from; k < end; k++) ids[k - from] = (int32_t)(v[k] + 1);
            if (end > from) rc = sink->add(sink, ids, end - from);
            if (!rc && end < n) rc = sink->end(sink);  // v[end] is the separator
            from = end + 1;
        }
        done += n;
    }
    free(raw), free(v), free(ids);
    return rc;
}

// ---------------------------------------------------------------------------------------
// The inputs: found, ordered, split by name

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

// The split words of file names (import_name_split), and their order when names tie.
static const struct {
    const char *word;
    int split;
} split_words[] = {{"validation", SPLIT_VALIDATION}, {"valid", SPLIT_VALIDATION}, {"val", SPLIT_VALIDATION},
                   {"dev", SPLIT_VALIDATION}, {"train", SPLIT_TRAIN}, {"test", SPLIT_TEST}};

// The split word at s (bounded by non-letters on both sides), its length; 0 for none.
static size_t split_word_at(const char *name, const char *s, int *split) {
    if (s > name && isalpha((unsigned char)s[-1])) return 0;
    for (size_t k = 0; k < sizeof split_words / sizeof *split_words; k++) {
        size_t n = strlen(split_words[k].word);
        if (strncasecmp(s, split_words[k].word, n) == 0 && !isalpha((unsigned char)s[n])) return *split = split_words[k].split, n;
    }
    return 0;
}

int import_name_split(const char *path) {
    const char *name = base_name(path);
    int found = -1, split;
    for (const char *s = name; *s; s++) {
        size_t n = split_word_at(name, s, &split);
        if (!n) continue;
        if (found >= 0 && found != split) return -2;
        found = split, s += n - 1;
    }
    return found;
}

// Compares two names with their split words left out and numbers by value; 0 when they tie.
static int name_cmp(const char *a, const char *b) {
    const char *na = a, *nb = b;
    int sa, sb;
    for (;;) {
        size_t wa, wb;
        while ((wa = split_word_at(na, a, &sa))) a += wa;
        while ((wb = split_word_at(nb, b, &sb))) b += wb;
        if (!*a || !*b) return (unsigned char)*a - (unsigned char)*b;
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            const char *ea = a, *eb = b;
            while (*a == '0' && isdigit((unsigned char)a[1])) a++;
            while (*b == '0' && isdigit((unsigned char)b[1])) b++;
            for (ea = a; isdigit((unsigned char)*ea); ea++) {}
            for (eb = b; isdigit((unsigned char)*eb); eb++) {}
            if (ea - a != eb - b) return ea - a < eb - b ? -1 : 1;
            int c = strncmp(a, b, (size_t)(ea - a));
            if (c) return c;
            a = ea, b = eb;
            continue;
        }
        if (*a != *b) return (unsigned char)*a - (unsigned char)*b;
        a++, b++;
    }
}

int import_name_order(const char *a, const char *b) {
    int c = name_cmp(base_name(a), base_name(b));
    if (c) return c;
    // the same name but for its split word: validation, train, test (llm.c writes val first)
    int sa = import_name_split(a), sb = import_name_split(b);
    int ra = sa == SPLIT_VALIDATION ? 0 : sa == SPLIT_TRAIN ? 1 : sa == SPLIT_TEST ? 2 : 3;
    int rb = sb == SPLIT_VALIDATION ? 0 : sb == SPLIT_TRAIN ? 1 : sb == SPLIT_TEST ? 2 : 3;
    if (ra != rb) return ra < rb ? -1 : 1;
    return strcmp(a, b);
}

static int by_order(const void *a, const void *b) {
    return import_name_order(((const ImportInput *)a)->path, ((const ImportInput *)b)->path);
}

static void push_file(ImportInput **files, int *n, int *cap, const char *path) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        ImportInput *grown = xmalloc((size_t)*cap * sizeof *grown);
        if (*n) memcpy(grown, *files, (size_t)*n * sizeof *grown);
        free(*files);
        *files = grown;
    }
    size_t len = strlen(path) + 1;
    (*files)[*n].path = memcpy(xmalloc(len), path, len);
    (*files)[(*n)++].split = import_name_split(path);
}

void import_inputs_free(ImportInput *files, int n_files) {
    for (int i = 0; i < n_files; i++) free(files[i].path);
    free(files);
}

int import_expand_inputs(ImportFormat format, char *const *inputs, int n_inputs, ImportInput **files, int *n_files,
                         ImportSkipped *skipped) {
    *files = NULL, *n_files = 0;
    memset(skipped, 0, sizeof *skipped);
    int cap = 0, megatron = format == IMPORT_MEGATRON;
    for (int i = 0; i < n_inputs; i++) {
        const char *in = inputs[i];
        struct stat st;
        char path[4200];
        if (megatron && (ends_with(in, ".bin") || ends_with(in, ".idx")))  // X.bin or X.idx: the pair's .idx
            snprintf(path, sizeof path, "%.*s.idx", (int)(strlen(in) - 4), in);
        else snprintf(path, sizeof path, "%s", in);
        if (stat(path, &st) != 0 && megatron) snprintf(path, sizeof path, "%s.idx", in);  // the prefix X
        int first = *n_files;
        if (stat(path, &st) != 0 && errno == ENOENT && strpbrk(in, "*?[")) {  // a glob ddptok expands itself
            glob_t g;
            int rc = glob(in, GLOB_NOSORT, NULL, &g);
            for (size_t k = 0; rc == 0 && k < g.gl_pathc; k++) {
                const char *p = g.gl_pathv[k];
                struct stat es;
                if (megatron && !ends_with(p, ".idx")) { skipped->other += !ends_with(p, ".bin"); continue; }
                if (lstat(p, &es) != 0) continue;
                if (S_ISLNK(es.st_mode)) skipped->links++;
                else if (S_ISDIR(es.st_mode)) skipped->directories++;
                else if (S_ISREG(es.st_mode)) push_file(files, n_files, &cap, p);
            }
            globfree(&g);
            if (*n_files == first) {
                error("--input %s: the pattern matches no %s", in, megatron ? "regular *.idx file" : "regular file");
                goto fail;
            }
        } else if (stat(path, &st) != 0) {
            error("--input %s: %s", in, strerror(errno));
            goto fail;
        } else if (!S_ISDIR(st.st_mode)) {
            push_file(files, n_files, &cap, path);
            continue;
        } else {
            DIR *d = opendir(path);
            if (!d) {
                error("--input %s: cannot list the directory: %s", in, strerror(errno));
                goto fail;
            }
            struct dirent *e;
            while ((e = readdir(d))) {
                char p[4500];
                struct stat es;
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                if (e->d_name[0] == '.') { skipped->hidden++; continue; }
                if (megatron && !ends_with(e->d_name, ".idx")) { skipped->other += !ends_with(e->d_name, ".bin"); continue; }
                snprintf(p, sizeof p, "%s/%s", path, e->d_name);
                if (lstat(p, &es) != 0) continue;
                if (S_ISLNK(es.st_mode)) skipped->links++;
                else if (S_ISDIR(es.st_mode)) skipped->directories++;
                else if (S_ISREG(es.st_mode)) push_file(files, n_files, &cap, p);
                else skipped->other++;
            }
            closedir(d);
            if (*n_files == first) {
                error("--input %s: a directory without %s (links, sub-directories and names starting with '.' are skipped)",
                      in, megatron ? "a regular *.idx file" : "regular files");
                goto fail;
            }
        }
        qsort(*files + first, (size_t)(*n_files - first), sizeof **files, by_order);
    }
    return 0;
fail:
    import_inputs_free(*files, *n_files);
    *files = NULL, *n_files = 0;
    return -1;
}

// ---------------------------------------------------------------------------------------
// What is checked before a token is read

// A compressed file's magic, named with the command that decompresses it (ddptok reads
// inputs as they are: a gzip file imported as bytes would be noise).
static const struct {
    const char *magic;
    size_t len;
    const char *name, *undo;
} compressed[] = {
    {"\x1f\x8b", 2, "gzip", "gunzip -k"}, {"\xfd\x37\x7a\x58\x5a\x00", 6, "xz", "unxz -k"},
    {"\x28\xb5\x2f\xfd", 4, "zstd", "unzstd"}, {"BZh", 3, "bzip2", "bunzip2 -k"},
};

static int probe_compressed(const ImportSpec *spec, const char *path) {
    ImportFile f;
    if (import_file_open(&f, NULL, path)) return -1;
    unsigned char head[8] = {0};
    size_t n = f.size < 8 ? (size_t)f.size : 8;
    int rc = n ? import_file_read(&f, 0, head, n) : 0;
    for (size_t k = 0; !rc && k < sizeof compressed / sizeof *compressed; k++) {
        if (n < compressed[k].len || memcmp(head, compressed[k].magic, compressed[k].len) != 0) continue;
        if (k == 3 && (n < 4 || head[3] < '1' || head[3] > '9')) continue;  // "BZh" and a block size digit
        // Headerless uint16 tokens can start with any two bytes: there the name must say it too.
        if (spec->format == IMPORT_NANOGPT && !ends_with(path, ".gz") && !ends_with(path, ".xz") && !ends_with(path, ".zst") &&
            !ends_with(path, ".bz2"))
            continue;
        rc = import_fail(&f, 0, "a %s-compressed file (its magic): ddptok reads its inputs uncompressed: run `%s %s` and import "
                         "what it writes", compressed[k].name, compressed[k].undo, path);
    }
    import_file_close(&f, NULL);
    return rc;
}

int import_probe(const ImportSpec *spec, const ImportInput *files, int n_files) {
    const ImportReader *reader = &import_readers[spec->format];
    for (int i = 0; i < n_files; i++) {
        if (spec->split_from_names && files[i].split < 0)
            return error("%s: --split-from-names: its name says %s (expected one word of train, val, valid, validation, dev or test "
                         "between separators, e.g. fineweb_val_000000.bin)", files[i].path,
                         files[i].split == -2 ? "two splits" : "no split");
        if (probe_compressed(spec, files[i].path) || (reader->probe && reader->probe(spec, files[i].path))) return -1;
    }
    return 0;
}

int import_budget(const ImportSpec *spec) {
    (void)spec;
    char err[700];
    if (budget_check_bytes("import (its readers' and its writer's buffers, whatever the inputs' sizes)", IMPORT_MEMORY,
                           "free some memory, or set DDPTOK_MEMORY_LIMIT higher", err, sizeof err))
        return error("%s", err);
    return 0;
}

int import_budget_line(const ImportSpec *spec, const ImportFile *f, int64_t off, int64_t line, size_t n) {
    // libjansson holds a list's integers as 48 bytes each (a 32-byte value and its pointer in
    // a list grown x2), at most one per 2 bytes of the line; the line's buffer and ids too.
    uint64_t need = size_add(spec->budgeted, size_mul(n, 32));
    char what[300], err[900];
    snprintf(what, sizeof what, "line %lld (%zu bytes, parsed whole) beside the import's buffers", (long long)line, n);
    if (budget_check_bytes(what, need, "split the line, or free some memory", err, sizeof err)) return import_fail(f, off, "%s", err);
    return 0;
}

// ---------------------------------------------------------------------------------------
// The document rules

static void split_hash_begin(const Config *cfg, Sha256 **h) {
    static const char tag[] = "ddptok-split-v1";
    uint32_t key = cfg->data.import.split_seed;
    *h = sha256_begin();
    sha256_add(*h, tag, sizeof tag - 1);
    sha256_add(*h, &key, sizeof key);
}

static int split_hash_end(const Config *cfg, Sha256 *h) {
    unsigned char d[32];
    sha256_digest(h, d);
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u = u << 8 | d[i];
    double x = (double)(u >> 11) / 9007199254740992.0;  // exactly: 53 bits over 2^53
    if (x < cfg->data.import.test_fraction) return SPLIT_TEST;
    if (x < cfg->data.import.test_fraction + cfg->data.import.validation_fraction) return SPLIT_VALIDATION;
    return SPLIT_TRAIN;
}

int import_split_of(const Config *cfg, const int32_t *ids, int64_t n) {
    Sha256 *h;
    split_hash_begin(cfg, &h);
    sha256_add(h, ids, (size_t)n * sizeof *ids);
    return split_hash_end(cfg, h);
}

// A document of L ids: its pieces (n), n - r of length q and r of q + 1 (piece j is
// [floor(j·L/n), floor((j+1)·L/n)), whose lengths take these two values).
typedef struct {
    int64_t n, q, r;
} Pieces;
static Pieces pieces_of(int64_t L, int64_t hi) {
    Pieces p = {(L + hi - 1) / hi, 0, 0};
    p.q = L / p.n, p.r = L % p.n;
    return p;
}

// The record of a document between the passes: its length (int64), split (uint8) and the
// checksum of its ids (uint64), in a temporary file removed at once (nothing is left behind,
// however the import ends).
enum { RECORD_BYTES = 17, RECORD_BUF = 1 << 16 };

// A 64-bit checksum of a document's ids, the same however they are handed over (each id by
// its position in the document): FNV-1a over 32-bit words in four lanes by position mod 4.
// Not cryptographic: it tells the second pass that an input changed since the first; the
// second pass's SHA-256 of every input is what records the bytes.
typedef struct {
    uint64_t lane[4];
    int64_t at;
} IdsSum;
static void ids_sum_begin(IdsSum *m) {
    for (int k = 0; k < 4; k++) m->lane[k] = 0xcbf29ce484222325ULL + (uint64_t)k;
    m->at = 0;
}
static void ids_sum_add(IdsSum *m, const int32_t *ids, int64_t n) {
    const uint64_t P = 0x100000001b3ULL;
    int64_t i = 0;
    for (; i < n && (m->at + i) & 3; i++) m->lane[(m->at + i) & 3] = (m->lane[(m->at + i) & 3] ^ (uint32_t)ids[i]) * P;
    uint64_t a = m->lane[0], b = m->lane[1], c = m->lane[2], d = m->lane[3];  // four chains side by side
    for (; i + 4 <= n; i += 4) {
        a = (a ^ (uint32_t)ids[i]) * P, b = (b ^ (uint32_t)ids[i + 1]) * P;
        c = (c ^ (uint32_t)ids[i + 2]) * P, d = (d ^ (uint32_t)ids[i + 3]) * P;
    }
    m->lane[0] = a, m->lane[1] = b, m->lane[2] = c, m->lane[3] = d;
    for (; i < n; i++) m->lane[(m->at + i) & 3] = (m->lane[(m->at + i) & 3] ^ (uint32_t)ids[i]) * P;
    m->at += n;
}
static uint64_t ids_sum_end(const IdsSum *m) {
    uint64_t h = 0;
    for (int k = 0; k < 4; k++) h = (h ^ m->lane[k]) * 0x100000001b3ULL;
    return h;
}
typedef struct {
    FILE *f;
} Records;

static int records_open(Records *r, const char *dir) {
    char tmpl[1200];
    snprintf(tmpl, sizeof tmpl, "%s/.ddptok-import-XXXXXX", dir);
    int fd = mkstemp(tmpl);
    if (fd < 0) return error("%s: cannot create the import's temporary file: %s", dir, strerror(errno));
    unlink(tmpl);
    r->f = fdopen(fd, "w+");
    if (!r->f) return close(fd), error("%s: cannot open the import's temporary file: %s", dir, strerror(errno));
    setvbuf(r->f, NULL, _IOFBF, RECORD_BUF);
    return 0;
}

// ---------------------------------------------------------------------------------------
// Pass 1: counting

typedef struct {
    DocSink sink;
    const Config *cfg;
    ImportSummary *sum;
    Records *rec;
    int by_hash, file_split;  // the split rule; the current file's split by name
    int64_t L;
    Sha256 *h;
    IdsSum ids;               // of the open document's ids
    int failed;
    // One token stream (--eot over shards): where a separator is a boundary, not an empty
    // document. fresh: nothing since the stream's start or a split change (llm.c puts the EOT
    // before each document: a shard's leading EOT); closing: the end one_pass makes at a split
    // change or the stream's end (nanoGPT puts it after: a separator right before it);
    // pending_cut: a document ended at a split change, cut only if the next shard goes on with
    // its ids rather than beginning with the EOT.
    int stream, fresh, closing, pending_cut;
} Counter;

static int counter_add(DocSink *s, const int32_t *ids, int64_t n) {
    Counter *c = (Counter *)s;
    if (c->pending_cut) c->sum->cut_at_split++, c->pending_cut = 0;  // the shard goes on with the document
    c->fresh = 0;
    if (c->L == 0) ids_sum_begin(&c->ids);
    ids_sum_add(&c->ids, ids, n);
    if (c->by_hash) {
        if (!c->h) split_hash_begin(c->cfg, &c->h);
        sha256_add(c->h, ids, (size_t)n * sizeof *ids);
    }
    c->L += n;
    c->sum->tokens_read += n;
    return 0;
}

static int counter_end(DocSink *s) {
    Counter *c = (Counter *)s;
    ImportSummary *sum = c->sum;
    int64_t L = c->L, lo = c->cfg->data.min_length;
    c->L = 0;
    if (L == 0 && c->stream && (c->fresh || c->closing)) {  // a boundary, no document between
        if (c->fresh) c->pending_cut = 0;  // the shard begins with the EOT: the document before ended with its shard
        c->fresh = 0;
        return 0;
    }
    if (L == 0) return sum->empty++, 0;
    int split = c->by_hash ? split_hash_end(c->cfg, c->h) : c->file_split;
    c->h = NULL;
    unsigned char rec[RECORD_BYTES];
    uint64_t check = ids_sum_end(&c->ids);
    memcpy(rec, &L, 8), rec[8] = (unsigned char)split, memcpy(rec + 9, &check, 8);
    if (fwrite(rec, 1, RECORD_BYTES, c->rec->f) != RECORD_BYTES) return error("import: cannot write its temporary file: %s", strerror(errno));
    Pieces p = pieces_of(L, c->cfg->data.max_length);
    int64_t kept_short = p.q >= lo ? p.n - p.r : 0, kept_long = p.q + 1 >= lo ? p.r : 0;
    sum->documents++, sum->docs[split]++;
    sum->pieces += p.n;
    sum->seqs[split] += kept_short + kept_long;
    sum->tokens[split] += kept_short * p.q + kept_long * (p.q + 1);
    sum->short_pieces += p.n - kept_short - kept_long;
    sum->short_tokens += L - kept_short * p.q - kept_long * (p.q + 1);
    if (sum->seqs[0] + sum->seqs[1] + sum->seqs[2] > INT32_MAX)
        return error("import: more than 2^31 - 1 sequences (the corpus counts them in int)");
    return 0;
}

// ---------------------------------------------------------------------------------------
// Pass 2: each piece into its split's region

typedef struct {
    DocSink sink;
    const Config *cfg;
    CorpusWriter *w;
    Records *rec;
    int open;              // a document is open (its record read)
    int64_t doc;           // its index
    int64_t L, at, split;  // its length and split from the record; ids placed so far
    uint64_t check;        // its ids' checksum from the record
    IdsSum sum;            // of the ids placed
    Pieces p;
    int64_t j, piece_end;  // the open piece and where it ends in the document
    int32_t *piece;        // (max_length)
    int64_t in_piece;
    const char *path;      // the file being read
    int64_t documents;     // from the first pass
} Placer;

static int64_t piece_end(const Placer *pl, int64_t j) {  // floor((j + 1)·L / n)
    return (int64_t)((unsigned __int128)(j + 1) * (uint64_t)pl->L / (uint64_t)pl->p.n);
}

static int placer_add(DocSink *s, const int32_t *ids, int64_t n) {
    Placer *pl = (Placer *)s;
    if (!pl->open) {
        unsigned char rec[RECORD_BYTES];
        if (fread(rec, 1, RECORD_BYTES, pl->rec->f) != RECORD_BYTES)
            return error("%s: it holds more documents than in the first pass: the inputs changed while importing", pl->path);
        memcpy(&pl->L, rec, 8), pl->split = rec[8], memcpy(&pl->check, rec + 9, 8);
        pl->open = 1, pl->at = 0, pl->j = 0, pl->in_piece = 0;
        ids_sum_begin(&pl->sum);
        pl->p = pieces_of(pl->L, pl->cfg->data.max_length);
        pl->piece_end = piece_end(pl, 0);
    }
    if (pl->at + n > pl->L)
        return error("%s: document %lld is longer than in the first pass (%lld ids): the inputs changed while importing", pl->path,
                     (long long)pl->doc, (long long)pl->L);
    ids_sum_add(&pl->sum, ids, n);
    while (n > 0) {
        int64_t take = pl->piece_end - pl->at < n ? pl->piece_end - pl->at : n;
        memcpy(pl->piece + pl->in_piece, ids, (size_t)take * sizeof *ids);
        pl->in_piece += take, pl->at += take, ids += take, n -= take;
        if (pl->at == pl->piece_end) {
            if (pl->in_piece >= pl->cfg->data.min_length &&
                corpus_writer_add(pl->w, (int)pl->split, pl->piece, (int)pl->in_piece, pl->doc))
                return -1;
            pl->j++, pl->in_piece = 0;
            if (pl->j < pl->p.n) pl->piece_end = piece_end(pl, pl->j);
        }
    }
    return 0;
}

static int placer_end(DocSink *s) {
    Placer *pl = (Placer *)s;
    if (!pl->open) return 0;  // an empty document (not recorded)
    if (pl->at != pl->L)
        return error("%s: document %lld has %lld ids, %lld in the first pass: the inputs changed while importing", pl->path,
                     (long long)pl->doc, (long long)pl->at, (long long)pl->L);
    if (ids_sum_end(&pl->sum) != pl->check)
        return error("%s: document %lld holds other ids than in the first pass: the file changed while importing (nothing "
                     "written; import it when it no longer changes)", pl->path, (long long)pl->doc);
    pl->doc++, pl->open = 0;
    if (pl->doc == pl->documents / 2 + 1) test_point("import-placing");  // halfway through the second pass
    return 0;
}

// ---------------------------------------------------------------------------------------
// The passes

// One pass over every file through `sink`; the file's SHA-256s into sha (files x 2).
static int one_pass(const Config *cfg, const ImportSpec *spec, const ImportInput *files, int n_files, DocSink *sink,
                    Counter *counter, Placer *placer, char (*sha)[2][65], ImportSummary *sum, int64_t *docs_at) {
    const ImportReader *reader = &import_readers[spec->format];
    int stream = reader->ends == DOCS_STREAM && spec->eot >= 0, rc = 0;
    (void)cfg;
    if (counter) counter->stream = stream, counter->fresh = 1, counter->closing = counter->pending_cut = 0;
    for (int i = 0; i < n_files && !rc; i++) {
        if (counter) counter->file_split = files[i].split, sum->files++;
        if (placer) placer->path = files[i].path;
        rc = reader->read(spec, files[i].path, sink, sha[i]);
        // A file's end ends its document, unless the reader closed them all or the files are
        // one token stream cut into shards (its last document ends after the last file, or
        // where the inputs' own split changes: a document never crosses it).
        int split_changes = spec->split_from_names && i + 1 < n_files && files[i + 1].split != files[i].split;
        if (!rc && reader->ends != DOCS_OWN && (!stream || split_changes)) {
            if (counter && stream) counter->pending_cut = counter->L > 0, counter->closing = 1;  // counted if the next shard goes on
            rc = sink->end(sink);
            if (counter && stream) counter->closing = 0, counter->fresh = 1;
        }
        // The documents ended by the end of each file: the second pass names the file whose
        // count changed (was: the next file, where the shifted records first disagreed).
        if (!rc && counter) docs_at[i] = sum->documents;
        if (!rc && placer && placer->doc != docs_at[i])
            rc = error("%s: %lld documents end by its end, %lld in the first pass: the file changed while importing (nothing "
                       "written; import it when it no longer changes)", files[i].path, (long long)placer->doc, (long long)docs_at[i]);
    }
    if (!rc && stream) {
        if (counter) counter->closing = 1;  // the stream's end: a separator just before it ended the last document
        rc = sink->end(sink);
    }
    return rc;
}

void import_summary_text(const ImportSummary *s, char *out, size_t len) {
    snprintf(out, len,
             "%lld documents (%lld empty skipped), %lld tokens read; %lld pieces, %lld shorter than data.min_length dropped "
             "(%lld tokens); sequences train %lld, validation %lld, test %lld; tokens %lld, %lld, %lld",
             (long long)s->documents, (long long)s->empty, (long long)s->tokens_read, (long long)s->pieces,
             (long long)s->short_pieces, (long long)s->short_tokens, (long long)s->seqs[0], (long long)s->seqs[1],
             (long long)s->seqs[2], (long long)s->tokens[0], (long long)s->tokens[1], (long long)s->tokens[2]);
}

// One "SHA256  NAME" line of import_files as sha256sum writes it (GNU coreutils): a name
// holding a backslash, a newline or a carriage return has them as \\, \n, \r and the line
// starts with a backslash, so no name can end its line early or add a line of its own.
static void sums_line(Buf *b, const char *sum, const char *name) {
    int esc = strpbrk(name, "\\\n\r") != NULL;
    buf_printf(b, "%s%s  ", esc ? "\\" : "", sum);
    for (const char *p = name; *p; p++)
        if (esc && (*p == '\\' || *p == '\n' || *p == '\r')) buf_printf(b, "\\%c", *p == '\n' ? 'n' : *p == '\r' ? 'r' : '\\');
        else buf_printf(b, "%c", *p);
    buf_printf(b, "\n");
}

// The files' lines (their .bin too for megatron), with the SHA-256s of sha.
static void files_text(const ImportSpec *spec, const ImportInput *files, int n_files, char (*sha)[2][65], Buf *b) {
    buf_printf(b, "%s", "");
    for (int i = 0; i < n_files; i++) {
        sums_line(b, sha[i][0], files[i].path);
        if (import_readers[spec->format].files == 2) {
            size_t n = strlen(files[i].path);
            char *bin = xmalloc(n + 1);
            memcpy(bin, files[i].path, n + 1);
            if (n >= 4) memcpy(bin + n - 4, ".bin", 4);
            sums_line(b, sha[i][1], bin);
            free(bin);
        }
    }
}

int import_write(const Config *cfg, const ImportSpec *spec_in, const ImportInput *files, int n_files, const char *path,
                 const char *args, int64_t args_len, ImportSummary *sum) {
    memset(sum, 0, sizeof *sum);
    ImportSpec spec = *spec_in;
    spec.budgeted = IMPORT_MEMORY;
    if (import_budget(&spec) || import_probe(&spec, files, n_files)) return -1;
    ImportProgress progress = {.total = 0};
    for (int i = 0; i < n_files; i++) {
        struct stat st;
        if (stat(files[i].path, &st) == 0) progress.total += 2 * (int64_t)st.st_size;
    }
    sum->input_bytes = progress.total / 2;
    double t0 = now_seconds();
    work_progress_init(&progress.line, "import: bytes read (two passes)");
    spec.progress = &progress;
    char dir[1100];
    dir_of(path, dir, sizeof dir);
    if (mkdir_p(dir)) return -1;
    Records rec;
    if (records_open(&rec, dir)) return -1;
    spec.hasher = hasher_start(sum->input_bytes);
    char (*sha1)[2][65] = xcalloc((size_t)n_files, sizeof *sha1), (*sha2)[2][65] = xcalloc((size_t)n_files, sizeof *sha2);
    Counter counter = {.sink = {counter_add, counter_end}, .cfg = cfg, .sum = sum, .rec = &rec, .by_hash = !spec.split_from_names};
    ImportSpec first = spec;
    first.no_file_sha = 1, first.hasher = NULL;  // the second pass hashes the inputs (the bytes the corpus is cut from)
    int64_t *docs_at = xcalloc((size_t)n_files, sizeof *docs_at);  // (files) documents ended by each file's end, first pass
    int rc = one_pass(cfg, &first, files, n_files, &counter.sink, &counter, NULL, sha1, sum, docs_at);
    if (counter.h) {  // a document left open by a reader that failed
        unsigned char drop[32];
        sha256_digest(counter.h, drop);
    }
    if (!rc && fflush(rec.f) != 0) rc = error("import: cannot write its temporary file: %s", strerror(errno));
    if (!rc && sum->seqs[SPLIT_TRAIN] == 0)
        rc = error("import: no train sequence among %lld documents (%lld sequences kept, %lld pieces shorter than data.min_length "
                   "%d dropped): nothing to train on%s", (long long)sum->documents, (long long)(sum->seqs[1] + sum->seqs[2]),
                   (long long)sum->short_pieces, cfg->data.min_length,
                   spec.split_from_names ? " (no input is named train)"
                   : sum->documents < 10 ? ": cut the input into more documents (--delimiter TEXT, --eot ID), or another data.import.split_seed"
                                         : "");
    test_point("import-counted");
    double t1 = now_seconds();
    sum->seconds[0] = t1 - t0;
    CorpusWriter *w = NULL;
    Buf text = {0};
    if (!rc) {
        // import_files' size is known now: its lines with any 64 hex digits.
        char (*dummy)[2][65] = xcalloc((size_t)n_files, sizeof *dummy);
        for (int i = 0; i < n_files; i++) memset(dummy[i][0], '0', 64), memset(dummy[i][1], '0', 64);
        files_text(&spec, files, n_files, dummy, &text);
        free(dummy);
        char summary[700];
        import_summary_text(sum, summary, sizeof summary);
        CorpusShape shape;
        memcpy(shape.sequences, sum->seqs, sizeof shape.sequences), memcpy(shape.tokens, sum->tokens, sizeof shape.tokens);
        CorpusImport imp = {import_format_names[spec.format], spec.options_text ? spec.options_text : "", summary,
                            !spec.split_from_names, (int64_t)text.n, args_len};
        rc = corpus_writer_open(&w, path, &shape, cfg, &imp);
    }
    if (!rc) {
        rewind(rec.f);
        Placer placer = {.sink = {placer_add, placer_end}, .cfg = cfg, .w = w, .rec = &rec, .documents = sum->documents};
        placer.piece = xmalloc((size_t)cfg->data.max_length * sizeof *placer.piece);
        ImportSummary again;
        memset(&again, 0, sizeof again);
        rc = one_pass(cfg, &spec, files, n_files, &placer.sink, NULL, &placer, sha2, &again, docs_at);
        free(placer.piece);
        unsigned char extra;
        if (!rc && fread(&extra, 1, 1, rec.f) == 1)
            rc = error("import: the inputs hold fewer documents than in the first pass: they changed while importing");
    }
    double t2 = now_seconds();
    sum->seconds[1] = t2 - t1;
    if (!rc) {
        buf_free(&text);
        files_text(&spec, files, n_files, sha2, &text);
        const char *texts[2] = {text.s, args};
        rc = corpus_writer_finish(w, texts);
        w = NULL;
    }
    sum->seconds[2] = now_seconds() - t2;
    if (w) corpus_writer_abort(w);
    hasher_stop(spec.hasher);
    buf_free(&text);
    fclose(rec.f);
    free(sha1), free(sha2), free(docs_at);
    return rc;
}
