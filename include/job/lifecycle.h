// lifecycle.h — what keeps a job bounded from the first line of main to the last: the
// stop request of SIGUSR1, a first SIGINT (Ctrl-C) or SIGTERM (installed before MPI_Init, so
// one that arrives during start-up is kept, not fatal), a watchdog for the MPI calls that have no deadline of their own
// (MPI_Init, the communicator set-up, MPI_Finalize), the start-up agreement (a rank that
// fails before every rank has agreed to run ends the whole job, not just itself), and a
// test hook that stalls one rank at a named phase.
#ifndef DDPTOK_LIFECYCLE_H
#define DDPTOK_LIFECYCLE_H

#include "job/comm.h"

#ifdef __cplusplus
extern "C" {
#endif

// --comm-timeout: a finite number of seconds in [0.1, 1e6] (nan or inf would disable the
// deadline, 1e-9 abort a healthy job; the bound keeps every conversion in range).
static inline int comm_timeout_ok(double seconds) { return seconds >= 0.1 && seconds <= 1e6; }

// First call of main, before MPI_Init: installs the job's ending into die()/stop()
// (together.h), the SIGUSR1 and watchdog handlers, takes
// the rank from the launcher's environment for messages, gives a process that no launcher
// started Open MPI's settings for a singleton (no daemon, only the self transport; what
// the environment already sets wins), and returns the --comm-timeout given on the command
// line (300 when absent or not a positive finite number: the command-line parser reports a
// bad value later, once every rank can hear of it).
double lifecycle_init(int argc, char **argv);

// 1 once SIGUSR1 has arrived (Slurm's warning before the time limit, or scancel --signal),
// or a first SIGINT (Ctrl-C) or SIGTERM, or once the file DDPTOK_STOP_FILE names exists (the
// launchers' way to pass a SIGUSR1 or a Ctrl-C on: docs/launching.md). Called at every window.
// A SIGINT or SIGTERM after a stop request, by any of these, ends the process at once.
int stop_requested(void);
// What asked this rank to stop, for the message ("SIGINT, Ctrl-C", "SIGUSR1", ...).
const char *stop_reason(void);
// keep = 1 (train): a first SIGINT/SIGTERM is a stop request at the next window (the default
// from the first instruction, so one during start-up is kept); keep = 0 (every other command:
// they do not stop at windows): SIGINT and SIGTERM end the process at once, and one that came
// during start-up ends it now.
void interrupt_keep(int keep);
// The process is ending (die, stop: together.c): from now on SIGINT and SIGTERM end it at once,
// without a word (mpirun's SIGTERM to a rank already on its way out), and nothing is re-raised.
void interrupt_ending(void);

// Arms the watchdog: if this process is still inside `phase` after --comm-timeout
// seconds, it prints one line naming the phase, its rank and host, and ends with exit 4
// (the launcher then ends the other ranks). Disarm when the phase is over.
void watchdog_arm(const char *phase);
void watchdog_disarm(void);

// Start-up: between startup_begin and startup_end every rank reads its command line and
// config alone. A rank that dies there (die()/stop()) takes part in startup_end's
// agreement from inside stop(), so every rank stops at once with that rank's exit code;
// the others print one line naming it. Collective.
void startup_begin(Comm *comm);
void startup_end(Comm *comm);

// Test hook: DDPTOK_TEST_STALL=PHASE (agreement, broadcast, gather, gradient bucket,
// shutdown) stops rank DDPTOK_TEST_STALL_RANK (default 1) with SIGSTOP the first time it
// reaches PHASE, as a hung file system or a swapped-out node would.
void test_stall(const char *phase);

#ifdef __cplusplus
}
#endif
#endif
