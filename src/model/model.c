// model.c — the table of model rows and what every model shares: the shape from the config,
// tensor layout, initialisation, the parameters' budget term, and parameter I/O.
#include "model/model.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"
#include "io/h5io.h"
#include "model/hf.h"

#define MODEL_ROW(UP, low) [MODEL_##UP] = &low##_row,
const ModelRow *const model_rows[MODEL_COUNT] = {DDPTOK_MODELS(MODEL_ROW)};
#undef MODEL_ROW

void model_shape(ModelShape *m, const Config *cfg) {
    memset(m, 0, sizeof *m);
    m->kind = cfg->model.kind;
    m->V = cfg->data.vocab_size;
    m->max_length = cfg->data.max_length;
    model_rows[m->kind]->shape(m, cfg);
    if (!m->tail) m->tail = m->total;
}

int model_tensor_is_matrix(const ModelShape *m, int k) {
    // A stacked block axis is not one of the tensor's own dimensions (the row says which).
    return m->rank[k] - m->stacked[k] >= 2;
}

int model_blocks(const ModelShape *m) {
    size_t blocks = 0;
    for (int k = 0; k < m->n_tensors; k++)
        if (m->stacked[k]) {
            // every stacked tensor stacks the same blocks, and lies before the tail (whose
            // bucket would hold it twice)
            ASSERT((!blocks || m->dims[k][0] == blocks) && m->offset[k] + m->size[k] <= m->tail);
            blocks = m->dims[k][0];
        }
    return (int)blocks;
}

// Appends [offset, offset + count) to seg (n so far), coalesced with the last one where adjacent.
static int segment_append(GradSegment *seg, int n, size_t offset, size_t count) {
    if (!count) return n;
    if (n && seg[n - 1].offset + seg[n - 1].count == offset) {
        seg[n - 1].count += count;
        return n;
    }
    seg[n] = (GradSegment){offset, count};
    return n + 1;
}

int model_block_segments(const ModelShape *m, int l, GradSegment *seg) {
    ASSERT(l >= 0 && l < model_blocks(m));
    int n = 0;
    for (int k = 0; k < m->n_tensors; k++)
        if (m->stacked[k]) {
            size_t slice = m->size[k] / m->dims[k][0];
            n = segment_append(seg, n, m->offset[k] + (size_t)l * slice, slice);
        }
    return n;
}

int model_rest_segments(const ModelShape *m, GradSegment *seg) {
    int n = 0;
    for (int k = 0; k < m->n_tensors; k++)
        if (!m->stacked[k] && m->offset[k] < m->tail) {
            ASSERT(m->offset[k] + m->size[k] <= m->tail);
            n = segment_append(seg, n, m->offset[k], m->size[k]);
        }
    return n;
}

void model_add_block_tensor(ModelShape *m, const char *name, int rank, size_t d0, size_t d1, size_t d2) {
    model_add_tensor(m, name, rank, d0, d1, d2);
    m->stacked[m->n_tensors - 1] = 1;
}

void model_add_tensor(ModelShape *m, const char *name, int rank, size_t d0, size_t d1, size_t d2) {
    ASSERT(m->n_tensors < MODEL_MAX_TENSORS && rank >= 1 && rank <= MODEL_MAX_DIMS);
    int i = m->n_tensors++;
    m->name[i] = name;
    m->rank[i] = rank;
    m->dims[i][0] = d0, m->dims[i][1] = rank > 1 ? d1 : 1, m->dims[i][2] = rank > 2 ? d2 : 1;
    m->size[i] = (size_t)size_mul(size_mul(m->dims[i][0], m->dims[i][1]), m->dims[i][2]);
    m->offset[i] = m->total;
    m->total = (size_t)size_add(m->total, m->size[i]);
}

void model_add_field(ModelShape *m, const char *key, long long value) {
    ASSERT(m->n_fields < MODEL_MAX_FIELDS);
    m->field[m->n_fields].key = key;
    m->field[m->n_fields++].value = value;
}

int model_tensor(const ModelShape *m, const char *name) {
    for (int i = 0; i < m->n_tensors; i++)
        if (!strcmp(m->name[i], name)) return i;
    return -1;
}

void model_init_params(const ModelShape *m, uint32_t seed, float *theta) { model_rows[m->kind]->init(m, seed, theta); }

float *model_initial(const Config *cfg, ModelShape *m) {
    model_shape(m, cfg);
    float *theta = xmalloc(m->total * sizeof *theta);
    if (cfg->train.init_from[0]) {
        if (hf_import(cfg->train.init_from, m, theta)) stop(EXIT_BAD_INPUT);  // it said why
    } else model_init_params(m, cfg->seed, theta);
    return theta;
}

// 16 P-vectors: the most one command holds at once beside the optimizer's (plot and parity:
// measured 16.2 P·4 bytes beyond the start at V = H = 4096; e.g. reference.h5's 2 and
// grads.h5's 5 read whole, each copied by HDF5, and 2 working vectors).
void model_budget(Budget *b, const ModelShape *m, uint64_t rows, const char *rows_text, const char *rows_keys, const char *note,
                  FirstLayer first_layer) {
    const ModelRow *row = model_rows[m->kind];
    budget_add(b, size_mul((uint64_t)m->total, 64), row->shape_keys, "parameters (%s)*64", row->param_text);
    char keys[224];
    snprintf(keys, sizeof keys, "%s x (model.*, data.vocab_size)%s", rows_keys, note);
    row->budget(b, m, rows, rows_text, keys, first_layer);
}

int h5_write_params(hid_t f, const char *group, const ModelShape *m, const float *v) {
    for (int p = 0; p < m->n_tensors; p++) {
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, m->name[p]);
        hsize_t dims[MODEL_MAX_DIMS] = {m->dims[p][0], m->dims[p][1], m->dims[p][2]};
        if (h5_write(f, name, H5T_NATIVE_FLOAT, m->rank[p], dims, v + m->offset[p])) return -1;
    }
    return 0;
}

int h5_read_params(hid_t f, const char *path, const char *group, const ModelShape *m, float *v) {
    for (int p = 0; p < m->n_tensors; p++) {
        char name[128];
        snprintf(name, sizeof name, "%s/%s", group, m->name[p]);
        hsize_t dims[MODEL_MAX_DIMS] = {m->dims[p][0], m->dims[p][1], m->dims[p][2]};
        if (h5_read_exact(f, path, name, H5T_NATIVE_FLOAT, m->rank[p], dims, v + m->offset[p])) return -1;
    }
    return 0;
}
