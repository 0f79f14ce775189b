// clean.c — `clean --scope generated [--dry-run]`: removes what the commands declare they
// write (Command.outputs) and ddptok recorded making (base/made.h), and nothing else. A name
// proves nothing (a user's outputs/data/thesis.tex, an artifacts/checkpoints.old-X/ of
// their own), so each path is removed only when its record names that very inode: a file
// ddptok made, a directory ddptok made once everything in it that ddptok made is gone and
// nothing else is in it (a directory ddptok did not make keeps everything but what ddptok
// recorded making in it). What is not ddptok's is left as it is and listed ("left: PATH (not
// made by ddptok)"): a user's file, a symbolic link (never followed), a copy, a directory an
// older ddptok made before it kept records. Every level is opened O_NOFOLLOW and removed
// relative to its directory's descriptor, so a link swapped in meanwhile is not followed.
// Exit 0: nothing left; 1: something was left (listed); 2: a removal failed.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/commands.h"
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"

typedef struct {
    int dry_run;        // --dry-run
    const char *scope;  // --scope generated
} CleanOptions;

// One sweep's tally: paths removed (a wholly removed directory counts once), paths left
// because they are not ddptok's, removals that failed.
typedef struct {
    int dry_run;
    int removed, left, failed;
} Sweep;

// The entries of the directory open as `fd` (not "." or "..", not the record), sorted; NULL
// and -1 when it cannot be read.
static int list_entries(int fd, char ***names) {
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d) {
        if (dup_fd >= 0) close(dup_fd);
        return *names = NULL, -1;
    }
    rewinddir(d);  // the offset is shared with fd, which an earlier listing moved
    int n = 0, cap = 16;
    char **list = xmalloc((size_t)cap * sizeof *list);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, MADE_RECORD)) continue;
        if (n == cap) {
            list = realloc(list, (size_t)(cap *= 2) * sizeof *list);
            ASSERT(list);
        }
        list[n++] = strdup(e->d_name);
        ASSERT(list[n - 1]);
    }
    closedir(d);
    for (int i = 1; i < n; i++)  // insertion sort: a listing reads the same every time
        for (int k = i; k > 0 && strcmp(list[k - 1], list[k]) > 0; k--) {
            char *t = list[k];
            list[k] = list[k - 1], list[k - 1] = t;
        }
    *names = list;
    return n;
}

static void free_entries(char **names, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}

// Why a path its record lists is left on a file system that keeps no birth time.
#define UNPROVEN "listed as made by ddptok, but this file system keeps no birth time: it cannot be told from a file put there later"

