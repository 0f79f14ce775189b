// objective.h — the objective of docs/spec.md §5 as tables: one row per loss unit (what counts
// as one unit, its per-position weight) and one row per normalization (its unit, the
// per-rank scale of the loss sum from the window's counts, when it must coincide with
// the product, its formula and its names). The trainer, the reference, `parity`,
// `check-loss` and the reports read these rows; adding a unit or a control is one row
// (plus its witness in tests/torch/witness.py).
//
// Also the window's counts: `Counts` (one rank's or all ranks' integers) and the count
// all-reduce buffer `CountExchange` (per-rank arrays, named totals and the stop flag).
#ifndef DDPTOK_OBJECTIVE_H
#define DDPTOK_OBJECTIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// What counts as one unit of the objective (docs/spec.md §5; docs/objective.md "Loss units").
typedef enum {
    UNIT_TOKEN = 0,     // every supervised position weighs the same: ΣS_r / N
    UNIT_SEQUENCE,      // every sequence with a label weighs the same: ΣQ_r / M
    UNIT_COUNT
} LossUnit;

// How a rank scales its loss before the gradient average (rows in objective.c).
typedef enum {
    NORM_GLOBAL_TOKEN = 0,        // W·S_r/N: the product for the token unit
    NORM_GLOBAL_SEQUENCE,         // W·Q_r/M: the product for the sequence unit
    NORM_MEAN_OF_MEANS,           // negative control: L_r/C_r, then the average
    NORM_EXTRA_ACCUM_DIVISION,    // negative control: W·L_r/(C·A)
    NORM_PADDING_IN_DENOMINATOR,  // negative control: C counts padded positions / empty slots
    NORM_COUNT
} Normalization;

// The names of the rows (train.normalization, train.loss_unit, parity.json, grads.h5).
extern const char *const normalization_names[NORM_COUNT];
extern const char *const loss_unit_names[UNIT_COUNT];

// Integer counts of a window, for one rank or all of them.
typedef struct {
    int64_t tokens;     // supervised positions (N)
    int64_t sequences;  // sequences with at least one label (M)
    int64_t padded;     // padded positions B·L, summed over microbatches
    int64_t slots;      // sequence slots A·B (including empty ones)
} Counts;

// What `parity` knows of a window beyond the gradient, to say whether a control must
// coincide with the product.
typedef struct {
    int W, A;
    Counts global;
    const Counts *rank;  // (W) tokens and sequences of each rank
    int ns_min, ns_max;  // fewest and most labels of a labelled sequence, all ranks
} WindowFacts;

// A unit's row; its name is loss_unit_names[unit].
typedef struct {
    Normalization product;     // the normalization that is the product for this unit
    int64_t (*count)(const Counts *counts);      // C: the unit's count (N or M)
    int64_t (*padded_count)(const Counts *counts);  // what padding-in-denominator counts instead
    // The weight of each of a labelled sequence's n supervised positions.
    float (*position_weight)(int n);
} UnitRow;

// Which unit a normalization measures in: its own, or (a control) the configured one.
#define UNIT_CONFIGURED ((LossUnit)-1)

// A normalization's row; its name (config, parity.json, grads.h5, the witness) is
// normalization_names[mode], next to the rows in objective.c.
typedef struct {
    const char *short_name;    // column label in the protocol's negative-control matrix
    const char *formula;       // the per-rank scale, for people (ASCII: parity.json "formula")
    LossUnit unit;             // UNIT_CONFIGURED for a control that follows train.loss_unit
    // The per-rank scale of the (weighted) loss sum; `u` the resolved unit.
    double (*scale)(const UnitRow *u, int W, int A, const Counts *global, const Counts *local);
    // Whether, with these counts, it must give the product's gradient (then "coincides"
    // is the right verdict instead of "rejected"). Not asked of the configured product.
    int (*coincides)(const UnitRow *u, const WindowFacts *f);
} ObjectiveRow;

extern const UnitRow loss_units[UNIT_COUNT];
extern const ObjectiveRow objectives[NORM_COUNT];

// The unit `mode` measures in under the configured `unit` (its per-position weighting).
LossUnit objective_unit(Normalization mode, LossUnit unit);
// The local scale of the (weighted) loss sum (docs/spec.md §5).
double objective_scale(Normalization mode, LossUnit unit, int W, int A, const Counts *global, const Counts *local);
// Whether `mode` must give the product's gradient for these facts (the product itself: 1).
int objective_coincides(Normalization mode, LossUnit unit, const WindowFacts *f);
// What the distributed path reports for per-rank quantities x_r (W) (a loss sum or a
// gradient sum): each rank scales its own by `mode`'s scale, then the DDP average.
double objective_ddp_average(Normalization mode, LossUnit unit, int W, int A, const Counts *rank, const double *x);

// ---------------------------------------------------------------------------------------
// The count all-reduce: one int64 buffer summed element-wise over the ranks before the
// first backward. Each rank writes its own slot of the per-rank arrays and its share of
// the totals; after the sum every field holds the all-rank value.
typedef struct {
    int W;
    size_t n;            // elements in `data`: 2W + 3
    int64_t *data;       // (n) the buffer the all-reduce sums; the fields below point into it
    int64_t *tokens;     // (W) N_r per rank
    int64_t *sequences;  // (W) M_r per rank
    int64_t *padded;     // total padded positions
    int64_t *slots;      // total sequence slots
    int64_t *stop;       // ranks asking to stop
} CountExchange;

void count_exchange_init(CountExchange *x, int W);
void count_exchange_free(CountExchange *x);
// Zeroes the buffer and writes this rank's counts and stop request.
void count_exchange_fill(CountExchange *x, int rank, const Counts *local, int stop);
// After the all-reduce: the global counts.
Counts count_exchange_global(const CountExchange *x);
// After the all-reduce: rank r's tokens and sequences (padded and slots 0).
Counts count_exchange_rank(const CountExchange *x, int r);

#ifdef __cplusplus
}
#endif
#endif
