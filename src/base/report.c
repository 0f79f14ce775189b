// report.c — rank-aware messages and the end of a job (see report.h).
#include "base/report.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Identity g_id = {0, 1, "?"};

#define REPORT_LEN 2048  // one error line, at most

// The job layer's routines (src/job/together.c); none in a process without it.
static DieRoutines g_routines;

void set_die_routines(const DieRoutines *r) { g_routines = *r; }

void identity_init(int rank, int world) {
    g_id.rank = rank;
    g_id.world = world;
    if (gethostname(g_id.host, sizeof g_id.host) != 0) strcpy(g_id.host, "?");
    g_id.host[sizeof g_id.host - 1] = 0;
    if (g_routines.identity_changed) g_routines.identity_changed();
}

void text_clean(char *dst, size_t len, const char *src, const char *keep) {
    size_t i = 0;
    for (; len && i < len - 1 && src[i]; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c < 0x20 && !strchr(keep, c)) || c == 0x7F ? '?' : (char)c;
    }
    if (len) dst[i] = 0;
}

static void print_report(const char *who, const char *kind, const char *line) {
    char clean[REPORT_LEN];
    text_clean(clean, sizeof clean, line, "");
    fprintf(stderr, "ddptok: %s%s%s: %s\n", who, who[0] ? ": " : "", kind, clean);  // one write (stderr is unbuffered)
    fflush(stderr);
}

// error_capture(1): error() keeps its first line here instead of printing it.
static int g_capturing = 0;
static char g_captured[REPORT_LEN];

const char *error_capture(int on) {
    g_capturing = on;
    if (on) g_captured[0] = 0;
    return g_captured;
}

// One "error:" line (kept instead while error_capture is on) or "warning:" line of this rank.
static void vreport(const char *kind, const char *fmt, va_list ap) {
    char line[REPORT_LEN], who[32] = "";
    vsnprintf(line, sizeof line, fmt, ap);
    if (g_capturing && !strcmp(kind, "error")) {
        if (!g_captured[0]) snprintf(g_captured, sizeof g_captured, "%s", line);
        return;
    }
    if (g_id.world > 1) snprintf(who, sizeof who, "rank %d", g_id.rank);
    print_report(who, kind, line);
}

void report_line(const char *who, const char *kind, const char *line) { print_report(who, kind, line); }

static void (*g_stop_hook)(int code);

void stop_hook_set(void (*hook)(int code)) { g_stop_hook = hook; }

void stop(int code) {
    if (g_stop_hook) {  // during start-up: tell the other ranks first (lifecycle.c)
        void (*hook)(int) = g_stop_hook;
        g_stop_hook = NULL;
        hook(code);
    }
    if (g_routines.finish) g_routines.finish(code);
    exit(code);
}

void die(int code, const char *fmt, ...) {
    char line[REPORT_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (g_routines.report_together && g_routines.report_together(line)) stop(code);
    error("%s", line);
    // Alone. During start-up stop() tells the others (the start-up agreement); later they
    // are elsewhere, maybe in a collective, and finalizing could wait for them: abort.
    if (g_stop_hook) stop(code);
    stop_abort(code);
}

void stop_abort(int code) {
    if (g_routines.abort) g_routines.abort(code);
    stop(code);
}

void die_abort(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
    stop_abort(code);
}

int error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("error", fmt, ap);
    va_end(ap);
    return -1;
}

void warning(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport("warning", fmt, ap);
    va_end(ap);
}

void say(const char *fmt, ...) {
    if (g_id.rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    char *text;
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    ASSERT(n >= 0);
    text_clean(text, (size_t)n + 1, text, "\n\t");
    fputs(text, stdout);
    free(text);
    fflush(stdout);
}

void bug_at(const char *file, int line, const char *cond) {
    die_abort(EXIT_INTERNAL, "BUG at %s:%d on %s: assertion '%s' failed", file, line, g_id.host, cond);
}
