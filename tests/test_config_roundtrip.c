// test_config_roundtrip.c — property test over the whole key table (config_key): every
// value a config accepts, from --set or from a YAML file, is emitted by config_to_yaml
// and re-parsed by config_from_yaml to the same config (the same emission, the same path
// bytes). Paths get hostile strings (quotes, backslashes, newlines, colons, '#', leading
// blanks, control characters, YAML line breaks U+0085/U+2028/U+2029, non-characters,
// astral code points) and random code-point strings. Negative controls: out-of-range
// numbers and unknown enum names are refused, and the hostile strings do break the naive
// emission `"%s"` (so they test something). Also: the ranks' agreement digest
// (config_run_digest) equals the defaults' exactly when config_diff_run finds no difference
// from them, for every accepted --set (paths.* change neither). And worlds beyond MAX_BANDS
// ranks: auto bands that tile the lengths, config_band_of against the nearest band by looking
// at each, written `auto` beyond MAX_BANDS and as the list up to it (YAML and data lock), the
// global sampler's W above the lengths; controls: partitioning by length there, and a list of
// MAX_BANDS + 1 bands, refused. Exit 1 on any failure, printing it.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

static int failures, accepted, refused;
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) {  // xorshift64*
    rng_state ^= rng_state >> 12, rng_state ^= rng_state << 25, rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static double uniform(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }

// The emission without the "# auto" remark (a re-parsed config has explicit bands): at a
// line's end only, where the emitter puts it — a quoted value may hold the same text.
static char *emission(const Config *c) {
    char *y = config_to_yaml(c), *p;
    while ((p = strstr(y, "  # auto\n"))) memmove(p, p + 8, strlen(p + 8) + 1);
    return y;
}

// The property: emit, re-parse, emit again; both emissions and the path bytes identical.
static void roundtrip(const Config *c, const char *what) {
    accepted++;
    char *y1 = emission(c), err[1024];
    Config d;
    if (config_from_yaml(&d, y1, "emitted", err, sizeof err)) {
        failures++;
        printf("FAIL %s: the emission does not re-parse: %s\n", what, err);
    } else {
        char *y2 = emission(&d);
        if (strcmp(y1, y2) != 0 || strcmp(c->paths.outputs, d.paths.outputs) != 0 ||
            strcmp(c->paths.artifacts, d.paths.artifacts) != 0) {
            failures++;
            printf("FAIL %s: re-parsed to another config\n--- emitted\n%s--- re-emitted\n%s", what, y1, y2);
        }
        free(y2);
    }
    free(y1);
}

static void defaults(Config *c) {
    char err[512];
    if (config_from_yaml(c, "", "defaults", err, sizeof err)) printf("FAIL defaults: %s\n", err), exit(1);
}

// agree_on_run's fast path is sound only if equal digests mean config_diff_run finds nothing.
static int digests_same, digests_differ;
static void digest_agrees(const Config *c, const char *what) {
    Config d;
    defaults(&d);
    char dc[65], dd[65], diff[600];
    config_run_digest(c, dc), config_run_digest(&d, dd);
    int same = strcmp(dc, dd) == 0, differs = config_diff_run(c, &d, diff, sizeof diff);
    same ? digests_same++ : digests_differ++;
    if (same == differs) failures++, printf("FAIL %s: digest %s but config_diff_run says %s\n", what, same ? "equal" : "differs",
                                            differs ? diff : "no difference");
}

// --set KEY=VALUE on the defaults: accepted values must round-trip; `want` 1 (must be
// accepted), 0 (must be refused) or -1 (either).
static void try_set(const char *key, const char *value, int want) {
    Config c;
    defaults(&c);
    char a[4200], err[1024];
    snprintf(a, sizeof a, "%s=%s", key, value);
    int ok = config_set(&c, a, err, sizeof err) == 0;
    if (want >= 0 && ok != want) {
        failures++;
        printf("FAIL --set %s: %s, expected %s (%s)\n", a, ok ? "accepted" : "refused", want ? "accepted" : "refused",
               ok ? "" : err);
    }
    if (ok) roundtrip(&c, a), digest_agrees(&c, a);
    else refused++;
}

// UTF-8 of code point cp into out; returns the bytes written.
static int utf8(uint32_t cp, char *out) {
    if (cp < 0x80) return out[0] = (char)cp, 1;
    if (cp < 0x800) return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3F)), out[2] = (char)(0x80 | (cp & 0x3F)), 3;
    out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3F)), out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

