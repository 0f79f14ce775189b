// corpus_file.c — corpus.h5 read on demand (see corpus.h; docs/data.md "On disk").
//
// corpus_read opens the file, checks what can be checked without the tokens (format,
// shapes, where each dataset lies, the chunk checksums against the content digest, the data
// lock) and keeps a descriptor. Every later read is a pread of whole chunks of tokens or
// offsets (config/budget.h): a chunk is checked against its SHA-256 before any of it is used, then
// kept in a direct-mapped cache of a size fixed by the config (never by the corpus). A
// prefetch thread may warm chunks while the training thread reads (one mutex; the disk read
// and the hash run outside it).
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/budget.h"
#include "data/corpus.h"
#include "io/h5io.h"

enum { KIND_TOKENS = 0, KIND_OFFSETS = 1 };

typedef struct {
    int n_slots;
    int64_t *chunk;  // (n_slots) the chunk each slot holds, -1 for none
    void **data;     // (n_slots) allocated when first used
} Cache;

struct CorpusFile {
    char path[1024];
    int fd;
    int n, V, lo, hi;
    int64_t n_tokens;
    int64_t at[2], sums_at[2], count[2];  // per kind: the data's and its checksums' byte addresses, element count
    int64_t split_at;
    size_t elem[2];
    int64_t chunk[2];  // elements per checksummed chunk
    Cache cache[2];
    pthread_mutex_t mu;
    CorpusReads reads;
    char remedy[HINT_MAX];  // the command that makes this config's corpus again
    int v1_known;  // the format-1 lock computed (v1 holds it)
    char v1[65];
};

static const char *const kind_names[2] = {"tokens", "offsets"};

// Set on the prefetch thread: its reads are not waits, and a chunk that fails its checks
// gives it a harmless answer (the training thread meets the same chunk and reports it).
static __thread int g_warming;
void corpus_warming(int on) { g_warming = on; }

static int pread_all(int fd, void *buf, size_t n, int64_t at) {
    char *p = buf;
    while (n > 0) {
        ssize_t got = pread(fd, p, n, (off_t)at);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return got < 0 ? -1 : (errno = EIO, -1);
        p += got, n -= (size_t)got, at += got;
    }
    return 0;
}

static int64_t chunk_count(const CorpusFile *f, int kind, int64_t c) {
    int64_t left = f->count[kind] - c * f->chunk[kind];
    return left < f->chunk[kind] ? left : f->chunk[kind];
}

// Reads chunk c of `kind` and checks it against its checksum: a fresh buffer, or NULL with
// the reason in why.
static void *chunk_load(CorpusFile *f, int kind, int64_t c, char *why, size_t whylen) {
    size_t bytes = (size_t)chunk_count(f, kind, c) * f->elem[kind];
    void *buf = xmalloc((size_t)f->chunk[kind] * f->elem[kind]);
    unsigned char want[32], got[32];
    double t0 = now_seconds();
    if (pread_all(f->fd, buf, bytes, f->at[kind] + c * f->chunk[kind] * (int64_t)f->elem[kind]) ||
        pread_all(f->fd, want, 32, f->sums_at[kind] + 32 * c)) {
        snprintf(why, whylen, "cannot read %s chunk %lld: %s", kind_names[kind], (long long)c, strerror(errno));
        free(buf);
        return NULL;
    }
    Sha256 *h = sha256_begin();
    sha256_add(h, buf, bytes);
    sha256_digest(h, got);
    double dt = now_seconds() - t0;
    pthread_mutex_lock(&f->mu);
    f->reads.chunks++, f->reads.bytes += (int64_t)bytes + 32, f->reads.seconds += dt;
    pthread_mutex_unlock(&f->mu);
    if (memcmp(want, got, 32) != 0) {
        snprintf(why, whylen, "%s %lld..%lld (chunk %lld) do not match their SHA-256 in /%s_sha256: altered after it was made",
                 kind_names[kind], (long long)(c * f->chunk[kind]), (long long)(c * f->chunk[kind] + chunk_count(f, kind, c) - 1),
                 (long long)c, kind == KIND_TOKENS ? "token" : "offset");
        free(buf);
        return NULL;
    }
    return buf;
}

