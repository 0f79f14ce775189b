// import.c — `import`: the users' files into this config's corpus and plan -> outputs/data/
// (docs/data.md). The config decides what the documents become (data.source: imported,
// data.import.* for the split, data.min_length / data.max_length for the length rule,
// data.vocab_size); the options name the files and how to read them. corpus.h5 is the
// one prepare writes, so every later command reads it unchanged, plus where it came from.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/made.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/corpus_file.h"
#include "data/import.h"
#include "data/plan.h"
#include "data/sampler.h"

typedef struct {
    const char *format, *eot, *delimiter, *key;  // as given
    int split_from_names;
    OptionList inputs;                          // every --input, in order
} ImportOptions;

// --delimiter TEXT with C escapes (\n \r \t \\ \0 \xHH) -> bytes; the length, or -1.
static long unescape(const char *s, char *out) {
    long n = 0;
    for (; *s; s++) {
        if (*s != '\\') {
            out[n++] = *s;
            continue;
        }
        char c = *++s;
        const char *hex = "0123456789abcdef0123456789ABCDEF";
        const char *h1, *h2;
        if (c == 'n') out[n++] = '\n';
        else if (c == 'r') out[n++] = '\r';
        else if (c == 't') out[n++] = '\t';
        else if (c == '\\') out[n++] = '\\';
        else if (c == '0') out[n++] = 0;
        else if (c == 'x' && s[1] && s[2] && (h1 = strchr(hex, s[1])) && (h2 = strchr(hex, s[2])))
            out[n++] = (char)(((h1 - hex) % 16) << 4 | (h2 - hex) % 16), s += 2;
        else return -1;
    }
    return n;
}

// The bytes of a delimiter as C escapes, for the record and the summary.
static void escape(const char *s, size_t n, char *out, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') k += (size_t)snprintf(out + k, len - k, "\\n");
        else if (c == '\t') k += (size_t)snprintf(out + k, len - k, "\\t");
        else if (c == '\r') k += (size_t)snprintf(out + k, len - k, "\\r");
        else if (c == '\\') k += (size_t)snprintf(out + k, len - k, "\\\\");
        else if (c < 0x20 || c >= 0x7F || c == '"') k += (size_t)snprintf(out + k, len - k, "\\x%02x", c);
        else out[k++] = (char)c;
    }
    out[k] = 0;
}

static void add_arg(Buf *args, const char *word) {
    buf_printf(args, "%s", word);
    buf_printf(args, "%c", 0);
}

