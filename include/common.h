// common.h — error handling, exit codes and rank-aware output shared by every module.
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
#ifndef DDPTOK_COMMON_H
#define DDPTOK_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// Exit codes (documented in README.md).
enum {
    EXIT_OK = 0,
    EXIT_CHECK_FAILED = 1,  // a verification (parity, checkpoints, resume) found a mismatch
    EXIT_BAD_INPUT = 2,     // usage, config, file or checkpoint refused
    EXIT_EMPTY_WINDOW = 3,  // a globally empty accumulation window (N = 0)
    EXIT_COMM_FAILURE = 4,  // a collective failed or timed out
    EXIT_INTERNAL = 70,     // a broken invariant (BUG)
    EXIT_REQUEUE = 75,      // stopped at a window boundary on request; resume from the checkpoint
};

// --comm-timeout: a finite number of seconds in [0.1, 1e6] (nan or inf would disable the
// deadline, 1e-9 abort a healthy job; the bound keeps every conversion in range).
static inline int comm_timeout_ok(double seconds) { return seconds >= 0.1 && seconds <= 1e6; }

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
// A hook that stop() calls first, once: the start-up agreement (lifecycle.c) sets it so a
// rank that fails before every rank has agreed to run tells the others instead of
// finalizing alone (which would leave them waiting).
void stop_hook_set(void (*hook)(int code));
// Recoverable error: prints one line on stderr and returns -1.
int error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// error_capture(1): error() keeps its first line instead of printing it (for a caller that
// then decides whether every rank failed the same way); error_capture(0) stops and returns
// that line ("" when none).
const char *error_capture(int on);
// Prints one "warning:" line on stderr (this rank's, as error() does) and goes on.
void warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Output only on rank 0 (stdout).
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Copies src to dst (at most len bytes with the NUL; dst may be src) with each control
// character (a byte below 0x20 that `keep` does not name, or 0x7F) as '?'. What ddptok prints
// can hold a file or directory name or another process's text: it must neither drive the
// terminal nor break a one-line message. die, error and say print through it (say keeps
// "\n\t"), each message still in one write.
void text_clean(char *dst, size_t len, const char *src, const char *keep);

void bug_at(const char *file, int line, const char *cond) __attribute__((noreturn));
#define ASSERT(cond) do { if (!(cond)) bug_at(__FILE__, __LINE__, #cond); } while (0)

// Allocation that never returns NULL: on failure the job ends naming the call site.
void *xmalloc_impl(size_t n, const char *file, int line);
void *xcalloc_impl(size_t n, size_t size, const char *file, int line);
#define xmalloc(n) xmalloc_impl((n), __FILE__, __LINE__)
#define xcalloc(n, s) xcalloc_impl((n), (s), __FILE__, __LINE__)

// Sizes are 64-bit and saturate instead of wrapping: a product beyond any machine stays
// beyond it (UINT64_MAX), so a memory check on it cannot be fooled by an overflow.
static inline uint64_t size_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
static inline uint64_t size_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
// Bytes this process may still allocate: /proc/meminfo's MemAvailable (the kernel's
// estimate of what can be allocated without swapping), or the free pages of sysconf where
// /proc is absent; lowered to the address-space limit (ulimit -v) when one is set, and to
// DDPTOK_MEMORY_LIMIT (bytes, or with a K, M or G suffix) when that is set.
uint64_t memory_available(void);
// "1.5 GiB": `bytes` in binary units, for messages.
void format_bytes(uint64_t bytes, char *out, size_t len);

// Reads a whole file into memory (NUL appended; *len excludes it) only if it is a regular
// file: opened O_NONBLOCK (a FIFO or a device never blocks the open) and checked with
// fstat on that same descriptor, so what is read is what was checked (a symbolic link is
// followed, to a regular file only). At most `max` bytes. NULL on failure, with the
// reason (no path) in `why`: strerror, or "a FIFO, not a regular file", ...
char *file_read_regular(const char *path, size_t max, size_t *len, char *why, size_t whylen);
// Opens a file for writing without following a symbolic link in its last component:
// mode "w" truncates, "a" appends; the file must be regular (a FIFO or device refused).
// NULL with errno set (ELOOP for a link).
FILE *fopen_nofollow(const char *path, const char *mode);
// strerror for a failed create or fopen_nofollow, naming a refused link or non-regular file.
const char *write_error(int e);
// Removes `path` and, for a directory, everything under it, never following a symbolic
// link (a link is removed itself; entries are unlinked relative to their directory's
// descriptor, opened O_NOFOLLOW). 0, or -1 with one line printed.
int remove_tree(const char *path);

// Seconds from a monotonic clock.
double now_seconds(void);
// mkdir -p; returns 0 or error().
int mkdir_p(const char *path);
// Writes `len` bytes to `path` atomically (creates its directory; temp file, fsync, rename,
// fsync of the directory). The temp file PATH.tmp.PID is created O_EXCL|O_NOFOLLOW: a
// planted file or link of that name is refused and left as it is.
int write_file_atomic(const char *path, const char *data, size_t len);
// The directory part of `path` ("." when there is none).
void dir_of(const char *path, char *dir, size_t len);
// fsync a directory by path.
int fsync_dir(const char *path);

// Levenshtein distance of two strings (of at most 255 characters; longer: 2^20).
int edit_distance(const char *a, const char *b);
// The name nearest to `word` when it is close enough to be a typo of it (at most 2 edits,
// or a third of the word's length), else NULL: for "did you mean".
const char *closest_name(const char *word, const char *const *names, int n);

// Hints repeat the user's own command line: hint_args() is " --config FILE --set K=V ..."
// as given (shell-quoted where needed), recorded once by main with hint_args_set().
void hint_args_set(const char *config_path, char *const *sets, int n_sets);
const char *hint_args(void);

// A growable text buffer (JSON and report output).
typedef struct {
    char *s;
    size_t n, cap;
} Buf;
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);

// SHA-256 in pieces (OpenSSL's EVP): begin, add any number of times, then hex (which
// writes 64 hex digits and a NUL and frees the context).
typedef struct evp_md_ctx_st Sha256;
Sha256 *sha256_begin(void);
void sha256_add(Sha256 *h, const void *data, size_t n);
void sha256_hex(Sha256 *h, char out[65]);
// Whether `s` is 64 lowercase hex digits (a stored lock or checksum read from a file is
// checked before it is compared or printed).
static inline int is_sha256_hex(const char *s) {
    int n = 0;
    while (n < 64 && ((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) n++;
    return n == 64 && s[64] == 0;
}

#ifdef __cplusplus
}
#endif
#endif
