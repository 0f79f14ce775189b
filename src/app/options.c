// options.c — the one option parser and --help formatter (see options.h).
#include "app/options.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"

// 1e+06 -> 1e6, as the help and the messages write a range.
static void format_number(char *out, size_t len, double v) {
    char raw[64], *e;
    snprintf(raw, sizeof raw, "%g", v);
    if (!(e = strchr(raw, 'e'))) {
        snprintf(out, len, "%s", raw);
        return;
    }
    char *digits = e + 1 + (e[1] == '+' || e[1] == '-');
    while (*digits == '0' && digits[1]) digits++;
    snprintf(out, len, "%.*se%s%s", (int)(e - raw), raw, e[1] == '-' ? "-" : "", digits);
}

static int table_size(const CommandOption *o) {
    int n = 0;
    while (o && o[n].kind != OPT_END) n++;
    return n;
}

static const CommandOption *table_find(const CommandOption *o, const char *name) {
    for (int i = 0; o && o[i].kind != OPT_END; i++)
        if (!strcmp(o[i].name, name) || (o[i].alias && !strcmp(o[i].alias, name))) return &o[i];
    return NULL;
}

// "generated" or "cpu, cuda or mpi": an OPT_CHOICE's values for its message.
static void choice_list(Buf *b, const char *const *choices) {
    int n = 0;
    while (choices[n]) n++;
    for (int i = 0; i < n; i++) buf_printf(b, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
}

// Stores `value` (NULL for a flag) into the option's field; dies on a bad value.
static void option_set(const char *prefix, const CommandOption *o, void *fields, const char *value) {
    char *field = (char *)fields + o->offset, *end, lo[64], hi[64];
    format_number(lo, sizeof lo, o->min), format_number(hi, sizeof hi, o->max);
    switch (o->kind) {
    case OPT_FLAG: *(int *)field = 1; return;
    case OPT_STRING: *(const char **)field = value; return;
    case OPT_LIST: {
        OptionList *l = (OptionList *)field;
        l->items = realloc(l->items, (size_t)(l->n + 1) * sizeof *l->items);
        ASSERT(l->items);
        l->items[l->n++] = (char *)value;
        return;
    }
    case OPT_CHOICE:
        for (int i = 0; o->choices[i]; i++)
            if (!strcmp(value, o->choices[i])) {
                *(const char **)field = o->choices[i];
                return;
            }
        Buf b = {0};
        choice_list(&b, o->choices);
        die(EXIT_BAD_INPUT, "%s%s %s: expected %s", prefix, o->name, value, b.s);
    case OPT_INT: {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v < o->min || v > o->max)
            die(EXIT_BAD_INPUT, "%s%s %s: expected %s in [%s, %s]", prefix, o->name, value, o->expect ? o->expect : "an integer", lo, hi);
        *(int *)field = (int)v;
        return;
    }
    case OPT_DOUBLE: {
        double v = strtod(value, &end);
        if (!*value || *end || !(v >= o->min && v <= o->max))  // NaN fails too
            die(EXIT_BAD_INPUT, "%s%s %s: expected %s in [%s, %s]", prefix, o->name, value, o->expect ? o->expect : "a number", lo, hi);
        *(double *)field = v;
        return;
    }
    case OPT_HELP:
    case OPT_END: break;
    }
    ASSERT(!"an option kind the parser stores");
}

// An unknown option: the nearest name of every table, if one is close enough to be a typo.
static void __attribute__((noreturn)) unknown_option(const char *who, const char *arg, const OptionTable *tables, int n_tables) {
    int n = 0;
    for (int t = 0; t < n_tables; t++) n += table_size(tables[t].options);
    const char **names = xmalloc((size_t)(n + 1) * sizeof *names), *near;
    n = 0;
    for (int t = 0; t < n_tables; t++)
        for (const CommandOption *o = tables[t].options; o && o->kind != OPT_END; o++) names[n++] = o->name;
    char base[256];  // --resum=latest: the name before '='
    snprintf(base, sizeof base, "%.*s", (int)strcspn(arg, "="), arg);
    if ((near = closest_name(base, names, n)))
        die(EXIT_BAD_INPUT, "%s: unknown option '%s' (did you mean '%s'? try: %s %s --help)", who, arg, near, hint_program(), who);
    die(EXIT_BAD_INPUT, "%s: unknown option '%s' (try: %s %s --help)", who, arg, hint_program(), who);
}

