// lock.c — the corpus lock and the data lock, and the older data locks (see lock.h).
#include "data/lock.h"

#include <stdio.h>
#include <string.h>

enum { LOCK_FIELDS_MAX = 64 + 16 * 48 + MAX_BANDS * 24 };  // the bands: a list, or `auto` (config_lock_fields)

// SHA-256 (hex) of "FORMAT\n", the key lines, and "NAME VALUE\n".
static void lock_hash(const char *format, const char *fields, int n, const char *name, const char *value, char out[65]) {
    Sha256 *h = sha256_begin();
    sha256_add(h, format, strlen(format));
    sha256_add(h, "\n", 1);
    sha256_add(h, fields, (size_t)n);
    sha256_add(h, name, strlen(name));
    sha256_add(h, " ", 1);
    sha256_add(h, value, 64);
    sha256_add(h, "\n", 1);
    sha256_hex(h, out);
}

void corpus_lock_of(const Config *cfg, int split_by_hash, const char *content, char out[65]) {
    char fields[LOCK_FIELDS_MAX + 32];
    int n = config_corpus_lock_fields(cfg, split_by_hash, fields, LOCK_FIELDS_MAX);
    if (!split_by_hash && cfg->data.source == DATA_SOURCE_IMPORTED) n += snprintf(fields + n, sizeof fields - (size_t)n, "split=names\n");
    lock_hash("ddptok-corpus-lock-v1", fields, n, "content", content, out);
}

void data_lock_of(const Config *cfg, const char *corpus_lock, char out[65]) {
    char fields[LOCK_FIELDS_MAX];
    int n = config_lock_fields(cfg, fields, sizeof fields);
    lock_hash("ddptok-data-lock-v3", fields, n, "corpus", corpus_lock, out);
}

void data_lock_v2_of(const Config *cfg, const char *content_v2, char out[65]) {
    char fields[LOCK_FIELDS_MAX];
    int n = config_lock_fields(cfg, fields, sizeof fields);
    lock_hash("ddptok-data-lock-v2", fields, n, "content", content_v2, out);
}

void data_lock_v1_begin(const Config *cfg, Sha256 **h) {
    char fields[LOCK_FIELDS_MAX];
    int n = config_lock_fields(cfg, fields, sizeof fields);
    *h = sha256_begin();
    sha256_add(*h, "ddptok-data-lock-v1\n", 20);
    sha256_add(*h, fields, (size_t)n);
}
