// import.h — users' files into ddptok's corpus (docs/data.md): one reader per format, each
// validating everything it reads before use, and the document rules that turn what the
// readers hand over into the sequences of corpus.h5, written by data/writer.h in memory
// bounded by constants (IMPORT_MEMORY, and one JSON line parsed whole).
//
// A reader streams one input and hands its documents to a DocSink: `add` appends ddptok
// ids to the open document, `end` closes it. Ids: every source id s (a byte value, or a
// token id of the file) becomes s + 1, since ddptok's id 0 is the context pad and begin
// state (docs/model.md); a source id must lie in [0, V − 1) with V = data.vocab_size.
//
// Two passes over the inputs, the same readers both times: the first counts (each
// document's length, split and a 64-bit checksum of its ids, recorded in a temporary file of
// 17 bytes per document, and every split's sequences and tokens), the second places each
// piece straight into its split's region of corpus.h5 (the writer knows every size from the
// first pass) and hashes every input as it reads it: the SHA-256 recorded in /import_files is
// of the very bytes the corpus was cut from; a document whose length or checksum differs from
// the first pass's (an input that changed in between) is refused, nothing published.
//
// The document rules, applied to each closed document of L > 0 ids (empty ones are counted
// and skipped):
//   split   by hash (the default): h = SHA-256("ddptok-split-v1" ‖ data.import.split_seed as
//           uint32 LE ‖ its ids as int32 LE); u = (first 8 bytes of h, big-endian) >> 11,
//           x = u / 2^53 in [0, 1): test if x < test_fraction, validation if x < test +
//           validation fraction, else train. A function of the document alone: adding
//           documents moves no other document. By name (--split-from-names): the split its
//           input's name says (import_name_split); a document never crosses a change of it.
//   length  n = ceil(L / max_length) pieces, piece j = ids [floor(j·L/n), floor((j+1)·L/n))
//           (lengths differ by at most one; each piece is a sequence, in its document's
//           split); a piece shorter than data.min_length is dropped and counted.
// Sequences are grouped by split, document order kept within each; /document (n) names each
// one's document.
//
// To add a format: its enum value and reader here, its row in import_readers and
// import_format_names (import.c), its file import_<format>.c; a fuzz target in the Makefile's
// IMPORT_FUZZERS; its writer and damaged cases in tests/import_witness.py; its row in docs/data.md.
#ifndef DDPTOK_IMPORT_H
#define DDPTOK_IMPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/sha256.h"
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

// The most an import holds, whatever its inputs' sizes (the readers' and the writer's buffers,
// measured: docs/data.md); a JSON line parsed whole comes on top (import_budget_line).
#define IMPORT_MEMORY ((uint64_t)64 << 20)

typedef struct ImportProgress ImportProgress;
typedef struct ImportHasher ImportHasher;  // the thread that hashes what the readers read (import.c)

// How to read the inputs: the command's options (src/cmd/import.c).
typedef struct {
    ImportFormat format;
    int64_t eot;            // the token id that separates documents (token formats); -1: none
    const char *delimiter;  // bytes: the byte string that separates documents; NULL: one document per file
    size_t delimiter_len;
    const char *key;        // jsonl: the object key holding the list or text (NULL: tokens or input_ids / text)
    int split_from_names;   // each input's split from its name, not the document hash
    const char *options_text;  // the options as corpus.h5's import_options records them ("--eot 50256")
    int64_t vocab;          // source ids must lie in [0, vocab): data.vocab_size − 1
    uint64_t budgeted;      // bytes the import holds besides a JSON line (IMPORT_MEMORY)
    ImportProgress *progress;  // bytes read so far, for the progress line (may be NULL)
    ImportHasher *hasher;      // hashes the inputs beside the reader (NULL: the reader hashes them itself)
    int no_file_sha;           // the first pass: no file's SHA-256 (the second, which writes the corpus, takes them)
} ImportSpec;

// Where a reader's documents go. Both return 0, or -1 with the error printed.
typedef struct DocSink DocSink;
struct DocSink {
    int (*add)(DocSink *s, const int32_t *ids, int64_t n);  // appends ddptok ids (1..V-1) to the open document
    int (*end)(DocSink *s);                                 // closes the open document
};

