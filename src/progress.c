// progress.c — progress lines, summaries and timestamps (see progress.h).
#include "progress.h"

#include <stdlib.h>
#include <time.h>

#include "common.h"

// Quiet for work shorter than this; then a line every this often (DDPTOK_PROGRESS_SECONDS
// overrides it, for tests).
static double progress_seconds(void) {
    const char *s = getenv("DDPTOK_PROGRESS_SECONDS");
    return s && atof(s) > 0 ? atof(s) : 2.0;
}

void utc_timestamp(char *buf, size_t len) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03dZ", date, (int)(ts.tv_nsec / 1000000));
}

// "1:02:03", "2:03" or "4.2s": a duration for a human.
static void format_duration(char *buf, size_t len, double seconds) {
    if (seconds < 0) seconds = 0;
    long s = (long)(seconds + 0.5);
    if (seconds < 60) snprintf(buf, len, "%.1fs", seconds);
    else if (s < 3600) snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
    else snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
}

void train_progress_init(TrainProgress *p, int first_step, int stop_at, int updates, int log_every) {
    p->first_step = p->step = p->last_print_step = first_step;
    p->stop_at = stop_at;
    p->updates = updates;
    int steps = stop_at - first_step;
    p->every = log_every > 0 ? log_every : steps <= 20 ? 1 : (steps + 19) / 20;
    p->start = p->last_print = now_seconds();
    p->tokens = 0;
    p->loss = 0;
}

void train_progress_step(TrainProgress *p, const WindowStats *ws, int W, FILE *jsonl) {
    double now = now_seconds(), elapsed = now - p->start;
    p->step = ws->step;
    p->loss = ws->loss;
    p->tokens += ws->global.tokens;
    int done = p->step - p->first_step;
    double tokens_per_s = elapsed > 0 ? (double)p->tokens / elapsed : 0;
    double eta = done > 0 ? elapsed / done * (p->stop_at - p->step) : 0;
    if (jsonl) {  // step, loss, tokens, rank_tokens, sequences, seconds: read by protocol, plot, tests
        char when[40];
        utc_timestamp(when, sizeof when);
        fprintf(jsonl, "{\"step\": %d, \"loss\": %.9g, \"tokens\": %lld, \"rank_tokens\": [", ws->step, ws->loss,
                (long long)ws->global.tokens);
        for (int r = 0; r < W; r++) fprintf(jsonl, "%s%lld", r ? ", " : "", (long long)ws->rank_counts[r]);
        fprintf(jsonl,
                "], \"sequences\": %lld, \"seconds\": %.6f, \"updates\": %d, \"elapsed\": %.6f, \"tokens_per_s\": %.1f, "
                "\"ms_per_step\": %.3f, \"eta_seconds\": %.3f, \"time\": \"%s\"",
                (long long)ws->global.sequences, ws->seconds, p->updates, elapsed, tokens_per_s,
                done > 0 ? 1e3 * elapsed / done : 0, eta, when);
        // where rank 0's window seconds went (run/bench.sh prints the breakdown)
        fprintf(jsonl, ", \"window_split\": {\"draw\": %.6f, \"count_allreduce\": %.6f, \"compute\": %.6f, "
                       "\"grad_allreduce\": %.6f, \"optimizer\": %.6f}}\n",
                ws->t_draw, ws->t_count, ws->t_compute, ws->t_allreduce, ws->t_optimizer);
        fflush(jsonl);
    }
    if (p->step == p->first_step + 1 || p->step % p->every == 0 || p->step == p->stop_at) {
        int since = p->step - p->last_print_step;
        double ms = since > 0 ? 1e3 * (now - p->last_print) / since : 0;  // over the steps since the last line
        char eta_text[32];
        format_duration(eta_text, sizeof eta_text, eta);
        int width = snprintf(NULL, 0, "%d", p->updates);
        say("  step %*d/%d  loss %.5f  tokens %6lld  %8.0f tokens/s  %7.1f ms/step  ETA %s\n", width, p->step,
            p->updates, ws->loss, (long long)ws->global.tokens, tokens_per_s, ms, eta_text);
        p->last_print = now;
        p->last_print_step = p->step;
    }
}

void train_progress_summary(const TrainProgress *p, const char *run) {
    double elapsed = now_seconds() - p->start;
    int steps = p->step - p->first_step;
    char took[32];
    format_duration(took, sizeof took, elapsed);
    say("train (%s): summary: %d steps (%d..%d of %d) in %s, %.0f tokens/s, %.1f ms/step, final loss %.5f\n", run, steps,
        steps ? p->first_step + 1 : p->first_step, p->step, p->updates, took, elapsed > 0 ? (double)p->tokens / elapsed : 0,
        steps ? 1e3 * elapsed / steps : 0, p->loss);
}

void work_progress_init(WorkProgress *w, const char *what) {
    w->what = what;
    w->every = progress_seconds();
    w->start = w->last = now_seconds();
}

void work_progress(WorkProgress *w, int64_t done, int64_t total) {
    double now = now_seconds();
    if (now - w->last < w->every) return;
    w->last = now;
    char eta[32];
    format_duration(eta, sizeof eta, done > 0 ? (now - w->start) / (double)done * (double)(total - done) : 0);
    say("  %s: %lld/%lld (%.0f %%), ETA %s\n", w->what, (long long)done, (long long)total,
        total ? 100.0 * (double)done / (double)total : 0.0, eta);
}
