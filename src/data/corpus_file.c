// corpus_file.c — corpus.h5 read on demand (see corpus_file.h; docs/data.md "On disk").
//
// corpus_read opens the file, checks what can be checked without the tokens (format, shapes,
// where each dataset lies, the roots of the checksum trees against the content digest, the
// corpus lock) and keeps a descriptor. Every later read is a pread of whole chunks of tokens or
// offsets (config/budget.h): a chunk is checked against its SHA-256 before any of it is used,
// and that SHA-256 is taken from a page of /token_sha256 (or /offset_sha256) checked against
// its entry in the page above it (/token_tree), up to the root start-up verified. Checked
// chunks and pages are kept in direct-mapped caches of sizes fixed by the config (never by the
// corpus). A prefetch thread may warm chunks while the training thread reads (one mutex; the
// disk reads and the hashes run outside it).
#include "data/corpus_file.h"

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
#include "base/testpoint.h"
#include "config/budget.h"
#include "data/data_budget.h"
#include "data/digest.h"
#include "data/lock.h"
#include "io/h5io.h"

enum { KIND_TOKENS = 0, KIND_OFFSETS = 1 };

typedef struct {
    int n_slots;
    int64_t *key;  // (n_slots) the chunk (or page) each slot holds, -1 for none
    void **data;   // (n_slots) allocated when first used
} Cache;

struct CorpusFile {
    char path[1024];
    int fd;
    int64_t size;  // bytes of the file at start-up
    int n, V, lo, hi;
    int64_t n_tokens;
    int64_t at[2], sums_at[2], tree_at[2], count[2];  // per kind: the data's, its checksums' and its tree's byte addresses, elements
    int64_t split_at;
    size_t elem[2];      // bytes per element as stored (tokens: 2 or 4)
    int64_t chunk[2];    // elements per checksummed chunk
    CorpusTree tree[2];  // the levels above the chunk checksums
    uint8_t root[2][32]; // verified at start-up against the content digest
    Cache cache[2];      // checked chunks (raw bytes)
    Cache pages[2];      // checked pages of checksums: key = level << 48 | page
    pthread_mutex_t mu;
    CorpusReads reads;
    char remedy[HINT_MAX];  // the command that makes this config's corpus again
    int v1_known, v2_known;  // the older locks computed (v1, v2 hold them)
    char v1[65], v2[65];
};

static const char *const kind_names[2] = {"tokens", "offsets"};
static const char *const sums_names[2] = {"token_sha256", "offset_sha256"};
static const char *const tree_names[2] = {"token_tree", "offset_tree"};

// Set on the prefetch thread: its reads are not waits, and a chunk that fails its checks
// gives it a harmless answer (the training thread meets the same chunk and reports it).
static __thread int g_warming;
void corpus_warming(int on) { g_warming = on; }

// Exactly n bytes at `at`; -1 with the reason in why (an end of file said as one: a corpus
// truncated after start-up, not "Input/output error").
static int read_at(const CorpusFile *f, void *buf, size_t n, int64_t at, char *why, size_t whylen, const char *what) {
    char *p = buf;
    while (n > 0) {
        ssize_t got = pread(f->fd, p, n, (off_t)at);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return snprintf(why, whylen, "cannot read %s: %s", what, strerror(errno)), -1;
        if (got == 0)
            return snprintf(why, whylen, "cannot read %s: the file ends at byte %lld, before byte %lld (truncated after it was "
                            "opened; it had %lld bytes)", what, (long long)at, (long long)(at + (int64_t)n), (long long)f->size), -1;
        p += got, n -= (size_t)got, at += got;
    }
    return 0;
}

static int64_t chunk_count(const CorpusFile *f, int kind, int64_t c) {
    int64_t left = f->count[kind] - c * f->chunk[kind];
    return left < f->chunk[kind] ? left : f->chunk[kind];
}

static void cache_init(Cache *k, int64_t slots) {
    k->n_slots = (int)slots;
    k->key = xmalloc((size_t)k->n_slots * sizeof *k->key);
    k->data = xcalloc((size_t)k->n_slots, sizeof *k->data);
    for (int i = 0; i < k->n_slots; i++) k->key[i] = -1;
}

static void cache_free(Cache *k) {
    for (int s = 0; s < k->n_slots; s++) free(k->data[s]);
    free(k->data), free(k->key);
}