// ---------------------------------------------------------------------------------------
// What a reader uses: one input file, read in order from its first byte (reads at the next
// unread byte, or again inside the first 64, compared with what was read), every byte hashed
// as it is read; every error names the file and the offset.

enum { IMPORT_HEAD = 64, IMPORT_MARKS = 3 };
typedef struct {
    const char *path;
    int fd;
    int64_t size;             // bytes, from fstat of the open descriptor
    Sha256 *sha;              // of bytes [0, hashed) (NULL: not taken in this pass, spec->no_file_sha)
    int64_t hashed;
    int hashing;              // opened by import_file_open (the frontier is kept)
    unsigned char head[IMPORT_HEAD];
    int64_t mark[IMPORT_MARKS][2];      // regions whose own SHA-256 the sequential read takes too (import_file_mark)
    Sha256 *mark_sha[IMPORT_MARKS];
    unsigned char mark_sum[IMPORT_MARKS][32];
    ImportProgress *progress;
    ImportHasher *hasher;
} ImportFile;

// Opens a regular file (a FIFO or a device is refused before it can block); 0 or -1.
int import_file_open(ImportFile *f, const ImportSpec *spec, const char *path);
// Closes it; with sha (not NULL) its SHA-256 as read, hex: -1 (error printed) unless every
// byte was read.
int import_file_close(ImportFile *f, char sha[65]);
// Exactly n bytes at offset off (the caller has checked them against f->size); 0 or -1.
int import_file_read(ImportFile *f, int64_t off, void *buf, size_t n);
// Region k [from, to) gets its own SHA-256 as the reads pass it (set before they reach it).
void import_file_mark(ImportFile *f, int k, int64_t from, int64_t to);
// A second read of a marked region, in order, in blocks, compared at its end with what the
// first read hashed (an input that changed while it was read is refused).
typedef struct {
    ImportFile *f;
    int mark;
    int64_t at, end;
    Sha256 *sha;
    unsigned char *buf;
    size_t have, used, cap;
} ImportCursor;
void import_cursor_open(ImportCursor *c, ImportFile *f, int mark);
int import_cursor_next(ImportCursor *c, void *out, size_t n);  // exactly n bytes; 0 or -1
int import_cursor_close(ImportCursor *c);                      // at the region's end: 0, or -1 if it changed
void import_cursor_drop(ImportCursor *c);                      // after an error: frees, checks nothing
// One line "PATH: offset OFF: <what>" (error()); returns -1.
int import_fail(const ImportFile *f, int64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int import_budget_line(const ImportSpec *spec, const ImportFile *f, int64_t off, int64_t line, size_t n);

// The integer types token files hold (Megatron's dtype codes name them too).
typedef enum { TOK_U8, TOK_I8, TOK_I16, TOK_U16, TOK_I32, TOK_U32, TOK_I64, TOK_TYPE_COUNT } TokenType;
extern const int token_type_size[TOK_TYPE_COUNT];
extern const char *const token_type_names[TOK_TYPE_COUNT];
// Reads `count` little-endian tokens of `type` from f at byte offset off (inside the file:
// the caller checked), in chunks: each must be in [0, spec->vocab); spec->eot (when >= 0)
// closes the open document instead of entering it; the others go to the sink as id + 1. 0 or -1.
int import_tokens(const ImportSpec *spec, ImportFile *f, int64_t off, int64_t count, TokenType type, DocSink *sink);

// ---------------------------------------------------------------------------------------
// The readers: one input each (megatron: a pair, X.idx and X.bin). 0, or -1 with one line
// naming the file, the offset and the rule broken (nothing is handed to the sink from a file
// before its header and sizes are checked). `sha` gets each file's SHA-256 as read (two for
// megatron: the .idx, the .bin). `probe` checks what needs no token (the header, the sizes)
// for --check and before the first pass.

typedef struct {
    int (*read)(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]);
    int (*probe)(const ImportSpec *spec, const char *path);
    int files;                       // files per input (megatron: 2)
    enum {
        DOCS_AT_FILE_END,  // the end of each file (bytes)
        DOCS_STREAM,       // without --eot each file is one document; with it the files are one stream (llm.c, nanoGPT)
        DOCS_OWN,          // the reader closes every document itself (Megatron's index, a JSONL line)
    } ends;
    int takes_eot, takes_delimiter, takes_key;  // which of --eot, --delimiter and --key apply
} ImportReader;
extern const ImportReader import_readers[IMPORT_FORMAT_COUNT];

