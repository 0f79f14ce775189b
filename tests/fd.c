// fd.c — the finite-difference check of every model's backward (fd.h).
#include "fd.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double fd_window_grad(const ModelShape *m, FirstLayer fl, const float *theta, Batch *mb, int A, double scale, const Dropout *d, float *g) {
    const ComputeOps *cpu = model_row(m)->cpu;
    int cap = 0;
    for (int a = 0; a < A; a++) cap = mb[a].cap > cap ? mb[a].cap : cap;
    Compute *cc = cpu->create(m, cap, fl);
    cpu->set_params(cc, theta);
    cpu->zero_grad(cc);
    double S = 0;
    for (int a = 0; a < A; a++) S += cpu->forward_backward(cc, &mb[a], (float)scale, &d[a]);
    cpu->finish_backward(cc);
    cpu->get_grad(cc, g);
    cpu->destroy(cc);
    return S;
}

void fd_check(const char *label, const ModelShape *m, FirstLayer fl, const float *theta, Batch *mb, int A, int64_t N, const Dropout *d,
              FdWindowLoss loss, int *passed, int *failed) {
    float *g = malloc((m->total + 1) * sizeof *g);
    double scale = 1.0 / (double)N;
    double S = fd_window_grad(m, fl, theta, mb, A, scale, d, g);
    double *th = malloc(m->total * sizeof *th);
    for (size_t i = 0; i < m->total; i++) th[i] = theta[i];
    double L = loss(m, th, mb, A, 1.0, d);
    if (fabs(L - S) > 1e-4 * fabs(L)) (*failed)++, printf("FAIL %s forward: float loss sum %.9g, double %.9g\n", label, S, L);
    else (*passed)++, printf("ok   %s forward: float loss sum %.9g, double %.9g\n", label, S, L);
    const double h = 1e-5, atol = 1e-6, rtol = 1e-4;
    for (int q = 0; q < m->n_tensors; q++) {
        int bad = 0;
        double worst = 0, wg = 0, wf = 0;
        size_t wi = 0;
        for (size_t i = m->offset[q]; i < m->offset[q] + m->size[q]; i++) {
            double was = th[i];
            th[i] = was + h;
            double lp = loss(m, th, mb, A, scale, d);
            th[i] = was - h;
            double lm = loss(m, th, mb, A, scale, d);
            th[i] = was;
            double fd = (lp - lm) / (2 * h), err = fabs(g[i] - fd);
            if (err > atol + rtol * fabs(fd)) bad++;
            if (err > worst) worst = err, wi = i, wg = g[i], wf = fd;
        }
        if (bad) {
            (*failed)++;
            printf("FAIL %s %-9s %d of %zu components off; worst [%zu]: backward %.9g, finite difference %.9g\n", label, m->name[q], bad,
                   m->size[q], wi - m->offset[q], wg, wf);
        } else {
            (*passed)++;
            printf("ok   %s %-9s %zu components, max |backward - fd| = %.3g\n", label, m->name[q], m->size[q], worst);
        }
    }
    free(th), free(g);
}
