// config_keys.h — the config's key table, shared by config.c (defaults, parsing, --set,
// validation) and config_emit.c (YAML emission, comparison, the data lock's fields).
// One row per key; adding a key is one row (and its Config field).
#ifndef DDPTOK_CONFIG_KEYS_H
#define DDPTOK_CONFIG_KEYS_H

#include <stddef.h>

#include "config/config.h"

typedef enum { F_INT, F_U32, F_DOUBLE, F_ENUM, F_BANDS, F_PATH, F_PAIR } FieldType;  // F_PAIR: [a, b] of doubles in [min, max]

// Field flags
#define F_TRAJECTORY 1  // decides the training trajectory: a checkpoint refuses a change
#define F_LAYOUT 2      // only lays a window out on ranks under the global sampler: elastic resume may change it
#define F_LOCK_BANDS 4  // in the data lock under the bands sampler only (`lock` names it)
#define F_LOCK_GLOBAL 8 // in the data lock under the global sampler only
#define F_LOCK_IMPORT 16 // in the data lock of an imported corpus only (data.source: imported)
#define F_OPTIONAL 32    // F_PATH: may be empty (unset)
#define F_AUTO 64       // F_INT that also takes `auto`, held as -1 (CONFIG_AUTO): train.world_size is resolved
                        // by config_finish (config_launched_ranks), train.checkpoint_every where it is used
#define F_RUN_ONLY 128  // how a run is carried out, not what it computes (progress lines, checkpoints, evaluations):
                        // not in config_result_digest, so a report or a curve stays this config's whatever they are
#define F_CORPUS 256     // in the corpus lock (corpus.h5's: the content and the rules that cut it), any data.source
#define F_CORPUS_SYNTHETIC 512 // in the corpus lock of a synthetic corpus only (the keys that generate it)
#define F_DIGEST_DEFAULT 1024  // a key added after digests were recorded: at its default (its value's text is
                               // `def`) it enters no digest, so every digest recorded before it still holds

typedef struct {
    const char *key;  // dotted key as in the YAML
    FieldType type;
    size_t offset;
    double min, max;  // inclusive range for numbers
    int flags;
    const char *expect;  // what is expected, for error messages (F_ENUM: NULL, from `names`)
    const char *const *names;  // F_ENUM: the accepted names (the value is the index)
    int n_names;
    const char *def;   // the default, as YAML (applied like a value from a file)
    const char *lock;  // its name in the data lock and the corpus lock (data/lock.h), NULL: the data does not depend on it
} Field;

extern const Field config_fields[];
extern const int config_n_fields;

#endif
