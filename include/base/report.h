// report.h — error handling, exit codes and rank-aware output shared by every module.
//
// Two kinds of failure are kept apart (as in git and redis):
//   die(code, fmt, ...)   a fatal user or environment error: one line on stderr, the job ends;
//   error(fmt, ...)       an error the caller handles: prints one line and returns -1;
//   ASSERT(cond)          a broken invariant: always compiled in, aborts the whole job.
// Library checks (MPI_CHECK, H5_CHECK, and CUDA_CHECK & co. in cuda/cuda_common.h) take
// __FILE__/__LINE__, name the rank and host, and end the whole job.
//
// Dimension letters used in shape comments everywhere:
//   V vocabulary, k context, D embedding, H hidden, B sequences per microbatch,
//   L padded sequence length, T supervised positions of a microbatch, W ranks,
//   A microbatches per window, U updates, P total parameter count.
#ifndef DDPTOK_REPORT_H
#define DDPTOK_REPORT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// Exit codes (README.md "Exit codes").
enum {
    EXIT_OK = 0,
    EXIT_CHECK_FAILED = 1,  // a verification (parity, checkpoints, resume) found a mismatch
    EXIT_BAD_INPUT = 2,     // usage, config, file or checkpoint refused
    EXIT_EMPTY_WINDOW = 3,  // a globally empty accumulation window (N = 0)
    EXIT_COMM_FAILURE = 4,  // a collective failed or timed out
    EXIT_INTERNAL = 70,     // a broken invariant (BUG)
    EXIT_REQUEUE = 75,      // stopped at a window boundary on request; resume from the checkpoint
};

// Process identity, set once by comm setup (rank 0 / world 1 / "?" before that).
typedef struct {
    int rank;
    int world;
    char host[64];
} Identity;
extern Identity g_id;

void identity_init(int rank, int world);

// Fatal error, then the job ends with `code`. When every rank gets there (within a few
// seconds), rank 0 prints each distinct line once, naming the ranks that saw it
// ("ddptok: ranks 0-1: error: message") and every rank finalizes; a rank that gets there
// alone prints "ddptok: rank R: error: message" and aborts the job.
void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
// Like die() but this rank alone knows it failed: aborts the MPI job so no peer hangs.
void die_abort(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
// End the job with `code` after the cause has been reported by error(), without a second
// line: stop() when every rank gets there together (like die()), stop_abort() when this
// rank alone failed (like die_abort()).
void stop(int code) __attribute__((noreturn));
void stop_abort(int code) __attribute__((noreturn));
// How a job of several ranks ends is the job layer's (src/job/together.c), installed with
// set_die_routines: identity_changed after identity_init (die()'s communicator),
// report_together (1 when every rank reported the line together; die() then stop()s),
// finish (a collective end: finalize) and abort (this rank alone: abort the job). Without
// them (a test or fuzz target linking only the base) every message is this process's and
// the end is exit().
typedef struct {
    void (*identity_changed)(void);
    int (*report_together)(const char *line);
    void (*finish)(int code);
    void (*abort)(int code);
} DieRoutines;
void set_die_routines(const DieRoutines *r);
// One "ddptok: WHO: KIND: line" on stderr, control characters printed as '?' (who may be "").
void report_line(const char *who, const char *kind, const char *line);

// A hook that stop() calls first, once: the start-up agreement (lifecycle.c) sets it so a
// rank that fails before every rank has agreed to run tells the others instead of
// finalizing alone (which would leave them waiting).
void stop_hook_set(void (*hook)(int code));
// Recoverable error: prints one line on stderr and returns -1.
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// error_capture(1): error() keeps its first line instead of printing it (for a caller that
// then decides whether every rank failed the same way); error_capture(0) stops and returns
// that line ("" when none). Captures nest: an inner pair leaves the outer capture on.
const char *error_capture(int on);
// Prints one "warning:" line on stderr (this rank's, as error() does) and goes on.
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Output only on rank 0 (stdout).
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// What ddptok prints can hold a file or directory name, a path, the user's arguments or
// another process's text: it must neither drive the terminal nor forge or split a line.
// text_clean is the one function that makes such text safe to print: it copies src to dst
// (at most len bytes with the NUL, never half a character; dst may be src) with each
// control character — a byte below 0x20 that `keep` does not name, DEL, a C1 control
// U+0080..U+009F, a bidi control (U+202A..U+202E, U+2066..U+2069, U+200E, U+200F, U+061C)
// or a line/paragraph separator (U+2028, U+2029) — and each byte that is not part of valid
// UTF-8 as one '?'.
// die, error and warning print their whole line through it (nothing kept); say keeps "\n\t"
// of its whole text (its formats hold them), so what say quotes must go through
// text_safe: say("  %s ok\n", text_safe(dir)).
void text_clean(char *dst, size_t len, const char *src, const char *keep);
// s through text_clean with nothing kept (a newline or tab in it is '?' too), in one of 8
// static buffers reused in turn (valid until 8 more calls; up to 4199 bytes kept).
const char *text_safe(const char *s);
// The UTF-8 sequence at s (NUL-terminated): its length 1..4, its code point in *cp; 0 when s
// does not start a valid one (a stray continuation byte, an overlong form, a surrogate,
// beyond U+10FFFF, a sequence cut short) — the rules JSON (libjansson) applies.
int utf8_next(const char *s, uint32_t *cp);

void bug_at(const char *file, int line, const char *cond) __attribute__((noreturn));
#define ASSERT(cond) do { if (!(cond)) bug_at(__FILE__, __LINE__, #cond); } while (0)

#ifdef __cplusplus
}
#endif
#endif
