// test_cuda_model.c — the CUDA backend against the CPU reference on one GPU: loss sum and
// every gradient tensor of an accumulated window (dropout on, unlabelled prefix), per-tensor
// max error against atol 1e-6 / rtol 1e-4; the GPU run repeated must be bit-identical;
// evaluation loss and hits; two steps of each optimizer (θ and its state tensors). Negative control: the GPU gradient compared with a
// CPU gradient made with other dropout masks must fail the same check.
// Usage: test_cuda_model CONFIG [KEY=VALUE...]   (needs a GPU; built only with CUDA)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/synthetic.h"
#include "data/sampler.h"
#include "job/cuda_api.h"
#include "model/mlp.h"

static int failed = 0, passed = 0;

static int compare(const char *what, const ModelShape *m, const float *g, const float *ref, int expect_pass) {
    int all_ok = 1;
    for (int p = 0; p < MLP_TENSORS; p++) {
        size_t bad = 0;
        double maxe = 0;
        for (size_t i = m->offset[p]; i < m->offset[p] + m->size[p]; i++) {
            double e = fabs((double)g[i] - ref[i]);
            if (!(e <= 1e-6 + 1e-4 * fabs((double)ref[i]))) bad++;
            if (e > maxe || isnan(e)) maxe = e;
        }
        if (bad) all_ok = 0;
        if (expect_pass)
            printf("  %-30s %-9s max abs err %.3e  violations %zu/%zu%s\n", what, m->name[p], maxe, bad, m->size[p],
                   bad ? "  <-- FAIL" : "");
    }
    if (all_ok == expect_pass) passed++;
    else failed++, printf("FAIL %s: expected %s\n", what, expect_pass ? "agreement" : "disagreement");
    return all_ok;
}

