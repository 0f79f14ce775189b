// checkpoint.h — one HDF5 file per rank per checkpoint (SPEC §7, §10), written to a
// temporary name, fsynced and renamed; the step directory is published (renamed from
// step-NNNN.tmp) only after every rank's file is complete and rank 0 has written the
// directory's SHA256SUMS, which covers every byte of every rank file.
#ifndef DDPTOK_CHECKPOINT_H
#define DDPTOK_CHECKPOINT_H

#include <stdint.h>

#include "comm.h"
#include "model.h"
#include "optimizer.h"
#include "philox.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CHECKPOINT_FORMAT "ddptok-checkpoint"
#define CHECKPOINT_VERSION 2  // 2: generic optimizer state; version 1 (SGD momentum) still loads
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
    int32_t *history;     // (step, A, B) the windows drawn (global: the global windows, every rank alike)
    RngStream sampler_rng, dropout_rng;
} CheckpointState;

void checkpoint_state_free(CheckpointState *s);

// Collective: every rank writes its file into <dir>.tmp, then rank 0 publishes <dir>.
// Returns 0 on every rank, or -1 on every rank when any rank failed (nothing published).
int checkpoint_save(Comm *comm, const char *dir, const CheckpointState *s);

// Loads one rank file (shapes from its own stored config) and verifies format, version
// and checksum. 0 or -1 with one line naming the file and what is wrong.
int checkpoint_load(const char *path, CheckpointState *s);

// Checks the SHA-256 of a rank file's bytes (image, len) against its entry in the manifest
// of its directory (path's directory/SHA256SUMS). 0, or -1 with one line naming the file.
int checkpoint_verify_manifest(const char *path, const char *image, size_t len);
// The step of a published checkpoint directory's name: exactly what "step-%04d" prints for
// it (step-0012, step-12345), 0..INT_MAX; -1 for any other name (step-0012.tmp, step-012,
// step-00012, step-+12, step-99999999999): such a name is never taken for a checkpoint, so
// a step is never read from one name and looked for under another.
int checkpoint_step_of(const char *name);
// Path of rank r's file in a checkpoint directory.
void checkpoint_rank_path(char *out, size_t len, const char *dir, int rank);
// Collective: the published step-NNNN directories under `root` (rank 0 lists them, every
// rank gets the list), newest first, in *steps (free it); returns how many.
int checkpoint_list(Comm *comm, const char *root, int **steps);
// Collective: the newest published checkpoint under `root` whose every rank file is intact
// (manifest, checksum: each rank checks its own, or with `file_rank` >= 0 that rank's file —
// the one it will load: rank 0's for an elastic resume). A damaged or empty newer one is
// skipped with one warning line. Its step (>= 0) and its path; -1 when there is no
// checkpoint; -2 when there are some but none is intact.
int checkpoint_latest(Comm *comm, const char *root, int file_rank, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
