// writer.c — corpus.h5 written region by region as its sequences arrive (see writer.h).
//
// HDF5 creates the file's structure once, with every dataset contiguous, unfiltered and
// allocated at its final size (nothing written: a hole until the data comes), and every
// attribute at its final length (the digest and the lock as placeholders of 64 characters);
// the data then goes in by pwrite at the datasets' addresses, and at the end HDF5 rewrites
// the two placeholders in place. HDF5 never meets a full disk: the space is checked and
// reserved before it writes (it did not survive a failed close cleanly, see io/h5io.c).
#include "data/writer.h"

#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/testpoint.h"
#include "base/sha256.h"
#include "config/budget.h"
#include "data/corpus.h"
#include "data/digest.h"
#include "data/lock.h"
#include "io/h5io.h"

enum { BUF_BYTES = 1 << 18 };  // per region's write buffer (3 splits x 3 arrays: 2.25 MiB)


// One split's part of one dataset: elements [base, base + count), appended in order through
// a buffer flushed at chunk boundaries (in the dataset's own numbering), so that every chunk
// that lies inside the region is hashed from the buffer as it is written.
typedef struct {
    int fd;
    int64_t addr;       // the dataset's byte address
    size_t elem;        // bytes per element
    int64_t total;      // elements of the whole dataset
    int64_t chunk;      // elements per checksummed chunk; 0: no checksums
    int64_t sums_addr;  // the checksums' (level 0) byte address
    int64_t base, count, done;
    uint8_t *buf;       // elements [at, at + have)
    int64_t cap, at, have;
    int err;            // errno of a failed write
} Region;

static int pwrite_all(int fd, const void *buf, size_t n, int64_t at) {
    const char *p = buf;
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return w < 0 ? errno : EIO;
        p += w, n -= (size_t)w, at += w;
    }
    return 0;
}