// Window 1 of rank 0 and rank W-1, accumulated with scale 1/N, on one backend.
static double run_window(const ComputeOps *ops, const ModelShape *m, const float *theta, Batch *mb, int n, double p,
                         const RngStream *drop, uint64_t block0, float *grad, int64_t *N) {
    int cap = 0;
    *N = 0;
    for (int i = 0; i < n; i++) cap = mb[i].cap > cap ? mb[i].cap : cap, *N += mb[i].T;
    Compute *c = ops->create(m, cap, FIRST_LAYER_DENSE);
    ops->set_params(c, theta);
    ops->zero_grad(c);
    double S = 0;
    for (int i = 0; i < n; i++) {
        Dropout d = {.p = p, .stream = *drop, .block = block0 + (uint64_t)i};
        S += ops->forward_backward(c, &mb[i], (float)(1.0 / (double)*N), &d);
    }
    ops->get_grad(c, grad);
    ops->destroy(c);
    return S;
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: test_cuda_model CONFIG [KEY=VALUE...]\n"), 2;
    if (cuda_device_count() == 0) return printf("test_cuda_model: no GPU visible\n"), 2;
    Config cfg;
    char err[512];
    if (config_load(&cfg, argv[1], argv + 2, argc - 2, err, sizeof err)) return printf("FAIL %s\n", err), 2;
    Comm fake = {0};
    cuda_select_device(&fake);
    char dev[200];
    cuda_describe_device(dev, sizeof dev);
    printf("test_cuda_model: %s on %s, dropout %g, prefix %d\n", argv[1], dev, cfg.model.dropout, cfg.data.unsupervised_prefix);
    Corpus c;
    corpus_generate(&c, &cfg);
    int A = cfg.train.accumulation, B = cfg.train.batch_size_per_rank, cap = B * cfg.data.max_length;
    const BatchSpec spec = {BATCH_CONTEXTS, cfg.model.context, cfg.data.max_length};
    int W = cfg.train.world_size, n = 2 * A;
    Batch *mb = xmalloc((size_t)n * sizeof *mb);
    int32_t *ids = xmalloc((size_t)A * B * sizeof *ids);
    for (int h = 0; h < 2; h++) {  // rank 0 and rank W-1 (short and long sequences)
        Sampler s;
        if (sampler_init(&s, &cfg, &c, h ? W - 1 : 0)) return 2;
        sampler_next(&s, ids);
        sampler_free(&s);
        for (int a = 0; a < A; a++) {
            batch_init(&mb[h * A + a], &spec, B);
            LabelRule rule = label_rule(&cfg);
            batch_build(&mb[h * A + a], &c, ids + a * B, B, &rule, cfg.train.loss_unit);
        }
    }
    ModelShape m;
    model_shape(&m, &cfg);
    float *theta = xmalloc(m.total * sizeof *theta);
    model_init_params(&m, cfg.seed, theta);
    float *gc = xmalloc((m.total + 1) * sizeof *gc), *gg = xmalloc((m.total + 1) * sizeof *gg),
          *gg2 = xmalloc((m.total + 1) * sizeof *gg2), *gx = xmalloc((m.total + 1) * sizeof *gx);
    RngStream drop = rng_stream(cfg.seed, RNG_DROPOUT, 0);
    int64_t N;
    double Sc = run_window(&compute_mlp_cpu, &m, theta, mb, n, cfg.model.dropout, &drop, 0, gc, &N);
    double Sg = run_window(&compute_mlp_cuda, &m, theta, mb, n, cfg.model.dropout, &drop, 0, gg, &N);
    double Sg2 = run_window(&compute_mlp_cuda, &m, theta, mb, n, cfg.model.dropout, &drop, 0, gg2, &N);
    double rel = fabs(Sc - Sg) / fabs(Sc);
    printf("  loss sum over %lld positions: cpu %.9f gpu %.9f (relative %.2e)\n", (long long)N, Sc, Sg, rel);
    if (rel <= 1e-6) passed++;
    else failed++, printf("FAIL loss sums differ by %.2e relative\n", rel);
    compare("gradient gpu vs cpu", &m, gg, gc, 1);
    if (memcmp(gg, gg2, (m.total + 1) * sizeof *gg) == 0 && Sg == Sg2) passed++, printf("  gpu run repeated: bit-identical\n");
    else failed++, printf("FAIL the GPU gradient differs between two identical runs\n");
    if (cfg.model.dropout > 0) {  // negative control: other masks must be caught
        run_window(&compute_mlp_cpu, &m, theta, mb, n, cfg.model.dropout, &drop, 7, gx, &N);
        compare("negative control (other masks)", &m, gg, gx, 0);
    }
    // Evaluation and one SGD step.
    Compute *cc = compute_mlp_cpu.create(&m, cap, FIRST_LAYER_DENSE), *cg = compute_mlp_cuda.create(&m, cap, FIRST_LAYER_DENSE);
    compute_mlp_cpu.set_params(cc, theta), compute_mlp_cuda.set_params(cg, theta);
    int64_t hc = 0, hg = 0;
    double ec = compute_mlp_cpu.evaluate(cc, &mb[n - 1], &hc, NULL, NULL), eg = compute_mlp_cuda.evaluate(cg, &mb[n - 1], &hg, NULL, NULL);
    if (fabs(ec - eg) <= 1e-6 * fabs(ec) && hc == hg) passed++, printf("  evaluate: loss %.6f vs %.6f, hits %lld vs %lld\n", ec, eg, (long long)hc, (long long)hg);
    else failed++, printf("FAIL evaluate: cpu %.9f/%lld gpu %.9f/%lld\n", ec, (long long)hc, eg, (long long)hg);
    compute_mlp_cpu.destroy(cc), compute_mlp_cuda.destroy(cg);
    // Two steps of each optimizer (SGD with dampening, AdamW) from the same gradients: θ and every state
    // tensor of the GPU twin against the CPU's. AdamW's ε = 1e-3 keeps its step well
    // conditioned in g (|∂Δθ/∂g| ≤ lr/ε = 10), so the backends' gradient difference (≤ 1e-6)
    // cannot flip an update as it could for a |g| near torch's ε = 1e-8. Negative control:
    // the GPU's AdamW θ against the CPU's SGD θ must disagree.
    float *tc = xmalloc(m.total * sizeof *tc), *tg = xmalloc(m.total * sizeof *tg);
    float *sgd_cpu = xmalloc(m.total * sizeof *sgd_cpu);
    OptimizerHyper h = {.lr = 0.01, .weight_decay = 0.01, .momentum = 0.9, .dampening = 0.5, .betas = {0.9, 0.999}, .eps = 1e-3};
    for (int kind = 0; kind < OPT_COUNT; kind++) {
        cc = compute_mlp_cpu.create(&m, cap, FIRST_LAYER_DENSE), cg = compute_mlp_cuda.create(&m, cap, FIRST_LAYER_DENSE);
        compute_mlp_cpu.set_params(cc, theta), compute_mlp_cuda.set_params(cg, theta);
        Optimizer *oc = optimizer_create((OptimizerKind)kind, &h, compute_mlp_cpu.optimizer, m.total);
        Optimizer *og = optimizer_create((OptimizerKind)kind, &h, compute_mlp_cuda.optimizer, m.total);
        for (int step = 0; step < 2; step++) {
            compute_mlp_cpu.zero_grad(cc), compute_mlp_cuda.zero_grad(cg);
            Dropout d = {.p = cfg.model.dropout, .stream = drop, .block = (uint64_t)step};
            compute_mlp_cpu.forward_backward(cc, &mb[step], 0.01f, &d);
            compute_mlp_cuda.forward_backward(cg, &mb[step], 0.01f, &d);
            optimizer_step(oc, compute_mlp_cpu.param_buffer(cc), compute_mlp_cpu.grad_buffer(cc), 2.0f);
            optimizer_step(og, compute_mlp_cuda.param_buffer(cg), compute_mlp_cuda.grad_buffer(cg), 2.0f);
        }
        char what[128];
        compute_mlp_cpu.get_params(cc, tc), compute_mlp_cuda.get_params(cg, tg);
        snprintf(what, sizeof what, "params after 2 %s steps", optimizer_names[kind]);
        compare(what, &m, tg, tc, 1);
        if (kind == OPT_SGD) memcpy(sgd_cpu, tc, m.total * sizeof *tc);
        else compare("negative control (gpu adamw vs cpu sgd)", &m, tg, sgd_cpu, 0);
        OptimizerSnapshot sc, sg;
        optimizer_snapshot(oc, &sc), optimizer_snapshot(og, &sg);
        for (int i = 0; i < optimizers[kind].n_states; i++) {
            snprintf(what, sizeof what, "%s %s after 2 steps", optimizer_names[kind], optimizers[kind].state_names[i]);
            compare(what, &m, sg.state[i], sc.state[i], 1);
        }
        optimizer_snapshot_free(&sc), optimizer_snapshot_free(&sg);
        optimizer_free(oc), optimizer_free(og);
        compute_mlp_cpu.destroy(cc), compute_mlp_cuda.destroy(cg);
    }
    free(tc), free(tg), free(sgd_cpu);
    printf("test_cuda_model: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
