// main.c — ddptok's entry point: parse the command line, set up MPI and the config,
// check the number of ranks, pick the backends, and dispatch to the command.
#include <cblas.h>
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/claim.h"
#include "app/commands.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/fs.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/budget.h"
#include "io/h5io.h"
#include "job/cuda_api.h"
#include "job/lifecycle.h"
#include "model/hf.h"
#include "model/workload.h"

#define DDPTOK_COMMAND_ROW(name) &cmd_##name,
static const Command *const commands[] = {DDPTOK_COMMANDS(DDPTOK_COMMAND_ROW)};
#undef DDPTOK_COMMAND_ROW
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

// The options every command takes (options.h); main's own modes, --version and --check, are
// the first argument instead.
typedef struct {
    const char *config_path;  // --config FILE
    OptionList sets;          // --set KEY=VALUE, in order
    const char *backend;      // --backend cpu|cuda (NULL: chosen by the GPUs, backend_select)
    const char *comm;         // --comm mpi|nccl (NULL: by the backend)
    double comm_timeout;      // --comm-timeout SEC
} CommonOptions;

static const CommandOption common_options[] = {
    OPTION_STRING("--config", CommonOptions, config_path, "FILE", "the YAML config, e.g. configs/minimum.yaml", .required = 1),
    OPTION_LIST("--set", CommonOptions, sets, "KEY=VALUE", "override a config key, dotted as in the YAML (repeatable)"),
    OPTION_STRING("--backend", CommonOptions, backend, "cpu|cuda", "compute backend (default: cuda when built in and a GPU is present)"),
    OPTION_STRING("--comm", CommonOptions, comm, "mpi|nccl", "reduction backend (default: nccl with cuda, mpi with cpu)"),
    OPTION_DOUBLE("--comm-timeout", CommonOptions, comm_timeout, "SEC", 0.1, 1e6, "a number of seconds",
                  "how long one collective may wait for the other ranks (default 300; exit 4)"),
    OPTION_HELP("this text", .alias = "-h"),
    OPTION_END,
};

// "run/ddprun -np W train --config FILE ...", with the binary and the launcher as this user
// can type them here (hint.h).
static void command_usage(Buf *b, const Command *cmd) {
    char launcher[HINT_MAX];
    hint_launcher(launcher, sizeof launcher);
    if (cmd->distributed == 1) buf_printf(b, "%s %s --config FILE [--set KEY=VALUE]...", launcher, cmd->name);
    else buf_printf(b, "%s%s%s %s --config FILE [--set KEY=VALUE]...", cmd->distributed == DISTRIBUTED_ANY ? "[" : "",
                    cmd->distributed == DISTRIBUTED_ANY ? launcher : hint_program(), cmd->distributed == DISTRIBUTED_ANY ? "]" : "",
                    cmd->name);
    Buf own = {0};
    options_usage(&own, cmd->options);
    if (own.n) buf_printf(b, " %s", own.s);
    buf_free(&own);
}

// "outputs/data/ artifacts/checkpoints.old-*/": what the command declares it writes.
static void command_writes(Buf *b, const Command *cmd) {
    for (const CommandOutput *o = cmd->outputs; o && o->root; o++)
        buf_printf(b, "%s%s/%s%s", b->n ? " " : "", o->root == UNDER_OUTPUTS ? "outputs" : "artifacts", o->name, o->is_dir ? "/" : "");
}

// Where the shipped configs are, for the help: a bare --config name is looked up there.
static void shipped_configs_line(FILE *f) {
    char dir[1024], names[2048];
    if (shipped_configs_dir(dir, sizeof dir) == 0 && shipped_configs_names(dir, names, sizeof names) == 0)
        fprintf(f, "\nconfigs shipped with ddptok: %s (%s; --config NAME finds them there when NAME is not a file here)\n",
                dir, names);
}

