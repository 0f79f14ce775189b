// main.c — ddptok's entry point: parse the command line, set up MPI and the config,
// check the number of ranks, pick the backends, and dispatch to the command.
#include <cblas.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "budget.h"
#include "commands.h"
#include "common.h"
#include "cuda_api.h"
#include "h5io.h"
#include "lifecycle.h"

typedef struct {
    const char *name;
    int (*run)(App *);
    int distributed;  // 1: runs on train.world_size ranks; 0: one process
    const char *options;
    const char *summary;
} Command;

static const Command commands[] = {
    {"prepare", cmd_prepare, 0, "", "corpus, plan and data lock -> outputs/data/"},
    {"reference", cmd_reference, 0, "", "initial parameters and the single-process window-1 gradient -> outputs/reference.h5"},
    {"check-loss", cmd_check_loss, 0, "", "the arithmetic of the counter-example (2 vs 2.5) and the one-parameter example"},
    {"parity", cmd_parity, 1, "[--invariance]",
     "window-1 gradient of every normalization through the distributed path vs the reference; with --invariance, the "
     "global sampler's window under every partition, A = 1, 2 and both loss units vs its one-batch reference"},
    {"train", cmd_train, 1, "[--continuous] [--resume DIR|latest|auto | --fresh]",
     "SGD updates; stops at interrupt_at unless --continuous or --resume (auto: latest, a fresh start, or nothing when "
     "finished); refuses a lineage that has checkpoints unless --resume, or --fresh (moves them aside)"},
    {"check-empty", cmd_check_empty, 1, "", "a globally empty window is rejected by all ranks; a locally empty rank still matches"},
    {"evaluate", cmd_evaluate, 0, "[--checkpoint DIR]",
     "test metrics, baselines, resume max |dtheta|, and the report -> outputs/report.json; with --checkpoint, that "
     "model's test metrics -> outputs/evaluate.json"},
    {"exercise", cmd_exercise, 0, "", "the tutorial's exercise: rank 1 goes from 12 to 36 tokens"},
    {"check-env", cmd_check_env, 1, "[--dual]", "backend, MPI world, hosts, devices and one test all-reduce"},
    {"bench-comm", cmd_bench_comm, 1, "[--max-bytes N]",
     "nccl-tests-style all-reduce sweep of the comm backend: count, gradient, 64 B .. 64 MiB; time, algbw, busbw, wrong"},
    {"check-checkpoints", cmd_check_checkpoints, 0, "", "validate every checkpoint (files, checksums, replicas, data lock, plan)"},
    {"clean", cmd_clean, 0, "--scope generated [--dry-run]", "list (and without --dry-run remove) what ddptok generated"},
    {"plot", cmd_plot, 0, "", "outputs/figure.png: loss curves and per-mode gradient error (gnuplot)"},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *f) {
    fprintf(f,
            "usage: ddptok COMMAND --config FILE [--set KEY=VALUE]... [options]\n"
            "       mpirun -np W ddptok COMMAND ...   (for the distributed commands)\n\n"
            "commands:\n");
    for (int i = 0; i < N_COMMANDS; i++) {
        fprintf(f, "  %-18s %s %s\n", commands[i].name, commands[i].distributed ? "[W ranks]" : "[1 rank] ", commands[i].summary);
        if (commands[i].options[0]) fprintf(f, "  %-18s           %s\n", "", commands[i].options);
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

static void command_help(const Command *c) {
    printf("usage: %sddptok %s --config FILE [--set KEY=VALUE]... %s\n\n%s\n", c->distributed ? "mpirun -np W " : "",
           c->name, c->options, c->summary);
}

int main(int argc, char **argv) {
    // Before MPI_Init: a SIGUSR1 during start-up is kept (not fatal), and a rank that
    // stalls during MPI start-up cannot hang the others past --comm-timeout.
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
        if (!strcmp(argv[1], commands[i].name)) cmd = &commands[i];
    if (!cmd) {
        const char *names[N_COMMANDS], *near;
        for (int i = 0; i < N_COMMANDS; i++) names[i] = commands[i].name;
        if ((near = closest_name(argv[1], names, N_COMMANDS)))
            die(EXIT_BAD_INPUT, "unknown command '%s' (did you mean '%s'? try: ddptok --help)", argv[1], near);
        die(EXIT_BAD_INPUT, "unknown command '%s' (try: ddptok --help)", argv[1]);
    }
    app.command = cmd->name;

    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
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
        } else if (!strcmp(a, "--continuous") && cmd->run == cmd_train) app.continuous = 1;
        else if (!strcmp(a, "--resume") && cmd->run == cmd_train) app.resume = NEXT();
        else if (!strcmp(a, "--fresh") && cmd->run == cmd_train) app.fresh = 1;
        else if (!strcmp(a, "--checkpoint") && cmd->run == cmd_evaluate) app.checkpoint = NEXT();
        else if (!strcmp(a, "--dual") && cmd->run == cmd_check_env) app.dual = 1;
        else if (!strcmp(a, "--max-bytes") && cmd->run == cmd_bench_comm) {
            const char *v = NEXT();
            char *end;
            double b = strtod(v, &end);
            if (*end || !(b >= 64 && b <= 1e12)) die(EXIT_BAD_INPUT, "--max-bytes %s: expected a number of bytes in [64, 1e12]", v);
            app.max_bytes = (size_t)b;
        }
        else if (!strcmp(a, "--invariance") && cmd->run == cmd_parity) app.invariance = 1;
        else if (!strcmp(a, "--dry-run") && cmd->run == cmd_clean) app.dry_run = 1;
        else if (!strcmp(a, "--scope") && cmd->run == cmd_clean) app.scope = NEXT();
        else die(EXIT_BAD_INPUT, "%s: unknown option '%s' (try: ddptok %s --help)", cmd->name, a, cmd->name);
#undef NEXT
    }
    if (!app.config_path) die(EXIT_BAD_INPUT, "%s: --config FILE is required", cmd->name);
    if (app.fresh && app.resume) die(EXIT_BAD_INPUT, "train: --fresh (start over) and --resume exclude each other");

    hint_args_set(app.config_path, sets, n_sets);
    char err[1024];
    if (config_load(&app.cfg, app.config_path, sets, n_sets, err, sizeof err)) die(EXIT_BAD_INPUT, "%s", err);
    if (cmd->run != cmd_clean && budget_check(&app.cfg, err, sizeof err)) die(EXIT_BAD_INPUT, "%s", err);
    free(sets);
    if (check_only) {
        startup_end(&app.comm);
        say("ddptok --check: %s%s: ok (%s; train.world_size %d)\n", cmd->name, hint_args(),
            cmd->distributed ? "distributed: mpirun -np train.world_size" : "one process", app.cfg.train.world_size);
        MPI_Finalize();
        return 0;
    }

    if (!cmd->distributed && world != 1)
        die(EXIT_BAD_INPUT, "%s runs in one process, but %d ranks were started: run it without mpirun -np", cmd->name, world);
    if (cmd->distributed && world != app.cfg.train.world_size)
        die(EXIT_BAD_INPUT, "%s: train.world_size is %d but %d ranks were started (mpirun -np %d, or --set train.world_size=%d%s)",
            app.config_path, app.cfg.train.world_size, world, app.cfg.train.world_size, world,
            app.cfg.train.bands_auto ? "" : " --set train.rank_bands=auto");

    // Backends: CPU compute + MPI reductions are always built; CUDA + NCCL when compiled
    // in. Default: cuda + nccl when a GPU is visible, else cpu + mpi.
    int gpus = 0;
#ifdef DDPTOK_CUDA
    gpus = cuda_device_count();
#endif
    if (!app.backend) app.backend = gpus > 0 ? "cuda" : "cpu";
    if (!strcmp(app.backend, "cpu")) app.compute = &compute_cpu;
    else if (!strcmp(app.backend, "cuda")) {
#ifdef DDPTOK_CUDA
        if (gpus == 0) die(EXIT_BAD_INPUT, "--backend cuda: no GPU is visible on %s (use --backend cpu)", g_id.host);
        app.compute = &compute_cuda;
#else
        die(EXIT_BAD_INPUT, "--backend cuda: this ddptok was built without the CUDA backend (make CUDA=1)");
#endif
    } else die(EXIT_BAD_INPUT, "--backend %s: expected cpu or cuda", app.backend);
    if (!comm_name) comm_name = app.compute->on_device ? "nccl" : "mpi";
    if (strcmp(comm_name, "mpi") != 0 && strcmp(comm_name, "nccl") != 0)
        die(EXIT_BAD_INPUT, "--comm %s: expected mpi or nccl", comm_name);
    if (!strcmp(comm_name, "nccl") && !app.compute->on_device)
        die(EXIT_BAD_INPUT, "--comm nccl needs --backend cuda (NCCL reduces GPU buffers)");
    app.comm.timeout = app.comm_timeout;
    startup_end(&app.comm);
    agree_on_run(&app, comm_name);
#ifdef DDPTOK_CUDA
    if (app.compute->on_device) {
        watchdog_arm("device and NCCL set-up");  // its MPI_Allgather has no deadline of its own
        cuda_select_device(&app.comm);
        if (!strcmp(comm_name, "nccl") && comm_nccl_init(&app.comm, app.comm_timeout))
            die(EXIT_BAD_INPUT, "cannot set up NCCL (see above)");
        watchdog_disarm();
    }
#endif

    int rc = cmd->run(&app);
    if (app.comm.ops->destroy) app.comm.ops->destroy(&app.comm);
    stop(rc);  // MPI_Finalize under the watchdog
}
