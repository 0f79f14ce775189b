// optimizer.c — the algorithm rows and the backend-independent half of the optimizer
// interface (see optimizer.h): state allocation, the step count, host snapshots.
#include "method/optimizer.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"

const char *const optimizer_names[OPT_COUNT] = {[OPT_SGD] = "sgd", [OPT_ADAMW] = "adamw"};

const char *const lr_schedule_names[LR_SCHEDULE_COUNT] = {[LR_CONSTANT] = "constant", [LR_COSINE] = "cosine"};

const char *const decay_group_names[DECAY_COUNT] = {[DECAY_ALL] = "all", [DECAY_MATRICES] = "matrices"};

double lr_schedule_rate(const LrSchedule *s, double lr, int64_t it) {
    if (s->kind == LR_CONSTANT) return lr;
    // nanoGPT's get_lr: linear warmup from lr/(warmup+1), min_lr past the decay, cosine between
    if (it < s->warmup) return lr * (double)(it + 1) / (double)(s->warmup + 1);
    if (it > s->decay_updates) return s->min_lr;
    double ratio = (double)(it - s->warmup) / (double)(s->decay_updates - s->warmup);
    double coeff = 0.5 * (1.0 + cos(M_PI * ratio));
    return s->min_lr + coeff * (lr - s->min_lr);
}

const OptimizerRow optimizers[OPT_COUNT] = {
    [OPT_SGD] = {.n_states = 1, .state_names = {"momentum"}, .step_is_update = 1},
    [OPT_ADAMW] = {.n_states = 2, .state_names = {"exp_avg", "exp_avg_sq"}, .nonnegative = {0, 1}, .step_is_update = 1},
};

// The hyper-parameter table (optimizer.h, OPTIMIZER_HYPERS) as rows.
#define OPT_UNPACK(...) __VA_ARGS__
#define HYPER_ROW(field, n, attrs, lo, hi, def, use, expect) \
    {#field, n, {OPT_UNPACK attrs}, offsetof(OptimizerHyper, field), lo, hi, {OPT_UNPACK def}, use, expect},
const HyperRow optimizer_hypers[] = {OPTIMIZER_HYPERS(HYPER_ROW)};
const int optimizer_n_hypers = (int)(sizeof optimizer_hypers / sizeof optimizer_hypers[0]);
#define HYPER_COUNT(field, n, ...) +n
_Static_assert(0 OPTIMIZER_HYPERS(HYPER_COUNT) <= OPT_MAX_HYPER_ATTRS, "a checkpoint's mask holds every attribute");

int optimizer_hyper_attr(int a, HyperAttr *out) {
    for (int i = 0; i < optimizer_n_hypers && a >= 0; i++) {
        if (a < optimizer_hypers[i].n) {
            *out = (HyperAttr){optimizer_hypers[i].attrs[a], &optimizer_hypers[i], a};
            return 0;
        }
        a -= optimizer_hypers[i].n;
    }
    return -1;
}

int optimizer_n_hyper_attrs(void) { return 0 OPTIMIZER_HYPERS(HYPER_COUNT); }

double *optimizer_hyper_slot(OptimizerHyper *h, int a) {
    HyperAttr at;
    ASSERT(optimizer_hyper_attr(a, &at) == 0);
    return (double *)((char *)h + at.row->offset) + at.elem;
}

double optimizer_hyper_get(const OptimizerHyper *h, int a) { return *optimizer_hyper_slot((OptimizerHyper *)h, a); }

void optimizer_hyper_defaults(OptimizerHyper *h) {
    HyperAttr at;
    for (int a = 0; optimizer_hyper_attr(a, &at) == 0; a++) *optimizer_hyper_slot(h, a) = at.row->def[at.elem];
}

Optimizer *optimizer_create(OptimizerKind kind, const OptimizerHyper *h, const OptimizerOps *ops, size_t P) {
    ASSERT((int)kind >= 0 && kind < OPT_COUNT && ops->step[kind]);
    Optimizer *o = xcalloc(1, sizeof *o);
    o->kind = kind, o->ops = ops, o->h = *h, o->P = P;
    for (int i = 0; i < optimizers[kind].n_states; i++) o->state[i] = ops->alloc(P);
    return o;
}

void optimizer_free(Optimizer *o) {
    if (!o) return;
    for (int i = 0; i < OPT_MAX_STATES; i++)
        if (o->state[i]) o->ops->release(o->state[i]);
    if (o->mask_owned) o->ops->mask_release(o->decay_mask);
    free(o);
}

void optimizer_set_decay_mask(Optimizer *o, const uint8_t *host) {
    if (o->mask_owned) o->ops->mask_release(o->decay_mask);
    o->mask_owned = host && o->ops->mask_upload;
    o->decay_mask = o->mask_owned ? o->ops->mask_upload(host, o->P) : host;
}

void optimizer_step(Optimizer *o, float *theta, const float *grad, float grad_div) {
    o->steps++;
    o->lr = lr_schedule_rate(&o->schedule, o->h.lr, o->steps - 1);
    o->ops->step[o->kind](o, theta, grad, grad_div);
}

void optimizer_snapshot(const Optimizer *o, OptimizerSnapshot *s) {
    memset(s, 0, sizeof *s);
    s->kind = o->kind, s->h = o->h, s->steps = o->steps;
    for (int i = 0; i < optimizers[o->kind].n_states; i++) {
        s->state[i] = xmalloc(o->P * sizeof(float));
        o->ops->download(s->state[i], o->state[i], o->P);
    }
}

void optimizer_snapshot_free(OptimizerSnapshot *s) {
    for (int i = 0; i < OPT_MAX_STATES; i++) free(s->state[i]), s->state[i] = NULL;
}

void optimizer_restore(Optimizer *o, const OptimizerSnapshot *s, const char *skip) {
    ASSERT(s->kind == o->kind);
    o->steps = s->steps;
    for (int i = 0; i < optimizers[o->kind].n_states; i++)
        if (!skip || strcmp(skip, optimizers[o->kind].state_names[i]) != 0) o->ops->upload(o->state[i], s->state[i], o->P);
}

int optimizer_state_index(OptimizerKind kind, const char *name) {
    for (int i = 0; i < optimizers[kind].n_states; i++)
        if (!strcmp(optimizers[kind].state_names[i], name)) return i;
    return -1;
}

void adamw_scalars(const Optimizer *o, AdamWScalars *s) {
    double t = (double)o->steps;
    s->decay = (float)(1.0 - o->lr * o->h.weight_decay);
    double beta1 = o->h.betas[0], beta2 = o->h.betas[1];
    s->beta1 = (float)beta1, s->beta2 = (float)beta2;
    s->one_minus_beta1 = (float)(1.0 - beta1), s->one_minus_beta2 = (float)(1.0 - beta2);
    s->step_size = (float)(o->lr / (1.0 - pow(beta1, t)));
    s->bias2_sqrt = (float)sqrt(1.0 - pow(beta2, t));
    s->eps = (float)o->h.eps;
}