static void usage(FILE *f) {
    char launcher[HINT_MAX];
    fprintf(f,
            "usage: %s COMMAND --config FILE [--set KEY=VALUE]... [options]\n"
            "       %s COMMAND ...   (the distributed commands, W ranks)\n\n"
            "commands:\n", hint_program(), hint_launcher(launcher, sizeof launcher));
    for (int i = 0; i < N_COMMANDS; i++) {
        const Command *cmd = commands[i];
        fprintf(f, "  %-18s %s %s\n", cmd->name, cmd->distributed == DISTRIBUTED_ANY ? "[N ranks]" : cmd->distributed ? "[W ranks]" : "[1 rank] ", cmd->summary);
        options_help(f, cmd->options, 6);
    }
    fprintf(f, "\noptions (every command):\n");
    options_help(f, common_options, 2);
    // main's modes: its first argument, not an option of a command
    fprintf(f, "  %-18s  %s\n", "--version", "the build and its libraries (ddptok --version)");
    fprintf(f, "  %-18s  %s\n", "--check CMD ...", "check the command line and the config only, do nothing (exit 0: valid)");
    fprintf(f,
            "\nexit codes: 0 ok, 1 a check failed, 2 bad input, 3 globally empty window,\n"
            "            4 communication failure, 70 internal error,\n"
            "            75 stopped on request (SIGUSR1, Ctrl-C, SIGTERM) after a checkpoint: resume with --resume latest\n");
    shipped_configs_line(f);
}

static void command_help(const Command *cmd) {
    Buf b = {0};
    command_usage(&b, cmd);
    printf("usage: %s\n\n%s\n", b.s, cmd->summary);
    if (cmd->options) {
        printf("\noptions:\n");
        options_help(stdout, cmd->options, 2);
    }
    printf("\noptions of every command:\n");
    options_help(stdout, common_options, 2);
    b.n = 0;
    command_writes(&b, cmd);
    char clean[HINT_MAX];
    if (b.n)
        printf("\nwrites: %s\n  (outputs/ is paths.outputs, artifacts/ is paths.artifacts; `%s` removes what ddptok recorded "
               "making of them)\n", b.s, hint_command(clean, sizeof clean, "clean", 0, " --scope generated"));
    buf_free(&b);
    shipped_configs_line(stdout);
}

// Backends: CPU compute + MPI reductions are always built; CUDA + NCCL when compiled in,
// as a module opened only for the cuda backend (job/cuda_api.h). The compute backend is the
// config's model row's (model.h): its CPU ops, or the module's CUDA twin of that model.
// Default: cuda + nccl when a GPU is visible (gpus > 0), else cpu + mpi. Sets app->compute
// and returns the comm backend's name. What needs no GPU is checked first (the names, the
// build, train.first_layer, --comm), so --check (gpus < 0: not counted; without --backend
// it checks cpu, or cuda with --comm nccl) and a machine without a GPU refuse a command line
// for the same reason a run on a GPU machine would.
static const char *backend_select(App *app, const char *comm_name, int gpus) {
    const char *name = app->backend;
    if (!name) name = gpus > 0 || (gpus < 0 && comm_name && !strcmp(comm_name, "nccl")) ? "cuda" : "cpu";
    ModelKind kind = app->cfg.model.kind;
    if (!strcmp(name, "cpu")) app->compute = model_rows[kind]->cpu;
    else if (!strcmp(name, "cuda")) {
#ifdef DDPTOK_CUDA
        app->compute = cuda_module()->compute[kind];  // exit 2 on every rank when the module cannot be opened
        if (!app->compute)
            die(EXIT_BAD_INPUT, "%s: model.kind %s: the cuda backend has no %s yet (docs/cuda.md; use --backend cpu)",
                app->config_path, model_kind_names[kind], model_kind_names[kind]);
#else
        die(EXIT_BAD_INPUT, "--backend cuda: this ddptok was built without the CUDA backend (make CUDA=1)");
#endif
    } else die(EXIT_BAD_INPUT, "--backend %s: expected cpu or cuda", name);
    if (!app->compute->first_layers[app->cfg.train.first_layer])
        die(EXIT_BAD_INPUT, "%s: train.first_layer %s: the %s backend computes only the dense first layer (use --backend cpu, or train.first_layer dense)",
            app->config_path, first_layer_names[app->cfg.train.first_layer], name);
    if (!comm_name) comm_name = app->compute->on_device ? "nccl" : "mpi";
    if (strcmp(comm_name, "mpi") != 0 && strcmp(comm_name, "nccl") != 0)
        die(EXIT_BAD_INPUT, "--comm %s: expected mpi or nccl", comm_name);
    if (!strcmp(comm_name, "nccl") && !app->compute->on_device)
        die(EXIT_BAD_INPUT, "--comm nccl needs --backend cuda (NCCL reduces GPU buffers)");
    if (app->compute->on_device && gpus == 0)
        die(EXIT_BAD_INPUT, "--backend cuda: no GPU is visible on %s (use --backend cpu)", g_id.host);
    // A twin built and host-checked but not run on a GPU since it last changed (the GPT's
    // never; the MLP's not since it took the shared layers): until run/device-check.sh has
    // passed on one, every run that goes on with it says so, once (`--check` too).
    if (app->compute->on_device && !app->compute->device_verified && g_id.rank == 0)
        warning("model.kind %s on --backend cuda: this CUDA twin has not yet been verified on a device (run/device-check.sh checks it; docs/cuda.md)",
                model_kind_names[kind]);
    app->backend = name;
    return comm_name;
}

