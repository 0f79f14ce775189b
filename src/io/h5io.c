// h5io.c — HDF5 helpers (see h5io.h).
#include "io/h5io.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"

void h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

// The dataset or attribute whose write failed last, for h5out_fail (one thread writes).
static char g_write_failure[600];

static int write_failed(const char *kind, const char *name) {
    snprintf(g_write_failure, sizeof g_write_failure, "%s %s", kind, name);
    return -1;
}

// The core driver's buffer through callbacks of ours (HDF5's file image operations), so that
// at close the buffer is handed over instead of freed: h5out_commit writes the file from it,
// where H5Fget_file_image would copy it first (twice the file in memory: 2 x 606 MiB at the
// bench's wide GPT, θ and AdamW's states). udata is the H5Out's image (the H5Out outlives the
// file: every h5out_open ends in h5out_commit or h5out_fail).
static void *image_malloc(size_t size, H5FD_file_image_op_t op, void *udata) {
    (void)op;
    H5Image *im = udata;
    void *p = malloc(size ? size : 1);
    if (p) im->mem = p, im->size = size;
    return p;
}
static void *image_memcpy(void *dst, const void *src, size_t size, H5FD_file_image_op_t op, void *udata) {
    (void)op, (void)udata;
    return memcpy(dst, src, size);
}
static void *image_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *udata) {
    (void)op;
    H5Image *im = udata;
    void *p = realloc(ptr, size ? size : 1);
    if (p) im->mem = p, im->size = size;
    return p;
}
static herr_t image_free(void *ptr, H5FD_file_image_op_t op, void *udata) {
    H5Image *im = udata;
    if (ptr && ptr == im->mem && op == H5FD_FILE_IMAGE_OP_FILE_CLOSE) im->kept = 1;  // h5out_commit's now
    else {
        if (ptr == im->mem) im->mem = NULL, im->size = 0;
        free(ptr);
    }
    return 0;
}
static void *image_udata_copy(void *udata) { return udata; }  // the fapl's copies share the one H5Out
static herr_t image_udata_free(void *udata) {
    (void)udata;
    return 0;
}

int h5out_open(H5Out *o, const char *path) {
    snprintf(o->path, sizeof o->path, "%s", path);
    memset(&o->image, 0, sizeof o->image);
    // The file is built in memory (core driver, no backing store): HDF5 never meets a
    // disk error, which it does not survive cleanly (a close that failed on a full disk
    // crashed in HDF5's exit handler), and h5out_commit does the I/O itself.
    g_write_failure[0] = 0;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 20, 0);
    H5FD_file_image_callbacks_t cb = {image_malloc, image_memcpy, image_realloc, image_free,
                                      image_udata_copy, image_udata_free, &o->image};
    herr_t set = H5Pset_file_image_callbacks(fapl, &cb);
    o->file = set < 0 ? -1 : H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    H5Pclose(fapl);
    if (o->file < 0) return error("%s: cannot create an HDF5 file in memory", path);
    return 0;
}

// The kept buffer (or none) freed.
static void image_release(H5Out *o) {
    free(o->image.mem);
    memset(&o->image, 0, sizeof o->image);
}

int h5out_commit(H5Out *o, char sha256[65]) {
    ssize_t n = H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(o->file, NULL, 0);  // its size only
    if (H5Fclose(o->file) < 0) n = -1;
    // The file's n bytes are the first n of the core driver's buffer (eof >= eoa).
    const char *image = n > 0 && o->image.kept && o->image.size >= (size_t)n ? o->image.mem : NULL;
    if (image && sha256) {
        Sha256 *h = sha256_begin();
        sha256_add(h, image, (size_t)n);
        sha256_hex(h, sha256);
    }
    int rc = image ? write_file_atomic(o->path, image, (size_t)n) : error("%s: cannot write: HDF5 file image failed", o->path);
    image_release(o);
    return rc;
}

int h5out_fail(H5Out *o, const char *what) {
    H5Fclose(o->file);
    image_release(o);
    return error("%s: cannot write %s: %s", o->path, what, g_write_failure[0] ? g_write_failure : "HDF5 error");
}

