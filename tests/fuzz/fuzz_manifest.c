// fuzz_manifest.c — libFuzzer target for a checkpoint's manifest (SHA256SUMS, sha256sum
// format), through checkpoint_verify_manifest, the check checkpoint_load makes before HDF5
// sees a rank file: the input is the manifest of rank-0000.h5, whose bytes are fixed.
// Property (the input naming no rank-0000.h5 itself), followed by the right line for
// rank-0000.h5: an input of blank lines only (whitespace and NULs: a line ends at its NUL)
// verifies, so an entry is never lost to what precedes it; an input with any other line is
// refused, since every non-blank line must be an entry for a rank file that is there (only
// rank-0000.h5 is, and its line is the one appended). A difference aborts (a finding), as
// does a crash, a sanitizer report, a leak or an exit.
// Negative control (tests/test_fuzz.sh manifest_property_control): with
// DDPTOK_FUZZ_MANIFEST_LENIENT=1 the harness writes only the lines that parse as "SHA-256 name",
// dropping the others as the verifier once ignored them; an input holding such a line must
// then abort with the second finding.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "fuzz_common.h"
#include "store/checkpoint.h"

static const char image[] = "the bytes of rank-0000.h5";  // what the manifest vouches for
static char dir[256], file[300], manifest[300], good[100];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    default_signals();
    snprintf(dir, sizeof dir, "%s/ddptok-fuzz-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    if (mkdir_p(dir)) abort();
    snprintf(file, sizeof file, "%s/rank-0000.h5", dir);
    snprintf(manifest, sizeof manifest, "%s/" CHECKPOINT_MANIFEST, dir);
    FILE *f = fopen(file, "wb");  // the rank file is there (the manifest's lines must name files that are)
    if (!f || fwrite(image, 1, sizeof image - 1, f) != sizeof image - 1 || fclose(f) != 0) abort();
    char sum[65];
    Sha256 *h = sha256_begin();
    sha256_add(h, image, sizeof image - 1);
    sha256_hex(h, sum);
    snprintf(good, sizeof good, "\n%s  rank-0000.h5\n", sum);
    return 0;
}

static int lenient = -1;  // DDPTOK_FUZZ_MANIFEST_LENIENT=1: the negative control

static int verify(const uint8_t *data, size_t size, const char *tail) {
    if (lenient < 0) lenient = getenv("DDPTOK_FUZZ_MANIFEST_LENIENT") && !strcmp(getenv("DDPTOK_FUZZ_MANIFEST_LENIENT"), "1");
    FILE *f = fopen(manifest, "wb");
    if (!f) abort();
    if (!lenient) {
        if (fwrite(data, 1, size, f) != size) abort();
    } else {  // only the lines that parse as "SHA-256 name" (each up to its first NUL)
        char line[4096], hex[65], name[1024];
        for (size_t i = 0; i < size;) {
            const uint8_t *nl = memchr(data + i, '\n', size - i);
            size_t n = nl ? (size_t)(nl - (data + i)) : size - i, k = n < sizeof line - 1 ? n : sizeof line - 1;
            memcpy(line, data + i, k), line[k] = 0;
            if (sscanf(line, "%64s %1023s", hex, name) == 2 && is_sha256_hex(hex) && fprintf(f, "%s\n", line) < 0) abort();
            i += n + 1;
        }
    }
    if ((tail && fputs(tail, f) == EOF) || fclose(f) != 0) abort();
    return checkpoint_verify_manifest(file, image, sizeof image - 1);
}

// Whether some line of the input holds a byte other than whitespace before its first NUL.
static int has_content(const uint8_t *data, size_t size) {
    int in_nul = 0;
    for (size_t i = 0; i < size; i++) {
        uint8_t c = data[i];
        if (c == '\n') in_nul = 0;
        else if (c == 0) in_nul = 1;
        else if (!in_nul && !(c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f')) return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    verify(data, size, NULL);
    if (memmem(data, size, "rank-0000.h5", 12)) return 0;
    int content = has_content(data, size), rc = verify(data, size, good);
    if (!content && rc != 0) {
        fprintf(stderr, "fuzz_manifest: the right entry for rank-0000.h5 after blank lines was not found:\n%.*s\n", (int)size, data);
        abort();
    }
    if (content && rc == 0) {
        fprintf(stderr, "fuzz_manifest: a line that is no entry for a rank file that is there was accepted:\n%.*s\n", (int)size, data);
        abort();
    }
    return 0;
}
