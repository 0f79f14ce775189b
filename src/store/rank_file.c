// rank_file.c — one rank's checkpoint file: its HDF5 layout, the payload checksum and the
// manifest entry that covers its bytes (see rank_file.h). The collective protocol that
// publishes a directory of them is checkpoint.c.
#include "store/rank_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"
#include "base/sha256.h"
#include "base/testpoint.h"
#include "config/budget.h"
#include "model/workload.h"
#include "data/sampler.h"
#include "io/h5io.h"
#include "store/checkpoint.h"

void checkpoint_state_free(CheckpointState *s) {
    free(s->config_yaml);
    free(s->theta);
    free(s->last);
    optimizer_snapshot_free(&s->opt);
    s->config_yaml = NULL, s->theta = NULL, s->last = NULL;
}

void checkpoint_rank_path(char *out, size_t len, const char *dir, int rank) {
    snprintf(out, len, "%s/rank-%04d.h5", dir, rank);
}

// SHA-256 over everything the file carries, in a fixed order. The header line names the
// optimizer's scalars as the file holds them: format 2 lists every hyper-parameter attribute
// the file holds (s->hyper_stored), in the table's order (optimizer.h), so a file written
// before a hyper-parameter existed still verifies; version 1 named SGD's fixed fields (kept
// to verify old files). Format 3 adds the sampler's epoch position and running hash to the
// header and hashes the last window where formats 1 and 2 hashed the whole `history` (step, A, B).
static void state_checksum(const CheckpointState *s, int version, const int32_t *history, char out[65]) {
    Sha256 *h = sha256_begin();
    const OptimizerSnapshot *o = &s->opt;
    char head[1024];
    int n;
    if (version == 1)
        n = snprintf(head, sizeof head, "%s v%d step=%d world=%d rank=%d A=%d B=%d mv=%d lr=%.17g mu=%.17g wd=%.17g\n",
                     CHECKPOINT_FORMAT, version, s->step, s->world_size, s->rank, s->A, s->B, o->steps > 0, o->h.lr,
                     o->h.momentum, o->h.weight_decay);
    else {
        n = snprintf(head, sizeof head, "%s v%d step=%d world=%d rank=%d A=%d B=%d optimizer=%s steps=%lld",
                     CHECKPOINT_FORMAT, version, s->step, s->world_size, s->rank, s->A, s->B, optimizer_names[o->kind],
                     (long long)o->steps);
        HyperAttr at;
        for (int a = 0; optimizer_hyper_attr(a, &at) == 0; a++)
            if (s->hyper_stored & 1u << a)
                n += snprintf(head + n, sizeof head - (size_t)n, " %s=%.17g", at.name, optimizer_hyper_get(&o->h, a));
        if (version >= 3)
            n += snprintf(head + n, sizeof head - (size_t)n, " epoch=%lld window=%lld windows_sha256=%s", (long long)s->epoch,
                          (long long)s->window, s->windows_hash);
        n += snprintf(head + n, sizeof head - (size_t)n, "\n");
    }
    sha256_add(h, head, (size_t)n);
    sha256_add(h, s->config_yaml, strlen(s->config_yaml));
    sha256_add(h, s->lock, 64);
    sha256_add(h, s->theta, s->m.total * sizeof(float));
    for (int i = 0; i < optimizers[o->kind].n_states; i++) sha256_add(h, o->state[i], s->m.total * sizeof(float));
    if (version >= 3) sha256_add(h, s->last, (size_t)s->A * s->B * sizeof(int32_t));
    else sha256_add(h, history, (size_t)s->step * s->A * s->B * sizeof(int32_t));
    sha256_add(h, &s->sampler_rng, sizeof s->sampler_rng);
    sha256_add(h, &s->dropout_rng, sizeof s->dropout_rng);
    sha256_hex(h, out);
}

