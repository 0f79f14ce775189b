// test_base.c — the base (src/base/) alone: built with plain cc, no MPI, no HDF5, no other
// layer (Makefile: build/test_base). Checks a few functions of each module and that die()
// without the job layer prints one line and exits with its code. Exit 0 when every check
// passes; each failure prints one line.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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
    CHECK(rename(path, moved) == 0 && !made_is(moved) && made_verdict_at(sfd, "made") == MADE_UNPROVEN &&
          made_verdict_at(sfd, "link") == MADE_NOT, "made: a record line without a birth time counts as proof");
    CHECK(rename(moved, path) == 0 && made_verdict_at(sfd, "file") == MADE_CHANGED, "made: renamed back (a rename moves the ctime)");
    // ... and what ddptok wrote must be unchanged: the same inode written over in place (cp onto
    // it, > redirection) is not ddptok's any more, even with the same size and its mtime set
    // back (cp -a, touch -d: the ctime moves); the file as ddptok left it (the control) is.
    char kept[96];
    snprintf(kept, sizeof kept, "%s/a/b/kept", dir);
    CHECK(write_file_atomic(kept, "hello", 5) == 0 && write_file_atomic(path, "hello", 5) == 0 && made_is(path) && made_is(kept),
          "made: two files written");
    struct stat before;
    int in_place = open(path, O_WRONLY | O_TRUNC);
    CHECK(stat(path, &before) == 0 && in_place >= 0 && write(in_place, "user!", 5) == 5 && close(in_place) == 0, "an in-place write");
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    CHECK(utimensat(AT_FDCWD, path, times, 0) == 0 && made_verdict_at(sfd, "made") == MADE_NOT, "utimensat");
    CHECK(made_verdict_at(sfd, "kept") == MADE_YES && !made_is(path), "made: a file written over in place still counts as ddptok's");
    int fdk = open(kept, O_RDONLY);
    CHECK(fdk >= 0 && made_is_fd(kept, fdk), "made_is_fd: the file as ddptok wrote it");
    if (fdk >= 0) close(fdk);
    int fdp = open(path, O_RDONLY);
    CHECK(fdp >= 0 && !made_is_fd(path, fdp), "made_is_fd: a file written over in place");
    if (fdp >= 0) close(fdp);
    close(sfd);
    // fs: a file is created or replaced only over nothing or a regular file (never through a
    // link, never over a FIFO, a device or a directory: refused, left as they are); a hard
    // link's other name keeps its bytes; open_in_place refuses a file with two names.
    char fifo[96], dirp[96], lnk[96], hard[96], node[96], in[96];
    snprintf(fifo, sizeof fifo, "%s/a/b/fifo", dir), snprintf(dirp, sizeof dirp, "%s/a/b/dir", dir);
    snprintf(lnk, sizeof lnk, "%s/a/b/lnk", dir), snprintf(hard, sizeof hard, "%s/a/hard", dir);
    snprintf(node, sizeof node, "%s/a/b/null", dir), snprintf(in, sizeof in, "%s/a/b/in", dir);
    struct stat fst;
    CHECK(mkfifo(fifo, 0600) == 0 && write_file_atomic(fifo, "x", 1) != 0 && lstat(fifo, &fst) == 0 && S_ISFIFO(fst.st_mode),
          "write_file_atomic replaced a FIFO");
    CHECK(mkdir(dirp, 0700) == 0 && write_file_atomic(dirp, "x", 1) != 0 && lstat(dirp, &fst) == 0 && S_ISDIR(fst.st_mode),
          "write_file_atomic replaced a directory");
    CHECK(symlink(kept, lnk) == 0 && write_file_atomic(lnk, "x", 1) != 0 && lstat(lnk, &fst) == 0 && S_ISLNK(fst.st_mode),
          "write_file_atomic replaced a symbolic link");
    char *k = file_read_regular(kept, 100, &len, why, sizeof why);
    CHECK(k && !strcmp(k, "hello"), "write_file_atomic wrote through a symbolic link");
    free(k);
    if (mknod(node, S_IFCHR | 0600, makedev(1, 3)) == 0)  // root: a device node of our own, never /dev's
        CHECK(write_file_atomic(node, "x", 1) != 0 && lstat(node, &fst) == 0 && S_ISCHR(fst.st_mode), "write_file_atomic replaced a device");
    CHECK(linkat(AT_FDCWD, kept, AT_FDCWD, hard, 0) == 0 && write_file_atomic(kept, "new", 3) == 0, "write_file_atomic over a file with two names");
    k = file_read_regular(hard, 100, &len, why, sizeof why);
    CHECK(k && !strcmp(k, "hello"), "write_file_atomic wrote into a hard link's other name: '%s'", k ? k : why);
    free(k);
    int created = 0, ip = open_in_place(hard, O_RDWR, &created, why, sizeof why);
    CHECK(ip >= 0 && !created, "open_in_place: a file with one name refused: %s", why);  // kept was replaced: hard has one name now
    if (ip >= 0) close(ip);
    CHECK(linkat(AT_FDCWD, hard, AT_FDCWD, in, 0) == 0 && open_in_place(in, O_RDWR, &created, why, sizeof why) < 0 && strstr(why, "hard link"),
          "open_in_place took a file with two names: %s", why);
    CHECK(open_in_place(fifo, O_WRONLY | O_APPEND, &created, why, sizeof why) < 0 && strstr(why, "FIFO"), "open_in_place took a FIFO");
    CHECK(open_in_place(lnk, O_RDWR, &created, why, sizeof why) < 0 && strstr(why, "symbolic link"), "open_in_place followed a link");
    unlink(fifo), rmdir(dirp), unlink(lnk), unlink(hard), unlink(node), unlink(in), unlink(kept);
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