static int pread_all(int fd, void *buf, size_t n, int64_t at) {
    char *p = buf;
    while (n > 0) {
        ssize_t r = pread(fd, p, n, (off_t)at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return r < 0 ? errno : EIO;
        p += r, n -= (size_t)r, at += r;
    }
    return 0;
}

static void region_init(Region *r, int fd, int64_t addr, size_t elem, int64_t total, int64_t chunk, int64_t sums_addr, int64_t base,
                        int64_t count) {
    memset(r, 0, sizeof *r);
    r->fd = fd, r->addr = addr, r->elem = elem, r->total = total, r->chunk = chunk, r->sums_addr = sums_addr;
    r->base = base, r->count = count, r->at = base;
    int64_t per = BUF_BYTES / (int64_t)elem;
    if (chunk) per = per / chunk * chunk;
    // a region smaller than a buffer gets what it needs (whole chunks, and the partial first one)
    int64_t need = chunk ? (count / chunk + 2) * chunk : count;
    r->cap = need < per ? need : per;
    r->buf = count ? xmalloc((size_t)r->cap * elem) : NULL;
}

static int64_t chunk_len(const Region *r, int64_t c) {
    int64_t left = r->total - c * r->chunk;
    return left < r->chunk ? left : r->chunk;
}

// Writes the buffer and the checksums of the chunks wholly inside it (consecutive rows).
static void region_flush(Region *r) {
    if (!r->have || r->err) return;
    r->err = pwrite_all(r->fd, r->buf, (size_t)r->have * r->elem, r->addr + r->at * (int64_t)r->elem);
    if (r->chunk && !r->err) {
        enum { ROWS = BUF_BYTES / 1024 + 1 };  // chunks of at least 1 KiB fit a buffer at most this often
        uint8_t sums[32 * ROWS];
        int64_t first = corpus_chunks(r->at, r->chunk), c = first, end = r->at + r->have;
        for (; c * r->chunk < r->total && c * r->chunk + chunk_len(r, c) <= end; c++) {
            ASSERT(c - first < ROWS);
            Sha256 *h = sha256_begin();
            sha256_add(h, r->buf + (size_t)(c * r->chunk - r->at) * r->elem, (size_t)chunk_len(r, c) * r->elem);
            sha256_digest(h, sums + 32 * (c - first));
        }
        if (c > first) r->err = pwrite_all(r->fd, sums, (size_t)(32 * (c - first)), r->sums_addr + 32 * first);
    }
    r->at += r->have, r->have = 0;
}

static void region_append(Region *r, const void *src, int64_t k) {
    const uint8_t *p = src;
    ASSERT(r->done + k <= r->count);
    while (k > 0) {
        // the first segment ends at a chunk boundary; every later one holds whole chunks
        int64_t room = r->chunk && r->at % r->chunk ? r->chunk - r->at % r->chunk : r->cap;
        if (room > r->cap) room = r->cap;
        int64_t take = room - r->have < k ? room - r->have : k;
        memcpy(r->buf + (size_t)r->have * r->elem, p, (size_t)take * r->elem);
        r->have += take, r->done += take, p += take * (int64_t)r->elem, k -= take;
        if (r->have == room || r->done == r->count) region_flush(r);
    }
}

// fsync, except in the fuzz targets' build (-DDDPTOK_FUZZ: thousands of corpora a minute,
// none of which must survive a crash).
static int durable(int fd) {
#ifdef DDPTOK_FUZZ
    (void)fd;
    return 0;
#else
    return fsync(fd);
#endif
}

// ---------------------------------------------------------------------------------------

enum { D_TOKENS, D_OFFSETS, D_SPLIT, D_DOCUMENT, D_TOKEN_SUMS, D_OFFSET_SUMS, D_TOKEN_TREE, D_OFFSET_TREE, D_FILES, D_ARGS, D_COUNT };
static const char *const dataset_names[D_COUNT] = {"tokens", "offsets", "split", "document", "token_sha256", "offset_sha256",
                                                    "token_tree", "offset_tree", "import_files", "import_args"};

struct CorpusWriter {
    char path[1024], tmp[1100];
    const Config *cfg;
    CorpusShape shape;
    int imported, split_by_hash, token_bytes, fd;
    int64_t n, T, tok_base[3], seq_base[3];
    int64_t addr[D_COUNT], count[D_COUNT];  // byte address, elements (rows for the sums and trees)
    CorpusTree tree[2];                     // tokens, offsets
    Region tokens[3], offsets[3], documents[3];
    int64_t texts[2];                       // bytes of import_files, import_args
    uint8_t *stored;                        // (max_length x token_bytes) one sequence as stored
};

static int fail(CorpusWriter *w, int e, const char *what) {
    error("%s: cannot write%s%s: %s", w->path, what ? " " : "", what ? what : "", strerror(e));
    corpus_writer_abort(w);
    return -1;
}

// Leftovers of writers that did not finish (PATH.tmp.PID beside PATH): removed when ddptok's
// record says it created that inode and its process is gone, with one line; a live one refuses.
// The record lists a temporary file from its creation (made_note_fd at open), before it is
// written: a writer that died had written it since, so its content stamp has moved
// (MADE_CHANGED) and a record of an older ddptok has none (MADE_UNSTAMPED); for a temporary
// file the inode and its birth time are the proof (base/made.h). This process has not made
// its own yet, so a file under its PID is a dead one's (a container gives the same PID again).
static int clear_leftovers(const char *path) {
    char dir[1100], base[512];
    dir_of(path, dir, sizeof dir);
    const char *slash = strrchr(path, '/');
    snprintf(base, sizeof base, "%s.tmp.", slash ? slash + 1 : path);
    DIR *d = opendir(dir);
    if (!d) return 0;  // no directory yet: nothing left in it
    struct dirent *e;
    int rc = 0;
    size_t bl = strlen(base);
    while ((e = readdir(d)) && !rc) {
        char *end;
        if (strncmp(e->d_name, base, bl) != 0) continue;
        long pid = strtol(e->d_name + bl, &end, 10);
        if (*end || pid <= 0) continue;
        char p[1700], comm[64] = "", proc[64];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        snprintf(proc, sizeof proc, "/proc/%ld/comm", pid);
        FILE *f = pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM) ? fopen(proc, "r") : NULL;
        if (f) {
            if (!fgets(comm, sizeof comm, f)) comm[0] = 0;
            fclose(f);
        }
        MadeVerdict v = made_verdict_at(dirfd(d), e->d_name);
        int removable = v == MADE_YES || v == MADE_CHANGED || v == MADE_UNSTAMPED;
        if (pid == getpid() && !removable) continue;  // creating this process's own name refuses it, in one line
        if (!strncmp(comm, "ddptok", 6))
            rc = error("%s: another ddptok (pid %ld) is writing it now (%s): wait for it to end, or stop it", path, pid, p);
        else if (v == MADE_UNPROVEN)
            warning("%s: %s is listed as ddptok's, but this file system keeps no birth time to prove it the same file: "
                    "left as it is (remove it yourself if it is a leftover)", path, p);
        else if (!removable)
            warning("%s: %s is not ddptok's (no record of it): left as it is", path, p);
        else if (unlink(p) == 0)
            say("%s: removed %s, left by a write that did not finish (pid %ld, gone): %s was %s\n", text_safe(path), text_safe(p),
                pid, text_safe(path), access(path, F_OK) == 0 ? "kept as it was" : "never published");
    }
    closedir(d);
    return rc;
}

