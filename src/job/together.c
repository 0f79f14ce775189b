// together.c — how a job of several ranks ends: a fatal error that every rank reaches is
// printed once by rank 0 with the ranks that saw it, on die()'s own communicator; a
// collective end finalizes under the watchdog; a rank alone aborts the job. The base
// (src/base/report.c) calls these through the routines together_install() gives it.
#include "job/together.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "job/lifecycle.h"

// die()'s own communicator: its agreement and gather never meet another collective.
static MPI_Comm g_die_comm = MPI_COMM_NULL;

#define REPORT_LEN 2048          // one error line, at most (as in report.c)
#define DIE_TOGETHER_SECONDS 5.0 // how long die() waits for the other ranks to fail too

static int mpi_running(void) {
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    return init && !fin;
}

// Called by identity_init: once MPI is up (lifecycle_init runs before MPI_Init), die()
// gets its communicator.
static void identity_changed(void) {
    if (g_id.world > 1 && mpi_running() && g_die_comm == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &g_die_comm);
}

// "ranks 0-3,6" (or "rank 2") for the ranks r with same[r] set.
static void rank_list(const char *same, int world, char *out, size_t len) {
    int n = 0, count = 0;
    for (int r = 0; r < world; r++) count += same[r] != 0;
    n = snprintf(out, len, "rank%s ", count > 1 ? "s" : "");
    const char *sep = "";
    for (int r = 0; r < world && n < (int)len; r++) {
        if (!same[r] || (r > 0 && same[r - 1])) continue;
        int end = r;
        while (end + 1 < world && same[end + 1]) end++;
        n += end == r ? snprintf(out + n, len - (size_t)n, "%s%d", sep, r)
                      : snprintf(out + n, len - (size_t)n, "%s%d-%d", sep, r, end);
        sep = ",";
    }
}

// When every rank dies (a config error, a bad --set: every rank reads the same input),
// rank 0 prints each distinct line once with the ranks that saw it. Returns 0 when the
// others did not all arrive within DIE_TOGETHER_SECONDS (this rank then reports alone).
static int report_together(const char *line) {
    interrupt_ending();
    if (g_die_comm == MPI_COMM_NULL || !mpi_running()) return 0;
    MPI_Request req;
    if (MPI_Ibarrier(g_die_comm, &req) != MPI_SUCCESS) return 0;
    double start = now_seconds();
    for (int done = 0; !done;) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
        if (!done && now_seconds() - start > DIE_TOGETHER_SECONDS) return 0;
        if (!done) usleep(1000);
    }
    char mine[REPORT_LEN] = "", *all = g_id.rank == 0 ? xcalloc((size_t)g_id.world, REPORT_LEN) : NULL;
    snprintf(mine, sizeof mine, "%s", line);
    watchdog_arm("the gather of the error lines");  // a rank stopped after the barrier cannot hang it
    MPI_Gather(mine, REPORT_LEN, MPI_CHAR, all, REPORT_LEN, MPI_CHAR, 0, g_die_comm);
    watchdog_disarm();
    if (g_id.rank == 0) {
        char *same = xcalloc((size_t)g_id.world, 1), *printed = xcalloc((size_t)g_id.world, 1), who[1200];
        for (int r = 0; r < g_id.world; r++) {
            if (printed[r]) continue;
            for (int q = r; q < g_id.world; q++)
                same[q] = !printed[q] && !strcmp(all + (size_t)q * REPORT_LEN, all + (size_t)r * REPORT_LEN);
            for (int q = 0; q < r; q++) same[q] = 0;
            rank_list(same, g_id.world, who, sizeof who);
            report_line(who, "error", all + (size_t)r * REPORT_LEN);
            for (int q = r; q < g_id.world; q++) printed[q] |= same[q];
        }
        free(same), free(printed), free(all);
    }
    return 1;
}

// Every rank gets here together for a collective decision: finalize cleanly. A rank that
// stalls now would hang the others in MPI_Finalize: the watchdog bounds it.
static void finish(int code) {
    (void)code;
    interrupt_ending();
    if (mpi_running()) {
        test_stall("shutdown");
        watchdog_arm("shutdown (MPI_Finalize)");
        MPI_Finalize();
    }
}

static void abort_job(int code) {
    interrupt_ending();
    if (mpi_running() && g_id.world > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

void together_install(void) {
    static const DieRoutines routines = {
        .identity_changed = identity_changed,
        .report_together = report_together,
        .finish = finish,
        .abort = abort_job,
    };
    set_die_routines(&routines);
}
