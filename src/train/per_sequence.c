// per_sequence.c — evaluate --per-sequence: the JSONL of each sequence's numbers and the
// ids of --ids (see per_sequence.h).
#include "train/per_sequence.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"

#define IDS_FILE_MAX ((size_t)64 << 20)  // 64 MiB of ids: millions of them
#define ID_DIGITS_MAX 18                 // below INT64_MAX: a longer number is no sequence id

// The numbers of `s` (separators: `seps`) into *ids (at most one per two bytes); 0, or -1 with
// the token that is none in `bad` and its line in *line.
static int ids_scan(const char *s, const char *seps, int64_t **ids, int *n, int *line, char *bad, size_t len) {
    *ids = xmalloc((strlen(s) / 2 + 1) * sizeof **ids);
    *line = 1;
    while (*s) {
        if (strchr(seps, *s)) {
            *line += *s == '\n';
            s++;
            continue;
        }
        size_t k = strcspn(s, seps);
        int digits = k > 0 && k <= ID_DIGITS_MAX;
        for (size_t i = 0; i < k && digits; i++) digits = s[i] >= '0' && s[i] <= '9';
        if (!digits) {
            snprintf(bad, len, "%.*s", (int)(k < 40 ? k : 40), s);
            return -1;
        }
        (*ids)[(*n)++] = strtoll(s, NULL, 10);
        s += k;
    }
    return 0;
}

int per_sequence_ids_parse(const char *arg, int64_t **ids, int *n, char *why, size_t len) {
    *ids = NULL, *n = 0;
    int line;
    char bad[64];
    // A list: digits and commas only, a number first and last.
    size_t k = strspn(arg, "0123456789,");
    if (arg[0] && k == strlen(arg) && arg[0] != ',' && arg[k - 1] != ',' && !strstr(arg, ",,")) {
        if (ids_scan(arg, ",", ids, n, &line, bad, sizeof bad) == 0) return 0;
        free(*ids), *ids = NULL, *n = 0;
        snprintf(why, len, "%s: a list of sequence ids with a number of more than %d digits (%s)", arg, ID_DIGITS_MAX, bad);
        return -1;
    }
    size_t size;
    char err[256];
    char *text = file_read_regular(arg, IDS_FILE_MAX, &size, err, sizeof err);
    if (!text) {
        snprintf(why, len, "%s: neither sequence ids (A,B,C: numbers of the split's sequences) nor a file of them (%s)", arg, err);
        return -1;
    }
    int rc = strlen(text) != size ? -2 : ids_scan(text, ", \t\r\n", ids, n, &line, bad, sizeof bad);
    free(text);
    if (rc == -2)
        snprintf(why, len, "%s: a NUL byte in a file of sequence ids (expected numbers separated by commas, spaces or newlines)",
                 arg);
    else if (rc) snprintf(why, len, "%s: line %d: '%s' is not a sequence id (expected numbers 0, 1, ... separated by commas, "
                          "spaces or newlines)", arg, line, bad);
    else if (*n == 0)
        snprintf(why, len, "%s: no sequence id in the file (expected numbers separated by commas, spaces or newlines)", arg);
    if (rc == 0 && *n > 0) return 0;
    free(*ids), *ids = NULL, *n = 0;
    return -1;
}

// Whether the first line of the regular file at `path` is a per-sequence header.
static int is_per_sequence_file(const char *path) {
    char err[256];
    FILE *f = fopen_regular(path, err, sizeof err);
    if (!f) return 0;
    char head[4096];
    size_t got = fread(head, 1, sizeof head - 1, f);
    fclose(f);
    head[got] = 0;
    char *nl = strchr(head, '\n');
    if (!nl) return 0;
    *nl = 0;
    json_t *j = json_loads(head, 0, NULL);
    const char *format = json_string_value(json_object_get(j, "format"));
    int ok = format && !strcmp(format, PER_SEQUENCE_FORMAT);
    json_decref(j);
    return ok;
}

int per_sequence_target_check(const char *path, char *why, size_t len) {
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISREG(st.st_mode)) {
            snprintf(why, len, "%s is %s, not a file: name a file to write", path, what_is_there(st.st_mode));
            return -1;
        }
        if (!is_per_sequence_file(path)) {
            snprintf(why, len, "%s exists and is no per-sequence file of ddptok (its first line is not one's header): not "
                     "replaced; name another file, or remove it", path);
            return -1;
        }
    } else if (errno != ENOENT) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
        return -1;
    }
    FileOut o;
    error_capture(1);
    int rc = file_out_open(&o, path);
    const char *err = error_capture(0);
    if (rc) {  // its line ("PATH: cannot write: WHY") names the path already
        size_t n = strlen(path);
        if (!strncmp(err, path, n) && err[n] == ':') err += n + 2;
        if (!strncmp(err, "cannot write: ", 14)) err += 14;
        snprintf(why, len, "%s: cannot write there: %s", path, err);
        return -1;
    }
    file_out_abort(&o);
    return 0;
}

static json_t *record(int64_t id, const SequenceEval *r) {
    return json_pack("{s:I, s:I, s:o, s:o, s:I}", "id", (json_int_t)id, "tokens", (json_int_t)r->tokens, "loss_sum",
                     json_num(r->loss_sum), "loss", json_num(r->tokens ? r->loss_sum / (double)r->tokens : NAN), "correct",
                     (json_int_t)r->correct);
}

int per_sequence_write(const char *path, json_t *header, const SequenceEval *seq, const uint8_t *want, int n) {
    FileOut o;
    if (file_out_open(&o, path)) {
        json_decref(header);
        return -1;
    }
    FILE *f = file_out_stream(&o);
    // One line each, reals with 17 significant digits (a double read back is the same double).
    int bad = json_dumpf(header, f, JSON_REAL_PRECISION(17)) || fputc('\n', f) == EOF;
    json_decref(header);
    // DDPTOK_TEST_PERSEQ_ID_SHIFT, the negative control of the tests' id check: each record
    // carries the next sequence's numbers (an id mapping off by one).
    int shift = getenv("DDPTOK_TEST_PERSEQ_ID_SHIFT") != NULL;
    for (int i = 0; i < n && !bad; i++) {
        if (want && !want[i]) continue;
        json_t *j = record(i, &seq[shift ? (i + 1) % n : i]);
        bad = json_dumpf(j, f, JSON_REAL_PRECISION(17)) || fputc('\n', f) == EOF;
        json_decref(j);
    }
    if (bad || ferror(f)) {
        int e = errno;
        file_out_abort(&o);
        return error("%s: cannot write: %s", path, strerror(e));
    }
    return file_out_commit(&o);
}