// /optimizer/<state>/<param> for each state tensor; /optimizer attributes `name`, `step`
// (updates applied) and every hyper-parameter.
static int write_optimizer(hid_t f, const ModelShape *m, const OptimizerSnapshot *o) {
    char name[128];
    for (int i = 0; i < optimizers[o->kind].n_states; i++) {
        snprintf(name, sizeof name, "optimizer/%s", optimizers[o->kind].state_names[i]);
        if (h5_write_params(f, name, m, o->state[i])) return -1;
    }
    hid_t g = H5Lexists(f, "optimizer", H5P_DEFAULT) > 0 ? H5Gopen2(f, "optimizer", H5P_DEFAULT)
                                                          : H5Gcreate2(f, "optimizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) return error("cannot create /optimizer");
    int rc = h5_attr_str(g, "name", optimizer_names[o->kind]) || h5_attr_i64(g, "step", o->steps);
    HyperAttr at;
    for (int a = 0; optimizer_hyper_attr(a, &at) == 0 && !rc; a++) rc = h5_attr_f64(g, at.name, optimizer_hyper_get(&o->h, a));
    H5Gclose(g);
    return rc ? -1 : 0;
}

typedef struct {
    const char *path;
    int version;
} UnknownAttr;

// h5_attr_each's visitor of /optimizer: 0 for an attribute of the format, else one line and 1.
static int unknown_attr(const char *name, void *ctx) {
    const UnknownAttr *u = ctx;
    static const char *const v1[] = {"lr", "momentum", "weight_decay", "momentum_valid"};
    if (u->version == 1) {
        for (int i = 0; i < 4; i++)
            if (!strcmp(name, v1[i])) return 0;
    } else {
        if (!strcmp(name, "name") || !strcmp(name, "step")) return 0;
        HyperAttr at;
        for (int a = 0; optimizer_hyper_attr(a, &at) == 0; a++)
            if (!strcmp(name, at.name)) return 0;
    }
    error("%s: /optimizer attribute '%.60s' is not one of format %d's (a hyper-parameter this ddptok does not know?)",
          u->path, name, u->version);
    return 1;
}

// Reads /optimizer of a file of `version` into `o` (state tensors allocated, P each) and
// `*stored` (bit a: the file holds hyper-parameter attribute a); `step` is the checkpoint's
// step (an SGD version-1 file says only whether momentum is valid, which means step updates
// were applied). A hyper-parameter the file does not hold (written before it existed) takes
// the table's default. 0 or -1 with one line.
static int read_optimizer(hid_t f, const char *path, int version, const ModelShape *m, int64_t step, OptimizerSnapshot *o,
                          uint32_t *stored) {
    memset(o, 0, sizeof *o);
    optimizer_hyper_defaults(&o->h);
    *stored = 0;
    hid_t g = H5Gopen2(f, "optimizer", H5P_DEFAULT);
    if (g < 0) return error("%s: no /optimizer group", path);
    int bad = 0;
    if (version == 1) {
        int64_t mv = -1;
        o->kind = OPT_SGD;
        bad = h5_attr_read_f64(g, path, "lr", &o->h.lr) || h5_attr_read_f64(g, path, "momentum", &o->h.momentum) ||
              h5_attr_read_f64(g, path, "weight_decay", &o->h.weight_decay) || h5_attr_read_i64(g, path, "momentum_valid", &mv);
        if (!bad && mv != 0 && mv != 1) bad = error("%s: optimizer momentum_valid %lld, expected 0 or 1", path, (long long)mv);
        o->steps = mv == 1 ? step : 0;
    } else {
        char *name = h5_attr_read_str(g, path, "name");
        bad = !name;
        if (name) {
            int k = 0;
            while (k < OPT_COUNT && strcmp(name, optimizer_names[k]) != 0) k++;
            if (k == OPT_COUNT) bad = error("%s: /optimizer name '%.40s' is no optimizer this ddptok knows", path, name);
            o->kind = k < OPT_COUNT ? (OptimizerKind)k : OPT_SGD;
            free(name);
        }
        bad = bad || h5_attr_read_i64(g, path, "step", &o->steps);
        HyperAttr at;
        for (int a = 0; optimizer_hyper_attr(a, &at) == 0 && !bad; a++) {
            htri_t held = H5Aexists(g, at.name);
            if (held < 0) bad = error("%s: /optimizer attribute %s is unreadable", path, at.name);
            else if (held) bad = h5_attr_read_f64(g, path, at.name, optimizer_hyper_slot(&o->h, a)), *stored |= 1u << a;
        }
        if (!bad && (o->steps < 0 || o->steps > step))
            bad = error("%s: optimizer step %lld outside [0, %lld]", path, (long long)o->steps, (long long)step);
    }
    // Nothing else: an attribute this ddptok does not know (a hyper-parameter of a newer one)
    // would be ignored, and the trajectory with it.
    UnknownAttr u = {.path = path, .version = version};
    if (!bad) bad = h5_attr_each(g, unknown_attr, &u) != 0;
    H5Gclose(g);
    HyperAttr at;
    for (int a = 0; optimizer_hyper_attr(a, &at) == 0 && !bad; a++) {
        double v = optimizer_hyper_get(&o->h, a);
        if (!(v >= at.row->min && v <= at.row->max))
            bad = error("%s: /optimizer %s is %g, expected a number in [%g, %g]", path, at.name, v, at.row->min, at.row->max);
    }
    char name[128];
    for (int i = 0; i < optimizers[o->kind].n_states && !bad; i++) {
        o->state[i] = xmalloc(m->total * sizeof(float));
        snprintf(name, sizeof name, "optimizer/%s", optimizers[o->kind].state_names[i]);
        bad = h5_read_params(f, path, name, m, o->state[i]);
    }
    if (bad) optimizer_snapshot_free(o);
    return bad ? -1 : 0;
}

// Every byte of a rank file is covered by the directory's manifest (sha256sum format):
// HDF5 files have slack space that the in-file payload checksum cannot see. The rank
// file's bytes, read once into `image`, are what is hashed here and what HDF5 then parses.
// Every line of the manifest counts, whatever precedes it (a blank line, a NUL byte); two
// entries for the same file that disagree are refused.
// `got` is the SHA-256 (hex) of the file's bytes, however they were read.
static int verify_manifest_digest(const char *path, const char got[65]) {
    char dir[1100], manifest[1200], want[65] = "", why[256];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash) *slash = 0;
    else strcpy(dir, ".");
    snprintf(manifest, sizeof manifest, "%s/" CHECKPOINT_MANIFEST, dir);
    size_t mlen;
    // One line per rank file (~80 bytes): room for MAX_WORLD of them, not a fixed 1 MiB (13 000 ranks).
    char *text = file_read_regular(manifest, ((size_t)MAX_WORLD + 16) * 128, &mlen, why, sizeof why);
    if (!text) return error("%s: cannot read (%s): an incomplete or damaged checkpoint", manifest, why);
    char hex[65], name[1200], other[1200], stray[1400] = "";
    int conflict = 0, no = 0, r;
    struct stat st;
    for (char *line = text, *end = text + mlen, *next; line < end; line = next) {
        next = memchr(line, '\n', (size_t)(end - line));
        next = next ? (*next = 0, next + 1) : end;  // a line holding a NUL byte ends there
        no++;
        int fields = sscanf(line, "%64s %1199s", hex, name);
        if (fields <= 0) continue;  // a blank line
        // Every other line is an entry for a rank file that is there: a line naming another
        // file, one that is not there or a malformed one is refused (it was ignored).
        if (!stray[0] && (fields != 2 || !is_sha256_hex(hex)))
            snprintf(stray, sizeof stray, "line %d is not \"SHA-256  rank-NNNN.h5\"", no);
        else if (!stray[0] && (sscanf(name, "rank-%4d.h5", &r) != 1 || r < 0 || (checkpoint_rank_path(other, sizeof other, dir, r),
                                                                         strcmp(other + strlen(dir) + 1, name) != 0)))
            snprintf(stray, sizeof stray, "line %d names %.80s, not a rank file", no, text_safe(name));
        else if (!stray[0] && stat(other, &st) != 0)
            snprintf(stray, sizeof stray, "line %d names %.80s, which is not there", no, text_safe(name));
        if (fields != 2 || strcmp(name, base) != 0) continue;
        conflict |= want[0] && strcmp(want, hex) != 0;
        snprintf(want, sizeof want, "%s", hex);
    }
    free(text);
    if (stray[0]) return error("%s: %s: a damaged or altered manifest", manifest, stray);
    if (!want[0]) return error("%s: no entry for %s", manifest, base);
    if (conflict) return error("%s: two entries for %s that differ: a damaged manifest", manifest, base);
    if (strcmp(want, got) != 0)
        return error("%s: SHA-256 %.12s… differs from %s's %.12s…: the file is damaged", path, got, CHECKPOINT_MANIFEST, want);
    return 0;
}

