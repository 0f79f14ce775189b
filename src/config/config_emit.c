// config_emit.c — a Config as YAML (every key, resolved values), the comparison of two
// (the first differing key, for resume and for the ranks' agreement), and the fields the
// data lock hashes: all driven by the key table (config_keys.h).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "config/config.h"
#include "config/config_keys.h"

// `s` as a YAML double-quoted scalar that libyaml reads back to the same bytes: quote and
// backslash escaped; every character YAML would not take raw (controls, line breaks
// such as U+0085/U+2028/U+2029, non-characters) as \xNN or \uXXXX; other UTF-8 kept.
// A byte that is not UTF-8 (never accepted by the parser) is written as U+FFFD.
static void yaml_quote(const char *s, char *out, size_t len) {
    Buf b = {0};
    buf_printf(&b, "\"");
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        uint32_t cp = *u;
        int n = cp < 0x80 ? 1 : (cp & 0xE0) == 0xC0 ? 2 : (cp & 0xF0) == 0xE0 ? 3 : (cp & 0xF8) == 0xF0 ? 4 : 0;
        int ok = n > 0;
        if (n > 1) cp &= 0x3Fu >> (n - 1);
        for (int i = 1; ok && i < n; i++) ok = (u[i] & 0xC0) == 0x80, cp = cp << 6 | (u[i] & 0x3Fu);
        if (!ok) cp = 0xFFFD, n = 1;
        int printable = cp == 0x09 || (cp >= 0x20 && cp <= 0x7E) || (cp >= 0xA0 && cp <= 0xD7FF && cp != 0x2028 && cp != 0x2029) ||
                        (cp >= 0xE000 && cp <= 0xFFFD && cp != 0xFEFF) || (cp >= 0x10000 && cp <= 0x10FFFF);
        if (cp == '"' || cp == '\\') buf_printf(&b, "\\%c", (char)cp);
        else if (cp == 0x09) buf_printf(&b, "\\t");
        else if (!ok) buf_printf(&b, "\\uFFFD");
        else if (printable) buf_printf(&b, "%.*s", n, (const char *)u);
        else if (cp <= 0xFF) buf_printf(&b, "\\x%02X", cp);
        else buf_printf(&b, "\\u%04X", cp);
        u += n;
    }
    buf_printf(&b, "\"");
    snprintf(out, len, "%s", b.s);
    buf_free(&b);
}

// Room for one emitted value: every band of a list (beyond MAX_BANDS ranks they are `auto`),
// or a path with every byte escaped (6 each).
#define VALUE_MAX (MAX_BANDS * 24 + 8)
_Static_assert(VALUE_MAX > 6 * PATH_MAX_LEN + 3, "an escaped path fits");

// The shortest form that reads back to the same double.
static void shortest_double(double v, char *out, size_t len) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v) break;
    }
}

static void field_value(const Config *cfg, const Field *f, char *out, size_t len) {
    const char *base = (const char *)cfg;
    switch (f->type) {
    case F_INT:
        if (f->flags & F_AUTO && *(const int *)(base + f->offset) == CONFIG_AUTO) snprintf(out, len, "auto");
        else snprintf(out, len, "%d", *(const int *)(base + f->offset));
        break;
    case F_U32: snprintf(out, len, "%u", *(const uint32_t *)(base + f->offset)); break;
    case F_DOUBLE: shortest_double(*(const double *)(base + f->offset), out, len); break;
    case F_PAIR: {
        const double *v = (const double *)(base + f->offset);
        char a[32], b[32];
        shortest_double(v[0], a, sizeof a), shortest_double(v[1], b, sizeof b);
        snprintf(out, len, "[%s, %s]", a, b);
        break;
    }
    case F_ENUM: snprintf(out, len, "%s", f->names[*(const int *)(base + f->offset)]); break;
    case F_PATH: yaml_quote(base + f->offset, out, len); break;
    case F_BANDS: {
        if (config_bands_as_auto(cfg)) {
            snprintf(out, len, "auto");
            break;
        }
        size_t n = (size_t)snprintf(out, len, "[");
        for (int r = 0; r < cfg->train.world_size && n < len; r++) {
            int lo, hi;
            config_band(cfg, r, &lo, &hi);
            n += (size_t)snprintf(out + n, len - n, "%s[%d, %d]", r ? ", " : "", lo, hi);
        }
        if (n < len) snprintf(out + n, len - n, "]");
        break;
    }
    }
}

