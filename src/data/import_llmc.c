// import_llmc.c — flat token files (docs/data.md): llm.c / modded-nanogpt shards and
// nanoGPT's headerless .bin.
//
// llm.c (dev/data/data_common.py writes them, llmc/dataloader.h reads them): a header of
// 256 little-endian int32, header[0] the magic, header[1] the version, header[2] the
// number of tokens; the tokens follow the 1024-byte header. Magic 20240520 with version 1
// holds uint16 tokens (GPT-2), magic 20240801 with version 7 uint32 tokens (Llama 3). The
// file must be exactly 1024 + tokens x the token's size bytes. The other header words are
// not used. nanoGPT (data/*/prepare.py): uint16 tokens and nothing else.
//
// Documents: --eot names the id that separates them (GPT-2's <|endoftext|> is 50256; llm.c
// puts it before each document, nanoGPT after); it is dropped. With --eot the files are one
// stream in the order given — llm.c cuts documents across shards, so a shard that does not
// start with the EOT continues the last document of the shard before it — and a file's end is
// no document's end; without it each file is one document.
#include <stdint.h>
#include <string.h>

#include "base/report.h"
#include "data/import.h"

enum { LLMC_HEADER_INTS = 256, LLMC_HEADER_BYTES = LLMC_HEADER_INTS * 4 };
enum { LLMC_MAGIC_GPT2 = 20240520, LLMC_MAGIC_LLAMA3 = 20240801 };

// The header of an open shard, checked against the file's size: its token type and count. 0 or -1.
static int llmc_header(ImportFile *f, TokenType *type, int64_t *count) {
    int32_t h[LLMC_HEADER_INTS];
    if (f->size < LLMC_HEADER_BYTES)
        return import_fail(f, 0, "the file has %lld bytes, an llm.c shard starts with a %d-byte header (256 int32)", (long long)f->size,
                           LLMC_HEADER_BYTES);
    if (import_file_read(f, 0, h, sizeof h)) return -1;
    if (h[0] == LLMC_MAGIC_GPT2) *type = TOK_U16;
    else if (h[0] == LLMC_MAGIC_LLAMA3) *type = TOK_U32;
    else
        return import_fail(f, 0, "magic %d, expected %d (llm.c GPT-2, uint16 tokens) or %d (llm.c Llama 3, uint32 tokens)", h[0],
                           LLMC_MAGIC_GPT2, LLMC_MAGIC_LLAMA3);
    int want = *type == TOK_U16 ? 1 : 7;
    if (h[1] != want) return import_fail(f, 4, "version %d, expected %d for magic %d (%s tokens)", h[1], want, h[0], token_type_names[*type]);
    int64_t size = token_type_size[*type], n = h[2], payload = f->size - LLMC_HEADER_BYTES;
    if (n < 0 || n * size != payload)
        return import_fail(f, 8, "header[2] = %d tokens, but the %lld bytes after the header hold %lld %s tokens%s", h[2],
                           (long long)payload, (long long)(payload / size), token_type_names[*type],
                           payload % size ? " and a partial one" : " (truncated, or not this file's header)");
    *count = n;
    return 0;
}

int import_probe_llmc(const ImportSpec *spec, const char *path) {
    ImportFile f;
    if (import_file_open(&f, spec, path)) return -1;
    TokenType type;
    int64_t n;
    int rc = llmc_header(&f, &type, &n);
    import_file_close(&f, NULL);
    return rc;
}

int import_read_llmc(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]) {
    ImportFile f;
    if (import_file_open(&f, spec, path)) return -1;
    TokenType type;
    int64_t n;
    int rc = llmc_header(&f, &type, &n) || import_tokens(spec, &f, LLMC_HEADER_BYTES, n, type, sink) ? -1 : 0;
    if (import_file_close(&f, rc ? NULL : sha[0])) rc = -1;
    return rc;
}

// A nanoGPT .bin: an even size, and not an llm.c shard (its magic at offset 0). 0 or -1.
static int nanogpt_check(ImportFile *f) {
    int32_t magic = 0;
    if (f->size % 2) return import_fail(f, f->size - 1, "an odd size (%lld bytes): a nanoGPT .bin holds 2 bytes per token", (long long)f->size);
    if (f->size >= 4 && import_file_read(f, 0, &magic, 4)) return -1;
    if (magic == LLMC_MAGIC_GPT2 || magic == LLMC_MAGIC_LLAMA3)
        return import_fail(f, 0, "starts with llm.c's magic %d: an llm.c shard (--format llmc), not a headerless nanoGPT .bin", magic);
    return 0;
}

int import_probe_nanogpt(const ImportSpec *spec, const char *path) {
    ImportFile f;
    if (import_file_open(&f, spec, path)) return -1;
    int rc = nanogpt_check(&f);
    import_file_close(&f, NULL);
    return rc;
}

int import_read_nanogpt(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]) {
    ImportFile f;
    if (import_file_open(&f, spec, path)) return -1;
    int rc = nanogpt_check(&f) || import_tokens(spec, &f, 0, f.size / 2, TOK_U16, sink) ? -1 : 0;
    if (import_file_close(&f, rc ? NULL : sha[0])) rc = -1;
    return rc;
}
