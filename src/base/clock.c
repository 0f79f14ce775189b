// clock.c — the monotonic clock, UTC timestamps, durations and the throttled progress of
// long single-process work (see clock.h).
#include "base/clock.h"

#include <stdlib.h>
#include <time.h>

#include "base/report.h"

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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
void format_duration(char *buf, size_t len, double seconds) {
    if (seconds < 0) seconds = 0;
    long s = (long)(seconds + 0.5);
    if (seconds < 60) snprintf(buf, len, "%.1fs", seconds);
    else if (s < 3600) snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
    else snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
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
