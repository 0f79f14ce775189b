// config.c — `config`: the resolved config, every key with its value and where that value
// comes from (the file and line, a --set, or the default), as YAML that reads back to the
// same config (git config --show-origin; pip config list).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/config.h"

// The comment on an `auto` value: what it resolves to here.
static void auto_note(const Config *cfg, const char *key, char *out, size_t len) {
    out[0] = 0;
    if (!strcmp(key, "train.world_size"))
        snprintf(out, len, "; auto: the ranks launched (in one process: %d, %s)", cfg->train.world_size,
                 !cfg->train.bands_auto ? "one per train.rank_bands"
                 : cfg->train.world_size_from_run ? "the run's, from its logs" : "the global sampler decides no data by W");
    else if (!strcmp(key, "train.checkpoint_every"))
        snprintf(out, len, "; auto: every %d updates (max(50, ceil(U/10)), U = %d)", config_checkpoint_every(cfg), cfg->train.updates);
    else if (!strcmp(key, "train.eval_every"))
        snprintf(out, len, "; auto: every %d updates and the last, where the validation split costs less than the training reads",
                 config_auto_every(cfg->train.updates));
}

static int config_run(App *app) {
    const Config *cfg = &app->cfg;
    int n = 0;
    ConfigKey k;
    while (config_key(n, &k) == 0) n++;
    int *origin = xcalloc((size_t)n, sizeof *origin);
    if (config_origins(cfg->source, app->sets, app->n_sets, origin))
        die(EXIT_BAD_INPUT, "%s: cannot read it again (it changed?)", cfg->source);
    Buf out = {0};
    buf_printf(&out, "#%s: every key, its value and where it comes from (a file of these lines is this config)\n",
               text_safe(hint_args()));
    for (int i = 0; i < n; i++) {
        config_key(i, &k);
        char value[8192], note[256] = "", line[8400], from[1200];
        config_key_value(cfg, i, value, sizeof value);
        if (!strcmp(k.key, "train.world_size") && cfg->train.world_size_auto) snprintf(value, sizeof value, "auto");
        if (!strcmp(k.key, "train.rank_bands") && cfg->train.bands_auto) snprintf(value, sizeof value, "auto");
        if (config_key_auto(i) && !strcmp(value, "auto")) auto_note(cfg, k.key, note, sizeof note);
        if (origin[i] > 0) snprintf(from, sizeof from, "%s:%d", cfg->source, origin[i]);
        else if (origin[i] < 0) snprintf(from, sizeof from, "--set %s", app->sets[-1 - origin[i]]);
        else snprintf(from, sizeof from, "default");
        snprintf(line, sizeof line, "%s: %s", k.key, value);
        buf_printf(&out, "%-44s # %s%s\n", line, text_safe(from), note);
    }
    char digest[65];
    config_result_digest(cfg, digest);
    buf_printf(&out, "# config digest %s (what its reports and loss curves record: config_digest)\n", digest);
    fputs(out.s, stdout);
    buf_free(&out);
    free(origin);
    return 0;
}

const Command cmd_config = {
    .name = "config",
    .run = config_run,
    .distributed = 0,
    .skips_budget = 1,  // it shows the config whatever its sizes
    .summary = "the resolved config: every key with its value (defaults included) and where it comes from (FILE:LINE, "
               "--set, default), as YAML that reads back to the same config",
};
