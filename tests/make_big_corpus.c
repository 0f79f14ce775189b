// make_big_corpus.c — a synthetic-source corpus.h5 of more than 2^31 tokens, sparse on disk,
// for tests/test_data.sh (case_beyond_2_31). Every sequence has data.max_length tokens. The train sequences (the first data.splits.train) and the test
// sequences (the last data.splits.test, all beyond token 2^31 when the validation split is
// large enough) hold ids 1 + (7·i + j) mod (V - 1); the validation sequences between them
// are never written (zeros on disk, a hole in the file: they must never be read). The
// checksum tables, their tree, the content digest and the corpus lock are those of
// docs/file-formats.md (format 3; the hole's chunks all hash as one zero chunk), so ddptok
// opens it as prepare's own.
//
//   make_big_corpus CONFIG OUT [--set KEY=VALUE ...]
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"
#include "config/budget.h"
#include "config/config.h"
#include "data/corpus.h"
#include "data/digest.h"
#include "data/lock.h"

static int V;
static int64_t L, n, n_train, n_test;

static uint16_t token_at(int64_t p) {
    int64_t i = p / L, j = p % L;
    if (i >= n_train && i < n - n_test) return 0;  // validation: the hole
    return (uint16_t)(1 + (7 * i + j) % (V - 1));
}

static hid_t dataset(hid_t f, const char *name, hid_t type, int rank, const hsize_t *dims) {
    hid_t sp = H5Screate_simple(rank, dims, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_layout(dcpl, H5D_CONTIGUOUS);
    H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);  // the whole extent now, unwritten: a hole
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    hid_t ds = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl), H5Sclose(sp);
    if (ds < 0) fprintf(stderr, "make_big_corpus: cannot create %s\n", name), exit(1);
    return ds;
}

static void write_range(hid_t ds, hid_t type, int64_t first, int64_t count, const void *data) {
    hsize_t start = (hsize_t)first, cnt = (hsize_t)count;
    hid_t file_sp = H5Dget_space(ds), mem_sp = H5Screate_simple(1, &cnt, NULL);
    H5Sselect_hyperslab(file_sp, H5S_SELECT_SET, &start, NULL, &cnt, NULL);
    if (H5Dwrite(ds, type, mem_sp, file_sp, H5P_DEFAULT, data) < 0) fprintf(stderr, "make_big_corpus: write failed\n"), exit(1);
    H5Sclose(mem_sp), H5Sclose(file_sp);
}

static void attr_i64(hid_t f, const char *name, int64_t v) {
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, name, H5T_NATIVE_INT64, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, &v), H5Aclose(a), H5Sclose(sp);
}

static void attr_str(hid_t f, const char *name, const char *v) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t sp = H5Screate(H5S_SCALAR), a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, v), H5Aclose(a), H5Sclose(sp), H5Tclose(t);
}