int main(int argc, char **argv) {
    // Before MPI_Init: a SIGUSR1 during start-up is kept (not fatal), and a rank that
    // stalls during MPI start-up cannot hang the others past --comm-timeout.
    double started = now_seconds();
    double timeout = lifecycle_init(argc, argv);
    watchdog_arm("MPI start-up (MPI_Init)");
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    identity_init(rank, world);
    hint_program_set(argv[0]);  // hints name the binary as it was invoked (hint.h)
    App app;
    memset(&app, 0, sizeof app);
    // The communicator exists before anything can fail on one rank alone (an unreadable
    // config, a bad option): such a failure then ends every rank (startup_begin/_end).
    comm_setup(&app.comm, timeout);
    watchdog_disarm();
    app.started = started, app.mpi_ready = now_seconds();
    h5_quiet();
    // One BLAS thread per rank: ranks are the unit of parallelism, and a fixed thread
    // count keeps every GEMM bit-reproducible (exact resume).
    openblas_set_num_threads(1);

    const char *comm_name = NULL;

    if (argc == 2 && !strcmp(argv[1], "--version")) {
        char info[1024];
        build_info(info, sizeof info);
        if (rank == 0) printf("%s\n", info);
        MPI_Finalize();
        return 0;
    }
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        if (rank == 0) usage(argc < 2 ? stderr : stdout);
        MPI_Finalize();
        return argc < 2 ? EXIT_BAD_INPUT : 0;
    }
    startup_begin(&app.comm);
    // --check COMMAND ...: parse the options and the config, and stop there (exit 0 when
    // they are valid): a dry run for launch files (tests/check_docker.py runs every compose
    // command through it).
    int check_only = !strcmp(argv[1], "--check");
    if (check_only) argv++, argc--;
    if (argc < 2) die(EXIT_BAD_INPUT, "--check needs a command line to check (ddptok --check COMMAND --config FILE ...)");
    const Command *cmd = NULL;
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(argv[1], commands[i]->name)) cmd = commands[i];
    if (!cmd) {
        const char *names[N_COMMANDS], *near;
        for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i]->name;
        const char *base = strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1];
        char launcher[HINT_MAX];
        if (!strncmp(base, "ddptok", 6) && argc > 2)  // `ddprun -np 2 ./ddptok train` (an older ddprun), `ddptok ddptok ...`
            die(EXIT_BAD_INPUT, "unknown command '%s': the binary is named once, then the command: `%s %s ...`, or for W ranks "
                "`%s %s ...`", argv[1], hint_program(), argv[2], hint_launcher(launcher, sizeof launcher), argv[2]);
        if ((near = closest_name(argv[1], names, N_COMMANDS)))
            die(EXIT_BAD_INPUT, "unknown command '%s' (did you mean '%s'? try: %s --help)", argv[1], near, hint_program());
        die(EXIT_BAD_INPUT, "unknown command '%s' (try: %s --help)", argv[1], hint_program());
    }
    app.command = cmd->name;
    interrupt_keep(cmd->stops_on_request);  // a Ctrl-C: a checkpoint at the next window (train), or the end now
    if (cmd->opts_size) app.opts = xcalloc(1, cmd->opts_size);
    Buf options = {0}, quoted = {0};  // the command's own options as given, for agree_on_run; quoted, for hints
    buf_printf(&options, "%s", ""), buf_printf(&quoted, "%s", "");
    CommonOptions common = {.comm_timeout = -1};  // -1: not given (300)
    const OptionTable tables[2] = {{common_options, &common, NULL, NULL}, {cmd->options, app.opts, &options, &quoted}};
    if (options_parse(cmd->name, argc, argv, 2, tables, 2)) {  // --help
        if (rank == 0) command_help(cmd);
        MPI_Finalize();
        return 0;
    }
    int timeout_given = common.comm_timeout >= 0;
    if (!timeout_given) common.comm_timeout = 300;
    app.config_path = common.config_path;
    app.backend = common.backend;
    app.comm_timeout = common.comm_timeout;
    comm_name = common.comm;
    app.options = options.s, app.options_quoted = quoted.s;
    char **sets = common.sets.items;
    int n_sets = common.sets.n;
    app.sets = sets, app.n_sets = n_sets;

    hint_args_set(app.config_path, sets, n_sets);
    if (common.backend) hint_args_add("--backend", common.backend);
    if (common.comm) hint_args_add("--comm", common.comm);
    if (timeout_given) {
        char sec[32];
        snprintf(sec, sizeof sec, "%g", common.comm_timeout);
        hint_args_add("--comm-timeout", sec);
    }
    char err[4096], located[1024];
    // train.world_size: auto is the ranks launched, for a command that runs on train.world_size ranks.
    // In one process (and for evaluate), under the bands sampler with auto bands, where W decides the
    // data: the run's own W, from its logs (below), but for the commands that make the data.
    config_launched_ranks(cmd->distributed == 1 ? (check_only && world == 1 ? 0 : world) : cmd->makes_data ? 0 : CONFIG_RANKS_FROM_RUN);
    // A shipped config by its bare name (`--config minimum.yaml`, or the README's configs/minimum.yaml
    // outside a checkout): the one beside this binary (app.h).
    config_locate(app.config_path, located, sizeof located);
    if (config_load(&app.cfg, located, sets, n_sets, err, sizeof err)) {
        char dir[1024], names[2048];
        struct stat st;
        if (stat(located, &st) != 0 && errno == ENOENT && shipped_configs_dir(dir, sizeof dir) == 0 &&
            shipped_configs_names(dir, names, sizeof names) == 0)
            die(EXIT_BAD_INPUT, "%s (the configs shipped with ddptok are in %s: --config NAME finds %s)", err, dir, names);
        die(EXIT_BAD_INPUT, "%s", err);
    }
    if (app.cfg.train.world_size_from_run) {  // train.world_size: auto, one process: the W its run had
        char which[1200];
        int W = app_run_world(&app.cfg, which, sizeof which);
        if (!W)
            die(EXIT_BAD_INPUT, "%s: train.world_size: auto with train.rank_bands: auto and the bands sampler: %s takes W from "
                "this config's run, and no log of one (%s) says it: give it: --set train.world_size=N (the -np of the run)",
                app.config_path, cmd->name, which);
        config_launched_ranks(W);
        if (config_load(&app.cfg, located, sets, n_sets, err, sizeof err)) die(EXIT_BAD_INPUT, "%s", err);
        app.cfg.train.world_size_from_run = 2;
        if (rank == 0) fprintf(stderr, "%s: train.world_size: auto: W = %d, the run's (%s)\n", cmd->name, W, text_safe(which));  // stdout may be a config
    }
    fs_roots_set(app.cfg.paths.outputs, app.cfg.paths.artifacts);  // below them, no directory is a link (base/fs.h)
    // The memory check counts the ranks that share this host: their buffers add up. --check of
    // a distributed command in one process counts train.world_size (ddprun's one host).
    int ranks_here = !cmd->distributed ? 1 : app.comm.local_size;
    if (check_only && cmd->distributed && app.comm.world == 1 && app.cfg.train.world_size > 1) ranks_here = app.cfg.train.world_size;
    if (!cmd->skips_budget && workload_check_host(&app.cfg, ranks_here, g_id.host, err, sizeof err))
        die(EXIT_BAD_INPUT, "%s", err);
    if (app.cfg.train.init_from[0] && !cmd->skips_budget) {  // what model_initial would refuse, refused now (--check too)
        ModelShape m;
        model_shape(&m, &app.cfg);
        if (hf_import(app.cfg.train.init_from, &m, NULL)) stop(EXIT_BAD_INPUT);
    }
    if (cmd->check_options) cmd->check_options(&app);
    if (check_only) {
        backend_select(&app, comm_name, -1);
        claim_roots(&app, cmd, 0);  // another config's directories are refused by --check as by the run
        startup_end(&app.comm);
        // The budget's peak per rank (what the check above held against this host's memory
        // over its ranks), before anything is allocated: docs/performance.md "Memory".
        char peak[96] = "", each_s[32], largest[400];
        if (!cmd->skips_budget) {
            format_bytes(workload_bytes(&app.cfg, largest, sizeof largest), each_s, sizeof each_s);
            snprintf(peak, sizeof peak, "; peak per rank %s (the budget)", each_s);
        }
        say("ddptok --check: %s%s: ok (%s; train.world_size %d%s)\n", cmd->name, text_safe(hint_args()),
            cmd->distributed == DISTRIBUTED_ANY ? "one process or mpirun -np N" : cmd->distributed ? "distributed: mpirun -np train.world_size"
            : "one process", app.cfg.train.world_size, peak);
        buf_free(&options);
        free(app.opts);
        free(sets);
        MPI_Finalize();
        return 0;
    }

    if (!cmd->distributed && world != 1)
        die(EXIT_BAD_INPUT, "%s runs in one process, but %d ranks were started: run it without mpirun -np", cmd->name, world);
    if (cmd->distributed == 1 && world != app.cfg.train.world_size) {
        char as_set[HINT_MAX], with_np[HINT_MAX];
        hint_command(with_np, sizeof with_np, cmd->name, app.cfg.train.world_size, app.options);
        die(EXIT_BAD_INPUT, "%s: train.world_size is %d but %d rank%s started: run `%s`, or set train.world_size: auto (the ranks "
            "launched)%s%s", app.config_path, app.cfg.train.world_size, world, world == 1 ? " was" : "s were", with_np,
            app.cfg.train.bands_auto ? "" : " with train.rank_bands: auto",
            (snprintf(as_set, sizeof as_set, " (--set train.world_size=auto%s)", app.cfg.train.bands_auto ? "" : " --set train.rank_bands=auto"), as_set));
    }

    int gpus = 0;
