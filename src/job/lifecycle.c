// lifecycle.c — signals, the watchdog, the start-up agreement and the stall hook (see
// lifecycle.h).
#include "job/lifecycle.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/report.h"
#include "job/together.h"

static volatile sig_atomic_t g_stop = 0;
static volatile sig_atomic_t g_stop_signal = 0;  // what asked first: SIGUSR1, SIGINT, SIGTERM; 0: none, or the stop file
// SIGINT/SIGTERM: a stop request (train) or the end at once; -1 during start-up, before the
// command is known: kept as a stop request, its notice said once the command is (interrupt_keep).
static volatile sig_atomic_t g_keep_interrupt = -1;
static volatile sig_atomic_t g_ending = 0;  // the process is ending (interrupt_ending): SIGINT/SIGTERM end it at once
static const char *g_stop_file;  // DDPTOK_STOP_FILE: a launcher's stop request (stop_requested)
static double g_timeout = 300;
static char g_watchdog_msg[512];  // written by watchdog_arm, printed by the handler
static size_t g_watchdog_len;

static void on_sigusr1(int sig) {
    if (!g_stop) g_stop_signal = sig;
    g_stop = 1;
}

// Rank 0's line for a stop request by SIGINT or SIGTERM. Async-signal-safe (write).
static void stop_notice(int sig) {
    if (g_id.rank != 0) return;
    const char *text = sig == SIGINT ? "ddptok: SIGINT (Ctrl-C): every rank checkpoints at its next window and stops (exit 75); "
                                       "Ctrl-C again stops at once\n"
                                     : "ddptok: SIGTERM: every rank checkpoints at its next window and stops (exit 75); "
                                       "SIGTERM again stops at once\n";
    (void)!write(STDERR_FILENO, text, strlen(text));
}

// SIGINT (Ctrl-C) and SIGTERM: the first one is a stop request, as SIGUSR1 (train checkpoints
// at its next window and exits 75), said on stderr by rank 0; another one once a stop was
// requested (by any means), or any one in a command that does not stop at windows, ends the
// process at once, by that signal. Only async-signal-safe calls: write, signal, raise.
static void on_interrupt(int sig) {
    // A stop already asked for: by a signal, or by the launcher's file (access() is
    // async-signal-safe), which it creates on the first Ctrl-C before the ranks look at it.
    if (g_stop || !g_keep_interrupt || g_ending || (g_stop_file && access(g_stop_file, F_OK) == 0)) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_stop_signal = sig;
    g_stop = 1;
    if (g_keep_interrupt == 1) stop_notice(sig);  // start-up: said by interrupt_keep, for train only
}

// SIGALRM: the armed phase overran. Only async-signal-safe calls: write and _exit.
static void on_watchdog(int sig) {
    (void)sig;
    (void)!write(STDERR_FILENO, g_watchdog_msg, g_watchdog_len);
    _exit(EXIT_COMM_FAILURE);
}

// The launcher's rank and size, before MPI_Init can tell (mpirun, srun with PMIx, Slurm).
static int env_int(const char *const *names, int fallback) {
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) return atoi(v);
    }
    return fallback;
}

static void install_handlers(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_sigusr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_handler = on_interrupt;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = on_watchdog;
    sigaction(SIGALRM, &sa, NULL);
}

// The handlers go in before the shared libraries' constructors run (.preinit_array):
// those take a while (OpenBLAS; the CUDA libraries took ~0.1 s before they moved into the
// module, opened after MPI_Init), and a SIGUSR1 forwarded by the launcher in that time
// would otherwise kill the rank (exit 138).
__attribute__((section(".preinit_array"), used)) static void (*const preinit_handlers)(void) = install_handlers;

