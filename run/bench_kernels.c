// bench_kernels.c — the two ceilings run/bench.sh compares ddptok against (not a test):
//
//   bench_kernels sgemm T H kD V [REPS]
//       the six cblas_sgemm calls of one microbatch of T supervised positions, with the
//       shapes, transposes and betas src/mlp_cpu.c issues (forward: E·w1ᵀ, Hd·w2ᵀ;
//       backward: dYᵀ·Hd, dY·w2, dZᵀ·E, dZ·w1); prints one JSON line: the BLAS kernel,
//       the FLOPs per position and the GFLOP/s of the best round (and of the median).
//   bench_kernels factored T A H D k V [REPS]
//       the sgemm calls of one window of A microbatches of T positions with
//       train.first_layer: factored: per window the k tables P_j = emb·w1_jᵀ and, in
//       finish_backward, the k pairs G_jᵀ·emb, G_j·w1_j; per microbatch the output layer's
//       three (Hd·w2ᵀ, dYᵀ·Hd, dY·w2). The same JSON line, FLOPs per position = the
//       window's over A·T. The gather Σ_j P_j[ctx] and the scatter into G are not sgemm.
//   mpirun -np W bench_kernels allreduce N [REPS]
//       an in-place float sum of N floats: a blocking MPI_Allreduce, ddptok's gradient
//       all-reduce (comm_mpi: deadline on a non-blocking barrier, then MPI_Allreduce) and,
//       for reference, the former path (MPI_Iallreduce + MPI_Test spin + a division pass);
//       rank 0 prints one JSON line of medians in microseconds.
//   mpirun -np W bench_kernels overlap T H kD V P1 [REPS]
//       train.overlap in isolation, every rank with the same work: the backward that follows
//       the output layer's (the dY·w2, dZᵀ·E and dZ·w1 sgemm calls of T positions) and the
//       gradient sum of P1 floats, (a) after that work in one all-reduce (train.overlap:
//       none), (b) in two buckets, the tail of V·H + V + 1 floats started before the work
//       (output-layer), (c) as (b) with an MPI_Test after each sgemm (progress for Open
//       MPI's non-blocking collectives, which advance only inside MPI calls); and the work
//       alone. Rank 0 prints one JSON line of medians in microseconds.
//   bench_kernels step CONFIG LENS [REPS [LOOP_SECONDS]] [KEY=VALUE...]
//       one rank's training step of CONFIG's model (any model.kind; run/bench_gpt.sh runs it
//       for the GPT) on one microbatch of sequences of the lengths LENS (comma-separated, at
//       most train.batch_size_per_rank; random ids, the config's label rule), through the
//       backend's own ComputeOps: the median of REPS (default 20) rounds of the forward with
//       its loss (evaluate: no dropout), forward_backward (the config's dropout) and the
//       optimizer's step; then every cblas_sgemm call of one forward_backward, timed where
//       it runs (this binary links with -Wl,--wrap=cblas_sgemm: __wrap_cblas_sgemm below)
//       and keyed by its call site (offset in this binary: addr2line names the function and
//       line) and shape, and the same call alone (best of REPS on hot operands: the sgemm
//       ceiling at that shape); the bytes the backend instance allocates (mallinfo2 around
//       create) and touches (VmRSS), and the budget's terms (workload_budget, and the model
//       row's activation terms at the training instance's rows). One JSON object.
//       LOOP_SECONDS > 0: afterwards forward_backward alone for that long (for perf record).
#include <cblas.h>
#include <dlfcn.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/config.h"
#include "data/batch.h"
#include "job/comm.h"
#include "method/optimizer.h"
#include "model/gpt.h"
#include "model/mlp.h"
#include "model/model.h"
#include "model/workload.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static float *filled(size_t n, float scale) {
    float *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) p[i] = scale * (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f * scale;
    return p;
}

