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

int utf8_next(const char *s, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    uint32_t c = u[0];
    int n = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n > 1) c &= 0x3Fu >> (n - 1);
    for (int i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) return 0;  // a NUL ends a cut sequence here too
        c = c << 6 | (u[i] & 0x3Fu);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)) || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return n;
}

// A code point that reorders or breaks the text around it on a terminal or in an editor:
// the bidi embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069), the bidi
// marks (U+200E, U+200F, U+061C) and the line and paragraph separators (U+2028, U+2029).
static int reorders_text(uint32_t cp) {
    return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200E || cp == 0x200F ||
           cp == 0x061C || cp == 0x2028 || cp == 0x2029;
}

void text_clean(char *dst, size_t len, const char *src, const char *keep) {
    size_t i = 0, o = 0;  // o <= i: dst may be src
    while (len && src[i] && o < len - 1) {
        uint32_t cp = 0;
        int n = utf8_next(src + i, &cp);
        if (n == 0 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0) || (cp < 0x20 && !strchr(keep, (int)cp)) || reorders_text(cp)) {
            dst[o++] = '?', i += n ? (size_t)n : 1;
            continue;
        }
        if (o + (size_t)n > len - 1) break;  // never half a character
        memmove(dst + o, src + i, (size_t)n);
        o += (size_t)n, i += (size_t)n;
    }
    if (len) dst[o] = 0;
}

#define SAFE_SLOTS 8     // text_safe results alive at once (one message's arguments)
#define SAFE_LEN 4200    // a path or the user's arguments (hint_args: 4096)

const char *text_safe(const char *s) {
    static char slots[SAFE_SLOTS][SAFE_LEN];
    static unsigned next;
    char *d = slots[next++ % SAFE_SLOTS];
    text_clean(d, sizeof slots[0], s, "");
    return d;
}

static void print_report(const char *who, const char *kind, const char *line) {
    char clean[REPORT_LEN];
    text_clean(clean, sizeof clean, line, "");
    fprintf(stderr, "ddptok: %s%s%s: %s\n", who, who[0] ? ": " : "", kind, clean);  // one write (stderr is unbuffered)
    fflush(stderr);
}

// error_capture(1): error() keeps its first line here instead of printing it. Captures nest
// (a reader that captures inside a caller's capture, as corpus_read's remedy does): each
// error_capture(1) opens its own level, error_capture(0) closes the innermost and returns
// its line; the caller's capture stays on (was: the inner call switched it off and cleared
// the caller's line, so a refusal printed once per rank plus an empty collective line).
#define CAPTURE_DEPTH 8
static int g_capturing = 0;  // open levels
static char g_captured[CAPTURE_DEPTH][REPORT_LEN];

const char *error_capture(int on) {
    if (on) {
        ASSERT(g_capturing < CAPTURE_DEPTH);
        g_captured[g_capturing++][0] = 0;
        return g_captured[g_capturing - 1];
    }
    ASSERT(g_capturing > 0);  // error_capture(0) closes a level error_capture(1) opened
    return g_captured[--g_capturing];
}

// One "error:" line (kept instead while error_capture is on) or "warning:" line of this rank.
static void vreport(const char *kind, const char *fmt, va_list ap) {
    char line[REPORT_LEN], who[32] = "";
    vsnprintf(line, sizeof line, fmt, ap);
    if (g_capturing && !strcmp(kind, "error")) {
        char *level = g_captured[g_capturing - 1];
        if (!level[0]) snprintf(level, REPORT_LEN, "%s", line);
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
    g_capturing = 0;  // a broken invariant is said, inside a capture too
    die_abort(EXIT_INTERNAL, "BUG at %s:%d on %s: assertion '%s' failed", file, line, g_id.host, cond);
}
