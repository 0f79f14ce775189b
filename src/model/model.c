// model.c — parameter layout, initialisation and parameter I/O (backend-independent).
#include "model/model.h"

#include <math.h>
#include <stdlib.h>

#include "base/mem.h"
#include "io/h5io.h"

const char *const param_names[N_PARAMS] = {"embedding", "w1", "b1", "w2", "b2"};

void model_shape(ModelShape *m, const Config *cfg) {
    m->V = cfg->data.vocab_size;
    m->k = cfg->model.context;
    m->D = cfg->model.embed_dim;
    m->H = cfg->model.hidden;
    m->max_length = cfg->data.max_length;
    size_t d[N_PARAMS][2] = {{(size_t)m->V, (size_t)m->D},
                             {(size_t)m->H, (size_t)m->k * m->D},
                             {(size_t)m->H, 1},
                             {(size_t)m->V, (size_t)m->H},
                             {(size_t)m->V, 1}};
    m->total = 0;
    for (int i = 0; i < N_PARAMS; i++) {
        m->dims[i][0] = d[i][0];
        m->dims[i][1] = d[i][1];
        m->rank[i] = (i == P_B1 || i == P_B2) ? 1 : 2;
        m->size[i] = d[i][0] * d[i][1];
        m->offset[i] = m->total;
        m->total += m->size[i];
    }
}

// embedding ~ N(0, 1); w1, b1 ~ U(±1/sqrt(k·D)); w2, b2 ~ U(±1/sqrt(H)) — the
// torch.nn.Embedding / nn.Linear defaults, drawn in θ order from the init stream.
void model_init_params(const ModelShape *m, uint32_t seed, float *theta) {
    RngStream rng = rng_stream(seed, RNG_INIT, 0);
    double bound[N_PARAMS] = {0, 1 / sqrt((double)m->k * m->D), 1 / sqrt((double)m->k * m->D), 1 / sqrt((double)m->H),
                              1 / sqrt((double)m->H)};
    for (int p = 0; p < N_PARAMS; p++) {
        float *x = theta + m->offset[p];
        for (size_t i = 0; i < m->size[p]; i++) {
            if (p == P_EMBEDDING) {
                double u1 = rng_uniform(&rng), u2 = rng_uniform(&rng);
                x[i] = (float)(sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2));
            } else {
                x[i] = (float)((2.0 * rng_uniform(&rng) - 1.0) * bound[p]);
            }
        }
    }
}

float *model_initial(const Config *cfg, ModelShape *m) {
    model_shape(m, cfg);
    float *theta = xmalloc(m->total * sizeof *theta);
    model_init_params(m, cfg->seed, theta);
    return theta;
}

int h5_write_params(hid_t f, const char *group, const ModelShape *m, const float *v) {
    for (int p = 0; p < N_PARAMS; p++) {
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, param_names[p]);
        hsize_t dims[2] = {m->dims[p][0], m->dims[p][1]};
        if (h5_write(f, name, H5T_NATIVE_FLOAT, m->rank[p], dims, v + m->offset[p])) return -1;
    }
    return 0;
}

int h5_read_params(hid_t f, const char *path, const char *group, const ModelShape *m, float *v) {
    for (int p = 0; p < N_PARAMS; p++) {
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, param_names[p]);
        hsize_t dims[2] = {m->dims[p][0], m->dims[p][1]};
        if (h5_read_exact(f, path, name, H5T_NATIVE_FLOAT, m->rank[p], dims, v + m->offset[p])) return -1;
    }
    return 0;
}

void model_logits(const ModelShape *m, const float *theta, const int32_t *ctx, double *logits) {
    const float *emb = theta + m->offset[P_EMBEDDING], *w1 = theta + m->offset[P_W1], *b1 = theta + m->offset[P_B1];
    const float *w2 = theta + m->offset[P_W2], *b2 = theta + m->offset[P_B2];
    size_t kD = (size_t)m->k * m->D;
    double *x = xmalloc(kD * sizeof *x), *h = xmalloc((size_t)m->H * sizeof *h);
    for (int j = 0; j < m->k; j++)
        for (int d = 0; d < m->D; d++) x[(size_t)j * m->D + d] = emb[(size_t)ctx[j] * m->D + d];
    for (int i = 0; i < m->H; i++) {
        double a = b1[i];
        for (size_t c = 0; c < kD; c++) a += (double)w1[(size_t)i * kD + c] * x[c];
        h[i] = tanh(a);
    }
    for (int v = 0; v < m->V; v++) {
        double a = b2[v];
        for (int i = 0; i < m->H; i++) a += (double)w2[(size_t)v * m->H + i] * h[i];
        logits[v] = a;
    }
    free(x), free(h);
}