int checkpoint_verify_manifest(const char *path, const char *image, size_t len) {
    char got[65];
    Sha256 *h = sha256_begin();
    sha256_add(h, image, len);
    sha256_hex(h, got);
    return verify_manifest_digest(path, got);
}

// The SHA-256 of a regular file, read in 1 MiB pieces: a rank file that is only hashed
// (another rank's, under the global sampler) is never held whole; with Adam's state GPT-2
// small's is ~1.5 GB.
static int file_sha256(const char *path, char hex[65], char *why, size_t whylen) {
    int fd = open_regular_fd(path, NULL, why, whylen);
    if (fd < 0) return -1;
    enum { PIECE = 1 << 20 };
    char *buf = xmalloc(PIECE);
    Sha256 *h = sha256_begin();
    ssize_t got;
    while ((got = read(fd, buf, PIECE)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break;
        sha256_add(h, buf, (size_t)got);
    }
    if (got < 0) snprintf(why, whylen, "%s", strerror(errno));
    sha256_hex(h, hex);
    free(buf), close(fd);
    test_point("checkpoint_share_hashed");
    return got < 0 ? -1 : 0;
}

// What a share's verdict was given for: the files' and the manifest's identity (device,
// inode, size, modification and change times). `--resume latest` verifies a share when it
// picks the checkpoint and again when it resumes from it; the second pass hashes nothing
// unless a file changed in between.
static uint64_t share_signature(const char *dir, int files, int rank, int W) {
    uint64_t sig = 1469598103934665603ull;
    char path[1200];
    struct stat st;
    for (int r = rank - W; r < files; r += W) {  // r < rank: the manifest
        if (r < 0) snprintf(path, sizeof path, "%s/" CHECKPOINT_MANIFEST, dir);
        else if (r == 0) continue;
        else checkpoint_rank_path(path, sizeof path, dir, r);
        if (stat(path, &st) != 0) return 0;
        // ctime too: a filesystem with coarse mtimes, or a writer that restores the mtime, still
        // moves the inode's change time.
        uint64_t v[7] = {(uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
                         (uint64_t)st.st_mtim.tv_nsec, (uint64_t)st.st_ctim.tv_sec, (uint64_t)st.st_ctim.tv_nsec};
        for (int i = 0; i < 7; i++) sig = (sig ^ v[i]) * 1099511628211ull;
    }
    return sig;
}

int checkpoint_verify_share(const char *dir, int files, int rank, int W) {
    static char verified_dir[1100];
    static int verified_files = -1, verified_rank = -1, verified_W = -1;
    static uint64_t verified_sig;
    uint64_t sig = share_signature(dir, files, rank, W);
    if (sig && sig == verified_sig && files == verified_files && rank == verified_rank && W == verified_W &&
        strcmp(dir, verified_dir) == 0)
        return 0;
    for (int r = rank; r < files; r += W) {
        if (r == 0) continue;  // read and verified whole by every rank
        char path[1200], why[256], got[65];
        checkpoint_rank_path(path, sizeof path, dir, r);
        if (file_sha256(path, got, why, sizeof why) != 0) return error("%s: cannot read: %s", path, why);
        if (verify_manifest_digest(path, got) != 0) return -1;
    }
    snprintf(verified_dir, sizeof verified_dir, "%s", dir);
    verified_files = files, verified_rank = rank, verified_W = W, verified_sig = sig;
    return 0;
}

static int write_rng(hid_t f, const char *group, const RngStream *r) {
    char name[64];
    hsize_t two = 2, one = 1;
    snprintf(name, sizeof name, "rng/%s/key", group);
    if (h5_write(f, name, H5T_NATIVE_UINT32, 1, &two, r->key)) return -1;
    snprintf(name, sizeof name, "rng/%s/counter", group);
    return h5_write(f, name, H5T_NATIVE_UINT64, 1, &one, &r->counter);
}

static int read_rng(hid_t f, const char *path, const char *group, RngStream *r) {
    char name[64];
    hsize_t two = 2, one = 1;
    snprintf(name, sizeof name, "rng/%s/key", group);
    if (h5_read_exact(f, path, name, H5T_NATIVE_UINT32, 1, &two, r->key)) return -1;
    snprintf(name, sizeof name, "rng/%s/counter", group);
    return h5_read_exact(f, path, name, H5T_NATIVE_UINT64, 1, &one, &r->counter);
}

// /sampler attributes: windows_sha256 (the running hash), epoch and window (the next window's position).
static int write_sampler_attrs(hid_t f, const CheckpointState *s) {
    hid_t g = H5Gopen2(f, "sampler", H5P_DEFAULT);
    if (g < 0) return error("cannot open /sampler");
    int rc = h5_attr_str(g, "windows_sha256", s->windows_hash) || h5_attr_i64(g, "epoch", s->epoch) ||
             h5_attr_i64(g, "window", s->window);
    H5Gclose(g);
    return rc ? -1 : 0;
}

static int read_sampler_attrs(hid_t f, const char *path, CheckpointState *s) {
    hid_t g = H5Gopen2(f, "sampler", H5P_DEFAULT);
    if (g < 0) return error("%s: no /sampler group", path);
    char *hash = h5_attr_read_str(g, path, "windows_sha256");
    int bad = !hash || h5_attr_read_i64(g, path, "epoch", &s->epoch) || h5_attr_read_i64(g, path, "window", &s->window);
    H5Gclose(g);
    if (!bad && !is_sha256_hex(hash)) bad = error("%s: /sampler windows_sha256 is not a SHA-256 (damaged)", path);
    if (!bad) snprintf(s->windows_hash, sizeof s->windows_hash, "%s", hash);
    free(hash);
    return bad ? -1 : 0;
}

// A format 1 or 2 file's whole history (step, A, B) in the bounded form of format 3: the last
// window, the running hash over every window, the bands sampler's position (0, step). (A global
// file of format <= 2 holds windows of the with-replacement sampler: checkpoint_check_draws refuses it.)
static void history_to_bounded(CheckpointState *s, const int32_t *history) {
    size_t per = (size_t)s->A * s->B;
    window_hash_init(s->windows_hash);
    for (int u = 0; u < s->step; u++) window_hash_add(s->windows_hash, history + (size_t)u * per, per);
    for (size_t i = 0; i < per; i++) s->last[i] = s->step ? history[(size_t)(s->step - 1) * per + i] : -1;
    s->epoch = 0, s->window = s->step;
}

int rank_file_write(const char *path, const CheckpointState *s, char file_sum[65]) {
    H5Out o;
    if (h5out_open(&o, path)) return -1;
    char sum[65];
    CheckpointState every = *s;  // a file written now holds every hyper-parameter
    every.hyper_stored = (uint32_t)((1ull << optimizer_n_hyper_attrs()) - 1);
    state_checksum(&every, CHECKPOINT_VERSION, NULL, sum);
    hsize_t ld[2] = {(hsize_t)s->A, (hsize_t)s->B};
    hid_t f = o.file;
    int rc = h5_write_params(f, "model", &s->m, s->theta) || write_optimizer(f, &s->m, &s->opt) ||
             h5_write(f, "sampler/last", H5T_NATIVE_INT32, 2, ld, s->last) || write_sampler_attrs(f, s) ||
             write_rng(f, "sampler", &s->sampler_rng) || write_rng(f, "dropout", &s->dropout_rng);
    if (!rc)
        rc = h5_attr_str(f, "format", CHECKPOINT_FORMAT) || h5_attr_i64(f, "version", CHECKPOINT_VERSION) ||
             h5_attr_i64(f, "step", s->step) || h5_attr_i64(f, "world_size", s->world_size) ||
             h5_attr_i64(f, "rank", s->rank) || h5_attr_str(f, "config", s->config_yaml) ||
             h5_attr_str(f, "data_lock", s->lock) || h5_attr_str(f, "checksum", sum);
    if (rc) return h5out_fail(&o, "the checkpoint");
    return h5out_commit(&o, file_sum);
}

// ---------------------------------------------------------------------------------------
// Derived fields: everything a rank file holds that something else determines is derived and
// compared, not trusted (the checksums are unkeyed: anyone can recompute them around a
// change). checkpoint_load checks what the file itself determines; checkpoint_check_draws
// what takes the corpus (the sampler's draws).

// The shortest decimal that reads back to v (for messages about doubles).
static const char *shortest(double v, char *buf, size_t len) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, v);
        if (strtod(buf, NULL) == v || v != v) break;
    }
    return buf;
}

