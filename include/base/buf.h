// buf.h — a growable text buffer (JSON and report output).
#ifndef DDPTOK_BUF_H
#define DDPTOK_BUF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// A growable text buffer (JSON and report output).
typedef struct {
    char *s;
    size_t n, cap;
} Buf;
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(Buf *b);

#ifdef __cplusplus
}
#endif
#endif
