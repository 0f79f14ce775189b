// asan_canary.c — a deliberate heap overflow: tests/test_sanitize.sh builds it with the
// same sanitizer flags and expects the report, so a quiet ddptok-asan means "no error
// found", not "the sanitizer was not there".
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    (void)argv;
    int *v = malloc(4 * sizeof *v);
    for (int i = 0; i < 4; i++) v[i] = i;
    int x = v[argc + 3];  // argc >= 1: one past the end
    free(v);
    printf("%d\n", x);
    return 0;
}
