// snapshot.h — the trainer's state in and out of checkpoints (docs/checkpoints.md).
#ifndef DDPTOK_SNAPSHOT_H
#define DDPTOK_SNAPSHOT_H

#include "train/trainer.h"

// Collective: publishes root/step-NNNN with the trainer's state at its step (every rank's
// file, then the directory). Nothing non-finite is published: the run stops (exit 1); a
// failed write stops every rank (exit 2).
void trainer_checkpoint(Trainer *t, const char *root, const char *lock);
// The same checkpoint published as `dir` itself (replacing a checkpoint there): the best one.
// Returns 0, or -1 on every rank when it was not written (nothing published; the ranks that
// failed said why); a non-finite state stops the run as above.
int trainer_checkpoint_to(Trainer *t, const char *dir, const char *lock);

// Collective: loads this rank's file of `dir` (rank 0's under the global sampler: the
// elastic resume) after checking that it belongs to this run (world size, rank, data lock,
// stored config, step < updates) and that every derived field is what it derives from
// (checkpoint_load, checkpoint_check_draws); every rank agrees before anyone restores; any
// mismatch stops every rank (exit 2) with one line naming the file.
// `remedy` (may be NULL) follows a refusal for other data or another config: what to run instead.
void trainer_resume(Trainer *t, const char *dir, const char *lock, const char *remedy);

#endif
