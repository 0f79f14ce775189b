// fuzz_config.c — libFuzzer target for the config parser (src/config.c): the input is a
// YAML config file, or, after a first line "--set", one KEY=VALUE override applied to the
// defaults. Whatever is accepted must be emitted and re-parsed to the same emission (the
// property of tests/test_config_roundtrip.c); a difference aborts (a finding), as does a
// crash, a sanitizer report or an exit (die/ASSERT: the parser must return its errors).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    default_signals();
    return 0;
}

static void must_roundtrip(const Config *c) {
    char *y1 = config_to_yaml(c), err[1024];
    for (char *p; (p = strstr(y1, "  # auto\n"));) memmove(p, p + 8, strlen(p + 8) + 1);  // at a line's end only
    Config d;
    if (config_from_yaml(&d, y1, "emitted", err, sizeof err)) {
        fprintf(stderr, "fuzz_config: accepted, but the emission does not re-parse: %s\n%s", err, y1);
        abort();
    }
    char *y2 = config_to_yaml(&d);
    if (strcmp(y1, y2) != 0) {
        fprintf(stderr, "fuzz_config: re-parsed to another config:\n%s---\n%s", y1, y2);
        abort();
    }
    free(y1), free(y2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1), err[1024];
    memcpy(text, data, size);
    text[size] = 0;
    Config c;
    int ok;
    if (size > 6 && !memcmp(text, "--set\n", 6)) {
        ok = config_from_yaml(&c, "", "defaults", err, sizeof err) == 0 && config_set(&c, text + 6, err, sizeof err) == 0;
    } else {
        ok = config_from_yaml(&c, text, "fuzz.yaml", err, sizeof err) == 0;
    }
    if (ok) must_roundtrip(&c);
    free(text);
    return 0;
}
