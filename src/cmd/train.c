// train.c — `train`: the training loop of one run (optimizer updates, logs, checkpoints);
// its lineage (lineage.h), logs (runlog.h) and state in and out of checkpoints (snapshot.h)
// are the train layer's.
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/report.h"
#include "base/sha256.h"
#include "data/corpus.h"
#include "job/lifecycle.h"
#include "train/evaluation.h"
#include "train/lineage.h"
#include "train/progress.h"
#include "train/runlog.h"
#include "train/snapshot.h"
#include "train/trainer.h"

typedef struct {
    int continuous;      // --continuous
    const char *resume;  // --resume DIR|latest|auto
    int fresh;           // --fresh: move the lineage's checkpoints aside, start at step 1
} TrainOptions;

static const TrainOptions *train_options(const App *app) { return app->opts; }

// A non-finite loss or gradient (trainer_update): every rank is here together; rank 0
// names the step and the rank whose own loss sum is not finite, and the run stops (exit 1).
static void stop_diverged(App *app, const WindowStats *ws) {
    int from = comm_agree(&app->comm, isfinite(ws->S_r) ? 0 : app->comm.rank + 1);  // the highest such rank, + 1
    char where[64] = "after the gradient average (every rank's own loss sum is finite)";
    if (from) snprintf(where, sizeof where, "from rank %d (its loss sum is %g)", from - 1, ws->S_r);
    if (app->comm.rank == 0)
        error("step %d: non-finite %s %s: the run diverged (train.optimizer.lr = %g too high?); nothing of this step is "
              "applied or published", ws->step, isfinite(ws->loss) ? "gradient" : "loss", where, app->cfg.train.hyper.lr);
    stop(EXIT_CHECK_FAILED);
}

// The command that continues this lineage from its newest checkpoint, for hints.
static const char *resume_hint(const App *app, char *buf, size_t len) {
    return hint_command(buf, len, "train", app->cfg.train.world_size,
                        train_options(app)->continuous ? " --continuous --resume latest" : " --resume latest");
}

// What the lines call a run, in plot's words: its log's name ("continuous", "resumed"), but the
// main lineage's first run is "interrupted" only when it ends before step U (train.interrupt_at,
// a stop request) and "not interrupted" when it reaches U (it was "interrupted" either way).
static const char *run_label(const char *run, int first_run, int step, int U) {
    return first_run && step >= U ? "not interrupted" : run;
}

