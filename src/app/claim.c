// claim.c — one config per outputs and artifacts directory (see claim.h).
#include "app/claim.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "io/jsonio.h"

// What identifies a config: its file's real path and the SHA-256 of its bytes (a copy, or the
// same tree elsewhere, is the same config; an edited file at the same path is too).
typedef struct {
    char real[PATH_MAX];
    char sha[65];
} ConfigId;

static int config_id(const char *path, ConfigId *id) {
    size_t len;
    char why[256];
    char *text = file_read_regular(path, 1 << 20, &len, why, sizeof why);
    if (!text) return -1;
    Sha256 *h = sha256_begin();
    sha256_add(h, text, len);
    sha256_hex(h, id->sha);
    free(text);
    if (!realpath(path, id->real)) snprintf(id->real, sizeof id->real, "%s", path);
    return 0;
}

// "outputs-fortunes": a root of this config's own beside `root`, named after the config.
static void own_root(const char *root, const char *config, char *out, size_t len) {
    const char *base = strrchr(config, '/') ? strrchr(config, '/') + 1 : config;
    size_t stem = strcspn(base, ".");
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(stem ? stem : strlen(base)), base);
    for (char *p = name; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", *p)) *p = '_';
    size_t n = strlen(root);
    while (n > 1 && root[n - 1] == '/') n--;
    snprintf(out, len, "%.*s-%s", (int)n, root, name[0] ? name : "config");
}

// 0: `root` is this config's or nobody's (*claimed 1 when recorded); -1: another config's,
// its recorded path in `other`.
static int root_owner(const char *root, const ConfigId *mine, int *claimed, char *other, size_t len) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", root, CLAIM_FILE);
    *claimed = 0;
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    json_t *j = json_read_file(path, 1);
    const char *real = json_string_value(json_object_get(j, "real_path")), *sha = json_string_value(json_object_get(j, "sha256"));
    const char *given = json_string_value(json_object_get(j, "config"));
    int ours = real && sha && (!strcmp(real, mine->real) || !strcmp(sha, mine->sha));
    if (!ours) snprintf(other, len, "%s", given ? given : real ? real : "(unreadable record)");
    json_decref(j);
    if (ours) return *claimed = 1, 0;
    // Another config's record, but nothing of its results left (cleaned): the directory is free.
    DIR *d = opendir(root);
    struct dirent *e;
    int others = 0;
    while (d && (e = readdir(d)))
        others += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, CLAIM_FILE) && strcmp(e->d_name, ".ddptok-made");
    if (d) closedir(d);
    return others || !d ? -1 : 0;
}

