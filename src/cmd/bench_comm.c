// bench_comm.c — `bench-comm`: an nccl-tests-style sweep of the all-reduce the
// training uses, through the comm backend in use (mpi here; nccl with GPUs) and the same
// CommOps calls as the trainer: the int64 count sum (2W + 3 values, as in trainer.c), the
// gradient (P + 1 floats of this config: the sum where the backend offers it, else its
// average), the same gradient in the two buckets of train.overlap: output-layer where the
// backend offers them (the output layer's tail started first, then the head, then the wait
// for both; no backward to hide the tail behind here, so this is the bucketing's cost),
// for a model with blocks (the GPT) the same gradient in train.overlap: blocks' buckets (the
// tail, block NL − 1 .. 0, the rest, the wait), and float sizes x4 from 64 B up to --max-bytes (default 64 MiB).
//
// Each size is first verified with exact inputs (rank r holds small integers, so every sum
// is exact in float32 and int64) and the wrong values are summed over ranks (nccl-tests'
// discipline): any wrong value ends the command with exit 1. Then it is timed: `iters`
// in-place calls after one warm-up, the slowest rank's mean; algbw = bytes / time, busbw =
// algbw * 2(W-1)/W (the all-reduce's bus factor).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/budget.h"
#include "job/cuda_api.h"
#include "model/model.h"

typedef struct {
    double max_bytes;  // --max-bytes N (0: 64 MiB)
} BenchCommOptions;

// The sweep's largest float size up to max_bytes: 64 B x4 (as bench_comm_run lays out the rows).
static uint64_t sweep_largest(uint64_t max_bytes) {
    uint64_t bytes = 64;
    while (bytes * 4 <= max_bytes) bytes *= 4;
    return bytes;
}

// The host memory of a sweep whose largest all-reduce is `largest` bytes goes through the
// budget (exit 2, one line naming the option and the budget): its buffer and MPI's scratch
// for an all-reduce of that size (Open MPI's in-place ring allocates segments of up to as
// much: a 256 MiB sweep at W = 2 took 343 MB per rank beyond the start here, the buffer's
// 268 and MPI's 75).
static void bench_comm_budget(uint64_t largest, const char *option) {
    char what[256], size[32], err[700];
    format_bytes(largest, size, sizeof size);
    snprintf(what, sizeof what, "bench-comm %s: its largest all-reduce (%s) and MPI's scratch for it", option, size);
    if (budget_check_bytes(what, size_mul(largest, 2), "give a smaller --max-bytes", err, sizeof err))
        die(EXIT_BAD_INPUT, "%s", err);
}

// The sweep's --max-bytes (the default 64 MiB when not given), and the option as the
// messages name it.
static uint64_t sweep_max_bytes(const App *app, char *option, size_t len) {
    double given = ((const BenchCommOptions *)app->opts)->max_bytes;  // [64, 1e12] or 0 (options table)
    uint64_t max_bytes = given ? (uint64_t)given : (uint64_t)64 << 20;
    if (given) snprintf(option, len, "--max-bytes %llu", (unsigned long long)max_bytes);
    else snprintf(option, len, "(--max-bytes default %llu)", (unsigned long long)max_bytes);
    return max_bytes;
}

// The widest row of the sweep in bytes, at W ranks: the count's 2W + 3 int64s, the
// gradient's P + 1 floats (its buckets too) or the largest float size.
static uint64_t sweep_widest(const App *app, int W, uint64_t max_bytes) {
    ModelShape m;
    model_shape(&m, &app->cfg);
    uint64_t widest = sweep_largest(max_bytes), grad = size_mul((uint64_t)m.total + 1, sizeof(float));
    uint64_t count = size_mul((uint64_t)(2 * W + 3), sizeof(int64_t));
    if (grad > widest) widest = grad;
    return count > widest ? count : widest;
}

// The whole sweep through the budget, the run and --check alike (Command.check_options),
// with or without --max-bytes, before any rank allocates it.
static void bench_comm_check(const App *app) {
    char option[64];
    uint64_t max_bytes = sweep_max_bytes(app, option, sizeof option);
    bench_comm_budget(sweep_widest(app, app->cfg.train.world_size, max_bytes), option);
}

// Rank r's exact input at index i, and the sum over W ranks.
static int64_t input_at(size_t i, int r) { return (int64_t)((i + (size_t)r) % 7) + 1; }
static int64_t sum_at(size_t i, int W) {
    int64_t s = 0;
    for (int r = 0; r < W; r++) s += input_at(i, r);
    return s;
}

typedef struct {
    const char *what;  // "count", "gradient", "buckets", "blocks" or ""
    int is_i64;
    size_t n;          // elements
    size_t tail;       // "buckets", "blocks": the floats of the tail bucket [n - tail, n), started first
    const ModelShape *blocks;  // "blocks": the shape whose block buckets follow the tail (NULL: none)
} Row;

