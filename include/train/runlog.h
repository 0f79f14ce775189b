// runlog.h — logs are per run, never appended to or overwritten: a file an earlier run left
// is first renamed with the UTC time of its last write (interrupted.jsonl ->
// interrupted.20261130T064500Z.jsonl), then the run creates its own (O_EXCL|O_NOFOLLOW).
#ifndef DDPTOK_RUNLOG_H
#define DDPTOK_RUNLOG_H

#include <stddef.h>
#include <stdio.h>

// Renames the log at `path`, if there is one, as runlog_create does (into `aside`, len
// bytes, when not NULL; "" when there was none); a log a run is writing now (its lock, held
// from runlog_create to the process's end) is refused, never moved. 0, or -1 with one line.
int runlog_set_aside(const char *path, char *aside, size_t len);
// The new log at `path` (its directory created), or NULL with one line.
FILE *runlog_create(const char *path);
// 0, or -1 with one line when a log line did not reach the file (a full disk).
int runlog_check(FILE *f, const char *path);

#endif
