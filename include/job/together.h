// together.h — the job layer's way of ending a job of several ranks, installed into the
// base's die()/stop() (base/report.h) by lifecycle_init, the first call of main.
#ifndef DDPTOK_TOGETHER_H
#define DDPTOK_TOGETHER_H

// die(): when every rank gets there within a few seconds, rank 0 prints each distinct line
// once, naming the ranks that saw it; stop(): MPI_Finalize under the watchdog;
// stop_abort(): MPI_Abort of the whole job.
void together_install(void);

#endif
