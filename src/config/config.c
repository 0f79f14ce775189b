// config.c — the key table (type, range, default, trajectory/layout flags, place in the
// data lock) and what it drives: defaults, parsing a YAML tree (yaml_tree.c) into a
// Config, --set, validation. Emission, comparison and the lock's fields: config_emit.c.
// Errors are returned to the caller as one line.
#include "config/config.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/report.h"
#include "config/budget.h"
#include "config/config_keys.h"
#include "config/yaml_tree.h"

#define MODEL_NAME(UP, low) [MODEL_##UP] = #low,
const char *const model_kind_names[MODEL_COUNT] = {DDPTOK_MODELS(MODEL_NAME)};
#undef MODEL_NAME
const char *const data_source_names[DATA_SOURCE_COUNT] = {"synthetic", "imported"};
const char *const sampler_names[SAMPLER_COUNT] = {"bands", "global"};
const char *const partition_names[PARTITION_COUNT] = {"bands", "balanced", "round-robin"};
const char *const first_layer_names[FIRST_LAYER_COUNT] = {[FIRST_LAYER_DENSE] = "dense", [FIRST_LAYER_FACTORED] = "factored"};
const char *const overlap_names[OVERLAP_COUNT] = {"none", "output-layer", "blocks"};
static const char *const switch_names[2] = {"false", "true"};

// ---------------------------------------------------------------------------------------
// The key table: one row per key (config_keys.h): type, range, flags, what is expected,
// its default (YAML) and its name in the data lock. corpus_lock hashes the lock keys'
// lines in table order: moving a lock key's row changes every data lock (format v1).

