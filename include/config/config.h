// config.h — the run configuration (docs/spec.md §4, §8): defaults, YAML file, --set overrides,
// validation, canonical YAML emission, and key-by-key comparison for checkpoints.
//
// Every key is described once in a field table (config.c); parsing, overriding, range
// checks, emission and diffing all walk that table, so adding a key is one line.
#ifndef DDPTOK_CONFIG_H
#define DDPTOK_CONFIG_H

#include <stdint.h>

#include "method/objective.h"  // LossUnit, Normalization
#include "method/optimizer.h"  // OptimizerKind

#ifdef __cplusplus
extern "C" {
#endif

// train.world_size's cap. The ranks' length bands (train.rank_bands) are a list of at most
// MAX_BANDS in a file, which Config holds inline (2 KiB); for more ranks they are `auto`, rank
// r's computed when it is asked for (config_band). So every buffer the bands fill is sized by
// MAX_BANDS, and whatever holds one entry per rank is allocated for W.
#define MAX_WORLD 65536
#define MAX_BANDS 256
#define CONFIG_AUTO (-1)  // an F_AUTO key's `auto` (train.world_size before config_finish; train.checkpoint_every)
#define PATH_MAX_LEN 512

// Which sequences a window holds (docs/spec.md §3; docs/sampling.md "Global sampling").
typedef enum {
    SAMPLER_BANDS = 0,  // each rank draws A·B ids from its own length band with its own stream
    SAMPLER_GLOBAL,     // one stream draws train.global_batch ids from the whole train split
    SAMPLER_COUNT
} SamplerKind;

// How the global sampler gives each sequence of a window to one rank.
typedef enum {
    PARTITION_BANDS = 0,   // by length: train.rank_bands (auto: W contiguous bands)
    PARTITION_BALANCED,    // longest first onto the rank with the fewest labels (ties: lowest rank)
    PARTITION_ROUND_ROBIN, // window position i to rank i mod W
    PARTITION_COUNT
} PartitionKind;

// How the backend computes the first layer Z = E·w1ᵀ + b1 (docs/performance.md "The factored first layer"): the same
// model and gradient either way, up to float rounding (different bits).
typedef enum {
    FIRST_LAYER_DENSE = 0,  // gather E (T, kD) and multiply by w1 every microbatch: the reference's bits
    FIRST_LAYER_FACTORED,   // per-slot tables P_j = emb·w1_jᵀ (V, H) once per window; gradients per window
    FIRST_LAYER_COUNT
} FirstLayer;

// When the gradient all-reduce runs (docs/performance.md "Overlap of the gradient all-reduce with the backward").
typedef enum {
    OVERLAP_NONE = 0,      // one all-reduce of the whole gradient after the last backward
    OVERLAP_OUTPUT_LAYER,  // the output layer's bucket is reduced while the first layer's backward runs
    OVERLAP_BLOCKS,        // that bucket, then one per block as the backward finishes it (the GPT's)
    OVERLAP_COUNT
} OverlapKind;

// Where the corpus comes from (docs/data.md): `prepare`'s synthetic chain, or the users'
// files that `import` turned into corpus.h5.
typedef enum {
    DATA_SOURCE_SYNTHETIC = 0,  // prepare: the sparse Markov chain, data.splits.* sequences
    DATA_SOURCE_IMPORTED,       // import: the sequences the import found, split by data.import.*
    DATA_SOURCE_COUNT
} DataSource;

// The models a config can train (model.kind, docs/model.md), one X(ENUM, name) each: the
// ModelKind values, model_kind_names and the row table (model/model.h: `const ModelRow
// name_row`, defined by src/model/name.c) all derive from this list.
//   mlp  the window MLP: k previous tokens -> tanh -> logits
//   gpt  GPT-2 as HF's GPT2LMHeadModel computes it (its context is data.max_length)
// Their shape keys: DDPTOK_MODEL_KEYS below.
#define DDPTOK_MODELS(X) X(MLP, mlp) X(GPT, gpt)
#define DDPTOK_MODEL_ENUM(UP, low) MODEL_##UP,
typedef enum { DDPTOK_MODELS(DDPTOK_MODEL_ENUM) MODEL_COUNT } ModelKind;
#undef DDPTOK_MODEL_ENUM

// The models' shape keys model.<field>: one table, as OPTIMIZER_HYPERS is the optimizers'
// (method/optimizer.h). Config.model's int members, the key rows of src/config/config.c (range,
// default, what is expected) and the cross-field checks derive from it; a model's row
// (src/model/<name>.c, its `shape`) reads the keys whose `users` bit it holds.
//
//   X(field, min, max, default, users, expect)
//
//   field    Config.model's member, and the config key model.<field>
//   min, max the inclusive range; default: the key's default (its YAML)
//   users    the models whose shape reads it (MODEL_USES(UP) | ...)
//   expect   what the key expects, for its error message
//
// A model of its own shape adds its rows here (or its bit to a row it shares) and its
// checks to DDPTOK_MODEL_CHECKS. The rows' order is the config's (emission, digests): a row
// may be added, but rows are never reordered (every digest recorded before would change).
#define MODEL_USES(UP) (1u << MODEL_##UP)
#define DDPTOK_MODEL_KEYS(X)                                                                                         \
    X(context, 1, 1024, 8, MODEL_USES(MLP), "an integer in [1, 1024]")                /* k */                         \
    X(embed_dim, 1, 1 << 16, 32, MODEL_USES(MLP), "a positive integer")               /* D */                         \
    X(hidden, 1, 1 << 20, 512, MODEL_USES(MLP), "a positive integer")                 /* H */                         \
    X(n_layer, 1, 64, 2, MODEL_USES(GPT), "an integer in [1, 64] (model.kind: gpt)")  /* blocks */                    \
    X(n_head, 1, 256, 4, MODEL_USES(GPT), "an integer in [1, 256] (model.kind: gpt)") /* attention heads */           \
    X(n_embd, 1, 1 << 16, 64, MODEL_USES(GPT), "an integer in [1, 65536] (model.kind: gpt)") /* C, the width */
// The cross-field checks of the shape keys, for the models in `users`: X(field, multiple_of,
// users, why) says model.<field> must be a multiple of model.<multiple_of> (config_finish,
// one line naming both keys and `why`).
#define DDPTOK_MODEL_CHECKS(X) X(n_embd, n_head, MODEL_USES(GPT), "each head takes n_embd / n_head of the width")
#define DDPTOK_MODEL_KEY_MEMBER(field, ...) int field;

extern const char *const model_kind_names[MODEL_COUNT];
extern const char *const data_source_names[DATA_SOURCE_COUNT];
extern const char *const sampler_names[SAMPLER_COUNT];
extern const char *const partition_names[PARTITION_COUNT];
extern const char *const first_layer_names[FIRST_LAYER_COUNT];
extern const char *const overlap_names[OVERLAP_COUNT];

typedef struct {
    uint32_t seed;
    struct {
        int vocab_size;           // V
        int n_train, n_validation, n_test;
        int min_length, max_length;
        int unsupervised_prefix;  // positions t < P carry no label
        int ignore_token;         // positions whose target is this id carry no label (-1: none)
        int max_labels;           // at most this many labels per sequence, the first ones (0: all)
        int markov_support;       // successors per token in the generating chain
        DataSource source;        // synthetic (prepare) or imported (import)
        struct {
            uint32_t split_seed;         // keys the document hash that picks a document's split
            double validation_fraction;  // of the documents (by their hash), the rest after test
            double test_fraction;
        } import;
    } data;
    struct {
        ModelKind kind; // model.kind
        DDPTOK_MODEL_KEYS(DDPTOK_MODEL_KEY_MEMBER)  // model.<field>: the table above
        double dropout; // p (every dropout site of the model)
    } model;
    struct {
        int world_size;                 // W (auto: resolved by config_finish, never CONFIG_AUTO after it)
        int world_size_auto;            // 1: train.world_size was auto (resolved; not a key: no digest or lock sees it)
        int world_size_from_run;        // auto in one process, auto bands: 1: W unknown (1 for now); 2: the run's, from its logs (main.c)
        int bands_auto;                 // rank_bands: auto
        int bands[MAX_BANDS][2];        // [lo, hi] per rank (inclusive): the list, or auto's for W <= MAX_BANDS; read config_band
        int n_bands;                    // bands given in the file (before auto resolution)
        int batch_size_per_rank;        // B
        int accumulation;               // A
        int updates;                    // U (with train.epochs: E x windows per epoch, set once the corpus is read)
        int epochs;                     // train.epochs E: 0, or whole epochs of the global sampler (sampler_resolve_epochs)
        int interrupt_at;
        int checkpoint_every;           // 0: only at interrupt_at and the end; CONFIG_AUTO: config_checkpoint_every
        int log_every;                  // rank 0's progress line every n steps (0: automatic)
        int eval_every;                 // the validation loss every n steps and at the last (0: off; CONFIG_AUTO: config_eval_every)
        int eval_batch;                 // sequences per evaluation pass, 1..EVALUATE_BATCH (the chunks stay EVALUATE_BATCH)
        int keep_best;                  // train.keep_best: 1 keeps the best validation checkpoint (artifacts/best)
        Normalization normalization;
        LossUnit loss_unit;
        SamplerKind sampler;
        PartitionKind partition;        // global sampler only
        int global_batch;               // G: sequences per window, global sampler only
        OverlapKind overlap;            // when the gradient all-reduce runs; the same bits either way
        OptimizerKind optimizer;        // train.optimizer.name
        OptimizerHyper hyper;           // train.optimizer.<field>: the hyper-parameter table (optimizer.h)
        DecayGroups decay;              // train.optimizer.decay: which tensors weight decay applies to
        double grad_clip;               // train.grad_clip: the global gradient norm's ceiling (0: off)
        LrSchedule schedule;            // train.lr_schedule and its keys (decay_updates 0: train.updates; optimizer.h)
        FirstLayer first_layer;         // how the first layer is computed: not the trajectory's model
        char init_from[PATH_MAX_LEN];   // θ0 from a Hugging Face GPT-2 directory ("": the seed's init)
    } train;
    struct {
        double atol, rtol;
    } parity;
    struct {
        int short_tokens;  // rank 0's tokens in both cases
        int long_tokens;   // rank 1's tokens in the second case (the first has short_tokens)
    } exercise;
    struct {
        char outputs[PATH_MAX_LEN];
        char artifacts[PATH_MAX_LEN];
    } paths;
    char source[PATH_MAX_LEN];  // the file it came from
} Config;

// Rank r's length band [*lo, *hi] (inclusive): the list's, or train.rank_bands: auto's W
// contiguous bands over [data.min_length, data.max_length] (band r starts r·n/W lengths in,
// n the lengths, rounded down). An auto split of fewer lengths than ranks, accepted only where
// no band decides anything (config_bands_used), leaves some bands empty (*lo > *hi).
static inline void config_band(const Config *cfg, int r, int *lo, int *hi) {
    if (!cfg->train.bands_auto) {
        *lo = cfg->train.bands[r][0], *hi = cfg->train.bands[r][1];
        return;
    }
    int64_t first = cfg->data.min_length, n = (int64_t)cfg->data.max_length - first + 1, W = cfg->train.world_size;
    *lo = (int)(first + (int64_t)r * n / W), *hi = (int)(first + ((int64_t)r + 1) * n / W - 1);
}
// The rank whose band holds length len, else the nearest band (ties: the lower rank); auto
// bands in O(1), a list by looking at each.
static inline int config_band_of(const Config *cfg, int len) {
    int W = cfg->train.world_size;
    if (cfg->train.bands_auto && (int64_t)cfg->data.max_length - cfg->data.min_length + 1 >= W) {
        int64_t n = (int64_t)cfg->data.max_length - cfg->data.min_length + 1, x = (int64_t)len - cfg->data.min_length;
        x = x < 0 ? 0 : x >= n ? n - 1 : x;
        return (int)(((x + 1) * W + n - 1) / n - 1);  // the last r with floor(r·n/W) <= x
    }
    int best = 0, best_gap = 0x7fffffff;
    for (int r = 0; r < W; r++) {
        int lo, hi;
        config_band(cfg, r, &lo, &hi);
        int gap = len < lo ? lo - len : len > hi ? len - hi : 0;
        if (lo <= hi && gap < best_gap) best = r, best_gap = gap;
    }
    return best;
}
// 1 when the bands decide which sequences a rank sees: the bands sampler, or the global one
// partitioning by length. Elsewhere train.rank_bands: auto needs no length per rank.
static inline int config_bands_used(const Config *cfg) {
    return cfg->train.sampler == SAMPLER_BANDS || cfg->train.partition == PARTITION_BANDS;
}
// 1 when train.rank_bands is written `auto` (the YAML, the digests, the data lock): an auto
// split for more than MAX_BANDS ranks, or of fewer lengths than ranks; otherwise as the list
// of every rank's band, as it always was.
static inline int config_bands_as_auto(const Config *cfg) {
    return cfg->train.bands_auto && (cfg->train.world_size > MAX_BANDS ||
                                     (int64_t)cfg->data.max_length - cfg->data.min_length + 1 < cfg->train.world_size);
}

// The key table, for tests: key i's dotted name, kind ('i' int, 'u' uint32, 'd' double,
// 'e' enum, 'b' rank bands, 'p' path), inclusive range (numbers) and names (enum).
// 0, or -1 past the last key.
typedef struct {
    const char *key;
    char kind;
    double min, max;
    const char *const *names;
    int n_names;
} ConfigKey;
int config_key(int i, ConfigKey *out);

// Loads `path`, applies `n_sets` "KEY=VALUE" overrides, validates and resolves bands.
// On failure writes one line (file:line: key: what was expected) into `err` and returns -1.
int config_load(Config *cfg, const char *path, char *const *sets, int n_sets, char *err, int errlen);
// Applies one "KEY=VALUE" override to a loaded config and re-validates.
int config_set(Config *cfg, const char *assignment, char *err, int errlen);
// Applies n overrides in order, then validates once (as --set on the command line does).
int config_set_many(Config *cfg, char *const *assignments, int n, char *err, int errlen);
// Re-validates and resolves derived fields (train.world_size: auto, auto bands) after
// programmatic changes.
int config_finish(Config *cfg, char *err, int errlen);
// How many ranks were launched for the command that loads configs from now on (main: the MPI
// world of a distributed command; 0, the default: one process): train.world_size: auto is that.
// CONFIG_RANKS_FROM_RUN: one process that takes W from the run's logs: where nothing else gives
// it (the bands sampler, rank_bands: auto), W is 1 for now and train.world_size_from_run says so.
enum { CONFIG_RANKS_FROM_RUN = -1 };
void config_launched_ranks(int ranks);
// train.checkpoint_every as used: auto (CONFIG_AUTO) is every max(50, ceil(U / 10)) updates,
// about ten checkpoints a run and at most one per 50 updates (docs/config.md); 0: off.
static inline int config_auto_every(int U) { return (U + 9) / 10 > 50 ? (U + 9) / 10 : 50; }
static inline int config_checkpoint_every(const Config *cfg) {
    return cfg->train.checkpoint_every == CONFIG_AUTO ? config_auto_every(cfg->train.updates) : cfg->train.checkpoint_every;
}
// train.eval_every as used: auto is the checkpoints' cadence (every max(50, ceil(U / 10))
// updates, and the run's last step) where the corpus has a validation split of n_validation
// sequences that costs little: its evaluations (at most max_length each) read at most what the
// run trains on, or 2^22 tokens; else off. A number is that.
static inline int config_eval_every(const Config *cfg, int64_t n_validation) {
    if (cfg->train.eval_every != CONFIG_AUTO) return cfg->train.eval_every;
    int every = config_auto_every(cfg->train.updates), points = cfg->train.updates / every + 1;
    int64_t window = cfg->train.sampler == SAMPLER_GLOBAL ? cfg->train.global_batch
                     : (int64_t)cfg->train.world_size * cfg->train.accumulation * cfg->train.batch_size_per_rank;
    double cost = (double)points * (double)n_validation * cfg->data.max_length,
           budget = (double)cfg->train.updates * (double)window * cfg->data.max_length;
    return n_validation > 0 && cost <= (budget > (1 << 22) ? budget : (1 << 22)) ? every : 0;
}
// Canonical YAML of every key (resolved values). Caller frees.
char *config_to_yaml(const Config *cfg);
// Parses a YAML text (as written by config_to_yaml) into `cfg`; 0 or -1 with err.
int config_from_yaml(Config *cfg, const char *text, const char *name, char *err, int errlen);
// First key (in table order) whose value differs, restricted to keys that decide the
// trajectory of training (not updates, interrupt_at, paths; nor, when both use the global
// sampler, the fields that only lay a window out on ranks). Writes "key: a vs b" into
// `what` and returns 1; returns 0 when none differs.
int config_diff_training(const Config *a, const Config *b, char *what, int len);
// The same over every key but paths.* (which may name node-local disks): what the ranks of
// one job must agree on.
int config_diff_run(const Config *a, const Config *b, char *what, int len);
// SHA-256 (hex) of exactly what config_diff_run compares (every key but paths.*, with its
// value): equal digests, no difference. The ranks compare digests first (agree_on_run).
void config_run_digest(const Config *cfg, char out[65]);
// The same without the keys of how a run is carried out (train.log_every, eval_every,
// checkpoint_every): what a report or a loss curve is of. config_diff_result compares them.
void config_result_digest(const Config *cfg, char out[65]);
int config_diff_result(const Config *a, const Config *b, char *what, int len);
// The config's lines of the data lock (corpus_lock hashes them before the corpus): the
// keys the table marks as deciding the data, under this config's sampler (data.source and
// data.import.* for an imported corpus only). Returns the length written (at most len - 1).
int config_lock_fields(const Config *cfg, char *out, size_t len);
// Key i (config_key's numbering) enters the data lock of this config.
int config_key_in_lock(const Config *cfg, int i);
// The lines of the corpus lock (data/lock.h): the keys that decide corpus.h5's content and how
// it was cut — never seed, world size, bands, batch, accumulation or the sampler of an imported
// corpus (those bind the plan and the checkpoints through the data lock). split_by_hash = 0: an
// import that kept the inputs' own split (data.import.* not used). Length as config_lock_fields.
int config_corpus_lock_fields(const Config *cfg, int split_by_hash, char *out, size_t len);
int config_key_in_corpus_lock(const Config *cfg, int i, int split_by_hash);
// Key i's resolved value as config_to_yaml writes it.
void config_key_value(const Config *cfg, int i, char *out, size_t len);
// Where each key's value comes from (`ddptok config`): origin[i] (config_key's numbering) is
// the line of `path` that sets key i, 0 for its default, or -1 - s for sets[s] (the last
// --set of a key wins, as config_load applies them). 0, or -1 when the file cannot be read or parsed.
int config_origins(const char *path, char *const *sets, int n_sets, int *origin);
// Key i takes `auto` (train.world_size, train.checkpoint_every, train.eval_every).
int config_key_auto(int i);

#ifdef __cplusplus
}
#endif
#endif
