// config.c — YAML configuration: a field table drives parsing, --set, validation,
// emission and comparison. Errors are returned to the caller as one line.
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common.h"

const char *const sampler_names[SAMPLER_COUNT] = {"bands", "global"};
const char *const partition_names[PARTITION_COUNT] = {"bands", "balanced", "round-robin"};

// ---------------------------------------------------------------------------------------
// The field table

typedef enum { F_INT, F_U32, F_DOUBLE, F_ENUM, F_BANDS, F_PATH, F_PAIR } FieldType;  // F_PAIR: [a, b] of doubles in [min, max]

// Field flags
#define F_TRAJECTORY 1  // decides the training trajectory: a checkpoint refuses a change
#define F_LAYOUT 2      // only lays a window out on ranks under the global sampler: elastic resume may change it

typedef struct {
    const char *key;  // dotted key as in the YAML
    FieldType type;
    size_t offset;
    double min, max;  // inclusive range for numbers
    int flags;
    const char *expect;  // what is expected, for error messages (F_ENUM: NULL, from `names`)
    const char *const *names;  // F_ENUM: the accepted names (the value is the index)
    int n_names;
} Field;

#define OFF(f) offsetof(Config, f)
static const Field fields[] = {
    {"seed", F_U32, OFF(seed), 0, 4294967295.0, F_TRAJECTORY, "an integer in [0, 2^32)", NULL, 0},
    {"data.vocab_size", F_INT, OFF(data.vocab_size), 3, 1 << 20, F_TRAJECTORY, "an integer in [3, 2^20]", NULL, 0},
    {"data.splits.train", F_INT, OFF(data.n_train), 1, 1 << 24, F_TRAJECTORY, "a positive integer", NULL, 0},
    {"data.splits.validation", F_INT, OFF(data.n_validation), 0, 1 << 24, F_TRAJECTORY, "a non-negative integer", NULL, 0},
    {"data.splits.test", F_INT, OFF(data.n_test), 0, 1 << 24, F_TRAJECTORY, "a non-negative integer", NULL, 0},
    {"data.min_length", F_INT, OFF(data.min_length), 1, 1 << 16, F_TRAJECTORY, "a positive integer", NULL, 0},
    {"data.max_length", F_INT, OFF(data.max_length), 1, 1 << 16, F_TRAJECTORY, "a positive integer", NULL, 0},
    {"data.unsupervised_prefix", F_INT, OFF(data.unsupervised_prefix), 0, 1 << 16, F_TRAJECTORY, "a non-negative integer", NULL, 0},
    {"data.ignore_token", F_INT, OFF(data.ignore_token), -1, 1 << 20, F_TRAJECTORY, "a token id, or -1 for none", NULL, 0},
    {"data.max_labels", F_INT, OFF(data.max_labels), 0, 1 << 16, F_TRAJECTORY, "a non-negative integer (0: every label)", NULL, 0},
    {"data.markov_support", F_INT, OFF(data.markov_support), 1, 1 << 20, F_TRAJECTORY, "a positive integer", NULL, 0},
    {"model.context", F_INT, OFF(model.context), 1, 1024, F_TRAJECTORY, "an integer in [1, 1024]", NULL, 0},
    {"model.embed_dim", F_INT, OFF(model.embed_dim), 1, 1 << 16, F_TRAJECTORY, "a positive integer", NULL, 0},
    {"model.hidden", F_INT, OFF(model.hidden), 1, 1 << 20, F_TRAJECTORY, "a positive integer", NULL, 0},
    {"model.dropout", F_DOUBLE, OFF(model.dropout), 0, 0.999999, F_TRAJECTORY, "a number in [0, 1)", NULL, 0},
    {"train.world_size", F_INT, OFF(train.world_size), 1, MAX_WORLD, F_TRAJECTORY | F_LAYOUT, "an integer in [1, 256]", NULL, 0},
    {"train.rank_bands", F_BANDS, OFF(train.bands), 0, 0, F_TRAJECTORY | F_LAYOUT, "'auto' or a list of [lo, hi] length bands, one per rank", NULL, 0},
    {"train.batch_size_per_rank", F_INT, OFF(train.batch_size_per_rank), 1, 1 << 16, F_TRAJECTORY | F_LAYOUT, "a positive integer", NULL, 0},
    {"train.accumulation", F_INT, OFF(train.accumulation), 1, 1 << 16, F_TRAJECTORY | F_LAYOUT, "a positive integer", NULL, 0},
    {"train.updates", F_INT, OFF(train.updates), 1, 1 << 24, 0, "a positive integer", NULL, 0},
    {"train.interrupt_at", F_INT, OFF(train.interrupt_at), 0, 1 << 24, 0, "a non-negative integer (0: no interruption)", NULL, 0},
    {"train.checkpoint_every", F_INT, OFF(train.checkpoint_every), 0, 1 << 24, 0, "a non-negative integer (0: off)", NULL, 0},
    {"train.log_every", F_INT, OFF(train.log_every), 0, 1 << 24, 0, "a non-negative integer (0: every step up to 20 steps, else ~20 lines)", NULL, 0},
    {"train.normalization", F_ENUM, OFF(train.normalization), 0, 0, F_TRAJECTORY, NULL, normalization_names, NORM_COUNT},
    {"train.loss_unit", F_ENUM, OFF(train.loss_unit), 0, 0, F_TRAJECTORY, NULL, loss_unit_names, UNIT_COUNT},
    {"train.sampler", F_ENUM, OFF(train.sampler), 0, 0, F_TRAJECTORY, NULL, sampler_names, SAMPLER_COUNT},
    {"train.partition", F_ENUM, OFF(train.partition), 0, 0, F_TRAJECTORY | F_LAYOUT, NULL, partition_names, PARTITION_COUNT},
    {"train.global_batch", F_INT, OFF(train.global_batch), 1, 1 << 20, F_TRAJECTORY, "a positive integer (sequences per window, global sampler)", NULL, 0},
    {"train.optimizer.name", F_ENUM, OFF(train.optimizer), 0, 0, F_TRAJECTORY, NULL, optimizer_names, OPT_COUNT},
    {"train.optimizer.lr", F_DOUBLE, OFF(train.lr), 0, 1e6, F_TRAJECTORY, "a non-negative number", NULL, 0},
    {"train.optimizer.momentum", F_DOUBLE, OFF(train.momentum), 0, 0.999999, F_TRAJECTORY, "a number in [0, 1)", NULL, 0},
    {"train.optimizer.weight_decay", F_DOUBLE, OFF(train.weight_decay), 0, 1e6, F_TRAJECTORY, "a non-negative number", NULL, 0},
    {"train.optimizer.betas", F_PAIR, OFF(train.betas), 0, 0.9999999999, F_TRAJECTORY, "[beta1, beta2], each a number in [0, 1) (adamw)", NULL, 0},
    {"train.optimizer.eps", F_DOUBLE, OFF(train.eps), 0, 1, F_TRAJECTORY, "a number in [0, 1] (adamw)", NULL, 0},
    {"parity.atol", F_DOUBLE, OFF(parity.atol), 0, 1e6, 0, "a non-negative number", NULL, 0},
    {"parity.rtol", F_DOUBLE, OFF(parity.rtol), 0, 1e6, 0, "a non-negative number", NULL, 0},
    {"exercise.short_tokens", F_INT, OFF(exercise.short_tokens), 1, 1 << 16, 0, "a positive integer", NULL, 0},
    {"exercise.long_tokens", F_INT, OFF(exercise.long_tokens), 1, 1 << 16, 0, "a positive integer", NULL, 0},
    {"paths.outputs", F_PATH, OFF(paths.outputs), 0, 0, 0, "a non-empty path", NULL, 0},
    {"paths.artifacts", F_PATH, OFF(paths.artifacts), 0, 0, 0, "a non-empty path", NULL, 0},
};
#define N_FIELDS ((int)(sizeof fields / sizeof fields[0]))

