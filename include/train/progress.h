// progress.h — what a run tells its user while it works: rank 0's training progress lines
// (step/U, loss, tokens/s, ms/step, ETA) at `train.log_every`, the end-of-run summary, and
// the same figures in each JSONL line. (Timestamps and the "still working" line of long
// single-process work are the base's: base/clock.h.)
#ifndef DDPTOK_PROGRESS_H
#define DDPTOK_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "train/evaluation.h"
#include "train/trainer.h"

// This process's start-up, in seconds (the first JSONL line's "startup"; docs/scaling.md):
// MPI_Init and the communicators, the command line and config up to the backend
// agreement, the run agreement and the device set-up, the command's own set-up (corpus,
// trainer, lineage, logs), and main's entry to the first window (all of them).
typedef struct {
    double mpi_init, config, agree, setup, total;
} StartupSplit;

typedef struct {
    int first_step;     // the step this run started after (0, or the resumed checkpoint's)
    int stop_at;        // the step this run ends at (U, or train.interrupt_at)
    int updates;        // U
    int every;          // a progress line every `every` steps (and at the first and last)
    double start;       // now_seconds() when the loop began
    double last_print;  // now_seconds() at the last progress line
    int last_print_step;
    int64_t tokens;     // Σ N over this run's steps
    double loss;        // the last step's loss
    int step;           // the last step done
    StartupSplit startup;  // written into the first JSONL line when total > 0
    // train.init_from when this run starts from it (not a resume): its path and the SHA-256 of θ0
    // as loaded (P float32, θ order), written into the first JSONL line as "init_from" {path,
    // digest}; NULL: none.
    const char *init_from, *init_digest;
    const SplitEval *eval;  // this step's validation metrics (train.eval_every), NULL: none; set by the caller
    int best;           // this step's validation loss is the lowest so far and artifacts/best is its state: the
                        // JSONL's "best": true, the line's "best"
    const char *best_error;  // the lowest so far but artifacts/best not written: "best": false, "best_error": this; NULL: none
    char config_digest[65];  // config_run_digest of the run's config: each JSONL line's "config_digest" ("": none)
} TrainProgress;

// Each JSONL line's per-rank counts: `rank_tokens`, every rank's N_r, while W is at most
// PROGRESS_RANK_LIST; beyond, so that rank 0's line (on the window's critical path) stays the
// same size at any W, `rank_tokens_range` {min, argmin, max, argmax} (ties: the lowest rank)
// in its place (docs/scaling.md).
#define PROGRESS_RANK_LIST 64

// log_every 0 = automatic: every step for runs of at most 20 steps, else about 20 lines.
void train_progress_init(TrainProgress *p, int first_step, int stop_at, int updates, int log_every);
// Records one step; writes its JSONL line when `jsonl` is not NULL (rank 0) and prints the
// progress line (rank 0) when due, and at a step with validation metrics (p->eval), which
// both carry.
void train_progress_step(TrainProgress *p, const WindowStats *ws, int W, FILE *jsonl);
// The end-of-run summary line (rank 0): steps, wall time, tokens/s, final loss.
void train_progress_summary(const TrainProgress *p, const char *run);

#endif
