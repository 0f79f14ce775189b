// options.h — command-line options as data (git's parse-options): each command declares its
// options in its Command entry (app.h) — name, value, help, the field it fills — and main's
// common options are one more such table. One parser fills the fields, says "did you mean"
// for a mistyped name and refuses a bad value, a missing required option or two that exclude
// each other, the same way for `ddptok --check` and for the run; one formatter prints the
// tables for `ddptok --help` and `ddptok CMD --help`.
#ifndef DDPTOK_OPTIONS_H
#define DDPTOK_OPTIONS_H

#include <stddef.h>  // offsetof, for the OPTION_ rows
#include <stdio.h>

#include "base/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    OPT_END = 0,  // ends a table
    OPT_FLAG,     // no value: int field set to 1
    OPT_INT,      // an integer in [min, max]: int field
    OPT_DOUBLE,   // a number in [min, max]: double field
    OPT_STRING,   // any value: const char * field (the argv string itself)
    OPT_CHOICE,   // one of `choices`: const char * field (the table's string)
    OPT_LIST,     // repeatable, each value appended: OptionList field
    OPT_HELP,     // --help: the parse stops and says so (no field)
} OptionKind;

// The values of an OPT_LIST option, in the order given (argv strings).
typedef struct {
    char **items;
    int n;
} OptionList;

// One option. `--name VALUE` and `--name=VALUE` are the same.
typedef struct {
    const char *name;             // "--resume"
    OptionKind kind;
    size_t offset;                // offsetof() its field in the table's struct
    const char *metavar;          // its value as help shows it ("DIR|latest|auto"); NULL for a flag
    const char *help;             // one line for --help
    const char *const *choices;   // OPT_CHOICE: the accepted values, up to NULL
    double min, max;              // OPT_INT, OPT_DOUBLE: the accepted range
    const char *expect;           // OPT_INT, OPT_DOUBLE: what a bad value is told ("a number of bytes"); NULL: "a number"
    int required;                 // 1: refused without it
    const char *excludes;         // the name of an option of the same table that cannot be given with it
    const char *alias;            // another spelling ("-h")
} CommandOption;

// A table's rows, by kind (git's OPT_BOOL, OPT_STRING): the field is TYPE's FIELD; what
// follows HELP are more fields by name (.required = 1, .excludes = "--resume", .alias).
#define OPTION_FLAG(NAME, TYPE, FIELD, HELP, ...) \
    {.name = NAME, .kind = OPT_FLAG, .offset = offsetof(TYPE, FIELD), .help = HELP, __VA_ARGS__}
#define OPTION_STRING(NAME, TYPE, FIELD, METAVAR, HELP, ...) \
    {.name = NAME, .kind = OPT_STRING, .offset = offsetof(TYPE, FIELD), .metavar = METAVAR, .help = HELP, __VA_ARGS__}
#define OPTION_LIST(NAME, TYPE, FIELD, METAVAR, HELP, ...) \
    {.name = NAME, .kind = OPT_LIST, .offset = offsetof(TYPE, FIELD), .metavar = METAVAR, .help = HELP, __VA_ARGS__}
#define OPTION_INT(NAME, TYPE, FIELD, METAVAR, MIN, MAX, EXPECT, HELP, ...)                                          \
    {.name = NAME, .kind = OPT_INT, .offset = offsetof(TYPE, FIELD), .metavar = METAVAR, .min = MIN, .max = MAX, \
     .expect = EXPECT, .help = HELP, __VA_ARGS__}
#define OPTION_DOUBLE(NAME, TYPE, FIELD, METAVAR, MIN, MAX, EXPECT, HELP, ...)                                          \
    {.name = NAME, .kind = OPT_DOUBLE, .offset = offsetof(TYPE, FIELD), .metavar = METAVAR, .min = MIN, .max = MAX, \
     .expect = EXPECT, .help = HELP, __VA_ARGS__}
// CHOICES: a compound literal of strings up to NULL; the metavar shows them.
#define OPTION_CHOICE(NAME, TYPE, FIELD, METAVAR, CHOICES, HELP, ...) \
    {.name = NAME, .kind = OPT_CHOICE, .offset = offsetof(TYPE, FIELD), .metavar = METAVAR, .choices = CHOICES, .help = HELP, __VA_ARGS__}
#define OPTION_HELP(HELP, ...) {.name = "--help", .kind = OPT_HELP, .help = HELP, __VA_ARGS__}
#define OPTION_END {.kind = OPT_END}

// A table and the struct (zeroed by the caller) its offsets fill. `given`, when not NULL,
// receives the options of this table as given, one " --name value" each (ranks compare it).
typedef struct {
    const CommandOption *options;  // up to {.kind = OPT_END}; NULL: none
    void *fields;
    Buf *given;
    Buf *quoted;  // when not NULL: the same, each word shell-quoted (hint_word), for hints that repeat them
} OptionTable;

// Parses argv[first..argc) against the tables, in order (a name is looked up in each). Returns
// 1 when --help was given (the parse stops there), else 0. Dies (exit 2, one line, every
// rank) on an unknown option ("did you mean" over every table's names), a missing or bad
// value, a value given to a flag, two options that exclude each other, or a required one
// that is missing; each message starts with `who` ("train: ").
int options_parse(const char *who, int argc, char **argv, int first, const OptionTable *tables, int n_tables);

// "[--continuous] [--resume DIR|latest|auto | --fresh]": the options as a usage line shows
// them (a required one without brackets; one that excludes an earlier one beside it).
void options_usage(Buf *b, const CommandOption *options);
// One line per option, `indent` spaces in: name and value, then the help (and what it
// excludes, whether it is required).
void options_help(FILE *f, const CommandOption *options, int indent);

#ifdef __cplusplus
}
#endif
#endif