int h5_write(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims, const void *data) {
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    // No modification times: the same inputs must give byte-identical files
    // (docs/spec.md: prepare is deterministic; HDF5 stamps each dataset by default).
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t ds = H5Dcreate2(loc, name, type, space, lcpl, dcpl, H5P_DEFAULT);
    int rc = ds < 0 ? -1 : (H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? -1 : 0);
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Pclose(lcpl);
    return rc ? write_failed("dataset", name) : 0;
}

static int attr_write(hid_t loc, const char *name, hid_t type, hid_t space, const void *v) {
    if (H5Aexists(loc, name) > 0) H5Adelete(loc, name);
    hid_t a = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a < 0 ? -1 : (H5Awrite(a, type, v) < 0 ? -1 : 0);
    if (a >= 0) H5Aclose(a);
    H5Sclose(space);
    return rc ? write_failed("attribute", name) : 0;
}

int h5_attr_str(hid_t loc, const char *name, const char *value) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    int rc = attr_write(loc, name, t, H5Screate(H5S_SCALAR), value);
    H5Tclose(t);
    return rc;
}

int h5_attr_i64(hid_t loc, const char *name, int64_t value) {
    return attr_write(loc, name, H5T_NATIVE_INT64, H5Screate(H5S_SCALAR), &value);
}

int h5_attr_f64(hid_t loc, const char *name, double value) {
    return attr_write(loc, name, H5T_NATIVE_DOUBLE, H5Screate(H5S_SCALAR), &value);
}

int h5_attr_i64_array(hid_t loc, const char *name, const int64_t *v, int n) {
    hsize_t d = (hsize_t)n;
    return attr_write(loc, name, H5T_NATIVE_INT64, H5Screate_simple(1, &d, NULL), v);
}

// ---------------------------------------------------------------------------------------
// The crash guard. HDF5 1.10 is not hardened against crafted files: the fuzzer finds, in
// seconds, files that make it dereference an allocation that failed for a size the file
// declares (H5F__accum_read). ddptok cannot validate a file before HDF5 has parsed it, so
// while a file it did not write is open (h5_open_image .. h5_close), SIGSEGV, SIGBUS and
// SIGFPE end the process with one line naming that file and exit 2 (bad input) instead of
// a crash. Outside those spans the signals keep their previous handlers (a bug in ddptok
// still crashes with its backtrace). The fuzz targets turn it off to see HDF5's stack.
int h5_crash_guard = 1;
static int g_guarded;                 // files open under the guard
static char g_guard_msg[1300];        // the line to print, prepared when the file opens
static size_t g_guard_len;
static struct sigaction g_saved[3];
static const int g_guard_signals[3] = {SIGSEGV, SIGBUS, SIGFPE};

static void on_parse_crash(int sig) {
    (void)sig;
    (void)!write(STDERR_FILENO, g_guard_msg, g_guard_len);
    _exit(EXIT_BAD_INPUT);
}