int config_key(int i, ConfigKey *out) {
    if (i < 0 || i >= N_FIELDS) return -1;
    static const char kinds[] = {[F_INT] = 'i', [F_U32] = 'u', [F_DOUBLE] = 'd', [F_ENUM] = 'e', [F_BANDS] = 'b', [F_PATH] = 'p', [F_PAIR] = 'l'};
    const Field *f = &fields[i];
    *out = (ConfigKey){f->key, kinds[f->type], f->min, f->max, f->names, f->n_names};
    return 0;
}

// What a field expects, for error messages: its text, or "one of A, B, …" for an enum.
static const char *expected(const Field *f, char *buf, size_t len) {
    if (f->type != F_ENUM) return f->expect;
    int n = snprintf(buf, len, "one of");
    for (int i = 0; i < f->n_names && n < (int)len; i++) n += snprintf(buf + n, len - (size_t)n, "%s %s", i ? "," : "", f->names[i]);
    return buf;
}
_Static_assert(sizeof(Normalization) == sizeof(int) && sizeof(LossUnit) == sizeof(int) && sizeof(SamplerKind) == sizeof(int) &&
                   sizeof(PartitionKind) == sizeof(int) && sizeof(OptimizerKind) == sizeof(int),
               "F_ENUM stores an int");

