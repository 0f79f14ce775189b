// fuzz_import.c — libFuzzer targets for the readers of `ddptok import` (docs/data.md),
// through the entry point the command uses: the input written to a file, then
// import_write (the reader's two passes, the split, the length rule, the writer) on it, and
// the corpus.h5 it writes read back and checked sequence by sequence.
//   -DFUZZ_IMPORT_BYTES     raw bytes; the first input byte picks the delimiter ("\n%\n", "\n\n" or none)
//   -DFUZZ_IMPORT_LLMC      an llm.c shard (--eot 50256)
//   -DFUZZ_IMPORT_NANOGPT   a nanoGPT .bin (--eot 50256)
//   -DFUZZ_IMPORT_MEGATRON  X.idx + X.bin: the first 4 bytes (little-endian, modulo what
//                           follows) are the .idx's length, the .idx, then the .bin
//   -DFUZZ_IMPORT_JSONL     JSON Lines; the first input byte picks jsonl (even) or jsonl-text (odd)
// A reader must return its error: a crash, a sanitizer report, a leak or an exit (die,
// ASSERT, "out of memory" = exit 70) is a finding (tests/fuzz/run.sh).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/report.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/corpus_file.h"
#include "data/import.h"
#include "fuzz_common.h"

// Byte-level ids need V = 257; the token formats get every uint16 id (V = 65537) so that
// mutated tokens still reach the split and the length rule.
static const char yaml[] =
    "seed: 3\ndata:\n  vocab_size: 65537\n  min_length: 2\n  max_length: 16\n  source: imported\n"
    "  import: {split_seed: 1, validation_fraction: 0.25, test_fraction: 0.25}\n"
    "model: {context: 2, embed_dim: 2, hidden: 2}\ntrain: {world_size: 1, rank_bands: auto}\n";

static Config cfg;
static char dir[256], file[300], bin[300], out[300];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    default_signals();
    char err[512];
    if (config_from_yaml(&cfg, yaml, "fuzz", err, sizeof err)) fprintf(stderr, "%s\n", err), abort();
    snprintf(dir, sizeof dir, "%s/ddptok-fuzz-import-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    if (mkdir_p(dir)) abort();
    snprintf(file, sizeof file, "%s/input.idx", dir);
    snprintf(bin, sizeof bin, "%s/input.bin", dir);
    snprintf(out, sizeof out, "%s/corpus.h5", dir);
    return 0;
}

static void put(const char *path, const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ImportSpec spec = {.eot = 50256, .vocab = cfg.data.vocab_size - 1};
    const char *path = file;
#if defined(FUZZ_IMPORT_BYTES)
    static const char *const delims[3] = {"\n%\n", "\n\n", NULL};
    if (size < 1) return 0;
    spec.format = IMPORT_BYTES, spec.eot = -1, spec.vocab = 256;
    spec.delimiter = delims[data[0] % 3];
    spec.delimiter_len = spec.delimiter ? strlen(spec.delimiter) : 0;
    put(file, data + 1, size - 1);
#elif defined(FUZZ_IMPORT_LLMC)
    spec.format = IMPORT_LLMC;
    put(file, data, size);
#elif defined(FUZZ_IMPORT_NANOGPT)
    spec.format = IMPORT_NANOGPT;
    put(file, data, size);
#elif defined(FUZZ_IMPORT_MEGATRON)
    spec.format = IMPORT_MEGATRON, spec.eot = -1;
    if (size < 4) return 0;
    uint32_t n;
    memcpy(&n, data, 4);
    n = size - 4 ? n % (uint32_t)(size - 4 + 1) : 0;
    put(file, data + 4, n);
    put(bin, data + 4 + n, size - 4 - n);
#elif defined(FUZZ_IMPORT_JSONL)
    if (size < 1) return 0;
    spec.format = data[0] % 2 ? IMPORT_JSONL_TEXT : IMPORT_JSONL;
    if (spec.format == IMPORT_JSONL_TEXT) spec.eot = -1, spec.vocab = 256;
    put(file, data + 1, size - 1);
#else
#error "define FUZZ_IMPORT_BYTES, _LLMC, _NANOGPT, _MEGATRON or _JSONL"
#endif
    Config c = cfg;
    if (spec.vocab == 256) c.data.vocab_size = 257;
    ImportSummary sum;
    ImportInput files[1] = {{(char *)path, -1}};
    if (import_write(&c, &spec, files, 1, out, "", 0, &sum) == 0) {
        // What every later command reads: the corpus as written, every sequence by the rules.
        Corpus corpus;
        if (corpus_read(&corpus, &c, out)) abort();
        int32_t *ids = malloc((size_t)c.data.max_length * sizeof *ids);
        int64_t tokens = 0;
        for (int i = 0; i < corpus.n; i++) {
            int len = corpus_tokens(&corpus, i, ids);  // dies on a length or id outside the rules
            tokens += len;
        }
        if (tokens != corpus.n_tokens || corpus.n != sum.seqs[0] + sum.seqs[1] + sum.seqs[2]) abort();
        free(ids);
        corpus_free(&corpus);
    }
    return 0;
}
