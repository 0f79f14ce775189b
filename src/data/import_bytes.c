// import_bytes.c — raw text or bytes, byte-level (docs/data.md "Raw text and bytes"): every
// byte b is a token, ddptok id b + 1 (V = 257 holds them all; a smaller V refuses the bytes
// beyond it). Without a delimiter the file is one document; with one, a document ends at
// each occurrence of the delimiter's bytes (scanning left to right, the delimiter dropped),
// and at the end of the file.
#include <stdlib.h>
#include <string.h>  // memmem (-D_GNU_SOURCE)

#include "base/mem.h"
#include "base/report.h"
#include "data/import.h"

// Hands bytes [0, n) of `raw` (file offset `at`) to the open document.
static int add_bytes(const ImportSpec *spec, ImportFile *f, int64_t at, const unsigned char *raw, size_t n, int32_t *ids,
                     DocSink *sink) {
    for (size_t i = 0; i < n; i++) {
        if (raw[i] >= spec->vocab)
            return import_fail(f, at + (int64_t)i, "byte %u needs id %u, beyond data.vocab_size - 1 = %lld (byte-level data "
                               "needs data.vocab_size 257)", raw[i], raw[i] + 1u, (long long)spec->vocab);
        ids[i] = raw[i] + 1;
    }
    return n ? sink->add(sink, ids, (int64_t)n) : 0;
}

int import_read_bytes(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]) {
    ImportFile f;
    if (import_file_open(&f, spec, path)) return -1;
    enum { CHUNK = 1 << 20 };
    const unsigned char *delim = (const unsigned char *)spec->delimiter;
    size_t dl = spec->delimiter ? spec->delimiter_len : 0;
    // buf holds the `keep` bytes not yet handed over (a delimiter may start in them) and
    // the next chunk after them; ASSERT: keep < dl.
    size_t cap = (size_t)(f.size < CHUNK ? f.size : CHUNK) + dl + 1;
    unsigned char *buf = xmalloc(cap);
    int32_t *ids = xmalloc(cap * sizeof *ids);
    size_t keep = 0;
    int64_t at = 0;  // file offset of buf[0]
    int rc = 0;
    while (!rc && at + (int64_t)keep < f.size) {
        size_t n = (size_t)(f.size - at - (int64_t)keep < CHUNK ? f.size - at - (int64_t)keep : CHUNK);
        if ((rc = import_file_read(&f, at + (int64_t)keep, buf + keep, n))) break;
        size_t have = keep + n, from = 0;
        int last = at + (int64_t)have == f.size;
        if (dl) {
            const unsigned char *hit;
            while (!rc && (hit = memmem(buf + from, have - from, delim, dl))) {
                size_t pos = (size_t)(hit - buf);
                rc = add_bytes(spec, &f, at + (int64_t)from, buf + from, pos - from, ids, sink);
                if (!rc) rc = sink->end(sink);
                from = pos + dl;
            }
        }
        // Everything but the tail a delimiter could still start in (all of it at the end).
        size_t upto = last || !dl ? have : (have - from >= dl ? have - (dl - 1) : from);
        if (!rc) rc = add_bytes(spec, &f, at + (int64_t)from, buf + from, upto - from, ids, sink);
        keep = have - upto;
        memmove(buf, buf + upto, keep);
        at += (int64_t)upto;
    }
    free(buf);
    free(ids);
    if (import_file_close(&f, rc ? NULL : sha[0])) rc = -1;
    return rc;
}
