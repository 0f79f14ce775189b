// main.c — ddptok's entry point: parse the command line, set up MPI and the config,
// check the number of ranks, pick the backends, and dispatch to the command.
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/commands.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/hint.h"
#include "base/mem.h"
#include "base/report.h"
#include "config/budget.h"
#include "io/h5io.h"
#include "job/cuda_api.h"
#include "job/lifecycle.h"

#define DDPTOK_COMMAND_ROW(name) &cmd_##name,
static const Command *const commands[] = {DDPTOK_COMMANDS(DDPTOK_COMMAND_ROW)};
#undef DDPTOK_COMMAND_ROW
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f) {
    fprintf(f,
            "usage: ddptok COMMAND --config FILE [--set KEY=VALUE]... [options]\n"
            "       mpirun -np W ddptok COMMAND ...   (for the distributed commands)\n\n"
            "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++) {
        const Command *cmd = commands[i];
        fprintf(f, "  %-18s %s %s\n", cmd->name, cmd->distributed ? "[W ranks]" : "[1 rank] ", cmd->summary);
        if (cmd->usage) fprintf(f, "  %-18s           %s\n", "", cmd->usage);
    }
    fprintf(f,
            "\noptions:\n"
            "  --config FILE        YAML config (see configs/minimum.yaml)\n"
            "  --set KEY=VALUE      override a config key, dotted as in the YAML (repeatable)\n"
            "  --backend cpu|cuda   compute backend (default: cuda when built in and a GPU is present)\n"
            "  --comm mpi|nccl      reduction backend (default: nccl with cuda, mpi with cpu)\n"
            "  --comm-timeout SEC   how long one collective may wait for the other ranks (0.1..1e6, default 300; exit 4)\n"
            "  --help               this text;   --version   the build and its libraries\n"
            "  --check COMMAND ...  check the command line and the config only, do nothing (exit 0: valid)\n"
            "\nexit codes: 0 ok, 1 a check failed, 2 bad input, 3 globally empty window,\n"
            "            4 communication failure, 75 stopped on request (resume with --resume latest)\n");
}

static void command_help(const Command *cmd) {
    printf("usage: %sddptok %s --config FILE [--set KEY=VALUE]... %s\n\n%s\n", cmd->distributed ? "mpirun -np W " : "",
           cmd->name, cmd->usage ? cmd->usage : "", cmd->summary);
}

// The command's own option `a` (NULL if it has none of that name).
static const CommandOption *command_option(const Command *cmd, const char *a) {
    for (const CommandOption *o = cmd->options; o && o->name; o++)
        if (!strcmp(o->name, a)) return o;
    return NULL;
}

