// buf.c — a growable text buffer (see buf.h).
#include "base/buf.h"

#include <stdarg.h>
#include <stdlib.h>

#include "base/report.h"

void buf_printf(Buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int need = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        ASSERT(need >= 0);
        if (b->s && b->n + (size_t)need < b->cap) {
            b->n += (size_t)need;
            return;
        }
        b->cap = (b->cap + (size_t)need + 1) * 2;
        b->s = realloc(b->s, b->cap);
        ASSERT(b->s);
        b->s[b->n] = 0;
    }
}

void buf_free(Buf *b) {
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
}
