// import.c — the import's common parts (docs/data.md): the input files, reading them by
// offset, decoding token arrays, and the document rules (split by keyed hash, cut to
// data.max_length, drop below data.min_length) that fill the corpus. The readers of each
// format are import_<format>.c.
#include "data/import.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/budget.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the readers and the split hash take host ints as little-endian");

const char *const import_format_names[IMPORT_FORMAT_COUNT] = {"bytes", "llmc", "nanogpt", "megatron", "jsonl", "jsonl-text"};

const ImportReader import_readers[IMPORT_FORMAT_COUNT] = {
    [IMPORT_BYTES] = {import_read_bytes, DOCS_AT_FILE_END, 0, 1},
    [IMPORT_LLMC] = {import_read_llmc, DOCS_STREAM, 1, 0},
    [IMPORT_NANOGPT] = {import_read_nanogpt, DOCS_STREAM, 1, 0},
    [IMPORT_MEGATRON] = {import_read_megatron, DOCS_OWN, 1, 0},
    [IMPORT_JSONL] = {import_read_jsonl, DOCS_OWN, 1, 0},
    [IMPORT_JSONL_TEXT] = {import_read_jsonl, DOCS_OWN, 0, 0},
};

const int token_type_size[TOK_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 8};
const char *const token_type_names[TOK_TYPE_COUNT] = {"uint8", "int8", "int16", "uint16", "int32", "uint32", "int64"};

// ---------------------------------------------------------------------------------------
// One input file

int import_file_open(ImportFile *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->path = path;
    f->fd = -1;
    // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat on the same descriptor
    // decides, so what is read is what was checked.
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return error("%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return error("%s: not a regular file", path);
    }
    f->fd = fd;
    f->size = (int64_t)st.st_size;
    return 0;
}

void import_file_close(ImportFile *f) {
    if (f->fd >= 0) close(f->fd);
    f->fd = -1;
}

int import_file_read(const ImportFile *f, int64_t off, void *buf, size_t n) {
    ASSERT(off >= 0 && (uint64_t)off + n <= (uint64_t)f->size);
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

int import_fail(const ImportFile *f, int64_t off, const char *fmt, ...) {
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return error("%s: offset %lld: %s", f->path, (long long)off, what);
}

int import_file_sha256(const char *path, char out[65]) {
    ImportFile f;
    if (import_file_open(&f, path)) return -1;
    enum { CHUNK = 1 << 20 };
    char *buf = xmalloc(CHUNK);
    Sha256 *h = sha256_begin();
    int rc = 0;
    for (int64_t off = 0; off < f.size && !rc; off += CHUNK) {
        size_t n = (size_t)(f.size - off < CHUNK ? f.size - off : CHUNK);
        if (!(rc = import_file_read(&f, off, buf, n))) sha256_add(h, buf, n);
    }
    sha256_hex(h, out);
    free(buf);
    import_file_close(&f);
    return rc;
}

// ---------------------------------------------------------------------------------------
// Token arrays

static int64_t token_at(const unsigned char *p, TokenType t) {
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    switch (t) {
    case TOK_U8: return p[0];
    case TOK_I8: return (int8_t)p[0];
    case TOK_I16: return memcpy(&i16, p, 2), i16;
    case TOK_U16: return memcpy(&u16, p, 2), u16;
    case TOK_I32: return memcpy(&i32, p, 4), i32;
    case TOK_U32: return memcpy(&u32, p, 4), u32;
    case TOK_I64: return memcpy(&i64, p, 8), i64;
    default: break;
    }
    ASSERT(!"a token type");
    return -1;
}

int import_tokens(const ImportSpec *spec, const ImportFile *f, int64_t off, int64_t count, TokenType type, DocSink *sink) {
    enum { CHUNK = 1 << 16 };  // tokens per read
    int size = token_type_size[type];
    ASSERT(count >= 0 && off >= 0 && (uint64_t)off + (uint64_t)count * (uint64_t)size <= (uint64_t)f->size);
    size_t cap = (size_t)(count < CHUNK ? count : CHUNK);  // a Megatron sequence may be a few tokens
    unsigned char *raw = xmalloc(cap * (size_t)size);
    int32_t *ids = xmalloc(cap * sizeof *ids);
    int rc = 0;
    for (int64_t done = 0; done < count && !rc;) {
        int64_t n = count - done < CHUNK ? count - done : CHUNK, m = 0;
        int64_t at = off + done * size;
        if ((rc = import_file_read(f, at, raw, (size_t)(n * size)))) break;
        for (int64_t i = 0; i < n && !rc; i++) {
            int64_t v = token_at(raw + i * size, type);
            if (v == spec->eot) {
                if (m && (rc = sink->add(sink, ids, m))) break;
                m = 0;
                rc = sink->end(sink);
            } else if (v < 0 || v >= spec->vocab)
                rc = import_fail(f, at + i * size, "token %lld is %lld, expected a %s id in [0, %lld] (data.vocab_size - 2: "
                                 "ddptok's ids are the file's + 1)", (long long)(done + i), (long long)v,
                                 token_type_names[type], (long long)spec->vocab - 1);
            else ids[m++] = (int32_t)(v + 1);
        }
        if (!rc && m) rc = sink->add(sink, ids, m);
        done += n;
    }
    free(raw);
    free(ids);
    return rc;
}

// ---------------------------------------------------------------------------------------
// The inputs

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && !strcmp(s + n - m, tail);
}