// Backends: CPU compute + MPI reductions are always built; CUDA + NCCL when compiled in,
// as a module opened only for the cuda backend (job/cuda_api.h).
// Default: cuda + nccl when a GPU is visible (gpus > 0), else cpu + mpi. Sets app->compute
// and returns the comm backend's name. What needs no GPU is checked first (the names, the
// build, train.first_layer, --comm), so --check (gpus < 0: not counted; without --backend
// it checks cpu, or cuda with --comm nccl) and a machine without a GPU refuse a command line
// for the same reason a run on a GPU machine would.
static const char *backend_select(App *app, const char *comm_name, int gpus) {
    const char *name = app->backend;
    if (!name) name = gpus > 0 || (gpus < 0 && comm_name && !strcmp(comm_name, "nccl")) ? "cuda" : "cpu";
    if (!strcmp(name, "cpu")) app->compute = &compute_cpu;
    else if (!strcmp(name, "cuda")) {
#ifdef DDPTOK_CUDA
        app->compute = cuda_module()->compute;  // exit 2 on every rank when the module cannot be opened
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

    app.comm_timeout = 300;
    const char *comm_name = NULL;
    char **sets = xmalloc((size_t)argc * sizeof *sets);
    int n_sets = 0;

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
        if ((near = closest_name(argv[1], names, N_COMMANDS)))
            die(EXIT_BAD_INPUT, "unknown command '%s' (did you mean '%s'? try: ddptok --help)", argv[1], near);
        die(EXIT_BAD_INPUT, "unknown command '%s' (try: ddptok --help)", argv[1]);
    }
    app.command = cmd->name;
    if (cmd->opts_size) app.opts = xcalloc(1, cmd->opts_size);
    Buf options = {0};  // the command's own options as given, for agree_on_run
    buf_printf(&options, "%s", "");

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const CommandOption *opt;
#define NEXT() (i + 1 < argc ? argv[++i] : (die(EXIT_BAD_INPUT, "%s %s: option %s needs a value", cmd->name, a, a), ""))
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            if (rank == 0) command_help(cmd);
            MPI_Finalize();
            return 0;
        } else if (!strcmp(a, "--config")) app.config_path = NEXT();
        else if (!strcmp(a, "--set")) sets[n_sets++] = NEXT();
        else if (!strncmp(a, "--set=", 6)) sets[n_sets++] = (char *)a + 6;
        else if (!strcmp(a, "--backend")) app.backend = NEXT();
        else if (!strcmp(a, "--comm")) comm_name = NEXT();
        else if (!strcmp(a, "--comm-timeout")) {
            const char *v = NEXT();
            char *end;
            app.comm_timeout = strtod(v, &end);
            if (!*v || *end || !comm_timeout_ok(app.comm_timeout))
                die(EXIT_BAD_INPUT, "--comm-timeout %s: expected a number of seconds in [0.1, 1e6]", v);
        } else if ((opt = command_option(cmd, a))) {
            const char *v = opt->takes_value ? NEXT() : NULL;
            buf_printf(&options, " %s%s%s", a, v ? " " : "", v ? v : "");
            cmd->parse_option(app.opts, a, v);
        } else die(EXIT_BAD_INPUT, "%s: unknown option '%s' (try: ddptok %s --help)", cmd->name, a, cmd->name);
#undef NEXT
    }
    if (!app.config_path) die(EXIT_BAD_INPUT, "%s: --config FILE is required", cmd->name);
    app.options = options.s;

    hint_args_set(app.config_path, sets, n_sets);
    char err[1024];
    if (config_load(&app.cfg, app.config_path, sets, n_sets, err, sizeof err)) die(EXIT_BAD_INPUT, "%s", err);
    if (!cmd->skips_budget && budget_check(&app.cfg, err, sizeof err)) die(EXIT_BAD_INPUT, "%s", err);
    free(sets);
    if (check_only) {
        backend_select(&app, comm_name, -1);
        startup_end(&app.comm);
        say("ddptok --check: %s%s: ok (%s; train.world_size %d)\n", cmd->name, hint_args(),
            cmd->distributed ? "distributed: mpirun -np train.world_size" : "one process", app.cfg.train.world_size);
        buf_free(&options);
        free(app.opts);
        MPI_Finalize();
        return 0;
    }

    if (!cmd->distributed && world != 1)
        die(EXIT_BAD_INPUT, "%s runs in one process, but %d ranks were started: run it without mpirun -np", cmd->name, world);
    if (cmd->distributed && world != app.cfg.train.world_size)
        die(EXIT_BAD_INPUT, "%s: train.world_size is %d but %d ranks were started (mpirun -np %d, or --set train.world_size=%d%s)",
            app.config_path, app.cfg.train.world_size, world, app.cfg.train.world_size, world,
            app.cfg.train.bands_auto ? "" : " --set train.rank_bands=auto");

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

    int rc = cmd->run(&app);
    buf_free(&options);
    free(app.opts);
    if (app.comm.ops->destroy) app.comm.ops->destroy(&app.comm);
    stop(rc);  // MPI_Finalize under the watchdog
}