// The first element of x (P, θ-shaped) that is not finite, or negative when `nonnegative`:
// one line naming group/<param>[i], or 0.
static int check_tensor(const char *path, const char *group, const ModelShape *m, const float *x, int nonnegative) {
    for (int p = 0; p < m->n_tensors; p++)
        for (size_t i = 0; i < m->size[p]; i++) {
            float v = x[m->offset[p] + i];
            if (!isfinite(v) || (nonnegative && v < 0))
                return error("%s: %s/%s[%zu] is %g, expected a finite number%s", path, group, m->name[p], i, (double)v,
                             nonnegative ? " >= 0" : "");
        }
    return 0;
}

static int check_key(const char *path, const char *group, const RngStream *have, RngStream want, unsigned purpose, int rank) {
    if (have->key[0] == want.key[0] && have->key[1] == want.key[1]) return 0;
    return error("%s: /rng/%s/key is (%u, %#x), expected (%u, %#x): (seed, purpose %u << 24 | rank %d)", path, group,
                 have->key[0], have->key[1], want.key[0], want.key[1], purpose, rank);
}

// The rank of a file named exactly as checkpoint_rank_path names it (rank-0001.h5), else -1.
static int rank_of_name(const char *name) {
    char canon[64];
    int r;
    if (sscanf(name, "rank-%d", &r) != 1 || r < 0) return -1;
    snprintf(canon, sizeof canon, "rank-%04d.h5", r);
    return strcmp(canon, name) == 0 ? r : -1;
}

