// jsonio.h — JSON and JSONL through libjansson: every result file ddptok writes or reads
// goes through the library, so a writer and its readers cannot drift apart.
//
// Numbers: json_num() keeps what scripts saw when these files were printed with %.17g: an
// integer-valued double is a JSON integer (max |dtheta| = 0, not 0.0), any other finite
// value a real with 17 significant digits; JSON has no infinity or NaN, so those are null.
#ifndef DDPTOK_JSONIO_H
#define DDPTOK_JSONIO_H

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline json_t *json_num(double x) {
    if (!isfinite(x)) return json_null();
    if (x == trunc(x) && fabs(x) < 9007199254740992.0) return json_integer((json_int_t)x);
    return json_real(x);
}

// User-controlled text — a path, a file or directory name, anything not written by ddptok
// itself — enters JSON only through json_text: a JSON string is UTF-8, and libjansson
// refuses any other bytes (json_string returns NULL, json_pack fails, a key is not set).
// Each byte that does not start valid UTF-8 (utf8_next) becomes U+FFFD, as the config's
// emission writes it; *exact (when not NULL) says whether nothing was replaced — a caller
// that needs the exact text (a key naming a directory: two names could meet in one key)
// refuses it in one line instead. Never NULL.
json_t *json_text(const char *s, int *exact);
// A JSON array of n 64-bit integers.
json_t *json_int_array(const int64_t *v, int n);
// Writes j to path atomically (write_file_atomic), one key per line; returns 0 or error().
// Takes the reference to j (also on failure): callers pass json_pack(...) directly.
int json_write_file(const char *path, json_t *j);
// Appends j as one line (JSONL) with `digits` significant digits for reals and flushes;
// returns 0 or -1 (errno set by the stream). Takes the reference to j.
int json_write_line(FILE *f, json_t *j, int digits);
// Reads a JSON file (a regular file of at most 16 MiB); NULL, with one error() line naming
// the file, when it cannot be read or is not JSON; an unreadable one quietly when `quiet`.
json_t *json_read_file(const char *path, int quiet);
// How deep j nests: 0 for a scalar, 1 + its deepest member's for an array or object.
int json_depth(const json_t *j);
// j["ok"] is true.
static inline int json_ok(const json_t *j) { return json_is_true(json_object_get(j, "ok")); }

#ifdef __cplusplus
}
#endif
#endif
