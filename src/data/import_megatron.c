// import_megatron.c — Megatron-LM's indexed dataset (docs/data.md), as
// megatron/core/datasets/indexed_dataset.py's _IndexWriter writes it: X.idx holds
//   9 bytes "MMIDIDX\0\0", uint64 version 1, uint8 dtype code (1 uint8, 2 int8, 3 int16,
//   4 int32, 5 int64, 6 float64, 7 float32, 8 uint16), uint64 sequence count S, uint64
//   document-index count D, then int32 sequence lengths [S], int64 byte pointers into
//   X.bin [S], int64 document indices [D]
// (all little-endian, 34 header bytes). The pointers are the running sum of length x the
// dtype's size; the document indices start at 0, never decrease and end at S: document j
// is sequences [idx[j], idx[j+1]), D − 1 documents. X.bin holds exactly the tokens the
// pointers cover. Every rule is checked on the whole index before X.bin is read; a
// multimodal index (an int8 mode per sequence after the document indices) and float dtypes
// are refused.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "data/import.h"

enum { IDX_HEADER_BYTES = 34 };
static const char idx_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};

// Megatron's dtype codes -> the token type (-1: not a token type).
static const int code_type[9] = {-1, TOK_U8, TOK_I8, TOK_I16, TOK_I32, TOK_I64, -1, -1, TOK_U16};
static const char *const code_names[9] = {"?", "uint8", "int8", "int16", "int32", "int64", "float64", "float32", "uint16"};