static int bench_sgemm(int T, int H, int kD, int V, int reps) {
    float *E = filled((size_t)T * kD, 1), *w1 = filled((size_t)H * kD, 0.1f), *Hh = filled((size_t)T * H, 1),
          *w2 = filled((size_t)V * H, 0.1f), *Y = filled((size_t)T * V, 0.01f), *gw2 = filled((size_t)V * H, 0),
          *dH = filled((size_t)T * H, 1), *gw1 = filled((size_t)H * kD, 0), *dE = filled((size_t)T * kD, 0);
    double *sec = xmalloc((size_t)reps * sizeof *sec);
    for (int r = -2; r < reps; r++) {  // two warm-up rounds
        double t0 = now_seconds();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, H, kD, 1.0f, E, kD, w1, kD, 1.0f, Hh, H);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, V, H, 1.0f, Hh, H, w2, H, 1.0f, Y, V);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, T, 1.0f, Y, V, Hh, H, 1.0f, gw2, H);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, H, V, 1.0f, Y, V, w2, H, 0.0f, dH, H);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, kD, T, 1.0f, dH, H, E, kD, 1.0f, gw1, kD);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, kD, H, 1.0f, dH, H, w1, kD, 0.0f, dE, kD);
        if (r >= 0) sec[r] = now_seconds() - t0;
    }
    // The ceiling is the best round (other jobs only ever slow a round down); the median too.
    double flops = 6.0 * ((double)H * kD + (double)V * H), med = median(sec, reps);  // sec is sorted now
    printf("{\"kernel\": \"%s\", \"T\": %d, \"flops_per_position\": %.0f, \"gflops\": %.3f, \"gflops_median\": %.3f}\n",
           openblas_get_corename(), T, flops, flops * T / sec[0] / 1e9, flops * T / med / 1e9);
    free(E), free(w1), free(Hh), free(w2), free(Y), free(gw2), free(dH), free(gw1), free(dE), free(sec);
    return 0;
}

static int bench_factored(int T, int A, int H, int D, int k, int V, int reps) {
    int kD = k * D;
    float *emb = filled((size_t)V * D, 1), *w1 = filled((size_t)H * kD, 0.1f), *P = filled((size_t)k * V * H, 0),
          *G = filled((size_t)k * V * H, 1), *gemb = filled((size_t)V * D, 0), *gw1 = filled((size_t)H * kD, 0),
          *Hd = filled((size_t)T * H, 1), *w2 = filled((size_t)V * H, 0.1f), *Y = filled((size_t)T * V, 0.01f),
          *gw2 = filled((size_t)V * H, 0), *dH = filled((size_t)T * H, 1);
    double *sec = xmalloc((size_t)reps * sizeof *sec);
    size_t VH = (size_t)V * H;
    for (int r = -2; r < reps; r++) {  // two warm-up rounds
        double t0 = now_seconds();
        for (int j = 0; j < k; j++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, V, H, D, 1.0f, emb, D, w1 + (size_t)j * D, kD, 0.0f, P + j * VH, H);
        for (int a = 0; a < A; a++) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, V, H, 1.0f, Hd, H, w2, H, 1.0f, Y, V);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, H, T, 1.0f, Y, V, Hd, H, 1.0f, gw2, H);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, H, V, 1.0f, Y, V, w2, H, 0.0f, dH, H);
        }
        for (int j = 0; j < k; j++) {
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, D, V, 1.0f, G + j * VH, H, emb, D, 1.0f, gw1 + (size_t)j * D, kD);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, V, D, H, 1.0f, G + j * VH, H, w1 + (size_t)j * D, kD, 1.0f, gemb, D);
        }
        if (r >= 0) sec[r] = now_seconds() - t0;
    }
    double window = 6.0 * (double)A * T * V * H + 6.0 * (double)k * V * D * H, med = median(sec, reps);
    printf("{\"kernel\": \"%s\", \"T\": %d, \"flops_per_position\": %.0f, \"gflops\": %.3f, \"gflops_median\": %.3f}\n",
           openblas_get_corename(), T, window / ((double)A * T), window / sec[0] / 1e9, window / med / 1e9);
    free(emb), free(w1), free(P), free(G), free(gemb), free(gw1), free(Hd), free(w2), free(Y), free(gw2), free(dH), free(sec);
    return 0;
}