// Copies elements [first, first + count) of `kind` into out (NULL: only brings their chunks
// into the cache). -1 with the reason in why when a chunk cannot be read or fails its check.
static int copy_range(CorpusFile *f, int kind, int64_t first, int64_t count, void *out, char *why, size_t whylen) {
    Cache *k = &f->cache[kind];
    size_t e = f->elem[kind];
    int64_t K = f->chunk[kind];
    for (int64_t c = first / K; count > 0; c++) {
        int64_t from = first - c * K, take = K - from < count ? K - from : count;
        int slot = (int)(c % k->n_slots);
        pthread_mutex_lock(&f->mu);
        int hit = k->chunk[slot] == c;
        if (hit && out) memcpy(out, (char *)k->data[slot] + (size_t)from * e, (size_t)take * e);
        pthread_mutex_unlock(&f->mu);
        if (!hit) {
            double t0 = now_seconds();
            void *buf = chunk_load(f, kind, c, why, whylen);
            if (!buf) return -1;
            pthread_mutex_lock(&f->mu);
            if (out && !g_warming) f->reads.waited += now_seconds() - t0;
            free(k->data[slot]);
            k->data[slot] = buf, k->chunk[slot] = c;
            if (out) memcpy(out, (char *)buf + (size_t)from * e, (size_t)take * e);
            pthread_mutex_unlock(&f->mu);
        }
        if (out) out = (char *)out + (size_t)take * e;
        first += take, count -= take;
    }
    return 0;
}

// Sequence i's token span, checked against the length rule; -1 with why.
static int span(CorpusFile *f, int i, int64_t o[2], char *why, size_t whylen) {
    if (copy_range(f, KIND_OFFSETS, i, 2, o, why, whylen)) return -1;
    int64_t len = o[1] - o[0];
    if (o[0] < 0 || o[1] > f->n_tokens || len < f->lo || len > f->hi) {
        snprintf(why, whylen, "sequence %d has offsets %lld..%lld (length %lld), expected a length in [%d, %d] "
                 "(data.min_length, data.max_length) within the %lld tokens", i, (long long)o[0], (long long)o[1],
                 (long long)len, f->lo, f->hi, (long long)f->n_tokens);
        return -1;
    }
    return 0;
}

int corpus_file_len(CorpusFile *f, int i) {
    int64_t o[2];
    char why[400];
    if (i < 0 || i >= f->n) die(EXIT_BAD_INPUT, "%s: sequence %d asked for, the corpus has %d (BUG?)", f->path, i, f->n);
    if (span(f, i, o, why, sizeof why)) {
        if (g_warming) return f->lo;
        die(EXIT_BAD_INPUT, "%s: %s: run `%s`", f->path, why, f->remedy);
    }
    return (int)(o[1] - o[0]);
}

int corpus_tokens(const Corpus *c, int i, int32_t *out) {
    if (!c->file) {
        int len = corpus_len(c, i);
        memcpy(out, c->tokens + c->offsets[i], (size_t)len * sizeof *out);
        return len;
    }
    CorpusFile *f = c->file;
    int64_t o[2];
    char why[400];
    if (span(f, i, o, why, sizeof why) || copy_range(f, KIND_TOKENS, o[0], o[1] - o[0], out, why, sizeof why)) {
        if (g_warming) return 0;
        die(EXIT_BAD_INPUT, "%s: read for sequence %d: %s: run `%s`", f->path, i, why, f->remedy);
    }
    int len = (int)(o[1] - o[0]);
    for (int t = 0; t < len; t++)
        if (out[t] < 1 || out[t] >= f->V) {
            if (g_warming) return 0;
            die(EXIT_BAD_INPUT, "%s: sequence %d: token %d (at %lld) is %d, expected an id in [1, %d] (data.vocab_size - 1): "
                "run `%s`", f->path, i, t, (long long)(o[0] + t), out[t], f->V - 1, f->remedy);
        }
    return len;
}

void corpus_warm(const Corpus *c, const int32_t *ids, int n) {
    if (!c->file) return;
    char why[400];
    for (int s = 0; s < n; s++) {
        int64_t o[2];
        if (ids[s] < 0 || ids[s] >= c->n || span(c->file, ids[s], o, why, sizeof why)) continue;
        (void)copy_range(c->file, KIND_TOKENS, o[0], o[1] - o[0], NULL, why, sizeof why);
    }
}