static int check_derived(const char *path, const CheckpointState *s) {
    const Config *cc = &s->cfg;
    char dir[1100], buf[2][40];
    // The names: step-NNNN/ says the step, rank-RRRR.h5 the rank (any other name says nothing).
    dir_of(path, dir, sizeof dir);
    const char *dname = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir, *fname = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int named = checkpoint_step_of(dname), rank_named = rank_of_name(fname);
    if (named >= 0 && named != s->step)
        return error("%s: step is %d, expected %d (the directory's name %s)", path, s->step, named, dname);
    if (rank_named >= 0 && rank_named != s->rank) return error("%s: rank is %d, expected %d (the file's name)", path, s->rank, rank_named);
    if (s->world_size != cc->train.world_size)
        return error("%s: world_size is %d, expected %d (its stored config's train.world_size)", path, s->world_size,
                     cc->train.world_size);
    // The optimizer: its step and its hyper-parameters.
    const OptimizerRow *row = &optimizers[s->opt.kind];
    if (row->step_is_update && s->opt.steps != s->step)
        return error("%s: /optimizer step is %lld, expected %d (the checkpoint's step: %s counts every update)", path,
                     (long long)s->opt.steps, s->step, optimizer_names[s->opt.kind]);
    HyperAttr at;
    for (int a = 0; optimizer_hyper_attr(a, &at) == 0; a++) {
        double have = optimizer_hyper_get(&s->opt.h, a), want = optimizer_hyper_get(&cc->train.hyper, a);
        if (have != want)
            return error("%s: /optimizer %s is %s, expected %s (its stored config's train.optimizer.%s%s)", path, at.name,
                         shortest(have, buf[0], sizeof buf[0]), shortest(want, buf[1], sizeof buf[1]), at.row->field,
                         at.row->n > 1 ? (at.elem ? "[1]" : "[0]") : "");
    }
    // The streams: keys from (seed, purpose, rank); dropout's counter from the step.
    int global = cc->train.sampler == SAMPLER_GLOBAL;
    unsigned sp = global ? RNG_GLOBAL_SAMPLER : RNG_SAMPLER, dp = global ? RNG_KEYED_DROPOUT : RNG_DROPOUT;
    int rr = global ? 0 : s->rank;
    if (check_key(path, "sampler", &s->sampler_rng, rng_stream(cc->seed, sp, (uint32_t)rr), sp, rr) ||
        check_key(path, "dropout", &s->dropout_rng, rng_stream(cc->seed, dp, (uint32_t)rr), dp, rr))
        return -1;
    uint64_t blocks = global ? 0 : (uint64_t)s->step * (uint64_t)cc->train.accumulation;
    if (s->dropout_rng.counter != blocks)
        return global ? error("%s: /rng/dropout/counter is %llu, expected 0 (keyed dropout advances no counter)", path,
                              (unsigned long long)s->dropout_rng.counter)
                      : error("%s: /rng/dropout/counter is %llu, expected %llu (one block per microbatch: step %d x A = %d)",
                              path, (unsigned long long)s->dropout_rng.counter, (unsigned long long)blocks, s->step,
                              cc->train.accumulation);
    // The bands sampler has no epochs: its position is (0, step) (the global sampler's takes the
    // corpus: checkpoint_check_draws).
    if (!global && (s->epoch != 0 || s->window != s->step))
        return error("%s: /sampler epoch, window are (%lld, %lld), expected (0, %d) (the bands sampler has no epochs)", path,
                     (long long)s->epoch, (long long)s->window, s->step);
    // The tensors: finite (nothing else is ever published), and AdamW's v >= 0.
    if (check_tensor(path, "/model", &s->m, s->theta, 0)) return -1;
    for (int i = 0; i < row->n_states; i++) {
        char group[64];
        snprintf(group, sizeof group, "/optimizer/%s", row->state_names[i]);
        if (check_tensor(path, group, &s->m, s->opt.state[i], row->nonnegative[i])) return -1;
    }
    return 0;
}

