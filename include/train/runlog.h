// runlog.h — logs are per run, never appended to or overwritten: a file an earlier run left
// is first renamed with the UTC time of its last write (interrupted.jsonl ->
// interrupted.20261130T064500Z.jsonl), then the run creates its own (O_EXCL|O_NOFOLLOW).
#ifndef DDPTOK_RUNLOG_H
#define DDPTOK_RUNLOG_H

#include <stdio.h>

// The new log at `path` (its directory created), or NULL with one line.
FILE *runlog_create(const char *path);
// 0, or -1 with one line when a log line did not reach the file (a full disk).
int runlog_check(FILE *f, const char *path);

#endif