// The options into `spec` (its delimiter allocated; `options` their text for the record and the
// summary; `args` the options as given, NUL-separated, for the command that makes the corpus
// again): dies (exit 2, one line) on a missing or bad one. The run and --check (import_check) alike.
static void import_parse(const ImportOptions *o, const Config *cfg, ImportSpec *spec, char *options, size_t options_len, Buf *args) {
    if (!o || !o->format) die(EXIT_BAD_INPUT, "import: --format is required (bytes, llmc, nanogpt, megatron, jsonl, jsonl-text)");
    if (!o->inputs.n) die(EXIT_BAD_INPUT, "import: --input PATH is required (a file, a directory or a quoted glob; repeatable)");
    *spec = (ImportSpec){.eot = -1, .vocab = cfg->data.vocab_size - 1};
    int f = 0;
    while (f < IMPORT_FORMAT_COUNT && strcmp(o->format, import_format_names[f])) f++;
    if (f == IMPORT_FORMAT_COUNT)
        die(EXIT_BAD_INPUT, "import --format %s: expected bytes, llmc, nanogpt, megatron, jsonl or jsonl-text", o->format);
    spec->format = (ImportFormat)f;
    const ImportReader *reader = &import_readers[f];
    char delim_text[420] = "";
    size_t at = 0;
    options[0] = 0;
    add_arg(args, "--format"), add_arg(args, o->format);
    if (o->eot) {
        char *end;
        errno = 0;
        long long v = strtoll(o->eot, &end, 10);
        if (!reader->takes_eot)
            die(EXIT_BAD_INPUT, "import --eot: --format %s has no token ids (%s)", o->format,
                f == IMPORT_BYTES ? "separate documents with --delimiter" : "a line is a document");
        // Never stored, so it may lie outside [0, V - 1): GPT-2's 50256 with V = 50257.
        if (!*o->eot || *end || errno || v < 0 || v > UINT32_MAX)
            die(EXIT_BAD_INPUT, "import --eot %s: expected a token id in [0, 2^32)", o->eot);
        spec->eot = v;
        at += (size_t)snprintf(options + at, options_len - at, "%s--eot %lld", at ? " " : "", v);
        add_arg(args, "--eot"), add_arg(args, o->eot);
    }
    if (o->delimiter) {
        if (!reader->takes_delimiter)
            die(EXIT_BAD_INPUT, "import --delimiter: only --format bytes splits on bytes (token formats: --eot ID)");
        char *delim = xmalloc(strlen(o->delimiter) + 1);
        long n = unescape(o->delimiter, delim);
        if (n <= 0 || n > 64)
            die(EXIT_BAD_INPUT, "import --delimiter %s: expected 1 to 64 bytes, with the escapes \\n \\r \\t \\\\ \\0 \\xHH",
                o->delimiter);
        spec->delimiter = delim, spec->delimiter_len = (size_t)n;
        escape(delim, (size_t)n, delim_text, sizeof delim_text);
        at += (size_t)snprintf(options + at, options_len - at, "%s--delimiter \"%s\"", at ? " " : "", delim_text);
        add_arg(args, "--delimiter"), add_arg(args, o->delimiter);
    }
    if (o->key) {
        if (!reader->takes_key) die(EXIT_BAD_INPUT, "import --key: only --format jsonl and jsonl-text read objects");
        if (!*o->key) die(EXIT_BAD_INPUT, "import --key: expected the name of an object's key (\"input_ids\")");
        spec->key = o->key;
        char k[200];
        escape(o->key, strlen(o->key), k, sizeof k);
        at += (size_t)snprintf(options + at, options_len - at, "%s--key \"%s\"", at ? " " : "", k);
        add_arg(args, "--key"), add_arg(args, o->key);
    }
    if (o->split_from_names) {
        spec->split_from_names = 1;
        at += (size_t)snprintf(options + at, options_len - at, "%s--split-from-names", at ? " " : "");
        add_arg(args, "--split-from-names");
    }
    for (int i = 0; i < o->inputs.n; i++) add_arg(args, "--input"), add_arg(args, o->inputs.items[i]);
    spec->options_text = options;
}

// What the run checks before it reads a token, the run and --check alike
// (Command.check_options): the config's data.source, the options, that every --input is
// there, each file's header and sizes (and none compressed), its name's split under
// --split-from-names, and the import's memory (a constant: its buffers). --check said ok to a
// synthetic config, a missing file and an import over the budget, and to 800 inputs the run
// then refused after reading them all.
static void import_check(const App *app) {
    const Config *cfg = &app->cfg;
    const ImportOptions *o = app->opts;
    if (cfg->data.source != DATA_SOURCE_IMPORTED)
        die(EXIT_BAD_INPUT, "%s: data.source is %s: import makes the corpus of data.source: imported (add it to the config, "
            "or --set data.source=imported)", cfg->source, data_source_names[cfg->data.source]);
    ImportSpec spec;
    char options[700];
    Buf args = {0};
    import_parse(o, cfg, &spec, options, sizeof options, &args);
    spec.budgeted = IMPORT_MEMORY;
    ImportInput *files;
    int n_files;
    ImportSkipped skipped;
    if (import_expand_inputs(spec.format, o->inputs.items, o->inputs.n, &files, &n_files, &skipped)) stop(EXIT_BAD_INPUT);
    int rc = import_budget(&spec) || import_probe(&spec, files, n_files);
    import_inputs_free(files, n_files);
    free((char *)spec.delimiter);
    buf_free(&args);
    if (rc) stop(EXIT_BAD_INPUT);
}

static const char *const split_names[3] = {"train", "validation", "test"};