// ---------------------------------------------------------------------------------------
// The replay. The bands sampler's stream is a chain (rejection sampling: where window u's draw
// starts depends on every draw before it), and so is the running hash of formats 1-3: both are
// replayed from step 0, one window's draw and hash per step. In memory, the states it passes
// every ANCHOR_EVERY windows are kept as anchors (this process computed them: nothing read
// from a file is trusted), so check-checkpoints, which verifies a lineage's checkpoints in
// step order, replays each stream once in all instead of once per checkpoint (it was
// quadratic); a replay that takes more than ~2 s says how far it is (work_progress). Format 4's
// global sampler needs none of it: its windows are random access and its hash a digest of what
// determines them (sampler_windows_digest), O(G) per checkpoint at any step.
enum { ANCHOR_EVERY = 4096, ANCHORS_MAX = 1 << 16 };
typedef struct {
    char key[65];   // the stream: SHA-256 of the corpus lock, the stored config and the stream's rank
    uint64_t step;  // windows drawn
    RngStream rng;  // the stream after them
    char hash[65];  // the running hash of them
} Anchor;
static Anchor *g_anchor;
static int g_anchors;

static void stream_key(const CheckpointState *s, const Corpus *corpus, int rank, char key[65]) {
    Sha256 *h = sha256_begin();
    char head[64];
    int n = snprintf(head, sizeof head, "ddptok-replay rank=%d\n", rank);
    sha256_add(h, head, (size_t)n);
    sha256_add(h, corpus->lock, strlen(corpus->lock));
    sha256_add(h, s->config_yaml, strlen(s->config_yaml));
    sha256_hex(h, key);
}

// The anchor of `key` nearest below `before` (at most before - 1 windows: the window at
// `before` is drawn again, for its ids), or NULL.
static const Anchor *anchor_below(const char *key, uint64_t before) {
    const Anchor *best = NULL;
    for (int i = 0; i < g_anchors; i++)
        if (g_anchor[i].step < before && (!best || g_anchor[i].step > best->step) && !strcmp(g_anchor[i].key, key)) best = &g_anchor[i];
    return best;
}

static void anchor_put(const char *key, uint64_t step, const RngStream *rng, const char *hash) {
    for (int i = 0; i < g_anchors; i++)
        if (g_anchor[i].step == step && !strcmp(g_anchor[i].key, key)) return;
    if (g_anchors == ANCHORS_MAX) return;  // 7 MiB of them: the rest is replayed
    if (!(g_anchors & (g_anchors - 1))) {  // 0, 1, 2, 4, ...: grow
        g_anchor = realloc(g_anchor, (size_t)(g_anchors ? 2 * g_anchors : 64) * sizeof *g_anchor);
        ASSERT(g_anchor);
    }
    Anchor *a = &g_anchor[g_anchors++];
    memcpy(a->key, key, 65), memcpy(a->hash, hash, 65);
    a->step = step, a->rng = *rng;
}

// Draws windows 1..step of the sampler `sm` (fresh from sampler_init) as training did: `ids`
// ends as window `step` (-1 at step 0), `hash` as their running hash, sm's stream where they
// leave it.
static void replay(Sampler *sm, const char *key, const char *path, uint64_t step, int32_t *ids, size_t per, char hash[65]) {
    for (size_t i = 0; i < per; i++) ids[i] = -1;
    window_hash_init(hash);
    uint64_t u = 0;
    const Anchor *from = anchor_below(key, step);
    if (from) sm->rng = from->rng, memcpy(hash, from->hash, 65), u = from->step;
    char what[1300];
    snprintf(what, sizeof what, "%s: replaying its sampler, window", text_safe(path));
    WorkProgress progress;
    work_progress_init(&progress, what);
    for (; u < step; u++) {
        sampler_next(sm, ids);
        window_hash_add(hash, ids, per);
        if ((u + 1) % ANCHOR_EVERY == 0) anchor_put(key, u + 1, &sm->rng, hash);
        if (!(u & 255)) work_progress(&progress, (int64_t)u, (int64_t)step);
    }
}