int main(int argc, char **argv) {
    if (argc < 3) return fprintf(stderr, "usage: make_big_corpus CONFIG OUT [--set KEY=VALUE ...]\n"), 2;
    char *sets[32];
    int n_sets = 0;
    for (int i = 3; i + 1 < argc && n_sets < 32; i += 2)
        if (!strcmp(argv[i], "--set")) sets[n_sets++] = argv[i + 1];
    Config cfg;
    char err[1024];
    if (config_load(&cfg, argv[1], sets, n_sets, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    V = cfg.data.vocab_size, L = cfg.data.max_length;
    n_train = cfg.data.n_train, n_test = cfg.data.n_test, n = n_train + cfg.data.n_validation + n_test;
    if (corpus_token_bytes(V) != 2) return fprintf(stderr, "make_big_corpus: data.vocab_size %d: uint16 tokens only\n", V), 2;
    int64_t nt = n * L, tc = corpus_chunks(nt, CORPUS_TOKEN_CHUNK), oc = corpus_chunks(n + 1, CORPUS_OFFSET_CHUNK);
    CorpusTree ttree, otree;
    corpus_tree_shape(&ttree, tc), corpus_tree_shape(&otree, oc);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fcreate(argv[2], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return fprintf(stderr, "make_big_corpus: cannot create %s\n", argv[2]), 1;
    hsize_t d_nt = (hsize_t)nt, d_no = (hsize_t)(n + 1), d_n = (hsize_t)n, d_tc[2] = {(hsize_t)tc, 32}, d_oc[2] = {(hsize_t)oc, 32};
    hid_t tokens = dataset(f, "tokens", H5T_STD_U16LE, 1, &d_nt);
    // The written spans, in blocks; every chunk's checksum, the hole's computed once.
    enum { BLOCK = 1 << 20 };
    uint16_t *block = malloc(BLOCK * sizeof *block);
    int64_t spans[2][2] = {{0, n_train * L}, {(n - n_test) * L, nt}};
    for (int s = 0; s < 2; s++)
        for (int64_t p = spans[s][0]; p < spans[s][1]; p += BLOCK) {
            int64_t k = spans[s][1] - p < BLOCK ? spans[s][1] - p : BLOCK;
            for (int64_t q = 0; q < k; q++) block[q] = token_at(p + q);
            write_range(tokens, H5T_NATIVE_UINT16, p, k, block);
        }
    uint8_t *ts = malloc((size_t)tc * 32), zero_sum[32];
    uint16_t chunk[CORPUS_TOKEN_CHUNK];
    memset(chunk, 0, sizeof chunk);
    corpus_sums(chunk, 2, CORPUS_TOKEN_CHUNK, CORPUS_TOKEN_CHUNK, zero_sum);
    for (int64_t c = 0; c < tc; c++) {
        int64_t first = c * CORPUS_TOKEN_CHUNK, k = nt - first < CORPUS_TOKEN_CHUNK ? nt - first : CORPUS_TOKEN_CHUNK;
        int hole = first / L >= n_train && (first + k - 1) / L < n - n_test && k == CORPUS_TOKEN_CHUNK;
        if (hole) {
            memcpy(ts + 32 * c, zero_sum, 32);
            continue;
        }
        for (int64_t q = 0; q < k; q++) chunk[q] = token_at(first + q);
        corpus_sums(chunk, 2, k, CORPUS_TOKEN_CHUNK, ts + 32 * c);
    }
    int64_t *offsets = malloc((size_t)(n + 1) * sizeof *offsets);
    uint8_t *split = malloc((size_t)n), *os = malloc((size_t)oc * 32);
    for (int64_t i = 0; i <= n; i++) offsets[i] = i * L;
    for (int64_t i = 0; i < n; i++) split[i] = i < n_train ? 0 : i < n - n_test ? 1 : 2;
    corpus_sums(offsets, 8, n + 1, CORPUS_OFFSET_CHUNK, os);
    hid_t ds;
    ds = dataset(f, "offsets", H5T_STD_I64LE, 1, &d_no), write_range(ds, H5T_NATIVE_INT64, 0, n + 1, offsets), H5Dclose(ds);
    ds = dataset(f, "split", H5T_NATIVE_UINT8, 1, &d_n), write_range(ds, H5T_NATIVE_UINT8, 0, n, split), H5Dclose(ds);
    ds = dataset(f, "token_sha256", H5T_NATIVE_UINT8, 2, d_tc);
    H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ts), H5Dclose(ds);
    ds = dataset(f, "offset_sha256", H5T_NATIVE_UINT8, 2, d_oc);
    H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, os), H5Dclose(ds);
    uint8_t *tt = malloc((size_t)ttree.total * 32), *ot = malloc((size_t)otree.total * 32);
    corpus_tree_build(&ttree, ts, tt), corpus_tree_build(&otree, os, ot);
    hsize_t d_tt[2] = {(hsize_t)ttree.total, 32}, d_ot[2] = {(hsize_t)otree.total, 32};
    ds = dataset(f, "token_tree", H5T_NATIVE_UINT8, 2, d_tt);
    H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, tt), H5Dclose(ds);
    ds = dataset(f, "offset_tree", H5T_NATIVE_UINT8, 2, d_ot);
    H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ot), H5Dclose(ds);
    H5Dclose(tokens);
    char content[65], lock[65];
    int64_t counts[3] = {n_train, n - n_train - n_test, n_test};
    corpus_content_digest(n, nt, 2, counts, tt + 32 * (ttree.total - 1), ot + 32 * (otree.total - 1), content);
    corpus_lock_of(&cfg, 1, content, lock);
    attr_i64(f, "format", 3), attr_i64(f, "token_chunk", CORPUS_TOKEN_CHUNK), attr_i64(f, "offset_chunk", CORPUS_OFFSET_CHUNK);
    attr_i64(f, "tree_page", CORPUS_TREE_PAGE);
    hid_t sp3 = H5Screate_simple(1, (hsize_t[]){3}, NULL), a3 = H5Acreate2(f, "split_sequences", H5T_NATIVE_INT64, sp3, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a3, H5T_NATIVE_INT64, counts), H5Aclose(a3), H5Sclose(sp3);
    attr_str(f, "content_sha256", content), attr_i64(f, "vocab_size", V), attr_i64(f, "seed", cfg.seed), attr_str(f, "corpus_lock", lock);
    free(tt), free(ot);
    if (H5Fclose(f) < 0) return fprintf(stderr, "make_big_corpus: cannot close %s\n", argv[2]), 1;
    printf("%lld sequences of %lld tokens: %lld tokens (2^31 = 2147483648), test split from token %lld\n", (long long)n,
           (long long)L, (long long)nt, (long long)((n - n_test) * L));
    free(block), free(ts), free(offsets), free(split), free(os);
    return 0;
}