#define OFF(f) offsetof(Config, f)
#define HYPER_YAML_1(a) #a
#define HYPER_YAML_2(a, b) "[" #a ", " #b "]"
#define HYPER_KEY(field, n, attrs, lo, hi, def, use, expect)                                                          \
    {"train.optimizer." #field, n == 2 ? F_PAIR : F_DOUBLE, OFF(train.hyper.field), lo, hi, F_TRAJECTORY, expect, NULL, 0, \
     HYPER_YAML_##n def, NULL},
#define MODEL_KEY(field, lo, hi, def, use, expect) \
    {"model." #field, F_INT, OFF(model.field), lo, hi, F_TRAJECTORY, expect, NULL, 0, #def, NULL},
const Field config_fields[] = {
    {"seed", F_U32, OFF(seed), 0, 4294967295.0, F_TRAJECTORY | F_CORPUS_SYNTHETIC, "an integer in [0, 2^32)", NULL, 0, "1234", "seed"},
    {"data.vocab_size", F_INT, OFF(data.vocab_size), 3, 1 << 20, F_TRAJECTORY | F_CORPUS, "an integer in [3, 2^20]", NULL, 0, "128", "vocab"},
    {"data.splits.train", F_INT, OFF(data.n_train), 1, 1 << 24, F_TRAJECTORY | F_CORPUS_SYNTHETIC, "a positive integer", NULL, 0, "1024", "splits"},
    {"data.splits.validation", F_INT, OFF(data.n_validation), 0, 1 << 24, F_TRAJECTORY | F_CORPUS_SYNTHETIC, "a non-negative integer", NULL, 0, "128", "splits"},
    {"data.splits.test", F_INT, OFF(data.n_test), 0, 1 << 24, F_TRAJECTORY | F_CORPUS_SYNTHETIC, "a non-negative integer", NULL, 0, "256", "splits"},
    {"data.min_length", F_INT, OFF(data.min_length), 1, 1 << 16, F_TRAJECTORY | F_CORPUS, "a positive integer", NULL, 0, "16", "lengths"},
    {"data.max_length", F_INT, OFF(data.max_length), 1, 1 << 16, F_TRAJECTORY | F_CORPUS, "a positive integer", NULL, 0, "128", "lengths"},
    {"data.unsupervised_prefix", F_INT, OFF(data.unsupervised_prefix), 0, 1 << 16, F_TRAJECTORY, "a non-negative integer", NULL, 0, "0", "labels"},
    {"data.ignore_token", F_INT, OFF(data.ignore_token), -1, 1 << 20, F_TRAJECTORY, "a token id, or -1 for none", NULL, 0, "-1", "labels"},
    {"data.max_labels", F_INT, OFF(data.max_labels), 0, 1 << 16, F_TRAJECTORY, "a non-negative integer (0: every label)", NULL, 0, "0", "labels"},
    {"data.markov_support", F_INT, OFF(data.markov_support), 1, 1 << 20, F_TRAJECTORY | F_CORPUS_SYNTHETIC, "a positive integer", NULL, 0, "4", "support"},
    // An imported corpus (docs/data.md): in the lock only then, so every synthetic lock stays as it was.
    // F_CORPUS: in the corpus lock too (what corpus.h5 carries: its content and the rules that
    // cut it, docs/data.md "Two locks"); F_CORPUS_SYNTHETIC: only for prepare's corpus, which they generate.
    {"data.source", F_ENUM, OFF(data.source), 0, 0, F_TRAJECTORY | F_LOCK_IMPORT | F_CORPUS, NULL, data_source_names, DATA_SOURCE_COUNT, "synthetic", "source"},
    {"data.import.split_seed", F_U32, OFF(data.import.split_seed), 0, 4294967295.0, F_TRAJECTORY | F_LOCK_IMPORT | F_CORPUS, "an integer in [0, 2^32)", NULL, 0, "0", "split"},
    {"data.import.validation_fraction", F_DOUBLE, OFF(data.import.validation_fraction), 0, 1, F_TRAJECTORY | F_LOCK_IMPORT | F_CORPUS, "a number in [0, 1]", NULL, 0, "0.1", "split"},
    {"data.import.test_fraction", F_DOUBLE, OFF(data.import.test_fraction), 0, 1, F_TRAJECTORY | F_LOCK_IMPORT | F_CORPUS, "a number in [0, 1]", NULL, 0, "0.1", "split"},
    {"model.kind", F_ENUM, OFF(model.kind), 0, 0, F_TRAJECTORY, NULL, model_kind_names, MODEL_COUNT, "mlp", NULL},
    // model.<field>: the models' shape keys, one row each from config.h's table.
    DDPTOK_MODEL_KEYS(MODEL_KEY)
    {"model.dropout", F_DOUBLE, OFF(model.dropout), 0, 0.999999, F_TRAJECTORY, "a number in [0, 1)", NULL, 0, "0.1", NULL},
    {"train.world_size", F_INT, OFF(train.world_size), 1, MAX_WORLD, F_TRAJECTORY | F_LAYOUT | F_LOCK_BANDS | F_AUTO, "an integer in [1, 65536], or auto (the ranks launched)", NULL, 0, "auto", "world"},
    {"train.batch_size_per_rank", F_INT, OFF(train.batch_size_per_rank), 1, 1 << 16, F_TRAJECTORY | F_LAYOUT | F_LOCK_BANDS, "a positive integer", NULL, 0, "4", "batch"},
    {"train.accumulation", F_INT, OFF(train.accumulation), 1, 1 << 16, F_TRAJECTORY | F_LAYOUT | F_LOCK_BANDS, "a positive integer", NULL, 0, "2", "accumulation"},
    {"train.rank_bands", F_BANDS, OFF(train.bands), 0, 0, F_TRAJECTORY | F_LAYOUT | F_LOCK_BANDS, "'auto' or a list of [lo, hi] length bands, one per rank", NULL, 0, "[[16, 64], [65, 128]]", "bands"},
    {"train.updates", F_INT, OFF(train.updates), 1, 1 << 24, 0, "a positive integer", NULL, 0, "100", NULL},
    {"train.epochs", F_INT, OFF(train.epochs), 0, 1 << 24, 0, "a non-negative integer (0: train.updates decides)", NULL, 0, "0", NULL},
    {"train.interrupt_at", F_INT, OFF(train.interrupt_at), 0, 1 << 24, F_RUN_ONLY, "a non-negative integer (0: no interruption)", NULL, 0, "50", NULL},
    {"train.checkpoint_every", F_INT, OFF(train.checkpoint_every), 0, 1 << 24, F_AUTO | F_RUN_ONLY, "a non-negative integer (0: off), or auto (about every tenth of the run)", NULL, 0, "auto", NULL},
    {"train.log_every", F_INT, OFF(train.log_every), 0, 1 << 24, F_RUN_ONLY, "a non-negative integer (0: every step up to 20 steps, else ~20 lines)", NULL, 0, "0", NULL},
    {"train.eval_every", F_INT, OFF(train.eval_every), 0, 1 << 24, F_AUTO | F_RUN_ONLY, "a non-negative integer (0: off), or auto (with the checkpoints)", NULL, 0, "auto", NULL},
    // How many of a chunk's 16 sequences one evaluation pass holds: memory, not the figures (evaluation.h).
    {"train.eval_batch", F_INT, OFF(train.eval_batch), 1, EVALUATE_BATCH, F_RUN_ONLY, "an integer in [1, 16] (sequences per evaluation pass)", NULL, 0, "16", NULL},
    {"train.keep_best", F_ENUM, OFF(train.keep_best), 0, 0, F_RUN_ONLY, NULL, switch_names, 2, "false", NULL},
    {"train.normalization", F_ENUM, OFF(train.normalization), 0, 0, F_TRAJECTORY, NULL, normalization_names, NORM_COUNT, "global-token", NULL},
    {"train.loss_unit", F_ENUM, OFF(train.loss_unit), 0, 0, F_TRAJECTORY, NULL, loss_unit_names, UNIT_COUNT, "token", NULL},
    {"train.sampler", F_ENUM, OFF(train.sampler), 0, 0, F_TRAJECTORY | F_LOCK_GLOBAL, NULL, sampler_names, SAMPLER_COUNT, "bands", "sampler"},
    {"train.partition", F_ENUM, OFF(train.partition), 0, 0, F_TRAJECTORY | F_LAYOUT, NULL, partition_names, PARTITION_COUNT, "bands", NULL},
    {"train.global_batch", F_INT, OFF(train.global_batch), 1, 1 << 20, F_TRAJECTORY | F_LOCK_GLOBAL, "a positive integer (sequences per window, global sampler)", NULL, 0, "16", "global_batch"},
    {"train.overlap", F_ENUM, OFF(train.overlap), 0, 0, 0, NULL, overlap_names, OVERLAP_COUNT, "none", NULL},
    {"train.optimizer.name", F_ENUM, OFF(train.optimizer), 0, 0, F_TRAJECTORY, NULL, optimizer_names, OPT_COUNT, "sgd", NULL},
    // train.optimizer.<field>: one row per hyper-parameter, from optimizer.h's table.
    OPTIMIZER_HYPERS(HYPER_KEY)
    // Which tensors weight decay applies to (optimizer.h, DecayGroups): kept beside the rows above (one YAML block).
    {"train.optimizer.decay", F_ENUM, OFF(train.decay), 0, 0, F_TRAJECTORY | F_DIGEST_DEFAULT, NULL, decay_group_names, DECAY_COUNT, "all", NULL},
    // The learning-rate schedule (optimizer.h, LrSchedule): constant by default, nanoGPT's cosine.
    {"train.lr_schedule", F_ENUM, OFF(train.schedule.kind), 0, 0, F_TRAJECTORY | F_DIGEST_DEFAULT, NULL, lr_schedule_names, LR_SCHEDULE_COUNT, "constant", NULL},
    {"train.warmup_updates", F_INT, OFF(train.schedule.warmup), 0, 1 << 24, F_TRAJECTORY | F_DIGEST_DEFAULT, "a non-negative integer (cosine: updates of linear warmup)", NULL, 0, "0", NULL},
    {"train.min_lr", F_DOUBLE, OFF(train.schedule.min_lr), 0, 1e6, F_TRAJECTORY | F_DIGEST_DEFAULT, "a non-negative number (cosine: the rate past train.lr_decay_updates)", NULL, 0, "0", NULL},
    {"train.lr_decay_updates", F_INT, OFF(train.schedule.decay_updates), 0, 1 << 24, F_TRAJECTORY | F_DIGEST_DEFAULT, "a non-negative integer (cosine: the update where the decay ends; 0: train.updates)", NULL, 0, "0", NULL},
    // torch's clip_grad_norm_ on the all-reduced gradient (trainer_update).
    {"train.grad_clip", F_DOUBLE, OFF(train.grad_clip), 0, 1e6, F_TRAJECTORY | F_DIGEST_DEFAULT, "a non-negative number (the global gradient norm's ceiling; 0: off)", NULL, 0, "0", NULL},
    // Where θ0 comes from: the seed's init, or a Hugging Face GPT-2 directory (model/hf.h).
    {"train.init_from", F_PATH, OFF(train.init_from), 0, 0, F_TRAJECTORY | F_OPTIONAL, "a Hugging Face GPT-2 directory, or '' (the seed's init)", NULL, 0, "", NULL},
    // A computation strategy, not the model: a checkpoint resumes under either (the bits differ).
    {"train.first_layer", F_ENUM, OFF(train.first_layer), 0, 0, 0, NULL, first_layer_names, FIRST_LAYER_COUNT, "dense", NULL},
    {"parity.atol", F_DOUBLE, OFF(parity.atol), 0, 1e6, 0, "a non-negative number", NULL, 0, "1e-6", NULL},
    {"parity.rtol", F_DOUBLE, OFF(parity.rtol), 0, 1e6, 0, "a non-negative number", NULL, 0, "1e-4", NULL},
    {"exercise.short_tokens", F_INT, OFF(exercise.short_tokens), 1, 1 << 16, 0, "a positive integer", NULL, 0, "12", NULL},
    {"exercise.long_tokens", F_INT, OFF(exercise.long_tokens), 1, 1 << 16, 0, "a positive integer", NULL, 0, "36", NULL},
    {"paths.outputs", F_PATH, OFF(paths.outputs), 0, 0, 0, "a non-empty path", NULL, 0, "outputs", NULL},
    {"paths.artifacts", F_PATH, OFF(paths.artifacts), 0, 0, 0, "a non-empty path", NULL, 0, "artifacts", NULL},
};
const int config_n_fields = (int)(sizeof config_fields / sizeof config_fields[0]);

// Names other trainers use for ddptok's keys, matched against the last component of an
// unknown key (`learning_rate`, `train.learning_rate`, `optim.lr` all suggest
// train.optimizer.lr), with a note where the meaning differs. A key whose own last
// component is the same word needs no row: "did you mean" searches those too.
static const struct {
    const char *word, *key, *note;
} key_synonyms[] = {
    {"learning_rate", "train.optimizer.lr", NULL},
    {"lr", "train.optimizer.lr", NULL},
    {"batch_size", "train.batch_size_per_rank", NULL},
    {"micro_batch_size", "train.batch_size_per_rank", NULL},
    {"per_device_train_batch_size", "train.batch_size_per_rank", NULL},
    {"global_batch_size", "train.global_batch", NULL},
    {"steps", "train.updates", NULL},
    {"max_steps", "train.updates", NULL},
    {"num_steps", "train.updates", NULL},
    {"iterations", "train.updates", NULL},
    {"iters", "train.updates", NULL},
    {"max_iters", "train.updates", NULL},
    {"epochs", "train.epochs", NULL},
    {"num_epochs", "train.epochs", NULL},
    {"gradient_accumulation_steps", "train.accumulation", NULL},
    {"grad_accum", "train.accumulation", NULL},
    {"accumulation_steps", "train.accumulation", NULL},
    {"world", "train.world_size", NULL},
    {"ranks", "train.world_size", NULL},
    {"nprocs", "train.world_size", NULL},
    {"wd", "train.optimizer.weight_decay", NULL},
    {"beta1", "train.optimizer.betas", NULL},
    {"beta2", "train.optimizer.betas", NULL},
    {"epsilon", "train.optimizer.eps", NULL},
    {"optimizer", "train.optimizer.name", NULL},
    {"optim", "train.optimizer.name", NULL},
    {"vocab", "data.vocab_size", NULL},
    {"embedding_dim", "model.embed_dim", NULL},
    {"embed_size", "model.embed_dim", NULL},
    {"d_model", "model.n_embd", "(model.kind: gpt; the window MLP's is model.embed_dim)"},
    {"n_embed", "model.n_embd", NULL},
    {"num_layers", "model.n_layer", NULL},
    {"n_layers", "model.n_layer", NULL},
    {"num_hidden_layers", "model.n_layer", NULL},
    {"num_heads", "model.n_head", NULL},
    {"n_heads", "model.n_head", NULL},
    {"num_attention_heads", "model.n_head", NULL},
    {"model_type", "model.kind", NULL},
    {"architecture", "model.kind", NULL},
    {"hidden_size", "model.hidden", NULL},
    {"hidden_dim", "model.hidden", NULL},
    {"context_length", "model.context", NULL},
    {"block_size", "model.context", "(the GPT's context is data.max_length)"},
    {"n_positions", "data.max_length", "(the GPT's context)"},
    {"n_ctx", "data.max_length", "(the GPT's context)"},
    {"dropout_rate", "model.dropout", NULL},
    {"save_every", "train.checkpoint_every", NULL},
    {"checkpoint_interval", "train.checkpoint_every", NULL},
    {"log_interval", "train.log_every", NULL},
    {"output_dir", "paths.outputs", NULL},
    {"checkpoint_dir", "paths.artifacts", NULL},
    {"random_seed", "seed", NULL},
};

int config_key(int i, ConfigKey *out) {
    if (i < 0 || i >= config_n_fields) return -1;
    static const char kinds[] = {[F_INT] = 'i', [F_U32] = 'u', [F_DOUBLE] = 'd', [F_ENUM] = 'e', [F_BANDS] = 'b', [F_PATH] = 'p', [F_PAIR] = 'l'};
    const Field *f = &config_fields[i];
    *out = (ConfigKey){f->key, kinds[f->type], f->min, f->max, f->names, f->n_names};
    return 0;
}

// The hyper-parameter row (optimizer.h) of a train.optimizer.<field> key, or NULL.
static const HyperRow *hyper_row(const Field *f) {
    static const char prefix[] = "train.optimizer.";
    if (strncmp(f->key, prefix, sizeof prefix - 1) != 0) return NULL;
    for (int i = 0; i < optimizer_n_hypers; i++)
        if (!strcmp(f->key + sizeof prefix - 1, optimizer_hypers[i].field)) return &optimizer_hypers[i];
    return NULL;
}

// What a field expects, for error messages: its text, or "one of A, B, …" for an enum; a
// hyper-parameter that not every optimizer reads adds the ones that do ("(adamw)").
static const char *expected(const Field *f, char *buf, size_t len) {
    const HyperRow *h = hyper_row(f);
    if (h && h->users != (1u << OPT_COUNT) - 1) {
        int n = snprintf(buf, len, "%s (", f->expect);
        for (int k = 0, first = 1; k < OPT_COUNT && n < (int)len; k++)
            if (h->users & OPT_USES(k)) n += snprintf(buf + n, len - (size_t)n, "%s%s", first ? "" : ", ", optimizer_names[k]), first = 0;
        if (n < (int)len) snprintf(buf + n, len - (size_t)n, ")");
        return buf;
    }
    if (f->type != F_ENUM) return f->expect;
    int n = snprintf(buf, len, "one of");
    for (int i = 0; i < f->n_names && n < (int)len; i++) n += snprintf(buf + n, len - (size_t)n, "%s %s", i ? "," : "", f->names[i]);
    return buf;
}
_Static_assert(sizeof(ModelKind) == sizeof(int) && sizeof(DataSource) == sizeof(int) && sizeof(Normalization) == sizeof(int) && sizeof(LossUnit) == sizeof(int) && sizeof(SamplerKind) == sizeof(int) &&
                   sizeof(PartitionKind) == sizeof(int) && sizeof(OptimizerKind) == sizeof(int) &&
                   sizeof(FirstLayer) == sizeof(int) && sizeof(OverlapKind) == sizeof(int),
               "F_ENUM stores an int");

// ---------------------------------------------------------------------------------------
// Setting one field from a node

static const Field *field_find(const char *key) {
    for (int i = 0; i < config_n_fields; i++)
        if (strcmp(config_fields[i].key, key) == 0) return &config_fields[i];
    return NULL;
}

// The last dotted component of a key ("lr" of "train.optimizer.lr").
static const char *last_component(const char *key) {
    const char *dot = strrchr(key, '.');
    return dot ? dot + 1 : key;
}

// " (did you mean 'train.updates'?)" for the key `key` most likely meant, or "". In order:
// a synonym of its last component (learning_rate -> train.optimizer.lr); a key of another
// section with the same last component (model.lr, train.momentum); a typo of a whole key
// (train.updats); a typo of a last component in any section (train.momentun).
static const char *did_you_mean(const char *key, char *buf, size_t len) {
    const char *names[config_n_fields], *lasts[config_n_fields];
    for (int i = 0; i < config_n_fields; i++) names[i] = config_fields[i].key, lasts[i] = last_component(config_fields[i].key);
    char word[128];
    snprintf(word, sizeof word, "%s", last_component(key));
    for (char *p = word; *p; p++) *p = *p == '-' ? '_' : (*p >= 'A' && *p <= 'Z') ? (char)(*p - 'A' + 'a') : *p;
    const char *near = NULL, *note = NULL;
    for (size_t i = 0; i < sizeof key_synonyms / sizeof *key_synonyms && !near; i++)
        if (!strcmp(word, key_synonyms[i].word)) near = key_synonyms[i].key, note = key_synonyms[i].note;
    for (int i = 0; i < config_n_fields && !near; i++)
        if (!strcmp(word, lasts[i])) near = names[i];
    if (!near) near = closest_name(key, names, config_n_fields);
    if (!near) {
        const char *last = closest_name(word, lasts, config_n_fields);
        for (int i = 0; i < config_n_fields && last && !near; i++)
            if (lasts[i] == last) near = names[i];
    }
    if (near) snprintf(buf, len, " (did you mean '%s'?%s%s)", near, note ? " " : "", note ? note : "");
    else buf[0] = 0;
    return buf;
}

// A range bound as the messages write it: 16777216 as 2^24, a power of ten as 1e6.
static void range_text(double v, char *out, size_t len) {
    double a = fabs(v);
    int e2 = a >= 1024 && a == floor(a) ? (int)round(log2(a)) : 0, e10 = a >= 1e5 ? (int)round(log10(a)) : 0;
    if (e2 && ldexp(1, e2) == a) snprintf(out, len, "%s2^%d", v < 0 ? "-" : "", e2);
    else if (e10 && pow(10, e10) == a) snprintf(out, len, "%s1e%d", v < 0 ? "-" : "", e10);
    else snprintf(out, len, "%.15g", v);
}

// A finite number. An underflow (ERANGE with a result at most DBL_MIN: a subnormal or 0) is
// the nearest double like any other rounding: refusing it refused the decimal emission of a
// subnormal that a hex float (0x1p-1074) had set, so that config did not round-trip.
static int parse_number(const char *s, double *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if ((errno && !(errno == ERANGE && fabs(v) <= DBL_MIN)) || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int set_field(Config *cfg, const Field *f, const YamlNode *n, YamlCtx *ctx) {
    char *base = (char *)cfg;
    const char *what = n->kind == N_SCALAR ? n->text : (n->kind == N_SEQ ? "a list" : "a mapping");
    char eb[256];
#define BAD() yaml_fail(ctx, "%s: %s: expected %s, got '%s'", yaml_at(ctx, n->line), f->key, expected(f, eb, sizeof eb), what)
    if (f->type == F_BANDS) {
        if (n->kind == N_SCALAR) {
            if (strcmp(n->text, "auto") != 0) return BAD();
            cfg->train.bands_auto = 1;
            cfg->train.n_bands = 0;
            return 0;
        }
        if (n->kind != N_SEQ || n->n == 0) return BAD();
        if (n->n > MAX_BANDS)
            return yaml_fail(ctx, "%s: %s: a list of %d bands: a list holds at most %d (one per rank); for more ranks use auto",
                             yaml_at(ctx, n->line), f->key, n->n, MAX_BANDS);
        for (int r = 0; r < n->n; r++) {
            const YamlNode *b = n->kids[r];
            double lo, hi;
            if (b->kind != N_SEQ || b->n != 2 || b->kids[0]->kind != N_SCALAR || b->kids[1]->kind != N_SCALAR ||
                parse_number(b->kids[0]->text, &lo) || parse_number(b->kids[1]->text, &hi) || lo != floor(lo) ||
                hi != floor(hi) || lo < 1 || lo > 1 << 16 || hi < 1 || hi > 1 << 16)
                return yaml_fail(ctx, "%s: %s: band %d: expected [lo, hi] with integer lengths in [1, 65536]", yaml_at(ctx, b->line),
                            f->key, r);
            cfg->train.bands[r][0] = (int)lo;
            cfg->train.bands[r][1] = (int)hi;
        }
        cfg->train.bands_auto = 0;
        cfg->train.n_bands = n->n;
        return 0;
    }
    if (f->type == F_PAIR) {
        double v[2];
        if (n->kind != N_SEQ || n->n != 2) return BAD();
        for (int i = 0; i < 2; i++)
            if (n->kids[i]->kind != N_SCALAR || !n->kids[i]->plain || parse_number(n->kids[i]->text, &v[i]) ||
                v[i] < f->min || v[i] > f->max)
                return BAD();
        memcpy(base + f->offset, v, sizeof v);
        return 0;
    }
    if (n->kind != N_SCALAR) return BAD();
    if (f->flags & F_AUTO && !strcmp(n->text, "auto") && n->plain) {
        *(int *)(base + f->offset) = CONFIG_AUTO;
        return 0;
    }
    if (f->type == F_ENUM) {
        for (int i = 0; i < f->n_names; i++)
            if (strcmp(n->text, f->names[i]) == 0) {
                *(int *)(base + f->offset) = i;
                return 0;
            }
        return BAD();
    }
    if (f->type == F_PATH) {
        if ((!n->text[0] && !(f->flags & F_OPTIONAL)) || n->len >= PATH_MAX_LEN || strlen(n->text) != n->len) return BAD();
        strcpy(base + f->offset, n->text);
        return 0;
    }
    double v;
    if (parse_number(n->text, &v) || !n->plain) return BAD();
    if (f->type != F_DOUBLE && v != floor(v)) return BAD();
    if (v < f->min || v > f->max) {
        char lo[32], hi[32];
        range_text(f->min, lo, sizeof lo), range_text(f->max, hi, sizeof hi);
        return yaml_fail(ctx, "%s: %s: expected %s, got %s (out of range: the range is [%s, %s]%s)", yaml_at(ctx, n->line), f->key,
                         expected(f, eb, sizeof eb), n->text, lo, hi, f->flags & F_AUTO ? ", or auto" : "");
    }
    if (f->type == F_INT) *(int *)(base + f->offset) = (int)v;
    else if (f->type == F_U32) *(uint32_t *)(base + f->offset) = (uint32_t)v;
    else *(double *)(base + f->offset) = v;
    return 0;
#undef BAD
}

// Walks a mapping, setting every leaf; `prefix` is the dotted path so far. A bad leaf (an
// unknown or duplicate key, a bad value) is added to `bad` ("; "-separated, counted in
// *n_bad) and the walk goes on, so one run names every bad key of a file; a mapping that is
// not one stops it (-1).
static int apply_map(Config *cfg, const YamlNode *map, const char *prefix, YamlCtx *ctx, Buf *bad, int *n_bad) {
    if (map->kind != N_MAP)
        return yaml_fail(ctx, "%s: %s: expected a mapping", yaml_at(ctx, map->line), prefix[0] ? prefix : "top level");
    for (int i = 0; i + 1 < map->n; i += 2) {
        const YamlNode *k = map->kids[i], *v = map->kids[i + 1];
        if (k->kind != N_SCALAR) return yaml_fail(ctx, "%s: expected a scalar key", yaml_at(ctx, k->line));
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", k->text);
        int failed = 0;
        // Duplicate keys are a common silent mistake: refuse them.
        for (int j = 0; j < i && !failed; j += 2)
            if (strcmp(map->kids[j]->text, k->text) == 0) failed = yaml_fail(ctx, "%s: %s: duplicate key", yaml_at(ctx, k->line), key);
        const Field *f = failed ? NULL : field_find(key);
        if (f) failed = set_field(cfg, f, v, ctx);
        else if (!failed) {
            // A group (prefix of some field)?
            size_t kl = strlen(key);
            int group = 0;
            for (int j = 0; j < config_n_fields && !group; j++)
                group = strncmp(config_fields[j].key, key, kl) == 0 && config_fields[j].key[kl] == '.';
            char hint[300];
            if (!group) failed = yaml_fail(ctx, "%s: %s: unknown key%s", yaml_at(ctx, k->line), key, did_you_mean(key, hint, sizeof hint));
            else if (apply_map(cfg, v, key, ctx, bad, n_bad)) return -1;
        }
        if (failed) buf_printf(bad, "%s%s", (*n_bad)++ ? "; " : "", ctx->err);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------
// Validation across fields and band resolution

static int g_launched_ranks;  // config_launched_ranks: the ranks of a distributed command, 0: one process

void config_launched_ranks(int ranks) { g_launched_ranks = ranks > 0 || ranks == CONFIG_RANKS_FROM_RUN ? ranks : 0; }

// train.world_size: auto -> the ranks launched (a distributed command), else the number of
// rank_bands given as a list, else (the global sampler, where W decides no data) 1; under the
// bands sampler with rank_bands: auto a one-process command cannot know it (the data lock
// and the plan depend on W): -1 with the fix, or, for a command that reads the run's W from its
// logs (CONFIG_RANKS_FROM_RUN), 1 for now with train.world_size_from_run set.
static int resolve_world(Config *cfg, YamlCtx *ctx, const char *src) {
    if (cfg->train.world_size != CONFIG_AUTO) return 0;
    cfg->train.world_size_auto = 1;
    if (g_launched_ranks > 0) cfg->train.world_size = g_launched_ranks;
    else if (!cfg->train.bands_auto) cfg->train.world_size = cfg->train.n_bands;
    else if (cfg->train.sampler == SAMPLER_GLOBAL) cfg->train.world_size = 1;
    else if (g_launched_ranks == CONFIG_RANKS_FROM_RUN) cfg->train.world_size = 1, cfg->train.world_size_from_run = 1;
    else
        return yaml_fail(ctx, "%s: train.world_size: auto (the ranks launched) with train.rank_bands: auto and the bands sampler: "
                         "this command runs in one process, and the data lock and the plan depend on W: give it (--set "
                         "train.world_size=N, the -np you launch), or use train.sampler: global (W then decides no data)", src);
    if (cfg->train.world_size > MAX_WORLD)
        return yaml_fail(ctx, "%s: train.world_size: auto: %d ranks were launched, at most %d", src, cfg->train.world_size, MAX_WORLD);
    return 0;
}

int config_finish(Config *cfg, char *err, int errlen) {
    YamlCtx ctx = {.name = cfg->source, .err = err, .errlen = errlen};
    const char *src = cfg->source[0] ? cfg->source : "config";
    if (resolve_world(cfg, &ctx, src)) return -1;
    int W = cfg->train.world_size;
    if (cfg->data.min_length > cfg->data.max_length)
        return yaml_fail(&ctx, "%s: data.min_length (%d) must not exceed data.max_length (%d)", src, cfg->data.min_length,
                    cfg->data.max_length);
    if (cfg->data.markov_support > cfg->data.vocab_size - 1)
        return yaml_fail(&ctx, "%s: data.markov_support (%d) must not exceed vocab_size - 1 (%d)", src,
                    cfg->data.markov_support, cfg->data.vocab_size - 1);
    if (cfg->data.import.validation_fraction + cfg->data.import.test_fraction > 1)
        return yaml_fail(&ctx, "%s: data.import.validation_fraction (%g) + data.import.test_fraction (%g) must not exceed 1", src,
                    cfg->data.import.validation_fraction, cfg->data.import.test_fraction);
#define MODEL_CHECK(field, of, use, why)                                                                             \
    if ((use) & (1u << cfg->model.kind) && cfg->model.field % cfg->model.of)                                          \
        return yaml_fail(&ctx, "%s: model." #field " (%d) must be a multiple of model." #of " (%d): " why, src,       \
                         cfg->model.field, cfg->model.of);
    DDPTOK_MODEL_CHECKS(MODEL_CHECK)
#undef MODEL_CHECK
    if (cfg->data.ignore_token >= cfg->data.vocab_size)
        return yaml_fail(&ctx, "%s: data.ignore_token (%d) must be below data.vocab_size (%d), or -1", src, cfg->data.ignore_token,
                    cfg->data.vocab_size);
    // The sizes these keys make (counts held in an int, bytes) are the budget's, for the
    // sampler in use: workload_check (src/model/workload.c).
    if (cfg->train.epochs && cfg->train.sampler != SAMPLER_GLOBAL)
        return yaml_fail(&ctx, "%s: train.epochs (%d) needs train.sampler: global (the bands sampler draws with replacement: "
                         "it has no epochs; count train.updates instead)", src, cfg->train.epochs);
    const LrSchedule *ls = &cfg->train.schedule;
    int decay_end = ls->decay_updates ? ls->decay_updates : cfg->train.epochs ? ls->warmup + 1 : cfg->train.updates;
    if (ls->kind == LR_COSINE && decay_end <= ls->warmup)
        return yaml_fail(&ctx, "%s: train.lr_decay_updates (%d%s) must exceed train.warmup_updates (%d) under train.lr_schedule: "
                         "cosine", src, decay_end, ls->decay_updates ? "" : ", from train.updates", ls->warmup);
    if (cfg->train.interrupt_at > cfg->train.updates && !cfg->train.epochs)
        return yaml_fail(&ctx, "%s: train.interrupt_at (%d) must not exceed train.updates (%d)", src, cfg->train.interrupt_at,
                    cfg->train.updates);
    if (cfg->train.bands_auto) {
        // Where the bands decide nothing (the global sampler with another partition), W may
        // exceed the lengths: no rank is given a band then.
        int n = cfg->data.max_length - cfg->data.min_length + 1;
        if (n < W && config_bands_used(cfg))
            return yaml_fail(&ctx, "%s: train.rank_bands: auto cannot split lengths [%d, %d] into %d bands", src,
                        cfg->data.min_length, cfg->data.max_length, W);
        for (int r = 0; r < W && r < MAX_BANDS; r++) config_band(cfg, r, &cfg->train.bands[r][0], &cfg->train.bands[r][1]);
        return 0;
    }
    if (cfg->train.n_bands != W)
        return yaml_fail(&ctx, "%s: train.rank_bands: %d bands for train.world_size %d%s (expected one band per rank, or auto: "
                    "add --set train.rank_bands=auto for %d contiguous bands over [%d, %d])",
                    src, cfg->train.n_bands, W, g_launched_ranks == W ? " (the ranks launched)" : "", W, cfg->data.min_length,
                    cfg->data.max_length);
    for (int r = 0; r < W; r++) {
        int lo = cfg->train.bands[r][0], hi = cfg->train.bands[r][1];
        if (lo > hi) return yaml_fail(&ctx, "%s: train.rank_bands: band %d [%d, %d] is reversed", src, r, lo, hi);
        if (hi < cfg->data.min_length || lo > cfg->data.max_length)
            return yaml_fail(&ctx, "%s: train.rank_bands: band %d [%d, %d] leaves rank %d empty (lengths are in [%d, %d])",
                        src, r, lo, hi, r, cfg->data.min_length, cfg->data.max_length);
        for (int q = 0; q < r; q++)
            if (lo <= cfg->train.bands[q][1] && cfg->train.bands[q][0] <= hi)
                return yaml_fail(&ctx, "%s: train.rank_bands: band %d [%d, %d] overlaps band %d [%d, %d]", src, r, lo, hi,
                            q, cfg->train.bands[q][0], cfg->train.bands[q][1]);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------
// Loading

#define MAX_CONFIG_BYTES (1 << 20)

// Every key's default, from the table (its YAML text, set as a value from a file is).
static void config_defaults(Config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    char err[256];
    for (int i = 0; i < config_n_fields; i++) {
        const Field *f = &config_fields[i];
        if (!f->def[0]) continue;  // an optional path, unset: empty, as memset left it
        YamlCtx ctx = {.name = f->key, .err = err, .errlen = sizeof err, .strict = 1};
        YamlNode *v = yaml_parse(f->def, strlen(f->def), &ctx);
        if (!v || set_field(cfg, f, v, &ctx)) die(EXIT_INTERNAL, "BUG: the default of %s ('%s'): %s", f->key, f->def, err);
        yaml_node_free(v);
    }
}

// Applies one "KEY=VALUE" (VALUE parsed as YAML, so lists and 'auto' work) without the
// cross-field checks.
static int apply_set(Config *cfg, const char *assignment, char *err, int errlen) {
    const char *eq = strchr(assignment, '=');
    YamlCtx ctx = {.name = assignment, .err = err, .errlen = errlen, .strict = 1};
    if (!eq || eq == assignment) return yaml_fail(&ctx, "--set %s: expected KEY=VALUE", assignment);
    char key[256], name[300];
    snprintf(key, sizeof key, "%.*s", (int)(eq - assignment), assignment);
    const Field *f = field_find(key);
    char hint[300];
    if (!f) return yaml_fail(&ctx, "--set %s: unknown key '%s'%s", assignment, key, did_you_mean(key, hint, sizeof hint));
    snprintf(name, sizeof name, "--set %s", key);
    ctx.name = name;  // a YAML syntax error names the key
    YamlNode *v = yaml_parse(eq + 1, strlen(eq + 1), &ctx);
    if (!v) return -1;
    ctx.name = "--set";  // value errors name the key themselves
    char eb[256];
    int rc = v->kind == N_MAP && v->n == 0 ? yaml_fail(&ctx, "--set %s: expected %s, got an empty value", key, expected(f, eb, sizeof eb))
                                           : set_field(cfg, f, v, &ctx);
    yaml_node_free(v);
    return rc;
}

int config_set(Config *cfg, const char *assignment, char *err, int errlen) {
    return apply_set(cfg, assignment, err, errlen) ? -1 : config_finish(cfg, err, errlen);
}

int config_set_many(Config *cfg, char *const *assignments, int n, char *err, int errlen) {
    for (int i = 0; i < n; i++)
        if (apply_set(cfg, assignments[i], err, errlen)) return -1;
    return config_finish(cfg, err, errlen);
}

// A file's every bad key in one line: each one's own message, "; "-separated, then how many.
static int config_apply_text(Config *cfg, const char *text, size_t len, const char *name, char *err, int errlen) {
    YamlCtx ctx = {.name = name, .err = err, .errlen = errlen};
    YamlNode *root = yaml_parse(text, len, &ctx);
    if (!root) return -1;
    Buf bad = {0};
    int n_bad = 0, rc = apply_map(cfg, root, "", &ctx, &bad, &n_bad);
    yaml_node_free(root);
    if (!rc && n_bad == 1) snprintf(err, (size_t)errlen, "%s", bad.s);
    else if (!rc && n_bad) snprintf(err, (size_t)errlen, "%s (%d bad keys in %s)", bad.s, n_bad, name);
    buf_free(&bad);
    return rc || n_bad ? -1 : 0;
}

int config_load(Config *cfg, const char *path, char *const *sets, int n_sets, char *err, int errlen) {
    config_defaults(cfg);
    snprintf(cfg->source, sizeof cfg->source, "%s", path);
    size_t len;
    char why[256];
    char *text = file_read_regular(path, MAX_CONFIG_BYTES, &len, why, sizeof why);
    if (!text) {
        snprintf(err, (size_t)errlen, "%s: cannot read config file: %s", path, why);
        return -1;
    }
    int rc = config_apply_text(cfg, text, len, path, err, errlen);
    free(text);
    for (int i = 0; rc == 0 && i < n_sets; i++) rc = apply_set(cfg, sets[i], err, errlen);
    return rc ? rc : config_finish(cfg, err, errlen);
}

// The line of each leaf of a file's mapping, by field (origin[i] = its line; 0 where none).
static void origin_walk(const YamlNode *map, const char *prefix, int *origin) {
    if (map->kind != N_MAP) return;
    for (int i = 0; i + 1 < map->n; i += 2) {
        const YamlNode *k = map->kids[i], *v = map->kids[i + 1];
        if (k->kind != N_SCALAR) continue;
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", k->text);
        const Field *f = field_find(key);
        if (f) origin[f - config_fields] = k->line;
        else origin_walk(v, key, origin);
    }
}

int config_origins(const char *path, char *const *sets, int n_sets, int *origin) {
    for (int i = 0; i < config_n_fields; i++) origin[i] = 0;
    size_t len;
    char why[256], err[512];
    char *text = file_read_regular(path, MAX_CONFIG_BYTES, &len, why, sizeof why);
    if (!text) return -1;
    YamlCtx ctx = {.name = path, .err = err, .errlen = sizeof err};
    YamlNode *root = yaml_parse(text, len, &ctx);
    free(text);
    if (!root) return -1;
    origin_walk(root, "", origin);
    yaml_node_free(root);
    for (int s = 0; s < n_sets; s++) {
        const char *eq = strchr(sets[s], '=');
        char key[256];
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - sets[s]) : (int)strlen(sets[s]), sets[s]);
        const Field *f = field_find(key);
        if (f) origin[f - config_fields] = -1 - s;
    }
    return 0;
}

int config_key_auto(int i) { return i >= 0 && i < config_n_fields && (config_fields[i].flags & F_AUTO); }

int config_from_yaml(Config *cfg, const char *text, const char *name, char *err, int errlen) {
    config_defaults(cfg);
    snprintf(cfg->source, sizeof cfg->source, "%s", name);
    int rc = config_apply_text(cfg, text, strlen(text), name, err, errlen);
    return rc ? rc : config_finish(cfg, err, errlen);
}

