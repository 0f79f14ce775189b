// progress.h — what a run tells its user while it works: rank 0's training progress lines
// (step/U, loss, tokens/s, ms/step, ETA) at `train.log_every`, the end-of-run summary, the
// same figures in each JSONL line, a UTC timestamp for log lines, and a throttled
// "still working" line for long single-process work (prepare, evaluate).
#ifndef DDPTOK_PROGRESS_H
#define DDPTOK_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

#include "trainer.h"

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
} TrainProgress;

// log_every 0 = automatic: every step for runs of at most 20 steps, else about 20 lines.
void train_progress_init(TrainProgress *p, int first_step, int stop_at, int updates, int log_every);
// Records one step; writes its JSONL line when `jsonl` is not NULL (rank 0) and prints the
// progress line (rank 0) when due.
void train_progress_step(TrainProgress *p, const WindowStats *ws, int W, FILE *jsonl);
// The end-of-run summary line (rank 0): steps, wall time, tokens/s, final loss.
void train_progress_summary(const TrainProgress *p, const char *run);

// "2026-11-30T06:55:01.123Z" (UTC, milliseconds) into buf (at least 32 bytes).
void utc_timestamp(char *buf, size_t len);

// Long single-process work: work_progress(&w, done, total) prints "what: done/total (x %)"
// at most every ~2 s, and nothing at all when the work ends within its first 2 s
// (DDPTOK_PROGRESS_SECONDS changes the 2 s).
typedef struct {
    const char *what;
    double start, last, every;
} WorkProgress;
void work_progress_init(WorkProgress *w, const char *what);
void work_progress(WorkProgress *w, int64_t done, int64_t total);

#endif
