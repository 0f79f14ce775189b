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
// Where ddptok writes, the rule (docs/failure-model.md "No writes through links"): a file is
// created, or replaced whole, only where nothing is or a regular file is — never through a
// symbolic link, never over a directory, a FIFO, a device or a socket, which are refused and
// left as they are. A file is replaced by a rename (file_out_commit), so a hard link's other
// names keep their bytes; a file ddptok must rewrite in place (the lineage lock, the records
// of made.h) is opened only when it is a regular file with no other name (open_in_place).

// A file being written: a temporary PATH.tmp.PID beside `path`, created O_EXCL|O_NOFOLLOW (a
// planted file or link of that name is refused and left as it is), published by
// file_out_commit. `f` is a stdio stream on it for the caller that wants one (NULL until
// file_out_stream).
typedef struct {
    char path[1100], tmp[1200];
    int fd;    // the temporary file
    int keep;  // a second descriptor of it: its identity once published (made_note_fd)
    FILE *f;
} FileOut;
// Starts writing `path` (its directory made with mkdir_p). 0, or -1 (error printed, naming it).
int file_out_open(FileOut *o, const char *path);
// A stdio stream on the file (closed by file_out_commit or file_out_abort).
FILE *file_out_stream(FileOut *o);
// Publishes it in place of `path`: flushed, fsynced, closed, renamed over nothing or a regular
// file only (RENAME_NOREPLACE, or RENAME_EXCHANGE and the old entry removed only if it is a
// regular file: anything swapped in meanwhile goes back), recorded as ddptok's (made.h), the
// directory fsynced. 0, or -1 with one line printed; nothing published, the temporary removed.
int file_out_commit(FileOut *o);
// Drops it: the temporary removed, nothing published.
void file_out_abort(FileOut *o);
// The rename under file_out_commit, for a writer that makes its temporary itself (the corpus
// writer): `tmp` to `path` over nothing or a regular file only. 0; -1 with the reason in `why`
// (`tmp` still there, the caller removes it); -2 when what was swapped in could not be put
// back and now lies at `tmp` (`why` says so: leave it).
int publish_over_regular(const char *tmp, const char *path, char *why, size_t whylen);
// Opens `path` for a rewrite in place (flags: O_WRONLY|O_APPEND or O_RDWR), creating it
// (*created = 1) when absent; an existing one only when it is a regular file with one name
// (checked with lstat before it is opened, so a device is never opened, and with fstat after),
// never through a link. The descriptor, or -1 with the reason in `why`.
int open_in_place(const char *path, int flags, int *created, char *why, size_t whylen);
// What is at `path` when it is no regular file ("a symbolic link", "a character device", ...).
const char *what_is_there(unsigned mode);
// strerror for a failed create, naming a refused link or non-regular file.
const char *write_error(int e);
// Removes `path` and, for a directory, everything under it, never following a symbolic
// link (a link is removed itself; entries are unlinked relative to their directory's
// descriptor, opened O_NOFOLLOW). 0, or -1 with one line printed.
int remove_tree(const char *path);

// The directories the user chose (paths.outputs, paths.artifacts): a symbolic link there, or
// above, is the user's (outputs -> /scratch/x) and is followed; below them every directory
// is ddptok's to make (data/, plot/, train/, logs/, checkpoints/), and one that is a symbolic
// link is refused by mkdir_p, so nothing is written through it. NULL: none (unset: no check).
void fs_roots_set(const char *outputs, const char *artifacts);
// mkdir -p; returns 0 or error(). Each directory it creates is recorded as ddptok's (made.h).
// Below a root of fs_roots_set, an existing component that is a symbolic link (or not a
// directory) is refused, naming it.
int mkdir_p(const char *path);
// Writes `len` bytes to `path` atomically: file_out_open, write, file_out_commit (above).
int write_file_atomic(const char *path, const char *data, size_t len);
// The directory part of `path` ("." when there is none).
void dir_of(const char *path, char *dir, size_t len);
// fsync a directory by path.
int fsync_dir(const char *path);

#ifdef __cplusplus
}
#endif
#endif