int checkpoint_check_draws(const char *path, const CheckpointState *s, const Corpus *corpus) {
    int global = s->cfg.train.sampler == SAMPLER_GLOBAL;
    if (global && s->version < 3)
        return error("%s: a checkpoint of format %d holds windows of the with-replacement global sampler; this ddptok's "
                     "global sampler draws epochs (docs/sampling.md \"Epochs\"): it cannot resume or verify it", path, s->version);
    Sampler sm;
    int rank = global ? 0 : s->rank;
    if (sampler_init(&sm, &s->cfg, corpus, rank)) return error("%s: its sampler cannot be replayed on this corpus", path);
    size_t per = (size_t)sm.A * sm.B;
    int32_t *ids = xmalloc(per * sizeof *ids);
    char hash[65], key[65];
    int rc = sm.A == s->A && sm.B == s->B ? 0 : error("%s: BUG: window shape (%d, %d) vs sampler's (%d, %d)", path, s->A, s->B, sm.A, sm.B);
    int digest = global && s->version >= 4;  // the windows' determinants, not their ids (sampler_windows_digest)
    if (!rc && digest) {  // O(G): window `step` by random access, the stream's counter = the windows drawn
        for (size_t i = 0; i < per; i++) ids[i] = -1;
        if (s->step > 0) sampler_window_at(&sm, (uint64_t)s->step - 1, ids);
        sm.rng.counter = (uint64_t)s->step;
        sampler_windows_digest(&sm, s->cfg.seed, (uint64_t)s->step, hash);
    } else if (!rc) {
        stream_key(s, corpus, rank, key);
        replay(&sm, key, path, (uint64_t)s->step, ids, per, hash);
    }
    int64_t epoch, window;
    sampler_position(&sm, (uint64_t)s->step, &epoch, &window);
    for (size_t i = 0; i < per && !rc; i++)
        if (ids[i] != s->last[i])
            rc = error("%s: /sampler/last slot %zu is %d, expected %d (window %d of the %s from seed %u)", path, i, s->last[i],
                       ids[i], s->step, digest ? "global sampler's epochs" : "sampler replayed", s->cfg.seed);
    if (!rc && strcmp(hash, s->windows_hash) != 0) {
        if (digest)
            rc = error("%s: /sampler windows_sha256 is %.12s…, expected %.12s… (the digest of what determines the %d windows: "
                       "seed %u, %d train sequences from %d, G = %d)", path, s->windows_hash, hash, s->step, s->cfg.seed, sm.n_pool,
                       sm.train_begin, sm.B);
        else
            rc = error("%s: /sampler windows_sha256 is %.12s…, expected %.12s… (the running hash of the %d windows replayed from "
                       "seed %u): a window drawn before differs", path, s->windows_hash, hash, s->step, s->cfg.seed);
    }
    if (!rc && (epoch != s->epoch || window != s->window))
        rc = error("%s: /sampler epoch, window are (%lld, %lld), expected (%lld, %lld) (where window %d lies: %d windows per "
                   "epoch)", path, (long long)s->epoch, (long long)s->window, (long long)epoch, (long long)window, s->step + 1,
                   global ? sm.per_epoch : 0);
    if (!rc && sm.rng.counter != s->sampler_rng.counter)
        rc = error("%s: /rng/sampler/counter is %llu, expected %llu (where the sampler's %d windows, replayed from seed %u, leave it)",
                   path, (unsigned long long)s->sampler_rng.counter, (unsigned long long)sm.rng.counter, s->step, s->cfg.seed);
    free(ids);
    sampler_free(&sm);
    return rc;
}

// Every object of a rank file is one the format defines (docs/file-formats.md): the groups,
// /model/<tensor>, /optimizer/<state>/<tensor>, /rng/<stream>/{key,counter} and the sampler's
// window(s). Another one (an extra dataset or group, however it got there) is refused, named:
// nothing ddptok would read is in it, so a file holding it is not one ddptok wrote.
typedef struct {
    const char *path;
    const CheckpointState *s;
    int bad;
} ObjectVisit;

static int defined_object(const CheckpointState *s, const char *name) {
    static const char *const fixed[] = {"model", "optimizer", "rng", "rng/sampler", "rng/dropout", "sampler",
                                        "rng/sampler/key", "rng/sampler/counter", "rng/dropout/key", "rng/dropout/counter"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if (!strcmp(name, fixed[i])) return 1;
    if (!strcmp(name, s->version < 3 ? "sampler/history" : "sampler/last")) return 1;
    const char *rest = NULL;
    if (!strncmp(name, "model/", 6)) rest = name + 6;
    for (int i = 0; !rest && i < optimizers[s->opt.kind].n_states; i++) {
        size_t n = strlen(optimizers[s->opt.kind].state_names[i]);
        if (!strncmp(name, "optimizer/", 10) && !strncmp(name + 10, optimizers[s->opt.kind].state_names[i], n)) {
            if (!name[10 + n]) return 1;  // the state's group
            if (name[10 + n] == '/') rest = name + 11 + n;
        }
    }
    for (int t = 0; rest && t < s->m.n_tensors; t++)
        if (!strcmp(rest, s->m.name[t])) return 1;
    return 0;
}

static herr_t object_visit(hid_t g, const char *name, const H5L_info_t *info, void *data) {
    (void)g, (void)info;
    ObjectVisit *v = data;
    if (defined_object(v->s, name)) return 0;
    v->bad = error("%s: /%s is not an object of checkpoint format %d (an extra dataset or group: not a file ddptok wrote)",
                   v->path, text_safe(name), v->s->version);
    return 1;
}

static int check_objects(hid_t f, const char *path, const CheckpointState *s) {
    ObjectVisit v = {path, s, 0};
    if (H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, object_visit, &v) < 0 && !v.bad)
        return error("%s: its objects cannot be listed (damaged)", path);
    return v.bad ? -1 : 0;
}

