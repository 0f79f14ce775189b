// made.h — the record of what ddptok made, so that `clean` removes that and nothing else
// (docs/failure-model.md "What clean removes").
//
// A name is no proof: a user's outputs/data/thesis.tex, or an artifacts/checkpoints.old-X/
// of their own, sits where ddptok writes. So ddptok records each thing it creates, where it
// creates it, in a record file MADE_RECORD (".ddptok-made"), one line per thing:
//     d INO BTIME .                       in a directory ddptok created: the directory itself
//     f INO BTIME SIZE MTIME CTIME NAME   in the directory of a file ddptok wrote: that file
// INO and BTIME (the inode number and birth time in ns; 0 where the file system keeps no
// birth time) name the very inode: a file put later under the same name, or a copy (cp -r,
// a restored backup), has another, and is not taken for ddptok's. Without a birth time
// nothing is proven (a freed inode number is reused at once): clean leaves it all. SIZE,
// MTIME and CTIME (ns) are the file's content stamp once ddptok had written it: a file
// written over in place (cp onto it, > redirection, a cp -r restore onto the tree) keeps its
// inode but not its times — the ctime cannot be set back — and is not ddptok's any more. A
// file line of an older ddptok has no stamp ("f INO BTIME NAME") and proves nothing of the
// content. The last line of a name is its record (a rewrite, or a log closed, appends a new
// line). A directory's own line lives inside it, so
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
// its own record, a file in its directory's, with its content stamp as it is now (so a file
// is recorded once ddptok has written all of it; the one exception, the corpus writer's
// temporary file, is recorded at its creation and proven by its identity alone:
// data/writer.c). 0, or -1 after one warning per process (what was written stays; clean will
// leave it).
int made_note(const char *path);
// The same for the file open as `fd` (its identity, whatever `path` names meanwhile).
int made_note_fd(const char *path, int fd);

// What the record says of an entry as it is now.
typedef enum {
    MADE_NOT = 0,    // not ddptok's: no line, another inode, a link, a FIFO
    MADE_YES,        // what ddptok made, unchanged since
    MADE_UNPROVEN,   // listed with this inode, but it or its line has no birth time
    MADE_CHANGED,    // ddptok's inode, but written over since (its size or times moved)
    MADE_UNSTAMPED,  // ddptok's inode, listed by an older ddptok without a content stamp
} MadeVerdict;
// The verdict on entry `name` of the directory open as `dirfd` (no link followed below it).
MadeVerdict made_verdict_at(int dirfd, const char *name);
// 1 when the verdict is MADE_YES.
int made_is_at(int dirfd, const char *name);
int made_is(const char *path);
// 1 when the file open as `fd` is what the record of `path`'s directory says ddptok wrote
// under `path`'s name, unchanged (for a rewrite in place: the lineage lock).
int made_is_fd(const char *path, int fd);
// Rewrites the record of the directory open as `dirfd` to the lines of what is still there
// and still the same inode (its own line only when keep_self); removes the record when none
// is left. For clean, after it removed what it may. 0 or -1 (error printed).
int made_compact_at(int dirfd, int keep_self);

#ifdef __cplusplus
}
#endif
#endif
