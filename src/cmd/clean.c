// clean.c — `clean --scope generated [--dry-run]`: what ddptok wrote, listed and removed.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "base/fs.h"
#include "base/made.h"
#include "base/report.h"

typedef struct {
    int dry_run;        // --dry-run
    const char *scope;  // --scope generated
} CleanOptions;

static void clean_path(const App *app, const char *path, int *found, int *failed) {
    struct stat st;
    if (lstat(path, &st) != 0) return;
    (*found)++;
    say("%s %s%s\n", ((const CleanOptions *)app->opts)->dry_run ? "would remove" : "removing", path, S_ISDIR(st.st_mode) ? "/" : "");
    // Never through a link: a linked directory loses the link, not its target's files.
    if (!((const CleanOptions *)app->opts)->dry_run && remove_tree(path) != 0) (*failed)++;
}

static int clean_run(App *app) {
    // --scope generated, the only scope, is required: the option parser refuses anything else.
    static const char *outputs[] = {"data", "train", "logs", "plot", "matrix", "reference.h5", "grads.h5", "parity.json",
                                    "empty.json", "report.json", "evaluate.json", "check_loss.json", "exercise.json", "figure.png",
                                    MADE_RECORD};
    static const char *artifacts[] = {"checkpoints", "continuous", MADE_RECORD};  // and what train --fresh moved aside: NAME.old-*
    int found = 0, failed = 0;
    char path[1024];
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        out_path(app, path, sizeof path, outputs[i]);
        clean_path(app, path, &found, &failed);
    }
    for (size_t i = 0; i < sizeof artifacts / sizeof *artifacts; i++) {
        art_path(app, path, sizeof path, artifacts[i]);
        clean_path(app, path, &found, &failed);
        char prefix[64];
        snprintf(prefix, sizeof prefix, "%s.old-", artifacts[i]);
        struct dirent **aside;
        int n = scandir(app->cfg.paths.artifacts, &aside, NULL, alphasort);
        for (int k = 0; k < n; k++) {
            if (!strncmp(aside[k]->d_name, prefix, strlen(prefix))) {
                art_path(app, path, sizeof path, aside[k]->d_name);
                clean_path(app, path, &found, &failed);
            }
            free(aside[k]);
        }
        if (n >= 0) free(aside);
    }
    say("clean: %d generated path(s) %s%s\n", found, ((const CleanOptions *)app->opts)->dry_run ? "would be removed (dry run: nothing changed)" : "removed",
        failed ? ", some could not be removed" : "");
    return failed ? EXIT_BAD_INPUT : 0;
}

const Command cmd_clean = {
    .name = "clean",
    .run = clean_run,
    .distributed = 0,
    .summary = "list (and without --dry-run remove) what ddptok generated",
    .options = (const CommandOption[]){
        OPTION_CHOICE("--scope", CleanOptions, scope, "generated", ((const char *const[]){"generated", NULL}),
                      "the only scope: what ddptok wrote", .required = 1),
        OPTION_FLAG("--dry-run", CleanOptions, dry_run, "list only: change nothing"),
        OPTION_END,
    },
    .opts_size = sizeof(CleanOptions),
    .skips_budget = 1,
};
