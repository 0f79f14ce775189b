// checkpoint.h — one HDF5 file per rank per checkpoint (docs/spec.md §7, §10), written to a
// temporary name, fsynced and renamed; the step directory is published (renamed from
// step-NNNN.tmp) only after every rank's file is complete and rank 0 has written the
// directory's SHA256SUMS, which covers every byte of every rank file.
#ifndef DDPTOK_CHECKPOINT_H
#define DDPTOK_CHECKPOINT_H

#include "job/comm.h"
#include "store/rank_file.h"

#ifdef __cplusplus
extern "C" {
#endif

// Collective: every rank writes its file into <dir>.tmp, then rank 0 publishes <dir>.
// Returns 0 on every rank, or -1 on every rank when any rank failed (nothing published).
int checkpoint_save(Comm *comm, const char *dir, const CheckpointState *s);

// The step of a published checkpoint directory's name: exactly what "step-%04d" prints for
// it (step-0012, step-12345), 0..INT_MAX; -1 for any other name (step-0012.tmp, step-012,
// step-00012, step-+12, step-99999999999): such a name is never taken for a checkpoint, so
// a step is never read from one name and looked for under another.
int checkpoint_step_of(const char *name);
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
