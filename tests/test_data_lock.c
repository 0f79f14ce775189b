// test_data_lock.c — the data lock follows the key table (config_keys.h): starting from
// configs/tiny.yaml (rank_bands: auto) under the bands sampler and the global sampler, every key is
// changed to another valid value (the first candidate config_set accepts that changes the
// key's resolved value), and the lock (corpus_generate + corpus_lock) must change exactly
// when the table puts the key in the lock under the sampler before or after the change.
// Pinned: the locks of tiny.yaml (format 2, the chunk checksums' digest), which checkpoints and
// plans carry, and the format-1 locks older checkpoints carry, which corpus_lock_accepts
// still accepts (and a format-1 lock of another corpus it refuses).
// Negative control: a lock of the corpus bytes alone (no key lines) misses some key the
// table says decides the data, so the check above can fail. Exit 1 on any failure.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "config/config.h"
#include "data/corpus.h"

static int failures;

static void lock_of(const Config *cfg, char lock[65], char bytes[65]) {
    Corpus c;
    corpus_generate(&c, cfg);
    memcpy(lock, c.lock, 65);
    Sha256 *h = sha256_begin();  // the corpus alone, for the negative control
    sha256_add(h, c.tokens, (size_t)c.n_tokens * sizeof *c.tokens);
    sha256_add(h, c.offsets, (size_t)(c.n + 1) * sizeof *c.offsets);
    sha256_add(h, c.split, (size_t)c.n);
    sha256_hex(h, bytes);
    corpus_free(&c);
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
    const char *pinned[2] = {"90c8653571490ba8e1edceff50dfc26753cb1bd2db79752d285547c85b862783",
                             "c25ab29642785280018a137b7b6632e07e4544d613bd5a6ed759c385c749942e"};
    const char *pinned_v1[2] = {"7927cd91f9038d1439ded321a857dbb5eacb77ec8ba1b74f1d302594158f5ea5",
                                "ddb4a4945983fda7c9b4025e9c15a0ff1dbdf146aab881cc84f11dc3894f492f"};
    int blind = 0, checked = 0;
    for (int global = 0; global <= 1; global++) {
        Config base;
        char err[1024];
        char *sets[1] = {global ? "train.sampler=global" : "train.sampler=bands"};
        if (config_load(&base, "configs/tiny.yaml", sets, 1, err, sizeof err)) {
            printf("FAIL loading configs/tiny.yaml: %s\n", err);
            return 1;
        }
        char lock0[65], bytes0[65];
        lock_of(&base, lock0, bytes0);
        if (strcmp(lock0, pinned[global])) {
            failures++;
            printf("FAIL tiny.yaml (%s sampler): lock %s, pinned %s\n", sets[0] + 14, lock0, pinned[global]);
        }
        Corpus c;
        corpus_generate(&c, &base);
        if (!corpus_lock_accepts(&c, &base, pinned_v1[global]) || corpus_lock_accepts(&c, &base, pinned_v1[!global])) {
            failures++;
            printf("FAIL tiny.yaml (%s sampler): the format-1 lock %.12s… not accepted, or the other sampler's accepted\n",
                   sets[0] + 14, pinned_v1[global]);
        }
        corpus_free(&c);
        // The sweep starts from auto bands, so that a world size can change alone.
        if (config_set(&base, "train.rank_bands=auto", err, sizeof err)) {
            printf("FAIL rank_bands=auto: %s\n", err);
            return 1;
        }
        lock_of(&base, lock0, bytes0);
        ConfigKey k;
        for (int i = 0; config_key(i, &k) == 0; i++) {
            char cand[16][128], before[4096], after[4096], set[4400];
            int n = candidates(&base, i, cand), used = 0;
            config_key_value(&base, i, before, sizeof before);
            for (int j = 0; j < n && !used; j++) {
                Config c = base;
                snprintf(set, sizeof set, "%s=%s", k.key, cand[j]);
                if (config_set(&c, set, err, sizeof err)) continue;
                config_key_value(&c, i, after, sizeof after);
                if (!strcmp(before, after)) continue;
                used = 1, checked++;
                char lock[65], bytes[65];
                lock_of(&c, lock, bytes);
                int in = config_key_in_lock(&base, i) || config_key_in_lock(&c, i), changed = strcmp(lock, lock0) != 0;
                if (in != changed) {
                    failures++;
                    printf("FAIL %s sampler: --set %s %s the lock, but the table says it is %sin the lock\n", sets[0] + 14, set,
                           changed ? "changes" : "does not change", in ? "" : "not ");
                }
                blind += in && !strcmp(bytes, bytes0);
            }
            // train.epochs exists for the global sampler only: refused under bands (tests/test_config.sh).
            if (!used && !global && !strcmp(k.key, "train.epochs")) continue;
            if (!used) {
                failures++;
                printf("FAIL %s sampler: no candidate value changes %s (%d tried)\n", sets[0] + 14, k.key, n);
            }
        }
    }
    if (blind == 0) {
        failures++;
        printf("FAIL negative control: every key in the lock also changes the corpus bytes (the key lines are untested)\n");
    }
    printf("data lock: %d key changes checked, %d of them in the lock but invisible in the corpus bytes alone; %d failure(s)\n",
           checked, blind, failures);
    return failures ? 1 : 0;
}
