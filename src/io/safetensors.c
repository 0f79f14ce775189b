// safetensors.c — safetensors written and read (see safetensors.h).
#include "io/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/mem.h"
#include "base/report.h"
#include "io/jsonio.h"

#define ST_MAX_HEADER (100u << 20)

char *safetensors_image(const StTensorOut *t, int n, json_t *meta, size_t *len) {
    json_t *header = json_object();  // jansson keeps the insertion order
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        uint64_t count = 1;
        json_t *shape = json_array();
        for (int d = 0; d < t[i].rank; d++) count *= t[i].dims[d], json_array_append_new(shape, json_integer((json_int_t)t[i].dims[d]));
        json_object_set_new(header, t[i].name, json_pack("{s:s, s:o, s:[I, I]}", "dtype", "F32", "shape", shape, "data_offsets",
                                                         (json_int_t)at, (json_int_t)(at + 4 * count)));
        at += 4 * count;
    }
    if (meta) json_object_set_new(header, "__metadata__", meta);
    char *text = json_dumps(header, JSON_COMPACT);
    json_decref(header);
    if (!text) die(EXIT_BAD_INPUT, "safetensors: the header cannot be serialized (a name or metadata value that is not UTF-8?)");
    size_t h = strlen(text), padded = (h + 7) / 8 * 8;
    char *image = xmalloc(8 + padded + at);
    for (int i = 0; i < 8; i++) image[i] = (char)((uint64_t)padded >> (8 * i) & 0xFF);
    memcpy(image + 8, text, h);
    memset(image + 8 + h, ' ', padded - h);
    free(text);
    unsigned char *out = (unsigned char *)image + 8 + padded;  // little-endian whatever this machine's order
    for (int i = 0; i < n; i++) {
        uint64_t count = 1;
        for (int d = 0; d < t[i].rank; d++) count *= t[i].dims[d];
        for (uint64_t k = 0; k < count; k++, out += 4) {
            uint32_t bits;
            memcpy(&bits, &t[i].data[k], sizeof bits);
            for (int b = 0; b < 4; b++) out[b] = (unsigned char)(bits >> (8 * b));
        }
    }
    *len = 8 + padded + at;
    return image;
}

static int dtype_size(const char *d) {
    return !strcmp(d, "F32") ? 4 : !strcmp(d, "F16") || !strcmp(d, "BF16") ? 2 : !strcmp(d, "F64") ? 8 : 0;
}

static int preadn(int fd, void *buf, size_t n, uint64_t at) {
    for (size_t done = 0; done < n;) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(at + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        done += (size_t)r;
    }
    return 0;
}

