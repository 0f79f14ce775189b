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
//
// In memory of a few blocks whatever S is: the index is read once in order (hashed, with
// each of its three arrays' own SHA-256), then again as two arrays side by side to check
// the rules (lengths with pointers, then the document indices), then a third time with X.bin
// to hand the tokens over (lengths with document indices); each second read is compared
// with the first.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "data/import.h"

enum { IDX_HEADER_BYTES = 34 };
enum { MARK_LENGTHS = 0, MARK_POINTERS = 1, MARK_DOCS = 2 };
static const char idx_magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};

// Megatron's dtype codes -> the token type (-1: not a token type).
static const int code_type[9] = {-1, TOK_U8, TOK_I8, TOK_I16, TOK_I32, TOK_I64, -1, -1, TOK_U16};
static const char *const code_names[9] = {"?", "uint8", "int8", "int16", "int32", "int64", "float64", "float32", "uint16"};

static uint64_t u64_at(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

// The .bin beside X.idx (caller frees).
static char *bin_of(const char *path) {
    size_t pl = strlen(path);
    char *bin = xmalloc(pl + 1);
    memcpy(bin, path, pl + 1);
    if (pl >= 4 && !strcmp(bin + pl - 4, ".idx")) memcpy(bin + pl - 4, ".bin", 4);
    return bin;
}

// The header of an open index, checked against its size: the token type and the counts. 0 or -1.
static int idx_header(ImportFile *fi, TokenType *type, int64_t *S, int64_t *D) {
    unsigned char h[IDX_HEADER_BYTES];
    if (fi->size < IDX_HEADER_BYTES)
        return import_fail(fi, 0, "the file has %lld bytes, a Megatron .idx starts with a %d-byte header", (long long)fi->size,
                           IDX_HEADER_BYTES);
    if (import_file_read(fi, 0, h, sizeof h)) return -1;
    if (memcmp(h, idx_magic, sizeof idx_magic) != 0) return import_fail(fi, 0, "not a Megatron index: its first 9 bytes are not \"MMIDIDX\\0\\0\"");
    uint64_t version = u64_at(h + 9), s = u64_at(h + 18), d = u64_at(h + 26);
    int code = h[17];
    if (version != 1) return import_fail(fi, 9, "version %llu, expected 1", (unsigned long long)version);
    if (code < 1 || code > 8 || code_type[code] < 0)
        return import_fail(fi, 17, "dtype code %d (%s), expected a token type: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64 or 8 uint16",
                           code, code >= 1 && code <= 8 ? code_names[code] : "unknown");
    *type = (TokenType)code_type[code];
    // The index's size from its counts, 64-bit and saturating: S x 12 + D x 8 after the header.
    uint64_t expect = size_add(IDX_HEADER_BYTES, size_add(size_mul(s, 12), size_mul(d, 8)));
    if (expect != (uint64_t)fi->size)
        return import_fail(fi, 18, "%llu sequences and %llu document indices need %s%llu bytes, the file has %lld%s",
                           (unsigned long long)s, (unsigned long long)d, expect == UINT64_MAX ? "more than " : "",
                           (unsigned long long)expect, (long long)fi->size,
                           expect < UINT64_MAX - s && expect + s == (uint64_t)fi->size ? " (a multimodal index: sequence modes are not supported)" : "");
    if (s > INT32_MAX) return import_fail(fi, 18, "%llu sequences, at most 2^31 - 1", (unsigned long long)s);  // Megatron counts them in int32 too
    if (d < 1) return import_fail(fi, 26, "document-index count 0, expected at least 1 (the leading 0)");
    *S = (int64_t)s, *D = (int64_t)d;
    return 0;
}

int import_probe_megatron(const ImportSpec *spec, const char *path) {
    ImportFile fi, fb;
    char *bin = bin_of(path);
    TokenType type;
    int64_t S, D;
    int rc = import_file_open(&fi, spec, path);
    if (!rc) rc = idx_header(&fi, &type, &S, &D), import_file_close(&fi, NULL);
    if (!rc && !(rc = import_file_open(&fb, spec, bin))) import_file_close(&fb, NULL);
    free(bin);
    return rc;
}

// The rules on the whole index, read again: lengths beside pointers, then the document indices.
static int check_index(ImportFile *fi, const ImportFile *fb, int64_t S, int64_t D, int esize) {
    int64_t off_len = IDX_HEADER_BYTES, off_ptr = off_len + 4 * S, off_doc = off_ptr + 8 * S, expect = 0, prev = 0;
    ImportCursor cl, cp, cd;
    import_cursor_open(&cl, fi, MARK_LENGTHS);
    import_cursor_open(&cp, fi, MARK_POINTERS);
    int rc = 0;
    for (int64_t i = 0; i < S && !rc; i++) {
        int32_t len;
        int64_t ptr;
        if ((rc = import_cursor_next(&cl, &len, 4) || import_cursor_next(&cp, &ptr, 8))) break;
        if (len < 0) rc = import_fail(fi, off_len + 4 * i, "sequence %lld has length %d, expected >= 0", (long long)i, len);
        else if (ptr < 0 || (i > 0 && ptr < prev))
            rc = import_fail(fi, off_ptr + 8 * i, "sequence pointers decrease: pointer %lld is %lld, after %lld", (long long)i,
                             (long long)ptr, i > 0 ? (long long)prev : 0LL);
        else {
            // 64-bit: a pointer within the .bin plus at most 2^31 x 8 bytes cannot wrap.
            int64_t end = ptr <= fb->size ? ptr + (int64_t)len * esize : INT64_MAX;
            if (end > fb->size)
                rc = import_fail(fi, off_ptr + 8 * i, "sequence %lld at byte %lld (%d tokens of %d bytes) runs past the %lld bytes of %s",
                                 (long long)i, (long long)ptr, len, esize, (long long)fb->size, fb->path);
            else if (ptr != expect)
                rc = import_fail(fi, off_ptr + 8 * i, "pointer %lld is %lld, expected %lld (pointer %lld + length x %d bytes: the "
                                 "sequences are contiguous)", (long long)i, (long long)ptr, (long long)expect, (long long)i - 1, esize);
            expect = end, prev = ptr;
        }
    }
    if (!rc) rc = import_cursor_close(&cl) || import_cursor_close(&cp) ? -1 : 0;
    else import_cursor_drop(&cl), import_cursor_drop(&cp);
    if (rc) return -1;
    if (expect != fb->size)
        return import_fail(fb, expect, "the index covers %lld bytes of tokens, %s holds %lld (another pair, or truncated)",
                           (long long)expect, fb->path, (long long)fb->size);
    import_cursor_open(&cd, fi, MARK_DOCS);
    int64_t last = 0;
    for (int64_t j = 0; j < D && !rc; j++) {
        int64_t doc;
        if ((rc = import_cursor_next(&cd, &doc, 8))) break;
        int64_t want_lo = j ? last : 0;
        if (doc < want_lo || doc > S || (j == 0 && doc != 0))
            rc = import_fail(fi, off_doc + 8 * j, "document index %lld is %lld, expected %s in [%lld, %lld]", (long long)j, (long long)doc,
                             j ? "a non-decreasing sequence index" : "0", (long long)want_lo, (long long)S);
        else if (j == D - 1 && doc != S)
            rc = import_fail(fi, off_doc + 8 * j, "the last document index is %lld, expected the sequence count %lld", (long long)doc,
                             (long long)S);
        last = doc;
    }
    if (!rc) rc = import_cursor_close(&cd);
    else import_cursor_drop(&cd);
    return rc;
}

int import_read_megatron(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]) {
    // path is X.idx (import_expand_inputs); the pair's data is X.bin.
    char *bin = bin_of(path);
    ImportFile fi, fb;
    fb.fd = -1;
    int rc = -1;
    TokenType type;
    int64_t S, D;
    if (import_file_open(&fi, spec, path)) {
        free(bin);
        return -1;
    }
    if (import_file_open(&fb, spec, bin) || idx_header(&fi, &type, &S, &D)) goto out;
    int esize = token_type_size[type];
    // 1. the whole index in order: hashed, and each array's own SHA-256.
    import_file_mark(&fi, MARK_LENGTHS, IDX_HEADER_BYTES, IDX_HEADER_BYTES + 4 * S);
    import_file_mark(&fi, MARK_POINTERS, IDX_HEADER_BYTES + 4 * S, IDX_HEADER_BYTES + 12 * S);
    import_file_mark(&fi, MARK_DOCS, IDX_HEADER_BYTES + 12 * S, fi.size);
    {
        enum { BLOCK = 1 << 16 };
        unsigned char *block = xmalloc(BLOCK);
        int bad = 0;
        for (int64_t at = IDX_HEADER_BYTES; at < fi.size && !bad; at += BLOCK)
            bad = import_file_read(&fi, at, block, (size_t)(fi.size - at < BLOCK ? fi.size - at : BLOCK));
        free(block);
        if (bad) goto out;
    }
    // 2. every rule, before a token is handed over
    if (check_index(&fi, &fb, S, D, esize)) goto out;
    // 3. the tokens, document by document
    ImportCursor cl, cd;
    import_cursor_open(&cl, &fi, MARK_LENGTHS);
    import_cursor_open(&cd, &fi, MARK_DOCS);
    int64_t doc, next, at = 0, i = 0;
    rc = import_cursor_next(&cd, &doc, 8);
    for (int64_t j = 0; j + 1 < D && !rc; j++) {
        if ((rc = import_cursor_next(&cd, &next, 8))) break;
        for (; i < next && !rc; i++) {
            int32_t len;
            if (!(rc = import_cursor_next(&cl, &len, 4))) rc = import_tokens(spec, &fb, at, len, type, sink), at += (int64_t)len * esize;
        }
        if (!rc) rc = sink->end(sink);
    }
    for (; i < S && !rc; i++) {  // sequences after the last document index: none (it is S), read for the check
        int32_t len;
        rc = import_cursor_next(&cl, &len, 4);
    }
    if (!rc) rc = import_cursor_close(&cl) || import_cursor_close(&cd) ? -1 : 0;
    else import_cursor_drop(&cl), import_cursor_drop(&cd);
out:
    if (import_file_close(&fi, rc ? NULL : sha[0])) rc = -1;
    if (import_file_close(&fb, rc ? NULL : sha[1])) rc = -1;
    free(bin);
    return rc;
}
