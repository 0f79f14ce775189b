// test_cuda_model.c — a model's CUDA twin against its CPU reference on one GPU, for any
// model row (the MLP, the GPT): loss sum and every tensor of the row's list of an accumulated
// window's gradient (dropout on, at every site the model has; unlabelled prefix), a table of
// per-tensor max errors against atol 1e-6 / rtol 1e-4; the GPU run repeated must be
// bit-identical; evaluation loss and hits; two steps of each optimizer (θ and its state
// tensors). Negative control: the GPU gradient compared with a CPU gradient made with other
// dropout masks must fail the same check.
// Usage: test_cuda_model [--cpu-twin] [--break-twin] CONFIG [KEY=VALUE...]   (needs a GPU)
//   --cpu-twin    the CPU backend in the twin's place (run/device-check.sh --dry-run: every
//                 path and line of the table without a GPU; the agreement is then trivial)
//   --break-twin  the twin's θ scaled by 1.01: a deliberately wrong twin that must fail
//        test_cuda_model --host CONFIG [KEY=VALUE...]   (needs no GPU: tests/test_cuda.sh)
//   the module's table holds a twin for every model row (kind, on the device, an optimizer,
//   the CPU's first layers), and the GPT twin's device plan (cuda/gpt_cuda_plan.h) holds the
//   row's P in θ and P + 1 in the gradient and, per packed row, the bytes of the row's budget
//   terms; each with a negative control (the MLP's entry checked as the GPT's, the plan
//   against the budget of another shape).
// Built only with CUDA; links the module's objects and calls them directly.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/synthetic.h"
#include "data/sampler.h"
#include "gpt_cuda_plan.h"
#include "job/cuda_api.h"

static int failed = 0, passed = 0;

