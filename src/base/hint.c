// hint.c — "did you mean" and the user's own arguments for hints (see hint.h).
#include "base/hint.h"

#include <stdio.h>
#include <string.h>

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

// The user's --config and --set arguments, shell-quoted, for hints that repeat them.
static char g_hint_args[4096] = "";

static void append_word(const char *word) {
    size_t n = strlen(g_hint_args);
    int plain = word[0] != 0;
    for (const char *p = word; *p; p++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._=/,:+-@%", *p)) plain = 0;
    if (plain) snprintf(g_hint_args + n, sizeof g_hint_args - n, " %s", word);
    else {  // 'it'\''s' quoting
        n += (size_t)snprintf(g_hint_args + n, sizeof g_hint_args - n, " '");
        for (const char *p = word; *p && n + 5 < sizeof g_hint_args; p++)
            n += (size_t)snprintf(g_hint_args + n, sizeof g_hint_args - n, *p == '\'' ? "'\\''" : "%c", *p);
        snprintf(g_hint_args + n, sizeof g_hint_args - n, "'");
    }
}

void hint_args_set(const char *config_path, char *const *sets, int n_sets) {
    g_hint_args[0] = 0;
    if (config_path) append_word("--config"), append_word(config_path);
    for (int i = 0; i < n_sets; i++) append_word("--set"), append_word(sets[i]);
}

const char *hint_args(void) { return g_hint_args; }