static int by_begin(const void *a, const void *b) {
    const StEntry *x = *(const StEntry *const *)a, *y = *(const StEntry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

int safetensors_open(StFile *f, const char *path) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    // stat before open, O_NONBLOCK: a FIFO never blocks the open, a device is not opened at all
    // (the rule every reader of ddptok keeps, base/fs.h).
    char why[256];
    int64_t size;
    int fd = open_regular_fd(path, &size, why, sizeof why);
    if (fd < 0) return error("%s: cannot open: %s", path, why);
    struct stat st = {.st_size = (off_t)size};
    unsigned char len8[8];
    if (st.st_size < 8 || preadn(fd, len8, 8, 0)) {
        close(fd);
        return error("%s: %lld bytes, shorter than the 8-byte header length of a safetensors file", path, (long long)st.st_size);
    }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | len8[i];
    if (n > ST_MAX_HEADER || n > (uint64_t)st.st_size - 8) {
        close(fd);
        return error("%s: header length %llu runs past the file's %lld bytes (or over 100 MiB): not a safetensors file", path,
                     (unsigned long long)n, (long long)st.st_size);
    }
    char *text = xmalloc(n + 1);
    if (preadn(fd, text, n, 8)) {
        free(text), close(fd);
        return error("%s: cannot read its header", path);
    }
    text[n] = 0;
    json_error_t je;
    json_t *h = json_loadb(text, n, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!h || !json_is_object(h)) {
        if (h) json_decref(h);
        close(fd);
        return error("%s: the header is not a JSON object (%s)", path, je.text);
    }
    f->fd = fd, f->path = strdup(path);
    f->data_at = 8 + n, f->data_len = (uint64_t)st.st_size - 8 - n;
    f->entry = xcalloc(json_object_size(h) + 1, sizeof *f->entry);
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(h, key, v) {
        if (!strcmp(key, "__metadata__")) {
            const char *mk;
            json_t *mv;
            json_object_foreach(v, mk, mv) if (!json_is_string(mv)) rc = -1;
            if (!json_is_object(v) || rc) {
                rc = error("%s: __metadata__ is not an object of strings", path);
                break;
            }
            f->meta = json_incref(v);
            continue;
        }
        StEntry *e = &f->entry[f->n];
        json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape"), *off = json_object_get(v, "data_offsets");
        if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(shape) || !json_is_array(off) || json_array_size(off) != 2 ||
            json_array_size(shape) > ST_MAX_DIMS) {
            rc = error("%s: tensor %s: expected {dtype, shape (at most %d dims), data_offsets [begin, end]}", path, key, ST_MAX_DIMS);
            break;
        }
        snprintf(e->dtype, sizeof e->dtype, "%s", json_string_value(dt));
        int size = dtype_size(e->dtype);
        if (!size) {
            rc = error("%s: tensor %s: dtype %s, expected F32, F16, BF16 or F64", path, key, json_string_value(dt));
            break;
        }
        e->rank = (int)json_array_size(shape);
        e->count = 1;
        for (int d = 0; d < e->rank && !rc; d++) {
            json_t *x = json_array_get(shape, (size_t)d);
            if (!json_is_integer(x) || json_integer_value(x) < 0) rc = error("%s: tensor %s: shape entry %d is not a size", path, key, d);
            else e->dims[d] = (uint64_t)json_integer_value(x), e->count = size_mul(e->count, e->dims[d]);
        }
        json_t *b = json_array_get(off, 0), *z = json_array_get(off, 1);
        if (!rc && (!json_is_integer(b) || !json_is_integer(z) || json_integer_value(b) < 0 || json_integer_value(z) < json_integer_value(b)))
            rc = error("%s: tensor %s: data_offsets are not [begin, end] with 0 <= begin <= end", path, key);
        if (rc) break;
        e->begin = (uint64_t)json_integer_value(b), e->end = (uint64_t)json_integer_value(z);
        if (e->end > f->data_len || size_mul(e->count, (uint64_t)size) != e->end - e->begin) {
            rc = error("%s: tensor %s: %llu elements of %s need %llu bytes, its data_offsets [%llu, %llu] give %llu (data: %llu bytes)", path,
                       key, (unsigned long long)e->count, e->dtype, (unsigned long long)size_mul(e->count, (uint64_t)size),
                       (unsigned long long)e->begin, (unsigned long long)e->end, (unsigned long long)(e->end - e->begin),
                       (unsigned long long)f->data_len);
            break;
        }
        e->name = strdup(key);
        f->n++;
    }
    json_decref(h);
    if (!rc) {  // no two tensors share a byte: each non-empty one begins at or after the furthest end so far
        const StEntry **sorted = xmalloc(((size_t)f->n + 1) * sizeof *sorted);
        int k = 0;
        for (int i = 0; i < f->n; i++)  // an empty tensor has no bytes to share (and must not hide an overlap)
            if (f->entry[i].end > f->entry[i].begin) sorted[k++] = &f->entry[i];
        qsort(sorted, (size_t)k, sizeof *sorted, by_begin);
        for (int i = 1, far = 0; i < k && !rc; i++) {
            if (sorted[i]->begin < sorted[far]->end)
                rc = error("%s: tensors %s and %s overlap", path, sorted[far]->name, sorted[i]->name);
            if (sorted[i]->end > sorted[far]->end) far = i;
        }
        free(sorted);
    }
    if (!f->meta) f->meta = json_object();
    if (rc) safetensors_close(f);
    return rc ? -1 : 0;
}

void safetensors_close(StFile *f) {
    for (int i = 0; i < f->n; i++) free(f->entry[i].name);
    free(f->entry);
    free(f->path);
    if (f->meta) json_decref(f->meta);
    if (f->fd >= 0) close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

const StEntry *safetensors_find(const StFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->entry[i].name, name)) return &f->entry[i];
    return NULL;
}

// IEEE half and bfloat16 to float, exactly.
static float half_to_float(uint16_t h) {
    uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF, bits;
    if (e == 0x1F) bits = s | 0x7F800000u | m << 13;
    else if (e) bits = s | (e + 112) << 23 | m << 13;
    else if (!m) bits = s;
    else {  // subnormal: normalise
        e = 113;
        while (!(m & 0x400)) m <<= 1, e--;
        bits = s | e << 23 | (m & 0x3FF) << 13;
    }
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

int safetensors_read_f32(const StFile *f, const StEntry *e, float *out) {
    int size = dtype_size(e->dtype);
    uint64_t bytes = e->end - e->begin, chunk = 1 << 20;
    unsigned char *buf = xmalloc(chunk * 8);
    for (uint64_t done = 0; done < e->count;) {
        uint64_t k = e->count - done < chunk ? e->count - done : chunk;
        if (preadn(f->fd, buf, k * (uint64_t)size, f->data_at + e->begin + done * (uint64_t)size)) {
            free(buf);
            return error("%s: tensor %s: cannot read its %llu bytes (truncated?)", f->path, e->name, (unsigned long long)bytes);
        }
        for (uint64_t i = 0; i < k; i++) {
            const unsigned char *p = buf + i * (uint64_t)size;
            float x;
            if (size == 4) {
                uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
                memcpy(&x, &bits, sizeof x);
            } else if (size == 8) {
                uint64_t bits = 0;
                for (int b = 7; b >= 0; b--) bits = bits << 8 | p[b];
                double d;
                memcpy(&d, &bits, sizeof d);
                x = (float)d;
            } else if (!strcmp(e->dtype, "BF16")) {
                uint32_t bits = ((uint32_t)p[0] | (uint32_t)p[1] << 8) << 16;
                memcpy(&x, &bits, sizeof x);
            } else x = half_to_float((uint16_t)(p[0] | p[1] << 8));
            out[done + i] = x;
        }
        done += k;
    }
    free(buf);
    return 0;
}