uint64_t corpus_writer_bytes(const CorpusShape *shape, const Config *cfg, const CorpusImport *imp) {
    uint64_t n = 0, T = 0;
    for (int s = 0; s < 3; s++) n = size_add(n, (uint64_t)shape->sequences[s]), T = size_add(T, (uint64_t)shape->tokens[s]);
    uint64_t tc = T / CORPUS_TOKEN_CHUNK + 1, oc = (n + 1) / CORPUS_OFFSET_CHUNK + 1;
    uint64_t bytes = (uint64_t)64 << 10;  // HDF5's structure (a few KiB), and room
    bytes = size_add(bytes, size_mul(T, (uint64_t)corpus_token_bytes(cfg->data.vocab_size)));
    bytes = size_add(bytes, size_mul(n, imp ? 17 : 9));  // offsets, split (and /document)
    bytes = size_add(bytes, size_mul(size_add(tc, oc), 33));  // the checksums and their trees (1/128 more)
    if (imp) bytes = size_add(bytes, size_add((uint64_t)imp->files_bytes, (uint64_t)imp->args_bytes));
    return bytes;
}

int corpus_writer_space(const char *path, uint64_t bytes) {
    char dir[1100];
    dir_of(path, dir, sizeof dir);
    struct statvfs vfs;
    // The directory may not exist yet: the nearest one that does holds it.
    while (statvfs(dir, &vfs) != 0) {
        char up[1100];
        dir_of(dir, up, sizeof up);
        if (!strcmp(up, dir)) return 0;  // nothing to ask: the write will tell
        snprintf(dir, sizeof dir, "%s", up);
    }
    uint64_t have = size_mul(vfs.f_bavail, vfs.f_frsize);
    if (have >= bytes) return 0;
    char need_s[32], have_s[32];
    format_bytes(bytes, need_s, sizeof need_s), format_bytes(have, have_s, sizeof have_s);
    return error("%s: cannot write: %s (the corpus needs %s, the file system has %s free)", path, strerror(ENOSPC), need_s, have_s);
}

static hid_t create_dataset(hid_t f, int k, hid_t type, int rank, const hsize_t *dims) {
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), space = H5Screate_simple(rank, dims, NULL);
    H5Pset_layout(dcpl, H5D_CONTIGUOUS);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);  // the whole extent now: its address is known
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);   // and nothing written (a hole until pwrite)
    H5Pset_obj_track_times(dcpl, 0);               // the same inputs, the same bytes
    hid_t ds = H5Dcreate2(f, dataset_names[k], type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl), H5Sclose(space);
    return ds;
}

