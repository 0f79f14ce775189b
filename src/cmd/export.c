// export.c — `export`: one checkpoint's model out of ddptok. --format ddptok (the default):
// safetensors (FILE) with its shape and config beside it (FILE's .json), the weights in the
// model row's order, readable by anything that reads safetensors (tests/export_check.py,
// safetensors.numpy) and loadable into the PyTorch definitions of the models
// (tests/torch/witness.py, gpt_witness.py). --format hf (model.kind: gpt): a directory that
// transformers.GPT2LMHeadModel.from_pretrained loads (model/hf.h: its names, layouts and ids).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "io/jsonio.h"
#include "io/safetensors.h"
#include "model/hf.h"
#include "store/checkpoint.h"

typedef struct {
    const char *checkpoint;  // --checkpoint DIR (default: the newest of artifacts/checkpoints)
    const char *out;         // --out FILE (default: outputs/model.safetensors; hf: the directory outputs/hf)
    const char *format;      // --format ddptok|hf (NULL: ddptok)
} ExportOptions;

// A JSON string of `s` exactly (json_text), or death naming what could not be exported: the
// header must hold the text itself, not a repaired copy.
static json_t *header_text(const char *what, const char *s) {
    int exact;
    json_t *j = json_text(s, &exact);
    if (!exact) die(EXIT_BAD_INPUT, "export: %s is not UTF-8 text: cannot go into the safetensors header", what);
    return j;
}

static json_t *shape_json(const ModelShape *m, int p) {
    json_t *shape = json_array();
    for (int d = 0; d < m->rank[p]; d++) json_array_append_new(shape, json_integer((json_int_t)m->dims[p][d]));
    return shape;
}

// The string metadata that makes the file stand alone: the model's shape and the config
// that trained it (resolved YAML), where it came from.
static json_t *metadata_json(const CheckpointState *s, const char *dir) {
    char build[1024], num[32];
    build_info(build, sizeof build);
    json_t *meta = json_object();
    json_object_set_new(meta, "format", json_string("ddptok-model"));
    json_object_set_new(meta, "producer", header_text("the build line", build));
    json_object_set_new(meta, "kind", json_string(model_kind_names[s->m.kind]));
    Buf names = {0};
    for (int p = 0; p < s->m.n_tensors; p++) buf_printf(&names, "%s%s", p ? "," : "", s->m.name[p]);
    json_object_set_new(meta, "tensors", json_string(names.s));
    buf_free(&names);
    // The row's shape fields (model.h), then the size and the step.
    for (int i = 0; i < s->m.n_fields + 2; i++) {
        const char *key = i < s->m.n_fields ? s->m.field[i].key : i == s->m.n_fields ? "parameters" : "step";
        long long v = i < s->m.n_fields ? s->m.field[i].value : i == s->m.n_fields ? (long long)s->m.total : s->step;
        snprintf(num, sizeof num, "%lld", v);
        json_object_set_new(meta, key, json_string(num));
    }
    json_object_set_new(meta, "checkpoint", header_text("the checkpoint's path", dir));
    json_object_set_new(meta, "data_lock", header_text("the data lock", s->lock));
    json_object_set_new(meta, "config", header_text("the checkpoint's config", s->config_yaml));
    return meta;
}

// The safetensors bytes of θ in the row's tensors, in a new buffer of *len bytes.
static char *model_image(const CheckpointState *s, const char *dir, size_t *len) {
    const ModelShape *m = &s->m;
    StTensorOut t[MODEL_MAX_TENSORS];
    for (int p = 0; p < m->n_tensors; p++) {
        t[p] = (StTensorOut){.name = m->name[p], .rank = m->rank[p], .data = s->theta + m->offset[p]};
        for (int d = 0; d < m->rank[p]; d++) t[p].dims[d] = m->dims[p][d];
    }
    return safetensors_image(t, m->n_tensors, metadata_json(s, dir), len);
}

