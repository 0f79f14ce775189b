// app.h — what a command gets and what every command shares: the App (config, ranks,
// backends, its own parsed options), the Command a src/cmd/<name>.c exports, and the run
// helpers (output paths, the corpus, rank agreement, JSON output, comparisons, window 1).
#ifndef DDPTOK_APP_H
#define DDPTOK_APP_H

#include "app/options.h"
#include "config/config.h"
#include "data/corpus.h"
#include "io/jsonio.h"
#include "job/comm.h"
#include "method/objective.h"
#include "model/model.h"
#include "train/trainer.h"

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
    double comm_timeout;        // seconds (NCCL waits)
    const char *options;        // the command's own options as given (" --resume latest"): every rank must agree
    const char *options_quoted; // the same, each word shell-quoted as hints write them
    char *const *sets;          // the --set KEY=VALUE arguments as given, in order (n_sets)
    int n_sets;
    void *opts;                 // the command's parsed options (its Command.opts_size bytes), NULL without options
    // now_seconds() at main's entry and at the end of its start-up phases: MPI_Init and the
    // communicators, the command line and config (to the backend agreement), the run
    // agreement and device set-up (train's JSONL "startup", progress.h)
    double started, mpi_ready, config_ready, run_agreed;
} App;

// One thing a command writes, named relative to paths.outputs or paths.artifacts. `clean`
// removes what these name and ddptok recorded making (base/made.h), nothing else; `ddptok
// CMD --help` lists them.
typedef enum { UNDER_OUTPUTS = 1, UNDER_ARTIFACTS } OutputRoot;
typedef struct {
    OutputRoot root;   // 0 ends a list
    const char *name;  // its name in the root; a pattern (fnmatch) where a part varies: "checkpoints.old-*"
    int is_dir;
} CommandOutput;

// A command: src/cmd/<name>.c exports one `const Command cmd_<name>` and commands.h lists
// it. main() parses the common options and the command's own (options.h: into zeroed
// opts_size bytes at App.opts), loads the config and calls run.
// Command.distributed: runs on any number of ranks, each doing a share of the same work
// (evaluate: its numbers do not depend on how many).
enum { DISTRIBUTED_ANY = 2 };
typedef struct {
    const char *name;
    int (*run)(App *app);                  // returns the exit code
    int distributed;                       // 1: runs on train.world_size ranks; 0: one process; DISTRIBUTED_ANY: any number
    const char *summary;                   // `ddptok --help` and `ddptok CMD --help`
    const CommandOption *options;          // its options, up to {.kind = OPT_END}; NULL: none
    size_t opts_size;                      // the struct its options' offsets fill
    const CommandOutput *outputs;          // what it writes, up to {0}; NULL: nothing
    // After its options and the config are read, for --check and the run alike: dies (exit 2,
    // one line) on what the run would refuse beyond the table's ranges (a size over budget).
    void (*check_options)(const App *app);
    int skips_budget;                      // 1: runs whatever the config's sizes (clean)
    // 1: a stop request (SIGUSR1, a first Ctrl-C or SIGTERM, the launcher's stop file) stops it at
    // its next window with a checkpoint (train); 0: SIGINT and SIGTERM end it at once.
    int stops_on_request;
    // 1: what it writes depends on no config's results (exercise, check-loss: demonstrations):
    // it may write into a directory another config's results are in (claim.h).
    int any_config;
    // 1: it acts on both roots without writing a result (clean): refused where they are another
    // config's, and records none (claim.h).
    int checks_every_root;
    // 1: it makes the data W decides (prepare, import): in one process, train.world_size: auto under
    // the bands sampler with auto bands is refused there, not taken from a run's logs (main.c).
    int makes_data;
} Command;

// The ranks of one job must run the same thing: a config edited on one node, or a GPU
// visible on some nodes only (another default backend), would train diverging replicas or
// hang in a collective. Every rank compares its config (all keys but paths.*, which may
// name node-local disks) and its resolved options with rank 0's; one that differs names
// the first difference and the whole job stops (exit 2) before any work. Collective.
void agree_on_run(App *app, const char *comm_name);

// One line: ddptok's commit, whether the CUDA backend is built in, and the MPI, HDF5,
// libyaml and OpenBLAS it runs with (`ddptok --version`, check-env).
void build_info(char *out, size_t len);

// The configs shipped with this binary: a checkout's configs/ beside it, or make install's
// PREFIX/share/ddptok/configs beside PREFIX/bin; 0 (the folder into out), or -1 when neither is there.
int shipped_configs_dir(char *out, size_t len);
// The names of the shipped configs (every *.yaml in that folder, sorted, ", "-separated) into
// out: read from the folder, so the help cannot drift from what ships; 0, or -1 without one.
int shipped_configs_names(const char *dir, char *out, size_t len);
// The config file `given` names: itself when something is there; else, for a bare name
// (`minimum.yaml`, `minimum`) or one under `configs/` (the README's), the shipped config of
// that name when there is one; else `given` (its error names it). Into out (returned).
const char *config_locate(const char *given, char *out, size_t len);

