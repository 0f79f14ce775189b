// comm_mpi.c — the MPI control plane and the `mpi` data-plane backend (host buffers).
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/mem.h"
#include "base/report.h"
#include "job/comm.h"
#include "job/lifecycle.h"

// One check idiom for MPI: a failed collective ends the whole job naming rank, host,
// step and operation (a peer may already be gone, so nothing else is safe).
static inline void mpi_check(int rc, const Comm *comm, const char *file, int line) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    die_abort(EXIT_COMM_FAILURE, "MPI failure on %s at %s:%d during %s%s: %s", g_id.host, file, line,
              comm && comm->op ? comm->op : "?", comm ? comm_at_step(comm) : "", msg);
}
#define MPI_CHECK(call, c) mpi_check((call), (c), __FILE__, __LINE__)

// Waits for a non-blocking collective against the deadline: a rank that is stuck or gone
// without its process ending (stopped, swapping, a hung file system, a node the launcher
// has not noticed) ends the job with a message naming this rank, its host, the step and
// the operation (exit 4) instead of a hang until the batch system's time limit.
// It polls without starving the machine: MPI_Test back to back for the first
// MPI_SPIN_SECONDS (a peer that is about to arrive costs no sleep), then sleeps between
// tests, doubling from MPI_SLEEP_MIN_NS up to MPI_SLEEP_MAX_NS, so a rank that waits for a
// slower peer gives the core to that peer or to other jobs (a full spin made the waiting
// rank of the tutorial's bands take 67 % of a core and made training slower under load).
enum { MPI_SLEEP_MIN_NS = 2000, MPI_SLEEP_MAX_NS = 100000 };
#define MPI_SPIN_SECONDS 50e-6
static void mpi_wait_all(Comm *comm, int n, MPI_Request *req) {
    double start = now_seconds();
    long sleep_ns = MPI_SLEEP_MIN_NS;
    for (;;) {
        int done = 0;
        MPI_CHECK(MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE), comm);
        if (done) return;
        double waited = now_seconds() - start;
        if (waited > comm->timeout)
            die_abort(EXIT_COMM_FAILURE,
                      "no progress in %s%s on %s for %g s (--comm-timeout): another rank is stuck or gone; "
                      "aborting the job",
                      comm->op ? comm->op : "?", comm_at_step(comm), g_id.host, comm->timeout);
        if (waited < MPI_SPIN_SECONDS) continue;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < MPI_SLEEP_MAX_NS) sleep_ns = sleep_ns * 2 < MPI_SLEEP_MAX_NS ? sleep_ns * 2 : MPI_SLEEP_MAX_NS;
    }
}
static void mpi_wait(Comm *comm, MPI_Request *req) { mpi_wait_all(comm, 1, req); }

const char *comm_at_step(const Comm *comm) {
    static char text[48];
    if (comm->step < 0) return "";
    snprintf(text, sizeof text, " at step %lld", (long long)comm->step);
    return text;
}

void comm_setup(Comm *comm, double timeout) {
    memset(comm, 0, sizeof *comm);
    comm->timeout = timeout;
    comm->step = -1;  // no training step yet: messages name none
    MPI_Comm_dup(MPI_COMM_WORLD, &comm->mpi);
    MPI_Comm_set_errhandler(comm->mpi, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm->mpi, &comm->rank);
    MPI_Comm_size(comm->mpi, &comm->world);
    MPI_Comm local;
    MPI_CHECK(MPI_Comm_split_type(comm->mpi, MPI_COMM_TYPE_SHARED, comm->rank, MPI_INFO_NULL, &local), comm);
    MPI_Comm_rank(local, &comm->local_rank);
    MPI_Comm_size(local, &comm->local_size);
    MPI_Comm_free(&local);
    comm->ops = &comm_mpi;
}

int comm_agree(Comm *comm, int code) {
    int out = code;
    MPI_Request req;
    test_stall("agreement");
    comm_op_begin(comm, "agreement");
    MPI_CHECK(MPI_Iallreduce(&code, &out, 1, MPI_INT, MPI_MAX, comm->mpi, &req), comm);
    mpi_wait(comm, &req);
    return out;
}

void comm_stop_if_any(Comm *comm, int bad, int code, const char *what) {
    static char label[160];
    snprintf(label, sizeof label, "the agreement (%s)", what);
    comm_label(comm, label);
    int failed = comm_agree(comm, bad ? comm->rank + 1 : 0);  // the highest failed rank, plus one
    if (!failed) return;
    if (!bad) error("stopping: rank %d failed %s", failed - 1, what);
    stop(code);
}

// The control plane's broadcasts, gathers and barriers are non-blocking too, waited for
// against the same deadline: a rank stopped between two agreements cannot hang the others.
int comm_bcast(Comm *comm, void *buf, size_t bytes, int root) {
    MPI_Request req;
    ASSERT(bytes <= (size_t)INT_MAX);
    test_stall("broadcast");
    comm_op_begin(comm, "broadcast");
    MPI_CHECK(MPI_Ibcast(buf, (int)bytes, MPI_BYTE, root, comm->mpi, &req), comm);
    mpi_wait(comm, &req);
    return 0;
}

void comm_barrier(Comm *comm) {
    MPI_Request req;
    comm_op_begin(comm, "barrier");
    MPI_CHECK(MPI_Ibarrier(comm->mpi, &req), comm);
    mpi_wait(comm, &req);
}

void comm_gather_str(Comm *comm, const char *mine, char *out, int len) {
    char *buf = xcalloc((size_t)len, 1);
    strncpy(buf, mine, (size_t)len - 1);
    MPI_Request req;
    test_stall("gather");
    comm_op_begin(comm, "gather");
    MPI_CHECK(MPI_Igather(buf, len, MPI_CHAR, out, len, MPI_CHAR, 0, comm->mpi, &req), comm);
    mpi_wait(comm, &req);
    free(buf);
}

