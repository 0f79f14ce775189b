// generate.c — `generate`: a continuation from a checkpoint's model, of any model row. On a
// byte-level corpus (import --format bytes or jsonl-text: byte b is id b + 1, docs/data.md)
// the prompt is text (--prompt) and so is the output; on any other corpus the prompt is the
// source's token ids (--ids, each id s is ddptok's s + 1) and so is the output. Each next id
// comes from the row's logits of the sequence so far (the begin id 0 before its first token,
// as in training; the MLP reads its last k ids, the GPT up to its context): the most likely
// one at --temperature 0, else drawn from softmax(logits / T) with a Philox stream of --seed,
// over the --top-k K most likely ids only where K is given.
// The begin id (and, byte-level, any id that is no byte) is never drawn. Prints the prompt and
// its continuation (text escaped where not printable); writes the ids to outputs/generate.json.
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/philox.h"
#include "base/report.h"
#include "data/corpus.h"
#include "io/h5io.h"
#include "io/jsonio.h"
#include "store/checkpoint.h"

typedef struct {
    const char *checkpoint;  // --checkpoint DIR (default: the newest intact of artifacts/checkpoints)
    const char *prompt;      // --prompt TEXT (byte-level corpora)
    const char *ids;         // --ids S,S,... (the source's ids: any corpus)
    int tokens;              // --tokens N
    const char *temperature; // --temperature T (0: greedy; default 1)
    int seed;                // --seed S
    int top_k;               // --top-k K (0: off)
} GenerateOptions;

// Bytes as text: printable ASCII as it is, newline and tab as they are, a backslash doubled,
// anything else \xNN (so the text reads back to the same bytes).
static void escape_bytes(Buf *b, const unsigned char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned c = s[i];
        if (c == '\\') buf_printf(b, "\\\\");
        else if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f)) buf_printf(b, "%c", (char)c);
        else buf_printf(b, "\\x%02x", c);
    }
}

static int by_value_descending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

// The next id after the k ids ctx: argmax (T = 0; the lowest id of equal logits) or a draw
// from softmax(logits / T) over ids 1..n_ids - 1, at the stream's block `step`. With top_k
// K (0 < K < n_ids - 1) only the ids whose logit is at least the K-th largest take part
// (nanoGPT's: the others' logits -inf before the softmax); `scratch` (n_ids) for the sort.
static int32_t next_id(const double *logits, int n_ids, double T, int top_k, double *scratch, const RngStream *rng,
                       uint64_t step) {
    int32_t best = 1;
    for (int32_t v = 2; v < n_ids; v++)
        if (logits[v] > logits[best]) best = v;
    if (T == 0) return best;
    double z = 0, top = logits[best], floor = -INFINITY;
    if (top_k > 0 && top_k < n_ids - 1) {
        memcpy(scratch, logits + 1, (size_t)(n_ids - 1) * sizeof *scratch);
        qsort(scratch, (size_t)(n_ids - 1), sizeof *scratch, by_value_descending);
        floor = scratch[top_k - 1];
    }
    for (int32_t v = 1; v < n_ids; v++)
        if (logits[v] >= floor) z += exp((logits[v] - top) / T);
    Philox4 r = rng_block(rng, step, 0, 0);
    double u = (double)((((uint64_t)r.v[0] << 32) | r.v[1]) >> 11) * 0x1p-53, at = u * z, sum = 0;  // [0, 1)
    int32_t last = best;
    for (int32_t v = 1; v < n_ids; v++) {
        if (logits[v] < floor) continue;
        sum += exp((logits[v] - top) / T);
        last = v;
        if (at < sum) return v;
    }
    return last;  // rounding: the last one taking part
}

static int is_import_format(const char *name, void *ctx) {
    (void)ctx;
    return !strcmp(name, "import_format");
}

