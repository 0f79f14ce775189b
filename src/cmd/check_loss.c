// check_loss.c — `check-loss`: the counter-example's arithmetic, computed by the
// objective rows the trainer uses (objective_scale, objective_ddp_average) on per-rank
// counts, loss sums and d loss sum / dθ.

#include "app/app.h"
#include "base/report.h"
#include "io/jsonio.h"
#include "method/objective.h"

// Per-rank counts of the token unit (padded = tokens: no padding).
static void token_counts(Counts *rank, const int64_t *tokens, int W) {
    for (int r = 0; r < W; r++) rank[r] = (Counts){.tokens = tokens[r], .padded = tokens[r]};
}

static int check_loss_run(App *app) {
    // Counter-example: 12 tokens with loss sum 12, 36 tokens with loss sum 108.
    static const int64_t tokens[2] = {12, 36};
    Counts rank[2], all = {.tokens = 48, .padded = 48};
    token_counts(rank, tokens, 2);
    const double sums[2] = {12, 108};
    double mom = objective_ddp_average(NORM_MEAN_OF_MEANS, UNIT_TOKEN, 2, 1, rank, sums);
    double glob = objective_ddp_average(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, rank, sums);
    double scal0 = objective_scale(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, &all, &rank[0]) * 12;
    double scal1 = objective_scale(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, &all, &rank[1]) * 108;
    // One parameter θ = 1: rank 0's 12 tokens each have loss 1 − 2(θ−1), rank 1's 36 tokens
    // each 1 + 2(θ−1). Both formulas show loss 1; their gradients are 0 and 1.
    const double loss1[2] = {12, 36}, dloss1[2] = {12 * -2.0, 36 * 2.0};
    double l_mom = objective_ddp_average(NORM_MEAN_OF_MEANS, UNIT_TOKEN, 2, 1, rank, loss1);
    double g_mom = objective_ddp_average(NORM_MEAN_OF_MEANS, UNIT_TOKEN, 2, 1, rank, dloss1);
    double l_glob = objective_ddp_average(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, rank, loss1);
    double g_glob = objective_ddp_average(NORM_GLOBAL_TOKEN, UNIT_TOKEN, 2, 1, rank, dloss1);

    int ok = mom == 2.0 && glob == 2.5 && scal0 == 0.5 && scal1 == 4.5 && l_mom == 1.0 && l_glob == 1.0 &&
             g_mom == 0.0 && g_glob == 1.0;
    say("check-loss: counter-example (W = 2)\n"
        "  rank 0: 12 tokens, loss sum 12 (mean 1)    rank 1: 36 tokens, loss sum 108 (mean 3)\n"
        "  mean of means        (1 + 3) / 2         = %g\n"
        "  global token mean    (12 + 108) / 48     = %g\n"
        "  the formula's local scalars W*S_r/N: rank 0 %g, rank 1 %g; their average %g\n"
        "one parameter theta = 1: rank 0 tokens lose 1 - 2(theta-1), rank 1 tokens 1 + 2(theta-1)\n"
        "  mean of means:    loss %g, gradient %g\n"
        "  global token:     loss %g, gradient %g   (same loss, different gradient)\n"
        "%s\n",
        mom, glob, scal0, scal1, (scal0 + scal1) / 2, l_mom, g_mom, l_glob, g_glob,
        ok ? "check-loss: OK" : "check-loss: FAILED (arithmetic differs from the expected 2, 2.5, 0.5, 4.5, 0/1)");
    json_t *counter = json_pack("{s:[i,i], s:[i,i], s:o, s:o, s:[o,o]}", "counts", 12, 36, "loss_sums", 12, 108,
                                "mean_of_means", json_num(mom), "global_mean", json_num(glob), "local_scalars",
                                json_num(scal0), json_num(scal1));
    json_t *one = json_pack("{s:{s:o, s:o}, s:{s:o, s:o}}", "mean_of_means", "loss", json_num(l_mom), "gradient",
                            json_num(g_mom), "global_token", "loss", json_num(l_glob), "gradient", json_num(g_glob));
    write_json(app, "check_loss.json",
               json_pack("{s:o, s:o, s:b}", "counter_example", counter, "one_parameter", one, "pass", ok));
    return ok ? 0 : EXIT_CHECK_FAILED;
}

const Command cmd_check_loss = {
    .name = "check-loss",
    .run = check_loss_run,
    .distributed = 0,
    .any_config = 1,  // a demonstration: it shares any config's outputs directory
    .summary = "the arithmetic of the counter-example (2 vs 2.5) and the one-parameter example",
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "check_loss.json", 0}, {0}},
};