// FILE.json beside FILE (model.safetensors -> model.json; any other name gets ".json").
static void beside_path(const char *file, char *out, size_t len) {
    size_t n = strlen(file), ext = strlen(".safetensors");
    if (n > ext && !strcmp(file + n - ext, ".safetensors")) n -= ext;
    snprintf(out, len, "%.*s.json", (int)n, file);
}

#define EXPORT_PATH_MAX 1099  // export_run's buffers (1100 bytes with the NUL)

// The options' paths fit in export_run's buffers, the run and --check alike
// (Command.check_options): a path cut there would name another one (another checkpoint).
static void export_check(const App *app) {
    const ExportOptions *o = app->opts;
    if (o->checkpoint && strlen(o->checkpoint) > EXPORT_PATH_MAX)
        die(EXIT_BAD_INPUT, "export --checkpoint %s: path too long (at most %d bytes)", o->checkpoint, EXPORT_PATH_MAX);
    if (o->out && !o->out[0])  // was two lines from the HF writer ("": cannot create directory, then cannot create the directory)
        die(EXIT_BAD_INPUT, "export --out '': an empty path: expected the %s to write", o->format && !strcmp(o->format, "hf")
            ? "Hugging Face directory" : "safetensors file");
    if (o->out && strlen(o->out) > EXPORT_PATH_MAX)
        die(EXIT_BAD_INPUT, "export --out %s: path too long (at most %d bytes)", o->out, EXPORT_PATH_MAX);
    if (o->format && !strcmp(o->format, "hf") && app->cfg.model.kind != MODEL_GPT)
        die(EXIT_BAD_INPUT, "export --format hf: %s trains model.kind %s; the Hugging Face export is GPT2LMHeadModel (model.kind: gpt)",
            app->config_path, model_kind_names[app->cfg.model.kind]);
}