static void push_file(char ***files, int *n, int *cap, const char *path) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        char **grown = xmalloc((size_t)*cap * sizeof *grown);
        if (*n) memcpy(grown, *files, (size_t)*n * sizeof *grown);
        free(*files);
        *files = grown;
    }
    size_t len = strlen(path) + 1;
    (*files)[(*n)++] = memcpy(xmalloc(len), path, len);
}

int import_expand_inputs(ImportFormat format, char *const *inputs, int n_inputs, char ***files, int *n_files) {
    *files = NULL, *n_files = 0;
    int cap = 0, megatron = format == IMPORT_MEGATRON;
    for (int i = 0; i < n_inputs; i++) {
        const char *in = inputs[i];
        struct stat st;
        char path[4200];
        if (megatron && (ends_with(in, ".bin") || ends_with(in, ".idx")))  // X.bin or X.idx: the pair's .idx
            snprintf(path, sizeof path, "%.*s.idx", (int)(strlen(in) - 4), in);
        else snprintf(path, sizeof path, "%s", in);
        if (stat(path, &st) != 0 && megatron) snprintf(path, sizeof path, "%s.idx", in);  // the prefix X
        if (stat(path, &st) != 0) {
            error("--input %s: %s", in, strerror(errno));
            goto fail;
        }
        if (!S_ISDIR(st.st_mode)) {
            push_file(files, n_files, &cap, path);
            continue;
        }
        DIR *d = opendir(path);
        if (!d) {
            error("--input %s: cannot list the directory: %s", in, strerror(errno));
            goto fail;
        }
        int first = *n_files;
        struct dirent *e;
        while ((e = readdir(d))) {
            char p[4500];
            struct stat es;
            if (e->d_name[0] == '.' || (megatron && !ends_with(e->d_name, ".idx"))) continue;
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            if (lstat(p, &es) == 0 && S_ISREG(es.st_mode)) push_file(files, n_files, &cap, p);
        }
        closedir(d);
        if (*n_files == first) {
            error("--input %s: a directory without %s (links, sub-directories and names starting with '.' are skipped)",
                  in, megatron ? "a regular *.idx file" : "regular files");
            goto fail;
        }
        qsort(*files + first, (size_t)(*n_files - first), sizeof **files, by_name);
    }
    return 0;
fail:
    for (int i = 0; i < *n_files; i++) free((*files)[i]);
    free(*files);
    *files = NULL, *n_files = 0;
    return -1;
}

// ---------------------------------------------------------------------------------------
// The document rules

int import_split_of(const Config *cfg, const int32_t *ids, int64_t n) {
    static const char tag[] = "ddptok-split-v1";
    uint32_t key = cfg->data.import.split_seed;
    Sha256 *h = sha256_begin();
    sha256_add(h, tag, sizeof tag - 1);
    sha256_add(h, &key, sizeof key);
    sha256_add(h, ids, (size_t)n * sizeof *ids);
    char hex[65];
    sha256_hex(h, hex);
    uint64_t u = 0;
    for (int i = 0; i < 16; i++) u = u << 4 | (uint64_t)(hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10);
    double x = (double)(u >> 11) / 9007199254740992.0;  // exactly: 53 bits over 2^53
    if (x < cfg->data.import.test_fraction) return SPLIT_TEST;
    if (x < cfg->data.import.test_fraction + cfg->data.import.validation_fraction) return SPLIT_VALIDATION;
    return SPLIT_TRAIN;
}

// The sink that fills the corpus: the open document, then its pieces.
typedef struct {
    DocSink sink;
    const Config *cfg;
    ImportSummary *sum;
    int32_t *doc;  // (doc_n) the open document
    int64_t doc_n, doc_cap;
    int32_t *tokens;  // (n_tokens) the corpus so far
    int64_t n_tokens, tok_cap;
    int64_t *offsets, *document;  // (n_seq + 1), (n_seq)
    uint8_t *split;               // (n_seq)
    int64_t n_seq, off_cap, doc_idx_cap, split_cap;
} Builder;

