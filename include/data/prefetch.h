// prefetch.h — reads the next window's chunks while the current one computes (docs/data.md
// "Prefetch"). One thread per process: the trainer submits the ids it will read next
// (sampler_peek), the thread brings their chunks into the corpus cache (corpus_warm), and
// the training thread then finds them there. It only warms: every check and every error
// stays with the reader that uses the data, on the training thread.
#ifndef DDPTOK_PREFETCH_H
#define DDPTOK_PREFETCH_H

#include <pthread.h>
#include <stdint.h>

#include "data/corpus.h"

#ifdef __cplusplus
extern "C" {
#endif

// Which of a submitted window's ids this process will read (the global sampler's share of
// this rank): out gets them, the count is returned. Runs on the prefetch thread.
typedef int (*PrefetchShare)(void *ctx, const int32_t *window, int n, int32_t *out);

typedef struct {
    const Corpus *corpus;
    PrefetchShare share;
    void *share_ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int32_t *ids;  // (cap) the submitted ids
    int cap, n, pending, quit, started;
} Prefetch;

// Starts the thread for an on-disk corpus (a corpus in memory needs none: submit does nothing).
// `share` may be NULL (every submitted id is read).
void prefetch_start(Prefetch *p, const Corpus *corpus, int cap, PrefetchShare share, void *share_ctx);
// Hands ids[0..n-1] (-1 skipped) to the thread, replacing what it has not begun.
void prefetch_submit(Prefetch *p, const int32_t *ids, int n);
void prefetch_stop(Prefetch *p);

#ifdef __cplusplus
}
#endif
#endif
