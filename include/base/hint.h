// hint.h — "did you mean" for a mistyped name, and the commands hints tell the user to run:
// named as this user can run them (hint_command), with their own --config/--set arguments.
#ifndef DDPTOK_HINT_H
#define DDPTOK_HINT_H

#include <stddef.h>

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
// Appends " OPTION VALUE" (quoted as needed) to those arguments: main's --backend, --comm and
// --comm-timeout when the user gave them, so a hint runs the same way.
void hint_args_add(const char *option, const char *value);
const char *hint_args(void);

// The command a hint tells the user to run, as they can run it from where they are, in
// `buf` (returned): "BINARY COMMAND --config F --set K=V... EXTRA" for a one-process
// command (ranks 0), and for one of W ranks (ranks W >= 1) the launcher before it:
//   - BINARY is ddptok as it was invoked (hint_program_set: argv[0]): a path as given
//     (`./ddptok`, `/opt/x/ddptok`; an absolute one inside the working directory as
//     `./sub/ddptok`), or `ddptok` when PATH finds this binary under that name; a bare name
//     that PATH does not find (Open MPI also looks in the working directory) becomes this
//     binary's path;
//   - in a checkout (run/ddprun beside this binary, and it runs this binary), the launcher is
//     `DIR/run/ddprun -np W` written the way the binary was (`run/ddprun` in the checkout's
//     root): it adds the flags this machine needs and ddprun runs the binary itself;
//   - installed (make install: bin/ddprun beside bin/ddptok), that launcher: `ddprun -np W`
//     when PATH finds it under that name, else its path;
//   - otherwise (a binary alone) `mpirun -np W BINARY`, plus --allow-run-as-root when
//     run as root and --oversubscribe when W exceeds the CPUs this process may use.
// Words with characters the shell treats specially are single-quoted. Without
// hint_args_set (a test program) the arguments read " --config FILE". `extra` (may be NULL
// or "") follows the arguments: " --resume latest". The result is text_clean'd (report.h):
// a control character or a bidi control in a name is '?', so it is safe inside say().
// Appends " WORD" to out (len bytes, NUL-terminated), quoted as hint_command quotes: for
// the `extra` of a hint that names a path.
void hint_word(char *out, size_t len, const char *word);
#define HINT_MAX 8192  // room for one hint_command
void hint_program_set(const char *argv0);
// How a distributed command is launched here, for usage lines: "run/ddprun -np W" in a
// checkout, "ddprun -np W" installed, else "mpirun -np W ./ddptok" (with the flags this
// machine needs). Into buf (returned).
const char *hint_launcher(char *buf, size_t len);
// The binary as hints name it (`./ddptok`, `ddptok`, a path), shell-quoted: for "try: … --help".
const char *hint_program(void);
// The folder of this binary (realpath of /proc/self/exe's directory) into out; 0, or -1.
int hint_program_dir(char *out, size_t len);
// `command` as this user runs it: on `ranks` ranks (0: one process; -1: "-np W", the caller says
// what W is), then the hint's --config/--set arguments and `extra`. Into buf (returned).
const char *hint_command(char *buf, size_t len, const char *command, int ranks, const char *extra);

#ifdef __cplusplus
}
#endif
#endif
