// import.h — users' files into ddptok's corpus (docs/data.md): one reader per format, each
// validating everything it reads before use, and the document rules that turn what the
// readers hand over into the sequences of corpus.h5.
//
// A reader streams one input and hands its documents to a DocSink: `add` appends ddptok
// ids to the open document, `end` closes it. Ids: every source id s (a byte value, or a
// token id of the file) becomes s + 1, since ddptok's id 0 is the context pad and begin
// state (docs/model.md); a source id must lie in [0, V − 1) with V = data.vocab_size.
// The sink here (import_corpus) keeps the corpus in memory and writes corpus.h5 as prepare
// does; a sink that appends to a chunked dataset instead is the on-demand reader's way in,
// without touching the readers.
//
// The document rules, applied to each closed document of L > 0 ids (empty ones are counted
// and skipped):
//   split   h = SHA-256("ddptok-split-v1" ‖ data.import.split_seed as uint32 LE ‖ its ids
//           as int32 LE); u = (first 8 bytes of h, big-endian) >> 11, x = u / 2^53 in
//           [0, 1): test if x < test_fraction, validation if x < test + validation
//           fraction, else train. A function of the document alone: adding documents
//           moves no other document.
//   length  n = ceil(L / max_length) pieces, piece j = ids [floor(j·L/n), floor((j+1)·L/n))
//           (lengths differ by at most one; each piece is a sequence, in its document's
//           split); a piece shorter than data.min_length is dropped and counted.
// Sequences keep the order of their documents; /document (n) names each one's document.
#ifndef DDPTOK_IMPORT_H
#define DDPTOK_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    IMPORT_BYTES = 0,  // raw bytes: id = byte + 1; documents split at --delimiter, else one per file
    IMPORT_LLMC,       // llm.c / modded-nanogpt shards: 256 int32 header, then uint16 (v1) or uint32 (v7) tokens
    IMPORT_NANOGPT,    // nanoGPT's headerless uint16 train.bin / val.bin
    IMPORT_MEGATRON,   // Megatron-LM's indexed dataset: X.idx + X.bin
    IMPORT_JSONL,      // JSON Lines: one token-id list per line
    IMPORT_JSONL_TEXT, // JSON Lines: one text per line, byte-level as IMPORT_BYTES
    IMPORT_FORMAT_COUNT
} ImportFormat;

extern const char *const import_format_names[IMPORT_FORMAT_COUNT];

// How to read the inputs: the command's options (src/cmd/import.c).
typedef struct {
    ImportFormat format;
    int64_t eot;            // the token id that separates documents (token formats); -1: none
    const char *delimiter;  // bytes: the byte string that separates documents; NULL: one document per file
    size_t delimiter_len;
    int64_t vocab;          // source ids must lie in [0, vocab): data.vocab_size − 1
    uint64_t budgeted;      // bytes import_budget found the corpus needs at most (set by import_corpus)
} ImportSpec;

// Where a reader's documents go. Both return 0, or -1 with the error printed.
typedef struct DocSink DocSink;
struct DocSink {
    int (*add)(DocSink *s, const int32_t *ids, int64_t n);  // appends ddptok ids (1..V-1) to the open document
    int (*end)(DocSink *s);                                 // closes the open document
};

// ---------------------------------------------------------------------------------------
// What a reader uses: one input file, read by offset, every error naming it and the offset.

typedef struct {
    const char *path;
    int fd;
    int64_t size;  // bytes, from fstat of the open descriptor
} ImportFile;