char *config_to_yaml(const Config *cfg) {
    size_t cap = 8192, n = 0;
    char *out = xmalloc(cap);
    out[0] = 0;
    char prev[256] = "";
    for (int i = 0; i < config_n_fields; i++) {
        const char *key = config_fields[i].key;
        // Open every group that differs from the previous key's groups.
        int depth = 0;
        const char *seg = key;
        for (const char *dot; (dot = strchr(seg, '.')); seg = dot + 1, depth++) {
            size_t plen = (size_t)(dot - key);
            if (strncmp(prev, key, plen + 1) != 0)
                n += (size_t)snprintf(out + n, cap - n, "%*s%.*s:\n", 2 * depth, "", (int)(dot - seg), seg);
        }
        char val[VALUE_MAX];
        field_value(cfg, &config_fields[i], val, sizeof val);
        if (config_fields[i].type == F_BANDS && cfg->train.bands_auto && !config_bands_as_auto(cfg)) snprintf(val + strlen(val), sizeof val - strlen(val), "  # auto");
        if (cap - n < strlen(val) + 256) {
            out = realloc(out, cap = cap * 2 + strlen(val));
            ASSERT(out);
        }
        n += (size_t)snprintf(out + n, cap - n, "%*s%s: %s\n", 2 * depth, "", seg, val);
        snprintf(prev, sizeof prev, "%s", key);
    }
    return out;
}

// First field with `flags` (0: any) outside paths.* whose value differs; fields with
// `except` in their flags are skipped.
static int diff_fields(const Config *a, const Config *b, int flags, int except, char *what, int len) {
    for (int i = 0; i < config_n_fields; i++) {
        if ((config_fields[i].flags & flags) != flags || (config_fields[i].flags & except) || !strncmp(config_fields[i].key, "paths.", 6)) continue;
        char va[VALUE_MAX], vb[VALUE_MAX];
        field_value(a, &config_fields[i], va, sizeof va);
        field_value(b, &config_fields[i], vb, sizeof vb);
        if (strcmp(va, vb) != 0) {
            snprintf(what, (size_t)len, "%s: %s vs %s", config_fields[i].key, va, vb);
            return 1;
        }
    }
    return 0;
}

// Under the global sampler on both sides the window does not depend on how it is laid out
// on ranks (docs/sampling.md "Elastic resume"): world size, bands, A, B and partition may change.
int config_diff_training(const Config *a, const Config *b, char *what, int len) {
    int elastic = a->train.sampler == SAMPLER_GLOBAL && b->train.sampler == SAMPLER_GLOBAL;
    return diff_fields(a, b, F_TRAJECTORY, elastic ? F_LAYOUT : 0, what, len);
}

int config_diff_run(const Config *a, const Config *b, char *what, int len) { return diff_fields(a, b, 0, 0, what, len); }

int config_diff_result(const Config *a, const Config *b, char *what, int len) { return diff_fields(a, b, 0, F_RUN_ONLY, what, len); }

// SHA-256 over the key lines diff_fields(…, 0, except, …) compares.
static void digest_fields(const Config *cfg, int except, char out[65]) {
    Sha256 *h = sha256_begin();
    for (int i = 0; i < config_n_fields; i++) {
        if (!strncmp(config_fields[i].key, "paths.", 6) || (config_fields[i].flags & except)) continue;
        char v[VALUE_MAX];
        field_value(cfg, &config_fields[i], v, sizeof v);
        if (config_fields[i].flags & F_DIGEST_DEFAULT && !strcmp(v, config_fields[i].def)) continue;
        sha256_add(h, config_fields[i].key, strlen(config_fields[i].key) + 1);  // NUL-separated: no two texts meet
        sha256_add(h, v, strlen(v) + 1);
    }
    sha256_hex(h, out);
}

void config_run_digest(const Config *cfg, char out[65]) { digest_fields(cfg, 0, out); }

void config_result_digest(const Config *cfg, char out[65]) { digest_fields(cfg, F_RUN_ONLY, out); }