// A process that no launcher started (no mpirun, no srun --mpi=pmix or pmi2) becomes an MPI
// singleton, a world of one: Open MPI would fork its daemon for it and open every transport
// (0.42 s of `ddptok --version` here, 0.10 s without). The user's own settings win.
static void singleton_defaults(void) {
    static const char *const launched[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_MCA_orte_hnp_uri", "PMIX_RANK", "PMI_RANK", "PMI_FD", NULL};
    for (int i = 0; launched[i]; i++)
        if (getenv(launched[i])) return;
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    setenv("OMPI_MCA_pml", "ob1", 0);
    setenv("OMPI_MCA_btl", "self", 0);
}

double lifecycle_init(int argc, char **argv) {
    together_install();  // die()/stop() end a job of several ranks together (together.h)
    install_handlers();
    singleton_defaults();
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", NULL};
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", NULL};
    identity_init(env_int(ranks, 0), env_int(sizes, 1));
    g_stop_file = getenv("DDPTOK_STOP_FILE");
    if (g_stop_file && !*g_stop_file) g_stop_file = NULL;
    for (int i = 1; i < argc; i++) {  // --comm-timeout SEC or --comm-timeout=SEC, as main's parser takes it
        const char *v = !strcmp(argv[i], "--comm-timeout") && i + 1 < argc ? argv[i + 1]
                        : !strncmp(argv[i], "--comm-timeout=", 15)    ? argv[i] + 15 : NULL;
        char *end;
        double t = v ? strtod(v, &end) : 0;
        if (v && *v && !*end && comm_timeout_ok(t)) g_timeout = t;  // main refuses any other value
    }
    return g_timeout;
}

// A launcher that took SIGUSR1 (run/ddprun, run/slurm/launch.sh) creates DDPTOK_STOP_FILE
// instead of passing the signal on: mpirun forwards a signal at once to whatever ranks exist,
// and a rank between its exec and the handler above (the dynamic loader's time) dies of it,
// one not yet started never sees it. The file waits for the ranks; each looks at every window.
int stop_requested(void) {
    if (!g_stop && g_stop_file && access(g_stop_file, F_OK) == 0) g_stop = 1;
    return g_stop;
}

const char *stop_reason(void) {
    int sig = g_stop_signal;
    return sig == SIGINT ? "SIGINT, Ctrl-C" : sig == SIGTERM ? "SIGTERM" : sig == SIGUSR1 ? "SIGUSR1"
           : g_stop ? "the launcher's stop request, DDPTOK_STOP_FILE" : "another rank's stop request";
}

void interrupt_ending(void) { g_ending = 1; }

void interrupt_keep(int keep) {
    g_keep_interrupt = keep;
    int sig = g_stop_signal;
    if (!keep && (sig == SIGINT || sig == SIGTERM)) {  // one that came during start-up: now its end
        signal(sig, SIG_DFL);
        raise(sig);
    }
    // ... or now its notice: a command that stops at windows (was: train's notice said at
    // once, also by import or any command Ctrl-C'd in its first milliseconds)
    if (keep && (sig == SIGINT || sig == SIGTERM)) stop_notice(sig);
}

void watchdog_arm(const char *phase) {
    double seconds = g_timeout;
    char who[96];
    if (g_id.world > 1) snprintf(who, sizeof who, "rank %d: ", g_id.rank);
    else who[0] = 0;
    int n = snprintf(g_watchdog_msg, sizeof g_watchdog_msg,
                     "ddptok: %serror: no progress in %s on %s for %g s (--comm-timeout): another rank is stuck or gone; "
                     "ending the job (exit %d)\n",
                     who, phase, g_id.host, seconds, EXIT_COMM_FAILURE);
    g_watchdog_len = n < (int)sizeof g_watchdog_msg ? (size_t)n : sizeof g_watchdog_msg - 1;
    struct itimerval it = {{0, 0}, {(time_t)seconds, (suseconds_t)((seconds - floor(seconds)) * 1e6)}};
    if (!it.it_value.tv_sec && !it.it_value.tv_usec) it.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &it, NULL);
}

void watchdog_disarm(void) {
    struct itimerval it;
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
}

// ---------------------------------------------------------------------------------------
// Start-up agreement. The agreed value packs the exit code above the failed rank + 1, so
// the largest is the highest code, and among those the highest rank.

static Comm *g_startup;

static void startup_failed(int code) {  // stop() on a rank that failed during start-up
    Comm *comm = g_startup;
    g_startup = NULL;
    stop_hook_set(NULL);
    comm_label(comm, "the start-up agreement");
    comm_agree(comm, code << 16 | (comm->rank + 1));
}

void startup_begin(Comm *comm) {
    g_startup = comm;
    stop_hook_set(startup_failed);
}

void startup_end(Comm *comm) {
    g_startup = NULL;
    stop_hook_set(NULL);
    comm_label(comm, "the start-up agreement");
    int v = comm_agree(comm, 0);
    if (!v) return;
    error("stopping: rank %d failed to start (see its message)", (v & 0xffff) - 1);
    stop(v >> 16);
}

void test_stall(const char *phase) {
    const char *want = getenv("DDPTOK_TEST_STALL"), *r = getenv("DDPTOK_TEST_STALL_RANK");
    static int done = 0;
    if (done || !want || strcmp(want, phase) != 0 || g_id.rank != (r ? atoi(r) : 1)) return;
    done = 1;
    fprintf(stderr, "ddptok: rank %d: TEST HOOK: stopping myself (SIGSTOP) at %s (DDPTOK_TEST_STALL)\n", g_id.rank, phase);
    fflush(stderr);
    raise(SIGSTOP);
}