// A path key set from a YAML file as a double-quoted string of \U escapes (any code point
// reaches the parser); accepted, it must hold exactly the UTF-8 of `cps` and round-trip.
static int naive_breaks, file_paths, file_refused;
// The value of path key `key` (paths.outputs, paths.artifacts, train.init_from) in c.
static const char *path_of(const Config *c, const char *key) {
    return !strcmp(key, "paths.outputs") ? c->paths.outputs : !strcmp(key, "paths.artifacts") ? c->paths.artifacts : c->train.init_from;
}

static void try_path_file(const char *key, const uint32_t *cps, int n) {
    const char *leaf = strrchr(key, '.') + 1;
    char yaml[8192], want[4096];
    int y = snprintf(yaml, sizeof yaml, "%.*s:\n  %s: \"", (int)(leaf - 1 - key), key, leaf), w = 0;
    for (int i = 0; i < n; i++) {
        y += snprintf(yaml + y, sizeof yaml - (size_t)y, "\\U%08X", cps[i]);
        w += utf8(cps[i], want + w);
    }
    snprintf(yaml + y, sizeof yaml - (size_t)y, "\"\n");
    want[w] = 0;
    Config c;
    char err[1024];
    file_paths++;
    if (config_from_yaml(&c, yaml, "hostile.yaml", err, sizeof err)) {
        refused++, file_refused++;
        return;
    }
    const char *got = path_of(&c, key);
    if (strcmp(got, want) != 0) failures++, printf("FAIL %s: parsed to other bytes than the escapes say\n", key);
    // Negative control: the same value emitted naively as "%s" does not come back.
    Config d;
    char naive[4200];
    snprintf(naive, sizeof naive, "%.*s:\n  %s: \"%s\"\n", (int)(leaf - 1 - key), key, leaf, want);
    if (config_from_yaml(&d, naive, "naive", err, sizeof err) || strcmp(path_of(&d, key), want) != 0)
        naive_breaks++;
    roundtrip(&c, yaml);
    digest_agrees(&c, yaml);  // a path: the digest must not move
}

// Applies the assignments in order to the defaults (each one validated, as --set does); 0 when
// every one is accepted, else the refusal in err.
static int set_all(Config *c, const char *const *sets, char *err, int len) {
    defaults(c);
    for (; *sets; sets++)
        if (config_set(c, *sets, err, len)) return -1;
    return 0;
}

// Worlds beyond MAX_BANDS (docs/scaling.md): train.rank_bands: auto, each rank's band computed
// when asked for (config_band, config_band_of), written `auto` beyond MAX_BANDS ranks (the YAML,
// the digests, the data lock) and as the list of every band up to it, as before.
static void large_worlds(void) {
    static const int cases[][3] = {{2, 16, 128}, {3, 16, 18}, {256, 16, 300}, {257, 16, 300}, {300, 16, 400}, {4096, 16, 8191}};
    char err[1024], a[3][64], what[96];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int W = cases[i][0], min = cases[i][1], max = cases[i][2];
        snprintf(a[0], sizeof a[0], "data.max_length=%d", max), snprintf(a[1], sizeof a[1], "data.min_length=%d", min);
        snprintf(a[2], sizeof a[2], "train.world_size=%d", W);
        const char *sets[] = {"train.rank_bands=auto", a[0], a[1], a[2], NULL};
        snprintf(what, sizeof what, "W = %d, rank_bands: auto over [%d, %d]", W, min, max);
        Config c;
        if (set_all(&c, sets, err, sizeof err)) {
            failures++, printf("FAIL %s: refused: %s\n", what, err);
            continue;
        }
        int next = min, bad = 0;
        for (int r = 0; r < W; r++) {  // the bands tile the lengths, in order, none empty
            int lo, hi;
            config_band(&c, r, &lo, &hi);
            bad += lo != next || hi < lo;
            next = hi + 1;
        }
        bad += next != max + 1;
        for (int len = min - 3; len <= max + 3; len++) {  // O(1) band_of = the nearest band by looking at each
            int best = 0, gap_best = 1 << 30;
            for (int r = 0; r < W; r++) {
                int lo, hi;
                config_band(&c, r, &lo, &hi);
                int gap = len < lo ? lo - len : len > hi ? len - hi : 0;
                if (gap < gap_best) best = r, gap_best = gap;
            }
            bad += config_band_of(&c, len) != best;
        }
        char *y = config_to_yaml(&c), lock[16384];
        int as_auto = strstr(y, "rank_bands: auto\n") != NULL, as_list = strstr(y, "rank_bands: [[") != NULL;
        config_lock_fields(&c, lock, sizeof lock);
        char band0[32];
        snprintf(band0, sizeof band0, "bands=%d-", min);
        int lock_auto = strstr(lock, "bands=auto;") != NULL, lock_list = strstr(lock, band0) != NULL;
        if (bad || (W > MAX_BANDS ? !as_auto || !lock_auto : !as_list || !lock_list))
            failures++, printf("FAIL %s: %d band(s) wrong; emitted %s, data lock %s\n", what, bad, as_auto ? "auto" : as_list ? "a list" : "?",
                               lock_auto ? "auto" : lock_list ? "a list" : "?");
        free(y);
        roundtrip(&c, what), digest_agrees(&c, what);
    }
    // Where no band decides anything (the global sampler, another partition), W may exceed the lengths.
    const char *global[] = {"train.rank_bands=auto", "train.sampler=global", "train.partition=balanced", "train.world_size=4096", NULL};
    Config c;
    if (set_all(&c, global, err, sizeof err)) failures++, printf("FAIL W = 4096, global sampler, balanced, lengths [16, 128]: refused: %s\n", err);
    else roundtrip(&c, "W = 4096, global sampler, balanced"), digest_agrees(&c, "W = 4096, global sampler, balanced");
    // Controls: partitioning by length there needs a band per rank; a list holds at most MAX_BANDS.
    const char *by_length[] = {"train.rank_bands=auto", "train.sampler=global", "train.partition=bands", "train.world_size=4096", NULL};
    if (!set_all(&c, by_length, err, sizeof err)) failures++, printf("FAIL W = 4096, global sampler, partition bands, lengths [16, 128]: accepted\n");
    static char list[8192];
    int n = snprintf(list, sizeof list, "train.rank_bands=[");
    for (int r = 0; r < MAX_BANDS + 1; r++) n += snprintf(list + n, sizeof list - (size_t)n, "%s[%d, %d]", r ? ", " : "", 1 + 2 * r, 2 + 2 * r);
    snprintf(list + n, sizeof list - (size_t)n, "]");
    const char *too_long[] = {"data.max_length=600", "data.min_length=1", list, NULL};
    if (!set_all(&c, too_long, err, sizeof err)) failures++, printf("FAIL a list of %d bands: accepted\n", MAX_BANDS + 1);
    else if (!strstr(err, "at most 256")) failures++, printf("FAIL a list of %d bands: refused, but not for its length: %s\n", MAX_BANDS + 1, err);
}

