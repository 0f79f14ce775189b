// progress.c — progress lines, summaries and timestamps (see progress.h).
#include "train/progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/report.h"
#include "io/jsonio.h"

void train_progress_init(TrainProgress *p, int first_step, int stop_at, int updates, int log_every) {
    p->first_step = p->step = p->last_print_step = first_step;
    p->stop_at = stop_at;
    p->updates = updates;
    int steps = stop_at - first_step;
    p->every = log_every > 0 ? log_every : steps <= 20 ? 1 : (steps + 19) / 20;
    p->start = p->last_print = now_seconds();
    p->tokens = 0;
    p->loss = 0;
    p->startup = (StartupSplit){0};
    p->eval = NULL;
    p->best = 0;
    p->best_error = NULL;
    p->config_digest[0] = 0;
    p->init_from = p->init_digest = NULL;
}

// Seconds to the microsecond, as a JSON number.
static json_t *seconds_us(double s) { return json_num(round(s * 1e6) / 1e6); }

void train_progress_step(TrainProgress *p, const WindowStats *ws, int W, FILE *jsonl) {
    double now = now_seconds(), elapsed = now - p->start;
    p->step = ws->step;
    p->loss = ws->loss;
    p->tokens += ws->global.tokens;
    int done = p->step - p->first_step;
    double tokens_per_s = elapsed > 0 ? (double)p->tokens / elapsed : 0;
    double eta = done > 0 ? elapsed / done * (p->stop_at - p->step) : 0;
    if (jsonl) {  // step, loss, tokens, rank_tokens (or its range), sequences, seconds: read by protocol, plot, tests
        char when[40];
        utc_timestamp(when, sizeof when);
        // reals with 9 significant digits (the loss as before; the seconds to the microsecond)
        json_t *split = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "draw", seconds_us(ws->t_draw), "count_allreduce",
                                  seconds_us(ws->t_count), "compute", seconds_us(ws->t_compute), "grad_allreduce",
                                  seconds_us(ws->t_allreduce), "optimizer", seconds_us(ws->t_optimizer), "overlap",
                                  seconds_us(ws->t_overlap), "data_wait", seconds_us(ws->t_data));
        json_t *rank_tokens;
        const char *ranks_key = W <= PROGRESS_RANK_LIST ? "rank_tokens" : "rank_tokens_range";
        if (W <= PROGRESS_RANK_LIST) rank_tokens = json_int_array(ws->rank_counts, W);
        else {  // O(1) in W: the extremes and where they are
            int lo = 0, hi = 0;
            for (int r = 1; r < W; r++) {
                if (ws->rank_counts[r] < ws->rank_counts[lo]) lo = r;
                if (ws->rank_counts[r] > ws->rank_counts[hi]) hi = r;
            }
            rank_tokens = json_pack("{s:i, s:I, s:i, s:I, s:i}", "ranks", W, "min", (json_int_t)ws->rank_counts[lo], "argmin",
                                    lo, "max", (json_int_t)ws->rank_counts[hi], "argmax", hi);
        }
        json_t *record = json_pack("{s:i, s:o, s:I, s:o, s:I, s:o, s:i, s:o, s:o, s:o, s:o, s:s, s:o}", "step", ws->step,
                                  "loss", json_num(ws->loss), "tokens", (json_int_t)ws->global.tokens, ranks_key,
                                  rank_tokens, "sequences", (json_int_t)ws->global.sequences, "seconds",
                                  seconds_us(ws->seconds), "updates", p->updates, "elapsed", seconds_us(elapsed),
                                  "tokens_per_s", json_num(round(tokens_per_s * 10) / 10), "ms_per_step",
                                  json_num(round(done > 0 ? 1e6 * elapsed / done : 0) / 1e3), "eta_seconds",
                                  json_num(round(eta * 1e3) / 1e3), "time", when, "window_split", split);
        if (p->startup.total > 0 && record) {  // once, in the run's first line
            const StartupSplit *s = &p->startup;
            json_object_set_new(record, "startup", json_pack("{s:o, s:o, s:o, s:o, s:o}", "mpi_init", seconds_us(s->mpi_init),
                                                             "config", seconds_us(s->config), "agree", seconds_us(s->agree),
                                                             "setup", seconds_us(s->setup), "total", seconds_us(s->total)));
            p->startup.total = 0;
        }
        if (p->init_from && record) {  // once, in the run's first line: where θ0 came from
            json_object_set_new(record, "init_from", json_pack("{s:o, s:s}", "path", json_text(p->init_from, NULL), "digest",
                                                               p->init_digest));
            p->init_from = NULL;
        }
        if (p->eval && record) {  // train.eval_every: the whole validation split, exact (evaluation.h)
            const SplitEval *e = p->eval;
            json_object_set_new(record, "validation",
                                json_pack("{s:o, s:o, s:o, s:o, s:I, s:I, s:o}", "loss", json_num(e->loss), "bits_per_token",
                                          json_num(e->bits_per_token), "bits_per_byte", json_num(e->bits_per_byte),
                                          "token_accuracy", json_num(e->accuracy), "tokens", (json_int_t)e->tokens,
                                          "sequences", (json_int_t)e->sequences, "seconds", seconds_us(e->seconds)));
        }
        if (p->eval && p->best && record) json_object_set_new(record, "best", json_true());  // artifacts/best is this step's
        if (p->eval && p->best_error && record) {  // the lowest so far, but artifacts/best is still an earlier step's
            json_object_set_new(record, "best", json_false());
            json_object_set_new(record, "best_error", json_string(p->best_error));
        }
        if (record) json_object_set_new(record, "lr", json_num(ws->lr));  // the schedule's rate of this update
        if (record && !isnan(ws->grad_norm))  // train.grad_clip: the global norm before the clip
            json_object_set_new(record, "grad_norm", json_num(ws->grad_norm));
        if (p->config_digest[0] && record) json_object_set_new(record, "config_digest", json_string(p->config_digest));
        // A failed write shows in the stream's error flag, which the caller checks (log_check).
        json_write_line(jsonl, record, 9);
    }
    if (p->step == p->first_step + 1 || p->step % p->every == 0 || p->step == p->stop_at || p->eval) {
        int since = p->step - p->last_print_step;
        double ms = since > 0 ? 1e3 * (now - p->last_print) / since : 0;  // over the steps since the last line
        char eta_text[32];
        format_duration(eta_text, sizeof eta_text, eta);
        int width = snprintf(NULL, 0, "%d", p->updates);
        char val[96] = "", norm[40] = "";
        if (!isnan(ws->grad_norm)) snprintf(norm, sizeof norm, "  norm %.4f", ws->grad_norm);
        if (p->eval && isnan(p->eval->bits_per_byte))
            snprintf(val, sizeof val, "  val %.5f (%.4f bits/token)", p->eval->loss, p->eval->bits_per_token);
        else if (p->eval) snprintf(val, sizeof val, "  val %.5f (%.4f bits/byte)", p->eval->loss, p->eval->bits_per_byte);
        if (p->eval && p->best) snprintf(val + strlen(val), sizeof val - strlen(val), "  best");
        else if (p->eval && p->best_error) snprintf(val + strlen(val), sizeof val - strlen(val), "  best not written");
        say("  step %*d/%d  loss %.5f  lr %.3e%s  tokens %6lld  %8.0f tokens/s  %7.1f ms/step  ETA %s%s\n", width, p->step,
            p->updates, ws->loss, ws->lr, norm, (long long)ws->global.tokens, tokens_per_s, ms, eta_text, val);
        p->last_print = now;
        p->last_print_step = p->step;
    }
}

void train_progress_summary(const TrainProgress *p, const char *run) {
    double elapsed = now_seconds() - p->start;
    int steps = p->step - p->first_step;
    char took[32];
    format_duration(took, sizeof took, elapsed);
    say("train (%s): summary: %d step%s (%d..%d of %d) in %s, %.0f tokens/s, %.1f ms/step, final loss %.5f\n", run, steps,
        steps == 1 ? "" : "s",
        steps ? p->first_step + 1 : p->first_step, p->step, p->updates, took, elapsed > 0 ? (double)p->tokens / elapsed : 0,
        steps ? 1e3 * elapsed / steps : 0, p->loss);
}
