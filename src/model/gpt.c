// gpt.c — the GPT's row (see gpt.h): its tensors, GPT-2's initialisation, its budget and the
// logits generate samples from.
#include "model/gpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"

static void gpt_shape(ModelShape *m, const Config *cfg) {
    gpt_dims(m)->n_layer = cfg->model.n_layer, gpt_dims(m)->n_head = cfg->model.n_head, gpt_dims(m)->n_embd = cfg->model.n_embd;
    size_t V = (size_t)m->V, T = (size_t)m->max_length, C = (size_t)gpt_dims(m)->n_embd, NL = (size_t)gpt_dims(m)->n_layer;
    model_add_tensor(m, "wte", 2, V, C, 1);
    model_add_tensor(m, "wpe", 2, T, C, 1);
    model_add_block_tensor(m, "ln1w", 2, NL, C, 1);
    model_add_block_tensor(m, "ln1b", 2, NL, C, 1);
    model_add_block_tensor(m, "qkvw", 3, NL, 3 * C, C);
    model_add_block_tensor(m, "qkvb", 2, NL, 3 * C, 1);
    model_add_block_tensor(m, "attprojw", 3, NL, C, C);
    model_add_block_tensor(m, "attprojb", 2, NL, C, 1);
    model_add_block_tensor(m, "ln2w", 2, NL, C, 1);
    model_add_block_tensor(m, "ln2b", 2, NL, C, 1);
    model_add_block_tensor(m, "fcw", 3, NL, 4 * C, C);
    model_add_block_tensor(m, "fcb", 2, NL, 4 * C, 1);
    model_add_block_tensor(m, "fcprojw", 3, NL, C, 4 * C);
    model_add_block_tensor(m, "fcprojb", 2, NL, C, 1);
    model_add_tensor(m, "lnfw", 1, C, 1, 1);
    model_add_tensor(m, "lnfb", 1, C, 1, 1);
    ASSERT(m->n_tensors == GPT_TENSORS);
    m->tail = m->offset[GPT_LNFW];
    m->context = m->max_length;
    model_add_field(m, "vocab_size", m->V);
    model_add_field(m, "n_ctx", m->max_length);
    model_add_field(m, "n_layer", gpt_dims(m)->n_layer);
    model_add_field(m, "n_head", gpt_dims(m)->n_head);
    model_add_field(m, "n_embd", gpt_dims(m)->n_embd);
}

static void gpt_init(const ModelShape *m, uint32_t seed, float *theta) {
    RngStream rng = rng_stream(seed, RNG_INIT, 0);
    double resid = GPT_INIT_STD / sqrt(2.0 * gpt_dims(m)->n_layer);
    for (int p = 0; p < GPT_TENSORS; p++) {
        float *x = theta + m->offset[p];
        int normal = p == GPT_WTE || p == GPT_WPE || p == GPT_QKVW || p == GPT_ATTPROJW || p == GPT_FCW || p == GPT_FCPROJW;
        int ones = p == GPT_LN1W || p == GPT_LN2W || p == GPT_LNFW;
        double std = p == GPT_ATTPROJW || p == GPT_FCPROJW ? resid : GPT_INIT_STD;
        for (size_t i = 0; i < m->size[p]; i++) {
            if (normal) {
                double u1 = rng_uniform(&rng), u2 = rng_uniform(&rng);
                x[i] = (float)(std * sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2));
            } else x[i] = ones ? 1.0f : 0.0f;
        }
    }
}

