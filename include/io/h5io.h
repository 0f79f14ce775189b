// h5io.h — thin HDF5 helpers: build a file in memory and publish it with
// write_file_atomic (temporary name, fsync, rename), create datasets with their
// intermediate groups, read datasets and attributes with the file and dataset named in
// every error.
#ifndef DDPTOK_H5IO_H
#define DDPTOK_H5IO_H

#include <hdf5.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A file being written: built in memory until h5out_commit writes it to `path`.
// The core driver's memory, allocated through h5out_open's file image callbacks and kept at
// close: the bytes h5out_commit hashes and writes, without a second copy of the file.
typedef struct {
    void *mem;    // (size) bytes
    size_t size;
    int kept;     // 1: the file is closed and mem is ours
} H5Image;
typedef struct {
    hid_t file;
    char path[1024];
    H5Image image;
} H5Out;

// An in-memory HDF5 file to become `path`; 0 or -1 (error printed).
int h5out_open(H5Out *o, const char *path);
// Closes and writes the file image with write_file_atomic (temporary name, fsync, rename,
// fsync of the directory): `path` is either the old file or the complete new one. With
// `sha256` not NULL, also the hex SHA-256 of the bytes written (no second read).
int h5out_commit(H5Out *o, char sha256[65]);
// Closes, writes nothing, and prints one line: "PATH: cannot write WHAT: <the dataset or
// attribute that failed>". Returns -1.
int h5out_fail(H5Out *o, const char *what);

// Writers return 0 or -1 without printing: the reason is kept for h5out_fail.
// Writes a dataset of `rank` dims (intermediate groups created). type: H5T_NATIVE_*.
int h5_write(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims, const void *data);
int h5_attr_str(hid_t loc, const char *name, const char *value);
int h5_attr_i64(hid_t loc, const char *name, int64_t value);
int h5_attr_f64(hid_t loc, const char *name, double value);
int h5_attr_i64_array(hid_t loc, const char *name, const int64_t *v, int n);

// Opens an existing file read-only; -1 with one error line naming the file, ending with
// `hint` (what to run to make it; may be NULL) when the file is missing or unreadable.
// Only a regular file is read (file_read_regular: a FIFO or device is refused at once);
// HDF5 parses the bytes read, from memory.
hid_t h5_open_read(const char *path, const char *hint);
// An HDF5 file image in memory, read-only (HDF5 keeps its own copy); -1 (nothing printed)
// when it is not a readable HDF5 file. `name` is only for HDF5's bookkeeping.
hid_t h5_open_image(const char *name, const void *image, size_t len);
// Closes a file opened by h5_open_read / h5_open_image. Between the two, a crash inside
// HDF5 (it is not hardened against crafted files) ends the process with one line naming
// the file and exit 2; h5_crash_guard = 0 turns that off (the fuzz targets).
void h5_close(hid_t f);
extern int h5_crash_guard;
// Opens `path` (a regular file) for HDF5 reads of its metadata without reading the file
// into memory; *fd is a descriptor of the same file for pread (the caller closes it after
// h5_close), *size its size. -1 with one line printed (ending with `hint`).
hid_t h5_open_file(const char *path, const char *hint, int *fd, int64_t *size);
// The byte address in the file of a dataset stored as ddptok writes large ones: exactly
// `type` (no conversion) and shape `dims`, contiguous, no filters, inside the file's
// `file_size` bytes; 0 or -1 with one line naming the file and dataset.
int h5_raw_address(hid_t file, const char *path_in_file, const char *dataset, hid_t type, int rank, const hsize_t *dims,
                   int64_t file_size, int64_t *addr);
// Number of elements of a dataset (and its dims when `dims` is not NULL, up to 8); -1 on error.
int64_t h5_size(hid_t file, const char *path_in_file, const char *dataset, int *rank, hsize_t *dims);
// Reads exactly `n` elements of `type`; error names the file and dataset when absent or
// of another size.
int h5_read(hid_t file, const char *path_in_file, const char *dataset, hid_t type, int64_t n, void *out);
// Reads a dataset whose shape is exactly `dims` (`rank` of them) and whose stored type is
// exactly `type` (class, size, sign, byte order: no conversion by HDF5); the error names
// the file, the dataset, what was expected and what was found ("has shape (24, 16),
// expected (16, 24)", "is int64, expected int32").
int h5_read_exact(hid_t file, const char *path_in_file, const char *dataset, hid_t type, int rank, const hsize_t *dims,
                  void *out);
// Calls fn(name, ctx) for each attribute of `loc`, in name order, until one returns non-zero
// (returned); -1 when they cannot be listed.
int h5_attr_each(hid_t loc, int (*fn)(const char *name, void *ctx), void *ctx);
// Reads a string attribute of the root (or of `obj`); caller frees. NULL on error. The
// numeric readers take an attribute of their class only (an integer stored as a float, or
// the other way, is refused, not converted).
char *h5_attr_read_str(hid_t loc, const char *path_in_file, const char *name);
int h5_attr_read_i64(hid_t loc, const char *path_in_file, const char *name, int64_t *out);
// An integer attribute of exactly n elements.
int h5_attr_read_i64_array(hid_t loc, const char *path_in_file, const char *name, int64_t *out, int n);
int h5_attr_read_f64(hid_t loc, const char *path_in_file, const char *name, double *out);

// Silences HDF5's own error stack printing (ddptok reports its own one-line errors).
void h5_quiet(void);

#ifdef __cplusplus
}
#endif
#endif
