// hint.h — "did you mean" for a mistyped name, and the user's own --config/--set arguments
// for hints that repeat them.
#ifndef DDPTOK_HINT_H
#define DDPTOK_HINT_H


#ifdef __cplusplus
extern "C" {
#endif

// Levenshtein distance of two strings (of at most 255 characters; longer: 2^20).
int edit_distance(const char *a, const char *b);
// The name nearest to `word` when it is close enough to be a typo of it (at most 2 edits,
// or a third of the word's length), else NULL: for "did you mean".
const char *closest_name(const char *word, const char *const *names, int n);

// Hints repeat the user's own command line: hint_args() is " --config FILE --set K=V ..."
// as given (shell-quoted where needed), recorded once by main with hint_args_set().
void hint_args_set(const char *config_path, char *const *sets, int n_sets);
const char *hint_args(void);

#ifdef __cplusplus
}
#endif
#endif