// Row `index` of level `level` of kind's checksums (0: the chunk checksums), verified up to
// the root: the top level's one row is the root itself; any other row comes from its page,
// hashed and compared with the page's own row one level up. 0, or -1 with why.
static int verified_row(CorpusFile *f, int kind, int level, int64_t index, uint8_t out[32], char *why, size_t whylen) {
    const CorpusTree *t = &f->tree[kind];
    if (level == t->levels) return memcpy(out, f->root[kind], 32), 0;
    int64_t page = index / CORPUS_TREE_PAGE, key = (int64_t)level << 48 | page;
    Cache *k = &f->pages[kind];
    int slot = (int)((uint64_t)(page * 31 + level) % (uint64_t)k->n_slots);
    pthread_mutex_lock(&f->mu);
    int hit = k->key[slot] == key;
    if (hit) memcpy(out, (uint8_t *)k->data[slot] + 32 * (index % CORPUS_TREE_PAGE), 32);
    pthread_mutex_unlock(&f->mu);
    if (hit) return 0;
    int64_t rows = t->rows[level] - page * CORPUS_TREE_PAGE;
    if (rows > CORPUS_TREE_PAGE) rows = CORPUS_TREE_PAGE;
    uint8_t *buf = xmalloc(32 * CORPUS_TREE_PAGE), got[32], want[32];
    int64_t base = level == 0 ? f->sums_at[kind] : f->tree_at[kind] + 32 * t->first[level];
    char what[96];
    snprintf(what, sizeof what, "/%s rows %lld..%lld", level ? tree_names[kind] : sums_names[kind],
             (long long)(level ? t->first[level] : 0) + (long long)(page * CORPUS_TREE_PAGE),
             (long long)(level ? t->first[level] : 0) + (long long)(page * CORPUS_TREE_PAGE + rows - 1));
    if (read_at(f, buf, (size_t)(32 * rows), base + 32 * page * CORPUS_TREE_PAGE, why, whylen, what) ||
        verified_row(f, kind, level + 1, page, want, why, whylen))
        return free(buf), -1;
    corpus_page_sum(buf, rows, got);
    if (memcmp(got, want, 32) != 0) {
        if (level + 1 == t->levels)
            snprintf(why, whylen, "the checksums in %s do not hash to the root of /%s verified at start-up: altered after it was made",
                     what, tree_names[kind]);
        else
            snprintf(why, whylen, "the checksums in %s do not hash to their entry in /%s (the page above them): altered after it was "
                     "made", what, tree_names[kind]);
        return free(buf), -1;
    }
    memcpy(out, buf + 32 * (index % CORPUS_TREE_PAGE), 32);
    pthread_mutex_lock(&f->mu);
    free(k->data[slot]);
    k->data[slot] = buf, k->key[slot] = key;
    pthread_mutex_unlock(&f->mu);
    return 0;
}

// Reads chunk c of `kind` and checks it against its verified checksum: a fresh buffer, or
// NULL with the reason in why.
static void *chunk_load(CorpusFile *f, int kind, int64_t c, char *why, size_t whylen) {
    size_t bytes = (size_t)chunk_count(f, kind, c) * f->elem[kind];
    void *buf = xmalloc((size_t)f->chunk[kind] * f->elem[kind]);
    unsigned char want[32], got[32];
    double t0 = now_seconds();
    char what[96];
    snprintf(what, sizeof what, "%s chunk %lld", kind_names[kind], (long long)c);
    if (read_at(f, buf, bytes, f->at[kind] + c * f->chunk[kind] * (int64_t)f->elem[kind], why, whylen, what) ||
        verified_row(f, kind, 0, c, want, why, whylen)) {
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
        snprintf(why, whylen, "%s %lld..%lld (chunk %lld) do not match their SHA-256 in /%s: altered after it was made",
                 kind_names[kind], (long long)(c * f->chunk[kind]), (long long)(c * f->chunk[kind] + chunk_count(f, kind, c) - 1),
                 (long long)c, sums_names[kind]);
        free(buf);
        return NULL;
    }
    return buf;
}

