// jsonl_width.c — rank 0's train JSONL line at a world of W ranks, without W processes
// (tests/test_progress.sh; the figures of docs/scaling.md):
//
//   jsonl_width W [LINES]
//
// writes LINES (default 200) lines through train_progress_step (src/train/progress.c) from a
// window whose count exchange holds W ranks' counts (rank r: 1000 + (r·7919) mod 1000 tokens,
// so rank 0 has the fewest, 1000, and the most, 1999, is at the first r with r·7919 ≡ 999), into
// a memory stream, and prints one JSON object: W, the bytes of a line (the last), the
// microseconds per line (the least of 5 passes: other jobs only slow a pass down), and the last
// line itself.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/mem.h"
#include "train/progress.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 2 || atoi(argv[1]) < 1) {
        fprintf(stderr, "usage: jsonl_width W [LINES]\n");
        return 2;
    }
    int W = atoi(argv[1]), lines = argc > 2 ? atoi(argv[2]) : 200;
    int64_t *counts = xmalloc((size_t)W * sizeof *counts), total = 0;
    for (int r = 0; r < W; r++) counts[r] = 1000 + (int64_t)r * 7919 % 1000, total += counts[r];
    WindowStats ws;
    memset(&ws, 0, sizeof ws);
    ws.global.tokens = total, ws.global.sequences = 16 * W, ws.rank_counts = counts, ws.rank_seqs = counts;
    ws.loss = 4.86225697, ws.seconds = 0.0103, ws.t_compute = 0.008, ws.t_allreduce = 0.002;
    double pass[5];
    char *last = NULL;
    size_t last_len = 0;
    for (int k = 0; k < 5; k++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        TrainProgress p;
        train_progress_init(&p, 0, 1 << 30, 1 << 30, 1 << 30);
        double t0 = now_seconds();
        for (int i = 0; i < lines; i++) {
            ws.step = 2 + i;  // never the first step nor a multiple of log_every: no progress line on stdout
            train_progress_step(&p, &ws, W, f);
        }
        pass[k] = (now_seconds() - t0) / lines;
        fclose(f);
        char *end = buf + len - 1, *start = end;
        while (start > buf && start[-1] != '\n') start--;
        free(last);
        last_len = (size_t)(end - start);
        last = xmalloc(last_len + 1);
        memcpy(last, start, last_len);
        last[last_len] = 0;
        free(buf);
    }
    qsort(pass, 5, sizeof *pass, cmp_double);
    printf("{\"W\": %d, \"bytes\": %zu, \"us_per_line\": %.3f, \"line\": %s}\n", W, last_len + 1, 1e6 * pass[0], last);
    free(last), free(counts);
    return 0;
}
