// fuzz_h5.c — libFuzzer targets for ddptok's HDF5 readers, through the same entry points
// the commands use (a file on disk: file_read_regular, then HDF5 from those bytes):
//   -DFUZZ_CORPUS      corpus_read of corpus.h5 under configs/tiny.yaml
//   -DFUZZ_PLAN        plan_read of plan.h5 against tiny's generated corpus
//   -DFUZZ_CHECKPOINT  checkpoint_load of a rank file, with SHA256SUMS rewritten for each
//                      input so the parse and the validation behind the manifest are reached
// A reader must return its error: a crash, a sanitizer report or an exit (die, ASSERT,
// "out of memory" = exit 70) is a finding. A crash inside HDF5 itself (not hardened
// against crafted files; ddptok's crash guard turns it into exit 2, see h5io.h) is
// reported apart by tests/fuzz/run.sh.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/corpus_file.h"
#include "data/plan.h"
#include "data/synthetic.h"
#include "fuzz_common.h"
#include "io/h5io.h"
#include "store/checkpoint.h"

static const char tiny_yaml[] =
    "seed: 99\ndata:\n  vocab_size: 24\n  splits: {train: 96, validation: 8, test: 32}\n  min_length: 8\n  max_length: 24\n"
    "  unsupervised_prefix: 0\n  markov_support: 3\nmodel: {context: 3, embed_dim: 8, hidden: 16, dropout: 0.1}\n"
    "train:\n  world_size: 2\n  rank_bands: [[8, 15], [16, 24]]\n  batch_size_per_rank: 3\n  accumulation: 2\n"
    "  updates: 12\n  interrupt_at: 6\n";

static Config cfg;
static Corpus corpus;
static char dir[256], file[300];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    default_signals();
    h5_crash_guard = 0;  // let a crash inside HDF5 reach the sanitizer, with its stack
    char err[512];
    if (config_from_yaml(&cfg, tiny_yaml, "tiny", err, sizeof err)) fprintf(stderr, "%s\n", err), abort();
    corpus_generate(&corpus, &cfg);
    h5_quiet();
    snprintf(dir, sizeof dir, "%s/ddptok-fuzz-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    if (mkdir_p(dir)) abort();
    snprintf(file, sizeof file, "%s/rank-0000.h5", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(file, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
#if defined(FUZZ_CORPUS)
    Corpus c;
    if (corpus_read(&c, &cfg, file) == 0) corpus_free(&c);
#elif defined(FUZZ_PLAN)
    free(plan_read(file, &cfg, &corpus, "run prepare"));
#elif defined(FUZZ_CHECKPOINT)
    char sum[65], manifest[400], line[400];
    Sha256 *h = sha256_begin();
    sha256_add(h, data, size);
    sha256_hex(h, sum);
    snprintf(manifest, sizeof manifest, "%s/" CHECKPOINT_MANIFEST, dir);
    int n = snprintf(line, sizeof line, "%s  rank-0000.h5\n", sum);
    f = fopen(manifest, "wb");
    if (!f || fwrite(line, 1, (size_t)n, f) != (size_t)n || fclose(f) != 0) abort();
    CheckpointState s;
    if (checkpoint_load(file, &s) == 0) checkpoint_state_free(&s);
#else
#error "define FUZZ_CORPUS, FUZZ_PLAN or FUZZ_CHECKPOINT"
#endif
    return 0;
}
