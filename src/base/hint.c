// hint.c — "did you mean", and the commands hints name: the binary as invoked, the
// launcher, the user's own arguments (see hint.h).
#include "base/hint.h"
#include "base/report.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 255 || lb > 255) return 1 << 20;
    int row[256];  // Levenshtein, one row: row[j] = distance(a[0..i), b[0..j))
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[lb];
}

const char *closest_name(const char *word, const char *const *names, int n) {
    const char *best = NULL;
    int best_d = 1 << 20, limit = (int)strlen(word) / 3 > 2 ? (int)strlen(word) / 3 : 2;
    for (int i = 0; i < n; i++) {
        int d = edit_distance(word, names[i]);
        if (d < best_d) best_d = d, best = names[i];
    }
    return best_d <= limit ? best : NULL;
}

// " word", shell-quoted when it holds anything but plain characters ('it'\''s').
void hint_word(char *out, size_t len, const char *word) {
    size_t n = strlen(out);
    int plain = word[0] != 0;
    for (const char *p = word; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._=/,:+-@%", *p)) plain = 0;
    if (n >= len) return;
    if (plain) snprintf(out + n, len - n, " %s", word);
    else {
        n += (size_t)snprintf(out + n, len - n, " '");
        for (const char *p = word; *p && n + 5 < len; p++)
            n += (size_t)snprintf(out + n, len - n, *p == '\'' ? "'\\''" : "%c", *p);
        if (n < len) snprintf(out + n, len - n, "'");
    }
}

// The user's --config and --set arguments, shell-quoted, for hints that repeat them.
static char g_hint_args[4096] = "";

void hint_args_set(const char *config_path, char *const *sets, int n_sets) {
    g_hint_args[0] = 0;
    if (config_path) hint_word(g_hint_args, sizeof g_hint_args, "--config"), hint_word(g_hint_args, sizeof g_hint_args, config_path);
    for (int i = 0; i < n_sets; i++)
        hint_word(g_hint_args, sizeof g_hint_args, "--set"), hint_word(g_hint_args, sizeof g_hint_args, sets[i]);
}

void hint_args_add(const char *option, const char *value) {
    hint_word(g_hint_args, sizeof g_hint_args, option), hint_word(g_hint_args, sizeof g_hint_args, value);
}

const char *hint_args(void) { return g_hint_args; }

// ---------------------------------------------------------------------------------------
// The binary and the launcher a hint names (hint.h, hint_command)

static char g_argv0[PATH_MAX] = "";
static char g_binary[PATH_MAX + 8];    // as the user can type it
static char g_launcher[PATH_MAX + 32];  // "" when not in a checkout (mpirun then)
static int g_resolved;

void hint_program_set(const char *argv0) {
    snprintf(g_argv0, sizeof g_argv0, "%s", argv0 ? argv0 : "");
    g_resolved = 0;
}

// `path` (absolute) relative to the working directory when it lies inside it ("./x" for a
// file right there, so the shell does not look it up on PATH), else as it is. A path that
// climbs out again (cwd/../x: `./../x` was printed) is not inside it.
static void relative_to_cwd(const char *path, char *out, size_t len) {
    char cwd[PATH_MAX];
    size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
    const char *rest = path + n + 1;
    if (n > 1 && !strncmp(path, cwd, n) && path[n] == '/' && strncmp(rest, "../", 3) && !strstr(rest, "/../"))
        snprintf(out, len, "./%s", rest);
    else snprintf(out, len, "%s", path);
}

// The executable `name` that PATH finds first, into out; 0 when found.
static int path_lookup(const char *name, char *out, size_t len) {
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        char candidate[2 * PATH_MAX];
        snprintf(candidate, sizeof candidate, "%.*s%s%s", (int)n, path, n ? "/" : "", name);  // "" is the cwd
        struct stat st;
        if (strlen(candidate) < len && stat(candidate, &st) == 0 && S_ISREG(st.st_mode) && access(candidate, X_OK) == 0) {
            memcpy(out, candidate, strlen(candidate) + 1);
            return 0;
        }
        path += n + (path[n] == ':');
    }
    return -1;
}

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void resolve_program(void) {
    if (g_resolved) return;
    g_resolved = 1;
    char exe[PATH_MAX] = "", found[PATH_MAX];
    if (!realpath("/proc/self/exe", exe)) snprintf(exe, sizeof exe, "%s", g_argv0[0] ? g_argv0 : "ddptok");
    const char *name = g_argv0[0] ? g_argv0 : "ddptok";
    g_binary[0] = 0;
    if (strchr(name, '/')) {
        if (name[0] == '/') relative_to_cwd(name, g_binary, sizeof g_binary);
        else snprintf(g_binary, sizeof g_binary, "%s", name);
    } else if (path_lookup(name, found, sizeof found) == 0 && same_file(found, exe)) snprintf(g_binary, sizeof g_binary, "%s", name);
    else relative_to_cwd(exe, g_binary, sizeof g_binary);
    // In a checkout: run/ddprun beside the binary runs $dir/ddptok, which must be this one.
    char dir[PATH_MAX], ddprun[PATH_MAX + 16], beside[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s", exe);
    char *slash = strrchr(dir, '/');
    g_launcher[0] = 0;
    if (!slash) return;
    *slash = 0;
    snprintf(ddprun, sizeof ddprun, "%s/run/ddprun", dir);
    snprintf(beside, sizeof beside, "%s/ddptok", dir);
    if (!same_file(beside, exe)) return;
    if (access(ddprun, X_OK) != 0) {
        // Installed (make install): bin/ddprun beside bin/ddptok runs the ddptok beside it;
        // named as PATH finds it, else by its path.
        snprintf(ddprun, sizeof ddprun, "%s/ddprun", dir);
        if (access(ddprun, X_OK) != 0) return;
        const char *cut = strrchr(g_binary, '/');  // the binary as typed: its folder holds ddprun
        if (path_lookup("ddprun", found, sizeof found) == 0 && same_file(found, ddprun)) snprintf(g_launcher, sizeof g_launcher, "ddprun");
        else if (cut) snprintf(g_launcher, sizeof g_launcher, "%.*s/ddprun", (int)(cut - g_binary), g_binary);
        else relative_to_cwd(ddprun, g_launcher, sizeof g_launcher);
        return;
    }
    // Written the way the binary was: "./ddptok" -> "run/ddprun", "../ddptok" -> "../run/ddprun".
    char typed[PATH_MAX + 8];
    snprintf(typed, sizeof typed, "%s", g_binary);
    char *cut = strrchr(typed, '/');
    if (cut) {
        *cut = 0;
        char real[PATH_MAX];
        if (realpath(typed[0] ? typed : "/", real) && !strcmp(real, dir)) {
            if (!strcmp(typed, ".")) snprintf(g_launcher, sizeof g_launcher, "run/ddprun");
            else snprintf(g_launcher, sizeof g_launcher, "%s/run/ddprun", !strncmp(typed, "./", 2) ? typed + 2 : typed);
            return;
        }
    }
    relative_to_cwd(ddprun, g_launcher, sizeof g_launcher);
    if (!strncmp(g_launcher, "./", 2)) memmove(g_launcher, g_launcher + 2, strlen(g_launcher + 2) + 1);
}

const char *hint_program(void) {
    static char quoted[PATH_MAX + 16];
    resolve_program();
    quoted[0] = 0;
    hint_word(quoted, sizeof quoted, g_binary);
    return quoted + (quoted[0] == ' ');
}

int hint_program_dir(char *out, size_t len) {
    char exe[PATH_MAX];
    if (!realpath("/proc/self/exe", exe)) return -1;
    char *slash = strrchr(exe, '/');
    if (!slash || (size_t)(slash - exe) >= len) return -1;
    snprintf(out, len, "%.*s", (int)(slash - exe), exe);
    return 0;
}

// The CPUs a launcher started from here may use, as `nproc` counts them: mpirun binds each
// rank to its own core, so the parent's (mpirun's, or the shell's) count too.
static int usable_cpus(void) {
    int best = 0;
    pid_t who[2] = {0, getppid()};
    for (int i = 0; i < 2; i++) {
        cpu_set_t cpus;
        if (sched_getaffinity(who[i], sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > best) best = CPU_COUNT(&cpus);
    }
    return best ? best : (int)sysconf(_SC_NPROCESSORS_ONLN);
}

// " LAUNCHER -np NP BINARY" (a distributed command: ranks > 0; `np` as written, "W" in a
// usage line) or " BINARY", appended to buf.
static void launch_words(char *buf, size_t len, int ranks, const char *np) {
    resolve_program();
    if (ranks > 0 && g_launcher[0]) {
        hint_word(buf, len, g_launcher), hint_word(buf, len, "-np"), hint_word(buf, len, np);
        return;
    }
    if (ranks > 0) {
        int cores = usable_cpus();
        hint_word(buf, len, "mpirun");
        if (geteuid() == 0) hint_word(buf, len, "--allow-run-as-root");
        if (ranks > cores) hint_word(buf, len, "--oversubscribe");
        hint_word(buf, len, "-np"), hint_word(buf, len, np);
    }
    hint_word(buf, len, g_binary);
}

const char *hint_launcher(char *buf, size_t len) {
    buf[0] = 0;
    launch_words(buf, len, 1, "W");
    if (buf[0] == ' ') memmove(buf, buf + 1, strlen(buf));
    return buf;
}

const char *hint_command(char *buf, size_t len, const char *command, int ranks, const char *extra) {
    char np[16];
    snprintf(np, sizeof np, ranks < 0 ? "W" : "%d", ranks);
    buf[0] = 0;
    launch_words(buf, len, ranks < 0 ? 1 : ranks, np);
    hint_word(buf, len, command);
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, "%s%s", g_hint_args[0] ? g_hint_args : " --config FILE", extra ? extra : "");
    if (buf[0] == ' ') memmove(buf, buf + 1, strlen(buf));  // every word came after a space
    // A hint reaches the terminal inside say()'s text, which keeps "\n\t": a config named
    // with a newline split "run `... --config 'c<newline>forged'`" over two lines.
    text_clean(buf, len, buf, "");
    return buf;
}