// Elements [from, from + take) of a cached chunk into out: tokens as int32 (stored as uint16
// or int32 little-endian), offsets as int64.
static void decode(const CorpusFile *f, int kind, const void *chunk, int64_t from, int64_t take, void *out) {
    const uint8_t *p = (const uint8_t *)chunk + (size_t)from * f->elem[kind];
    if (kind == KIND_TOKENS && f->elem[kind] == 2) {
        int32_t *o = out;
        for (int64_t i = 0; i < take; i++) o[i] = (int32_t)(p[2 * i] | p[2 * i + 1] << 8);
    } else memcpy(out, p, (size_t)take * f->elem[kind]);
}

// Copies elements [first, first + count) of `kind` into out (NULL: only brings their chunks
// into the cache). -1 with the reason in why when a chunk cannot be read or fails its check.
static int copy_range(CorpusFile *f, int kind, int64_t first, int64_t count, void *out, char *why, size_t whylen) {
    Cache *k = &f->cache[kind];
    size_t oe = kind == KIND_TOKENS ? 4 : 8;  // bytes per element handed out
    int64_t K = f->chunk[kind];
    for (int64_t c = first / K; count > 0; c++) {
        int64_t from = first - c * K, take = K - from < count ? K - from : count;
        int slot = (int)(c % k->n_slots);
        pthread_mutex_lock(&f->mu);
        int hit = k->key[slot] == c;
        if (hit && out) decode(f, kind, k->data[slot], from, take, out);
        pthread_mutex_unlock(&f->mu);
        if (!hit) {
            double t0 = now_seconds();
            void *buf = chunk_load(f, kind, c, why, whylen);
            if (!buf) return -1;
            pthread_mutex_lock(&f->mu);
            if (out && !g_warming) f->reads.waited += now_seconds() - t0;
            free(k->data[slot]);
            k->data[slot] = buf, k->key[slot] = c;
            if (out) decode(f, kind, buf, from, take, out);
            pthread_mutex_unlock(&f->mu);
        }
        if (out) out = (char *)out + (size_t)take * oe;
        first += take, count -= take;
    }
    return 0;
}

// The length rule for sequence i with offsets o[0], o[1]; -1 with why.
static int length_ok(const CorpusFile *f, int i, const int64_t o[2], char *why, size_t whylen) {
    int64_t len = o[1] - o[0];
    if (o[0] < 0 || o[1] > f->n_tokens || len < f->lo || len > f->hi) {
        snprintf(why, whylen, "sequence %d has offsets %lld..%lld (length %lld), expected a length in [%d, %d] "
                 "(data.min_length, data.max_length) within the %lld tokens", i, (long long)o[0], (long long)o[1],
                 (long long)len, f->lo, f->hi, (long long)f->n_tokens);
        return -1;
    }
    return 0;
}

// Sequence i's token span, checked against the length rule; -1 with why.
static int span(CorpusFile *f, int i, int64_t o[2], char *why, size_t whylen) {
    if (copy_range(f, KIND_OFFSETS, i, 2, o, why, whylen)) return -1;
    return length_ok(f, i, o, why, whylen);
}

int corpus_file_len(CorpusFile *f, int i) {
    int64_t o[2];
    char why[600];
    if (i < 0 || i >= f->n) die(EXIT_BAD_INPUT, "%s: sequence %d asked for, the corpus has %d (BUG?)", f->path, i, f->n);
    if (span(f, i, o, why, sizeof why)) {
        if (g_warming) return f->lo;
        die(EXIT_BAD_INPUT, "%s: %s: run `%s`", f->path, why, f->remedy);
    }
    return (int)(o[1] - o[0]);
}

void corpus_file_lengths(CorpusFile *f, int first, int n, int32_t *out) {
    enum { BLOCK = 512 };
    int64_t o[BLOCK + 1];
    char why[600];
    ASSERT(first >= 0 && n >= 0 && (int64_t)first + n <= f->n);
    for (int done = 0; done < n; done += BLOCK) {
        int k = n - done < BLOCK ? n - done : BLOCK;
        if (copy_range(f, KIND_OFFSETS, first + done, k + 1, o, why, sizeof why))
            die(EXIT_BAD_INPUT, "%s: %s: run `%s`", f->path, why, f->remedy);
        for (int j = 0; j < k; j++) {
            if (length_ok(f, first + done + j, o + j, why, sizeof why)) die(EXIT_BAD_INPUT, "%s: %s: run `%s`", f->path, why, f->remedy);
            out[done + j] = (int32_t)(o[j + 1] - o[j]);
        }
    }
}

