// mem.c — allocation that never returns NULL, the memory this process may use, budgets (see mem.h).
#include "base/mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/report.h"

void *xmalloc_impl(size_t n, const char *file, int line) {
    void *p = malloc(n ? n : 1);
    if (!p) die_abort(EXIT_INTERNAL, "out of memory allocating %zu bytes at %s:%d", n, file, line);
    return p;
}

void *xcalloc_impl(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) die_abort(EXIT_INTERNAL, "out of memory allocating %zu x %zu bytes at %s:%d", n, size, file, line);
    return p;
}

uint64_t memory_available_from(const char **from) {
    uint64_t avail = 0;
    const char *why = "unknown";
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail = size_mul(kb, 1024), why = "MemAvailable";
        fclose(f);
    }
    if (!avail) {
        long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        if (pages > 0 && page > 0) avail = size_mul((uint64_t)pages, (uint64_t)page), why = "free pages";
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && (uint64_t)rl.rlim_cur < avail)
        avail = (uint64_t)rl.rlim_cur, why = "ulimit -v";
    // DDPTOK_MEMORY_LIMIT=N[KMGT]: a lower budget (a shared node; the fuzz targets). Read
    // strictly: "8g" was 8 bytes, "1.5G" 1 byte, and "abc", "-1" or "0" no limit at all.
    const char *env = getenv("DDPTOK_MEMORY_LIMIT");
    if (env && *env) {
        const char *p = env;
        uint64_t lim = 0;
        while (*p >= '0' && *p <= '9') lim = size_add(size_mul(lim, 10), (uint64_t)(*p++ - '0'));
        const char *units = "KMGT", *u = *p ? strchr(units, *p & ~0x20) : NULL;
        int shift = u ? 10 * (int)(u - units + 1) : 0;
        if (u) p++;
        if (u && (!strcmp(p, "B") || !strcmp(p, "iB"))) p += strlen(p);
        if (p == env || *p || lim == 0 || env[0] < '0' || env[0] > '9')
            die(EXIT_BAD_INPUT, "DDPTOK_MEMORY_LIMIT=%s: expected a number of bytes above 0, or one with K, M, G or T "
                "(512M, 8G; unset it for no limit)", env);
        uint64_t bytes = size_mul(lim, (uint64_t)1 << shift);
        if (!avail || bytes < avail) avail = bytes, why = "DDPTOK_MEMORY_LIMIT";
    }
    if (from) *from = avail ? why : "unknown";
    return avail ? avail : UINT64_MAX;  // unknown: do not refuse on a guess
}

uint64_t memory_available(void) { return memory_available_from(NULL); }

void format_bytes(uint64_t bytes, char *out, size_t len) {
    static const char *units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 6) v /= 1024, u++;
    if (u == 0) snprintf(out, len, "%llu bytes", (unsigned long long)bytes);
    else snprintf(out, len, "%.1f %s", v, units[u]);
}

void budget_add(Budget *b, uint64_t bytes, const char *keys, const char *what, ...) {
    ASSERT(b->n < BUDGET_MAX_TERMS);
    BudgetTerm *t = &b->term[b->n++];
    va_list ap;
    va_start(ap, what);
    vsnprintf(t->what, sizeof t->what, what, ap);
    va_end(ap);
    snprintf(t->keys, sizeof t->keys, "%s", keys);
    t->bytes = bytes;
}

uint64_t budget_total(const Budget *b, char *largest, size_t len) {
    uint64_t total = 0;
    const BudgetTerm *big = NULL;
    for (int i = 0; i < b->n; i++) {
        total = size_add(total, b->term[i].bytes);
        if (!big || b->term[i].bytes > big->bytes) big = &b->term[i];
    }
    if (largest && len) {
        largest[0] = 0;
        if (big) {
            char bytes[32];
            format_bytes(big->bytes, bytes, sizeof bytes);
            snprintf(largest, len, "%s = %s: %s", big->what, bytes, big->keys);
        }
    }
    return total;
}
