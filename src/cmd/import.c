// import.c — `import`: the users' files into this config's corpus and plan -> outputs/data/
// (docs/data.md). The config decides what the documents become (data.source: imported,
// data.import.* for the split, data.min_length / data.max_length for the length rule,
// data.vocab_size); the options name the files and how to read them. corpus.h5 is the
// one prepare writes, so every later command reads it unchanged, plus where it came from.
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/import.h"
#include "data/sampler.h"

typedef struct {
    const char *format, *eot, *delimiter;  // as given
    OptionList inputs;                     // every --input, in order
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

// One "SHA256  NAME" line of import_files as sha256sum writes it (GNU coreutils): a name
// holding a backslash, a newline or a carriage return has them as \\, \n, \r and the line
// starts with a backslash, so no name can end its line early or add a line of its own.
static void sums_line(Buf *b, const char *sum, const char *name) {
    int esc = strpbrk(name, "\\\n\r") != NULL;
    buf_printf(b, "%s%s  ", esc ? "\\" : "", sum);
    for (const char *p = name; *p; p++)
        if (esc && (*p == '\\' || *p == '\n' || *p == '\r')) buf_printf(b, "\\%c", *p == '\n' ? 'n' : *p == '\r' ? 'r' : '\\');
        else buf_printf(b, "%c", *p);
    buf_printf(b, "\n");
}

// The options into `spec` (its delimiter allocated; `options` their text for the summary):
// dies (exit 2, one line) on a missing or bad one. The run and --check (import_check) alike.
static void import_parse(const ImportOptions *o, const Config *cfg, ImportSpec *spec, char *options, size_t options_len) {
    if (!o || !o->format) die(EXIT_BAD_INPUT, "import: --format is required (bytes, llmc, nanogpt, megatron, jsonl, jsonl-text)");
    if (!o->inputs.n) die(EXIT_BAD_INPUT, "import: --input PATH is required (a file or a directory; repeatable)");
    *spec = (ImportSpec){.eot = -1, .vocab = cfg->data.vocab_size - 1};
    int f = 0;
    while (f < IMPORT_FORMAT_COUNT && strcmp(o->format, import_format_names[f])) f++;
    if (f == IMPORT_FORMAT_COUNT)
        die(EXIT_BAD_INPUT, "import --format %s: expected bytes, llmc, nanogpt, megatron, jsonl or jsonl-text", o->format);
    spec->format = (ImportFormat)f;
    const ImportReader *reader = &import_readers[f];
    char delim_text[420] = "";
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
        snprintf(options, options_len, "--eot %lld", v);
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
        snprintf(options, options_len, "--delimiter \"%s\"", delim_text);
    }

}

// What the run checks before it reads a token, the run and --check alike
// (Command.check_options): the config's data.source, the options, that every --input is
// there, and the memory the corpus can need (import_budget, from the files' sizes). --check
// said ok to a synthetic config, a missing file and an import over the budget.
static void import_check(const App *app) {
    const Config *cfg = &app->cfg;
    const ImportOptions *o = app->opts;
    if (cfg->data.source != DATA_SOURCE_IMPORTED)
        die(EXIT_BAD_INPUT, "%s: data.source is %s: import makes the corpus of data.source: imported (add it to the config, "
            "or --set data.source=imported)", cfg->source, data_source_names[cfg->data.source]);
    ImportSpec spec;
    char options[700];
    import_parse(o, cfg, &spec, options, sizeof options);
    free((char *)spec.delimiter);
    char **files;
    int n_files;
    uint64_t bytes;
    if (import_expand_inputs(spec.format, o->inputs.items, o->inputs.n, &files, &n_files)) stop(EXIT_BAD_INPUT);
    int rc = import_budget(cfg, &spec, files, n_files, &bytes);
    for (int i = 0; i < n_files; i++) free(files[i]);
    free(files);
    if (rc) stop(EXIT_BAD_INPUT);
}

