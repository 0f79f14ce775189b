// test_data_lock.c — the two locks follow the key table (config_keys.h): starting from
// configs/tiny.yaml (rank_bands: auto) under the bands sampler and the global sampler, every key is
// changed to another valid value (the first candidate config_set accepts that changes the
// key's resolved value), and
//   - the data lock (corpus_generate: the corpus lock and the layout's keys) must change
//     exactly when the table puts the key in the data lock under the sampler before or after;
//   - the corpus lock (what corpus.h5 carries) must change exactly when the table puts the key
//     in the corpus lock: for prepare's corpus (generated again under each config) and for an
//     imported corpus (data.source: imported, the same content), where the world size, bands,
//     batch, accumulation, sampler and seed never enter it (docs/data.md "Two locks").
// Pinned: the data locks of tiny.yaml (format 3), which checkpoints and plans carry, and the
// format-2 and format-1 locks older checkpoints carry, which corpus_lock_accepts still accepts
// (and one of another corpus it refuses).
// Negative controls: a lock of the corpus bytes alone (no key lines) misses some key the
// table says decides the data, and a corpus lock built from the data lock's key lines would
// change with keys the table keeps out of it: so the checks above can fail. Exit 1 on any failure.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/lock.h"
#include "data/synthetic.h"

static int failures;

static void lock_of(const Config *cfg, char lock[65], char corpus_lock[65], char bytes[65]) {
    Corpus c;
    corpus_generate(&c, cfg);
    memcpy(lock, c.lock, 65);
    memcpy(corpus_lock, c.corpus_lock, 65);
    Sha256 *h = sha256_begin();  // the corpus alone, for the negative control
    sha256_add(h, c.tokens, (size_t)c.n_tokens * sizeof *c.tokens);
    sha256_add(h, c.offsets, (size_t)(c.n + 1) * sizeof *c.offsets);
    sha256_add(h, c.split, (size_t)c.n);
    sha256_hex(h, bytes);
    corpus_free(&c);
}

// A corpus lock from the data lock's key lines (the wrong rule, for the negative control).
static void wrong_corpus_lock(const Config *cfg, const char *content, char out[65]) {
    char fields[8192];
    int n = config_lock_fields(cfg, fields, sizeof fields);
    Sha256 *h = sha256_begin();
    sha256_add(h, fields, (size_t)n);
    sha256_add(h, content, 64);
    sha256_hex(h, out);
}

// Candidate values for key i of `cfg`, as --set text; returns how many.
static int candidates(const Config *cfg, int i, char out[][128]) {
    ConfigKey k;
    config_key(i, &k);
    char v[4096];
    config_key_value(cfg, i, v, sizeof v);
    int n = 0;
    double x = atof(v);
    switch (k.kind) {
    case 'i': case 'u':
        for (double d = 1; d <= 4; d *= 2) {
            if (x + d <= k.max) snprintf(out[n++], 128, "%.0f", x + d);
            if (x - d >= k.min) snprintf(out[n++], 128, "%.0f", x - d);
        }
        break;
    case 'd': snprintf(out[n++], 128, "%.17g", x / 2 >= k.min && x > 0 ? x / 2 : k.min + (k.max - k.min) / 3); break;
    case 'l': snprintf(out[n++], 128, "[0.5, 0.75]"); break;
    case 'e':
        for (int e = 0; e < k.n_names; e++)
            if (strcmp(k.names[e], v) != 0) snprintf(out[n++], 128, "%s", k.names[e]);
        break;
    case 'b':
        snprintf(out[n++], 128, "auto");
        snprintf(out[n++], 128, "[[%d, %d], [%d, %d]]", cfg->data.min_length, cfg->data.min_length + 2,
                 cfg->data.min_length + 3, cfg->data.max_length);
        break;
    case 'p': snprintf(out[n++], 128, "elsewhere"); break;
    }
    return n;
}