// The gradient all-reduce before this change, kept here as the baseline it is measured
// against: non-blocking all-reduce, MPI_Test in a tight loop, then a division pass.
static void former_allreduce_avg(Comm *c, float *buf, int n) {
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, c->mpi, &req);
    for (int done = 0; !done;) MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) buf[i] /= (float)c->world;
}

static int bench_allreduce(int n, int reps) {
    Comm c;
    comm_setup(&c, 300);
    float *buf = filled((size_t)n, 1e-3f);
    double *sec[3];
    const char *names[3] = {"mpi_allreduce_us", "ddptok_us", "former_iallreduce_spin_divide_us"};
    for (int k = 0; k < 3; k++) sec[k] = xmalloc((size_t)reps * sizeof *sec[k]);
    for (int r = -5; r < reps; r++)
        for (int k = 0; k < 3; k++) {
            MPI_Barrier(c.mpi);
            double t0 = now_seconds();
            if (k == 0) MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, MPI_SUM, c.mpi);
            if (k == 1) comm_mpi.allreduce_sum_f32(&c, buf, (size_t)n);
            if (k == 2) former_allreduce_avg(&c, buf, n);
            if (r >= 0) sec[k][r] = now_seconds() - t0;
        }
    if (c.rank == 0) {
        printf("{\"floats\": %d, \"ranks\": %d", n, c.world);
        for (int k = 0; k < 3; k++) printf(", \"%s\": %.1f", names[k], 1e6 * median(sec[k], reps));
        printf("}\n");
    }
    for (int k = 0; k < 3; k++) free(sec[k]);
    free(buf);
    MPI_Comm_free(&c.mpi);
    return 0;
}

static int bench_overlap(int T, int H, int kD, int V, size_t P1, int reps) {
    Comm c;
    comm_setup(&c, 300);
    size_t tail = (size_t)V * H + (size_t)V + 1, head = P1 - tail;
    ASSERT(P1 > tail);
    float *grad = filled(P1, 1e-3f), *Y = filled((size_t)T * V, 0.01f), *w2 = filled((size_t)V * H, 0.1f),
          *dH = filled((size_t)T * H, 1), *E = filled((size_t)T * kD, 1), *w1 = filled((size_t)H * kD, 0.1f),
          *gw1 = filled((size_t)H * kD, 0), *dE = filled((size_t)T * kD, 0);
    enum { WORK, SERIAL, OVERLAP, PROGRESS, N_WAYS };
    const char *names[N_WAYS] = {"work_us", "none_us", "output_layer_us", "output_layer_test_us"};
    double *sec[N_WAYS];
    for (int k = 0; k < N_WAYS; k++) sec[k] = xmalloc((size_t)reps * sizeof *sec[k]);
    for (int r = -5; r < reps; r++)
        for (int k = 0; k < N_WAYS; k++) {
            MPI_Barrier(c.mpi);
            double t0 = now_seconds();
            if (k == OVERLAP || k == PROGRESS) comm_mpi.sum_f32_start(&c, grad + head, tail);
            for (int g = 0; g < 3; g++) {
                if (g == 0) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, H, V, 1.0f, Y, V, w2, H, 0.0f, dH, H);
                if (g == 1) cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, kD, T, 1.0f, dH, H, E, kD, 1.0f, gw1, kD);
                if (g == 2) cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, kD, H, 1.0f, dH, H, w1, kD, 0.0f, dE, kD);
                int done;
                if (k == PROGRESS) MPI_Testall(c.buckets, c.bucket, &done, MPI_STATUSES_IGNORE);
            }
            if (k == SERIAL) comm_mpi.allreduce_sum_f32(&c, grad, P1);
            if (k == OVERLAP || k == PROGRESS) {
                comm_mpi.allreduce_sum_f32(&c, grad, head);
                comm_mpi.sum_f32_finish(&c);
            }
            if (r >= 0) sec[k][r] = now_seconds() - t0;
        }
    if (c.rank == 0) {
        printf("{\"T\": %d, \"floats\": %zu, \"tail_floats\": %zu, \"ranks\": %d", T, P1, tail, c.world);
        for (int k = 0; k < N_WAYS; k++) printf(", \"%s\": %.1f", names[k], 1e6 * median(sec[k], reps));
        printf("}\n");
    }
    for (int k = 0; k < N_WAYS; k++) free(sec[k]);
    free(grad), free(Y), free(w2), free(dH), free(E), free(w1), free(gw1), free(dE);
    MPI_Comm_free(&c.mpi);
    return 0;
}

