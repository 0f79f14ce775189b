// bench_replay.c — what checking a checkpoint's sampler state costs (checkpoint_check_draws,
// which train --resume and check-checkpoints run on every rank file), at any step, without
// training that far: the state of step S is built from the sampler itself (the last window,
// the counter, the position, the hash: format 4's digest, or the running hash of format 3 and
// of the bands sampler computed by this program's own replay), then checked and timed. The
// same check is run on the state with one hex digit of its hash changed: it must be refused
// (the negative control). Exit 0 when the right state passes and the wrong one is refused.
//
//   bench_replay CONFIG STEP VERSION [--set KEY=VALUE ...]     (VERSION 3 or 4)
//
// e.g. the figure of docs/checkpoints.md: bench_replay configs/tiny.yaml 1000000 4 --set
// train.sampler=global --set train.global_batch=1024 --set data.splits.train=20000 --set
// train.updates=1000000
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/sampler.h"
#include "data/synthetic.h"
#include "store/rank_file.h"

int main(int argc, char **argv) {
    if (argc < 4) return fprintf(stderr, "usage: bench_replay CONFIG STEP VERSION [--set KEY=VALUE ...]\n"), 2;
    char *sets[32];
    int n_sets = 0;
    for (int i = 4; i + 1 < argc && n_sets < 32; i += 2)
        if (!strcmp(argv[i], "--set")) sets[n_sets++] = argv[i + 1];
    Config cfg;
    char err[1024];
    if (config_load(&cfg, argv[1], sets, n_sets, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    long long step = atoll(argv[2]);
    int version = atoi(argv[3]), global = cfg.train.sampler == SAMPLER_GLOBAL;
    Corpus corpus;
    corpus_generate(&corpus, &cfg);  // sealed: its data lock computed

    // The state of step `step`, from the sampler itself.
    CheckpointState s;
    memset(&s, 0, sizeof s);
    s.version = version, s.step = (int)step, s.rank = 0, s.world_size = cfg.train.world_size, s.cfg = cfg;
    s.config_yaml = config_to_yaml(&cfg);
    sampler_window_shape(&cfg, &s.A, &s.B);
    size_t per = (size_t)s.A * s.B;
    s.last = xmalloc(per * sizeof *s.last);
    for (size_t i = 0; i < per; i++) s.last[i] = -1;
    Sampler sm;
    if (sampler_init(&sm, &cfg, &corpus, 0)) return 2;
    double t0 = now_seconds();
    if (global && version >= 4) {
        if (step > 0) sampler_window_at(&sm, (uint64_t)step - 1, s.last);
        sm.rng.counter = (uint64_t)step;
        sampler_windows_digest(&sm, cfg.seed, (uint64_t)step, s.windows_hash);
    } else {
        window_hash_init(s.windows_hash);
        for (long long u = 0; u < step; u++) sampler_next(&sm, s.last), window_hash_add(s.windows_hash, s.last, per);
    }
    double built = now_seconds() - t0;
    sampler_position(&sm, (uint64_t)step, &s.epoch, &s.window);
    s.sampler_rng = sm.rng;
    sampler_free(&sm);

    t0 = now_seconds();
    int rc = checkpoint_check_draws("bench", &s, &corpus);
    double checked = now_seconds() - t0;
    s.windows_hash[0] = s.windows_hash[0] == '0' ? '1' : '0';  // the negative control
    error_capture(1);
    t0 = now_seconds();
    int rc_bad = checkpoint_check_draws("bench", &s, &corpus);
    double refused = now_seconds() - t0;
    error_capture(0);
    printf("bench_replay: %s sampler, A x B = %d x %d, step %lld, format %d: checked in %.6f s (%s), the changed hash "
           "refused in %.6f s (%s); the state built in %.3f s\n", global ? "global" : "bands", s.A, s.B, step, version, checked,
           rc ? "REFUSED" : "ok", refused, rc_bad ? "refused" : "ACCEPTED", built);
    return rc == 0 && rc_bad != 0 ? 0 : 1;
}