int main(void) {
    const char *pinned[2] = {"52137fa822be0ce6a20033ea86676fcc8bd393e34bd715806715edaf55a72957", "a59820de65ab4d5b00db9e8d8b6f0be9b0ecd77c12dcf3009857c87f50c1d1b0"};
    const char *pinned_v2[2] = {"90c8653571490ba8e1edceff50dfc26753cb1bd2db79752d285547c85b862783",
                                "c25ab29642785280018a137b7b6632e07e4544d613bd5a6ed759c385c749942e"};
    const char *pinned_v1[2] = {"7927cd91f9038d1439ded321a857dbb5eacb77ec8ba1b74f1d302594158f5ea5",
                                "ddb4a4945983fda7c9b4025e9c15a0ff1dbdf146aab881cc84f11dc3894f492f"};
    int blind = 0, checked = 0, checked_corpus = 0, wrong_seen = 0;
    for (int global = 0; global <= 1; global++) {
        Config base;
        char err[1024];
        char *sets[1] = {global ? "train.sampler=global" : "train.sampler=bands"};
        const char *name = sets[0] + 14;
        if (config_load(&base, "configs/tiny.yaml", sets, 1, err, sizeof err)) {
            printf("FAIL loading configs/tiny.yaml: %s\n", err);
            return 1;
        }
        char lock0[65], clock0[65], bytes0[65];
        lock_of(&base, lock0, clock0, bytes0);
        if (strcmp(lock0, pinned[global])) {
            failures++;
            printf("FAIL tiny.yaml (%s sampler): data lock %s, pinned %s\n", name, lock0, pinned[global]);
        }
        Corpus c;
        corpus_generate(&c, &base);
        for (int v = 0; v < 2; v++) {
            const char *const *pins = v ? pinned_v1 : pinned_v2;
            if (!corpus_lock_accepts(&c, &base, pins[global]) || corpus_lock_accepts(&c, &base, pins[!global])) {
                failures++;
                printf("FAIL tiny.yaml (%s sampler): the format-%d lock %.12s… not accepted, or the other sampler's accepted\n", name,
                       2 - v, pins[global]);
            }
        }
        char content[65];
        memcpy(content, c.content, 65);
        corpus_free(&c);
        // The sweep starts from auto bands, so that a world size can change alone.
        if (config_set(&base, "train.rank_bands=auto", err, sizeof err)) {
            printf("FAIL rank_bands=auto: %s\n", err);
            return 1;
        }
        lock_of(&base, lock0, clock0, bytes0);
        Config imp = base;
        if (config_set(&imp, "data.source=imported", err, sizeof err)) return printf("FAIL data.source=imported: %s\n", err), 1;
        char ilock0[65], wrong0[65];
        corpus_lock_of(&imp, 1, content, ilock0);
        wrong_corpus_lock(&imp, content, wrong0);
        ConfigKey k;
        for (int i = 0; config_key(i, &k) == 0; i++) {
            char cand[16][128], before[4096], after[4096], set[4400];
            int n = candidates(&base, i, cand), used = 0;
            config_key_value(&base, i, before, sizeof before);
            for (int j = 0; j < n && !used; j++) {
                Config c2 = base;
                snprintf(set, sizeof set, "%s=%s", k.key, cand[j]);
                if (config_set(&c2, set, err, sizeof err)) continue;
                config_key_value(&c2, i, after, sizeof after);
                if (!strcmp(before, after)) continue;
                used = 1, checked++;
                char lock[65], clock[65], bytes[65];
                lock_of(&c2, lock, clock, bytes);
                int in = config_key_in_lock(&base, i) || config_key_in_lock(&c2, i), changed = strcmp(lock, lock0) != 0;
                if (in != changed) {
                    failures++;
                    printf("FAIL %s sampler: --set %s %s the data lock, but the table says it is %sin the lock\n", name, set,
                           changed ? "changes" : "does not change", in ? "" : "not ");
                }
                blind += in && !strcmp(bytes, bytes0);
                int cin = config_key_in_corpus_lock(&base, i, 1) || config_key_in_corpus_lock(&c2, i, 1);
                if (cin != (strcmp(clock, clock0) != 0)) {
                    failures++;
                    printf("FAIL %s sampler: --set %s %s prepare's corpus lock, but the table says it is %sin it\n", name, set,
                           cin ? "does not change" : "changes", cin ? "" : "not ");
                }
                // The same key on an imported corpus of the same content (data.source stays imported).
                if (!strcmp(k.key, "data.source")) continue;
                Config i2 = imp;
                if (config_set(&i2, set, err, sizeof err)) continue;
                checked_corpus++;
                char ilock[65], wrong[65];
                corpus_lock_of(&i2, 1, content, ilock);
                wrong_corpus_lock(&i2, content, wrong);
                int iin = config_key_in_corpus_lock(&imp, i, 1) || config_key_in_corpus_lock(&i2, i, 1);
                if (iin != (strcmp(ilock, ilock0) != 0)) {
                    failures++;
                    printf("FAIL %s sampler: --set %s %s an imported corpus's lock, but the table says it is %sin it\n", name, set,
                           iin ? "does not change" : "changes", iin ? "" : "not ");
                }
                wrong_seen += !iin && strcmp(wrong, wrong0) != 0;
            }
            // train.epochs exists for the global sampler only: refused under bands (tests/test_config.sh).
            if (!used && !global && !strcmp(k.key, "train.epochs")) continue;
            if (!used) {
                failures++;
                printf("FAIL %s sampler: no candidate value changes %s (%d tried)\n", name, k.key, n);
            }
        }
    }
    if (blind == 0) {
        failures++;
        printf("FAIL negative control: every key in the lock also changes the corpus bytes (the key lines are untested)\n");
    }
    if (wrong_seen == 0) {
        failures++;
        printf("FAIL negative control: a corpus lock of the data lock's key lines changes with no key outside the corpus lock\n");
    }
    printf("data lock: %d key changes checked, %d of them in the lock but invisible in the corpus bytes alone; corpus lock: %d "
           "on an imported corpus, %d of them would change a corpus lock of the data lock's lines; %d failure(s)\n",
           checked, blind, checked_corpus, wrong_seen, failures);
    return failures ? 1 : 0;
}
