// jsonio.c — JSON files and JSONL lines through libjansson (see jsonio.h).
#include "io/jsonio.h"

#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"

#define JSON_MAX_BYTES (16 << 20)  // ddptok's own JSON files are kilobytes

json_t *json_text(const char *s, int *exact) {
    size_t n = strlen(s);
    char *valid = xmalloc(3 * n + 1);  // each byte at most U+FFFD's 3
    size_t o = 0;
    int same = 1;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = utf8_next(s + i, &cp);
        if (len) memcpy(valid + o, s + i, (size_t)len), o += (size_t)len, i += (size_t)len;
        else memcpy(valid + o, "\xEF\xBF\xBD", 3), o += 3, i++, same = 0;
    }
    json_t *j = json_stringn(valid, o);
    free(valid);
    ASSERT(j != NULL);  // valid UTF-8 by construction
    if (exact) *exact = same;
    return j;
}

json_t *json_int_array(const int64_t *v, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_integer((json_int_t)v[i]));
    return a;
}

int json_depth(const json_t *j) {
    int d = 0, c;
    size_t i;
    const char *key;
    json_t *v;
    if (json_is_array(j)) json_array_foreach(j, i, v) if ((c = json_depth(v)) > d) d = c;
    if (json_is_object(j)) json_object_foreach((json_t *)j, key, v) if ((c = json_depth(v)) > d) d = c;
    return json_is_array(j) || json_is_object(j) ? d + 1 : 0;
}

int json_write_file(const char *path, json_t *j) {
    ASSERT(j != NULL);  // a json_pack format or value refused is a bug of the caller
    char *text = json_dumps(j, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    json_decref(j);
    if (!text) return error("%s: cannot serialize the JSON (out of memory)", path);
    size_t n = strlen(text);
    char *line = xmalloc(n + 2);
    memcpy(line, text, n);
    line[n] = '\n', line[n + 1] = 0;
    int rc = write_file_atomic(path, line, n + 1);
    free(text), free(line);
    return rc;
}

int json_write_line(FILE *f, json_t *j, int digits) {
    ASSERT(j != NULL);
    int rc = json_dumpf(j, f, JSON_REAL_PRECISION(digits));
    json_decref(j);
    if (rc || fputc('\n', f) == EOF || fflush(f)) return -1;
    return 0;
}

json_t *json_read_file(const char *path, int quiet) {
    size_t n;
    char why[256];
    char *text = file_read_regular(path, JSON_MAX_BYTES, &n, why, sizeof why);  // a FIFO or a huge file: refused
    if (!text) {
        if (!quiet) error("%s: cannot read: %s", path, why);
        return NULL;
    }
    json_error_t err;
    json_t *j = json_loadb(text, n, 0, &err);
    free(text);
    if (!j) error("%s: not JSON (line %d: %s)", path, err.line, err.text);
    return j;
}