static void guard_begin(const char *name) {
    if (!h5_crash_guard) return;
    const char *who = g_id.world > 1 ? "rank " : "";
    char rank[16] = "";
    if (g_id.world > 1) snprintf(rank, sizeof rank, "%d: ", g_id.rank);
    int n = snprintf(g_guard_msg, sizeof g_guard_msg,
                     "ddptok: %s%serror: %s: HDF5 crashed parsing it (a damaged or crafted HDF5 file): refused\n", who, rank,
                     name);
    g_guard_len = n < 0 ? 0 : (size_t)n < sizeof g_guard_msg ? (size_t)n : sizeof g_guard_msg - 1;
    if (g_guarded++ > 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_parse_crash;
    sa.sa_flags = SA_RESETHAND;
    for (int i = 0; i < 3; i++) sigaction(g_guard_signals[i], &sa, &g_saved[i]);
}

static void guard_end(void) {
    if (!h5_crash_guard || g_guarded == 0 || --g_guarded > 0) return;
    for (int i = 0; i < 3; i++) sigaction(g_guard_signals[i], &g_saved[i], NULL);
}

void h5_close(hid_t f) {
    if (f < 0) return;
    H5Fclose(f);
    guard_end();
}

hid_t h5_open_image(const char *name, const void *image, size_t len) {
    // The core driver parses a copy of the image: no second open of the path, so what was
    // read (and, for a checkpoint, hashed) is exactly what HDF5 sees.
    // HDF5 wants a name that no file on disk has (it refuses one that exists) and that no
    // other open image has (it would share that file): the name, a control character and
    // a counter.
    static unsigned opened = 0;
    char unique[1200];
    snprintf(unique, sizeof unique, "%s\001image-%u", name, opened++);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_core(fapl, 1 << 20, 0);
    guard_begin(name);
    hid_t f = H5Pset_file_image(fapl, (void *)image, len) < 0 ? -1 : H5Fopen(unique, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (f < 0) guard_end();
    return f;
}

hid_t h5_open_read(const char *path, const char *hint) {
    const char *sep = hint ? ": " : "", *h = hint ? hint : "";
    size_t len;
    char why[256];
    char *image = file_read_regular(path, (size_t)memory_available(), &len, why, sizeof why);
    if (!image) return error("%s: cannot open: %s%s%s", path, why, sep, h);
    hid_t f = len ? h5_open_image(path, image, len) : -1;
    free(image);
    if (f < 0) return error("%s: not a readable HDF5 file (truncated or damaged?)%s%s", path, sep, h);
    return f;
}

hid_t h5_open_file(const char *path, const char *hint, int *fd, int64_t *size) {
    const char *sep = hint ? ": " : "", *h = hint ? hint : "";
    char why[256], proc[64];
    *fd = open_regular_fd(path, size, why, sizeof why);
    if (*fd < 0) return error("%s: cannot open: %s%s%s", path, why, sep, h);
    // HDF5 opens the descriptor's own file (not the name again, which may have been
    // replaced since), where /proc is mounted.
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", *fd);
    const char *name = access(proc, R_OK) == 0 ? proc : path;
    guard_begin(path);
    hid_t f = H5Fopen(name, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) {
        guard_end();
        close(*fd), *fd = -1;
        return error("%s: not a readable HDF5 file (truncated or damaged?)%s%s", path, sep, h);
    }
    return f;
}

int64_t h5_size(hid_t file, const char *fname, const char *dataset, int *rank, hsize_t *dims) {
    if (H5Lexists(file, dataset, H5P_DEFAULT) <= 0) return error("%s: dataset %s is missing", fname, dataset);
    hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT);
    if (ds < 0) return error("%s: cannot open dataset %s", fname, dataset);
    hid_t sp = H5Dget_space(ds);
    hsize_t d[8];
    int r = H5Sget_simple_extent_ndims(sp);
    int64_t n = -1;
    if (r >= 0 && r <= 8 && H5Sget_simple_extent_dims(sp, d, NULL) >= 0) {
        uint64_t total = 1;
        for (int i = 0; i < r; i++) total = size_mul(total, d[i]);
        n = total > INT64_MAX ? -1 : (int64_t)total;
        if (rank) *rank = r;
        if (dims) memcpy(dims, d, (size_t)r * sizeof *d);
    }
    H5Sclose(sp);
    H5Dclose(ds);
    return n < 0 ? error("%s: dataset %s has an unreadable shape", fname, dataset) : n;
}

int h5_read(hid_t file, const char *fname, const char *dataset, hid_t type, int64_t n, void *out) {
    int64_t have = h5_size(file, fname, dataset, NULL, NULL);
    if (have < 0) return -1;
    if (have != n) return error("%s: dataset %s has %lld elements, expected %lld", fname, dataset, (long long)have, (long long)n);
    hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT), stored = ds < 0 ? -1 : H5Dget_type(ds);
    // HDF5 would convert a float dataset to integers (and back) silently: the class must match.
    H5T_class_t cls = stored < 0 ? H5T_NO_CLASS : H5Tget_class(stored), want = H5Tget_class(type);
    if (stored >= 0) H5Tclose(stored);
    if (cls != want) {
        if (ds >= 0) H5Dclose(ds);
        return error("%s: dataset %s holds %s, expected %s", fname, dataset,
                     cls == H5T_INTEGER ? "integers" : cls == H5T_FLOAT ? "floating-point numbers" : "another type",
                     want == H5T_INTEGER ? "integers" : "floating-point numbers");
    }
    int rc = H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0 ? -1 : 0;
    H5Dclose(ds);
    return rc ? error("%s: cannot read dataset %s (damaged?)", fname, dataset) : 0;
}

