// import_jsonl.c — JSON Lines (docs/data.md), parsed by libjansson: every line is one JSON
// value and one document.
//   --format jsonl       a list of token ids [5, 17, ...], or an object holding one under
//                        "tokens" or "input_ids" (what HF datasets' map(tokenize).to_json()
//                        writes), or under --key NAME
//   --format jsonl-text  a string "...", or an object with one under "text" (or --key NAME);
//                        its UTF-8 bytes are byte-level tokens as in --format bytes (id = byte + 1)
// Lines end at "\n" (a "\r" before it is dropped); the file may end with a newline or not.
// A line that is empty, not JSON, of the other kind, holds a NUL byte (JSON has none outside
// its strings' \u0000), or an id that is not an integer in [0, V − 1) is refused with its
// line number and offset. --eot (token lists) also ends a document inside a line.
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "data/import.h"

enum { JSONL_MAX_LINE = 1 << 30 };  // bytes in one line

typedef struct {
    const ImportSpec *spec;
    ImportFile *f;
    DocSink *sink;
    int32_t *ids;  // (cap) the line's ids
    size_t cap;
} Lines;

static int line_fail(const Lines *l, int64_t off, int64_t line, const char *what, const char *detail) {
    return import_fail(l->f, off, "line %lld: %s%s", (long long)line, what, detail ? detail : "");
}

static void reserve(Lines *l, size_t n) {
    if (n <= l->cap) return;
    free(l->ids);
    l->cap = n > 2 * l->cap ? n : 2 * l->cap;
    l->ids = xmalloc(l->cap * sizeof *l->ids);
}

// The value of an object line: --key, else the format's names (a list: "tokens" or
// "input_ids", exactly one of them; a text: "text"). NULL with *why when absent or ambiguous.
static json_t *body_of(const Lines *l, json_t *v, int text_kind, const char **why) {
    if (!json_is_object(v)) return v;
    if (l->spec->key) {
        json_t *b = json_object_get(v, l->spec->key);
        if (!b) *why = "an object without the --key given";
        return b;
    }
    if (text_kind) {
        json_t *b = json_object_get(v, "text");
        if (!b) *why = "expected a string, or an object with a \"text\" string (another key: --key NAME)";
        return b;
    }
    json_t *t = json_object_get(v, "tokens"), *ids = json_object_get(v, "input_ids");
    if (t && ids) return *why = "an object with both \"tokens\" and \"input_ids\": say which with --key NAME", NULL;
    if (!t && !ids) *why = "expected a list of token ids, or an object with a \"tokens\" or \"input_ids\" list (another key: --key NAME)";
    return t ? t : ids;
}