static int compare(const char *what, const ModelShape *m, const float *g, const float *ref, int expect_pass) {
    int all_ok = 1;
    for (int p = 0; p < m->n_tensors; p++) {
        size_t bad = 0;
        double maxe = 0;
        for (size_t i = m->offset[p]; i < m->offset[p] + m->size[p]; i++) {
            double e = fabs((double)g[i] - ref[i]);
            if (!(e <= 1e-6 + 1e-4 * fabs((double)ref[i]))) bad++;
            if (e > maxe || isnan(e)) maxe = e;
        }
        if (bad) all_ok = 0;
        if (expect_pass)
            printf("  %-30s %-12s max abs err %.3e  violations %zu/%zu%s\n", what, m->name[p], maxe, bad, m->size[p],
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
    if (ops->finish_backward) ops->finish_backward(c);
    ops->get_grad(c, grad);
    ops->destroy(c);
    return S;
}

static void check(const char *what, int agree, int expect) {
    if (agree == expect) passed++, printf("  ok   %s\n", what);
    else failed++, printf("FAIL %s (expected %s)\n", what, expect ? "true" : "false");
}

// A twin for model kind k: computes that model, on the device, with an optimizer, and every
// first layer the row's CPU backend offers that the twin claims is one the CPU has.
static int twin_is(const ComputeOps *t, ModelKind k) {
    const ComputeOps *cpu = model_rows[k]->cpu;
    if (!t || t->model != k || !t->on_device || strcmp(t->name, "cuda") || !t->optimizer || !t->create || !t->forward_backward)
        return 0;
    for (int f = 0; f < FIRST_LAYER_COUNT; f++)
        if (t->first_layers[f] && !cpu->first_layers[f]) return 0;
    return t->first_layers[FIRST_LAYER_DENSE];
}

// The GPT twin's device plan against the row: θ and the gradient hold the row's P and P + 1
// floats; the per-row buffers (plan(n + 1) − plan(n)) are the bytes per row of the row's budget
// terms "activations" and "attention" (rows(n + 1) − rows(n)).
static uint64_t plan_bytes(const ModelShape *m, int cap, GptBufKind kind) {
    GptCudaBuffer b[GPT_CUDA_MAX_BUFFERS];
    size_t k = gpt_cuda_plan(m, cap, b);
    uint64_t s = 0;
    for (size_t i = 0; i < k; i++)
        if (b[i].kind == kind) s += b[i].bytes;
    return s;
}
static uint64_t budget_row_bytes(const ModelShape *m, uint64_t rows) {
    Budget b = {0};
    model_rows[m->kind]->budget(&b, m, rows, "n", "keys", FIRST_LAYER_DENSE);
    uint64_t s = 0;
    for (int i = 0; i < b.n; i++)
        if (!strncmp(b.term[i].what, "activations ", 12) || !strncmp(b.term[i].what, "attention ", 10)) s += b.term[i].bytes;
    return s;
}
static int plan_matches(const ModelShape *plan_m, const ModelShape *row_m, int n, int verbose) {
    uint64_t params = plan_bytes(plan_m, n, GPT_BUF_PARAMS), want_params = (2 * (uint64_t)row_m->total + 1) * sizeof(float);
    uint64_t per_row = plan_bytes(plan_m, n + 1, GPT_BUF_ROWS) - plan_bytes(plan_m, n, GPT_BUF_ROWS);
    uint64_t want_row = budget_row_bytes(row_m, (uint64_t)n + 1) - budget_row_bytes(row_m, (uint64_t)n);
    if (verbose)
        printf("  gpt plan: theta + grad %llu bytes (row: (2P+1)*4 = %llu); per packed row %llu bytes (budget: %llu); "
               "per-instance scratch %llu bytes, batch %llu bytes at %d rows\n",
               (unsigned long long)params, (unsigned long long)want_params, (unsigned long long)per_row, (unsigned long long)want_row,
               (unsigned long long)plan_bytes(plan_m, n, GPT_BUF_SCRATCH), (unsigned long long)plan_bytes(plan_m, n, GPT_BUF_BATCH), n);
    return params == want_params && per_row == want_row;
}

static int host_checks(const Config *cfg) {
    const CudaModule *t = ddptok_cuda_entry();
    check("the module's entry has this build's ABI", t->abi == DDPTOK_CUDA_ABI, 1);
    for (int k = 0; k < MODEL_COUNT; k++) {
        char what[160];
        snprintf(what, sizeof what, "the module's table: compute[%s] is a %s twin (on the device, optimizer, the CPU's first layers)",
                 model_rows[k]->name, model_rows[k]->name);
        check(what, twin_is(t->compute[k], (ModelKind)k), 1);
    }
    check("control: the MLP's entry is not taken for the GPT's", twin_is(t->compute[MODEL_MLP], MODEL_GPT), 0);
    ModelShape m;
    model_shape(&m, cfg);
    if (m.kind != MODEL_GPT) return printf("FAIL --host needs a model.kind: gpt config for the plan\n"), failed++, 1;
    int n = cfg->train.batch_size_per_rank * cfg->data.max_length;
    check("gpt twin's device plan = the row's P and per-row budget bytes", plan_matches(&m, &m, n, 1), 1);
    ModelShape other = m;
    Config c2 = *cfg;
    c2.model.n_head = cfg->model.n_head * 2;
    model_shape(&other, &c2);
    check("control: the plan against the budget of another shape (n_head doubled) differs", plan_matches(&m, &other, n, 0), 0);
    printf("test_cuda_model --host: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char **argv) {
    int cpu_twin = 0, break_twin = 0, host = 0, a0 = 1;
    for (; a0 < argc && !strncmp(argv[a0], "--", 2); a0++) {
        if (!strcmp(argv[a0], "--cpu-twin")) cpu_twin = 1;
        else if (!strcmp(argv[a0], "--break-twin")) break_twin = 1;
        else if (!strcmp(argv[a0], "--host")) host = 1;
        else return fprintf(stderr, "test_cuda_model: unknown option %s\n", argv[a0]), 2;
    }
    if (argc - a0 < 1) return fprintf(stderr, "usage: test_cuda_model [--cpu-twin] [--break-twin] [--host] CONFIG [KEY=VALUE...]\n"), 2;
    Config cfg;
    char err[512];
    if (config_load(&cfg, argv[a0], argv + a0 + 1, argc - a0 - 1, err, sizeof err)) return printf("FAIL %s\n", err), 2;
    if (host) return host_checks(&cfg);
    char dev[200] = "the CPU (--cpu-twin: the CPU backend as the twin)";
    if (!cpu_twin) {
        if (cuda_device_count() == 0) return printf("test_cuda_model: no GPU visible\n"), 2;
        Comm fake = {0};
        cuda_select_device(&fake);
        cuda_describe_device(dev, sizeof dev);
    }
    Corpus c;
    corpus_generate(&c, &cfg);
    ModelShape m;
    model_shape(&m, &cfg);
    const ComputeOps *cpu = model_row(&m)->cpu, *twin = cpu_twin ? cpu : ddptok_cuda_entry()->compute[m.kind];
    if (!twin) return printf("FAIL the module has no CUDA twin of model.kind %s\n", model_row(&m)->name), 1;
    printf("test_cuda_model: %s (%s, %d tensors, P %zu) on %s, dropout %g, prefix %d%s\n", argv[a0], model_row(&m)->name,
           m.n_tensors, m.total, dev, cfg.model.dropout, cfg.data.unsupervised_prefix, break_twin ? ", twin broken (θ x 1.01)" : "");
    int A = cfg.train.accumulation, B = cfg.train.batch_size_per_rank;
    const BatchSpec spec = model_batch_spec(&m);
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
    int cap = mb[0].cap;
    float *theta = xmalloc(m.total * sizeof *theta), *theta_t = xmalloc(m.total * sizeof *theta_t);
    model_init_params(&m, cfg.seed, theta);
    memcpy(theta_t, theta, m.total * sizeof *theta);
    if (break_twin)
        for (size_t i = 0; i < m.total; i++) theta_t[i] *= 1.01f;
    float *gc = xmalloc((m.total + 1) * sizeof *gc), *gg = xmalloc((m.total + 1) * sizeof *gg),
          *gg2 = xmalloc((m.total + 1) * sizeof *gg2), *gx = xmalloc((m.total + 1) * sizeof *gx);
    RngStream drop = rng_stream(cfg.seed, RNG_DROPOUT, 0);
    int64_t N;
    double Sc = run_window(cpu, &m, theta, mb, n, cfg.model.dropout, &drop, 0, gc, &N);
    double Sg = run_window(twin, &m, theta_t, mb, n, cfg.model.dropout, &drop, 0, gg, &N);
    double Sg2 = run_window(twin, &m, theta_t, mb, n, cfg.model.dropout, &drop, 0, gg2, &N);
    double rel = fabs(Sc - Sg) / fabs(Sc);
    printf("  loss sum over %lld positions: cpu %.9f gpu %.9f (relative %.2e)\n", (long long)N, Sc, Sg, rel);
    if (rel <= 1e-6) passed++;
    else failed++, printf("FAIL loss sums differ by %.2e relative\n", rel);
    compare("gradient gpu vs cpu", &m, gg, gc, 1);
    if (memcmp(gg, gg2, (m.total + 1) * sizeof *gg) == 0 && Sg == Sg2) passed++, printf("  gpu run repeated: bit-identical\n");
    else failed++, printf("FAIL the GPU gradient differs between two identical runs\n");
    if (cfg.model.dropout > 0) {  // negative control: other masks must be caught
        run_window(cpu, &m, theta, mb, n, cfg.model.dropout, &drop, 7, gx, &N);
        compare("negative control (other masks)", &m, gg, gx, 0);
    }
    // Evaluation and one SGD step.
    Compute *cc = cpu->create(&m, cap, FIRST_LAYER_DENSE), *cg = twin->create(&m, cap, FIRST_LAYER_DENSE);
    cpu->set_params(cc, theta), twin->set_params(cg, theta_t);
    int64_t hc = 0, hg = 0;
    double ec = cpu->evaluate(cc, &mb[n - 1], &hc, NULL, NULL), eg = twin->evaluate(cg, &mb[n - 1], &hg, NULL, NULL);
    if (fabs(ec - eg) <= 1e-6 * fabs(ec) && hc == hg) passed++, printf("  evaluate: loss %.6f vs %.6f, hits %lld vs %lld\n", ec, eg, (long long)hc, (long long)hg);
    else failed++, printf("FAIL evaluate: cpu %.9f/%lld gpu %.9f/%lld\n", ec, (long long)hc, eg, (long long)hg);
    cpu->destroy(cc), twin->destroy(cg);
    // Two steps of each optimizer (SGD with dampening, AdamW) from the same gradients: θ and every state
    // tensor of the GPU twin against the CPU's. AdamW's ε = 1e-3 keeps its step well
    // conditioned in g (|∂Δθ/∂g| ≤ lr/ε = 10), so the backends' gradient difference (≤ 1e-6)
    // cannot flip an update as it could for a |g| near torch's ε = 1e-8. Negative control:
    // the GPU's AdamW θ against the CPU's SGD θ must disagree.
    float *tc = xmalloc(m.total * sizeof *tc), *tg = xmalloc(m.total * sizeof *tg);
    float *sgd_cpu = xmalloc(m.total * sizeof *sgd_cpu);
    OptimizerHyper h = {.lr = 0.01, .weight_decay = 0.01, .momentum = 0.9, .dampening = 0.5, .betas = {0.9, 0.999}, .eps = 1e-3};
    // Then each with train.optimizer.decay: matrices (the row's matrices masked in, decay 0.5
    // so that where it applies it moves θ well outside the bound): the twin's copy of the mask
    // on the device against the CPU's; negative control: the masked twin against the CPU
    // decaying every element must disagree.
    uint8_t *mask = xcalloc(m.total, 1);
    for (int k = 0; k < m.n_tensors; k++)
        if (model_tensor_is_matrix(&m, k)) memset(mask + m.offset[k], 1, m.size[k]);
    float *all_cpu = xmalloc(m.total * sizeof *all_cpu);
    for (int run = 0; run < 2 * OPT_COUNT; run++) {
        int kind = run % OPT_COUNT, masked = run >= OPT_COUNT;
        OptimizerHyper hr = h;
        if (masked) hr.weight_decay = 0.5;
        cc = cpu->create(&m, cap, FIRST_LAYER_DENSE), cg = twin->create(&m, cap, FIRST_LAYER_DENSE);
        cpu->set_params(cc, theta), twin->set_params(cg, theta_t);
        Optimizer *oc = optimizer_create((OptimizerKind)kind, &hr, cpu->optimizer, m.total);
        Optimizer *og = optimizer_create((OptimizerKind)kind, &hr, twin->optimizer, m.total);
        Optimizer *oa = NULL;  // masked: the CPU decaying every element, for the control
        Compute *ca = NULL;
        if (masked) {
            optimizer_set_decay_mask(oc, mask), optimizer_set_decay_mask(og, mask);
            oa = optimizer_create((OptimizerKind)kind, &hr, cpu->optimizer, m.total);
            ca = cpu->create(&m, cap, FIRST_LAYER_DENSE);
            cpu->set_params(ca, theta);
        }
        for (int step = 0; step < 2; step++) {
            cpu->zero_grad(cc), twin->zero_grad(cg);
            Dropout d = {.p = cfg.model.dropout, .stream = drop, .block = (uint64_t)step};
            cpu->forward_backward(cc, &mb[step], 0.01f, &d);
            twin->forward_backward(cg, &mb[step], 0.01f, &d);
            if (cpu->finish_backward) cpu->finish_backward(cc);
            if (twin->finish_backward) twin->finish_backward(cg);
            optimizer_step(oc, cpu->param_buffer(cc), cpu->grad_buffer(cc), 2.0f);
            optimizer_step(og, twin->param_buffer(cg), twin->grad_buffer(cg), 2.0f);
            if (masked) {
                cpu->zero_grad(ca);
                cpu->forward_backward(ca, &mb[step], 0.01f, &d);
                if (cpu->finish_backward) cpu->finish_backward(ca);
                optimizer_step(oa, cpu->param_buffer(ca), cpu->grad_buffer(ca), 2.0f);
            }
        }
        char what[128];
        cpu->get_params(cc, tc), twin->get_params(cg, tg);
        snprintf(what, sizeof what, "params after 2 %s steps%s", optimizer_names[kind], masked ? ", decay on the matrices" : "");
        compare(what, &m, tg, tc, 1);
        if (masked) {
            cpu->get_params(ca, all_cpu);
            snprintf(what, sizeof what, "negative control (%s: masked gpu vs cpu decaying all)", optimizer_names[kind]);
            compare(what, &m, tg, all_cpu, 0);
            optimizer_free(oa), cpu->destroy(ca);
        } else if (kind == OPT_SGD) memcpy(sgd_cpu, tc, m.total * sizeof *tc);
        else compare("negative control (gpu adamw vs cpu sgd)", &m, tg, sgd_cpu, 0);
        OptimizerSnapshot sc, sg;
        optimizer_snapshot(oc, &sc), optimizer_snapshot(og, &sg);
        for (int i = 0; i < optimizers[kind].n_states; i++) {
            snprintf(what, sizeof what, "%s %s after 2 steps%s", optimizer_names[kind], optimizers[kind].state_names[i],
                     masked ? ", decay on the matrices" : "");
            compare(what, &m, sg.state[i], sc.state[i], 1);
        }
        optimizer_snapshot_free(&sc), optimizer_snapshot_free(&sg);
        optimizer_free(oc), optimizer_free(og);
        cpu->destroy(cc), twin->destroy(cg);
    }
    free(tc), free(tg), free(sgd_cpu), free(theta_t), free(mask), free(all_cpu);
    printf("test_cuda_model: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