static int train_run(App *app) {
    const Config *cfg = &app->cfg;
    Corpus corpus;
    load_corpus_or_die(app, &corpus);
    ModelShape m;
    float *theta0 = model_initial(cfg, &m);
    char theta0_digest[65] = "";  // train.init_from: θ0 as loaded, P float32 in θ order (the line and the JSONL say it)
    if (cfg->train.init_from[0]) {
        Sha256 *h = sha256_begin();
        sha256_add(h, theta0, m.total * sizeof *theta0);
        sha256_hex(h, theta0_digest);
    }
    Trainer t;
    comm_stop_if_any(&app->comm, trainer_init(&t, cfg, &corpus, app->compute, &app->comm, theta0), EXIT_BAD_INPUT,
                     "setting up training");
    free(theta0);

    // train.eval_every: the validation loss with the current parameters, on every rank, on
    // a backend instance of its own, or the trainer's between updates when a pass fits it
    // (train.eval_batch; the trajectory is the same with it on or off).
    Evaluator ev = {0};
    int eval_every = config_eval_every(cfg, corpus_split_count(&corpus, SPLIT_VALIDATION));
    if (cfg->train.eval_every == CONFIG_AUTO && !eval_every && corpus_split_count(&corpus, SPLIT_VALIDATION) > 0)
        say("train: train.eval_every auto: off (the validation split's %d sequences would cost more than this run's training "
            "reads): set train.eval_every to evaluate it\n", corpus_split_count(&corpus, SPLIT_VALIDATION));
    if (eval_every) {
        if (corpus_split_count(&corpus, SPLIT_VALIDATION) == 0)
            die(EXIT_BAD_INPUT, "%s: train.eval_every is %d but the validation split is empty (data.splits.validation, or "
                "data.import.validation_fraction): set train.eval_every: 0, or give the corpus a validation split",
                app->config_path, eval_every);
        char corpus_path[1024];
        out_path(app, corpus_path, sizeof corpus_path, "data/corpus.h5");
        evaluator_init(&ev, cfg, &corpus, corpus_path, app->compute, &app->comm, &t.m, &t);
    }

    // The continuous run is the witness: its checkpoints live apart from the main lineage.
    char root[1024], dir[1100];
    art_path(app, root, sizeof root, train_options(app)->continuous ? "continuous" : "checkpoints");
    comm_stop_if_any(&app->comm, app->comm.rank == 0 ? lineage_lock(root, app->comm.timeout) : 0, EXIT_BAD_INPUT, "locking the lineage");
    const LineageStart how = {.resume = train_options(app)->resume, .fresh = train_options(app)->fresh,
                              .global = cfg->train.sampler == SAMPLER_GLOBAL, .updates = cfg->train.updates,
                              .continuous = train_options(app)->continuous, .world_size = cfg->train.world_size,
                              .cfg = cfg, .corpus = &corpus};
    int resuming = lineage_start(&app->comm, &how, root, dir, sizeof dir);
    if (resuming < 0) {  // --resume auto on a finished lineage
        if (eval_every) evaluator_free(&ev);
        trainer_free(&t);
        corpus_free(&corpus);
        return 0;
    }
    if (resuming) {  // a checkpoint of other data or another config cannot be continued: say what can be run
        char fresh[HINT_MAX], remedy[HINT_MAX + 200];
        snprintf(remedy, sizeof remedy, "it cannot be continued here; start over: run `%s` (moves the lineage aside), or give "
                 "this run its own paths.artifacts (--set paths.artifacts=DIR)",
                 hint_command(fresh, sizeof fresh, "train", cfg->train.world_size,
                              train_options(app)->continuous ? " --continuous --fresh" : " --fresh"));
        trainer_resume(&t, dir, corpus.lock, train_options(app)->resume && strcmp(train_options(app)->resume, "latest") &&
                                                     strcmp(train_options(app)->resume, "auto") ? NULL : remedy);
    }
    const char *run = train_options(app)->continuous ? "continuous" : resuming ? "resumed" : "interrupted";  // names its logs
    int stop_at = train_options(app)->continuous || resuming || cfg->train.interrupt_at == 0 ? cfg->train.updates : cfg->train.interrupt_at;
    // (a run planned to its end is not called anything yet: a stop request may still interrupt it)
    char called[40] = "";
    int first_run = !train_options(app)->continuous && !resuming;  // the main lineage's first (its log: interrupted.jsonl)
    if (!first_run || stop_at < cfg->train.updates) snprintf(called, sizeof called, " (%s)", run);
    say("train%s: %s backend, %s comm, W = %d, steps %d..%d of %d, %s unit, %s\n", called, app->compute->name,
        app->comm.ops->name, t.W, t.step + 1, stop_at, cfg->train.updates, loss_unit_names[cfg->train.loss_unit],
        normalization_names[cfg->train.normalization]);
    if (theta0_digest[0] && !resuming)
        say("train: θ0 from train.init_from %s: SHA-256 %s (its %zu parameters as loaded: float32, θ order)\n",
            text_safe(cfg->train.init_from), theta0_digest, m.total);
    if (cfg->train.normalization != loss_units[cfg->train.loss_unit].product)
        say("train: WARNING: train.normalization %s is a negative control for the %s unit (its product is %s)\n",
            normalization_names[cfg->train.normalization], loss_unit_names[cfg->train.loss_unit],
            normalization_names[loss_units[cfg->train.loss_unit].product]);

    // Logs: one JSON line per update (rank 0), one line per window per rank; per run.
    char jsonl_path[1200], log_path[1200], rel[256];
    FILE *jsonl = NULL, *log = NULL;
    // A fresh start of the main lineage (--fresh, or an empty lineage) begins another run:
    // the resumed logs an earlier run left go aside with its checkpoints, so no figure joins
    // this run's interrupted curve to that run's resumed one (its interrupted logs go aside
    // as this run creates its own).
    if (!resuming && !train_options(app)->continuous) {
        char aside[1300];
        snprintf(rel, sizeof rel, "logs/resumed/rank-%d.log", t.rank);
        out_path(app, log_path, sizeof log_path, rel);
        int moved = runlog_set_aside(log_path, NULL, 0);
        out_path(app, jsonl_path, sizeof jsonl_path, "train/resumed.jsonl");
        if (!moved && app->comm.rank == 0) {
            moved = runlog_set_aside(jsonl_path, aside, sizeof aside);
            if (!moved && aside[0])
                say("train: a fresh start: the earlier run's %s moved aside to %s\n", text_safe(jsonl_path), text_safe(aside));
        }
        comm_stop_if_any(&app->comm, moved, EXIT_BAD_INPUT, "moving the earlier run's logs aside");
    }
    snprintf(rel, sizeof rel, "train/%s.jsonl", run);
    out_path(app, jsonl_path, sizeof jsonl_path, rel);
    snprintf(rel, sizeof rel, "logs/%s/rank-%d.log", run, t.rank);
    out_path(app, log_path, sizeof log_path, rel);
    int bad = app->comm.rank == 0 && !(jsonl = runlog_create(jsonl_path));
    if (!bad && !(log = runlog_create(log_path))) bad = 1;
    comm_stop_if_any(&app->comm, bad, EXIT_BAD_INPUT, "opening its training log");

    int rc = 0, log_bad = 0;
    TrainProgress progress;
    train_progress_init(&progress, t.step, stop_at, cfg->train.updates, cfg->train.log_every);
    config_result_digest(cfg, progress.config_digest);
    if (theta0_digest[0] && !resuming) progress.init_from = cfg->train.init_from, progress.init_digest = theta0_digest;  // which config made this run's curve (plot): all but how it runs
    progress.startup = (StartupSplit){.mpi_init = app->mpi_ready - app->started, .config = app->config_ready - app->mpi_ready,
                                      .agree = app->run_agreed - app->config_ready, .setup = progress.start - app->run_agreed,
                                      .total = progress.start - app->started};
    // The best validation checkpoint: artifacts/best (the continuous run's: continuous-best),
    // published whenever a train.eval_every evaluation is the lowest validation loss so far;
    // best.json beside it records its step and loss, and a resume carries the best on from it
    // (a fresh start, or a best of a later step than the resumed one, starts over).
    char best_dir[1024], best_json[1100];
    art_path(app, best_dir, sizeof best_dir, train_options(app)->continuous ? "continuous-best" : "best");
    snprintf(best_json, sizeof best_json, "%s.json", best_dir);
    double best_loss = INFINITY;
    if (cfg->train.keep_best && eval_every && resuming && app->comm.rank == 0) {
        json_t *b = access(best_json, F_OK) == 0 ? json_read_file(best_json, 1) : NULL;
        json_t *step = b ? json_object_get(b, "step") : NULL, *loss = b ? json_object_get(b, "validation_loss") : NULL;
        if (json_is_integer(step) && json_is_number(loss) && json_integer_value(step) <= t.step) best_loss = json_number_value(loss);
        json_decref(b);
    }
    comm_bcast(&app->comm, &best_loss, sizeof best_loss, 0);
    // train.checkpoint_every (auto: about every tenth of the run, at least 50 updates apart):
    // what a crash can lose; a stop request (SIGUSR1, Ctrl-C) checkpoints the window it ends.
    int every = config_checkpoint_every(cfg);
    while (t.step < stop_at) {
        WindowStats ws;
        int wrc = trainer_update(&t, stop_requested() || log_bad, &ws);
        if (wrc == EXIT_EMPTY_WINDOW)
            die(EXIT_EMPTY_WINDOW, "step %d: no supervised position in the window on any rank (N = 0); every rank stops "
                                   "(nothing applied, nothing written for this step)", ws.step);
        if (wrc == EXIT_CHECK_FAILED) stop_diverged(app, &ws);
        char when[40];
        utc_timestamp(when, sizeof when);
        fprintf(log, "time=%s run=%s rank=%d step=%d N_r=%lld S_r=%.9g N=%lld loss=%.9g seconds=%.6f data_wait=%.6f\n", when, run,
                t.rank, ws.step, (long long)ws.local.tokens, ws.S_r, (long long)ws.global.tokens, ws.loss, ws.seconds, ws.t_data);
        SplitEval val;
        progress.eval = NULL;
        if (eval_every && (t.step % eval_every == 0 || t.step == stop_at)) {
            evaluator_set_trainer(&ev, &t);
            evaluator_run(&ev, SPLIT_VALIDATION, &val);
            progress.eval = &val;
            progress.best = cfg->train.keep_best && val.loss < best_loss;  // the same bits on every rank (the exact evaluation)
        }
        // The best validation checkpoint is written before this step's line, which says whether
        // it was ("best": true, or false with "best_error"), and after the lineage's own (which
        // a failure must not cost): checkpointing reads the state, the trajectory is the same.
        // Not written (a full disk): one warning, the run goes on, the best stays the one before.
        int best_due = cfg->train.keep_best && progress.eval && progress.best;
        int ckpt_due = !ws.stop_requested && (t.step == stop_at || (every && t.step % every == 0));
        progress.best_error = NULL;
        if (best_due) {
            if (ws.stop_requested) {  // the stop's checkpoint, then the best (a resume carries it on)
                comm_stop_if_any(&app->comm, log_bad, EXIT_BAD_INPUT, "writing its training log");
                trainer_checkpoint(&t, root, corpus.lock);
            } else if (ckpt_due)
                trainer_checkpoint(&t, root, corpus.lock), ckpt_due = 0;
            if (trainer_checkpoint_to(&t, best_dir, corpus.lock) == 0) {
                best_loss = val.loss;
                if (app->comm.rank == 0) {
                    json_t *b = json_pack("{s:i, s:o, s:s}", "step", t.step, "validation_loss", json_num(val.loss),
                                          "checkpoint", best_dir);
                    char *text = b ? json_dumps(b, JSON_SORT_KEYS) : NULL;
                    if (!text || write_file_atomic(best_json, text, strlen(text)))
                        warning("%s: not written; %s is step %d's", best_json, best_dir, t.step);
                    free(text), json_decref(b);
                }
            } else {
                progress.best = 0;
                progress.best_error = "the best validation checkpoint was not written (the run's warning says why): it stays an earlier step's";
                if (app->comm.rank == 0)
                    warning("step %d: the best validation checkpoint %s not written; the run goes on", t.step, best_dir);
            }
        }
        train_progress_step(&progress, &ws, t.W, jsonl);
        // A line that did not reach the disk is not ignored: the rank asks to stop at the
        // next window boundary (through the count all-reduce), then every rank stops (exit 2).
        if (!log_bad) log_bad = runlog_check(log, log_path) || runlog_check(jsonl, jsonl_path);
        if (ws.stop_requested) {
            comm_stop_if_any(&app->comm, log_bad, EXIT_BAD_INPUT, "writing its training log");
            char hint[HINT_MAX];
            say("train: stop requested (%s) — checkpointing at step %d and exiting with %d (resume: run `%s`, or "
                "--resume auto in a requeued job)\n", stop_reason(), t.step, EXIT_REQUEUE, resume_hint(app, hint, sizeof hint));
            if (!best_due) trainer_checkpoint(&t, root, corpus.lock);  // (written above where a best was due)
            rc = EXIT_REQUEUE;
            break;
        }
        if (ckpt_due) trainer_checkpoint(&t, root, corpus.lock);
    }
    if (runlog_close(jsonl, jsonl_path) && !log_bad) log_bad = 1;
    if (runlog_close(log, log_path) && !log_bad) log_bad = 1;
    comm_stop_if_any(&app->comm, log_bad, EXIT_BAD_INPUT, "writing its training log");
    const char *label = run_label(run, first_run, t.step, cfg->train.updates);  // as it happened
    if (!rc) say("train (%s): done at step %d%s\n", label, t.step, t.step < cfg->train.updates ? " (interrupted as configured)" : "");
    train_progress_summary(&progress, label);
    // What to run next: continue an interrupted run; evaluate a finished one.
    char hint[HINT_MAX];
    if (!rc && t.step < cfg->train.updates)
        say("train: to continue to step %d, run `%s`\n", cfg->train.updates, resume_hint(app, hint, sizeof hint));
    else if (!rc) {
        // evaluate scores the test split; data without one (llm.c's shards: train and val) has the validation split to score.
        char split[64] = "", step_dir[1200], extra[1400] = "";
        if (corpus_split_count(&corpus, SPLIT_TEST) == 0 && corpus_split_count(&corpus, SPLIT_VALIDATION) > 0)
            hint_word(split, sizeof split, "--split"), hint_word(split, sizeof split, "validation");
        if (!train_options(app)->continuous)
            say("train: to evaluate the step-%d model, run `%s`\n", t.step, hint_command(hint, sizeof hint, "evaluate", 0, split));
        else {  // the continuous lineage: evaluate's default is the main lineage's newest, so name this one
            snprintf(step_dir, sizeof step_dir, "%s/step-%04d", root, t.step);
            hint_word(extra, sizeof extra, "--checkpoint"), hint_word(extra, sizeof extra, step_dir);
            size_t n = strlen(extra);
            snprintf(extra + n, sizeof extra - n, "%s", split);
            say("train: to evaluate the continuous run's step-%d model, run `%s`\n", t.step,
                hint_command(hint, sizeof hint, "evaluate", 0, extra));
        }
    }
    if (eval_every) evaluator_free(&ev);
    trainer_free(&t);
    corpus_free(&corpus);
    return rc;
}