static int mpi_allreduce_sum_i64(Comm *comm, int64_t *buf, int n) {
    MPI_Request req;
    comm_op_begin(comm, "count all-reduce");
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, MPI_SUM, comm->mpi, &req), comm);
    mpi_wait(comm, &req);
    return 0;
}

// The gradient sum, in place; the caller divides by W (the optimizer pass does it, so the
// average costs no pass of its own). The deadline is kept by a non-blocking barrier
// waited for with mpi_wait: once it completes every rank has reached this all-reduce, and
// the blocking MPI_Allreduce that follows runs at the speed of the tuned collective
// (MPI_Iallreduce + MPI_Test polling measured 2-3x slower at these sizes). A rank that
// stops after the barrier but inside the all-reduce is not caught by the deadline; it
// would have to stop within microseconds of reaching it.
static int mpi_allreduce_sum_f32(Comm *comm, float *buf, size_t n) {
    if (comm->world == 1) return 0;
    MPI_Request req;
    comm_op_begin(comm, "gradient all-reduce");
    test_stall("gradient all-reduce");
    MPI_CHECK(MPI_Ibarrier(comm->mpi, &req), comm);
    mpi_wait(comm, &req);
    // A rank stopped between the barrier and the blocking all-reduce would hang its peers
    // there: the watchdog bounds it (two setitimer calls per window).
    char phase[160];
    snprintf(phase, sizeof phase, "%s%s", comm->op, comm_at_step(comm));
    watchdog_arm(phase);
    for (size_t done = 0; done < n;) {  // MPI counts are int
        int chunk = n - done > (1u << 30) ? (1 << 30) : (int)(n - done);
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + done, chunk, MPI_FLOAT, MPI_SUM, comm->mpi), comm);
        done += (size_t)chunk;
    }
    watchdog_disarm();
    return 0;
}

// Gradient buckets (train.overlap): each bucket is an MPI_Iallreduce, started as soon as
// the backward has finished it; the backend's hook calls between its blocks
// (sum_f32_progress: MPI_Testall, no wait), the next blocking bucket (allreduce_sum_f32: a
// non-blocking barrier then a blocking all-reduce) and the final wait progress them. Every
// wait is against the deadline: a rank that stops between the buckets leaves the others in
// the next blocking bucket's barrier, a rank that stops after it in this wait. Same sums of
// the same values as one all-reduce: bit-identical for W = 2 (a + b = b + a); for W >= 3 the
// result is the one of Open MPI's algorithm for each bucket's size, measured identical at
// W = 3, 4, 6, 7 with Open MPI 4.1.4 for output-layer but not at W = 5, where libnbc's order
// differs from the blocking one's in the tail's last bits (docs/performance.md "Overlap of
// the gradient all-reduce with the backward").
static int mpi_sum_f32_start(Comm *comm, float *buf, size_t n) {
    if (comm->world == 1) return 0;
    comm_op_begin(comm, "gradient all-reduce");
    for (size_t done = 0; done < n;) {  // MPI counts are int
        int chunk = n - done > (1u << 30) ? (1 << 30) : (int)(n - done);
        if (comm->buckets == comm->bucket_cap) {
            int cap = comm->bucket_cap ? 2 * comm->bucket_cap : 64;  // the handles of buckets in flight move
            MPI_Request *grown = xmalloc((size_t)cap * sizeof *grown);
            if (comm->buckets) memcpy(grown, comm->bucket, (size_t)comm->buckets * sizeof *grown);
            free(comm->bucket);
            comm->bucket = grown, comm->bucket_cap = cap;
        }
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf + done, chunk, MPI_FLOAT, MPI_SUM, comm->mpi, &comm->bucket[comm->buckets++]),
                  comm);
        done += (size_t)chunk;
    }
    test_stall("gradient bucket");
    return 0;
}

static int mpi_sum_f32_progress(Comm *comm) {
    if (!comm->buckets) return 0;
    int done = 0;
    comm_op_begin(comm, "gradient all-reduce");
    MPI_CHECK(MPI_Testall(comm->buckets, comm->bucket, &done, MPI_STATUSES_IGNORE), comm);
    return 0;
}

static int mpi_sum_f32_finish(Comm *comm) {
    if (!comm->buckets) return 0;
    comm_op_begin(comm, "gradient all-reduce");
    mpi_wait_all(comm, comm->buckets, comm->bucket);
    comm->buckets = 0;
    return 0;
}

// The average is the sum divided by W (for the few callers outside the training loop).
static int mpi_allreduce_avg_f32(Comm *comm, float *buf, size_t n) {
    mpi_allreduce_sum_f32(comm, buf, n);
    if (comm->world > 1)
        for (size_t i = 0; i < n; i++) buf[i] /= (float)comm->world;
    return 0;
}

static void mpi_destroy(Comm *comm) {
    free(comm->bucket);
    comm->bucket = NULL, comm->buckets = comm->bucket_cap = 0;
}

const CommOps comm_mpi = {
    .name = "mpi",
    .device_buffers = 0,
    .allreduce_sum_i64 = mpi_allreduce_sum_i64,
    .allreduce_avg_f32 = mpi_allreduce_avg_f32,
    .allreduce_sum_f32 = mpi_allreduce_sum_f32,
    .sum_f32_start = mpi_sum_f32_start,
    .sum_f32_progress = mpi_sum_f32_progress,
    .sum_f32_finish = mpi_sum_f32_finish,
    .destroy = mpi_destroy,
};