// 1 when everything in the directory open as `fd` is ddptok's, all the way down.
static int wholly_made(int fd, int depth) {
    char **names;
    int n = list_entries(fd, &names), all = n >= 0 && depth <= 32;
    for (int i = 0; all && i < n; i++) {
        struct stat st;
        if (!made_is_at(fd, names[i]) || fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) all = 0;
        else if (S_ISDIR(st.st_mode)) {
            int sub = openat(fd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            all = sub >= 0 && wholly_made(sub, depth + 1);
            if (sub >= 0) close(sub);
        }
    }
    free_entries(names, n);
    return all;
}

// Entry `name` of the directory open as `parent` (`path` in messages): removed when ddptok
// made it; a directory entry by entry, then itself once nothing else is in it. A directory
// ddptok did not make stays, but what ddptok recorded making in it goes. `quiet`: a
// directory above is wholly ddptok's and was listed as one line.
static void sweep(Sweep *s, int parent, const char *name, const char *path, int depth, int quiet) {
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return;  // not there
    int is_dir = S_ISDIR(st.st_mode), made = made_is_at(parent, name), unproven = !made && made_unproven_at(parent, name);
    const char *verb = s->dry_run ? "would remove" : "removing";
    if (made && !is_dir) {
        if (!quiet) say("%s %s\n", verb, text_safe(path)), s->removed++;
        if (!s->dry_run && unlinkat(parent, name, 0) != 0) s->failed++, error("%s: cannot remove: %s", path, strerror(errno));
        return;
    }
    int fd = is_dir ? openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (!made && (fd < 0 || faccessat(fd, MADE_RECORD, F_OK, AT_SYMLINK_NOFOLLOW) != 0)) {  // nothing of ddptok's in it
        s->left++;
        say("left: %s%s (%s)\n", text_safe(path), is_dir ? "/" : "", unproven ? UNPROVEN : "not made by ddptok");
        if (fd >= 0) close(fd);
        return;
    }
    if (fd < 0 || depth > 32) {
        s->failed++, error("%s: cannot remove: %s", path, fd < 0 ? strerror(errno) : "more than 32 directory levels");
        if (fd >= 0) close(fd);
        return;
    }
    if (made && !quiet && wholly_made(fd, depth)) say("%s %s/\n", verb, text_safe(path)), s->removed++, quiet = 1;
    int left = s->left, failed = s->failed;
    char **names;
    int n = list_entries(fd, &names);
    if (n < 0) s->failed++, error("%s: cannot list: %s", path, strerror(errno));
    for (int i = 0; i < n; i++) {
        char sub[1400];
        snprintf(sub, sizeof sub, "%s/%s", path, names[i]);
        sweep(s, fd, names[i], sub, depth + 1, quiet);
    }
    free_entries(names, n);
    int foreign = s->left > left, kept = !made || foreign || s->failed > failed;
    if (!s->dry_run && !kept) {  // nothing but its record in it now
        if (unlinkat(fd, MADE_RECORD, 0) != 0 && errno != ENOENT)
            kept = 1, s->failed++, error("%s/%s: cannot remove: %s", path, MADE_RECORD, strerror(errno));
        else if (unlinkat(parent, name, AT_REMOVEDIR) != 0) {
            kept = 1;
            if (errno == ENOTEMPTY || errno == EEXIST) foreign = 1, s->left++;  // something arrived meanwhile
            else s->failed++, error("%s: cannot remove: %s", path, strerror(errno));
        }
    }
    if (!s->dry_run && kept) made_compact_at(fd, made);  // what stays of ddptok's is still known as its
    if (!made) s->left++, say("left: %s/ (%s)\n", text_safe(path), unproven ? UNPROVEN : "not made by ddptok");
    else if (foreign) say("left: %s/ (made by ddptok, but holds what it did not make)\n", text_safe(path));
    close(fd);
}

// The names under `root` that a declared output matches (a pattern: every entry it matches).
static int output_matches(int rootfd, const CommandOutput *o, char ***out) {
    if (!strpbrk(o->name, "*?[")) {
        char **one = xmalloc(sizeof *one);
        one[0] = strdup(o->name);
        ASSERT(one[0]);
        *out = one;
        return 1;
    }
    char **names;
    int n = list_entries(rootfd, &names), k = 0;
    for (int i = 0; i < n; i++)
        if (fnmatch(o->name, names[i], FNM_PERIOD) == 0) names[k++] = names[i];
        else free(names[i]);
    *out = names;
    return n < 0 ? 0 : k;
}

#define DDPTOK_COMMAND_ROW(name) &cmd_##name,
static const Command *const commands[] = {DDPTOK_COMMANDS(DDPTOK_COMMAND_ROW)};
#undef DDPTOK_COMMAND_ROW

// Every output each command declares under `root`, once each.
static void sweep_root(Sweep *s, OutputRoot which, const char *root) {
    int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) return;  // nothing written there yet
    char **done = NULL;
    int n_done = 0;
    for (size_t c = 0; c < sizeof commands / sizeof *commands; c++)
        for (const CommandOutput *o = commands[c]->outputs; o && o->root; o++) {
            if (o->root != which) continue;
            char **names;
            int n = output_matches(rootfd, o, &names);
            for (int i = 0; i < n; i++) {
                int seen = 0;
                for (int k = 0; k < n_done && !seen; k++) seen = !strcmp(done[k], names[i]);
                if (seen) {
                    free(names[i]);
                    continue;
                }
                char path[1200];
                snprintf(path, sizeof path, "%s/%s", root, names[i]);
                sweep(s, rootfd, names[i], path, 0, 0);
                done = realloc(done, (size_t)(n_done + 1) * sizeof *done);
                ASSERT(done);
                done[n_done++] = names[i];
            }
            free(names);
        }
    // The root itself stays (the config names it): its record keeps only what is still there.
    if (!s->dry_run) made_compact_at(rootfd, 0);
    free_entries(done, n_done);
    close(rootfd);
}

static int clean_run(App *app) {
    const CleanOptions *o = app->opts;
    Sweep s = {.dry_run = o->dry_run};
    sweep_root(&s, UNDER_OUTPUTS, app->cfg.paths.outputs);
    sweep_root(&s, UNDER_ARTIFACTS, app->cfg.paths.artifacts);  // paths.outputs itself, too, may be: other names
    say("clean: %d generated path(s) %s", s.removed, s.dry_run ? "would be removed (dry run: nothing changed)" : "removed");
    if (s.left) say(", %d left (not made by ddptok: the left: lines above)", s.left);
    say("%s\n", s.failed ? ", some could not be removed" : "");
    return s.failed ? EXIT_BAD_INPUT : s.left ? EXIT_CHECK_FAILED : 0;
}

const Command cmd_clean = {
    .name = "clean",
    .checks_every_root = 1,  // removes nothing of another config (claim.h)
    .run = clean_run,
    .distributed = 0,
    .summary = "list (and without --dry-run remove) what ddptok made: the outputs each command declares, where ddptok recorded "
               "making them; anything else there is left and listed (exit 1)",
    .options = (const CommandOption[]){
        OPTION_CHOICE("--scope", CleanOptions, scope, "generated", ((const char *const[]){"generated", NULL}),
                      "the only scope: what ddptok made", .required = 1),
        OPTION_FLAG("--dry-run", CleanOptions, dry_run, "list only: change nothing"),
        OPTION_END,
    },
    .opts_size = sizeof(CleanOptions),
    .skips_budget = 1,
};
