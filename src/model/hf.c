// hf.c — the GPT as a Hugging Face GPT2LMHeadModel directory, out and in (see hf.h).
#include "model/hf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "io/jsonio.h"
#include "io/safetensors.h"
#include "model/gpt.h"

// Each ddptok tensor as HF names it: per block ("h.%d." inserted) or not, and whether HF's
// Conv1D stores it transposed ((in, out) for ddptok's (out, in)).
static const struct {
    int tensor;
    const char *name;  // after "transformer." (and "h.<l>." for a block's)
    int per_block, transposed;
} hf_names[GPT_TENSORS] = {
    {GPT_WTE, "wte.weight", 0, 0},           {GPT_WPE, "wpe.weight", 0, 0},
    {GPT_LN1W, "ln_1.weight", 1, 0},         {GPT_LN1B, "ln_1.bias", 1, 0},
    {GPT_QKVW, "attn.c_attn.weight", 1, 1},  {GPT_QKVB, "attn.c_attn.bias", 1, 0},
    {GPT_ATTPROJW, "attn.c_proj.weight", 1, 1}, {GPT_ATTPROJB, "attn.c_proj.bias", 1, 0},
    {GPT_LN2W, "ln_2.weight", 1, 0},         {GPT_LN2B, "ln_2.bias", 1, 0},
    {GPT_FCW, "mlp.c_fc.weight", 1, 1},      {GPT_FCB, "mlp.c_fc.bias", 1, 0},
    {GPT_FCPROJW, "mlp.c_proj.weight", 1, 1}, {GPT_FCPROJB, "mlp.c_proj.bias", 1, 0},
    {GPT_LNFW, "ln_f.weight", 0, 0},         {GPT_LNFB, "ln_f.bias", 0, 0},
};

// Block l's slice of tensor p: its (rows, cols) in ddptok's layout and its first element.
static size_t slice(const ModelShape *m, int p, int l, size_t *rows, size_t *cols) {
    int stacked = p >= GPT_LN1W && p <= GPT_FCPROJB;
    size_t per = stacked ? m->size[p] / (size_t)gpt_dims(m)->n_layer : m->size[p];
    *rows = m->rank[p] == 3 ? m->dims[p][1] : m->rank[p] == 2 && !stacked ? m->dims[p][0] : 1;
    *cols = per / *rows;
    return m->offset[p] + (stacked ? (size_t)l * per : 0);
}

static void hf_name(char *out, size_t len, int i, int l) {
    if (hf_names[i].per_block) snprintf(out, len, "transformer.h.%d.%s", l, hf_names[i].name);
    else snprintf(out, len, "transformer.%s", hf_names[i].name);
}