// One line when the validation or the test split is empty, with what to do.
static void warn_empty_splits(const Config *cfg, const ImportSpec *spec, const ImportSummary *s) {
    int empty_v = s->seqs[SPLIT_VALIDATION] == 0, empty_t = s->seqs[SPLIT_TEST] == 0;
    if (!empty_v && !empty_t) return;
    const char *which = empty_v && empty_t ? "the validation and test splits are" : empty_v ? "the validation split is" : "the test split is";
    if (spec->split_from_names)
        warning("import: %s empty (no input is named %s): `evaluate`%s has nothing to score there; add an input named so%s", which,
                empty_v && empty_t ? "val or test" : empty_v ? "val" : "test", empty_v ? " --split validation and train.eval_every" : "",
                !empty_v ? ", or evaluate the validation split (`evaluate --split validation`)" : "");
    else
        warning("import: %s empty (%lld document%s, split by their hash with data.import.validation_fraction %g and test_fraction "
                "%g): `evaluate`%s has nothing to score there; cut the input into more documents (%s) or raise those fractions",
                which, (long long)s->documents, s->documents == 1 ? "" : "s", cfg->data.import.validation_fraction,
                cfg->data.import.test_fraction, empty_v ? " --split validation and train.eval_every" : "",
                spec->format == IMPORT_BYTES ? "--delimiter TEXT, e.g. '\\n\\n'" : "--eot ID");
}

// The corpus is published before its plan can be built (the plan reads it back): where the
// config's sampler refuses it, what this run published goes again, so that a refused import
// leaves no corpus a later command would take for the one the user asked for.
static _Noreturn void unpublish(const char *cpath, const char *ppath) {
    int gone = 0;
    const char *paths[2] = {cpath, ppath};
    for (int i = 0; i < 2; i++) gone += made_is(paths[i]) && unlink(paths[i]) == 0;
    warning("import: refused by this config's sampler (the line above): nothing published (%s%s removed again); fix the "
            "config as that line says, then import again", text_safe(cpath), gone > 1 ? " and the plan.h5 beside it" : "");
    stop(EXIT_BAD_INPUT);
}

