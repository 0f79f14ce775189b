// prefetch.c — the next window's chunks, read ahead (see prefetch.h).
#include "data/prefetch.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

static void *prefetch_loop(void *arg) {
    Prefetch *p = arg;
    int32_t *ids = xmalloc((size_t)p->cap * sizeof *ids), *mine = xmalloc((size_t)p->cap * sizeof *mine);
    corpus_warming(1);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->pending && !p->quit) pthread_cond_wait(&p->cv, &p->mu);
        if (p->quit) break;
        int n = p->n;
        memcpy(ids, p->ids, (size_t)n * sizeof *ids);
        p->pending = 0;
        pthread_mutex_unlock(&p->mu);
        if (p->share) n = p->share(p->share_ctx, ids, n, mine);
        corpus_warm(p->corpus, p->share ? mine : ids, n);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    free(ids), free(mine);
    return NULL;
}

void prefetch_start(Prefetch *p, const Corpus *corpus, int cap, PrefetchShare share, void *share_ctx) {
    memset(p, 0, sizeof *p);
    p->corpus = corpus, p->share = share, p->share_ctx = share_ctx;
    if (!corpus->file || cap < 1) return;
    p->cap = cap;
    p->ids = xmalloc((size_t)cap * sizeof *p->ids);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    // The thread takes no signal (SIGUSR1, SIGTERM, SIGINT belong to the training thread's
    // handlers); without a thread (the system refuses one) the reads happen when used.
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &saved);
    p->started = pthread_create(&p->thread, NULL, prefetch_loop, p) == 0;
    pthread_sigmask(SIG_SETMASK, &saved, NULL);
}

void prefetch_submit(Prefetch *p, const int32_t *ids, int n) {
    if (!p->started) return;
    if (n > p->cap) n = p->cap;
    pthread_mutex_lock(&p->mu);
    memcpy(p->ids, ids, (size_t)n * sizeof *ids);
    p->n = n, p->pending = 1;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void prefetch_stop(Prefetch *p) {
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->quit = 1;
        pthread_cond_signal(&p->cv);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->cv);
    }
    free(p->ids);
    memset(p, 0, sizeof *p);
}