// "WHO: to train on it, run `run/ddprun -np W train --config ...`": what prepare and import
// end with, as this user can run it (hint.h).
void say_next_train(const App *app, const char *who);

// Paths under the configured outputs/ and artifacts/ directories.
// train.world_size: auto in one process under the bands sampler with rank_bands: auto
// (train.world_size_from_run): the W of this config's run, read from its logs (the first record
// of outputs/train/{interrupted,resumed,continuous}.jsonl whose config_digest is this config's at
// its W), the log's path in `which`; 0 where no log says it (`which`: where it looked).
int app_run_world(const Config *cfg, char *which, size_t len);
void out_path(const App *app, char *buf, size_t len, const char *rel);
void art_path(const App *app, char *buf, size_t len, const char *rel);
// Reads the corpus of this config; dies (exit 2) on every rank when it is missing or stale.
void load_corpus_or_die(App *app, Corpus *corpus);
// A check_options hook for the commands that build the whole corpus in memory (prepare,
// exercise): the corpus, n·(max_length·4 + 9) bytes, three times (HDF5 holds the file image
// twice while writing), within the memory budget; other commands read it on demand.
void check_corpus_in_memory(const App *app);
// Writes outputs/<rel> as JSON atomically on rank 0 (json_write_file: takes the reference to
// j); dies on failure.
void write_json(const App *app, const char *rel, json_t *j);

// Which config and data made a report (parity.json, empty.json, a matrix cell's
// parity.json, invariance-wW.json, grads.h5's attributes): {"config": {"path": as given,
// "digest": config_run_digest, "yaml": the resolved config, "overrides": [its --set but
// paths.*]}, "data_lock": the corpus's}. report_identity_add puts both into `report`.
void report_identity_add(const App *app, const Corpus *corpus, json_t *report);
// 0 when `report` was made by this config (a matrix cell, `cell` = 1: this config with the
// cell's own overrides) on this corpus; else -1 and one phrase in `why`: "another config's
// (configs/fortunes.yaml: differs at data.vocab_size: 128 here vs 257)", "made on other data
// (...)", "records no config or data lock (made before ddptok recorded them)".
// train.world_size: auto, resolved in one process, takes the report's W.
int report_identity_check(const App *app, const Corpus *corpus, const json_t *report, int cell, char *why, size_t len);
// The stored config of another run (a checkpoint's) against this one, the same way: 0, or -1
// with why ("differs at KEY: here vs there", "made on other data").
int config_identity_check(const App *app, const Corpus *corpus, const Config *other, const char *other_lock, char *why,
                          size_t len);

// Files ddptok reads back (their own functions: tests/fuzz/fuzz_json.c runs them on hostile bytes).
// evaluate: the protocol's reports that report.json gathers — outputs/parity.json,
// outputs/empty.json and the negative-control matrix outputs/matrix/<cell>/parity.json
// (run/protocol.sh). An absent report is NULL; one that is there but not JSON, or nested
// deeper than ddptok writes, is said in one line, NULL and not ok. The caller owns parity,
// empty and matrix.
typedef struct {
    json_t *parity, *empty, *matrix;  // matrix: {cell: its parity.json or null}
    int parity_ok, empty_ok;          // its "ok" is true
    int cells, cells_ok;
} ProtocolReports;
void protocol_reports_read(const App *app, ProtocolReports *r);
// plot: the loss curve of one run from its JSONL (one {"step", "loss", ...} per line; a line
// that is not one, a run cut mid-write, is skipped) into a two-column .dat, streamed (a log
// of any length); returns the points written, 0 when the JSONL does not exist (nothing
// written); dies (exit 2) when the JSONL is there but cannot be read, or the .dat cannot be
// written.
int64_t plot_jsonl_to_dat(const char *jsonl, const char *dat);

// Runs window 1 from θ0 with `mode` through the distributed path; returns the averaged
// gradient (P) in `grad`, the statistics in `ws` and, if `f`, the facts (whose per-rank
// counts go to `rank` (W)). Returns 0 or EXIT_EMPTY_WINDOW (on every rank). Collective.
int window_gradient(App *app, const Config *cfg, const Corpus *corpus, const float *theta0, Normalization mode, float *grad,
                    WindowStats *ws, WindowFacts *f, Counts *rank);
// The same; per_rank_clip: parity's per-rank-clip control (train.grad_clip > 0): each rank
// clips its own gradient by its own norm before the all-reduce (ws->grad_norm: this rank's).
int window_gradient_clipped(App *app, const Config *cfg, const Corpus *corpus, const float *theta0, Normalization mode,
                            int per_rank_clip, float *grad, WindowStats *ws, WindowFacts *f, Counts *rank);

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