int options_parse(const char *who, int argc, char **argv, int first, const OptionTable *tables, int n_tables) {
    int n = 0;
    for (int t = 0; t < n_tables; t++) n += table_size(tables[t].options);
    int *count = xcalloc((size_t)n + 1, sizeof *count);  // how often each option was given, table by table
    char own[128];
    snprintf(own, sizeof own, "%s: ", who);
    for (int i = first; i < argc; i++) {
        const char *arg = argv[i], *eq = !strncmp(arg, "--", 2) ? strchr(arg, '=') : NULL;
        char name[256];
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        const CommandOption *o = NULL;
        int t = 0, base = 0;
        for (; t < n_tables && !(o = table_find(tables[t].options, name)); t++) base += table_size(tables[t].options);
        if (!o) unknown_option(who, arg, tables, n_tables);
        const char *prefix = own;
        if (o->kind == OPT_HELP) {
            free(count);
            return 1;
        }
        const char *value = NULL;
        if (o->kind == OPT_FLAG) {
            if (eq) die(EXIT_BAD_INPUT, "%soption %s takes no value (got '%s')", prefix, o->name, arg);
        } else if (eq) value = eq + 1;
        else if (i + 1 < argc) value = argv[++i];
        else die(EXIT_BAD_INPUT, "%soption %s needs a value (%s %s)", prefix, o->name, o->name, o->metavar);
        option_set(prefix, o, tables[t].fields, value);
        count[base + (int)(o - tables[t].options)]++;
        if (tables[t].given) buf_printf(tables[t].given, " %s%s%s", o->name, value ? " " : "", value ? value : "");
        if (tables[t].quoted) {
            char words[4096] = "";
            hint_word(words, sizeof words, o->name);
            if (value) hint_word(words, sizeof words, value);
            buf_printf(tables[t].quoted, "%s", words);
        }
    }
    // What the tables say of options together: one excludes another, one is required.
    int base = 0;
    for (int t = 0; t < n_tables; t++) {
        const CommandOption *opts = tables[t].options;
        const char *prefix = own;
        for (int k = 0; opts && opts[k].kind != OPT_END; k++) {
            const CommandOption *o = &opts[k];
            if (o->excludes) {
                const CommandOption *other = table_find(opts, o->excludes);
                ASSERT(other);  // a table naming an option it does not have
                if (count[base + k] && count[base + (int)(other - opts)])
                    die(EXIT_BAD_INPUT, "%s%s and %s exclude each other (give one of them)", prefix, o->name, other->name);
            }
            if (o->required && !count[base + k])
                die(EXIT_BAD_INPUT, "%s%s%s%s is required (%s)", prefix, o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "", o->help);
        }
        base += table_size(opts);
    }
    free(count);
    return 0;
}

void options_usage(Buf *b, const CommandOption *options) {
    for (int i = 0; options && options[i].kind != OPT_END; i++) {
        const CommandOption *o = &options[i];
        if (o->excludes && table_find(options, o->excludes) < o) continue;  // printed beside the one it excludes
        buf_printf(b, "%s%s%s%s%s", b->n ? " " : "", o->required ? "" : "[", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        for (int k = i + 1; options[k].kind != OPT_END; k++)
            if (options[k].excludes && !strcmp(options[k].excludes, o->name))
                buf_printf(b, " | %s%s%s", options[k].name, options[k].metavar ? " " : "", options[k].metavar ? options[k].metavar : "");
        buf_printf(b, "%s", o->required ? "" : "]");
    }
}

void options_help(FILE *f, const CommandOption *options, int indent) {
    int width = 0;
    for (int i = 0; options && options[i].kind != OPT_END; i++) {
        int w = (int)strlen(options[i].name) + (options[i].metavar ? 1 + (int)strlen(options[i].metavar) : 0);
        if (w > width) width = w;
    }
    for (int i = 0; options && options[i].kind != OPT_END; i++) {
        const CommandOption *o = &options[i];
        char head[256], lo[64], hi[64];
        snprintf(head, sizeof head, "%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        fprintf(f, "%*s%-*s  %s", indent, "", width, head, o->help);
        if (o->kind == OPT_INT || o->kind == OPT_DOUBLE) {
            format_number(lo, sizeof lo, o->min), format_number(hi, sizeof hi, o->max);
            fprintf(f, " (%s..%s)", lo, hi);
        }
        if (o->alias) fprintf(f, " (also %s)", o->alias);
        if (o->required) fprintf(f, " (required)");
        if (o->excludes) fprintf(f, " (not with %s)", o->excludes);
        fprintf(f, "\n");
    }
}