// Negative control for the test: DDPTOK_TEST_BENCH_CORRUPT=R makes rank R's input wrong in
// one element; every rank's check must then count it.
static void corrupt_if_asked(const Comm *comm, void *buf, int is_i64) {
    const char *r = getenv("DDPTOK_TEST_BENCH_CORRUPT");
    if (!r || atoi(r) != comm->rank) return;
    if (is_i64) ((int64_t *)buf)[0] += 1;
    else ((float *)buf)[0] += 1.0f;
}

// One all-reduce of `host` (n elements) through the backend: in place on the host, or
// through a device copy when the backend reduces GPU memory.
static void allreduce(Comm *comm, const Row *row, void *host, void **dev) {
    const CommOps *o = comm->ops;
    if (row->is_i64) {
        o->allreduce_sum_i64(comm, host, (int)row->n);
        return;
    }
    int sum = o->allreduce_sum_f32 && !o->device_buffers;  // what trainer.c picks
    (void)dev;
    if (row->blocks) {  // trainer.c with train.overlap: blocks
        const ModelShape *m = row->blocks;
        GradSegment seg[MODEL_MAX_TENSORS];
        o->sum_f32_start(comm, (float *)host + (row->n - row->tail), row->tail);
        for (int l = model_blocks(m) - 1; l >= 0; l--) {
            int n = model_block_segments(m, l, seg);
            for (int i = 0; i < n; i++) o->sum_f32_start(comm, (float *)host + seg[i].offset, seg[i].count);
            o->sum_f32_progress(comm);
        }
        int n = model_rest_segments(m, seg);
        for (int i = 0; i < n; i++) o->allreduce_sum_f32(comm, (float *)host + seg[i].offset, seg[i].count);
        o->sum_f32_finish(comm);
        return;
    }
    if (row->tail) {  // trainer.c with train.overlap: output-layer
        o->sum_f32_start(comm, (float *)host + (row->n - row->tail), row->tail);
        o->allreduce_sum_f32(comm, host, row->n - row->tail);
        o->sum_f32_finish(comm);
        return;
    }
#ifdef DDPTOK_CUDA
    if (o->device_buffers) {
        o->allreduce_avg_f32(comm, *dev, row->n);
        return;
    }
#endif
    (sum ? o->allreduce_sum_f32 : o->allreduce_avg_f32)(comm, host, row->n);
}

// Wrong values in the result of one verified call (this rank).
static int64_t check_row(Comm *comm, const Row *row, void *host) {
    int W = comm->world, avg = !row->is_i64 && !(comm->ops->allreduce_sum_f32 && !comm->ops->device_buffers);
    size_t elem = row->is_i64 ? sizeof(int64_t) : sizeof(float);
    for (size_t i = 0; i < row->n; i++) {
        // avg backends get W * input, so the average is the exact sum of the inputs
        int64_t v = input_at(i, comm->rank) * (avg ? W : 1);
        if (row->is_i64) ((int64_t *)host)[i] = v;
        else ((float *)host)[i] = (float)v;
    }
    corrupt_if_asked(comm, host, row->is_i64);
    void *dev = NULL;
#ifdef DDPTOK_CUDA
    if (!row->is_i64 && comm->ops->device_buffers) dev = cuda_module()->upload(host, row->n * elem);
#endif
    allreduce(comm, row, host, &dev);
#ifdef DDPTOK_CUDA
    if (dev) cuda_module()->download_free(dev, host, row->n * elem);
#endif
    (void)elem;
    int64_t wrong = 0;
    for (size_t i = 0; i < row->n; i++) {
        int64_t want = sum_at(i, W);
        wrong += row->is_i64 ? ((int64_t *)host)[i] != want : ((float *)host)[i] != (float)want;
    }
    return wrong;
}

// Mean seconds per call over `iters` calls after one warm-up, slowest rank.
static double time_row(Comm *comm, const Row *row, void *host, int iters) {
    void *dev = NULL;
#ifdef DDPTOK_CUDA
    if (!row->is_i64 && comm->ops->device_buffers) dev = cuda_module()->upload(host, row->n * sizeof(float));
#endif
    allreduce(comm, row, host, &dev);
    comm_barrier(comm);
    double t0 = now_seconds();
    for (int k = 0; k < iters; k++) allreduce(comm, row, host, &dev);
    double mine = (now_seconds() - t0) / iters, slowest = mine;
#ifdef DDPTOK_CUDA
    if (dev) cuda_module()->download_free(dev, host, row->n * sizeof(float));  // also waits for the device
#endif
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm->mpi);
    return slowest;
}

