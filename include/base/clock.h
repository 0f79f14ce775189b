// clock.h — time for a human and for a deadline: the monotonic clock, UTC timestamps,
// durations, and the throttled progress line of long single-process work.
#ifndef DDPTOK_CLOCK_H
#define DDPTOK_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Seconds from a monotonic clock.
double now_seconds(void);

// "2026-11-30T06:55:01.123Z" (UTC, milliseconds) into buf (at least 32 bytes).
void utc_timestamp(char *buf, size_t len);
// "1:02:03", "2:03" or "4.2s": a duration for a human.
void format_duration(char *buf, size_t len, double seconds);

// Long single-process work: work_progress(&w, done, total) prints "what: done/total (x %)"
// at most every ~2 s, and nothing at all when the work ends within its first 2 s
// (DDPTOK_PROGRESS_SECONDS changes the 2 s).
typedef struct {
    const char *what;
    double start, last, every;
} WorkProgress;
void work_progress_init(WorkProgress *w, const char *what);
void work_progress(WorkProgress *w, int64_t done, int64_t total);

#ifdef __cplusplus
}
#endif
#endif