#ifdef DDPTOK_CUDA
    // The GPUs are counted by the module, so it is opened only for --backend cuda, or for
    // the default where this machine shows an NVIDIA driver: a CPU run maps no CUDA library.
    if (app.backend ? !strcmp(app.backend, "cuda") : cuda_driver_present()) gpus = cuda_module()->device_count();
#endif
    comm_name = backend_select(&app, comm_name, gpus);
    app.comm.timeout = app.comm_timeout;
    startup_end(&app.comm);
    app.config_ready = now_seconds();
    agree_on_run(&app, comm_name);
#ifdef DDPTOK_CUDA
    if (app.compute->on_device) {
        watchdog_arm("device and NCCL set-up");  // its MPI_Allgather has no deadline of its own
        const CudaModule *cuda = cuda_module();
        cuda->select_device(&app.comm);
        if (!strcmp(comm_name, "nccl") && cuda->nccl_init(&app.comm, app.comm_timeout))
            die(EXIT_BAD_INPUT, "cannot set up NCCL (see above)");
        watchdog_disarm();
    }
#endif
    app.run_agreed = now_seconds();
    // One config per outputs and artifacts directory (claim.h): checked, then recorded.
    claim_roots(&app, cmd, 1);

    int rc = cmd->run(&app);
    buf_free(&options);
    free(app.opts);
    free(sets);
    if (app.comm.ops->destroy) app.comm.ops->destroy(&app.comm);
    stop(rc);  // MPI_Finalize under the watchdog
}