int checkpoint_load(const char *path, CheckpointState *s) {
    memset(s, 0, sizeof *s);
    struct stat st;
    char dir[1100], why[256];
    dir_of(path, dir, sizeof dir);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return error("%s: no such checkpoint directory", dir);
    size_t len;
    char *image = file_read_regular(path, (size_t)memory_available(), &len, why, sizeof why);
    if (!image) return error("%s: cannot open: %s", path, why);
    hid_t f = checkpoint_verify_manifest(path, image, len) ? -2 : h5_open_image(path, image, len);
    free(image);
    if (f == -1) error("%s: not a readable HDF5 file (truncated or damaged?)", path);
    if (f < 0) return -1;
    int rc = -1;
    char *format = NULL, *sum = NULL, *lock = NULL;
    int64_t version, step, world, rank;
    int32_t *history = NULL;
    if (!(format = h5_attr_read_str(f, path, "format"))) goto out;
    if (strcmp(format, CHECKPOINT_FORMAT) != 0) {
        error("%s: format is '%s', expected '%s'", path, format, CHECKPOINT_FORMAT);
        goto out;
    }
    if (h5_attr_read_i64(f, path, "version", &version)) goto out;
    if (version < 1 || version > CHECKPOINT_VERSION) {
        error("%s: checkpoint version %lld, this ddptok reads versions 1 to %d", path, (long long)version, CHECKPOINT_VERSION);
        goto out;
    }
    s->version = (int)version;
    if (h5_attr_read_i64(f, path, "step", &step) || h5_attr_read_i64(f, path, "world_size", &world) ||
        h5_attr_read_i64(f, path, "rank", &rank) || !(s->config_yaml = h5_attr_read_str(f, path, "config")) ||
        !(lock = h5_attr_read_str(f, path, "data_lock")) || !(sum = h5_attr_read_str(f, path, "checksum")))
        goto out;
    if (world < 1 || world > MAX_WORLD || rank < 0 || rank >= world || !is_sha256_hex(lock) || !is_sha256_hex(sum)) {
        error("%s: world size %lld or rank %lld out of range, or its data_lock or checksum not a SHA-256 (damaged)", path,
              (long long)world, (long long)rank);
        goto out;
    }
    s->step = (int)step, s->world_size = (int)world, s->rank = (int)rank;
    snprintf(s->lock, sizeof s->lock, "%s", lock);
    // The shape comes from the checkpoint's own config, checked like any config, and its
    // buffers must fit before they are allocated.
    Config cc;
    char err[1024];
    if (config_from_yaml(&cc, s->config_yaml, path, err, sizeof err)) {
        error("%s: stored config unreadable: %s", path, err);
        goto out;
    }
    if (workload_check(&cc, err, sizeof err)) {
        error("%s: stored config: %s", path, err);
        goto out;
    }
    model_shape(&s->m, &cc);
    sampler_window_shape(&cc, &s->A, &s->B);  // a window's shape
    if (step < 0 || step > cc.train.updates) {
        error("%s: step %lld outside [0, %d]", path, (long long)step, cc.train.updates);
        goto out;
    }
    s->theta = xmalloc(s->m.total * sizeof(float));
    s->last = xmalloc(((size_t)s->A * s->B + 1) * sizeof(int32_t));
    // Formats 1 and 2 hold the whole history (step, A, B): read, checksummed, then converted to
    // format 3's bounded state (history_to_bounded); format 3 holds the last window (A, B).
    hsize_t hd[3] = {(hsize_t)s->step, (hsize_t)s->A, (hsize_t)s->B};
    if (s->version < 3) history = xmalloc(((size_t)s->step * s->A * s->B + 1) * sizeof(int32_t));
    if (h5_read_params(f, path, "model", &s->m, s->theta) || read_optimizer(f, path, s->version, &s->m, step, &s->opt, &s->hyper_stored) ||
        (history ? h5_read_exact(f, path, "sampler/history", H5T_NATIVE_INT32, 3, hd, history)
                 : h5_read_exact(f, path, "sampler/last", H5T_NATIVE_INT32, 2, hd + 1, s->last) || read_sampler_attrs(f, path, s)) ||
        read_rng(f, path, "sampler", &s->sampler_rng) || read_rng(f, path, "dropout", &s->dropout_rng))
        goto out;
    if (s->opt.kind != cc.train.optimizer) {
        error("%s: holds %s state, its config says train.optimizer.name %s", path, optimizer_names[s->opt.kind],
              optimizer_names[cc.train.optimizer]);
        goto out;
    }
    char want[65];
    state_checksum(s, s->version, history, want);
    if (strcmp(want, sum) != 0) {
        error("%s: checksum mismatch (stored %.12s…, computed %.12s…): the file is damaged", path, sum, want);
        goto out;
    }
    if (check_objects(f, path, s)) goto out;
    if (history) history_to_bounded(s, history);
    s->cfg = cc;
    if (check_derived(path, s)) goto out;
    rc = 0;
out:
    free(format), free(sum), free(lock), free(history);
    h5_close(f);
    if (rc) checkpoint_state_free(s);
    return rc;
}
