// commands.h — the command table of SPEC §8. main() only parses the command line,
// sets up MPI and the config, and dispatches here.
#ifndef DDPTOK_COMMANDS_H
#define DDPTOK_COMMANDS_H

#include "comm.h"
#include "config.h"
#include "corpus.h"
#include "jsonio.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *command;
    const char *config_path;
    Config cfg;
    Comm comm;
    const ComputeOps *compute;  // selected compute backend
    const char *backend;        // "cpu" or "cuda"
    // command options
    int continuous;
    const char *resume;         // checkpoint dir, "latest" or "auto"
    int fresh;                  // train --fresh: move the lineage's checkpoints aside, start at step 1
    int dual;
    int invariance;             // parity --invariance
    int dry_run;
    const char *scope;
    const char *checkpoint;     // evaluate --checkpoint DIR
    size_t max_bytes;           // bench-comm --max-bytes N (0: 64 MiB)
    double comm_timeout;        // seconds (NCCL waits)
} App;

int cmd_prepare(App *app);
int cmd_reference(App *app);
int cmd_check_loss(App *app);
int cmd_parity(App *app);
int cmd_check_empty(App *app);
int cmd_train(App *app);
int cmd_evaluate(App *app);
int cmd_exercise(App *app);
int cmd_check_env(App *app);
int cmd_bench_comm(App *app);
int cmd_check_checkpoints(App *app);
int cmd_clean(App *app);
int cmd_plot(App *app);

// The ranks of one job must run the same thing: a config edited on one node, or a GPU
// visible on some nodes only (another default backend), would train diverging replicas or
// hang in a collective. Every rank compares its config (all keys but paths.*, which may
// name node-local disks) and its resolved options with rank 0's; one that differs names
// the first difference and the whole job stops (exit 2) before any work. Collective.
void agree_on_run(App *app, const char *comm_name);

// One line: ddptok's commit, whether the CUDA backend is built in, and the MPI, HDF5,
// libyaml and OpenBLAS it runs with (`ddptok --version`, check-env).
void build_info(char *out, size_t len);

// Paths under the configured outputs/ and artifacts/ directories.
void out_path(const App *app, char *buf, size_t len, const char *rel);
void art_path(const App *app, char *buf, size_t len, const char *rel);
// Reads the corpus of this config; dies (exit 2) on every rank when it is missing or stale.
void load_corpus_or_die(App *app, Corpus *c);
// Writes outputs/<rel> as JSON atomically on rank 0 (json_write_file: takes the reference to
// j); dies on failure.
void write_json(const App *app, const char *rel, json_t *j);
// Per-tensor comparison |g − ref| ≤ atol + rtol·|ref| over P components.
typedef struct {
    int64_t compared, violations;
    double max_abs_err;
    int64_t worst;  // index of the largest violation (or largest error)
} Compare;
Compare compare_vectors(const float *g, const float *ref, size_t n, double atol, double rtol);

#ifdef __cplusplus
}
#endif
#endif
