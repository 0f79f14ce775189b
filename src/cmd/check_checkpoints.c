// check_checkpoints.c — `check-checkpoints`: every checkpoint validated (files, checksums,
// every derived field derived and compared as a resume does, replicas, data lock, plan), in
// step order.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/app.h"
#include "base/hint.h"
#include "base/report.h"
#include "data/corpus.h"
#include "data/plan.h"
#include "io/h5io.h"
#include "store/checkpoint.h"
#include "train/trainer.h"

// Validates one step directory; returns the number of problems (each printed).
static int check_one(App *app, const char *dir, int step, const Corpus *corpus, const int32_t *plan, int plan_steps) {
    const char *lock = corpus->lock;
    const Config *cfg = &app->cfg;
    char path[1200];
    checkpoint_rank_path(path, sizeof path, dir, 0);
    CheckpointState s0, s;
    if (checkpoint_load(path, &s0)) return 1;
    int problems = 0, W = s0.world_size;
    for (int r = 0; r < W; r++) {
        checkpoint_rank_path(path, sizeof path, dir, r);
        if (r == 0) s = s0;
        else if (checkpoint_load(path, &s)) {
            problems++;
            continue;
        }
        char what[512];
        Config stored;
        char err[512];
        if (s.step != step) problems++, error("%s: step %d, directory says %d", path, s.step, step);
        if (s.rank != r) problems++, error("%s: holds rank %d", path, s.rank);
        if (s.world_size != W) problems++, error("%s: world size %d, rank 0 says %d", path, s.world_size, W);
        if (!corpus_lock_accepts(corpus, cfg, s.lock))
            problems++, error("%s: data lock %.12s… differs from the current data's %.12s…", path, s.lock, lock);
        else if (checkpoint_check_draws(path, &s, corpus))  // the sampler replayed: last window, hash, counter
            problems++;
        if (config_from_yaml(&stored, s.config_yaml, path, err, sizeof err)) problems++, error("%s", err);
        else if (config_diff_training(&stored, cfg, what, sizeof what))
            problems++, error("%s: config differs from %s at %s", path, cfg->source, what);
        if (r > 0) {  // replicas: model and optimizer identical bit for bit
            if (memcmp(s.theta, s0.theta, s.m.total * sizeof(float)) != 0)
                problems++, error("%s: model differs from rank 0's replica", path);
            if (s.opt.kind != s0.opt.kind || s.opt.steps != s0.opt.steps)
                problems++, error("%s: optimizer (%s, step %lld) differs from rank 0's (%s, step %lld)", path,
                                  optimizer_names[s.opt.kind], (long long)s.opt.steps, optimizer_names[s0.opt.kind],
                                  (long long)s0.opt.steps);
            else
                for (int i = 0; i < optimizers[s.opt.kind].n_states; i++)
                    if (memcmp(s.opt.state[i], s0.opt.state[i], s.m.total * sizeof(float)) != 0)
                        problems++, error("%s: optimizer %s differs from rank 0's replica", path, optimizers[s.opt.kind].state_names[i]);
        }
        // The last window must be the plan's window of this rank at this step (bands: plan.h5 holds
        // them; the global sampler's windows are the replay's, checked above).
        size_t per = (size_t)s.A * s.B;
        int cA, cB;
        sampler_window_shape(cfg, &cA, &cB);
        if (plan && cfg->train.sampler != SAMPLER_GLOBAL && s.world_size == cfg->train.world_size && s.A == cA && s.B == cB &&
            s.step >= 1 && s.step <= plan_steps &&
            memcmp(s.last, plan + ((size_t)(s.step - 1) * W + r) * per, per * sizeof(int32_t)) != 0)
            problems++, error("%s: the last window (step %d) differs from plan.h5's", path, s.step);
        if (r > 0) checkpoint_state_free(&s);
    }
    // No rank file beyond the world size.
    checkpoint_rank_path(path, sizeof path, dir, W);
    struct stat st;
    if (lstat(path, &st) == 0) problems++, error("%s: extra rank file for a world of %d", path, W);
    checkpoint_state_free(&s0);
    return problems;
}

