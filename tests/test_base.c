// test_base.c — the base (src/base/) alone: built with plain cc, no MPI, no HDF5, no other
// layer (Makefile: build/test_base). Checks a few functions of each module and that die()
// without the job layer prints one line and exits with its code. Exit 0 when every check
// passes; each failure prints one line.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"

static int failures = 0;
#define CHECK(cond, ...) do { if (!(cond)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(void) {
    // report: control characters of quoted text become '?'
    char clean[32];
    text_clean(clean, sizeof clean, "a\nb\tc\x1b]0;x\x07", "");
    CHECK(!strcmp(clean, "a?b?c?]0;x?"), "text_clean: '%s'", clean);
    // ... a C1 control (U+009B, CSI) and each byte that is not UTF-8 too; other UTF-8 kept whole
    text_clean(clean, sizeof clean, "\xc2\x9b" "2J \xff\xc3 \xe2\x80\xa6 \xed\xa0\x80 \xc0\xaf", "");
    CHECK(!strcmp(clean, "?2J ?? \xe2\x80\xa6 ??? ??"), "text_clean (UTF-8): '%s'", clean);
    text_clean(clean, 6, "abcd\xe2\x80\xa6", "");
    CHECK(!strcmp(clean, "abcd"), "text_clean cut a character in half: '%s'", clean);
    // ... a bidi control (RLO U+202E, LRI U+2066, PDI U+2069, RLM U+200F) and a line
    // separator (U+2028) too: each reorders or splits what a terminal shows; other letters kept
    text_clean(clean, sizeof clean, "a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x81\xa9\xe2\x80\x8f" "d\xe2\x80\xa8" "\xe2\x80\xad\xe2\x80\xa9\xd8\x9c", "");
    CHECK(!strcmp(clean, "a?b?c??d????"), "text_clean (bidi): '%s'", clean);
    text_clean(clean, sizeof clean, "\xe2\x80\xa9\xe2\x81\xaa\xe2\x80\xa9\xe2\x80\xa7\xe2\x80\x8d", "");
    CHECK(!strcmp(clean, "?\xe2\x81\xaa?\xe2\x80\xa7\xe2\x80\x8d"), "text_clean (bidi neighbours): '%s'", clean);
    const char *s1 = text_safe("step-1\n  ok\tx"), *s2 = text_safe("y\n");
    CHECK(!strcmp(s1, "step-1?  ok?x") && !strcmp(s2, "y?"), "text_safe: '%s', '%s'", s1, s2);
    uint32_t cp = 0;
    CHECK(utf8_next("\xf4\x8f\xbf\xbf", &cp) == 4 && cp == 0x10FFFF && utf8_next("\xf4\x90\x80\x80", &cp) == 0 &&
          utf8_next("\xe0\x80\x80", &cp) == 0 && utf8_next("\xe2\x80", &cp) == 0, "utf8_next");
    // mem: saturating sizes
    CHECK(size_mul(UINT64_MAX / 2, 3) == UINT64_MAX, "size_mul does not saturate");
    CHECK(size_add(UINT64_MAX, 1) == UINT64_MAX, "size_add does not saturate");
    char b[32];
    format_bytes(1536, b, sizeof b);
    CHECK(!strcmp(b, "1.5 KiB"), "format_bytes: '%s'", b);
    // hint: did you mean
    const char *names[] = {"train", "prepare", "evaluate"};
    CHECK(closest_name("trian", names, 3) == names[0], "closest_name(trian)");
    CHECK(closest_name("zzzzzz", names, 3) == NULL, "closest_name(zzzzzz) should be NULL");
    // hint: the command a hint names repeats the user's arguments, shell-quoted
    char *sets[] = {"paths.outputs=my out", "seed=5"}, cmd[HINT_MAX];
    hint_args_set("it's.yaml", sets, 2);
    hint_command(cmd, sizeof cmd, "prepare", 0, " --x");
    const char *want = " prepare --config 'it'\\''s.yaml' --set 'paths.outputs=my out' --set seed=5 --x";
    CHECK(strlen(cmd) > strlen(want) && !strcmp(cmd + strlen(cmd) - strlen(want), want), "hint_command: '%s'", cmd);
    hint_command(cmd, sizeof cmd, "train", 2, NULL);  // not in a checkout: mpirun and this binary
    CHECK(!strncmp(cmd, "mpirun ", 7) && strstr(cmd, " -np 2 ") && strstr(cmd, "test_base train --config"), "hint_command(train): '%s'", cmd);
    // buf
    Buf buf = {0};
    for (int i = 0; i < 1000; i++) buf_printf(&buf, "%d,", i);
    CHECK(buf.n == 3890 && !strncmp(buf.s, "0,1,2,", 6), "buf: %zu bytes", buf.n);
    buf_free(&buf);
    // sha256 of "abc" (FIPS 180-2)
    char hex[65];
    Sha256 *h = sha256_begin();
    sha256_add(h, "abc", 3);
    sha256_hex(h, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "sha256: %s", hex);
    CHECK(is_sha256_hex(hex) && !is_sha256_hex("abc"), "is_sha256_hex");
    // fs: atomic write, regular read, removal of a tree
    char dir[] = "/tmp/ddptok-base.XXXXXX", path[64], why[128];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/a/b/file", dir);
    CHECK(write_file_atomic(path, "hello", 5) == 0, "write_file_atomic");
    size_t len = 0;
    char *text = file_read_regular(path, 100, &len, why, sizeof why);
    CHECK(text && len == 5 && !strcmp(text, "hello"), "file_read_regular: %s", text ? text : why);
    free(text);
    CHECK(file_read_regular(path, 4, &len, why, sizeof why) == NULL && strstr(why, "too large"), "max not enforced: %s", why);
    // made: what fs wrote is recorded, that very inode; a replacement, a link and a file the
    // user put beside it are not; compaction keeps what is still there
    char sub[96], other[96], link[96];
    snprintf(sub, sizeof sub, "%s/a/b", dir), snprintf(other, sizeof other, "%s/a/b/mine", dir);
    snprintf(link, sizeof link, "%s/a/b/link", dir);
    CHECK(made_is(path) && made_is(sub), "made: write_file_atomic's file or mkdir_p's directory not recorded");
    FILE *mine = fopen(other, "w");
    if (mine) fputs("user", mine), fclose(mine);
    CHECK(!made_is(other) && symlink(path, link) == 0 && !made_is(link), "made: a user's file or a link taken for ddptok's");
    CHECK(unlink(path) == 0 && rename(other, path) == 0 && !made_is(path), "made: a file replaced under a recorded name still counts");
    CHECK(write_file_atomic(path, "again", 5) == 0 && made_is(path), "made: a rewrite is not recorded");
    // ... and a line without a birth time (a file system that keeps none) proves nothing: a
    // freed inode number is reused at once, so a user's file would have it
    char rec[128], line[160], moved[96];
    struct stat pst;
    snprintf(rec, sizeof rec, "%s/" MADE_RECORD, sub), snprintf(moved, sizeof moved, "%s/a/b/made", dir);
    snprintf(line, sizeof line, "f %llu 0 made\n", (unsigned long long)(stat(path, &pst) == 0 ? pst.st_ino : 0));
    FILE *rf = fopen(rec, "a");
    if (rf) fputs(line, rf), fclose(rf);
    int sfd = open(sub, O_RDONLY | O_DIRECTORY);
    CHECK(rename(path, moved) == 0 && !made_is(moved) && made_unproven_at(sfd, "made") && !made_unproven_at(sfd, "link"),
          "made: a record line without a birth time counts as proof");
    CHECK(rename(moved, path) == 0 && made_is(path), "made: renamed back");
    close(sfd);
    int subfd = open(sub, O_RDONLY | O_DIRECTORY);
    CHECK(subfd >= 0 && unlink(link) == 0 && unlink(path) == 0 && made_compact_at(subfd, 0) == 0, "made_compact_at");
    struct stat st;
    CHECK(fstatat(subfd, MADE_RECORD, &st, 0) != 0, "made_compact_at: an emptied record kept");
    if (subfd >= 0) close(subfd);
    CHECK(remove_tree(dir) == 0 && access(dir, F_OK) != 0, "remove_tree");
    // clock
    double t0 = now_seconds();
    CHECK(now_seconds() >= t0, "now_seconds not monotonic");
    // die() without the job layer: one line, exit with its code
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        freopen("/dev/null", "w", stderr);
        die(EXIT_BAD_INPUT, "a test error");
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_BAD_INPUT, "die() without the job layer: status %d", status);
    if (!failures) printf("base: every check passed\n");
    return failures ? 1 : 0;
}