CorpusReads corpus_reads(const Corpus *c) {
    CorpusReads r = {0, 0, 0, 0};
    if (!c->file) return r;
    pthread_mutex_lock(&c->file->mu);
    r = c->file->reads;
    pthread_mutex_unlock(&c->file->mu);
    return r;
}

void corpus_file_close(CorpusFile *f) {
    for (int k = 0; k < 2; k++) {
        for (int s = 0; s < f->cache[k].n_slots; s++) free(f->cache[k].data[s]);
        free(f->cache[k].data), free(f->cache[k].chunk);
    }
    if (f->fd >= 0) close(f->fd);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

// Streams `bytes` bytes at `at` through h, 1 MiB at a time, and gives each block to
// `look` (may be NULL; non-zero stops); -1 with why.
typedef int (*BlockLook)(const uint8_t *p, size_t n, int64_t first, void *ctx);
static int stream(CorpusFile *f, Sha256 *h, int64_t at, int64_t bytes, char *why, size_t whylen, BlockLook look, void *ctx) {
    uint8_t *block = xmalloc((size_t)1 << 20);
    int rc = 0;
    for (int64_t done = 0; done < bytes && !rc;) {
        size_t n = bytes - done < (1 << 20) ? (size_t)(bytes - done) : (size_t)1 << 20;
        if (pread_all(f->fd, block, n, at + done)) { snprintf(why, whylen, "cannot read: %s", strerror(errno)); rc = -1; }
        else if (look && look(block, n, done, ctx)) rc = -1;
        else sha256_add(h, block, n), done += (int64_t)n;
    }
    free(block);
    return rc;
}

int corpus_file_lock_v1_matches(CorpusFile *f, const Config *cfg, const char *stored) {
    if (!f->v1_known) {
        Sha256 *h;
        corpus_lock_v1(cfg, &h);
        char why[300];
        // An unreadable corpus gives a lock nobody stored (and its reads fail later, by name).
        (void)(stream(f, h, f->at[KIND_TOKENS], f->n_tokens * 4, why, sizeof why, NULL, NULL) ||
               stream(f, h, f->at[KIND_OFFSETS], ((int64_t)f->n + 1) * 8, why, sizeof why, NULL, NULL) ||
               stream(f, h, f->split_at, f->n, why, sizeof why, NULL, NULL));
        sha256_hex(h, f->v1);
        f->v1_known = 1;
    }
    return strcmp(stored, f->v1) == 0;
}

// The split bytes: 0, 1 or 2, grouped in that order; fills split_first.
typedef struct {
    int split_first[4], last;
    char *why;
    size_t whylen;
} SplitScan;

static int split_look(const uint8_t *p, size_t n, int64_t first, void *ctx) {
    SplitScan *s = ctx;
    for (size_t j = 0; j < n; j++) {
        int v = p[j];
        if (v > SPLIT_TEST || v < s->last)
            return snprintf(s->why, s->whylen, "sequence %lld has split %d after %d, expected 0, 1 or 2 (train, "
                            "validation, test), grouped in that order", (long long)first + (long long)j, v, s->last), -1;
        while (s->last < v) s->split_first[++s->last] = (int)(first + (int64_t)j);
    }
    return 0;
}

// What makes this config's corpus.h5: "prepare --config FILE" or "import --config FILE ...".
static const char *remedy(const Config *cfg, char *buf, size_t len) {
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    return hint_command(buf, len, imported ? "import" : "prepare", 0, imported ? " --format F --input PATH" : NULL);
}

static void cache_init(Cache *k, int64_t slots) {
    k->n_slots = (int)slots;
    k->chunk = xmalloc((size_t)k->n_slots * sizeof *k->chunk);
    k->data = xcalloc((size_t)k->n_slots, sizeof *k->data);
    for (int i = 0; i < k->n_slots; i++) k->chunk[i] = -1;
}

int corpus_read(Corpus *corpus, const Config *cfg, const char *path) {
    memset(corpus, 0, sizeof *corpus);
    char make[HINT_MAX], hint[HINT_MAX + 16], why[600] = "";
    remedy(cfg, make, sizeof make);
    snprintf(hint, sizeof hint, "run `%s` first", make);
    int fd;
    int64_t size;
    hid_t h5 = h5_open_file(path, hint, &fd, &size);
    if (h5 < 0) return -1;
    CorpusFile *f = xcalloc(1, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->remedy, sizeof f->remedy, "%s", make);
    f->fd = fd;
    pthread_mutex_init(&f->mu, NULL);
    f->V = cfg->data.vocab_size, f->lo = cfg->data.min_length, f->hi = cfg->data.max_length;
    f->elem[KIND_TOKENS] = 4, f->elem[KIND_OFFSETS] = 8;
    int rc = -1;
    char *stored = NULL, *source = NULL, *content = NULL;
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    int64_t n = (int64_t)cfg->data.n_train + cfg->data.n_validation + cfg->data.n_test, format = 0, tchunk = 0, ochunk = 0;
    int64_t nt = h5_size(h5, path, "tokens", NULL, NULL), ns = h5_size(h5, path, "split", NULL, NULL),
            no = h5_size(h5, path, "offsets", NULL, NULL);
    if (nt < 0 || ns < 0 || no < 0) goto out;
    // Which command made it: an imported corpus says so ("source"); prepare's has no such attribute.
    if (H5Aexists(h5, "source") > 0 && !(source = h5_attr_read_str(h5, path, "source"))) goto out;
    if (strcmp(source ? source : "synthetic", data_source_names[cfg->data.source]) != 0) {
        error("%s: a corpus of data.source %s, this config has data.source %s: run `%s`", path,
              source ? (strcmp(source, "imported") ? "(unknown)" : "imported") : "synthetic", data_source_names[cfg->data.source],
              make);
        goto out;
    }
    if (H5Aexists(h5, "format") <= 0) {
        error("%s: made by an older ddptok (no chunk checksums, which reading on demand checks): run `%s`", path, make);
        goto out;
    }
    if (h5_attr_read_i64(h5, path, "format", &format)) goto out;
    if (format != 2) {
        error("%s: corpus format %lld, this ddptok reads format 2: run `%s`", path, (long long)format, make);
        goto out;
    }
    if (h5_attr_read_i64(h5, path, "token_chunk", &tchunk) || h5_attr_read_i64(h5, path, "offset_chunk", &ochunk)) goto out;
    if (tchunk != CORPUS_TOKEN_CHUNK || ochunk != CORPUS_OFFSET_CHUNK) {
        error("%s: chunks of %lld tokens and %lld offsets, this ddptok checks chunks of %d and %d: run `%s`", path,
              (long long)tchunk, (long long)ochunk, CORPUS_TOKEN_CHUNK, CORPUS_OFFSET_CHUNK, make);
        goto out;
    }
    f->chunk[KIND_TOKENS] = tchunk, f->chunk[KIND_OFFSETS] = ochunk;
    // Shapes from the config (an imported corpus: one offset more than sequences), before allocating.
    if (imported) n = ns;
    if (ns != n || no != n + 1 || n < 1 || n > INT32_MAX) {
        if (imported)
            error("%s: %lld sequences and %lld offsets, expected 1..2^31-1 sequences and one offset more: run `%s`", path,
                  (long long)ns, (long long)no, make);
        else
            error("%s: %lld sequences and %lld offsets, this config has %lld sequences (data.splits.*): run `%s`", path,
                  (long long)ns, (long long)no, (long long)n, make);
        goto out;
    }
    if (nt < n * cfg->data.min_length || nt > n * cfg->data.max_length) {
        error("%s: %lld tokens, expected %lld..%lld for %lld sequences of lengths [%d, %d]", path, (long long)nt,
              (long long)(n * cfg->data.min_length), (long long)(n * cfg->data.max_length), (long long)n,
              cfg->data.min_length, cfg->data.max_length);
        goto out;
    }
    f->n = (int)n, f->n_tokens = nt;
    f->count[KIND_TOKENS] = nt, f->count[KIND_OFFSETS] = n + 1;
    hsize_t dt = (hsize_t)nt, dof = (hsize_t)(n + 1), dsp = (hsize_t)n, st[2] = {(hsize_t)corpus_chunks(nt, tchunk), 32},
            so[2] = {(hsize_t)corpus_chunks(n + 1, ochunk), 32};
    if (h5_raw_address(h5, path, "tokens", H5T_STD_I32LE, 1, &dt, size, &f->at[KIND_TOKENS]) ||
        h5_raw_address(h5, path, "offsets", H5T_STD_I64LE, 1, &dof, size, &f->at[KIND_OFFSETS]) ||
        h5_raw_address(h5, path, "split", H5T_NATIVE_UINT8, 1, &dsp, size, &f->split_at) ||
        h5_raw_address(h5, path, "token_sha256", H5T_NATIVE_UINT8, 2, st, size, &f->sums_at[KIND_TOKENS]) ||
        h5_raw_address(h5, path, "offset_sha256", H5T_NATIVE_UINT8, 2, so, size, &f->sums_at[KIND_OFFSETS]))
        goto out;
    if (!(stored = h5_attr_read_str(h5, path, "data_lock")) || !(content = h5_attr_read_str(h5, path, "content_sha256")))
        goto out;
    if (!is_sha256_hex(stored) || !is_sha256_hex(content)) {
        error("%s: its data_lock or content_sha256 is not a SHA-256 (damaged): %s", path, hint);
        goto out;
    }
    // The content digest from the stored checksums (not the tokens): 1/64 of the corpus read
    // once, in blocks; the split bytes with it.
    Sha256 *h;
    corpus_digest_begin(&h, n, nt);
    SplitScan scan = {.why = why, .whylen = sizeof why};
    char digest[65];
    if (stream(f, h, f->sums_at[KIND_TOKENS], (int64_t)st[0] * 32, why, sizeof why, NULL, NULL) ||
        stream(f, h, f->sums_at[KIND_OFFSETS], (int64_t)so[0] * 32, why, sizeof why, NULL, NULL) ||
        stream(f, h, f->split_at, n, why, sizeof why, split_look, &scan)) {
        sha256_hex(h, digest);
        error("%s: %s: run `%s`", path, why, make);
        goto out;
    }
    sha256_hex(h, digest);
    if (strcmp(digest, content) != 0) {
        error("%s: its chunk checksums and splits hash to %.12s…, its content_sha256 says %.12s… (modified): run `%s`", path,
              digest, content, make);
        goto out;
    }
    while (scan.last < SPLIT_TEST + 1) scan.split_first[++scan.last] = (int)n;
    if (!imported && (scan.split_first[1] != cfg->data.n_train || scan.split_first[2] != cfg->data.n_train + cfg->data.n_validation)) {
        error("%s: splits of %d / %d / %d sequences, this config has %d / %d / %d (data.splits.*): run `%s`", path,
              scan.split_first[1], scan.split_first[2] - scan.split_first[1], (int)n - scan.split_first[2], cfg->data.n_train,
              cfg->data.n_validation, cfg->data.n_test, make);
        goto out;
    }
    corpus_lock_of(cfg, digest, corpus->lock);
    memcpy(corpus->content, digest, sizeof corpus->content);
    if (strcmp(stored, corpus->lock) != 0) {
        error("%s: data lock %.12s… does not match this config's %.12s… (%s with another config or modified): run `%s`", path,
              stored, corpus->lock, imported ? "imported" : "prepared", make);
        goto out;
    }
    int64_t slots[2];
    budget_corpus_cache(cfg, &slots[KIND_TOKENS], &slots[KIND_OFFSETS]);  // the budget counts what it allocates
    cache_init(&f->cache[KIND_TOKENS], slots[KIND_TOKENS]);
    cache_init(&f->cache[KIND_OFFSETS], slots[KIND_OFFSETS]);
    int64_t ends[2][2];
    if (span(f, 0, ends[0], why, sizeof why) || span(f, (int)n - 1, ends[1], why, sizeof why)) {
        error("%s: %s", path, why);
        goto out;
    }
    if (ends[0][0] != 0 || ends[1][1] != nt) {
        error("%s: offsets run from %lld to %lld, expected 0 to the %lld tokens", path, (long long)ends[0][0],
              (long long)ends[1][1], (long long)nt);
        goto out;
    }
    corpus->n = (int)n, corpus->n_tokens = nt, corpus->file = f;
    memcpy(corpus->split_first, scan.split_first, sizeof scan.split_first);
    rc = 0;
out:
    free(stored), free(source), free(content);
    h5_close(h5);
    if (rc) corpus_file_close(f), memset(corpus, 0, sizeof *corpus);
    return rc;
}