int corpus_file_tokens(CorpusFile *f, int i, int32_t *out) {
    int64_t o[2];
    char why[600];
    if (i < 0 || i >= f->n) die(EXIT_BAD_INPUT, "%s: sequence %d asked for, the corpus has %d (BUG?)", f->path, i, f->n);
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

void corpus_file_warm(CorpusFile *f, const int32_t *ids, int n) {
    char why[600];
    for (int s = 0; s < n; s++) {
        int64_t o[2];
        if (ids[s] < 0 || ids[s] >= f->n || span(f, ids[s], o, why, sizeof why)) continue;
        (void)copy_range(f, KIND_TOKENS, o[0], o[1] - o[0], NULL, why, sizeof why);
    }
}

CorpusReads corpus_file_reads(CorpusFile *f) {
    pthread_mutex_lock(&f->mu);
    CorpusReads r = f->reads;
    pthread_mutex_unlock(&f->mu);
    return r;
}

void corpus_file_close(CorpusFile *f) {
    for (int k = 0; k < 2; k++) cache_free(&f->cache[k]), cache_free(&f->pages[k]);
    if (f->fd >= 0) close(f->fd);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

// ---------------------------------------------------------------------------------------
// The locks of older checkpoints, computed once from the data as stored (not its checksums).

// Streams elements [0, count) of `kind` (tokens as int32 little-endian) through fn, a block at a time.
typedef void (*BlockFn)(void *ctx, const uint8_t *p, size_t n);
static int stream_kind(CorpusFile *f, int kind, int64_t count, BlockFn fn, void *ctx) {
    enum { BLOCK = 1 << 16 };
    uint8_t *raw = xmalloc(BLOCK * 8), *wide = xmalloc(BLOCK * 8);
    char why[300];
    int rc = 0;
    for (int64_t done = 0; done < count && !rc; done += BLOCK) {
        int64_t k = count - done < BLOCK ? count - done : BLOCK;
        size_t e = kind < 0 ? 1 : f->elem[kind];
        int64_t at = kind < 0 ? f->split_at + done : f->at[kind] + done * (int64_t)e;
        if ((rc = read_at(f, raw, (size_t)k * e, at, why, sizeof why, kind < 0 ? "split" : kind_names[kind]))) break;
        if (kind == KIND_TOKENS && e == 2) {
            for (int64_t i = 0; i < k; i++) wide[4 * i] = raw[2 * i], wide[4 * i + 1] = raw[2 * i + 1], wide[4 * i + 2] = wide[4 * i + 3] = 0;
            fn(ctx, wide, (size_t)k * 4);
        } else fn(ctx, raw, (size_t)k * e);
    }
    free(raw), free(wide);
    return rc;
}

static void add_bytes(void *ctx, const uint8_t *p, size_t n) { sha256_add(ctx, p, n); }

// Format 2's chunk checksums over a stream: each `chunk` bytes hashed, the sums into h.
typedef struct {
    Sha256 *h, *c;
    size_t chunk, in;
} ChunkSums;
static void add_chunked(void *ctx, const uint8_t *p, size_t n) {
    ChunkSums *s = ctx;
    while (n > 0) {
        if (!s->c) s->c = sha256_begin(), s->in = 0;
        size_t take = s->chunk - s->in < n ? s->chunk - s->in : n;
        sha256_add(s->c, p, take);
        s->in += take, p += take, n -= take;
        if (s->in == s->chunk) {
            uint8_t d[32];
            sha256_digest(s->c, d), s->c = NULL;
            sha256_add(s->h, d, 32);
        }
    }
}
static void chunked_end(ChunkSums *s) {
    if (!s->c) return;
    uint8_t d[32];
    sha256_digest(s->c, d), s->c = NULL;
    sha256_add(s->h, d, 32);
}

int corpus_file_lock_v2_matches(CorpusFile *f, const Config *cfg, const char *stored) {
    if (!f->v2_known) {
        Sha256 *h;
        corpus_digest_v2_begin(&h, f->n, f->n_tokens);
        ChunkSums t = {h, NULL, (size_t)CORPUS_TOKEN_CHUNK * 4, 0}, o = {h, NULL, (size_t)CORPUS_OFFSET_CHUNK * 8, 0};
        // An unreadable corpus gives a lock nobody stored (and its reads fail later, by name).
        int rc = stream_kind(f, KIND_TOKENS, f->n_tokens, add_chunked, &t);
        chunked_end(&t);
        rc = rc || stream_kind(f, KIND_OFFSETS, (int64_t)f->n + 1, add_chunked, &o);
        chunked_end(&o);
        rc = rc || stream_kind(f, -1, f->n, add_bytes, h);
        char content[65];
        sha256_hex(h, content);
        data_lock_v2_of(cfg, content, f->v2);
        if (rc) f->v2[0] = 0;
        f->v2_known = 1;
    }
    return f->v2[0] && strcmp(stored, f->v2) == 0;
}

int corpus_file_lock_v1_matches(CorpusFile *f, const Config *cfg, const char *stored) {
    if (!f->v1_known) {
        Sha256 *h;
        data_lock_v1_begin(cfg, &h);
        int rc = stream_kind(f, KIND_TOKENS, f->n_tokens, add_bytes, h) || stream_kind(f, KIND_OFFSETS, (int64_t)f->n + 1, add_bytes, h) ||
                 stream_kind(f, -1, f->n, add_bytes, h);
        sha256_hex(h, f->v1);
        if (rc) f->v1[0] = 0;
        f->v1_known = 1;
    }
    return f->v1[0] && strcmp(stored, f->v1) == 0;
}

// ---------------------------------------------------------------------------------------
// Start-up

// The remedy from an open corpus.h5 (h5 >= 0: its /import_args, NUL-separated), else a template.
// train.world_size: auto under the bands sampler with auto bands: the one-process command that
// makes the data is told W (config.c refuses it otherwise), the W of this run.
static const char *remedy_of(const Config *cfg, hid_t h5, const char *path, char *buf, size_t len) {
    char world[48] = "";
    if (cfg->train.world_size_auto && cfg->train.bands_auto && cfg->train.sampler != SAMPLER_GLOBAL)
        snprintf(world, sizeof world, " --set train.world_size=%d", cfg->train.world_size);
    if (cfg->data.source != DATA_SOURCE_IMPORTED) return hint_command(buf, len, "prepare", 0, world);
    char extra[HINT_MAX] = "";
    error_capture(1);
    int64_t n = h5 >= 0 && H5Lexists(h5, "import_args", H5P_DEFAULT) > 0 ? h5_size(h5, path, "import_args", NULL, NULL) : -1;
    char *args = n > 0 && n < HINT_MAX ? xmalloc((size_t)n + 1) : NULL;
    if (args && h5_read(h5, path, "import_args", H5T_NATIVE_UINT8, n, args) == 0 && args[n - 1] == 0)
        for (int64_t p = 0; p < n; p += (int64_t)strlen(args + p) + 1) hint_word(extra, sizeof extra, args + p);
    else extra[0] = 0;
    free(args);
    error_capture(0);
    if (!extra[0] || strlen(extra) > len / 2) snprintf(extra, sizeof extra, " --format F --input PATH");
    if (world[0] && strlen(extra) + strlen(world) < sizeof extra) strcat(extra, world);
    return hint_command(buf, len, "import", 0, extra);
}

int corpus_read(Corpus *corpus, const Config *cfg, const char *path) {
    memset(corpus, 0, sizeof *corpus);
    char make[HINT_MAX], hint[HINT_MAX + 16], why[600] = "";
    remedy_of(cfg, -1, path, make, sizeof make);  // nothing recorded where nothing opens
    snprintf(hint, sizeof hint, "run `%s` first", make);
    int fd;
    int64_t size;
    hid_t h5 = h5_open_file(path, hint, &fd, &size);
    if (h5 < 0) return -1;
    remedy_of(cfg, h5, path, make, sizeof make);  // the import that made it, as corpus.h5 records it
    snprintf(hint, sizeof hint, "run `%s` first", make);
    CorpusFile *f = xcalloc(1, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    snprintf(f->remedy, sizeof f->remedy, "%s", make);
    f->fd = fd, f->size = size;
    pthread_mutex_init(&f->mu, NULL);
    f->V = cfg->data.vocab_size, f->lo = cfg->data.min_length, f->hi = cfg->data.max_length;
    f->elem[KIND_TOKENS] = (size_t)corpus_token_bytes(f->V), f->elem[KIND_OFFSETS] = 8;
    int rc = -1;
    char *stored = NULL, *source = NULL, *content = NULL, *split_rule = NULL;
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    int64_t n = (int64_t)cfg->data.n_train + cfg->data.n_validation + cfg->data.n_test, format = 0, chunks[3] = {0, 0, 0}, V = 0;
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
    if (format != 3) {
        error("%s: corpus format %lld, this ddptok reads format 3 (%s): run `%s`", path, (long long)format,
              format == 2 ? "its checksums in a tree, verified up to one root, and uint16 tokens where they fit" : "unknown", make);
        goto out;
    }
    if (h5_attr_read_i64(h5, path, "token_chunk", &chunks[0]) || h5_attr_read_i64(h5, path, "offset_chunk", &chunks[1]) ||
        h5_attr_read_i64(h5, path, "tree_page", &chunks[2]) || h5_attr_read_i64(h5, path, "vocab_size", &V))
        goto out;
    if (chunks[0] != CORPUS_TOKEN_CHUNK || chunks[1] != CORPUS_OFFSET_CHUNK || chunks[2] != CORPUS_TREE_PAGE) {
        error("%s: chunks of %lld tokens and %lld offsets, pages of %lld checksums; this ddptok checks chunks of %d and %d, pages of "
              "%d: run `%s`", path, (long long)chunks[0], (long long)chunks[1], (long long)chunks[2], CORPUS_TOKEN_CHUNK,
              CORPUS_OFFSET_CHUNK, CORPUS_TREE_PAGE, make);
        goto out;
    }
    if (V != cfg->data.vocab_size) {
        error("%s: made for data.vocab_size %lld, this config has %d: run `%s`", path, (long long)V, cfg->data.vocab_size, make);
        goto out;
    }
    f->chunk[KIND_TOKENS] = chunks[0], f->chunk[KIND_OFFSETS] = chunks[1];
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
        error("%s: %lld tokens, expected %lld..%lld for %lld sequences of lengths [%d, %d]: run `%s`", path, (long long)nt,
              (long long)(n * cfg->data.min_length), (long long)(n * cfg->data.max_length), (long long)n,
              cfg->data.min_length, cfg->data.max_length, make);
        goto out;
    }
    f->n = (int)n, f->n_tokens = nt;
    f->count[KIND_TOKENS] = nt, f->count[KIND_OFFSETS] = n + 1;
    corpus_tree_shape(&f->tree[KIND_TOKENS], corpus_chunks(nt, CORPUS_TOKEN_CHUNK));
    corpus_tree_shape(&f->tree[KIND_OFFSETS], corpus_chunks(n + 1, CORPUS_OFFSET_CHUNK));
    hsize_t dt = (hsize_t)nt, dof = (hsize_t)(n + 1), dsp = (hsize_t)n,
            st[2] = {(hsize_t)f->tree[0].rows[0], 32}, so[2] = {(hsize_t)f->tree[1].rows[0], 32},
            tt[2] = {(hsize_t)f->tree[0].total, 32}, to[2] = {(hsize_t)f->tree[1].total, 32};
    if (h5_raw_address(h5, path, "tokens", f->elem[KIND_TOKENS] == 2 ? H5T_STD_U16LE : H5T_STD_I32LE, 1, &dt, size, &f->at[KIND_TOKENS]) ||
        h5_raw_address(h5, path, "offsets", H5T_STD_I64LE, 1, &dof, size, &f->at[KIND_OFFSETS]) ||
        h5_raw_address(h5, path, "split", H5T_NATIVE_UINT8, 1, &dsp, size, &f->split_at) ||
        h5_raw_address(h5, path, "token_sha256", H5T_NATIVE_UINT8, 2, st, size, &f->sums_at[KIND_TOKENS]) ||
        h5_raw_address(h5, path, "offset_sha256", H5T_NATIVE_UINT8, 2, so, size, &f->sums_at[KIND_OFFSETS]) ||
        h5_raw_address(h5, path, "token_tree", H5T_NATIVE_UINT8, 2, tt, size, &f->tree_at[KIND_TOKENS]) ||
        h5_raw_address(h5, path, "offset_tree", H5T_NATIVE_UINT8, 2, to, size, &f->tree_at[KIND_OFFSETS]))
        goto out;
    int64_t counts[3];
    if (!(stored = h5_attr_read_str(h5, path, "corpus_lock")) || !(content = h5_attr_read_str(h5, path, "content_sha256")) ||
        h5_attr_read_i64_array(h5, path, "split_sequences", counts, 3))
        goto out;
    if (!is_sha256_hex(stored) || !is_sha256_hex(content)) {
        error("%s: its corpus_lock or content_sha256 is not a SHA-256 (damaged): %s", path, hint);
        goto out;
    }
    if (counts[0] < 0 || counts[1] < 0 || counts[2] < 0 || counts[0] + counts[1] + counts[2] != n) {
        error("%s: split_sequences %lld, %lld, %lld do not add up to its %lld sequences: run `%s`", path, (long long)counts[0],
              (long long)counts[1], (long long)counts[2], (long long)n, make);
        goto out;
    }
    // The content digest from the two roots (two reads of 32 bytes): every token and offset
    // read later is checked through its tree up to these roots.
    for (int k = 0; k < 2; k++)
        if (read_at(f, f->root[k], 32, f->tree_at[k] + 32 * (f->tree[k].total - 1), why, sizeof why, "the root of its checksums")) {
            error("%s: %s: run `%s`", path, why, make);
            goto out;
        }
    corpus_content_digest(n, nt, (int)f->elem[KIND_TOKENS], counts, f->root[KIND_TOKENS], f->root[KIND_OFFSETS], corpus->content);
    if (strcmp(corpus->content, content) != 0) {
        error("%s: its checksum roots and sizes hash to %.12s…, its content_sha256 says %.12s… (modified): run `%s`", path,
              corpus->content, content, make);
        goto out;
    }
    if (!imported && (counts[0] != cfg->data.n_train || counts[1] != cfg->data.n_validation)) {
        error("%s: splits of %lld / %lld / %lld sequences, this config has %d / %d / %d (data.splits.*): run `%s`", path,
              (long long)counts[0], (long long)counts[1], (long long)counts[2], cfg->data.n_train, cfg->data.n_validation,
              cfg->data.n_test, make);
        goto out;
    }
    int split_by_hash = 1;
    if (imported && H5Aexists(h5, "import_split") > 0) {
        if (!(split_rule = h5_attr_read_str(h5, path, "import_split"))) goto out;
        split_by_hash = strcmp(split_rule, "names") != 0;
    }
    corpus_lock_of(cfg, split_by_hash, corpus->content, corpus->corpus_lock);
    if (strcmp(stored, corpus->corpus_lock) != 0) {
        error("%s: corpus lock %.12s… does not match this config's %.12s… (%s with another config or modified): run `%s`", path,
              stored, corpus->corpus_lock, imported ? "imported" : "prepared", make);
        goto out;
    }
    data_lock_of(cfg, corpus->corpus_lock, corpus->lock);
    corpus->split_by_hash = split_by_hash;
    int64_t slots[2];
    budget_corpus_cache(cfg, &slots[KIND_TOKENS], &slots[KIND_OFFSETS]);  // the budget counts what it allocates
    cache_init(&f->cache[KIND_TOKENS], slots[KIND_TOKENS]);
    cache_init(&f->cache[KIND_OFFSETS], slots[KIND_OFFSETS]);
    // Pages of checksums: an eighth of the chunks, 16..256 of 4 KiB per array (counted by data_budget).
    int64_t pages = corpus_page_slots(cfg);
    cache_init(&f->pages[KIND_TOKENS], pages);
    cache_init(&f->pages[KIND_OFFSETS], pages);
    int64_t ends[2][2];
    if (span(f, 0, ends[0], why, sizeof why) || span(f, (int)n - 1, ends[1], why, sizeof why)) {
        error("%s: %s: run `%s`", path, why, make);
        goto out;
    }
    if (ends[0][0] != 0 || ends[1][1] != nt) {
        error("%s: offsets run from %lld to %lld, expected 0 to the %lld tokens: run `%s`", path, (long long)ends[0][0],
              (long long)ends[1][1], (long long)nt, make);
        goto out;
    }
    corpus->n = (int)n, corpus->n_tokens = nt, corpus->file = f;
    corpus->split_first[0] = 0;
    for (int s = 0; s < 3; s++) corpus->split_first[s + 1] = corpus->split_first[s] + (int)counts[s];
    rc = 0;
out:
    free(stored), free(source), free(content), free(split_rule);
    h5_close(h5);
    if (rc) corpus_file_close(f), memset(corpus, 0, sizeof *corpus);
    else test_point("corpus-open");  // HDF5 has let go of the file: only the descriptor stays
    return rc;
}