// "int32", "uint64", "float32", "big-endian float32", … of a datatype, for messages.
static void type_name(hid_t t, char *out, size_t len) {
    H5T_class_t c = H5Tget_class(t);
    size_t bits = 8 * H5Tget_size(t);
    const char *order = (c == H5T_INTEGER || c == H5T_FLOAT) && H5Tget_order(t) == H5T_ORDER_BE ? "big-endian " : "";
    if (c == H5T_INTEGER) snprintf(out, len, "%s%sint%zu", order, H5Tget_sign(t) == H5T_SGN_NONE ? "u" : "", bits);
    else if (c == H5T_FLOAT) snprintf(out, len, "%sfloat%zu", order, bits);
    else snprintf(out, len, "%s", c == H5T_STRING ? "a string" : "another type");
}

static int same_type(hid_t a, hid_t b) {
    H5T_class_t c = H5Tget_class(a);
    return c == H5Tget_class(b) && H5Tget_size(a) == H5Tget_size(b) && H5Tget_order(a) == H5Tget_order(b) &&
           (c != H5T_INTEGER || H5Tget_sign(a) == H5Tget_sign(b));
}

static void shape_text(int rank, const hsize_t *dims, char *out, size_t len) {
    size_t n = (size_t)snprintf(out, len, "(");
    for (int i = 0; i < rank && n < len; i++) n += (size_t)snprintf(out + n, len - n, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    if (n < len) snprintf(out + n, len - n, rank == 1 ? ",)" : ")");
}

// The dataset is exactly `type` (no conversion) and `dims`: 0, or -1 with one line.
static int check_exact(hid_t file, const char *fname, const char *dataset, hid_t type, int rank, const hsize_t *dims) {
    int r = 0;
    hsize_t d[8];
    if (h5_size(file, fname, dataset, &r, d) < 0) return -1;
    if (r != rank || memcmp(d, dims, (size_t)rank * sizeof *dims) != 0) {
        char have[200], want[200];
        shape_text(r, d, have, sizeof have), shape_text(rank, dims, want, sizeof want);
        return error("%s: dataset %s has shape %s, expected %s", fname, dataset, have, want);
    }
    hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT), stored = ds < 0 ? -1 : H5Dget_type(ds);
    int same = stored >= 0 && same_type(stored, type);
    char have[64] = "unreadable", want[64];
    if (stored >= 0) type_name(stored, have, sizeof have), H5Tclose(stored);
    if (ds >= 0) H5Dclose(ds);
    type_name(type, want, sizeof want);
    return same ? 0 : error("%s: dataset %s is %s, expected %s", fname, dataset, have, want);
}

int h5_raw_address(hid_t file, const char *fname, const char *dataset, hid_t type, int rank, const hsize_t *dims,
                   int64_t file_size, int64_t *addr) {
    if (check_exact(file, fname, dataset, type, rank, dims)) return -1;
    hid_t ds = H5Dopen2(file, dataset, H5P_DEFAULT), dcpl = ds < 0 ? -1 : H5Dget_create_plist(ds);
    int contiguous = dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl) == 0;
    uint64_t bytes = (uint64_t)H5Tget_size(type);
    for (int i = 0; i < rank; i++) bytes = size_mul(bytes, dims[i]);
    haddr_t at = ds < 0 ? HADDR_UNDEF : H5Dget_offset(ds);
    if (dcpl >= 0) H5Pclose(dcpl);
    if (ds >= 0) H5Dclose(ds);
    if (!contiguous) return error("%s: dataset %s is not stored contiguously without filters, as ddptok writes it", fname, dataset);
    if (bytes == 0) return *addr = 0, 0;
    if (at == HADDR_UNDEF || at > (haddr_t)file_size || bytes > (uint64_t)file_size - at)
        return error("%s: dataset %s (%llu bytes) lies outside the file's %lld bytes (truncated?)", fname, dataset,
                     (unsigned long long)bytes, (long long)file_size);
    *addr = (int64_t)at;
    return 0;
}