static int import_run(App *app) {
    const Config *cfg = &app->cfg;
    const ImportOptions *o = app->opts;  // import_check (check_options) ran first: data.source, inputs, budget, headers
    ImportSpec spec;
    char options[700] = "";
    Buf args = {0};
    import_parse(o, cfg, &spec, options, sizeof options, &args);
    char *delim = (char *)spec.delimiter;
    ImportInput *files;
    int n_files;
    ImportSummary s;
    if (import_expand_inputs(spec.format, o->inputs.items, o->inputs.n, &files, &n_files, &s.skipped)) stop(EXIT_BAD_INPUT);
    ImportSkipped skipped = s.skipped;
    char cpath[1024], ppath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    out_path(app, ppath, sizeof ppath, "data/plan.h5");
    if (import_write(cfg, &spec, files, n_files, cpath, args.s, (int64_t)args.n, &s)) stop(EXIT_BAD_INPUT);
    s.skipped = skipped;
    Corpus corpus;  // what every later command reads, read back
    if (corpus_read(&corpus, cfg, cpath)) stop(EXIT_BAD_INPUT);
    if (sampler_resolve_epochs(&app->cfg, &corpus)) unpublish(cpath, ppath);  // train.epochs -> train.updates
    int32_t *plan = plan_build(cfg, &corpus);
    if (!plan && cfg->train.sampler != SAMPLER_GLOBAL) unpublish(cpath, ppath);  // global: no ids to build
    if (plan_write(ppath, cfg, &corpus, plan, corpus.lock)) stop(EXIT_BAD_INPUT);

    say("import: %d file%s, --format %s%s%s: %lld documents (%lld empty skipped), %lld tokens (ddptok id = source id + 1)\n",
        n_files, n_files == 1 ? "" : "s", text_safe(o->format), options[0] ? " " : "", text_safe(options), (long long)s.documents,
        (long long)s.empty, (long long)s.tokens_read);
    const ImportSkipped *k = &s.skipped;
    if (k->links || k->directories || k->hidden || k->other)
        say("  skipped in the directories and patterns given: %lld symbolic link%s, %lld sub-director%s, %lld name%s starting with '.', "
            "%lld other%s\n", (long long)k->links, k->links == 1 ? "" : "s", (long long)k->directories, k->directories == 1 ? "y" : "ies",
            (long long)k->hidden, k->hidden == 1 ? "" : "s", (long long)k->other, spec.format == IMPORT_MEGATRON ? " (not .idx or .bin)" : "");
    say("  length rule [%d, %d] (data.min_length, data.max_length): %lld pieces, %lld shorter than data.min_length dropped "
        "(%lld tokens)\n", cfg->data.min_length, cfg->data.max_length, (long long)s.pieces, (long long)s.short_pieces,
        (long long)s.short_tokens);
    if (spec.split_from_names)
        say("  split from the inputs' names (--split-from-names; %lld document%s cut where the split changes between shards):\n",
            (long long)s.cut_at_split, s.cut_at_split == 1 ? "" : "s");
    else
        say("  split by document hash (data.import.split_seed %u; validation %g, test %g):\n", cfg->data.import.split_seed,
            cfg->data.import.validation_fraction, cfg->data.import.test_fraction);
    for (int i = 0; i < 3; i++)
        say("    %-10s %8lld documents %8lld sequences %10lld tokens\n", split_names[i], (long long)s.docs[i], (long long)s.seqs[i],
            (long long)s.tokens[i]);
    int named = 0;  // every input's name carries a split: say that it can be kept
    for (int i = 0; i < n_files; i++) named += files[i].split >= 0;
    if (!spec.split_from_names && named == n_files && n_files > 1)
        say("  (every input's name carries a split: --split-from-names keeps it instead of the document hash)\n");
    double total = s.seconds[0] + s.seconds[1] + s.seconds[2];
    say("  time: %.1f s (pass 1, counting: %.1f s; pass 2, placing: %.1f s; checksums' tree and publishing: %.1f s), "
        "%.0f MB/s of input\n", total, s.seconds[0], s.seconds[1], s.seconds[2], total > 0 ? (double)s.input_bytes / total / 1e6 : 0.0);
    say("  -> %s (%d sequences, %lld tokens), %s\n  corpus lock %s\n  data lock %s\n", text_safe(cpath), corpus.n,
        (long long)corpus.n_tokens, text_safe(ppath), corpus.corpus_lock, corpus.lock);
    warn_empty_splits(cfg, &spec, &s);
    import_inputs_free(files, n_files);
    free(plan), free(delim);
    buf_free(&args);
    corpus_free(&corpus);
    say_next_train(app, "import");
    return 0;
}

const Command cmd_import = {
    .name = "import",
    .run = import_run,
    .distributed = 0,
    .makes_data = 1,
    .summary = "your own files (bytes, llm.c, nanoGPT, Megatron, JSON Lines) -> corpus, plan and data lock in outputs/data/ "
               "(data.source: imported; docs/data.md)",
    .options = (const CommandOption[]){
        OPTION_STRING("--format", ImportOptions, format, "bytes|llmc|nanogpt|megatron|jsonl|jsonl-text",
                      "how the input files are read (docs/data.md)", .required = 1),
        OPTION_LIST("--input", ImportOptions, inputs, "PATH",
                    "a file, a directory of them or a quoted glob ('shards/*_train_*.bin'); repeatable, in order", .required = 1),
        OPTION_STRING("--eot", ImportOptions, eot, "ID", "the token id that ends a document (llmc, nanogpt, megatron, jsonl)"),
        OPTION_STRING("--delimiter", ImportOptions, delimiter, "TEXT",
                      "the bytes that separate documents (bytes; escapes \\n \\t \\xHH)"),
        OPTION_STRING("--key", ImportOptions, key, "NAME", "jsonl: the object key of the token list or text (default tokens or input_ids; text)"),
        OPTION_FLAG("--split-from-names", ImportOptions, split_from_names,
                    "each input's split from its name (train, val, test: llm.c's *_val_*.bin, nanoGPT's val.bin), not the hash"),
        OPTION_END,
    },
    .opts_size = sizeof(ImportOptions),
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "data", 1}, {0}},
    .check_options = import_check,
};