static int export_run(App *app) {
    const ExportOptions *o = app->opts;
    char dir[EXPORT_PATH_MAX + 1], path[1200], file[EXPORT_PATH_MAX + 1], meta_path[1200];
    if (o->checkpoint) {
        snprintf(dir, sizeof dir, "%s", o->checkpoint);  // fits: export_check
        for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/';) dir[--n] = 0;
    } else {
        char root[1024], train[HINT_MAX];
        art_path(app, root, sizeof root, "checkpoints");
        int step = checkpoint_latest(&app->comm, root, 0, dir, sizeof dir);
        if (step == -1)
            die(EXIT_BAD_INPUT, "export: no checkpoint under %s to export: train a model first: run `%s` (or name one: "
                "export --checkpoint DIR)", root, hint_command(train, sizeof train, "train", app->cfg.train.world_size, NULL));
        if (step == -2) die(EXIT_BAD_INPUT, "export: no intact checkpoint under %s (each one is damaged, see above)", root);
    }
    checkpoint_rank_path(path, sizeof path, dir, 0);
    if (access(path, F_OK) != 0)
        die(EXIT_BAD_INPUT, "export --checkpoint %s: no checkpoint there (expected a step-NNNN directory with rank-0000.h5)", dir);
    CheckpointState s;
    if (checkpoint_load(path, &s)) stop(EXIT_BAD_INPUT);  // it said why
    if (o->out) snprintf(file, sizeof file, "%s", o->out);  // fits: export_check
    else out_path(app, file, sizeof file, "model.safetensors");
    beside_path(file, meta_path, sizeof meta_path);

    if (o->format && !strcmp(o->format, "hf")) {
        char hf[EXPORT_PATH_MAX + 1], build[1024];
        if (o->out) snprintf(hf, sizeof hf, "%s", o->out);  // fits: export_check
        else out_path(app, hf, sizeof hf, "hf");
        build_info(build, sizeof build);
        json_t *prov = json_pack("{s:o, s:i, s:o, s:s, s:s, s:o}", "checkpoint", header_text("the checkpoint's path", dir), "step", s.step,
                                 "producer", header_text("the build line", build), "data_lock", s.lock, "ids",
                                 "HF id = ddptok id - 1; HF id vocab_size - 1 = ddptok's begin id 0 (bos, eos)", "config",
                                 header_text("the checkpoint's config", s.config_yaml));
        if (hf_export(hf, &s.m, s.theta, &s.cfg, prov)) stop(EXIT_BAD_INPUT);  // it said why
        say("export: step-%d model of %s -> %s/ (Hugging Face GPT2LMHeadModel: config.json, model.safetensors; %zu parameters)\n",
            s.step, text_safe(dir), text_safe(hf), s.m.total);
        checkpoint_state_free(&s);
        return 0;
    }
    size_t len;
    char *image = model_image(&s, dir, &len);
    if (write_file_atomic(file, image, len)) stop(EXIT_BAD_INPUT);  // it said why
    free(image);
    json_t *tensors = json_array();
    for (int p = 0; p < s.m.n_tensors; p++)
        json_array_append_new(tensors, json_pack("{s:s, s:o, s:I}", "name", s.m.name[p], "shape", shape_json(&s.m, p),
                                                 "offset", (json_int_t)s.m.offset[p]));
    json_t *shape = json_object();  // the row's shape fields, then the size
    for (int i = 0; i < s.m.n_fields; i++) json_object_set_new(shape, s.m.field[i].key, json_integer(s.m.field[i].value));
    json_object_set_new(shape, "parameters", json_integer((json_int_t)s.m.total));
    char weights[1100];
    const char *slash = strrchr(file, '/');
    snprintf(weights, sizeof weights, "%s", slash ? slash + 1 : file);
    json_t *meta = json_pack("{s:s, s:i, s:o, s:s, s:i, s:s, s:o, s:o, s:o, s:s}", "format", "ddptok-model", "version", 1,
                             "weights", header_text("the output's name", weights), "dtype", "float32", "step", s.step, "kind",
                             model_kind_names[s.m.kind], "model", shape, "tensors", tensors, "checkpoint",
                             header_text("the checkpoint's path", dir), "data_lock", s.lock);
    json_object_set_new(meta, "config", header_text("the checkpoint's config", s.config_yaml));
    if (json_write_file(meta_path, meta)) stop(EXIT_BAD_INPUT);
    say("export: step-%d model of %s -> %s (safetensors, %d tensors, %zu parameters, %zu bytes) and %s\n", s.step, text_safe(dir), text_safe(file),
        s.m.n_tensors, s.m.total, len, text_safe(meta_path));
    checkpoint_state_free(&s);
    return 0;
}

const Command cmd_export = {
    .name = "export",
    .run = export_run,
    .distributed = 0,
    .summary = "a checkpoint's model as safetensors (the newest checkpoint, or --checkpoint DIR) -> outputs/model.safetensors "
               "(or --out FILE), its shape and config beside it -> outputs/model.json",
    .options = (const CommandOption[]){
        OPTION_STRING("--checkpoint", ExportOptions, checkpoint, "DIR", "that checkpoint instead of the newest intact one"),
        OPTION_STRING("--out", ExportOptions, out, "FILE|DIR", "the safetensors file (default outputs/model.safetensors); with --format hf the directory (default outputs/hf)"),
        OPTION_CHOICE("--format", ExportOptions, format, "ddptok|hf", ((const char *const[]){"ddptok", "hf", NULL}),
                      "ddptok: safetensors in the model's own layout and a .json beside it (default); hf: a Hugging Face "
                      "GPT2LMHeadModel directory (model.kind: gpt)"),
        OPTION_END,
    },
    .opts_size = sizeof(ExportOptions),
    .outputs = (const CommandOutput[]){{UNDER_OUTPUTS, "model.safetensors", 0}, {UNDER_OUTPUTS, "model.json", 0}, {UNDER_OUTPUTS, "hf", 1}, {0}},
    .check_options = export_check,
};