int main(void) {
    static const char *hostile[] = {"q\"o", "a\\b", "o';touch INJECTED;'", "x: y", "a #b", " lead", "trail ", "#hash",
                                    "-dash", "[x]", "{x}", "&a", "*a", "!t", "%p", "@a", "`b`", "|x", ">x", "'", "\"",
                                    "new\nline", "tab\there", "ü/ñ/日本/🙂", "\\n", "a\\\\\"b", "---", "...", "null", "~",
                                    "  # auto", "x  # auto"};  // the emitter's own remark, inside a value
    static const uint32_t specials[] = {'"', '\\', '\n', '\r', '\t', ':', '#', ' ', 0x01, 0x1F, 0x7F, 0x80, 0x85, 0x9F,
                                        0xA0, 0x2028, 0x2029, 0xFEFF, 0xFFFD, 0xFFFE, 0xFFFF, 0x10000, 0x1F642, 0x10FFFF,
                                        0xE000, 0xD7FF, 'a', '/', '\'', '!', '&', '*', '%', '@', '`', '|', '>', '{', '[', ','};
    ConfigKey k;
    int keys = 0, path_keys = 0;
    for (int i = 0; config_key(i, &k) == 0; i++, keys++) {
        char v[128];
        switch (k.kind) {
        case 'i':
        case 'u': {
            double picks[] = {k.min, k.max, k.min + 1, k.max - 1, (k.min + k.max) / 2};
            for (int j = 0; j < 5; j++) snprintf(v, sizeof v, "%.0f", picks[j]), try_set(k.key, v, -1);
            for (int j = 0; j < 40; j++) snprintf(v, sizeof v, "%.0f", k.min + (double)(int64_t)(uniform() * (k.max - k.min))), try_set(k.key, v, -1);
            snprintf(v, sizeof v, "%.0f", k.min - 1), try_set(k.key, v, 0);
            snprintf(v, sizeof v, "%.0f", k.max + 1), try_set(k.key, v, 0);
            try_set(k.key, "1.5", 0);
            try_set(k.key, "auto", -1);  // train.world_size, train.checkpoint_every take it; the others refuse it
            break;
        }
        case 'd':
            for (int j = 0; j < 60; j++) {
                double x = j == 0 ? k.min : j == 1 ? k.max : j % 2 ? k.min + uniform() * (k.max - k.min)
                                                             : k.max * uniform() * __builtin_pow(10, -300 * uniform());
                snprintf(v, sizeof v, "%.17g", x);
                try_set(k.key, v, -1);
            }
            // Subnormals, as hex floats and as their decimal emission: accepted or not,
            // an accepted one must come back (0x1p-1074 was accepted and its emission refused).
            static const char *tiny[] = {"0x1p-1074", "0x1.8p-1060", "4.9406564584124654e-324", "1e-310", "1e-400"};
            for (int j = 0; j < 5; j++) try_set(k.key, tiny[j], -1);
            snprintf(v, sizeof v, "%.17g", k.max * 2 + 1), try_set(k.key, v, 0);
            try_set(k.key, "nan", 0), try_set(k.key, "inf", 0);
            break;
        case 'e':
            for (int j = 0; j < k.n_names; j++) try_set(k.key, k.names[j], 1);
            try_set(k.key, "bogus", 0);
            break;
        case 'b':
            try_set(k.key, "auto", 1);
            for (int j = 0; j < 40; j++) {  // two bands over the default lengths [16, 128]
                int a = 16 + (int)(uniform() * 60), b = a + (int)(uniform() * 20), c = b + 1 + (int)(uniform() * 20);
                snprintf(v, sizeof v, "[[%d, %d], [%d, %d]]", 16, a, b, c > 128 ? 128 : c);
                try_set(k.key, v, -1);
            }
            try_set(k.key, "[[1e300, 20], [21, 30]]", 0), try_set(k.key, "[[16, 20], [21, -1e300]]", 0);
            break;
        case 'l':  // a pair of numbers in [min, max]
            for (int j = 0; j < 40; j++) {
                double a = k.min + uniform() * (k.max - k.min), b = j == 0 ? k.min : j == 1 ? k.max : k.min + uniform() * (k.max - k.min);
                snprintf(v, sizeof v, "[%.17g, %.17g]", a, b);
                try_set(k.key, v, 1);
            }
            snprintf(v, sizeof v, "[%.17g, %.17g]", k.min, k.max * 2 + 1), try_set(k.key, v, 0);
            try_set(k.key, "[0.5]", 0), try_set(k.key, "0.5", 0), try_set(k.key, "[nan, 0.5]", 0);
            break;
        case 'p': {
            path_keys++;
            for (size_t j = 0; j < sizeof hostile / sizeof *hostile; j++) try_set(k.key, hostile[j], -1);
            for (size_t j = 0; j < sizeof hostile / sizeof *hostile; j++) {  // from a file, as code points
                uint32_t cps[64];
                int n = 0;
                for (const unsigned char *p = (const unsigned char *)hostile[j]; *p && n < 64;) {
                    uint32_t cp = *p;
                    int len = cp < 0x80 ? 1 : cp < 0xE0 ? 2 : cp < 0xF0 ? 3 : 4;
                    if (len > 1) cp &= 0x3Fu >> (len - 1);
                    for (int q = 1; q < len; q++) cp = cp << 6 | (p[q] & 0x3Fu);
                    cps[n++] = cp, p += len;
                }
                try_path_file(k.key, cps, n);
            }
            for (int j = 0; j < 300; j++) {  // random strings: specials and any code point
                uint32_t cps[40];
                int n = 1 + (int)(uniform() * 39);
                for (int q = 0; q < n; q++) {
                    uint32_t cp = uniform() < 0.5 ? specials[next_u64() % (sizeof specials / sizeof *specials)]
                                                  : (uint32_t)(next_u64() % 0x110000);
                    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';  // YAML refuses surrogate escapes
                    cps[q] = cp;
                }
                try_path_file(k.key, cps, n);
            }
            uint32_t nul[3] = {'a', 0, 'b'};  // an embedded NUL would be cut: refused
            int before = refused;
            try_path_file(k.key, nul, 3);
            if (refused != before + 1) failures++, printf("FAIL %s: a path with an escaped NUL was accepted\n", k.key);
            break;
        }
        default: failures++, printf("FAIL %s: unknown kind '%c'\n", k.key, k.kind);
        }
    }
    large_worlds();
    if (naive_breaks < 100) failures++, printf("FAIL negative control: only %d hostile paths break the naive emission\n", naive_breaks);
    // Only the escaped NUL of each path key may be refused: every other string is a path.
    if (file_refused > path_keys) failures++, printf("FAIL %d of %d path strings refused from a file\n", file_refused, file_paths);
    if (digests_same < 100 || digests_differ < 100)  // both sides of the property were exercised
        failures++, printf("FAIL agreement digest: only %d equal and %d differing digests tested\n", digests_same, digests_differ);
    printf("%d keys, %d accepted values round-trip, %d refused, %d hostile paths break a naive \"%%s\" emission, "
           "agreement digest = config_diff_run on %d equal and %d differing, %d failure(s)\n",
           keys, accepted, refused, naive_breaks, digests_same, digests_differ, failures);
    return failures ? 1 : 0;
}
