// fuzz_json.c — libFuzzer target for the JSON files ddptok reads back, through the
// commands' own functions (app.h). The input's first byte picks the reader (readers[]), the
// rest is the file:
//   evaluate  protocol_reports_read: the input as outputs/parity.json, outputs/empty.json
//             and one matrix cell's parity.json; what it returns is serialized as
//             evaluate's report.json carries it (json_pack "o", json_write_file).
//             Property: report.json grows at most linearly, 16 bytes per byte of each of
//             the 3 reports (it indents every level: deep nesting once grew it quadratically)
//   plot      plot_jsonl_to_dat: the input as a run's JSONL. Property: a point is never
//             lost to what precedes it — the input, a newline and one more record give
//             exactly one point more
// A crash, a sanitizer report, a leak (a missing json_decref), an exit (die, ASSERT) or a
// broken property is a finding. jansson is part of the target: a crash there counts too.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "base/fs.h"
#include "fuzz_common.h"

static App app;
static char dir[256];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    default_signals();
    char err[512];
    if (config_from_yaml(&app.cfg, "seed: 1\n", "fuzz", err, sizeof err)) fprintf(stderr, "%s\n", err), abort();
    snprintf(dir, sizeof dir, "%s/ddptok-fuzz-%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    snprintf(app.cfg.paths.outputs, sizeof app.cfg.paths.outputs, "%s", dir);
    char cell[400];
    snprintf(cell, sizeof cell, "%s/matrix/cell", dir);
    if (mkdir_p(cell)) abort();
    return 0;
}

static void put(const char *rel, const uint8_t *data, size_t size, const char *tail) {
    char path[600];
    out_path(&app, path, sizeof path, rel);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || (tail && fputs(tail, f) == EOF) || fclose(f) != 0) abort();
}

static void read_evaluate(const uint8_t *data, size_t size) {
    put("parity.json", data, size, NULL);
    put("empty.json", data, size, NULL);
    put("matrix/cell/parity.json", data, size, NULL);
    ProtocolReports r;
    protocol_reports_read(&app, &r);
    if (r.cells != 1) fprintf(stderr, "fuzz_json: %d matrix cells, expected 1\n", r.cells), abort();
    write_json(&app, "report.json", json_pack("{s:o, s:o, s:o, s:b}", "parity", r.parity ? r.parity : json_null(), "matrix",
                                              r.matrix, "empty", r.empty ? r.empty : json_null(), "ok",
                                              r.parity_ok && r.empty_ok && r.cells_ok == r.cells));
    char path[600];
    struct stat st;
    out_path(&app, path, sizeof path, "report.json");
    if (stat(path, &st) != 0) abort();
    if ((size_t)st.st_size > 3 * 16 * size + 4096)
        fprintf(stderr, "fuzz_json: report.json of %lld bytes from 3 reports of %zu\n", (long long)st.st_size, size), abort();
}

static void read_plot(const uint8_t *data, size_t size) {
    char jsonl[600], dat[600];
    out_path(&app, jsonl, sizeof jsonl, "run.jsonl");
    out_path(&app, dat, sizeof dat, "loss.dat");
    put("run.jsonl", data, size, NULL);
    int64_t n = plot_jsonl_to_dat(jsonl, dat);
    put("run.jsonl", data, size, "\n{\"step\": 7, \"loss\": 0.5}\n");
    int64_t m = plot_jsonl_to_dat(jsonl, dat);
    if (m != n + 1) {
        fprintf(stderr, "fuzz_json: %lld points, then %lld with one record appended (expected %lld):\n%.*s\n", (long long)n,
                (long long)m, (long long)n + 1, (int)size, data);
        abort();
    }
}

static const struct {
    const char *name;
    void (*read)(const uint8_t *data, size_t size);
} readers[] = {{"evaluate", read_evaluate}, {"plot", read_plot}};  // input byte 0 (mod 2): evaluate, 1: plot
enum { N_READERS = sizeof readers / sizeof readers[0] };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    readers[data[0] % N_READERS].read(data + 1, size - 1);
    return 0;
}