// The file's structure: every dataset at its size, every attribute at its length. 0 or -1.
static int create_structure(CorpusWriter *w, const CorpusImport *imp) {
    static const char zeros[65] = "0000000000000000000000000000000000000000000000000000000000000000";
    struct stat st;
    if (lstat(w->tmp, &st) == 0)  // never through a link or over a file: HDF5 would open either
        return error("%s: cannot write: %s already exists (a leftover or a planted file or link): refused, left as it is", w->path, w->tmp);
    hid_t f = H5Fcreate(w->tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return error("%s: cannot create %s (it exists, or the directory is not writable)", w->path, w->tmp);
    hid_t types[D_COUNT] = {w->token_bytes == 2 ? H5T_STD_U16LE : H5T_STD_I32LE, H5T_STD_I64LE, H5T_STD_U8LE, H5T_STD_I64LE,
                            H5T_STD_U8LE, H5T_STD_U8LE, H5T_STD_U8LE, H5T_STD_U8LE, H5T_STD_U8LE, H5T_STD_U8LE};
    int rc = 0;
    for (int k = 0; k < D_COUNT && !rc; k++) {
        if (w->count[k] == 0) continue;  // absent: /document, the texts of prepare's corpus
        int rows = k >= D_TOKEN_SUMS && k <= D_OFFSET_TREE;
        hsize_t dims[2] = {(hsize_t)w->count[k], 32};
        hid_t ds = create_dataset(f, k, types[k], rows ? 2 : 1, dims);
        haddr_t a = ds < 0 ? HADDR_UNDEF : H5Dget_offset(ds);
        if (a == HADDR_UNDEF) rc = error("%s: cannot create dataset %s in %s", w->path, dataset_names[k], w->tmp);
        else w->addr[k] = (int64_t)a;
        if (ds >= 0) H5Dclose(ds);
    }
    const char *source = w->imported ? data_source_names[DATA_SOURCE_IMPORTED] : NULL;
    rc = rc || h5_attr_i64(f, "format", 3) || h5_attr_i64(f, "token_chunk", CORPUS_TOKEN_CHUNK) ||
         h5_attr_i64(f, "offset_chunk", CORPUS_OFFSET_CHUNK) || h5_attr_i64(f, "tree_page", CORPUS_TREE_PAGE) ||
         h5_attr_i64(f, "vocab_size", w->cfg->data.vocab_size) || h5_attr_str(f, "content_sha256", zeros) ||
         h5_attr_str(f, "corpus_lock", zeros) || h5_attr_i64_array(f, "split_sequences", w->shape.sequences, 3) || (!w->imported && h5_attr_i64(f, "seed", w->cfg->seed)) ||
         (source && h5_attr_str(f, "source", source));
    if (!rc && imp)
        rc = h5_attr_str(f, "import_format", imp->format) || h5_attr_str(f, "import_options", imp->options) ||
             h5_attr_str(f, "import_summary", imp->summary) || h5_attr_str(f, "import_split", imp->split_by_hash ? "hash" : "names");
    if (H5Fclose(f) < 0 && !rc) rc = error("%s: cannot write %s (HDF5 close failed)", w->path, w->tmp);
    return rc ? -1 : 0;
}

int corpus_writer_open(CorpusWriter **out, const char *path, const CorpusShape *shape, const Config *cfg, const CorpusImport *imp) {
    *out = NULL;
    CorpusWriter *w = xcalloc(1, sizeof *w);
    w->fd = -1;
    snprintf(w->path, sizeof w->path, "%s", path);
    w->cfg = cfg, w->shape = *shape, w->imported = imp != NULL, w->split_by_hash = imp ? imp->split_by_hash : 1;
    w->token_bytes = corpus_token_bytes(cfg->data.vocab_size);
    for (int s = 0; s < 3; s++) {
        w->tok_base[s] = w->T, w->seq_base[s] = w->n;
        w->T += shape->tokens[s], w->n += shape->sequences[s];
    }
    if (w->n < 1 || w->n > INT32_MAX || w->T < w->n) {
        error("%s: cannot write a corpus of %lld sequences and %lld tokens (expected 1 to 2^31 - 1 sequences of at least one token)",
              path, (long long)w->n, (long long)w->T);
        free(w);
        return -1;
    }
    corpus_tree_shape(&w->tree[0], corpus_chunks(w->T, CORPUS_TOKEN_CHUNK));
    corpus_tree_shape(&w->tree[1], corpus_chunks(w->n + 1, CORPUS_OFFSET_CHUNK));
    int64_t counts[D_COUNT] = {w->T, w->n + 1, w->n, imp ? w->n : 0, w->tree[0].rows[0], w->tree[1].rows[0], w->tree[0].total,
                               w->tree[1].total, imp ? imp->files_bytes : 0, imp ? imp->args_bytes : 0};
    memcpy(w->count, counts, sizeof counts);
    if (imp) w->texts[0] = imp->files_bytes, w->texts[1] = imp->args_bytes;
    char dir[1100];
    dir_of(path, dir, sizeof dir);
    if (mkdir_p(dir) || clear_leftovers(path)) return free(w), -1;
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%d", path, (int)getpid());
    // The space first: HDF5 writes nothing on a disk that cannot hold the whole file.
    if (corpus_writer_space(path, corpus_writer_bytes(shape, cfg, imp))) return free(w), -1;
    struct stat planted;
    int was_there = lstat(w->tmp, &planted) == 0;
    if (create_structure(w, imp)) {
        if (!was_there) unlink(w->tmp);
        free(w);
        return -1;
    }
    w->fd = open(w->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (w->fd < 0 || fstat(w->fd, &st) != 0) return fail(w, errno, NULL);
    made_note_fd(w->tmp, w->fd);  // ddptok's: the next writer may remove it if this one dies
    int e = posix_fallocate(w->fd, 0, st.st_size);
    if (e && e != EOPNOTSUPP && e != EINVAL) return fail(w, e, NULL);  // a file system without it: writes will tell
    test_point("writer-open");
    for (int s = 0; s < 3; s++) {
        region_init(&w->tokens[s], w->fd, w->addr[D_TOKENS], (size_t)w->token_bytes, w->T, CORPUS_TOKEN_CHUNK, w->addr[D_TOKEN_SUMS],
                    w->tok_base[s], shape->tokens[s]);
        region_init(&w->offsets[s], w->fd, w->addr[D_OFFSETS], 8, w->n + 1, CORPUS_OFFSET_CHUNK, w->addr[D_OFFSET_SUMS],
                    w->seq_base[s], shape->sequences[s]);
        if (imp) region_init(&w->documents[s], w->fd, w->addr[D_DOCUMENT], 8, w->n, 0, 0, w->seq_base[s], shape->sequences[s]);
    }
    w->stored = xmalloc((size_t)cfg->data.max_length * (size_t)w->token_bytes);
    *out = w;
    return 0;
}

int corpus_writer_add(CorpusWriter *w, int split, const int32_t *ids, int len, int64_t document) {
    ASSERT(split >= 0 && split < 3 && len >= 1 && len <= w->cfg->data.max_length);
    Region *t = &w->tokens[split], *o = &w->offsets[split];
    if (o->done == o->count || t->done + len > t->count)
        return error("%s: the %s split is getting more than the %lld sequences and %lld tokens counted for it", w->path,
                     split == 0 ? "train" : split == 1 ? "validation" : "test", (long long)o->count, (long long)t->count);
    int64_t start = t->base + t->done;
    region_append(o, &start, 1);
    int32_t lo = INT32_MAX, hi = 0;
    if (w->token_bytes == 2) {
        uint16_t *o = (uint16_t *)(void *)w->stored;  // little-endian host (static assert in import.c)
        for (int p = 0; p < len; p++) o[p] = (uint16_t)ids[p], lo = ids[p] < lo ? ids[p] : lo, hi = ids[p] > hi ? ids[p] : hi;
    } else {
        memcpy(w->stored, ids, (size_t)len * 4);
        for (int p = 0; p < len; p++) lo = ids[p] < lo ? ids[p] : lo, hi = ids[p] > hi ? ids[p] : hi;
    }
    ASSERT(lo >= 1 && hi < w->cfg->data.vocab_size);
    region_append(t, w->stored, len);
    if (w->imported) region_append(&w->documents[split], &document, 1);
    int e = t->err ? t->err : o->err ? o->err : w->imported ? w->documents[split].err : 0;
    if (e) return error("%s: cannot write: %s", w->path, strerror(e));
    return 0;
}

// Recomputes the checksum of chunk c of a dataset from the file (a chunk across two regions).
static int resum(CorpusWriter *w, int data, int sums, size_t elem, int64_t total, int64_t chunk, int64_t c) {
    if (c * chunk >= total) return 0;
    int64_t k = total - c * chunk < chunk ? total - c * chunk : chunk;
    uint8_t *buf = xmalloc((size_t)(k * (int64_t)elem)), sum[32];
    int e = pread_all(w->fd, buf, (size_t)k * elem, w->addr[data] + c * chunk * (int64_t)elem);
    if (!e) {
        Sha256 *h = sha256_begin();
        sha256_add(h, buf, (size_t)k * elem);
        sha256_digest(h, sum);
        e = pwrite_all(w->fd, sum, 32, w->addr[sums] + 32 * c);
    }
    free(buf);
    return e;
}

// The levels of one tree from its level 0 in the file; the root into root.
static int write_tree(CorpusWriter *w, const CorpusTree *t, int sums, int tree, uint8_t root[32]) {
    enum { PAGES = 256 };
    uint8_t *in = xmalloc(32 * CORPUS_TREE_PAGE * PAGES), *out = xmalloc(32 * PAGES);
    int e = 0;
    for (int k = 1; k <= t->levels && !e; k++) {
        int64_t below = k == 1 ? w->addr[sums] : w->addr[tree] + 32 * t->first[k - 1], at = w->addr[tree] + 32 * t->first[k];
        for (int64_t p = 0; p < t->rows[k] && !e; p += PAGES) {
            int64_t pages = t->rows[k] - p < PAGES ? t->rows[k] - p : PAGES;
            int64_t first = p * CORPUS_TREE_PAGE, rows = t->rows[k - 1] - first;
            if (rows > pages * CORPUS_TREE_PAGE) rows = pages * CORPUS_TREE_PAGE;
            e = pread_all(w->fd, in, (size_t)(32 * rows), below + 32 * first);
            for (int64_t q = 0; q < pages && !e; q++) {
                int64_t n = rows - q * CORPUS_TREE_PAGE;
                corpus_page_sum(in + 32 * q * CORPUS_TREE_PAGE, n < CORPUS_TREE_PAGE ? n : CORPUS_TREE_PAGE, out + 32 * q);
            }
            if (!e) e = pwrite_all(w->fd, out, (size_t)(32 * pages), at + 32 * p);
        }
    }
    if (!e) memcpy(root, out + 0, 32);  // the top level has one row, written last
    free(in), free(out);
    return e;
}

// Rewrites a string attribute of the same length in place.
static int rewrite_attr(hid_t f, const char *name, const char *value) {
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t t = H5Aget_type(a);
    int rc = H5Tget_size(t) == strlen(value) + 1 && H5Awrite(a, t, value) >= 0 ? 0 : -1;
    H5Tclose(t), H5Aclose(a);
    return rc;
}

int corpus_writer_finish(CorpusWriter *w, const char *const texts[2]) {
    for (int s = 0; s < 3; s++)
        if (w->tokens[s].done != w->tokens[s].count || w->offsets[s].done != w->offsets[s].count) {
            error("%s: the %s split got %lld sequences and %lld tokens, %lld and %lld were counted for it", w->path,
                  s == 0 ? "train" : s == 1 ? "validation" : "test", (long long)w->offsets[s].done, (long long)w->tokens[s].done,
                  (long long)w->offsets[s].count, (long long)w->tokens[s].count);
            corpus_writer_abort(w);
            return -1;
        }
    int e = 0;
    for (int s = 0; s < 3 && !e; s++) e = w->tokens[s].err ? w->tokens[s].err : w->offsets[s].err ? w->offsets[s].err : w->documents[s].err;
    // The last offset, the chunks across two regions, the split bytes.
    if (!e) e = pwrite_all(w->fd, &w->T, 8, w->addr[D_OFFSETS] + 8 * w->n);
    for (int s = 1; s < 3 && !e; s++) {
        if (w->tok_base[s] % CORPUS_TOKEN_CHUNK) e = resum(w, D_TOKENS, D_TOKEN_SUMS, (size_t)w->token_bytes, w->T, CORPUS_TOKEN_CHUNK, w->tok_base[s] / CORPUS_TOKEN_CHUNK);
        if (!e && w->seq_base[s] % CORPUS_OFFSET_CHUNK) e = resum(w, D_OFFSETS, D_OFFSET_SUMS, 8, w->n + 1, CORPUS_OFFSET_CHUNK, w->seq_base[s] / CORPUS_OFFSET_CHUNK);
    }
    if (!e) e = resum(w, D_OFFSETS, D_OFFSET_SUMS, 8, w->n + 1, CORPUS_OFFSET_CHUNK, w->n / CORPUS_OFFSET_CHUNK);
    uint8_t *run = xmalloc(BUF_BYTES);
    for (int s = 0; s < 3 && !e; s++) {
        memset(run, s, BUF_BYTES);
        for (int64_t done = 0; done < w->shape.sequences[s] && !e; done += BUF_BYTES) {
            int64_t k = w->shape.sequences[s] - done < BUF_BYTES ? w->shape.sequences[s] - done : BUF_BYTES;
            e = pwrite_all(w->fd, run, (size_t)k, w->addr[D_SPLIT] + w->seq_base[s] + done);
        }
    }
    free(run);
    for (int k = 0; k < 2 && !e; k++)
        if (w->texts[k]) {
            ASSERT(texts && texts[k]);  // exactly the bytes open was told (import_args holds NULs)
            e = pwrite_all(w->fd, texts[k], (size_t)w->texts[k], w->addr[D_FILES + k]);
        }
    uint8_t roots[2][32];
    if (!e) e = write_tree(w, &w->tree[0], D_TOKEN_SUMS, D_TOKEN_TREE, roots[0]);
    if (!e) e = write_tree(w, &w->tree[1], D_OFFSET_SUMS, D_OFFSET_TREE, roots[1]);
    if (e) return fail(w, e, NULL);
    char content[65], lock[65];
    int tb = w->token_bytes;
    corpus_content_digest(w->n, w->T, tb, w->shape.sequences, roots[0], roots[1], content);
    corpus_lock_of(w->cfg, w->split_by_hash, content, lock);
    if (durable(w->fd) != 0) return fail(w, errno, "(fsync)");
    hid_t f = H5Fopen(w->tmp, H5F_ACC_RDWR, H5P_DEFAULT);
    int rc = f < 0 || rewrite_attr(f, "content_sha256", content) || rewrite_attr(f, "corpus_lock", lock);
    if (f >= 0 && H5Fclose(f) < 0) rc = 1;
    if (rc) {
        error("%s: cannot write the attributes content_sha256 and corpus_lock into %s", w->path, w->tmp);
        corpus_writer_abort(w);
        return -1;
    }
    if (durable(w->fd) != 0) return fail(w, errno, "(fsync)");
    test_point("writer-rename");
    // The rule of every writer (base/fs.h): published over nothing or a regular file, never
    // over a link, FIFO, socket or device planted at the name (was: rename(2) over anything).
    char why[1600];
    int pub = publish_over_regular(w->tmp, w->path, why, sizeof why);
    if (pub == -2) w->tmp[0] = 0;  // not ours any more: left where it is
    if (pub) {
        error("%s: cannot write: %s", w->path, why);
        corpus_writer_abort(w);
        return -1;
    }
    w->tmp[0] = 0;
    made_note_fd(w->path, w->fd);
    char dir[1100];
    dir_of(w->path, dir, sizeof dir);
#ifdef DDPTOK_FUZZ
    rc = 0;
#else
    rc = fsync_dir(dir);
#endif
    close(w->fd), w->fd = -1;
    corpus_writer_abort(w);  // frees (nothing left to remove)
    test_point("writer-published");
    return rc;
}

void corpus_writer_abort(CorpusWriter *w) {
    if (!w) return;
    if (w->fd >= 0) close(w->fd);
    if (w->tmp[0]) unlink(w->tmp);
    for (int s = 0; s < 3; s++) free(w->tokens[s].buf), free(w->offsets[s].buf), free(w->documents[s].buf);
    free(w->stored);
    free(w);
}
