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
//   ids       per_sequence_ids_parse: the input as a file of ids (evaluate --ids FILE).
//             Property: the ids it returns, written back as a list A,B,C, parse to the
//             same ids. Then per_sequence_target_check on the input as a file already
//             at --per-sequence's path: its bytes are left as they were
// A crash, a sanitizer report, a leak (a missing json_decref), an exit (die, ASSERT) or a
// broken property is a finding. jansson is part of the target: a crash there counts too.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/app.h"
#include "base/buf.h"
#include "base/fs.h"
#include "train/per_sequence.h"
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

static void read_ids(const uint8_t *data, size_t size) {
    char path[600], why[1600];
    out_path(&app, path, sizeof path, "ids.txt");
    put("ids.txt", data, size, NULL);
    int64_t *ids, *again;
    int n, m;
    if (per_sequence_ids_parse(path, &ids, &n, why, sizeof why) == 0) {
        Buf list = {0};
        for (int i = 0; i < n; i++) buf_printf(&list, "%s%lld", i ? "," : "", (long long)ids[i]);
        if (per_sequence_ids_parse(list.s, &again, &m, why, sizeof why) || m != n || memcmp(again, ids, (size_t)n * sizeof *ids)) {
            fprintf(stderr, "fuzz_json: %d ids of the file do not parse back as the list %.200s (%s)\n", n, list.s, why);
            abort();
        }
        free(again), free(ids), buf_free(&list);
    }
    out_path(&app, path, sizeof path, "target.jsonl");
    put("target.jsonl", data, size, NULL);
    per_sequence_target_check(path, why, sizeof why);
    size_t len;
    char *after = file_read_regular(path, size + 1, &len, why, sizeof why);
    if (!after || len != size || memcmp(after, data, size)) fprintf(stderr, "fuzz_json: the file at the target changed\n"), abort();
    free(after);
}

static const struct {
    const char *name;
    void (*read)(const uint8_t *data, size_t size);
} readers[] = {{"evaluate", read_evaluate}, {"plot", read_plot}, {"ids", read_ids}};  // input byte 0 (mod 3): evaluate, plot, ids
enum { N_READERS = sizeof readers / sizeof readers[0] };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    readers[data[0] % N_READERS].read(data + 1, size - 1);
    return 0;
}