static void claim(App *app, const Command *cmd, int roots, int write) {
    ConfigId mine;
    if (config_id(app->cfg.source, &mine)) return;  // read a moment ago: config_load said why if not
    const char *dirs[2] = {app->cfg.paths.outputs, app->cfg.paths.artifacts};
    int bad = 0, claimed[2] = {0, 0};
    char other[2][PATH_MAX], fix[2][PATH_MAX] = {"", ""};
    for (int r = 0; r < 2; r++) {
        if (!(roots >> r & 1) || (r == 1 && !strcmp(dirs[0], dirs[1]))) continue;
        if (root_owner(dirs[r], &mine, &claimed[r], other[r], sizeof other[r]) == 0) continue;
        if (!bad) bad = r + 1;
    }
    if (comm_agree(&app->comm, bad)) {
        // Give this config its own directories (both, as a pair: its corpus and its checkpoints
        // belong together); every later command needs the same two --set.
        char extra[2 * PATH_MAX + 400] = "", hint[HINT_MAX];
        for (int r = 0; r < 2; r++) {
            char set[PATH_MAX + 200];
            own_root(dirs[r], app->config_path, fix[r], sizeof fix[r]);
            snprintf(set, sizeof set, "%s=%s", r ? "paths.artifacts" : "paths.outputs", fix[r]);
            hint_word(extra, sizeof extra, "--set"), hint_word(extra, sizeof extra, set);
        }
        char words[HINT_MAX + sizeof extra];
        snprintf(words, sizeof words, "%s%s", app->options_quoted ? app->options_quoted : "", extra);
        int r = bad ? bad - 1 : 0;
        if (!bad) die(EXIT_BAD_INPUT, "another rank found %s of another config (see its line)", dirs[0]);
        char q[PATH_MAX + 8] = "";
        hint_word(q, sizeof q, other[r]);
        if (cmd->checks_every_root)
            die(EXIT_BAD_INPUT, "%s/ holds the results of another config, %s (%s/%s): %s removes nothing of another config (run it "
                "with --config %s to clean them); to give this config its own directories instead, add `%s` to this command and "
                "every one after it", dirs[r], text_safe(other[r]), dirs[r], CLAIM_FILE, cmd->name, text_safe(q + 1), extra + 1);
        // Own directories that hold nothing yet: this command would only say what to run
        // first, and that one what comes before it; start where the data is made instead.
        int fresh = access(fix[0], F_OK) != 0 && access(fix[1], F_OK) != 0;
        if (fresh && app->cfg.data.source == DATA_SOURCE_SYNTHETIC && strcmp(cmd->name, "prepare")) {
            char start[HINT_MAX];
            die(EXIT_BAD_INPUT, "%s/ holds the results of another config, %s (%s/%s): %s's would mix with them (corpus, reports, "
                "logs, checkpoints); give this config its own directories, starting with its corpus: run `%s` and the commands "
                "it names (each with those two --set), then `%s`; or run them all in another directory", dirs[r],
                text_safe(other[r]), dirs[r], CLAIM_FILE, app->config_path, hint_command(start, sizeof start, "prepare", 0, extra),
                hint_command(hint, sizeof hint, cmd->name, cmd->distributed == 1 ? app->cfg.train.world_size : 0, words));
        }
        die(EXIT_BAD_INPUT, "%s/ holds the results of another config, %s (%s/%s): %s's would mix with them (corpus, reports, "
            "logs, checkpoints); give this config its own directories: run `%s` (and add those two --set to the commands after "
            "it), or run it in another directory", dirs[r], text_safe(other[r]), dirs[r], CLAIM_FILE, app->config_path,
            hint_command(hint, sizeof hint, cmd->name, cmd->distributed == 1 ? app->cfg.train.world_size : 0, words));
    }
    if (!write || app->comm.rank != 0) return;
    for (int r = 0; r < 2; r++) {
        if (!(roots >> r & 1) || claimed[r] || (r == 1 && !strcmp(dirs[0], dirs[1]))) continue;
        char path[PATH_MAX + 32], when[40];
        snprintf(path, sizeof path, "%s/%s", dirs[r], CLAIM_FILE);
        utc_timestamp(when, sizeof when);
        json_t *j = json_pack("{s:o, s:o, s:s, s:s, s:s}", "config", json_text(app->config_path, NULL), "real_path",
                              json_text(mine.real, NULL), "sha256", mine.sha, "since", when, "what",
                              "the config whose results this directory holds (ddptok refuses another's here)");
        if (mkdir_p(dirs[r]) || json_write_file(path, j)) die(EXIT_BAD_INPUT, "%s: cannot record this directory's config", path);
    }
}

void claim_roots(App *app, const Command *cmd, int write) {
    int roots = 0;  // bit 1: paths.outputs, bit 2: paths.artifacts
    for (const CommandOutput *o = cmd->outputs; o && o->root; o++) roots |= o->root == UNDER_OUTPUTS ? 1 : 2;
    if (cmd->checks_every_root) claim(app, cmd, 3, 0);  // clean: refused where another config's results are; records none
    else if (roots && !cmd->any_config) claim(app, cmd, roots, write);
}
