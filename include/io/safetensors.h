// safetensors.h — the safetensors format (huggingface/safetensors), written and read:
// 8 bytes, the header's length N (little-endian uint64); N bytes of JSON, {"NAME": {"dtype":
// "F32", "shape": [...], "data_offsets": [BEGIN, END]}, ..., "__metadata__": {string: string}},
// padded with spaces so the data starts at a multiple of 8; then the tensors' bytes,
// little-endian, back to back, offsets relative to the data.
//
// The reader checks a file that may be hostile before any tensor is read: the header's
// length (at most 100 MiB and inside the file), its JSON, every entry's dtype (F32, F16,
// BF16, F64), shape (at most 8 dims, their product × the dtype's size = END − BEGIN), and
// offsets (inside the data, not overlapping); a failure is one line naming the file, the
// tensor and the rule (error(), -1).
#ifndef DDPTOK_SAFETENSORS_H
#define DDPTOK_SAFETENSORS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { ST_MAX_DIMS = 8 };

// One float32 tensor to write: `size` = the product of dims elements at data, row-major.
typedef struct {
    const char *name;
    int rank;
    uint64_t dims[ST_MAX_DIMS];
    const float *data;
} StTensorOut;

// The file's bytes for tensors t[0..n-1] (in that order) and the string metadata `meta`
// (may be NULL; its reference is taken); *len gets the size. Caller frees. Dies (exit 2) on
// text that cannot enter the header (not UTF-8).
char *safetensors_image(const StTensorOut *t, int n, json_t *meta, size_t *len);

typedef struct {
    char *name;
    char dtype[8];     // F32, F16, BF16, F64
    int rank;
    uint64_t dims[ST_MAX_DIMS];
    uint64_t count;    // elements
    uint64_t begin, end;  // bytes, relative to the data
} StEntry;

typedef struct {
    char *path;
    int fd;
    uint64_t data_at;  // the data's offset in the file
    uint64_t data_len;
    int n;
    StEntry *entry;    // (n) in header order
    json_t *meta;      // __metadata__ (an object; empty when absent)
} StFile;

// Opens and checks `path` (see the top of this file). 0 or -1 (error printed).
int safetensors_open(StFile *f, const char *path);
void safetensors_close(StFile *f);
// The entry named `name`, or NULL.
const StEntry *safetensors_find(const StFile *f, const char *name);
// Its elements as float32 (F16, BF16 widened exactly; F64 rounded) into out (count). 0 or -1.
int safetensors_read_f32(const StFile *f, const StEntry *e, float *out);

#ifdef __cplusplus
}
#endif
#endif
