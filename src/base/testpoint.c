// testpoint.c — test stops at named points (see testpoint.h).
#include "base/testpoint.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void test_point(const char *point) {
    const char *kill_at = getenv("DDPTOK_TEST_KILL_AT"), *pause_at = getenv("DDPTOK_TEST_PAUSE_AT");
    if (kill_at && !strcmp(kill_at, point)) raise(SIGKILL);
    size_t n = strlen(point);
    if (!pause_at || strncmp(pause_at, point, n) != 0 || pause_at[n] != ':') return;
    const char *file = pause_at + n + 1;
    int fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    struct timespec tick = {0, 20 * 1000 * 1000};
    for (int i = 0; i < 3000 && access(file, F_OK) == 0; i++) nanosleep(&tick, NULL);
}
