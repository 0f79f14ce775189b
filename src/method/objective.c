// objective.c — the rows of the objective (see objective.h) and the count all-reduce
// buffer. Names used below: W ranks, A microbatches per window; for a unit, L_r the rank's
// (weighted) loss sum (S_r or Q_r), C_r its count and C = Σ C_r (N_r, N or M_r, M).
#include "method/objective.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "base/report.h"

// ---------------------------------------------------------------------------------------
// Units

static int64_t count_tokens(const Counts *counts) { return counts->tokens; }
static int64_t count_sequences(const Counts *counts) { return counts->sequences; }
static int64_t count_padded(const Counts *counts) { return counts->padded; }
static int64_t count_slots(const Counts *counts) { return counts->slots; }
static float weight_one(int n) { (void)n; return 1.0f; }
// The sequence unit gives each sequence the same total weight: its own token mean.
static float weight_inverse(int n) { return (float)(1.0 / n); }

const char *const loss_unit_names[UNIT_COUNT] = {"token", "sequence"};

const UnitRow loss_units[UNIT_COUNT] = {
    [UNIT_TOKEN] = {.product = NORM_GLOBAL_TOKEN, .count = count_tokens,
                    .padded_count = count_padded, .position_weight = weight_one},
    [UNIT_SEQUENCE] = {.product = NORM_GLOBAL_SEQUENCE, .count = count_sequences,
                       .padded_count = count_slots, .position_weight = weight_inverse},
};

// ---------------------------------------------------------------------------------------
// Normalizations: the scale of each and when its gradient must equal the product's

static double scale_global(const UnitRow *u, int W, int A, const Counts *g, const Counts *l) {
    (void)A, (void)l;
    return (double)W / (double)u->count(g);
}
static double scale_own_mean(const UnitRow *u, int W, int A, const Counts *g, const Counts *l) {
    (void)W, (void)A, (void)g;
    double C_r = (double)u->count(l);
    return C_r > 0 ? 1.0 / C_r : 0.0;
}
static double scale_extra_division(const UnitRow *u, int W, int A, const Counts *g, const Counts *l) {
    (void)l;
    double C = (double)u->count(g);
    return (double)W / (C * A);
}
static double scale_padded(const UnitRow *u, int W, int A, const Counts *g, const Counts *l) {
    (void)A, (void)l;
    return (double)W / (double)u->padded_count(g);
}

// The other unit's product equals this one's when every sequence has as many labels.
static int same_labels_per_sequence(const UnitRow *u, const WindowFacts *f) {
    (void)u;
    return f->ns_min == f->ns_max;
}
static int same_rank_counts(const UnitRow *u, const WindowFacts *f) {
    for (int r = 1; r < f->W; r++)
        if (u->count(&f->rank[r]) != u->count(&f->rank[0])) return 0;
    return 1;
}
static int one_microbatch(const UnitRow *u, const WindowFacts *f) {
    (void)u;
    return f->A == 1;
}
static int no_padding(const UnitRow *u, const WindowFacts *f) { return u->padded_count(&f->global) == u->count(&f->global); }

const char *const normalization_names[NORM_COUNT] = {
    [NORM_GLOBAL_TOKEN] = "global-token",
    [NORM_GLOBAL_SEQUENCE] = "global-sequence",
    [NORM_MEAN_OF_MEANS] = "mean-of-means",
    [NORM_EXTRA_ACCUM_DIVISION] = "extra-accumulation-division",
    [NORM_PADDING_IN_DENOMINATOR] = "padding-in-denominator",
};

const ObjectiveRow objectives[NORM_COUNT] = {
    [NORM_GLOBAL_TOKEN] = {.short_name = "token", .formula = "W*S_r/N", .unit = UNIT_TOKEN,
                           .scale = scale_global, .coincides = same_labels_per_sequence},
    [NORM_GLOBAL_SEQUENCE] = {.short_name = "seq", .formula = "W*Q_r/M", .unit = UNIT_SEQUENCE,
                              .scale = scale_global, .coincides = same_labels_per_sequence},
    [NORM_MEAN_OF_MEANS] = {.short_name = "mom", .formula = "L_r/C_r", .unit = UNIT_CONFIGURED,
                            .scale = scale_own_mean, .coincides = same_rank_counts},
    [NORM_EXTRA_ACCUM_DIVISION] = {.short_name = "/A", .formula = "W*L_r/(C*A)", .unit = UNIT_CONFIGURED,
                                   .scale = scale_extra_division, .coincides = one_microbatch},
    [NORM_PADDING_IN_DENOMINATOR] = {.short_name = "pad", .formula = "W*L_r/C_padded", .unit = UNIT_CONFIGURED,
                                     .scale = scale_padded, .coincides = no_padding},
};

LossUnit objective_unit(Normalization mode, LossUnit unit) {
    ASSERT((int)mode >= 0 && mode < NORM_COUNT && (int)unit >= 0 && unit < UNIT_COUNT);
    return objectives[mode].unit == UNIT_CONFIGURED ? unit : objectives[mode].unit;
}

double objective_scale(Normalization mode, LossUnit unit, int W, int A, const Counts *global, const Counts *local) {
    return objectives[mode].scale(&loss_units[objective_unit(mode, unit)], W, A, global, local);
}

int objective_coincides(Normalization mode, LossUnit unit, const WindowFacts *f) {
    if (mode == loss_units[unit].product) return 1;
    return objectives[mode].coincides(&loss_units[objective_unit(mode, unit)], f);
}

double objective_ddp_average(Normalization mode, LossUnit unit, int W, int A, const Counts *rank, const double *x) {
    Counts g = {0, 0, 0, 0};
    for (int r = 0; r < W; r++)
        g.tokens += rank[r].tokens, g.sequences += rank[r].sequences, g.padded += rank[r].padded, g.slots += rank[r].slots;
    double sum = 0;
    for (int r = 0; r < W; r++) sum += objective_scale(mode, unit, W, A, &g, &rank[r]) * x[r] / W;
    return sum;
}

// ---------------------------------------------------------------------------------------
// The count all-reduce buffer: [tokens (W) | sequences (W) | padded | slots | stop]

void count_exchange_init(CountExchange *x, int W) {
    x->W = W;
    x->n = 2 * (size_t)W + 3;
    x->data = xcalloc(x->n, sizeof *x->data);
    x->tokens = x->data;
    x->sequences = x->tokens + W;
    x->padded = x->sequences + W;
    x->slots = x->padded + 1;
    x->stop = x->slots + 1;
}

void count_exchange_free(CountExchange *x) {
    free(x->data);
    memset(x, 0, sizeof *x);
}

void count_exchange_fill(CountExchange *x, int rank, const Counts *local, int stop) {
    memset(x->data, 0, x->n * sizeof *x->data);
    x->tokens[rank] = local->tokens;
    x->sequences[rank] = local->sequences;
    *x->padded = local->padded;
    *x->slots = local->slots;
    *x->stop = stop ? 1 : 0;
}

Counts count_exchange_global(const CountExchange *x) {
    Counts g = {0, 0, *x->padded, *x->slots};
    for (int r = 0; r < x->W; r++) g.tokens += x->tokens[r], g.sequences += x->sequences[r];
    return g;
}

Counts count_exchange_rank(const CountExchange *x, int r) {
    Counts c = {x->tokens[r], x->sequences[r], 0, 0};
    return c;
}
