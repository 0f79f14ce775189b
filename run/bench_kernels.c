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
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "job/comm.h"

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
    else
        fprintf(stderr, "usage: bench_kernels sgemm T H kD V [REPS] | factored T A H D k V [REPS] | allreduce N [REPS] | overlap T H kD V P1 [REPS]\n");
    MPI_Finalize();
    return rc;
}