// Grows *p (elements of `size` bytes) to hold at least `need`; 64-bit sizes that saturate.
static void grow(void **p, int64_t *cap, int64_t need, size_t size) {
    if (need <= *cap) return;
    uint64_t want = size_mul((uint64_t)(*cap > 0 ? *cap : 1024), 2);
    if (want < (uint64_t)need) want = (uint64_t)need;
    void *q = xmalloc((size_t)size_mul(want, size));
    if (*cap) memcpy(q, *p, (size_t)*cap * size);
    free(*p);
    *p = q, *cap = (int64_t)want;
}

static int builder_add(DocSink *s, const int32_t *ids, int64_t n) {
    Builder *b = (Builder *)s;
    grow((void **)&b->doc, &b->doc_cap, b->doc_n + n, sizeof *b->doc);
    memcpy(b->doc + b->doc_n, ids, (size_t)n * sizeof *ids);
    b->doc_n += n;
    b->sum->tokens_read += n;
    return 0;
}

static int builder_end(DocSink *s) {
    Builder *b = (Builder *)s;
    int64_t L = b->doc_n, lo = b->cfg->data.min_length, hi = b->cfg->data.max_length;
    b->doc_n = 0;
    if (L == 0) return b->sum->empty++, 0;
    int split = import_split_of(b->cfg, b->doc, L);
    int64_t d = b->sum->documents++, pieces = (L + hi - 1) / hi;
    b->sum->docs[split]++;
    for (int64_t j = 0; j < pieces; j++) {
        int64_t from = (int64_t)((unsigned __int128)j * (uint64_t)L / (uint64_t)pieces),
                to = (int64_t)((unsigned __int128)(j + 1) * (uint64_t)L / (uint64_t)pieces), len = to - from;
        b->sum->pieces++;
        if (len < lo) {
            b->sum->short_pieces++, b->sum->short_tokens += len;
            continue;
        }
        if (b->n_seq == INT32_MAX) return error("import: more than 2^31 - 1 sequences (the corpus counts them in int)");
        grow((void **)&b->tokens, &b->tok_cap, b->n_tokens + len, sizeof *b->tokens);
        grow((void **)&b->offsets, &b->off_cap, b->n_seq + 2, sizeof *b->offsets);
        grow((void **)&b->document, &b->doc_idx_cap, b->n_seq + 1, sizeof *b->document);
        grow((void **)&b->split, &b->split_cap, b->n_seq + 1, sizeof *b->split);
        memcpy(b->tokens + b->n_tokens, b->doc + from, (size_t)len * sizeof *b->tokens);
        b->n_tokens += len;
        b->offsets[b->n_seq + 1] = b->n_tokens;
        b->document[b->n_seq] = d;
        b->split[b->n_seq] = (uint8_t)split;
        b->n_seq++;
        b->sum->seqs[split]++, b->sum->tokens[split] += len;
    }
    return 0;
}

// The memory an import needs at most, from its files' sizes before any is read, through the
// budget (config/budget.h), so that DDPTOK_MEMORY_LIMIT and MemAvailable hold for it too
// (an 18 MB JSON line used 329 MB under DDPTOK_MEMORY_LIMIT=64M). T tokens at most: one per
// byte (bytes, jsonl-text; Megatron's .bin at one byte per id, its .idx read whole), one per
// 2 bytes (uint16 shards, "1," in a JSON list). The builder's tokens grow to 2T int32, the
// open document to 2T, the grouped copy is T more (16T bytes at the peak, the document
// freed first), and each sequence (at most T / data.min_length) 59 bytes in its arrays.
// A JSONL line's parse is checked on top of this, per line (import_budget_line).
int import_budget(const Config *cfg, const ImportSpec *spec, char *const *files, int n_files, uint64_t *bytes) {
    uint64_t T = 0, extra = (uint64_t)2 << 20;  // the readers' 1 MiB chunks
    for (int i = 0; i < n_files; i++) {
        ImportFile f;
        if (import_file_open(&f, files[i])) return -1;
        uint64_t size = (uint64_t)f.size;
        import_file_close(&f);
        if (spec->format == IMPORT_MEGATRON) {  // X.idx: its arrays are read whole; X.bin: the tokens
            extra = size_add(extra, size);
            char bin[4200];
            size_t n = strlen(files[i]);
            snprintf(bin, sizeof bin, "%.*s.bin", (int)(n >= 4 ? n - 4 : n), files[i]);
            struct stat st;
            size = stat(bin, &st) == 0 ? (uint64_t)st.st_size : 0;  // absent: the reader says so
        }
        int two = spec->format == IMPORT_LLMC || spec->format == IMPORT_NANOGPT || spec->format == IMPORT_JSONL;
        T = size_add(T, two ? size / 2 + 1 : size);
    }
    uint64_t seqs = T / (uint64_t)(cfg->data.min_length > 0 ? cfg->data.min_length : 1) + 1;
    *bytes = size_add(size_add(size_mul(T, 16), size_mul(seqs, 59)), extra);
    char what[200], size_s[32], err[700];
    format_bytes(*bytes, size_s, sizeof size_s);
    snprintf(what, sizeof what, "import of %d file%s (at most %llu tokens: the corpus built in memory)", n_files,
             n_files == 1 ? "" : "s", (unsigned long long)T);
    if (budget_check_bytes(what, *bytes, "import fewer or smaller files at once", err, sizeof err)) return error("%s", err);
    return 0;
}

