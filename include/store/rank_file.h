// rank_file.h — one rank's checkpoint file (docs/file-formats.md): HDF5, format 4, the
// model, the optimizer's named state tensors and hyper-parameters, the bounded sampler state
// (the last window, the running hash of every window, the epoch position) and the RNG streams, a payload checksum over all of it, and the directory manifest entry
// (SHA256SUMS) that covers every byte of the file.
#ifndef DDPTOK_RANK_FILE_H
#define DDPTOK_RANK_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/philox.h"
#include "method/optimizer.h"
#include "model/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CHECKPOINT_FORMAT "ddptok-checkpoint"
#define CHECKPOINT_VERSION 4  // 4: the global sampler's windows_sha256 is the digest of what determines its windows
                              // (sampler_windows_digest); 3: bounded sampler state, the running hash for both samplers;
                              // 2 (generic optimizer state, the whole sampler history) and 1 (SGD momentum) still
                              // load, their history converted
#define CHECKPOINT_MANIFEST "SHA256SUMS"  // sha256sum format, one line per rank file

typedef struct {
    int version;          // of the file read (a saved one is always CHECKPOINT_VERSION)
    int step, world_size, rank;
    int A, B;             // a drawn window's shape (sampler_window_shape): (A, B), global (1, G)
    char *config_yaml;    // the resolved config
    char lock[65];
    ModelShape m;
    float *theta;         // (P)
    OptimizerSnapshot opt;  // kind, hyper-parameters, step count, state tensors (P each): /optimizer
    uint32_t hyper_stored;  // loaded: bit a, the file holds hyper-parameter attribute a (optimizer_hyper_attr);
                            // the others took the table's default. A file written holds them all.
    int32_t *last;        // (A, B) the last window drawn (global: the global window, every rank alike); -1 at step 0
    char windows_hash[65];  // the running hash of the step windows drawn (window_hash_add), hex; format 4's global
                            // sampler: the digest of what determines them (sampler_windows_digest)
    int64_t epoch, window;  // where the next window lies (sampler_position of window `step`): global
                            // (epoch, window in epoch), bands (0, step)
    RngStream sampler_rng, dropout_rng;
    Config cfg;           // loaded: the stored config, parsed
} CheckpointState;

void checkpoint_state_free(CheckpointState *s);

// Writes one rank file at `path` (temporary name, fsync, rename); `file_sum` gets the
// SHA-256 of its bytes (for the manifest). 0 or -1 with one line.
int rank_file_write(const char *path, const CheckpointState *s, char file_sum[65]);

// Loads one rank file (shapes from its own stored config) and verifies format, version,
// checksum, every dataset's shape and type, and every field that the file itself
// determines (docs/checkpoints.md "Derived fields"): the step = the directory's name
// (step-NNNN), the rank = the file's name, the world size and every hyper-parameter = the
// stored config's, the optimizer's step = the step, the streams' keys = (seed, purpose,
// rank), the dropout counter = step x A (0 when keyed), every tensor finite (AdamW's v >= 0).
// 0 or -1 with one line naming the file, the field, what was expected and what was found.
int checkpoint_load(const char *path, CheckpointState *s);
// The fields of a loaded file that take the corpus to derive: its sampler replayed from step 0
// (its stored config, its rank) on `corpus` (the data its lock names: compare the locks first),
// in O(1) memory, must end on the window of /sampler/last with the running hash of
// /sampler windows_sha256, at the epoch position /sampler epoch, window, and leave the stream at
// /rng/sampler/counter. The replay costs one window per step, from the nearest state an
// earlier call of this process passed (anchors every 4096 windows), with a progress line past
// ~2 s; format 4's global sampler is not replayed: window `step` by random access and the
// digest of sampler_windows_digest, O(G) at any step.
// 0, or -1 with one line naming the file and the field. Both check-checkpoints and a
// resume call it after checkpoint_load.
int checkpoint_check_draws(const char *path, const CheckpointState *s, const Corpus *corpus);

// Checks the SHA-256 of a rank file's bytes (image, len) against its entry in the manifest
// of its directory (path's directory/SHA256SUMS). 0, or -1 with one line naming the file.
int checkpoint_verify_manifest(const char *path, const char *image, size_t len);
// Where every rank reads rank 0's file (the global sampler), the other files of `dir` (ranks
// 1 .. files - 1) are still verified against the manifest: this rank (`rank` of W) checks
// files rank, rank + W, ... 0, or -1 with one line naming the first that does not match.
int checkpoint_verify_share(const char *dir, int files, int rank, int W);
// Path of rank r's file in a checkpoint directory.
void checkpoint_rank_path(char *out, size_t len, const char *dir, int rank);

#ifdef __cplusplus
}
#endif
#endif