// Opens a regular file (a FIFO or a device is refused before it can block); 0 or -1.
// The memory budget of an import (config/budget.h): import_budget, before any file is read,
// from their sizes (the most the corpus can need; its bytes in *bytes); import_budget_line,
// for a JSONL line of n bytes parsed whole beside it. 0, or -1 with one line printed.
int import_budget(const Config *cfg, const ImportSpec *spec, char *const *files, int n_files, uint64_t *bytes);
int import_file_open(ImportFile *f, const char *path);
void import_file_close(ImportFile *f);
// Exactly n bytes at offset off (the caller has checked them against f->size); 0 or -1.
int import_file_read(const ImportFile *f, int64_t off, void *buf, size_t n);
// One line "PATH: offset OFF: <what>" (error()); returns -1.
int import_fail(const ImportFile *f, int64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int import_budget_line(const ImportSpec *spec, const ImportFile *f, int64_t off, int64_t line, size_t n);

// The integer types token files hold (Megatron's dtype codes name them too).
typedef enum { TOK_U8, TOK_I8, TOK_I16, TOK_U16, TOK_I32, TOK_U32, TOK_I64, TOK_TYPE_COUNT } TokenType;
extern const int token_type_size[TOK_TYPE_COUNT];
extern const char *const token_type_names[TOK_TYPE_COUNT];
// Reads `count` little-endian tokens of `type` from f at byte offset off (inside the file:
// the caller checked), in chunks: each must be in [0, spec->vocab); spec->eot closes the
// open document instead of entering it; the others go to the sink as id + 1. 0 or -1.
int import_tokens(const ImportSpec *spec, const ImportFile *f, int64_t off, int64_t count, TokenType type, DocSink *sink);

// ---------------------------------------------------------------------------------------
// The readers: one input each (megatron: a pair named by X.idx, X.bin or the prefix X).
// 0, or -1 with one line naming the file, the offset and the rule broken (nothing is
// handed to the sink from a file before its header and sizes are checked).

int import_read_bytes(const ImportSpec *spec, const char *path, DocSink *sink);
int import_read_llmc(const ImportSpec *spec, const char *path, DocSink *sink);
int import_read_nanogpt(const ImportSpec *spec, const char *path, DocSink *sink);
int import_read_megatron(const ImportSpec *spec, const char *path, DocSink *sink);
int import_read_jsonl(const ImportSpec *spec, const char *path, DocSink *sink);  // jsonl and jsonl-text

// Where documents end, besides the separators a reader finds.
typedef enum {
    DOCS_AT_FILE_END,  // the end of each file (bytes)
    DOCS_STREAM,       // without --eot each file is one document; with it the files are one stream (llm.c, nanoGPT)
    DOCS_OWN,          // the reader closes every document itself (Megatron's index, a JSONL line)
} DocEnds;

typedef struct {
    int (*read)(const ImportSpec *spec, const char *path, DocSink *sink);
    DocEnds ends;
    int takes_eot, takes_delimiter;  // which of --eot and --delimiter apply
} ImportReader;
extern const ImportReader import_readers[IMPORT_FORMAT_COUNT];

// ---------------------------------------------------------------------------------------
// The import

typedef struct {
    int64_t files;
    int64_t documents, empty;            // closed documents with ids; separators with nothing before them (skipped)
    int64_t tokens_read;                 // ids the readers handed over
    int64_t pieces, short_pieces, short_tokens;  // after the length rule; dropped below min_length
    int64_t docs[3], seqs[3], tokens[3]; // per split (train, validation, test): documents, sequences, tokens kept
} ImportSummary;

// The input files of `inputs`, in order: a file as it is (megatron: its .idx, from X.idx,
// X.bin or X); a directory as its regular files (megatron: its *.idx), by name, not
// recursive, names starting with '.' and links skipped. The caller frees each and the
// array. -1 (error printed) when an input is missing or a directory holds none.
int import_expand_inputs(ImportFormat format, char *const *inputs, int n_inputs, char ***files, int *n_files);

// Reads every file in order into `corpus` under cfg's document rules (its data lock set);
// `document` (n) gets each sequence's document index. 0, or -1 with the error printed
// (nothing kept). Refuses a corpus without a train sequence.
int import_corpus(Corpus *corpus, int64_t **document, const Config *cfg, const ImportSpec *spec, char *const *files,
                  int n_files, ImportSummary *sum);

// The split rule above for one document of n ids.
int import_split_of(const Config *cfg, const int32_t *ids, int64_t n);

// SHA-256 (hex) of a whole input file, for the record in corpus.h5; 0 or -1.
int import_file_sha256(const char *path, char out[65]);

#ifdef __cplusplus
}
#endif
#endif