// gpt_cpu.c's buffers for `rows` packed rows (its create allocates exactly these):
//   per row and block: ln1, atty, res2, ln2, res3 (C each), qkv (3C), fch, fcg (4C each), the two
//     LayerNorms' mean and rstd (4): 16C + 4 floats; the residual branches' dropout masks 2C bytes;
//   per row and block the attention probabilities NH·Lmax floats and their mask NH·Lmax bytes (a
//     run of length len holds NH·len² of each);
//   per row: h0, lnf, sup, dres, dln, datty (C each), dqkv (3C), dfc (4C), lnf's mean and rstd and
//     the run offsets (2 + 2), logits (V): 13C + 4 + V floats; the embedding's mask C bytes;
//   per instance: the attention's scratch 2·Lmax² and one row's max(4C, NH·Lmax), V floats.
static void gpt_budget(Budget *b, const ModelShape *m, uint64_t rows, const char *rows_text, const char *keys, FirstLayer first_layer) {
    (void)first_layer;  // dense only (compute_gpt_cpu.first_layers)
    uint64_t C = (uint64_t)gpt_dims(m)->n_embd, NL = (uint64_t)gpt_dims(m)->n_layer, NH = (uint64_t)gpt_dims(m)->n_head, T = (uint64_t)m->max_length,
             V = (uint64_t)m->V;
    uint64_t per_row = size_add(size_mul(NL, size_add(size_mul(16, C), 4)), size_add(size_add(size_mul(13, C), 4), V));
    uint64_t per_row_bytes = size_add(size_mul(per_row, 4), size_mul(size_add(size_mul(2, NL), 1), C));
    budget_add(b, size_mul(rows, per_row_bytes), keys, "activations %s*((NL*(16C+4)+13C+4+V)*4+(2NL+1)*C)", rows_text);
    budget_add(b, size_mul(size_mul(size_mul(rows, NL), size_mul(NH, T)), 5), keys, "attention %s*NL*NH*Lmax*5", rows_text);
    uint64_t row = size_mul(4, C) > size_mul(NH, T) ? size_mul(4, C) : size_mul(NH, T);
    budget_add(b, size_mul(size_add(size_add(size_mul(size_mul(2, T), T), row), V), 4),
               "data.max_length, model.n_embd, model.n_head", "attention scratch (2*Lmax*Lmax+max(4C,NH*Lmax)+V)*4");
}

// One sequence of the ids so far and a placeholder for the token to predict, its last position
// supervised: the backend's logits there (the begin id first, as in training).
static void gpt_logits(const ModelShape *m, const float *theta, const int32_t *ids, int n, double *logits) {
    int keep = n < m->max_length - 1 ? n : m->max_length - 1, len = keep + 1;
    Corpus one = {0};
    one.n = 1, one.n_tokens = len;
    one.tokens = xmalloc((size_t)len * sizeof *one.tokens);
    int64_t offsets[2] = {0, len};
    one.offsets = offsets;
    memcpy(one.tokens, ids + (n - keep), (size_t)keep * sizeof *ids);
    one.tokens[keep] = 1;  // a placeholder target: only the logits are read
    const BatchSpec spec = model_batch_spec(m);
    Batch b;
    batch_init(&b, &spec, 1);
    int32_t id = 0;
    const LabelRule last = {keep, -1, 0};
    batch_build(&b, &one, &id, 1, &last, UNIT_TOKEN);
    const ComputeOps *cpu = model_row(m)->cpu;
    Compute *cc = cpu->create(m, b.n, FIRST_LAYER_DENSE);
    cpu->set_params(cc, theta);
    float *out = xmalloc((size_t)m->V * sizeof *out);
    cpu->last_logits(cc, &b, out);
    for (int v = 0; v < m->V; v++) logits[v] = out[v];
    cpu->destroy(cc);
    free(out), free(one.tokens);
    batch_free(&b);
}

const ModelRow gpt_row = {
    .name = "gpt",
    .layout = BATCH_SEQUENCES,
    .param_text = "V*C+Lmax*C+NL*(12*C*C+13*C)+2*C",
    .shape_keys = "data.vocab_size, data.max_length, model.n_embd, model.n_layer",
    .shape = gpt_shape,
    .init = gpt_init,
    .budget = gpt_budget,
    .logits = gpt_logits,
    .cpu = &compute_gpt_cpu,
};
