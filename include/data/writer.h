// writer.h — corpus.h5 written as its sequences arrive (docs/file-formats.md, format 3), in
// memory bounded by constants, never by the corpus: the sink of prepare's generator
// (data/synthetic.h) and of the import (data/import.h).
//
// The caller knows the shape first (sequences and tokens per split: prepare from its
// lengths, the import from its first pass), so every dataset is allocated at its final size
// and each split fills its own region as its sequences come, in any interleaving: the splits
// end up grouped (train, validation, test) without holding the corpus or copying it. Chunk
// checksums are computed from the write buffers as chunks complete (the few that straddle two
// regions from the file at the end), then the tree above them and the content digest.
//
// Publication: everything goes to PATH.tmp.PID (created exclusively, its blocks reserved
// with posix_fallocate so a full disk is met before any work, one line, nothing published),
// fsync'd and renamed over PATH: PATH is the previous corpus, or the complete new one, at every
// moment; a writer killed leaves only its PATH.tmp.PID, which the next writer of PATH removes
// with one line (when ddptok's record says it made it and its process is gone).
#ifndef DDPTOK_WRITER_H
#define DDPTOK_WRITER_H

#include <stdint.h>

#include "config/config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t sequences[3], tokens[3];  // per split (train, validation, test)
} CorpusShape;

// What an import records beside the corpus (docs/data.md "corpus.h5 of an import"): string
// attributes, and two texts that grow with the inputs (datasets, not attributes): their sizes
// now, their bytes at corpus_writer_finish.
typedef struct {
    const char *format, *options, *summary;  // attributes import_format, import_options, import_summary
    int split_by_hash;                      // attribute import_split: "hash" (1) or "names" (0)
    int64_t files_bytes, args_bytes;        // /import_files (sha256sum's lines), /import_args (the options, NUL-separated)
} CorpusImport;

typedef struct CorpusWriter CorpusWriter;

// The bytes corpus.h5 of `shape` takes on disk under cfg (every dataset; imp: an import's), and
// whether the file system that will hold `path` has them free: 0, or -1 with one line
// "PATH: cannot write: No space left on device (the corpus needs X, the file system has Y free)".
// corpus_writer_open checks it; `--check prepare` too.
uint64_t corpus_writer_bytes(const CorpusShape *shape, const Config *cfg, const CorpusImport *imp);
int corpus_writer_space(const char *path, uint64_t bytes);

// Creates PATH.tmp.PID for a corpus of `shape` under cfg (whose locks it gets at the end);
// `imp` for an import (also /document), else NULL (prepare's). 0, or -1 with one line printed
// and nothing left behind.
int corpus_writer_open(CorpusWriter **out, const char *path, const CorpusShape *shape, const Config *cfg, const CorpusImport *imp);
// Appends one sequence (len tokens, ids in [1, V - 1]) to its split's region; `document` is
// its source document (an import's /document). 0, or -1 with one line printed.
int corpus_writer_add(CorpusWriter *w, int split, const int32_t *ids, int len, int64_t document);
// Completes the file (every region full, as the shape said), checksums, tree, digest and lock,
// the import's two texts (exactly the sizes corpus_writer_open was given; NULL for prepare), fsync, rename over PATH. 0, or -1 with
// one line printed (nothing published). Frees w either way.
int corpus_writer_finish(CorpusWriter *w, const char *const texts[2]);
// Removes PATH.tmp.PID and frees w.
void corpus_writer_abort(CorpusWriter *w);

#ifdef __cplusplus
}
#endif
#endif