const Command cmd_train = {
    .name = "train",
    .run = train_run,
    .distributed = 1,
    .stops_on_request = 1,
    .summary = "SGD or AdamW updates; stops at interrupt_at unless --continuous or --resume (auto: latest, a fresh start, or nothing when "
               "finished); refuses a lineage that has checkpoints unless --resume, or --fresh (moves them aside)",
    .options = (const CommandOption[]){
        OPTION_FLAG("--continuous", TrainOptions, continuous,
                    "the witness run: to train.updates in one go, its checkpoints in artifacts/continuous/ (a lineage of its own)"),
        OPTION_STRING("--resume", TrainOptions, resume, "DIR|latest|auto",
                      "continue checkpoint DIR, or the newest intact one (latest); auto: that, a fresh start, or nothing when finished"),
        OPTION_FLAG("--fresh", TrainOptions, fresh,
                    "start over at step 1: the lineage's checkpoints are moved aside to artifacts/checkpoints.old-UTC/",
                    .excludes = "--resume"),
        OPTION_END,
    },
    .opts_size = sizeof(TrainOptions),
    // .ddptok-config: the config the two directories are for (claim.h; every command that writes
    // records it: declared here, so that clean removes it with the rest).
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, ".ddptok-config", 0}, {UNDER_ARTIFACTS, ".ddptok-config", 0},
                                       {UNDER_OUTPUTS, "train", 1}, {UNDER_OUTPUTS, "logs", 1},
                                       {UNDER_ARTIFACTS, "checkpoints", 1}, {UNDER_ARTIFACTS, "continuous", 1},
                                       {UNDER_ARTIFACTS, "best", 1}, {UNDER_ARTIFACTS, "continuous-best", 1},
                                       {UNDER_ARTIFACTS, "best.json", 0}, {UNDER_ARTIFACTS, "continuous-best.json", 0},
                                       {UNDER_ARTIFACTS, "checkpoints.old-*", 1}, {UNDER_ARTIFACTS, "continuous.old-*", 1}, {0}},
};
