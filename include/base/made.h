// made.h — the record of what ddptok made, so that `clean` removes that and nothing else
// (docs/failure-model.md "What clean removes").
//
// A name is no proof: a user's outputs/data/thesis.tex, or an artifacts/checkpoints.old-X/
// of their own, sits where ddptok writes. So ddptok records each thing it creates, where it
// creates it, in a record file MADE_RECORD (".ddptok-made"), one line per thing:
//     d INO BTIME .       in a directory ddptok created: the directory itself
//     f INO BTIME NAME    in the directory of a file ddptok created (or rewrote): that file
// INO and BTIME (the inode number and birth time in ns; 0 where the file system keeps no
// birth time) name the very inode: a file put later under the same name, or a copy (cp -r,
// a restored backup), has another, and is not taken for ddptok's. Without a birth time
// nothing is proven (a freed inode number is reused at once): clean leaves it all. The last line of a name
// is its record (a rewrite appends a new line). A directory's own line lives inside it, so
// it travels with the directory when ddptok renames it (a checkpoint published, a lineage
// moved aside by train --fresh), and nothing is written outside the directories ddptok
// writes to. Each line is one append (O_APPEND), so the ranks writing one step directory
// or one log directory record side by side. A line that is lost (a full disk, a file system
// without atomic appends) only makes clean leave that path; a record never makes it remove
// more. A symbolic link is never recorded (ddptok creates none), so never removed through.
#ifndef DDPTOK_MADE_H
#define DDPTOK_MADE_H

#ifdef __cplusplus
extern "C" {
#endif

#define MADE_RECORD ".ddptok-made"

// Records `path` (a regular file or a directory, there now) as made by ddptok: a directory in
// its own record, a file in its directory's. 0, or -1 after one warning per process (what
// was written stays; clean will leave it).
int made_note(const char *path);
// The same for the file open as `fd` (its identity, whatever `path` names meanwhile).
int made_note_fd(const char *path, int fd);
// 1 when `path` is what its record says ddptok made (the same inode); 0 for anything else:
// no record, another inode, a symbolic link, a FIFO.
int made_is(const char *path);
// The same for entry `name` of the directory open as `dirfd` (no link followed below it).
int made_is_at(int dirfd, const char *name);
// 1 when entry `name` is not made_is_at only because it or its record line has no birth
// time (the same kind and inode number listed): for clean's message.
int made_unproven_at(int dirfd, const char *name);
// Rewrites the record of the directory open as `dirfd` to the lines of what is still there
// and still the same inode (its own line only when keep_self); removes the record when none
// is left. For clean, after it removed what it may. 0 or -1 (error printed).
int made_compact_at(int dirfd, int keep_self);

#ifdef __cplusplus
}
#endif
#endif