int hf_export(const char *dir, const ModelShape *m, const float *theta, const Config *cfg, json_t *provenance) {
    ASSERT(m->kind == MODEL_GPT);
    int NL = gpt_dims(m)->n_layer, n = 0, V = m->V;
    float *hf = xmalloc(m->total * sizeof *hf);  // the tensors in HF's layout, back to back
    StTensorOut *t = xcalloc((size_t)GPT_TENSORS * NL, sizeof *t);
    char (*names)[96] = xcalloc((size_t)GPT_TENSORS * NL, sizeof *names);
    size_t at = 0;
    for (int i = 0; i < GPT_TENSORS; i++)
        for (int l = 0; l < (hf_names[i].per_block ? NL : 1); l++) {
            size_t rows, cols, from = slice(m, hf_names[i].tensor, l, &rows, &cols);
            float *out = hf + at;
            if (hf_names[i].tensor == GPT_WTE)  // HF row h is ddptok row hf_ddptok_id(h)
                for (int h = 0; h < V; h++) memcpy(out + (size_t)h * cols, theta + from + (size_t)hf_ddptok_id(h, V) * cols, cols * sizeof *out);
            else if (hf_names[i].transposed)
                for (size_t r = 0; r < rows; r++)
                    for (size_t c = 0; c < cols; c++) out[c * rows + r] = theta[from + r * cols + c];
            else memcpy(out, theta + from, rows * cols * sizeof *out);
            hf_name(names[n], sizeof names[n], i, l);
            t[n].name = names[n], t[n].data = out;
            int vector = m->rank[hf_names[i].tensor] == 1 || (hf_names[i].per_block && m->rank[hf_names[i].tensor] == 2);
            if (vector) t[n].rank = 1, t[n].dims[0] = rows * cols;
            else if (hf_names[i].transposed) t[n].rank = 2, t[n].dims[0] = cols, t[n].dims[1] = rows;
            else t[n].rank = 2, t[n].dims[0] = rows, t[n].dims[1] = cols;
            at += rows * cols, n++;
        }
    ASSERT(at == m->total);
    size_t len;
    char *image = safetensors_image(t, n, json_pack("{s:s}", "format", "pt"), &len);
    free(t), free(names), free(hf);
    char path[1200];
    int rc = mkdir_p(dir) ? error("%s: cannot create the directory", dir) : 0;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (!rc) rc = write_file_atomic(path, image, len);
    free(image);
    if (rc) {
        if (provenance) json_decref(provenance);
        return -1;
    }
    double p = cfg->model.dropout;
    json_t *c = json_pack("{s:[s], s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:n, s:s, s:o, s:o, s:o, s:f, s:f, s:b, s:b, s:b, s:b, s:i, "
                          "s:i, s:b, s:s}",
                          "architectures", "GPT2LMHeadModel", "model_type", "gpt2", "vocab_size", V, "n_positions", m->max_length,
                          "n_ctx", m->max_length, "n_embd", gpt_dims(m)->n_embd, "n_layer", NL, "n_head", gpt_dims(m)->n_head, "n_inner",
                          "activation_function", "gelu_new", "resid_pdrop", json_num(p), "embd_pdrop", json_num(p), "attn_pdrop",
                          json_num(p), "layer_norm_epsilon", GPT_LN_EPS, "initializer_range", GPT_INIT_STD, "scale_attn_weights", 1,
                          "scale_attn_by_inverse_layer_idx", 0, "reorder_and_upcast_attn", 0, "use_cache", 1, "bos_token_id",
                          hf_id_of(0, V), "eos_token_id", hf_id_of(0, V), "tie_word_embeddings", 1, "torch_dtype", "float32");
    if (!c) die(EXIT_INTERNAL, "BUG: hf_export: config.json did not pack");
    if (provenance) json_object_set_new(c, "ddptok", provenance);
    snprintf(path, sizeof path, "%s/config.json", dir);
    return json_write_file(path, c);
}

// config.json's integer `key` (or `def` when absent and def >= 0); -1 with one line otherwise.
static long long config_int(const char *path, json_t *c, const char *key, long long def) {
    json_t *v = json_object_get(c, key);
    if (!v && def >= 0) return def;
    // (a negative one is refused here: -1 is this function's error, and no such size is negative)
    if (!json_is_integer(v) || json_integer_value(v) < 0) return error("%s: %s: expected a non-negative integer", path, key), -1;
    return json_integer_value(v);
}

// A JSON value as Python tests it for truth (transformers reads config.json's flags so).
static int python_truth(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_TRUE: return 1;
    case JSON_FALSE: case JSON_NULL: return 0;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_STRING: return json_string_length(v) != 0;
    case JSON_ARRAY: return json_array_size(v) != 0;
    case JSON_OBJECT: return json_object_size(v) != 0;
    }
    return 0;
}

// A JSON value as one line names it: 1, "true", null (short; a long one cut).
static const char *json_kind(const json_t *v) {
    static char text[64];
    char *d = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    snprintf(text, sizeof text, "%s%s", d ? d : "(absent)", d && strlen(d) > 40 ? "..." : "");
    if (d && strlen(d) > 40) snprintf(text + 40, sizeof text - 40, "...");
    free(d);
    return text;
}