static int generate_run(App *app) {
    const GenerateOptions *o = app->opts;
    const Config *cfg = &app->cfg;
    char dir[1100], path[1200], hint[HINT_MAX];
    int tokens = o->tokens ? o->tokens : 64;  // 0: not given (its range starts at 1)
    double T = 1.0;
    if (o->temperature) {
        char *end;
        errno = 0;
        T = strtod(o->temperature, &end);
        if (end == o->temperature || *end || errno || !(T >= 0 && T <= 100))
            die(EXIT_BAD_INPUT, "generate --temperature %s: expected a number from 0 to 100 (0: the most likely byte each time)",
                o->temperature);
    }

    if (!o->prompt == !o->ids)
        die(EXIT_BAD_INPUT, "generate: give the prompt as --prompt TEXT (a byte-level corpus) or as --ids S,S,... (the source's token ids), one of them");
    // The corpus first: byte-level or not, and the one of this config (its data lock).
    char cpath[1024];
    out_path(app, cpath, sizeof cpath, "data/corpus.h5");
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    int cfd;
    int64_t csize;
    hid_t cf = h5_open_file(cpath, NULL, &cfd, &csize);  // its metadata: the corpus itself stays on disk
    if (cf < 0) stop(EXIT_BAD_INPUT);
    int has_format = h5_attr_each(cf, is_import_format, NULL) == 1;  // a synthetic corpus has none
    char *format = has_format ? h5_attr_read_str(cf, cpath, "import_format") : NULL;
    if (has_format && !format) stop(EXIT_BAD_INPUT);  // it said why
    h5_close(cf);
    close(cfd);
    int byte_level = format && (!strcmp(format, "bytes") || !strcmp(format, "jsonl-text"));
    if (o->prompt && !byte_level)
        die(EXIT_BAD_INPUT, "generate --prompt: %s holds token ids, not bytes (%s%s): give the prompt as --ids S,S,... (the source's ids), "
                            "or import text byte-level (`import --format bytes`; configs/fortunes.yaml is such a config)", cpath,
            format ? "import --format " : "data.source: ", format ? format : "synthetic");
    free(format);

    // The checkpoint: named, or the newest intact one; its data lock must be this corpus's.
    if (o->checkpoint) {
        snprintf(dir, sizeof dir, "%s", o->checkpoint);
        for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/';) dir[--n] = 0;
    } else {
        char root[1024];
        art_path(app, root, sizeof root, "checkpoints");
        int step = checkpoint_latest(&app->comm, root, 0, dir, sizeof dir);
        if (step == -1)
            die(EXIT_BAD_INPUT, "generate: no checkpoint under %s: train a model first: run `%s` (or name one: --checkpoint DIR)",
                root, hint_command(hint, sizeof hint, "train", cfg->train.world_size, NULL));
        if (step == -2) die(EXIT_BAD_INPUT, "generate: no intact checkpoint under %s (each one is damaged, see above)", root);
    }
    checkpoint_rank_path(path, sizeof path, dir, 0);
    if (access(path, F_OK) != 0)
        die(EXIT_BAD_INPUT, "generate --checkpoint %s: no checkpoint there (expected a step-NNNN directory with rank-0000.h5)", dir);
    CheckpointState s;
    if (checkpoint_load(path, &s)) stop(EXIT_BAD_INPUT);  // it said why
    if (strcmp(s.lock, corpus.lock) != 0)
        die(EXIT_BAD_INPUT, "generate --checkpoint %s: trained on other data than %s (data lock %.12s, this corpus and config: "
                            "%.12s): its ids are not this corpus's bytes", dir, cpath, s.lock, corpus.lock);
    const ModelShape *m = &s.m;
    int n_ids = byte_level && m->V > 257 ? 257 : m->V;  // byte-level: ids 1..n_ids - 1 are bytes 0..n_ids - 2
    const char *unit = byte_level ? "bytes" : "tokens";

    // The prompt: every id must be one of the model's; at most data.max_length - 1 of them,
    // the longest sequence the model was trained on less the one it is to continue.
    size_t plen = o->prompt ? strlen(o->prompt) : 0;
    int32_t *prompt_ids = xmalloc((plen + 1) * sizeof *prompt_ids);
    if (o->prompt) {
        const unsigned char *p = (const unsigned char *)o->prompt;
        for (size_t i = 0; i < plen; i++) {
            if (p[i] + 1 >= n_ids)
                die(EXIT_BAD_INPUT, "generate --prompt: byte %zu is 0x%02x, id %d: this model's ids end at %d (data.vocab_size %d holds "
                                    "bytes below 0x%02x)", i, p[i], p[i] + 1, m->V - 1, m->V, n_ids - 1);
            prompt_ids[i] = p[i] + 1;
        }
    } else {  // --ids: source ids, comma- or space-separated, each in [0, V - 2]
        for (const char *c = o->ids; *c;) {
            while (*c == ',' || *c == ' ') c++;
            if (!*c) break;
            char *end;
            errno = 0;
            long v = strtol(c, &end, 10);
            if (end == c || errno || v < 0 || v > m->V - 2 || (*end && *end != ',' && *end != ' '))
                die(EXIT_BAD_INPUT, "generate --ids %s: token %zu is not a source id in [0, %d] (data.vocab_size %d: source id s is ddptok id s + 1)",
                    o->ids, plen, m->V - 2, m->V);
            prompt_ids = realloc(prompt_ids, (plen + 2) * sizeof *prompt_ids);
            if (!prompt_ids) die_abort(EXIT_INTERNAL, "out of memory");
            prompt_ids[plen++] = (int32_t)v + 1;
            c = end;
        }
    }
    if (plen > (size_t)m->max_length - 1)
        die(EXIT_BAD_INPUT, "generate: a prompt of %zu %s, longer than the context allows: the model was trained on sequences of "
                            "at most data.max_length = %d, so a prompt of at most %d leaves one to continue (each one is "
                            "drawn from the last %d)", plen, unit, m->max_length, m->max_length - 1, m->context);

    // Generation: the sequence so far; the row reads what its model reads of it.
    size_t total = plen + (size_t)tokens;
    int32_t *ids = xmalloc(total * sizeof *ids);
    memcpy(ids, prompt_ids, plen * sizeof *ids);
    free(prompt_ids);
    double *logits = xmalloc((size_t)m->V * sizeof *logits), *scratch = xmalloc((size_t)m->V * sizeof *scratch);
    RngStream rng = rng_stream((uint32_t)o->seed, RNG_GENERATE, 0);
    for (size_t t = plen; t < total; t++) {
        model_row(m)->logits(m, s.theta, ids, (int)t, logits);
        ids[t] = next_id(logits, n_ids, T, o->top_k, scratch, &rng, t - plen);
    }
    Buf text = {0}, cont = {0};  // byte-level: the bytes, escaped; else the source ids, space-separated
    unsigned char *bytes = xmalloc(total + 1);
    for (size_t i = 0; i < total; i++) bytes[i] = (unsigned char)(ids[i] - 1);
    if (byte_level) {
        escape_bytes(&text, bytes, plen);
        escape_bytes(&cont, bytes + plen, (size_t)tokens);
    } else {
        for (size_t i = 0; i < total; i++) buf_printf(i < plen ? &text : &cont, "%s%d", (i ? " " : ""), ids[i] - 1);
    }

    int64_t *i64 = xmalloc(total * sizeof *i64);
    int exact;  // a checkpoint path that is not UTF-8 is kept repaired: it names, it is not read back
    for (size_t i = 0; i < total; i++) i64[i] = ids[i];
    write_json(app, "generate.json",
               json_pack("{s:o, s:i, s:o, s:o, s:o, s:o, s:i, s:o, s:i, s:i, s:s}", "checkpoint",
                         json_text(dir, &exact), "step", s.step, "prompt", json_string(text.n ? text.s : ""),
                         "prompt_ids", json_int_array(i64, (int)plen), "ids", json_int_array(i64 + plen, tokens), "text",
                         json_string(cont.n ? cont.s : ""), "tokens", tokens, "temperature", json_num(T), "seed", o->seed, "top_k", o->top_k,
                         "sampling", T == 0 ? "greedy" : "softmax(logits / temperature), Philox stream of the seed"));
    if (app->comm.rank == 0) {
        fprintf(stderr, "generate: step-%d model (%s) of %s, %d %s after a prompt of %zu, %s (seed %d); the ids: %s/generate.json\n",
                s.step, model_kind_names[m->kind], text_safe(dir), tokens, unit, plen, T == 0 ? "greedy (temperature 0)" : "sampled",
                o->seed, text_safe(app->cfg.paths.outputs));
        printf("%s%s\n", text.n ? text.s : "", cont.n ? cont.s : "");
        fflush(stdout);
    }
    buf_free(&text), buf_free(&cont);
    free(i64), free(bytes), free(logits), free(scratch), free(ids);
    checkpoint_state_free(&s);
    corpus_free(&corpus);
    return 0;
}

