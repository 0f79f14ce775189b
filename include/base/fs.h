// fs.h — reading and writing files safely: regular files only, no planted link followed,
// atomic publication, removal that never leaves the tree it was given.
#ifndef DDPTOK_FS_H
#define DDPTOK_FS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

// Reads a whole file into memory (NUL appended; *len excludes it) only if it is a regular
// file: opened O_NONBLOCK (a FIFO or a device never blocks the open) and checked with
// fstat on that same descriptor, so what is read is what was checked (a symbolic link is
// followed, to a regular file only). At most `max` bytes. NULL on failure, with the
// reason (no path) in `why`: strerror, or "a FIFO, not a regular file", ...
char *file_read_regular(const char *path, size_t max, size_t *len, char *why, size_t whylen);
// A read-only descriptor of `path` only if it is a regular file (its size in *size); -1
// with the reason in `why` (a FIFO or device is refused at once, never blocking).
int open_regular_fd(const char *path, int64_t *size, char *why, size_t whylen);
// The same file, opened for reading as a stream (a file of any length, read as it goes):
// NULL with the reason in `why` (errno's strerror when it does not exist).
FILE *fopen_regular(const char *path, char *why, size_t whylen);
// Opens a file for writing without following a symbolic link in its last component:
// mode "w" truncates, "a" appends; the file must be regular (a FIFO or device refused).
// NULL with errno set (ELOOP for a link). The file is recorded as ddptok's (made.h) when
// "w" rewrites it or "a" creates it.
FILE *fopen_nofollow(const char *path, const char *mode);
// strerror for a failed create or fopen_nofollow, naming a refused link or non-regular file.
const char *write_error(int e);
// Removes `path` and, for a directory, everything under it, never following a symbolic
// link (a link is removed itself; entries are unlinked relative to their directory's
// descriptor, opened O_NOFOLLOW). 0, or -1 with one line printed.
int remove_tree(const char *path);

// mkdir -p; returns 0 or error(). Each directory it creates is recorded as ddptok's (made.h).
int mkdir_p(const char *path);
// Writes `len` bytes to `path` atomically (creates its directory; temp file, fsync, rename,
// fsync of the directory) and records it as ddptok's (made.h). The temp file PATH.tmp.PID
// is created O_EXCL|O_NOFOLLOW: a planted file or link of that name is refused and left as
// it is.
int write_file_atomic(const char *path, const char *data, size_t len);
// The directory part of `path` ("." when there is none).
void dir_of(const char *path, char *dir, size_t len);
// fsync a directory by path.
int fsync_dir(const char *path);

#ifdef __cplusplus
}
#endif
#endif