static void config_defaults(Config *c) {
    memset(c, 0, sizeof *c);
    c->seed = 1234;
    c->data.vocab_size = 128;
    c->data.n_train = 1024;
    c->data.n_validation = 128;
    c->data.n_test = 256;
    c->data.min_length = 16;
    c->data.max_length = 128;
    c->data.markov_support = 4;
    c->data.ignore_token = -1;
    c->model.context = 8;
    c->model.embed_dim = 32;
    c->model.hidden = 512;
    c->model.dropout = 0.1;
    c->train.world_size = 2;
    c->train.n_bands = 2;
    c->train.bands[0][0] = 16, c->train.bands[0][1] = 64;
    c->train.bands[1][0] = 65, c->train.bands[1][1] = 128;
    c->train.batch_size_per_rank = 4;
    c->train.accumulation = 2;
    c->train.updates = 100;
    c->train.interrupt_at = 50;
    c->train.normalization = NORM_GLOBAL_TOKEN;
    c->train.global_batch = 16;  // the tutorial's W·A·B
    c->train.lr = 0.1;
    c->train.momentum = 0.9;
    c->train.optimizer = OPT_SGD;
    c->train.betas[0] = 0.9, c->train.betas[1] = 0.999;  // torch.optim.AdamW's defaults
    c->train.eps = 1e-8;
    c->parity.atol = 1e-6;
    c->parity.rtol = 1e-4;
    c->exercise.short_tokens = 12;
    c->exercise.long_tokens = 36;
    strcpy(c->paths.outputs, "outputs");
    strcpy(c->paths.artifacts, "artifacts");
}

// ---------------------------------------------------------------------------------------
// A small YAML tree built from libyaml events

typedef enum { N_SCALAR, N_SEQ, N_MAP } NodeKind;
typedef struct Node {
    NodeKind kind;
    int line;         // 1-based
    char *text;       // scalar value
    size_t len;       // its length (an escaped "\0" makes strlen shorter)
    int plain;        // scalar was unquoted
    int n, cap;       // children (for a map: 2n entries key, value) and room for them
    struct Node **kids;
} Node;

// Deeper YAML is refused (the config is 3 levels deep; a bound keeps the recursion's
// stack and libyaml's per-level work small however hostile the text).
#define MAX_DEPTH 64

static void node_free(Node *n) {
    if (!n) return;
    for (int i = 0; i < n->n; i++) node_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static void node_push(Node *parent, Node *kid) {
    if (parent->n == parent->cap) {
        parent->cap = parent->cap ? 2 * parent->cap : 4;
        parent->kids = realloc(parent->kids, (size_t)parent->cap * sizeof *parent->kids);
        ASSERT(parent->kids);
    }
    parent->kids[parent->n++] = kid;
}

typedef struct {
    const char *name;  // file name, or "--set" for a command-line override
    const char *text;  // the YAML being parsed, for the line of an encoding error
    char *err;
    int errlen;
    int strict;        // a --set value: a plain scalar or a flow list only (no tag, anchor, quote or comment)
    char where[600];   // scratch for at()
} Ctx;

// "file:line" for a file; the name alone for an override (its line number means nothing).
static const char *at(Ctx *ctx, long line) {
    if (!strncmp(ctx->name, "--set", 5)) snprintf(ctx->where, sizeof ctx->where, "%s", ctx->name);
    else snprintf(ctx->where, sizeof ctx->where, "%s:%ld", ctx->name, line);
    return ctx->where;
}

static int fail(Ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(Ctx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, (size_t)ctx->errlen, fmt, ap);
    va_end(ap);
    return -1;
}
#define FAIL fail

// A libyaml error with its line: the reader (bad encoding) reports a byte offset only.
static void syntax_error(const yaml_parser_t *p, Ctx *ctx) {
    long line = (long)p->problem_mark.line + 1;
    if (p->error == YAML_READER_ERROR) {
        line = 1;
        for (size_t i = 0; i < p->problem_offset && ctx->text[i]; i++) line += ctx->text[i] == '\n';
    }
    FAIL(ctx, "%s: YAML syntax error: %s", at(ctx, line), p->problem ? p->problem : "unknown");
}

// Parses one node starting at `ev` (already taken), `depth` levels down. Returns NULL on
// error. `*end` gets the byte offset where the node's text ends.
static Node *parse_node(yaml_parser_t *p, yaml_event_t *ev, int depth, size_t *end, Ctx *ctx);

static Node *parse_children(yaml_parser_t *p, Node *n, yaml_event_type_t end_type, int depth, size_t *end, Ctx *ctx) {
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(p, &ev)) {
            syntax_error(p, ctx);
            node_free(n);
            return NULL;
        }
        if (ev.type == end_type) {
            *end = ev.end_mark.index;
            yaml_event_delete(&ev);
            return n;
        }
        Node *kid = parse_node(p, &ev, depth + 1, end, ctx);
        if (!kid) {
            node_free(n);
            return NULL;
        }
        node_push(n, kid);
    }
}