// The data lock's key lines, in table order: NAME=VALUE per key, the keys sharing a name
// joined by commas (splits=train,validation,test); the bands as lo-hi; per rank, without
// a newline (the lock's format v1, kept bit-identical).
// Whether field f enters the data lock under cfg: its lock name, unless its flags limit it
// to the other sampler, or to an imported corpus.
static int field_in_lock(const Config *cfg, const Field *f) {
    int global = cfg->train.sampler == SAMPLER_GLOBAL, imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    return f->lock && !(f->flags & F_LOCK_BANDS && global) && !(f->flags & F_LOCK_GLOBAL && !global) &&
           !(f->flags & F_LOCK_IMPORT && !imported);
}

// Whether field f enters the corpus lock (corpus.h5's: its content and the rules that cut it,
// never the layout on ranks): F_CORPUS (data.import.* only for an imported corpus, and only
// when its split came from the document hash), F_CORPUS_SYNTHETIC for prepare's corpus.
static int field_in_corpus_lock(const Config *cfg, const Field *f, int split_by_hash) {
    int imported = cfg->data.source == DATA_SOURCE_IMPORTED;
    if (!f->lock) return 0;
    if (f->flags & F_CORPUS_SYNTHETIC) return !imported;
    if (!(f->flags & F_CORPUS) || (f->flags & F_LOCK_IMPORT && !imported)) return 0;
    return split_by_hash || strcmp(f->lock, "split") != 0;
}

// The lines of the fields `in` takes, in table order (see config_lock_fields).
static int lock_lines(const Config *cfg, int (*in)(const Config *, const Field *, int), int arg, char *out, size_t len) {
    size_t n = 0;
    const char *open = NULL;  // the lock name of the line being written
    for (int i = 0; i < config_n_fields && n < len; i++) {
        const Field *f = &config_fields[i];
        if (!in(cfg, f, arg)) continue;
        if (open && strcmp(open, f->lock) != 0) n += (size_t)snprintf(out + n, len - n, "\n");
        if (n >= len) break;
        if (open && !strcmp(open, f->lock)) n += (size_t)snprintf(out + n, len - n, ",");
        else n += (size_t)snprintf(out + n, len - n, "%s=", f->lock);
        open = f->lock;
        if (f->type == F_BANDS) {
            if (config_bands_as_auto(cfg)) n += (size_t)snprintf(out + n, len - n, "auto;");  // W > MAX_BANDS: W and the lengths say it
            for (int r = 0; r < cfg->train.world_size && !config_bands_as_auto(cfg) && n < len; r++) {
                int lo, hi;
                config_band(cfg, r, &lo, &hi);
                n += (size_t)snprintf(out + n, len - n, "%d-%d;", lo, hi);
            }
            open = NULL;  // v1: no newline after the bands
            continue;
        }
        char v[VALUE_MAX];
        ASSERT(f->type == F_INT || f->type == F_U32 || f->type == F_ENUM || (f->type == F_DOUBLE && f->flags & F_LOCK_IMPORT));
        field_value(cfg, f, v, sizeof v);
        n += (size_t)snprintf(out + n, len - n, "%s", v);
    }
    if (open && n < len) n += (size_t)snprintf(out + n, len - n, "\n");
    ASSERT(n < len);
    return (int)n;
}

static int in_data_lock(const Config *cfg, const Field *f, int unused) { return (void)unused, field_in_lock(cfg, f); }

int config_lock_fields(const Config *cfg, char *out, size_t len) { return lock_lines(cfg, in_data_lock, 0, out, len); }

int config_corpus_lock_fields(const Config *cfg, int split_by_hash, char *out, size_t len) {
    return lock_lines(cfg, field_in_corpus_lock, split_by_hash, out, len);
}

int config_key_in_corpus_lock(const Config *cfg, int i, int split_by_hash) {
    return field_in_corpus_lock(cfg, &config_fields[i], split_by_hash);
}

int config_key_in_lock(const Config *cfg, int i) { return field_in_lock(cfg, &config_fields[i]); }

void config_key_value(const Config *cfg, int i, char *out, size_t len) {
    ASSERT(i >= 0 && i < config_n_fields);
    field_value(cfg, &config_fields[i], out, len);
}
