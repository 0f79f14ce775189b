// snapshot.c — the trainer's state in and out of a checkpoint: a snapshot published as a
// step directory, and a resume that checks a checkpoint belongs to this run before any of
// it is restored (see snapshot.h).
#include "train/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/config.h"
#include "store/checkpoint.h"

static void trainer_to_state(const Trainer *t, const char *lock, CheckpointState *s) {
    memset(s, 0, sizeof *s);
    s->step = t->step, s->world_size = t->W, s->rank = t->rank, s->A = t->sampler.A, s->B = t->sampler.B;
    s->config_yaml = config_to_yaml(t->cfg);
    snprintf(s->lock, sizeof s->lock, "%s", lock);
    s->m = t->m;
    if (!t->ops->on_device) {
        // A host backend: θ and the optimizer's states are host arrays already, and nothing
        // changes them while the file is written: borrowed, not copied (1.5 GB at GPT-2 small,
        // the peak of a run: docs/performance.md "Memory"); trainer_checkpoint gives them back.
        s->theta = t->ops->param_buffer(t->cc);
        s->opt.kind = t->opt->kind, s->opt.h = t->opt->h, s->opt.steps = t->opt->steps;
        for (int i = 0; i < optimizers[t->opt->kind].n_states; i++) s->opt.state[i] = t->opt->state[i];
    } else {
        s->theta = xmalloc(t->m.total * sizeof(float));
        t->ops->get_params(t->cc, s->theta);
        optimizer_snapshot(t->opt, &s->opt);
    }
    s->last = t->last;  // borrowed
    // Format 4: the global sampler's windows are a pure function of (seed, train split, G, k),
    // and the file holds the digest of that (checked in O(1) on load), not the running hash of
    // their ids (a replay of every window to check); the bands sampler's running hash it is.
    if (t->sampler.global) sampler_windows_digest(&t->sampler, t->cfg->seed, (uint64_t)t->step, s->windows_hash);
    else snprintf(s->windows_hash, sizeof s->windows_hash, "%s", t->windows_hash);
    sampler_position(&t->sampler, (uint64_t)t->step, &s->epoch, &s->window);
    s->sampler_rng = t->sampler.rng;
    s->dropout_rng = t->dropout;
}

// The state of `s` into the trainer (shapes already checked by trainer_resume).
static void trainer_restore(Trainer *t, const CheckpointState *s) {
    // Negative controls for the exact-resume test: DDPTOK_TEST_RESUME_SKIP names one part
    // of the state not to restore (rng, sampler, or an optimizer state tensor: momentum,
    // exp_avg, exp_avg_sq); the result must then differ.
    const char *skip = getenv("DDPTOK_TEST_RESUME_SKIP");
    skip = skip ? skip : "";
    t->step = s->step;
    t->ops->set_params(t->cc, s->theta);
    optimizer_restore(t->opt, &s->opt, skip);
    memcpy(t->last, s->last, (size_t)t->sampler.A * t->sampler.B * sizeof *t->last);
    snprintf(t->windows_hash, sizeof t->windows_hash, "%s", s->windows_hash);
    if (strcmp(skip, "sampler") != 0) t->sampler.rng = s->sampler_rng;
    if (strcmp(skip, "rng") != 0) t->dropout = s->dropout_rng;
    if (skip[0]) say("train: TEST HOOK: not restoring '%s' on resume (DDPTOK_TEST_RESUME_SKIP)\n", text_safe(skip));
}


void trainer_checkpoint(Trainer *t, const char *root, const char *lock) {
    char dir[1100];
    snprintf(dir, sizeof dir, "%s/step-%04d", root, t->step);  // checkpoint_save creates it
    if (trainer_checkpoint_to(t, dir, lock)) {  // the ranks that failed have said why; rank 0 says what it means
        if (t->rank == 0) error("step %d: checkpoint %s not written; nothing was published", t->step, dir);
        stop(EXIT_BAD_INPUT);
    }
}