// ---------------------------------------------------------------------------------------
// step: one rank's training step of a model, and where its sgemm time goes

// Every cblas_sgemm call of the binary comes here (-Wl,--wrap=cblas_sgemm). While
// gemm_prof.on, each call is timed and added to its site: (return address, transposes,
// M, N, K, leading dimensions, beta == 0).
void __real_cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                        OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                        OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha, OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda,
                        OPENBLAS_CONST float *B, OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *C,
                        OPENBLAS_CONST blasint ldc);
void __wrap_cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                        OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                        OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha, OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda,
                        OPENBLAS_CONST float *B, OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *C,
                        OPENBLAS_CONST blasint ldc);

typedef struct {
    void *site;                        // the caller's return address
    int ta, tb, M, N, K, lda, ldb, ldc, beta0;
    long calls;
    double seconds;                    // in the step, over every profiled call
    double round, best;                // in the step: this round's, and the least of a round (s)
    double alone;                      // one call alone: best of the rounds (s)
} GemmSite;

static struct {
    int on;
    GemmSite *site;
    int n, cap;
} gemm_prof;

void __wrap_cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER order, OPENBLAS_CONST enum CBLAS_TRANSPOSE ta,
                        OPENBLAS_CONST enum CBLAS_TRANSPOSE tb, OPENBLAS_CONST blasint M, OPENBLAS_CONST blasint N,
                        OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha, OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda,
                        OPENBLAS_CONST float *B, OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *C,
                        OPENBLAS_CONST blasint ldc) {
    if (!gemm_prof.on) {
        __real_cblas_sgemm(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    double t0 = now_seconds();
    __real_cblas_sgemm(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    double dt = now_seconds() - t0;
    GemmSite key = {__builtin_return_address(0), ta == CblasTrans, tb == CblasTrans, M, N, K, lda, ldb, ldc, beta == 0.0f, 0, 0, 0, 1e30, 0};
    int i = 0;
    for (; i < gemm_prof.n; i++) {
        GemmSite *s = &gemm_prof.site[i];
        if (s->site == key.site && s->ta == key.ta && s->tb == key.tb && s->M == M && s->N == N && s->K == K && s->lda == lda &&
            s->ldb == ldb && s->ldc == ldc && s->beta0 == key.beta0)
            break;
    }
    if (i == gemm_prof.n) {
        if (gemm_prof.n == gemm_prof.cap) {
            gemm_prof.cap = gemm_prof.cap ? 2 * gemm_prof.cap : 64;
            gemm_prof.site = realloc(gemm_prof.site, (size_t)gemm_prof.cap * sizeof *gemm_prof.site);
            ASSERT(gemm_prof.site);
        }
        gemm_prof.site[gemm_prof.n++] = key;
    }
    gemm_prof.site[i].calls++;
    gemm_prof.site[i].seconds += dt;
    gemm_prof.site[i].round += dt;
}

// The call of site s alone on operands of its shape: the best of `reps` rounds (s).
static double gemm_alone(const GemmSite *s, int reps) {
    size_t a = (size_t)(s->ta ? s->K : s->M) * s->lda, b = (size_t)(s->tb ? s->N : s->K) * s->ldb, c = (size_t)s->M * s->ldc;
    float *A = filled(a ? a : 1, 0.1f), *B = filled(b ? b : 1, 0.1f), *C = filled(c ? c : 1, 0.1f);
    double best = 1e30;
    for (int r = -2; r < reps; r++) {
        double t0 = now_seconds();
        __real_cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans, s->tb ? CblasTrans : CblasNoTrans, s->M, s->N, s->K, 1.0f, A,
                           s->lda, B, s->ldb, s->beta0 ? 0.0f : 1.0f, C, s->ldc);
        double dt = now_seconds() - t0;
        if (r >= 0 && dt < best) best = dt;
    }
    free(A), free(B), free(C);
    return best;
}

static size_t heap_bytes(void) {
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static size_t rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kb = strtoull(line + 6, NULL, 10);
    if (f) fclose(f);
    return kb * 1024;
}

static void print_budget(const char *name, const Budget *b) {
    printf(", \"%s\": [", name);
    for (int i = 0; i < b->n; i++) {
        printf("%s{\"what\": \"", i ? ", " : "");
        for (const char *c = b->term[i].what; *c; c++) printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
        printf("\", \"bytes\": %llu}", (unsigned long long)b->term[i].bytes);
    }
    printf("]");
}

static int bench_step(const char *path, const char *lens_text, int reps, double loop_seconds, char **sets, int n_sets) {
    Config cfg;
    char err[1024];
    if (config_load(&cfg, path, sets, n_sets, err, sizeof err)) {
        fprintf(stderr, "bench_kernels step: %s\n", err);
        return 2;
    }
    ModelShape m;
    model_shape(&m, &cfg);
    const ComputeOps *ops = model_row(&m)->cpu;
    // The microbatch: sequences of the given lengths (random ids 1..V-1), laid out as the trainer does.
    int B = cfg.train.batch_size_per_rank, n = 0, len[4096];
    for (const char *p = lens_text; *p && n < 4096; n++) {
        char *end;
        len[n] = (int)strtol(p, &end, 10);
        if (end == p || len[n] < 1 || len[n] > cfg.data.max_length) {
            fprintf(stderr, "bench_kernels step: LENS %s: lengths in [1, data.max_length = %d], comma-separated\n", lens_text,
                    cfg.data.max_length);
            return 2;
        }
        p = *end == ',' ? end + 1 : end;
    }
    if (n < 1 || n > B) {
        fprintf(stderr, "bench_kernels step: %d lengths for train.batch_size_per_rank %d\n", n, B);
        return 2;
    }
    Corpus corpus = {0};
    int64_t *offsets = xmalloc((size_t)(n + 1) * sizeof *offsets);
    offsets[0] = 0;
    for (int i = 0; i < n; i++) offsets[i + 1] = offsets[i] + len[i];
    corpus.n = n, corpus.n_tokens = offsets[n], corpus.offsets = offsets;
    corpus.tokens = xmalloc((size_t)corpus.n_tokens * sizeof *corpus.tokens);
    for (int64_t i = 0; i < corpus.n_tokens; i++) corpus.tokens[i] = 1 + (int32_t)((i * 2654435761u) % (uint32_t)(m.V - 1));
    int32_t ids[4096];
    for (int i = 0; i < n; i++) ids[i] = i;
    BatchSpec spec = model_batch_spec(&m);
    Batch b;
    batch_init(&b, &spec, B);  // the trainer's microbatch: B slots
    LabelRule rule = label_rule(&cfg);
    batch_build(&b, &corpus, ids, n, &rule, UNIT_TOKEN);
    float *theta = xmalloc(m.total * sizeof *theta);
    model_init_params(&m, cfg.seed, theta);

    size_t heap0 = heap_bytes(), rss0 = rss_bytes();
    Compute *cc = ops->create(&m, b.cap, cfg.train.first_layer);
    size_t heap1 = heap_bytes();
    ops->set_params(cc, theta);
    Optimizer *opt = optimizer_create(cfg.train.optimizer, &cfg.train.hyper, ops->optimizer, m.total);
    size_t heap2 = heap_bytes();
    float scale = b.T ? 1.0f / (float)b.T : 1.0f;
    Dropout d = {.p = cfg.model.dropout, .stream = rng_stream(cfg.seed, RNG_DROPOUT, 0)};
    ops->zero_grad(cc);
    for (int w = 0; w < 2; w++) ops->forward_backward(cc, &b, scale, &d), d.block++;  // warm-up
    optimizer_step(opt, ops->param_buffer(cc), ops->grad_buffer(cc), 1.0f);  // its states touched
    size_t rss1 = rss_bytes();

    // The rounds, interleaved: forward + loss, forward + backward, the optimizer's step.
    double *fwd = xmalloc((size_t)reps * sizeof *fwd), *fb = xmalloc((size_t)reps * sizeof *fb), *st = xmalloc((size_t)reps * sizeof *st);
    int64_t correct = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_seconds();
        ops->evaluate(cc, &b, &correct, NULL, NULL);
        double t1 = now_seconds();
        ops->zero_grad(cc);
        ops->forward_backward(cc, &b, scale, &d), d.block++;
        double t2 = now_seconds();
        optimizer_step(opt, ops->param_buffer(cc), ops->grad_buffer(cc), 1.0f);
        double t3 = now_seconds();
        fwd[r] = t1 - t0, fb[r] = t2 - t1, st[r] = t3 - t2;
    }
    // Where the sgemm time of one forward_backward goes: every call timed in place (the
    // rounds' mean per call site and shape), then the same call alone.
    int prof_rounds = reps < 5 ? reps : 5;
    double prof_t0 = now_seconds();
    gemm_prof.on = 1;
    for (int r = 0; r < prof_rounds; r++) {
        ops->zero_grad(cc), ops->forward_backward(cc, &b, scale, &d), d.block++;
        for (int i = 0; i < gemm_prof.n; i++) {  // a site first seen in a later round has no best yet: its round counts
            GemmSite *s = &gemm_prof.site[i];
            if (s->round < s->best) s->best = s->round;
            s->round = 0;
        }
    }
    gemm_prof.on = 0;
    double prof_fb = (now_seconds() - prof_t0) / prof_rounds;
    for (int i = 0; i < gemm_prof.n; i++) gemm_prof.site[i].alone = gemm_alone(&gemm_prof.site[i], reps);

    Budget work = {0}, inst = {0};
    workload_budget(&work, &cfg);
    model_row(&m)->budget(&inst, &m, (uint64_t)b.cap, "B*Lmax", "train.batch_size_per_rank x data.max_length", cfg.train.first_layer);

    printf("{\"kernel\": \"%s\", \"model\": \"%s\", \"P\": %zu, \"rows\": %d, \"supervised\": %d, \"runs\": %d, \"cap\": %d",
           openblas_get_corename(), model_row(&m)->name, m.total, b.spec.layout == BATCH_SEQUENCES ? b.n : b.T, b.T,
           b.spec.layout == BATCH_SEQUENCES ? b.runs : n, b.cap);
    printf(", \"shape\": {\"V\": %d, \"Lmax\": %d", m.V, m.max_length);
    if (m.kind == MODEL_GPT)
        printf(", \"C\": %d, \"n_layer\": %d, \"n_head\": %d}", gpt_dims(&m)->n_embd, gpt_dims(&m)->n_layer, gpt_dims(&m)->n_head);
    else
        printf(", \"k\": %d, \"D\": %d, \"H\": %d}", mlp_dims(&m)->k, mlp_dims(&m)->D, mlp_dims(&m)->H);
    printf(", \"lens\": [");
    for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", len[i]);
    printf("], \"dropout\": %g, \"optimizer\": \"%s\", \"reps\": %d", cfg.model.dropout, optimizer_names[cfg.train.optimizer], reps);
    // Medians; and the least round (the machine's other jobs only ever slow a round down).
    double fwd_med = median(fwd, reps), fb_med = median(fb, reps), st_med = median(st, reps);  // sorted now
    printf(", \"forward_loss_ms\": %.4f, \"forward_backward_ms\": %.4f, \"optimizer_ms\": %.4f, \"profiled_forward_backward_ms\": %.4f",
           1e3 * fwd_med, 1e3 * fb_med, 1e3 * st_med, 1e3 * prof_fb);
    printf(", \"forward_loss_best_ms\": %.4f, \"forward_backward_best_ms\": %.4f, \"optimizer_best_ms\": %.4f", 1e3 * fwd[0],
           1e3 * fb[0], 1e3 * st[0]);
    printf(", \"bytes\": {\"create\": %zu, \"theta_grad\": %zu, \"optimizer\": %zu, \"rss_before_create\": %zu, \"rss_after_step\": %zu}",
           heap1 - heap0, (2 * m.total + 1) * sizeof(float), heap2 - heap1, rss0, rss1);
    print_budget("budget_workload", &work);
    print_budget("budget_instance", &inst);
    Dl_info info;
    printf(", \"gemm\": [");
    for (int i = 0; i < gemm_prof.n; i++) {
        const GemmSite *s = &gemm_prof.site[i];
        uintptr_t off = dladdr(s->site, &info) && info.dli_fbase ? (uintptr_t)s->site - (uintptr_t)info.dli_fbase : (uintptr_t)s->site;
        printf("%s{\"site\": \"0x%lx\", \"ta\": %d, \"tb\": %d, \"M\": %d, \"N\": %d, \"K\": %d, \"lda\": %d, \"ldb\": %d, \"ldc\": %d, "
               "\"beta0\": %d, \"calls\": %.3f, \"ms\": %.5f, \"best_ms\": %.5f, \"alone_ms\": %.5f}",
               i ? ", " : "", (unsigned long)off, s->ta, s->tb, s->M, s->N, s->K, s->lda, s->ldb, s->ldc, s->beta0,
               (double)s->calls / prof_rounds, 1e3 * s->seconds / prof_rounds, 1e3 * s->best, 1e3 * s->alone * ((double)s->calls / prof_rounds));
    }
    double loop_start = now_seconds();  // CLOCK_MONOTONIC: perf record -k CLOCK_MONOTONIC keeps the same time
    printf("], \"loop_start\": %.6f, \"loop_seconds\": %g}\n", loop_start, loop_seconds);
    fflush(stdout);
    for (double t_end = loop_start + loop_seconds; now_seconds() < t_end;)
        ops->zero_grad(cc), ops->forward_backward(cc, &b, scale, &d), d.block++;

    free(fwd), free(fb), free(st), free(theta), free(offsets), free(corpus.tokens), free(gemm_prof.site);
    optimizer_free(opt);
    ops->destroy(cc);
    batch_free(&b);
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    openblas_set_num_threads(1);  // as ddptok runs it: one thread per rank
    int rc = 2;
    if (argc >= 6 && !strcmp(argv[1], "sgemm"))
        rc = bench_sgemm(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), argc > 6 ? atoi(argv[6]) : 50);
    else if (argc >= 8 && !strcmp(argv[1], "factored"))
        rc = bench_factored(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), atoi(argv[7]),
                            argc > 8 ? atoi(argv[8]) : 50);
    else if (argc >= 3 && !strcmp(argv[1], "allreduce"))
        rc = bench_allreduce(atoi(argv[2]), argc > 3 ? atoi(argv[3]) : 200);
    else if (argc >= 7 && !strcmp(argv[1], "overlap"))
        rc = bench_overlap(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), (size_t)atoll(argv[6]),
                           argc > 7 ? atoi(argv[7]) : 200);
    else if (argc >= 4 && !strcmp(argv[1], "step")) {
        int rest = 4, reps = 20;
        double loop = 0;
        if (argc > rest && !strchr(argv[rest], '=')) reps = atoi(argv[rest++]);
        if (argc > rest && !strchr(argv[rest], '=')) loop = atof(argv[rest++]);
        rc = bench_step(argv[2], argv[3], reps > 0 ? reps : 1, loop, argv + rest, argc - rest);
    } else
        fprintf(stderr, "usage: bench_kernels sgemm T H kD V [REPS] | factored T A H D k V [REPS] | allreduce N [REPS] | overlap T H kD V P1 [REPS]"
                        " | step CONFIG LENS [REPS [LOOP_SECONDS]] [KEY=VALUE...]\n");
    MPI_Finalize();
    return rc;
}