int import_read_bytes(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]);
int import_read_llmc(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]);
int import_read_nanogpt(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]);
int import_read_megatron(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]);
int import_read_jsonl(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]);  // jsonl and jsonl-text
int import_probe_llmc(const ImportSpec *spec, const char *path);
int import_probe_nanogpt(const ImportSpec *spec, const char *path);
int import_probe_megatron(const ImportSpec *spec, const char *path);

// ---------------------------------------------------------------------------------------
// The inputs

// One input as the readers take it: its file (megatron: its .idx; the .bin beside it), and
// its split when the names give it.
typedef struct {
    char *path;
    int split;  // SPLIT_* from the name (import_name_split), or -1
} ImportInput;

// What a directory held that is not read: counted, and said in the summary.
typedef struct {
    int64_t links, directories, hidden, other;  // other: megatron's non-.idx names (the .bin of each pair excluded)
} ImportSkipped;

// The input files of `inputs`, in order: a file as it is (megatron: X.idx, from X.idx, X.bin
// or X); a glob (*, ? or [ in a path that does not exist as given) as the files it matches;
// a directory as its regular files (megatron: its *.idx), not recursive, names starting with
// '.', links and sub-directories skipped (counted in *skipped). A directory's or a glob's
// files in the order import_name_order defines. -1 (error printed) when an input is missing
// or names no file. The caller frees with import_inputs_free.
int import_expand_inputs(ImportFormat format, char *const *inputs, int n_inputs, ImportInput **files, int *n_files,
                         ImportSkipped *skipped);
void import_inputs_free(ImportInput *files, int n_files);
// The order of a directory's files: by name, numbers by value (shard_9 before shard_10), a
// split word between separators (train, val, valid, validation, dev, test) left out of the
// comparison, so that llm.c's fineweb_val_000000.bin comes before fineweb_train_000001.bin,
// where its writer put it; names equal but for it: validation first, then train, then test.
int import_name_order(const char *a, const char *b);
// The split a file's name gives (the last component: a word train, val, valid, validation,
// dev or test between non-letters): SPLIT_*, -1 for none, -2 for two different ones.
int import_name_split(const char *path);

// ---------------------------------------------------------------------------------------
// The import

typedef struct {
    int64_t files;
    int64_t documents, empty;            // closed documents with ids; empty ones, skipped (two separators in a row: in one
                                         // stream a separator at its start, its end or a split change is a boundary, not one)
    int64_t tokens_read;                 // ids the readers handed over
    int64_t pieces, short_pieces, short_tokens;  // after the length rule; dropped below min_length
    int64_t docs[3], seqs[3], tokens[3]; // per split (train, validation, test): documents, sequences, tokens kept
    int64_t cut_at_split;                // documents cut where the inputs' own split changes (--split-from-names)
    ImportSkipped skipped;
    int64_t input_bytes;                 // of the files read (each pass reads them all)
    double seconds[3];                   // pass 1 (count), pass 2 (place), the end (checksums' tree, publish)
} ImportSummary;

// Checks every input's header and sizes (the readers' probe) and that none is compressed
// (gzip, xz, zstd, bzip2: named, with the command that decompresses it): what the run refuses
// before reading a token, for --check too. 0, or -1 with one line.
int import_probe(const ImportSpec *spec, const ImportInput *files, int n_files);
// The memory an import needs: IMPORT_MEMORY through the budget (config/budget.h), whatever
// the inputs' sizes; 0, or -1 with one line.
int import_budget(const ImportSpec *spec);
// Reads every file twice and writes corpus.h5 at `path` (data/writer.h) under cfg's
// document rules; `args` (args_len bytes, NUL-separated) are the options it was run with,
// recorded for the command that makes it again. 0, or -1 with the error printed (nothing
// published). Refuses a corpus without a train sequence.
int import_write(const Config *cfg, const ImportSpec *spec, const ImportInput *files, int n_files, const char *path,
                 const char *args, int64_t args_len, ImportSummary *sum);
// The summary as corpus.h5 records it (import_summary) and the import prints it.
void import_summary_text(const ImportSummary *s, char *out, size_t len);

// The split rule by hash for one document of n ids.
int import_split_of(const Config *cfg, const int32_t *ids, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
