// lineage.h — one training run per lineage at a time, and where a run starts in it
// (docs/checkpoints.md "Requeue and lineages").
#ifndef DDPTOK_LINEAGE_H
#define DDPTOK_LINEAGE_H

#include <stddef.h>

#include "config/config.h"
#include "data/corpus.h"
#include "job/comm.h"

// Rank 0 only: holds an fcntl lock on root/.lock for the rest of the process (waits up to
// DDPTOK_LOCK_WAIT seconds, at most half of comm_timeout, for a holder, then refuses naming
// it). 0 or -1 with one line.
int lineage_lock(const char *root, double comm_timeout);

// How the user asked to start: train's --resume DIR|latest|auto and --fresh.
typedef struct {
    const char *resume;  // NULL: a fresh start
    int fresh;           // move the lineage's checkpoints aside first
    int global;          // train.sampler: global (rank 0's file is the one every rank loads)
    int updates;         // train.updates (a lineage at that step is finished)
    int continuous;      // train --continuous (the witness's lineage): for the hints
    int world_size;      // train.world_size: for the hints
    const Config *cfg;   // this run's config and corpus: a lineage whose newest checkpoint is of another
    const Corpus *corpus;  // config or of other data is refused without offering --resume (NULL: not checked)
} LineageStart;

// Collective. Returns 1 (resume from `dir`), 0 (fresh start) or -1 (finished: nothing to
// do, --resume auto); refuses (every rank, exit 2) what the policy forbids.
int lineage_start(Comm *comm, const LineageStart *how, const char *root, char *dir, size_t len);

#endif