static uint64_t u64_at(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

// Checks the index (already in memory: lengths, pointers, doc) against itself and the .bin.
static int check_index(const ImportFile *fi, const ImportFile *fb, int64_t S, int64_t D, int esize, const int32_t *len,
                       const int64_t *ptr, const int64_t *doc) {
    int64_t off_len = IDX_HEADER_BYTES, off_ptr = off_len + 4 * S, off_doc = off_ptr + 8 * S, expect = 0;
    for (int64_t i = 0; i < S; i++) {
        if (len[i] < 0) return import_fail(fi, off_len + 4 * i, "sequence %lld has length %d, expected >= 0", (long long)i, len[i]);
        if (ptr[i] < 0 || (i > 0 && ptr[i] < ptr[i - 1]))
            return import_fail(fi, off_ptr + 8 * i, "sequence pointers decrease: pointer %lld is %lld, after %lld", (long long)i,
                               (long long)ptr[i], i > 0 ? (long long)ptr[i - 1] : 0LL);
        // 64-bit: a pointer within the .bin plus at most 2^31 x 8 bytes cannot wrap.
        int64_t end = ptr[i] <= fb->size ? ptr[i] + (int64_t)len[i] * esize : INT64_MAX;
        if (end > fb->size)
            return import_fail(fi, off_ptr + 8 * i, "sequence %lld at byte %lld (%d tokens of %d bytes) runs past the %lld bytes of %s",
                               (long long)i, (long long)ptr[i], len[i], esize, (long long)fb->size, fb->path);
        if (ptr[i] != expect)
            return import_fail(fi, off_ptr + 8 * i, "pointer %lld is %lld, expected %lld (pointer %lld + length x %d bytes: the "
                               "sequences are contiguous)", (long long)i, (long long)ptr[i], (long long)expect, (long long)i - 1,
                               esize);
        expect = end;
    }
    if (expect != fb->size)
        return import_fail(fb, expect, "the index covers %lld bytes of tokens, %s holds %lld (another pair, or truncated)",
                           (long long)expect, fb->path, (long long)fb->size);
    if (D < 1) return import_fail(fi, 26, "document-index count 0, expected at least 1 (the leading 0)");
    for (int64_t j = 0; j < D; j++) {
        int64_t want_lo = j ? doc[j - 1] : 0;
        if (doc[j] < want_lo || doc[j] > S || (j == 0 && doc[j] != 0))
            return import_fail(fi, off_doc + 8 * j, "document index %lld is %lld, expected %s in [%lld, %lld]", (long long)j,
                               (long long)doc[j], j ? "a non-decreasing sequence index" : "0", (long long)want_lo, (long long)S);
    }
    if (doc[D - 1] != S)
        return import_fail(fi, off_doc + 8 * (D - 1), "the last document index is %lld, expected the sequence count %lld",
                           (long long)doc[D - 1], (long long)S);
    return 0;
}

int import_read_megatron(const ImportSpec *spec, const char *path, DocSink *sink) {
    // path is X.idx (import_expand_inputs); the pair's data is X.bin.
    size_t pl = strlen(path);
    char *bin = xmalloc(pl + 1);
    memcpy(bin, path, pl + 1);
    if (pl >= 4 && !strcmp(bin + pl - 4, ".idx")) memcpy(bin + pl - 4, ".bin", 4);
    ImportFile fi, fb;
    fb.fd = -1;
    int32_t *len = NULL;
    int64_t *ptr = NULL, *doc = NULL;
    int rc = -1;
    if (import_file_open(&fi, path)) {
        free(bin);
        return -1;
    }
    if (import_file_open(&fb, bin)) goto out;
    unsigned char h[IDX_HEADER_BYTES];
    if (fi.size < IDX_HEADER_BYTES) {
        import_fail(&fi, 0, "the file has %lld bytes, a Megatron .idx starts with a %d-byte header", (long long)fi.size,
                    IDX_HEADER_BYTES);
        goto out;
    }
    if (import_file_read(&fi, 0, h, sizeof h)) goto out;
    if (memcmp(h, idx_magic, sizeof idx_magic) != 0) {
        import_fail(&fi, 0, "not a Megatron index: its first 9 bytes are not \"MMIDIDX\\0\\0\"");
        goto out;
    }
    uint64_t version = u64_at(h + 9), S = u64_at(h + 18), D = u64_at(h + 26);
    int code = h[17];
    if (version != 1) {
        import_fail(&fi, 9, "version %llu, expected 1", (unsigned long long)version);
        goto out;
    }
    if (code < 1 || code > 8 || code_type[code] < 0) {
        import_fail(&fi, 17, "dtype code %d (%s), expected a token type: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64 or 8 uint16",
                    code, code >= 1 && code <= 8 ? code_names[code] : "unknown");
        goto out;
    }
    TokenType type = (TokenType)code_type[code];
    // The index's size from its counts, 64-bit and saturating: S x 12 + D x 8 after the header.
    uint64_t expect = size_add(IDX_HEADER_BYTES, size_add(size_mul(S, 12), size_mul(D, 8)));
    if (expect != (uint64_t)fi.size) {
        import_fail(&fi, 18, "%llu sequences and %llu document indices need %s%llu bytes, the file has %lld%s",
                    (unsigned long long)S, (unsigned long long)D, expect == UINT64_MAX ? "more than " : "",
                    (unsigned long long)expect, (long long)fi.size,
                    expect < UINT64_MAX - S && expect + S == (uint64_t)fi.size ? " (a multimodal index: sequence modes are not supported)" : "");
        goto out;
    }
    if (S > INT32_MAX) {  // Megatron counts sequences in int32 too
        import_fail(&fi, 18, "%llu sequences, at most 2^31 - 1", (unsigned long long)S);
        goto out;
    }
    // Sizes now bounded by the file's: the arrays fit in what the file holds.
    len = xmalloc((size_t)S * sizeof *len + 1);
    ptr = xmalloc((size_t)S * sizeof *ptr + 1);
    doc = xmalloc((size_t)D * sizeof *doc + 1);
    if (import_file_read(&fi, IDX_HEADER_BYTES, len, (size_t)S * 4) ||
        import_file_read(&fi, IDX_HEADER_BYTES + 4 * (int64_t)S, ptr, (size_t)S * 8) ||
        import_file_read(&fi, IDX_HEADER_BYTES + 12 * (int64_t)S, doc, (size_t)D * 8) ||
        check_index(&fi, &fb, (int64_t)S, (int64_t)D, token_type_size[type], len, ptr, doc))
        goto out;
    rc = 0;
    for (uint64_t j = 0; j + 1 < D && !rc; j++) {
        for (int64_t i = doc[j]; i < doc[j + 1] && !rc; i++) rc = import_tokens(spec, &fb, ptr[i], len[i], type, sink);
        if (!rc) rc = sink->end(sink);
    }
out:
    free(len), free(ptr), free(doc), free(bin);
    import_file_close(&fi);
    import_file_close(&fb);
    return rc;
}