static int config_check(const char *path, json_t *c, const ModelShape *m, long long *positions) {
    const char *type = json_string_value(json_object_get(c, "model_type"));
    if (!type || strcmp(type, "gpt2") != 0)
        return error("%s: model_type %s: train.init_from reads GPT-2 (model_type gpt2) directories", path, type ? type : "(none)");
    const struct {
        const char *key;
        long long want;
        const char *ours;
    } dims[] = {{"n_embd", gpt_dims(m)->n_embd, "model.n_embd"}, {"n_layer", gpt_dims(m)->n_layer, "model.n_layer"}, {"n_head", gpt_dims(m)->n_head, "model.n_head"}};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        long long v = config_int(path, c, dims[i].key, -1);
        if (v < 0) return -1;
        if (v != dims[i].want) return error("%s: %s is %lld, this config's %s is %lld", path, dims[i].key, v, dims[i].ours, dims[i].want);
    }
    long long V = config_int(path, c, "vocab_size", -1), pos = config_int(path, c, "n_positions", -1);
    if (V < 0 || pos < 0) return -1;
    if (V != m->V)
        return error("%s: a vocabulary of %lld ids, this config's data.vocab_size is %d (ddptok id d is HF id d - 1, the begin id 0 is HF "
                     "id V - 1: the two must be the same size; for GPT-2's 50257, import GPT-2 ids with --eot 50256 and "
                     "data.vocab_size: 50257)", path, V, m->V);
    *positions = pos;
    if (pos < m->max_length)
        return error("%s: n_positions %lld, fewer than this config's data.max_length %d (the GPT's context)", path, pos, m->max_length);
    long long inner = json_is_null(json_object_get(c, "n_inner")) ? -2 : config_int(path, c, "n_inner", 4LL * gpt_dims(m)->n_embd);
    if (inner == -1) return -1;
    if (inner >= 0 && inner != 4LL * gpt_dims(m)->n_embd) return error("%s: n_inner %lld, the GPT's MLP is 4 x n_embd = %d", path, inner, 4 * gpt_dims(m)->n_embd);
    json_t *act = json_object_get(c, "activation_function");  // transformers: ACT2FN[value], default gelu_new
    if (act && !json_is_string(act)) return error("%s: activation_function is %s: expected a string (gelu_new)", path, json_kind(act));
    if (act && strcmp(json_string_value(act), "gelu_new") && strcmp(json_string_value(act), "gelu_pytorch_tanh"))
        return error("%s: activation_function %s: the GPT computes GELU's tanh form (gelu_new)", path, json_string_value(act));
    json_t *eps = json_object_get(c, "layer_norm_epsilon");
    if (eps && !json_is_number(eps)) return error("%s: layer_norm_epsilon is %s: expected a number (1e-05)", path, json_kind(eps));
    if (eps && fabs(json_number_value(eps) - GPT_LN_EPS) > 1e-12)
        return error("%s: layer_norm_epsilon %g: the GPT's LayerNorm uses 1e-05", path, json_number_value(eps));
    // transformers tests these flags for truth (`if config.scale_attn_by_inverse_layer_idx:`):
    // each is read the same way (1 and "true" are true, null, 0 and "" false), its default
    // when absent.
    const struct {
        const char *key;
        int want, absent;
    } flags[] = {{"scale_attn_weights", 1, 1}, {"scale_attn_by_inverse_layer_idx", 0, 0}, {"tie_word_embeddings", 1, 1}};
    for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
        json_t *v = json_object_get(c, flags[i].key);
        int truth = v ? python_truth(v) : flags[i].absent;
        if (truth != flags[i].want)
            return error("%s: %s is %s (%s, as transformers reads it): the GPT computes it %s", path, flags[i].key, json_kind(v),
                         truth ? "true" : "false", flags[i].want ? "true" : "false");
    }
    return 0;
}

// The entry of HF name `name`: with the transformer. prefix (as save_pretrained writes it) or
// without (GPT-2's own files on the Hub); NULL with one line naming both when neither is there.
static const StEntry *find(const StFile *st, const char *name) {
    const StEntry *e = safetensors_find(st, name);
    if (!e && !strncmp(name, "transformer.", 12)) e = safetensors_find(st, name + 12);
    if (!e) error("%s: no tensor %s (nor %s)", st->path, name, name + 12);
    return e;
}

static char first_digest[65];  // θ0's SHA-256 at this process's first import ("" before)

// 0 when all n values are finite, else one line naming the file, tensor and element.
static int finite_or_say(const char *path, const char *name, const float *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return error("%s: tensor %s: element %llu is %s: refused (weights must be finite)", path, name, (unsigned long long)i,
                         isnan(v[i]) ? "NaN" : v[i] > 0 ? "+Inf" : "-Inf");
    return 0;
}

