// exercise.c — `exercise`, the tutorial's: rank 0 keeps `short` tokens, rank 1 goes
// from `short` to `long` tokens.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/mem.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/synthetic.h"
#include "io/jsonio.h"
#include "model/model.h"

typedef struct {
    double S;      // loss sum
    int64_t N;     // tokens
    float *g;      // (P) ∇S
} RankGrad;

static void rank_grad(const App *app, const ModelShape *m, const float *theta, const Corpus *mini, int seq, RankGrad *out) {
    Compute *cc = app->compute->create(m, corpus_len(mini, seq), app->cfg.train.first_layer);
    app->compute->set_params(cc, theta);
    app->compute->zero_grad(cc);
    Batch b;
    BatchSpec spec = model_batch_spec(m);
    batch_init(&b, &spec, 1);
    int32_t id = seq;
    LabelRule all = {0, -1, 0};
    batch_build(&b, mini, &id, 1, &all, UNIT_TOKEN);
    out->S = app->compute->forward_backward(cc, &b, 1.0f, NULL);
    app->compute->finish_backward(cc);
    out->N = b.T;
    float *g = xmalloc((m->total + 1) * sizeof *g);
    app->compute->get_grad(cc, g);
    out->g = g;
    batch_free(&b);
    app->compute->destroy(cc);
}

// The config's exercise token counts against data.max_length, the run and --check alike
// (Command.check_options): --check exercise said ok to counts the run refuses.
static void exercise_check(const App *app) {
    const Config *cfg = &app->cfg;
    if (cfg->exercise.long_tokens > cfg->data.max_length || cfg->exercise.short_tokens > cfg->data.max_length)
        die(EXIT_BAD_INPUT, "%s: exercise token counts must not exceed data.max_length (%d)", cfg->source, cfg->data.max_length);
    check_corpus_in_memory(app);
}

static int exercise_run(App *app) {
    const Config *cfg = &app->cfg;
    int ns = cfg->exercise.short_tokens, nl = cfg->exercise.long_tokens;
    Corpus full;
    corpus_generate(&full, cfg);
    int picks[2] = {-1, -1}, np = 0;
    for (int i = 0; i < full.n && np < 2; i++)
        if (full.split[i] == SPLIT_TEST && corpus_len(&full, i) >= (nl > ns ? nl : ns)) picks[np++] = i;
    if (np < 2) die(EXIT_BAD_INPUT, "%s: no two test sequences of %d tokens", cfg->source, nl);
    // Mini corpus: rank 0's sequence, rank 1's short and long versions of one sequence.
    int lens[3] = {ns, ns, nl}, src[3] = {picks[0], picks[1], picks[1]};
    Corpus mini = {0};
    mini.n = 3;
    mini.offsets = xmalloc(4 * sizeof *mini.offsets);
    mini.offsets[0] = 0;
    for (int i = 0; i < 3; i++) mini.offsets[i + 1] = mini.offsets[i] + lens[i];
    mini.n_tokens = mini.offsets[3];
    mini.tokens = xmalloc((size_t)mini.n_tokens * sizeof *mini.tokens);
    mini.split = xcalloc(3, 1);
    for (int i = 0; i < 3; i++)
        memcpy(mini.tokens + mini.offsets[i], full.tokens + full.offsets[src[i]], (size_t)lens[i] * sizeof(int32_t));
    corpus_index_splits(&mini);

    ModelShape m;
    float *theta = model_initial(cfg, &m);
    RankGrad rg[3];
    for (int i = 0; i < 3; i++) rank_grad(app, &m, theta, &mini, i, &rg[i]);

    say("exercise: rank 0 keeps %d tokens; rank 1 goes from %d to %d tokens (W = 2, dropout off)\n", ns, ns, nl);
    say("  by hand, with loss 1 per token on rank 0 and 3 on rank 1:\n");
    json_t *cases = json_array();
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        const RankGrad *a = &rg[0], *b = &rg[1 + k];
        double hand_mom = (1.0 + 3.0) / 2, hand_glob = (1.0 * a->N + 3.0 * b->N) / (double)(a->N + b->N);
        int64_t N = a->N + b->N;
        double loss_glob = (a->S + b->S) / N, loss_mom = (a->S / a->N + b->S / b->N) / 2;
        double maxd = 0, num = 0, den = 0;
        for (size_t i = 0; i < m.total; i++) {
            double gg = ((double)a->g[i] + b->g[i]) / N;
            double gm = ((double)a->g[i] / a->N + (double)b->g[i] / b->N) / 2;
            maxd = fmax(maxd, fabs(gg - gm));
            num += (gg - gm) * (gg - gm), den += gg * gg;
        }
        double rel = den > 0 ? sqrt(num / den) : 0;
        int equal = a->N == b->N;
        int case_ok = equal ? maxd <= cfg->parity.atol : maxd > cfg->parity.atol;
        ok &= case_ok;
        say("  case %d: counts %lld and %lld: mean of means %.4g, global mean %.4g%s\n", k + 1, (long long)a->N,
            (long long)b->N, hand_mom, hand_glob, equal ? " (equal counts: the formulas agree)" : " (the short rank weighs too much)");
        say("          real model: loss mean of means %.6f, global %.6f; gradients differ by max %.3g (relative L2 %.3g) -> %s\n",
            loss_mom, loss_glob, maxd, rel, equal ? (case_ok ? "coincide" : "SHOULD COINCIDE") : (case_ok ? "differ" : "SHOULD DIFFER"));
        json_array_append_new(
            cases, json_pack("{s:[I,I], s:{s:o, s:o}, s:{s:o, s:o, s:o, s:o}}", "counts", (json_int_t)a->N, (json_int_t)b->N,
                             "hand", "mean_of_means", json_num(hand_mom), "global", json_num(hand_glob), "model",
                             "mean_of_means_loss", json_num(loss_mom), "global_loss", json_num(loss_glob),
                             "grad_max_abs_diff", json_num(maxd), "grad_relative_l2_diff", json_num(rel)));
    }
    write_json(app, "exercise.json", json_pack("{s:o, s:b}", "cases", cases, "ok", ok));
    say("  W stays 2 in both cases; only N changes (24 -> %d). No extra division by the number of microbatches.\n", ns + nl);
    for (int i = 0; i < 3; i++) free(rg[i].g);
    free(theta);
    corpus_free(&mini);
    corpus_free(&full);
    return ok ? 0 : EXIT_CHECK_FAILED;
}

const Command cmd_exercise = {
    .name = "exercise",
    .run = exercise_run,
    .distributed = 0,
    .any_config = 1,  // a demonstration: it shares any config's outputs directory
    .summary = "the tutorial's exercise: rank 1 goes from 12 to 36 tokens",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "exercise.json", 0}, {0}},
    .check_options = exercise_check,
};