// Why a --set value is refused, or NULL: only a plain scalar or a flow list of them.
static const char *strict_refusal(const yaml_event_t *ev) {
    const yaml_char_t *tag = NULL, *anchor = NULL;
    if (ev->type == YAML_SCALAR_EVENT) {
        tag = ev->data.scalar.tag, anchor = ev->data.scalar.anchor;
        if (!tag && !anchor && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return "a quoted or block scalar";
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        tag = ev->data.sequence_start.tag, anchor = ev->data.sequence_start.anchor;
        if (!tag && !anchor && ev->data.sequence_start.style != YAML_FLOW_SEQUENCE_STYLE) return "a block list";
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        return "a mapping";
    } else if (ev->type == YAML_ALIAS_EVENT) {
        return "an alias";
    }
    return tag ? "a YAML tag" : anchor ? "a YAML anchor" : NULL;
}

static Node *parse_node(yaml_parser_t *p, yaml_event_t *ev, int depth, size_t *end, Ctx *ctx) {
    Node *n = xcalloc(1, sizeof *n);
    n->line = (int)ev->start_mark.line + 1;
    const char *refused = ctx->strict ? strict_refusal(ev) : NULL;
    int too_deep = depth > MAX_DEPTH && (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT);
    if (refused || too_deep) {
        if (refused) FAIL(ctx, "%s: expected a plain value or a flow list [a, b], got %s", at(ctx, n->line), refused);
        else FAIL(ctx, "%s: YAML nested deeper than %d levels", at(ctx, n->line), MAX_DEPTH);
        yaml_event_delete(ev);
        free(n);
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n->kind = N_SCALAR;
        n->len = ev->data.scalar.length;
        n->text = xmalloc(n->len + 1);
        memcpy(n->text, ev->data.scalar.value, n->len + 1);
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        *end = ev->end_mark.index;
        yaml_event_delete(ev);
        return n;
    case YAML_SEQUENCE_START_EVENT:
        n->kind = N_SEQ;
        yaml_event_delete(ev);
        return parse_children(p, n, YAML_SEQUENCE_END_EVENT, depth, end, ctx);
    case YAML_MAPPING_START_EVENT:
        n->kind = N_MAP;
        yaml_event_delete(ev);
        return parse_children(p, n, YAML_MAPPING_END_EVENT, depth, end, ctx);
    case YAML_ALIAS_EVENT:
        FAIL(ctx, "%s: YAML aliases are not supported", at(ctx, n->line));
        break;
    default:
        FAIL(ctx, "%s: unexpected YAML event", at(ctx, n->line));
        break;
    }
    yaml_event_delete(ev);
    free(n);
    return NULL;
}

// Parses a whole document; an empty document gives an empty mapping.
static Node *parse_document(const char *text, size_t len, Ctx *ctx) {
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    ctx->text = text;
    Node *root = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            syntax_error(&p, ctx);
            node_free(root);
            root = NULL;
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            if (!root) root = xcalloc(1, sizeof *root), root->kind = N_MAP, root->line = 1;
            break;
        }
        if (t == YAML_SCALAR_EVENT || t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT ||
            t == YAML_ALIAS_EVENT) {
            if (root) {
                FAIL(ctx, "%s: expected a single YAML document", at(ctx, (long)(ev.start_mark.line + 1)));
                yaml_event_delete(&ev);
                node_free(root);
                root = NULL;
                break;
            }
            size_t end = 0;
            root = parse_node(&p, &ev, 1, &end, ctx);
            if (!root) break;
            // A --set value is the whole text: nothing after it but blanks (a comment
            // would be dropped silently by YAML).
            while (ctx->strict && end < len && (text[end] == ' ' || text[end] == '\t' || text[end] == '\n')) end++;
            if (ctx->strict && end < len) {
                FAIL(ctx, "%s: expected a plain value or a flow list [a, b], got more after it: '%s'", at(ctx, root->line),
                     text + end);
                node_free(root);
                root = NULL;
                break;
            }
            continue;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return root;
}

// ---------------------------------------------------------------------------------------
// Setting one field from a node

static const Field *field_find(const char *key) {
    for (int i = 0; i < N_FIELDS; i++)
        if (strcmp(fields[i].key, key) == 0) return &fields[i];
    return NULL;
}

// " (did you mean 'train.updates'?)" for the field key nearest to `key`, or "".
static const char *did_you_mean(const char *key, char *buf, size_t len) {
    const char *names[N_FIELDS];
    for (int i = 0; i < N_FIELDS; i++) names[i] = fields[i].key;
    const char *near = closest_name(key, names, N_FIELDS);
    if (near) snprintf(buf, len, " (did you mean '%s'?)", near);
    else buf[0] = 0;
    return buf;
}

static int parse_number(const char *s, double *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

static int set_field(Config *c, const Field *f, const Node *n, Ctx *ctx) {
    char *base = (char *)c;
    const char *what = n->kind == N_SCALAR ? n->text : (n->kind == N_SEQ ? "a list" : "a mapping");
    char eb[256];
#define BAD() FAIL(ctx, "%s: %s: expected %s, got '%s'", at(ctx, n->line), f->key, expected(f, eb, sizeof eb), what)
    if (f->type == F_BANDS) {
        if (n->kind == N_SCALAR) {
            if (strcmp(n->text, "auto") != 0) return BAD();
            c->train.bands_auto = 1;
            c->train.n_bands = 0;
            return 0;
        }
        if (n->kind != N_SEQ || n->n == 0 || n->n > MAX_WORLD) return BAD();
        for (int r = 0; r < n->n; r++) {
            const Node *b = n->kids[r];
            double lo, hi;
            if (b->kind != N_SEQ || b->n != 2 || b->kids[0]->kind != N_SCALAR || b->kids[1]->kind != N_SCALAR ||
                parse_number(b->kids[0]->text, &lo) || parse_number(b->kids[1]->text, &hi) || lo != floor(lo) ||
                hi != floor(hi) || lo < 1 || lo > 1 << 16 || hi < 1 || hi > 1 << 16)
                return FAIL(ctx, "%s: %s: band %d: expected [lo, hi] with integer lengths in [1, 65536]", at(ctx, b->line),
                            f->key, r);
            c->train.bands[r][0] = (int)lo;
            c->train.bands[r][1] = (int)hi;
        }
        c->train.bands_auto = 0;
        c->train.n_bands = n->n;
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
    if (f->type == F_ENUM) {
        for (int i = 0; i < f->n_names; i++)
            if (strcmp(n->text, f->names[i]) == 0) {
                *(int *)(base + f->offset) = i;
                return 0;
            }
        return BAD();
    }
    if (f->type == F_PATH) {
        if (!n->text[0] || n->len >= PATH_MAX_LEN || strlen(n->text) != n->len) return BAD();
        strcpy(base + f->offset, n->text);
        return 0;
    }
    double v;
    if (parse_number(n->text, &v) || !n->plain) return BAD();
    if (f->type != F_DOUBLE && v != floor(v)) return BAD();
    if (v < f->min || v > f->max)
        return FAIL(ctx, "%s: %s: expected %s, got %s (out of range)", at(ctx, n->line), f->key, expected(f, eb, sizeof eb),
                    n->text);
    if (f->type == F_INT) *(int *)(base + f->offset) = (int)v;
    else if (f->type == F_U32) *(uint32_t *)(base + f->offset) = (uint32_t)v;
    else *(double *)(base + f->offset) = v;
    return 0;
#undef BAD
}

// Walks a mapping, setting every leaf; `prefix` is the dotted path so far.
static int apply_map(Config *c, const Node *map, const char *prefix, Ctx *ctx) {
    if (map->kind != N_MAP)
        return FAIL(ctx, "%s: %s: expected a mapping", at(ctx, map->line), prefix[0] ? prefix : "top level");
    for (int i = 0; i + 1 < map->n; i += 2) {
        const Node *k = map->kids[i], *v = map->kids[i + 1];
        if (k->kind != N_SCALAR) return FAIL(ctx, "%s: expected a scalar key", at(ctx, k->line));
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", k->text);
        // Duplicate keys are a common silent mistake: refuse them.
        for (int j = 0; j < i; j += 2)
            if (strcmp(map->kids[j]->text, k->text) == 0)
                return FAIL(ctx, "%s: %s: duplicate key", at(ctx, k->line), key);
        const Field *f = field_find(key);
        if (f) {
            if (set_field(c, f, v, ctx)) return -1;
            continue;
        }
        // A group (prefix of some field)?
        size_t kl = strlen(key);
        int group = 0;
        for (int j = 0; j < N_FIELDS && !group; j++)
            group = strncmp(fields[j].key, key, kl) == 0 && fields[j].key[kl] == '.';
        char hint[300];
        if (!group) return FAIL(ctx, "%s: %s: unknown key%s", at(ctx, k->line), key, did_you_mean(key, hint, sizeof hint));
        if (apply_map(c, v, key, ctx)) return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------
// Validation across fields and band resolution

int config_finish(Config *c, char *err, int errlen) {
    Ctx ctx = {.name = c->source, .err = err, .errlen = errlen};
    const char *src = c->source[0] ? c->source : "config";
    int W = c->train.world_size;
    if (c->data.min_length > c->data.max_length)
        return FAIL(&ctx, "%s: data.min_length (%d) must not exceed data.max_length (%d)", src, c->data.min_length,
                    c->data.max_length);
    if (c->data.markov_support > c->data.vocab_size - 1)
        return FAIL(&ctx, "%s: data.markov_support (%d) must not exceed vocab_size - 1 (%d)", src,
                    c->data.markov_support, c->data.vocab_size - 1);
    if (c->data.ignore_token >= c->data.vocab_size)
        return FAIL(&ctx, "%s: data.ignore_token (%d) must be below data.vocab_size (%d), or -1", src, c->data.ignore_token,
                    c->data.vocab_size);
    // Positions of a microbatch and ids of a window are counted in int (pos is the 32-bit
    // dropout counter word): their products must fit.
    if ((int64_t)c->train.batch_size_per_rank * c->data.max_length > INT32_MAX)
        return FAIL(&ctx, "%s: train.batch_size_per_rank x data.max_length = %lld positions per microbatch, at most %d", src,
                    (long long)c->train.batch_size_per_rank * c->data.max_length, INT32_MAX);
    if ((int64_t)c->train.batch_size_per_rank * c->train.accumulation > INT32_MAX)
        return FAIL(&ctx, "%s: train.batch_size_per_rank x train.accumulation = %lld sequences per window, at most %d", src,
                    (long long)c->train.batch_size_per_rank * c->train.accumulation, INT32_MAX);
    if (c->train.interrupt_at > c->train.updates)
        return FAIL(&ctx, "%s: train.interrupt_at (%d) must not exceed train.updates (%d)", src, c->train.interrupt_at,
                    c->train.updates);
    if (c->train.bands_auto) {
        int lo = c->data.min_length, n = c->data.max_length - c->data.min_length + 1;
        if (n < W)
            return FAIL(&ctx, "%s: train.rank_bands: auto cannot split lengths [%d, %d] into %d bands", src,
                        c->data.min_length, c->data.max_length, W);
        for (int r = 0; r < W; r++) {
            c->train.bands[r][0] = lo + (int)((int64_t)r * n / W);
            c->train.bands[r][1] = lo + (int)((int64_t)(r + 1) * n / W) - 1;
        }
        return 0;
    }
    if (c->train.n_bands != W)
        return FAIL(&ctx, "%s: train.rank_bands: %d bands for train.world_size %d (expected one band per rank, or auto: "
                    "add --set train.rank_bands=auto for %d contiguous bands over [%d, %d])",
                    src, c->train.n_bands, W, W, c->data.min_length, c->data.max_length);
    for (int r = 0; r < W; r++) {
        int lo = c->train.bands[r][0], hi = c->train.bands[r][1];
        if (lo > hi) return FAIL(&ctx, "%s: train.rank_bands: band %d [%d, %d] is reversed", src, r, lo, hi);
        if (hi < c->data.min_length || lo > c->data.max_length)
            return FAIL(&ctx, "%s: train.rank_bands: band %d [%d, %d] leaves rank %d empty (lengths are in [%d, %d])",
                        src, r, lo, hi, r, c->data.min_length, c->data.max_length);
        for (int q = 0; q < r; q++)
            if (lo <= c->train.bands[q][1] && c->train.bands[q][0] <= hi)
                return FAIL(&ctx, "%s: train.rank_bands: band %d [%d, %d] overlaps band %d [%d, %d]", src, r, lo, hi,
                            q, c->train.bands[q][0], c->train.bands[q][1]);
    }
    return 0;
}

// ---------------------------------------------------------------------------------------
// Loading

#define MAX_CONFIG_BYTES (1 << 20)

// Applies one "KEY=VALUE" (VALUE parsed as YAML, so lists and 'auto' work) without the
// cross-field checks.
static int apply_set(Config *c, const char *assignment, char *err, int errlen) {
    const char *eq = strchr(assignment, '=');
    Ctx ctx = {.name = assignment, .err = err, .errlen = errlen, .strict = 1};
    if (!eq || eq == assignment) return FAIL(&ctx, "--set %s: expected KEY=VALUE", assignment);
    char key[256], name[300];
    snprintf(key, sizeof key, "%.*s", (int)(eq - assignment), assignment);
    const Field *f = field_find(key);
    char hint[300];
    if (!f) return FAIL(&ctx, "--set %s: unknown key '%s'%s", assignment, key, did_you_mean(key, hint, sizeof hint));
    snprintf(name, sizeof name, "--set %s", key);
    ctx.name = name;  // a YAML syntax error names the key
    Node *v = parse_document(eq + 1, strlen(eq + 1), &ctx);
    if (!v) return -1;
    ctx.name = "--set";  // value errors name the key themselves
    char eb[256];
    int rc = v->kind == N_MAP && v->n == 0 ? FAIL(&ctx, "--set %s: expected %s, got an empty value", key, expected(f, eb, sizeof eb))
                                           : set_field(c, f, v, &ctx);
    node_free(v);
    return rc;
}

int config_set(Config *c, const char *assignment, char *err, int errlen) {
    return apply_set(c, assignment, err, errlen) ? -1 : config_finish(c, err, errlen);
}

static int config_apply_text(Config *c, const char *text, size_t len, const char *name, char *err, int errlen) {
    Ctx ctx = {.name = name, .err = err, .errlen = errlen};
    Node *root = parse_document(text, len, &ctx);
    if (!root) return -1;
    int rc = apply_map(c, root, "", &ctx);
    node_free(root);
    return rc;
}

int config_load(Config *c, const char *path, char *const *sets, int n_sets, char *err, int errlen) {
    config_defaults(c);
    snprintf(c->source, sizeof c->source, "%s", path);
    size_t len;
    char why[256];
    char *text = file_read_regular(path, MAX_CONFIG_BYTES, &len, why, sizeof why);
    if (!text) {
        snprintf(err, (size_t)errlen, "%s: cannot read config file: %s", path, why);
        return -1;
    }
    int rc = config_apply_text(c, text, len, path, err, errlen);
    free(text);
    for (int i = 0; rc == 0 && i < n_sets; i++) rc = apply_set(c, sets[i], err, errlen);
    return rc ? rc : config_finish(c, err, errlen);
}

int config_from_yaml(Config *c, const char *text, const char *name, char *err, int errlen) {
    config_defaults(c);
    snprintf(c->source, sizeof c->source, "%s", name);
    int rc = config_apply_text(c, text, strlen(text), name, err, errlen);
    return rc ? rc : config_finish(c, err, errlen);
}

// ---------------------------------------------------------------------------------------
// Emission and comparison

// `s` as a YAML double-quoted scalar that libyaml reads back to the same bytes: quote and
// backslash escaped; every character YAML would not take raw (controls, line breaks
// such as U+0085/U+2028/U+2029, non-characters) as \xNN or \uXXXX; other UTF-8 kept.
// A byte that is not UTF-8 (never accepted by the parser) is written as U+FFFD.
static void yaml_quote(const char *s, char *out, size_t len) {
    Buf b = {0};
    buf_printf(&b, "\"");
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        uint32_t cp = *u;
        int n = cp < 0x80 ? 1 : (cp & 0xE0) == 0xC0 ? 2 : (cp & 0xF0) == 0xE0 ? 3 : (cp & 0xF8) == 0xF0 ? 4 : 0;
        int ok = n > 0;
        if (n > 1) cp &= 0x3Fu >> (n - 1);
        for (int i = 1; ok && i < n; i++) ok = (u[i] & 0xC0) == 0x80, cp = cp << 6 | (u[i] & 0x3Fu);
        if (!ok) cp = 0xFFFD, n = 1;
        int printable = cp == 0x09 || (cp >= 0x20 && cp <= 0x7E) || (cp >= 0xA0 && cp <= 0xD7FF && cp != 0x2028 && cp != 0x2029) ||
                        (cp >= 0xE000 && cp <= 0xFFFD && cp != 0xFEFF) || (cp >= 0x10000 && cp <= 0x10FFFF);
        if (cp == '"' || cp == '\\') buf_printf(&b, "\\%c", (char)cp);
        else if (cp == 0x09) buf_printf(&b, "\\t");
        else if (!ok) buf_printf(&b, "\\uFFFD");
        else if (printable) buf_printf(&b, "%.*s", n, (const char *)u);
        else if (cp <= 0xFF) buf_printf(&b, "\\x%02X", cp);
        else buf_printf(&b, "\\u%04X", cp);
        u += n;
    }
    buf_printf(&b, "\"");
    snprintf(out, len, "%s", b.s);
    buf_free(&b);
}

// Room for one emitted value: every band, or a path with every byte escaped (6 each).
#define VALUE_MAX (MAX_WORLD * 24 + 8)
_Static_assert(VALUE_MAX > 6 * PATH_MAX_LEN + 3, "an escaped path fits");

// The shortest form that reads back to the same double.
static void shortest_double(double v, char *out, size_t len) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, len, "%.*g", prec, v);
        if (strtod(out, NULL) == v) break;
    }
}

static void field_value(const Config *c, const Field *f, char *out, size_t len) {
    const char *base = (const char *)c;
    switch (f->type) {
    case F_INT: snprintf(out, len, "%d", *(const int *)(base + f->offset)); break;
    case F_U32: snprintf(out, len, "%u", *(const uint32_t *)(base + f->offset)); break;
    case F_DOUBLE: shortest_double(*(const double *)(base + f->offset), out, len); break;
    case F_PAIR: {
        const double *v = (const double *)(base + f->offset);
        char a[32], b[32];
        shortest_double(v[0], a, sizeof a), shortest_double(v[1], b, sizeof b);
        snprintf(out, len, "[%s, %s]", a, b);
        break;
    }
    case F_ENUM: snprintf(out, len, "%s", f->names[*(const int *)(base + f->offset)]); break;
    case F_PATH: yaml_quote(base + f->offset, out, len); break;
    case F_BANDS: {
        size_t n = (size_t)snprintf(out, len, "[");
        for (int r = 0; r < c->train.world_size && n < len; r++)
            n += (size_t)snprintf(out + n, len - n, "%s[%d, %d]", r ? ", " : "", c->train.bands[r][0], c->train.bands[r][1]);
        if (n < len) snprintf(out + n, len - n, "]");
        break;
    }
    }
}

char *config_to_yaml(const Config *c) {
    size_t cap = 8192, n = 0;
    char *out = xmalloc(cap);
    out[0] = 0;
    char prev[256] = "";
    for (int i = 0; i < N_FIELDS; i++) {
        const char *key = fields[i].key;
        // Open every group that differs from the previous key's groups.
        int depth = 0;
        const char *seg = key;
        for (const char *dot; (dot = strchr(seg, '.')); seg = dot + 1, depth++) {
            size_t plen = (size_t)(dot - key);
            if (strncmp(prev, key, plen + 1) != 0)
                n += (size_t)snprintf(out + n, cap - n, "%*s%.*s:\n", 2 * depth, "", (int)(dot - seg), seg);
        }
        char val[VALUE_MAX];
        field_value(c, &fields[i], val, sizeof val);
        if (fields[i].type == F_BANDS && c->train.bands_auto) snprintf(val + strlen(val), sizeof val - strlen(val), "  # auto");
        if (cap - n < strlen(val) + 256) {
            out = realloc(out, cap = cap * 2 + strlen(val));
            ASSERT(out);
        }
        n += (size_t)snprintf(out + n, cap - n, "%*s%s: %s\n", 2 * depth, "", seg, val);
        snprintf(prev, sizeof prev, "%s", key);
    }
    return out;
}

// First field with `flags` (0: any) outside paths.* whose value differs; fields with
// `except` in their flags are skipped.
static int diff_fields(const Config *a, const Config *b, int flags, int except, char *what, int len) {
    for (int i = 0; i < N_FIELDS; i++) {
        if ((fields[i].flags & flags) != flags || (fields[i].flags & except) || !strncmp(fields[i].key, "paths.", 6)) continue;
        char va[VALUE_MAX], vb[VALUE_MAX];
        field_value(a, &fields[i], va, sizeof va);
        field_value(b, &fields[i], vb, sizeof vb);
        if (strcmp(va, vb) != 0) {
            snprintf(what, (size_t)len, "%s: %s vs %s", fields[i].key, va, vb);
            return 1;
        }
    }
    return 0;
}

// Under the global sampler on both sides the window does not depend on how it is laid out
// on ranks (README "Elastic resume"): world size, bands, A, B and partition may change.
int config_diff_training(const Config *a, const Config *b, char *what, int len) {
    int elastic = a->train.sampler == SAMPLER_GLOBAL && b->train.sampler == SAMPLER_GLOBAL;
    return diff_fields(a, b, F_TRAJECTORY, elastic ? F_LAYOUT : 0, what, len);
}

int config_diff_run(const Config *a, const Config *b, char *what, int len) { return diff_fields(a, b, 0, 0, what, len); }