int hf_import(const char *dir, const ModelShape *m, float *theta) {
    if (m->kind != MODEL_GPT)
        return error("train.init_from %s: reads a Hugging Face GPT-2 directory, and this config's model.kind is %s (needs gpt)", dir,
                     model_kind_names[m->kind]);
    char path[1200];
    struct stat st_dir;
    if (stat(dir, &st_dir) || !S_ISDIR(st_dir.st_mode))
        return error("train.init_from %s: not a directory (expected a Hugging Face GPT-2 directory: config.json and model.safetensors, "
                     "as save_pretrained or ddptok export --format hf write them)", dir);
    snprintf(path, sizeof path, "%s/config.json", dir);
    json_t *c = json_read_file(path, 0);
    if (!c) return -1;
    long long positions = 0;
    int rc = config_check(path, c, m, &positions);
    json_decref(c);
    if (rc) return -1;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    StFile st;
    if (safetensors_open(&st, path)) return -1;
    int V = m->V, NL = gpt_dims(m)->n_layer;
    Sha256 *h = sha256_begin();  // θ0 as read: every tensor's float values in HF's order
    float *buf = NULL;
    for (int i = 0; i < GPT_TENSORS && !rc; i++)
        for (int l = 0; l < (hf_names[i].per_block ? NL : 1) && !rc; l++) {
            char name[96];
            hf_name(name, sizeof name, i, l);
            const StEntry *e = find(&st, name);
            if (!e) {
                rc = -1;
                break;
            }
            size_t rows, cols, to = slice(m, hf_names[i].tensor, l, &rows, &cols);
            int p = hf_names[i].tensor, vector = m->rank[p] == 1 || (hf_names[i].per_block && m->rank[p] == 2);
            uint64_t want0 = vector ? rows * cols : hf_names[i].transposed ? cols : rows, want1 = hf_names[i].transposed ? rows : cols;
            if (p == GPT_WPE) want0 = (uint64_t)positions;  // config.json's n_positions rows, its first max_length used
            if (e->rank != (vector ? 1 : 2) || e->dims[0] != want0 || (!vector && e->dims[1] != want1)) {
                rc = error("%s: %s has shape [%llu%s%llu], expected [%llu%s%llu] for this config", path, name, (unsigned long long)e->dims[0],
                           e->rank > 1 ? ", " : "", e->rank > 1 ? (unsigned long long)e->dims[1] : 0ULL, (unsigned long long)want0,
                           vector ? "" : ", ", vector ? 0ULL : (unsigned long long)want1);
                break;
            }
            // Read under --check too: a NaN, an untied head or another rank's bytes are refused
            // before the run, and the digest below is of the very values θ0 gets.
            buf = realloc(buf, ((size_t)e->count + 1) * sizeof *buf);
            if (!buf) die_abort(EXIT_INTERNAL, "out of memory reading %s", name);
            if (safetensors_read_f32(&st, e, buf) || finite_or_say(path, name, buf, e->count)) {
                rc = -1;
                break;
            }
            sha256_add(h, buf, (size_t)e->count * sizeof *buf);
            if (!theta) continue;  // the check alone (--check)
            float *out = theta + to;
            if (p == GPT_WTE)
                for (int h = 0; h < V; h++) memcpy(out + (size_t)hf_ddptok_id(h, V) * cols, buf + (size_t)h * cols, cols * sizeof *out);
            else if (hf_names[i].transposed)
                for (size_t r = 0; r < rows; r++)
                    for (size_t cc = 0; cc < cols; cc++) out[r * cols + cc] = buf[cc * rows + r];
            else memcpy(out, buf, rows * cols * sizeof *out);  // wpe: its first max_length rows
        }
    // An lm_head of its own must be the tied wte (a model trained untied is another model).
    const StEntry *head = rc ? NULL : safetensors_find(&st, "lm_head.weight");
    if (head) {
        const StEntry *wte = find(&st, "transformer.wte.weight");
        float *a = xmalloc((size_t)wte->count * sizeof *a), *b = xmalloc((size_t)head->count * sizeof *b);
        if (head->count != wte->count || safetensors_read_f32(&st, wte, a) || safetensors_read_f32(&st, head, b) ||
            memcmp(a, b, (size_t)wte->count * sizeof *a) != 0)
            rc = error("%s: lm_head.weight differs from transformer.wte.weight: the GPT's output layer is tied to the token embedding", path);
        free(a), free(b);
    }
    free(buf);
    safetensors_close(&st);
    char digest[65];
    sha256_hex(h, digest);
    if (rc) return -1;
    // Every import of this process reads the same θ0 (the --check read at start-up, which the
    // ranks' agreement compares, and the run's own): a directory rewritten between them is
    // refused, not trained from.
    if (!first_digest[0]) memcpy(first_digest, digest, sizeof digest);
    else if (strcmp(first_digest, digest))
        return error("train.init_from %s: changed while ddptok read it (θ0 SHA-256 %.16s at start-up, %.16s now): refused", dir, first_digest,
                     digest);
    return 0;
}

const char *hf_import_digest(void) { return first_digest; }