int h5_read_exact(hid_t file, const char *fname, const char *dataset, hid_t type, int rank, const hsize_t *dims, void *out) {
    if (check_exact(file, fname, dataset, type, rank, dims)) return -1;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= (int64_t)dims[i];
    return h5_read(file, fname, dataset, type, n, out);
}

typedef struct {
    int (*fn)(const char *name, void *ctx);
    void *ctx;
} AttrVisit;

static herr_t attr_visit(hid_t loc, const char *name, const H5A_info_t *info, void *data) {
    (void)loc, (void)info;
    const AttrVisit *v = data;
    return v->fn(name, v->ctx);
}

int h5_attr_each(hid_t loc, int (*fn)(const char *name, void *ctx), void *ctx) {
    AttrVisit v = {fn, ctx};
    hsize_t at = 0;
    herr_t rc = H5Aiterate2(loc, H5_INDEX_NAME, H5_ITER_INC, &at, attr_visit, &v);
    return rc < 0 ? -1 : (int)rc;
}

static hid_t attr_open(hid_t loc, const char *fname, const char *name) {
    if (H5Aexists(loc, name) <= 0) return error("%s: attribute %s is missing", fname, name);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    return a < 0 ? error("%s: cannot open attribute %s", fname, name) : a;
}

#define MAX_ATTR_STRING (1 << 20)  // the longest string attribute ddptok writes is a config

char *h5_attr_read_str(hid_t loc, const char *fname, const char *name) {
    hid_t a = attr_open(loc, fname, name);
    if (a < 0) return NULL;
    hid_t t = H5Aget_type(a);
    char *out = NULL;
    size_t n = H5Tget_size(t);  // bounded: a damaged file may declare any size
    if (H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t) && n <= MAX_ATTR_STRING) {
        out = xcalloc(n + 1, 1);
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, n);
        if (H5Aread(a, mt, out) < 0) free(out), out = NULL;
        H5Tclose(mt);
    }
    H5Tclose(t);
    H5Aclose(a);
    if (!out) error("%s: attribute %s is not a readable string (of at most %d bytes)", fname, name, MAX_ATTR_STRING);
    return out;
}

static int attr_read_num(hid_t loc, const char *fname, const char *name, hid_t type, void *out, int count) {
    hid_t a = attr_open(loc, fname, name);
    if (a < 0) return -1;
    hid_t sp = H5Aget_space(a), stored = H5Aget_type(a);
    // HDF5 would convert a float to an integer (and back) silently: the class must match.
    int same_class = stored >= 0 && H5Tget_class(stored) == H5Tget_class(type);
    int ok = same_class && H5Sget_simple_extent_npoints(sp) == count && H5Aread(a, type, out) >= 0;
    if (stored >= 0) H5Tclose(stored);
    H5Sclose(sp);
    H5Aclose(a);
    if (!same_class)
        return error("%s: attribute %s is not %s", fname, name, H5Tget_class(type) == H5T_INTEGER ? "an integer" : "a floating-point number");
    if (!ok && count > 1) return error("%s: attribute %s is not %d readable numbers", fname, name, count);
    return ok ? 0 : error("%s: attribute %s is not a readable number", fname, name);
}

int h5_attr_read_i64(hid_t loc, const char *fname, const char *name, int64_t *out) {
    return attr_read_num(loc, fname, name, H5T_NATIVE_INT64, out, 1);
}

int h5_attr_read_i64_array(hid_t loc, const char *fname, const char *name, int64_t *out, int n) {
    return attr_read_num(loc, fname, name, H5T_NATIVE_INT64, out, n);
}

int h5_attr_read_f64(hid_t loc, const char *fname, const char *name, double *out) {
    return attr_read_num(loc, fname, name, H5T_NATIVE_DOUBLE, out, 1);
}