static size_t row_bytes(const Row *row) { return row->n * (row->is_i64 ? sizeof(int64_t) : sizeof(float)); }
static int by_bytes(const void *a, const void *b) {
    const Row *r = a, *t = b;
    size_t x = row_bytes(r), y = row_bytes(t), p = r->tail + (r->blocks != NULL), q = t->tail + (t->blocks != NULL);
    return x != y ? (x < y ? -1 : 1) : (p > q) - (p < q);  // the buckets after the gradient, then the blocks
}

static int bench_comm_run(App *app) {
    Comm *comm = &app->comm;
    int W = comm->world;
    ModelShape m;
    model_shape(&m, &app->cfg);
    char option[64];
    size_t max_bytes = (size_t)sweep_max_bytes(app, option, sizeof option);
    Row rows[64];
    int n_rows = 0;
    rows[n_rows++] = (Row){.what = "count", .is_i64 = 1, .n = (size_t)(2 * W + 3)};
    rows[n_rows++] = (Row){.what = "gradient", .n = m.total + 1};
    if (comm->ops->sum_f32_start && !comm->ops->device_buffers && W > 1)
        rows[n_rows++] = (Row){.what = "buckets", .n = m.total + 1, .tail = m.total + 1 - m.tail};
    if (comm->ops->sum_f32_start && !comm->ops->device_buffers && W > 1 && model_blocks(&m) && m.tail < m.total)
        rows[n_rows++] = (Row){.what = "blocks", .n = m.total + 1, .tail = m.total + 1 - m.tail, .blocks = &m};
    for (size_t bytes = 64; bytes <= max_bytes && n_rows < 64; bytes *= 4) rows[n_rows++] = (Row){.what = "", .n = bytes / sizeof(float)};
    qsort(rows, (size_t)n_rows, sizeof *rows, by_bytes);
    size_t largest = (size_t)sweep_widest(app, W, max_bytes);  // what check_options budgeted
    for (int i = 0; i < n_rows; i++) ASSERT(row_bytes(&rows[i]) <= largest);
    bench_comm_budget(largest, option);
    void *host = xmalloc(largest);

    say("bench-comm: all-reduce through the %s backend (the trainer's calls), W = %d, %s compute\n", comm->ops->name, W,
        app->compute->name);
    say("  gradient: P + 1 = %zu floats of %s; wrong = values off the exact sum, over all ranks\n", m.total + 1,
        text_safe(app->config_path));
    say("  %-9s %12s %10s %6s %6s %12s %12s %12s %6s\n", "", "size(B)", "count", "type", "redop", "time(us)", "algbw(GB/s)",
        "busbw(GB/s)", "wrong");
    int64_t wrong_total = 0;
    for (int i = 0; i < n_rows; i++) {
        const Row *row = &rows[i];
        size_t bytes = row_bytes(row);
        int64_t wrong = check_row(comm, row, host);
        int64_t all = wrong;  // summed over ranks on the control plane
        MPI_Allreduce(&wrong, &all, 1, MPI_INT64_T, MPI_SUM, comm->mpi);
        wrong_total += all;
        int iters = bytes <= ((size_t)1 << 20) ? 50 : bytes <= ((size_t)16 << 20) ? 10 : 4;
        double t = time_row(comm, row, host, iters);
        double algbw = t > 0 ? (double)bytes / t / 1e9 : 0, busbw = algbw * 2.0 * (W - 1) / W;
        const char *redop = row->is_i64 || (comm->ops->allreduce_sum_f32 && !comm->ops->device_buffers) ? "sum" : "avg";
        say("  %-9s %12zu %10zu %6s %6s %12.2f %12.3f %12.3f %6lld\n", row->what, bytes, row->n, row->is_i64 ? "int64" : "float",
            redop, 1e6 * t, algbw, busbw, (long long)all);
    }
    free(host);
    say("bench-comm: %s (%lld wrong value(s) over %d sizes)\n", wrong_total ? "FAILED" : "ok", (long long)wrong_total, n_rows);
    return wrong_total ? EXIT_CHECK_FAILED : 0;
}

const Command cmd_bench_comm = {
    .name = "bench-comm",
    .run = bench_comm_run,
    .distributed = 1,
    .summary = "nccl-tests-style all-reduce sweep of the comm backend: count, gradient, 64 B .. 64 MiB; time, algbw, busbw, wrong",
    .options = (const CommandOption[]){
        OPTION_DOUBLE("--max-bytes", BenchCommOptions, max_bytes, "N", 64, 1e12, "a number of bytes",
                      "the largest float size of the sweep (default 64 MiB)"),
        OPTION_END,
    },
    .opts_size = sizeof(BenchCommOptions),
    .check_options = bench_comm_check,
};