// The step of a checkpoint's name (checkpoint_step_of), or of an unpublished write's
// step-NNNN.tmp with *tmp set; -1 for any other name.
static int entry_step(const char *name, int *tmp) {
    char base[256];
    size_t n = strlen(name);
    *tmp = n > 4 && n < sizeof base && !strcmp(name + n - 4, ".tmp");
    if (!*tmp) return checkpoint_step_of(name);
    memcpy(base, name, n - 4), base[n - 4] = 0;
    return checkpoint_step_of(base);
}

// scandir order: step-NNNN by number (step-10000 after step-9999), a write after its
// checkpoint, anything else by name after them.
static int by_step(const struct dirent **a, const struct dirent **b) {
    int ta, tb, sa = entry_step((*a)->d_name, &ta), sb = entry_step((*b)->d_name, &tb);
    if (sa >= 0 && sb >= 0 && sa != sb) return sa < sb ? -1 : 1;
    if ((sa >= 0) != (sb >= 0)) return sa >= 0 ? -1 : 1;
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int check_checkpoints_run(App *app) {
    const Config *cfg = &app->cfg;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    char ppath[1024];
    out_path(app, ppath, sizeof ppath, "data/plan.h5");
    int64_t U = cfg->train.updates;
    char prepare[HINT_MAX], hint[HINT_MAX + 16];
    snprintf(hint, sizeof hint, "run `%s`", hint_command(prepare, sizeof prepare, "prepare", 0, NULL));
    int32_t *plan = plan_read(ppath, cfg, &corpus, hint);
    if (!plan) stop(EXIT_BAD_INPUT);
    const char *roots[2] = {"checkpoints", "continuous"};
    int checked = 0, problems = 0;
    for (int i = 0; i < 2; i++) {
        char root[1024];
        art_path(app, root, sizeof root, roots[i]);
        struct dirent **e;
        int n_entries = scandir(root, &e, NULL, by_step);  // in step order
        for (int k = 0; k < n_entries; k++) {
            int tmp, step = entry_step(e[k]->d_name, &tmp);
            char dir[1400];
            snprintf(dir, sizeof dir, "%s/%s", root, e[k]->d_name);
            if (step < 0 && !strncmp(e[k]->d_name, "step-", 5))  // what train never resumes from either
                say("  %-40s ignored: not a checkpoint's name (train writes step-0012, step-12345)\n", text_safe(dir));
            else if (step >= 0 && tmp)  // step-NNNN.tmp: an unpublished (interrupted) write
                say("  %-40s ignored: incomplete write, never published\n", text_safe(dir));
            else if (step >= 0) {
                int p = step < 1 || step > U ? error("%s: step %d is outside the plan's steps 1..%lld (train.updates)", dir,
                                                     step, (long long)U) != 0
                                             : check_one(app, dir, step, &corpus, plan, (int)U);
                say("  %-40s %s\n", text_safe(dir), p ? "INVALID" : "ok");
                checked++, problems += p;
            }
            free(e[k]);
        }
        if (n_entries >= 0) free(e);
    }
    free(plan);
    corpus_free(&corpus);
    if (!checked) die(EXIT_BAD_INPUT, "check-checkpoints: no checkpoint under %s/", cfg->paths.artifacts);
    say("check-checkpoints: %d checkpoint(s), %d problem(s)\n", checked, problems);
    return problems ? EXIT_CHECK_FAILED : 0;
}

const Command cmd_check_checkpoints = {
    .name = "check-checkpoints",
    .run = check_checkpoints_run,
    .distributed = 0,
    .summary = "validate every checkpoint (files, checksums, replicas, data lock, plan)",
};
