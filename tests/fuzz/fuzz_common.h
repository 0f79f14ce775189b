// fuzz_common.h — what every fuzz target needs before libFuzzer starts.
#ifndef DDPTOK_FUZZ_COMMON_H
#define DDPTOK_FUZZ_COMMON_H

#include <signal.h>

// ddptok installs SIGALRM (its watchdog) and SIGUSR1 handlers before main (lifecycle.c);
// libFuzzer keeps a handler it finds, so its own timeout alarm would end the run as a
// watchdog expiry (exit 4). The targets run without them.
static inline void default_signals(void) {
    signal(SIGALRM, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
}

#endif