int trainer_checkpoint_to(Trainer *t, const char *dir, const char *lock) {
    CheckpointState s;
    trainer_to_state(t, lock, &s);
    // Nothing non-finite is published: an update can overflow the parameters even when
    // the window's loss and gradient were finite. Replicas are identical: all agree.
    int finite = all_finite(s.theta, s.m.total);
    for (int i = 0; i < optimizers[s.opt.kind].n_states; i++) finite = finite && all_finite(s.opt.state[i], s.m.total);
    if (!finite) {
        if (t->rank == 0)
            error("step %d: the parameters after the update are not finite: the run diverged (train.optimizer.lr = %g "
                  "too high?); %s not published", t->step, t->cfg->train.hyper.lr, dir);
        stop(EXIT_CHECK_FAILED);
    }
    double t0 = now_seconds();
    int rc = checkpoint_save(t->comm, dir, &s);
    s.last = NULL;  // borrowed from the trainer
    if (!t->ops->on_device) {  // θ and the states too (trainer_to_state)
        s.theta = NULL;
        for (int i = 0; i < OPT_MAX_STATES; i++) s.opt.state[i] = NULL;
    }
    checkpoint_state_free(&s);
    if (rc) return -1;
    say("checkpoint: %s (%d rank files, %.4f s)\n", text_safe(dir), t->W, now_seconds() - t0);
    return 0;
}

// Loads this rank's file of `dir` into the trainer after checking that it belongs to this
// run. Every rank checks its own file; all agree before anyone goes on. Under the global
// sampler every rank loads rank 0's file: model, optimizer, the global stream and the
// windows drawn are the same in every rank file, and nothing in them depends on W, so the
// checkpoint resumes on any world size (elastic resume; docs/sampling.md "Elastic resume").
void trainer_resume(Trainer *t, const char *dir, const char *lock, const char *remedy) {
    char path[1200], why[2600] = "";
    int elastic = t->global;
    checkpoint_rank_path(path, sizeof path, dir, elastic ? 0 : t->rank);
    CheckpointState s;
    int bad = checkpoint_load(path, &s) != 0;
    // Rank 0's file is what every rank reads; the others' bytes are still verified (docs/checkpoints.md "intact").
    if (!bad && elastic) bad = checkpoint_verify_share(dir, s.world_size, t->rank, t->W) != 0;
    if (!bad) {
        Config stored;
        char err[512], what[512];
        int stored_ok = config_from_yaml(&stored, s.config_yaml, path, err, sizeof err) == 0;
        int stored_global = stored_ok && stored.train.sampler == SAMPLER_GLOBAL;
        if (s.world_size != t->W && !(elastic && stored_global))
            snprintf(why, sizeof why, "%s: written by %d rank%s, this run has %d: the %s sampler cannot re-partition its "
                     "windows (each rank draws its own); only train.sampler: global resumes on another world size",
                     path, s.world_size, s.world_size == 1 ? "" : "s", t->W, "bands");
        else if (s.rank != (elastic ? 0 : t->rank)) snprintf(why, sizeof why, "%s: holds rank %d, expected %d", path, s.rank, elastic ? 0 : t->rank);
        else if (!corpus_lock_accepts(t->corpus, t->cfg, s.lock))
            snprintf(why, sizeof why, "%s: data lock %.12s… differs from the current data's %.12s… (the corpus was prepared or "
                     "imported again since, or with other data keys)%s%s", path, s.lock, lock, remedy ? ": " : "", remedy ? remedy : "");
        else if (!stored_ok)
            snprintf(why, sizeof why, "%s: stored config unreadable: %s", path, err);
        else if (config_diff_training(&stored, t->cfg, what, sizeof what))
            snprintf(why, sizeof why, "%s: config differs (checkpoint vs now) at %s%s%s", path, what, remedy ? ": " : "",
                     remedy ? remedy : "");
        else if (s.step >= t->cfg->train.updates)
            snprintf(why, sizeof why, "%s: already at step %d of %d updates: nothing to resume", path, s.step, t->cfg->train.updates);
        if (why[0]) error("%s", why), bad = 1;
        else bad = checkpoint_check_draws(path, &s, t->corpus) != 0;  // the sampler replayed: last window, hash, counter
    }
    char what[1200];
    snprintf(what, sizeof what, "resuming from %s", dir);
    comm_stop_if_any(t->comm, bad, EXIT_BAD_INPUT, what);
    trainer_restore(t, &s);
    checkpoint_state_free(&s);
}