const Command cmd_generate = {
    .name = "generate",
    .run = generate_run,
    .distributed = 0,
    .summary = "a continuation from a checkpoint's model: on a byte-level corpus (import --format bytes, jsonl-text) text after "
               "--prompt TEXT, on any other the source's token ids after --ids; N more, greedy at temperature 0, else sampled with "
               "the seed; the ids -> outputs/generate.json",
    .options = (const CommandOption[]){
        OPTION_STRING("--prompt", GenerateOptions, prompt, "TEXT", "the text to continue (its bytes; may be empty): a byte-level corpus",
                      .excludes = "--ids"),
        OPTION_STRING("--ids", GenerateOptions, ids, "S,S,...", "the source's token ids to continue (s is ddptok id s + 1): any corpus"),
        OPTION_STRING("--checkpoint", GenerateOptions, checkpoint, "DIR", "that checkpoint instead of the newest intact one"),
        OPTION_INT("--tokens", GenerateOptions, tokens, "N", 1, 1000000, "a number of bytes from 1 to 1000000",
                   "how many bytes or tokens to generate (default 64)"),
        OPTION_STRING("--temperature", GenerateOptions, temperature, "T",
                      "from 0 to 100; 0: the most likely byte each time, else softmax(logits / T) (default 1)"),
        OPTION_INT("--seed", GenerateOptions, seed, "S", 0, 1000000000, "a seed from 0 to 1000000000",
                   "the sampling stream's seed (default 0)"),
        OPTION_INT("--top-k", GenerateOptions, top_k, "K", 0, 1000000000, "a number of ids from 0 to 1000000000 (0: off)",
                   "sample from the K most likely ids only (nanoGPT's top_k: the rest -inf before the softmax); 0 or at "
                   "least the vocabulary: off (default 0)"),
        OPTION_END,
    },
    .opts_size = sizeof(GenerateOptions),
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "generate.json", 0}, {0}},
};