int import_budget_line(const ImportSpec *spec, const ImportFile *f, int64_t off, int64_t line, size_t n) {
    // libjansson holds a list's integers as 48 bytes each (a 32-byte value and its pointer in
    // a list grown x2), at most one per 2 bytes of the line; the line's buffer and ids too.
    uint64_t need = size_add(spec->budgeted, size_mul(n, 32));
    char what[300], err[900];
    snprintf(what, sizeof what, "line %lld (%zu bytes, parsed whole) beside the corpus", (long long)line, n);
    if (budget_check_bytes(what, need, "split the line, or import fewer files at once", err, sizeof err))
        return import_fail(f, off, "%s", err);
    return 0;
}

int import_corpus(Corpus *corpus, int64_t **document, const Config *cfg, const ImportSpec *spec_in, char *const *files,
                  int n_files, ImportSummary *sum) {
    memset(sum, 0, sizeof *sum);
    memset(corpus, 0, sizeof *corpus);
    *document = NULL;
    ImportSpec spec_budgeted = *spec_in, *spec = &spec_budgeted;
    if (import_budget(cfg, spec_in, files, n_files, &spec_budgeted.budgeted)) return -1;
    Builder b = {.sink = {builder_add, builder_end}, .cfg = cfg, .sum = sum};
    int rc = 0;
    const ImportReader *reader = &import_readers[spec->format];
    int stream = reader->ends == DOCS_STREAM && spec->eot >= 0;
    for (int i = 0; i < n_files && !rc; i++) {
        sum->files++;
        rc = reader->read(spec, files[i], &b.sink);
        // A file's end ends its document, unless the reader closed them all or the files are
        // one token stream cut into shards (its last document ends after the last file).
        if (!rc && reader->ends != DOCS_OWN && !stream) rc = b.sink.end(&b.sink);
    }
    if (!rc && stream) rc = b.sink.end(&b.sink);
    if (!rc && sum->seqs[SPLIT_TRAIN] == 0)
        rc = error("import: no train sequence among %lld documents (%lld sequences kept, %lld pieces shorter than data.min_length "
                   "%d dropped): nothing to train on", (long long)sum->documents, (long long)(sum->seqs[1] + sum->seqs[2]),
                   (long long)sum->short_pieces, cfg->data.min_length);
    free(b.doc);
    if (rc) {
        free(b.tokens), free(b.offsets), free(b.document), free(b.split);
        return -1;
    }
    // Grouped by split (train, validation, test), document order kept within each: a split
    // is then a range of ids (corpus_split_begin/end), and the sampler needs no id list.
    int64_t n = b.n_seq, at[4] = {0}, *first = xmalloc((size_t)(n + 1) * sizeof *first);
    b.offsets[0] = 0;
    for (int64_t i = 0; i < n; i++) at[b.split[i] + 1] += b.offsets[i + 1] - b.offsets[i];
    for (int k = 1; k < 4; k++) at[k] += at[k - 1];
    int64_t seq_at[4] = {0, sum->seqs[0], sum->seqs[0] + sum->seqs[1], n};
    corpus->tokens = xmalloc((size_t)(b.n_tokens ? b.n_tokens : 1) * sizeof *corpus->tokens);
    corpus->offsets = xmalloc((size_t)(n + 1) * sizeof *corpus->offsets);
    corpus->split = xmalloc((size_t)(n ? n : 1));
    int64_t *doc = xmalloc((size_t)(n ? n : 1) * sizeof *doc);
    for (int64_t i = 0; i < n; i++) {
        int k = b.split[i];
        int64_t j = seq_at[k]++, len = b.offsets[i + 1] - b.offsets[i];
        first[j] = at[k];
        memcpy(corpus->tokens + at[k], b.tokens + b.offsets[i], (size_t)len * sizeof *corpus->tokens);
        at[k] += len;
        corpus->split[j] = (uint8_t)k;
        doc[j] = b.document[i];
    }
    for (int64_t j = 0; j < n; j++) corpus->offsets[j] = first[j];
    corpus->offsets[n] = b.n_tokens;
    free(first), free(b.tokens), free(b.offsets), free(b.split), free(b.document);
    corpus->n = (int)n;
    corpus->n_tokens = b.n_tokens;
    *document = doc;
    corpus_index_splits(corpus);
    corpus_lock(corpus, cfg, corpus->lock);
    return 0;
}