static int import_run(App *app) {
    const Config *cfg = &app->cfg;
    const ImportOptions *o = app->opts;  // import_check (check_options) ran first: data.source, inputs, budget
    ImportSpec spec;
    char options[700] = "";
    import_parse(o, cfg, &spec, options, sizeof options);
    char *delim = (char *)spec.delimiter;

    char **files;
    int n_files;
    if (import_expand_inputs(spec.format, o->inputs.items, o->inputs.n, &files, &n_files)) stop(EXIT_BAD_INPUT);
    Corpus corpus;
    int64_t *document;
    ImportSummary s;
    if (import_corpus(&corpus, &document, cfg, &spec, files, n_files, &s)) stop(EXIT_BAD_INPUT);
    if (sampler_resolve_epochs(&app->cfg, &corpus)) stop(EXIT_BAD_INPUT);  // train.epochs -> train.updates
    int32_t *plan = plan_build(cfg, &corpus);
    if (!plan && cfg->train.sampler != SAMPLER_GLOBAL) stop(EXIT_BAD_INPUT);  // global: no ids to build

    // Where it came from, in corpus.h5: the format, the options, each file's SHA-256 and the counts.
    Buf list = {0}, summary = {0};
    buf_printf(&list, "%s", "");
    for (int i = 0; i < n_files; i++) {
        char sum[65];
        if (import_file_sha256(files[i], sum)) stop(EXIT_BAD_INPUT);
        sums_line(&list, sum, files[i]);
    }
    buf_printf(&summary,
               "%lld documents (%lld empty skipped), %lld tokens read; %lld pieces, %lld shorter than data.min_length dropped "
               "(%lld tokens); sequences train %lld, validation %lld, test %lld; tokens %lld, %lld, %lld",
               (long long)s.documents, (long long)s.empty, (long long)s.tokens_read, (long long)s.pieces,
               (long long)s.short_pieces, (long long)s.short_tokens, (long long)s.seqs[0], (long long)s.seqs[1],
               (long long)s.seqs[2], (long long)s.tokens[0], (long long)s.tokens[1], (long long)s.tokens[2]);
    const char *attrs[] = {"import_format", import_format_names[spec.format], "import_options", options, "import_files", list.s,
                           "import_summary", summary.s};
    CorpusProvenance prov = {document, 4, attrs};
    char cpath[1024], ppath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    out_path(app, ppath, sizeof ppath, "data/plan.h5");
    if (corpus_write_provenance(&corpus, cfg, cpath, &prov) || plan_write(ppath, cfg, &corpus, plan, corpus.lock)) stop(EXIT_BAD_INPUT);

    say("import: %d file%s, --format %s%s%s: %lld documents (%lld empty skipped), %lld tokens (ddptok id = source id + 1)\n",
        n_files, n_files == 1 ? "" : "s", text_safe(o->format), options[0] ? " " : "", options, (long long)s.documents, (long long)s.empty,
        (long long)s.tokens_read);
    say("  length rule [%d, %d] (data.min_length, data.max_length): %lld pieces, %lld shorter than data.min_length dropped "
        "(%lld tokens)\n", cfg->data.min_length, cfg->data.max_length, (long long)s.pieces, (long long)s.short_pieces,
        (long long)s.short_tokens);
    say("  split by document hash (data.import.split_seed %u; validation %g, test %g):\n", cfg->data.import.split_seed,
        cfg->data.import.validation_fraction, cfg->data.import.test_fraction);
    static const char *const split_names[3] = {"train", "validation", "test"};
    for (int k = 0; k < 3; k++)
        say("    %-10s %8lld documents %8lld sequences %10lld tokens\n", split_names[k], (long long)s.docs[k], (long long)s.seqs[k],
            (long long)s.tokens[k]);
    say("  -> %s (%d sequences, %lld tokens), %s\n  data lock %s\n", text_safe(cpath), corpus.n, (long long)corpus.n_tokens, text_safe(ppath),
        corpus.lock);
    for (int i = 0; i < n_files; i++) free(files[i]);
    free(files), free(plan), free(document), free(delim);
    buf_free(&list), buf_free(&summary);
    corpus_free(&corpus);
    say_next_train(app, "import");
    return 0;
}

const Command cmd_import = {
    .name = "import",
    .run = import_run,
    .distributed = 0,
    .summary = "your own files (bytes, llm.c, nanoGPT, Megatron, JSON Lines) -> corpus, plan and data lock in outputs/data/ "
               "(data.source: imported; docs/data.md)",
    .options = (const CommandOption[]){
        OPTION_STRING("--format", ImportOptions, format, "bytes|llmc|nanogpt|megatron|jsonl|jsonl-text",
                      "how the input files are read (docs/data.md)", .required = 1),
        OPTION_LIST("--input", ImportOptions, inputs, "PATH", "a file or a directory of them (repeatable, in order)", .required = 1),
        OPTION_STRING("--eot", ImportOptions, eot, "ID", "the token id that ends a document (llmc, nanogpt)"),
        OPTION_STRING("--delimiter", ImportOptions, delimiter, "TEXT",
                      "the bytes that separate documents (bytes; escapes \\n \\t \\xHH)"),
        OPTION_END,
    },
    .opts_size = sizeof(ImportOptions),
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "data", 1}, {0}},
    .check_options = import_check,
};