// One line [text, text + n) at file offset off: parsed, checked, handed over as one document.
static int one_line(Lines *l, const char *text, size_t n, int64_t off, int64_t line) {
    if (n && text[n - 1] == '\r') n--;
    if (n == 0) return line_fail(l, off, line, "empty, expected one JSON value per line", NULL);
    const char *nul = memchr(text, 0, n);
    if (nul) return import_fail(l->f, off + (nul - text), "line %lld: a NUL byte (JSON has none; inside a string it is \\u0000)",
                                (long long)line);
    if (import_budget_line(l->spec, l->f, off, line, n)) return -1;
    json_error_t err;
    json_t *v = json_loadb(text, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (!v) {
        char detail[220];
        snprintf(detail, sizeof detail, ": %s", err.text);
        return line_fail(l, off + (err.position > 0 ? err.position - 1 : 0), line, "not JSON", detail);
    }
    int text_kind = l->spec->format == IMPORT_JSONL_TEXT, rc = 0;
    const char *why = NULL;
    json_t *body = body_of(l, v, text_kind, &why);
    if (!body) {
        rc = line_fail(l, off, line, why, NULL);
        goto out;
    }
    if (text_kind) {
        if (!json_is_string(body)) {
            rc = line_fail(l, off, line, json_is_array(body) ? "a list, expected a text (--format jsonl-text; token lists are --format jsonl)"
                                                                : "expected a string, or an object with a \"text\" string", NULL);
            goto out;
        }
        const unsigned char *s = (const unsigned char *)json_string_value(body);
        size_t len = json_string_length(body);
        reserve(l, len + 1);
        for (size_t i = 0; i < len; i++) {
            if (s[i] >= l->spec->vocab) {
                char detail[160];
                snprintf(detail, sizeof detail, "byte %u of the text needs id %u, beyond data.vocab_size - 1 = %lld "
                         "(byte-level data needs data.vocab_size 257)", s[i], s[i] + 1u, (long long)l->spec->vocab);
                rc = line_fail(l, off, line, detail, NULL);
                goto out;
            }
            l->ids[i] = s[i] + 1;
        }
        if (len) rc = l->sink->add(l->sink, l->ids, (int64_t)len);
        if (!rc) rc = l->sink->end(l->sink);
        goto out;
    }
    if (!json_is_array(body)) {
        rc = line_fail(l, off, line, json_is_string(body) ? "a text, expected a token list (--format jsonl; texts are --format jsonl-text)"
                                                          : "expected a list of token ids, or an object with a \"tokens\" list", NULL);
        goto out;
    }
    size_t len = json_array_size(body), m = 0;
    reserve(l, len + 1);
    for (size_t i = 0; i < len && !rc; i++) {
        json_t *t = json_array_get(body, i);
        json_int_t id = json_is_integer(t) ? json_integer_value(t) : -1;
        if (json_is_integer(t) && l->spec->eot >= 0 && id == l->spec->eot) {  // no --eot: -1 is an id refused below
            if (m) rc = l->sink->add(l->sink, l->ids, (int64_t)m);
            if (!rc) rc = l->sink->end(l->sink);
            m = 0;
        } else if (!json_is_integer(t) || id < 0 || id >= l->spec->vocab) {
            char detail[260];
            char value[32] = "not an integer";
            if (json_is_integer(t)) snprintf(value, sizeof value, "%lld", (long long)id);
            snprintf(detail, sizeof detail, "token %zu is %s, expected an integer id in [0, %lld] (data.vocab_size - 2: "
                     "ddptok's ids are the file's + 1)%s", i, value, (long long)l->spec->vocab - 1,
                     json_is_integer(t) && id < 0 && l->spec->eot < 0 ? "; a negative id is no separator: give --eot ID for the one that is" : "");
            rc = line_fail(l, off, line, detail, NULL);
        } else l->ids[m++] = (int32_t)id + 1;
    }
    if (!rc && m) rc = l->sink->add(l->sink, l->ids, (int64_t)m);
    if (!rc) rc = l->sink->end(l->sink);
out:
    json_decref(v);
    return rc;
}

int import_read_jsonl(const ImportSpec *spec, const char *path, DocSink *sink, char sha[2][65]) {
    ImportFile f;
    if (import_file_open(&f, spec, path)) return -1;
    enum { CHUNK = 1 << 20 };
    Lines l = {spec, &f, sink, NULL, 0};
    size_t cap = (size_t)(f.size < CHUNK ? f.size : CHUNK) + 1, have = 0;  // buf: the current line's bytes so far
    char *buf = xmalloc(cap);
    int64_t at = 0, line = 1, start = 0;  // next offset to read; the current line's number and offset
    int rc = 0;
    while (!rc && at < f.size) {
        size_t n = (size_t)(f.size - at < CHUNK ? f.size - at : CHUNK);
        if (have + n > cap) {  // the line so far, through the budget before its buffer grows
            if ((rc = import_budget_line(spec, &f, start, line, have + n))) break;
            char *grown = xmalloc(cap * 2 > have + n ? cap * 2 : have + n);
            memcpy(grown, buf, have);
            free(buf);
            cap = cap * 2 > have + n ? cap * 2 : have + n, buf = grown;
        }
        if ((rc = import_file_read(&f, at, buf + have, n))) break;
        size_t from = 0, end = have + n;
        char *nl;
        while (!rc && (nl = memchr(buf + have, '\n', end - have))) {
            size_t pos = (size_t)(nl - buf);
            rc = one_line(&l, buf + from, pos - from, start, line);
            line++, start += (int64_t)(pos - from + 1), from = pos + 1, have = from;
        }
        memmove(buf, buf + from, end - from);
        have = end - from;
        at += (int64_t)n;
        if (!rc && have > JSONL_MAX_LINE)
            rc = import_fail(&f, start, "line %lld: longer than %d bytes", (long long)line, JSONL_MAX_LINE);
    }
    if (!rc && have) rc = one_line(&l, buf, have, start, line);  // the last line, without a newline
    free(buf);
    free(l.ids);
    if (import_file_close(&f, rc ? NULL : sha[0])) rc = -1;
    return rc;
}
