// per_sequence.h — evaluate --per-sequence FILE: each evaluated sequence's numbers as JSON
// Lines (docs/file-formats.md "Per-sequence losses"), and the ids of --ids A,B,C|FILE.
//
// The file: a header line {"format": "ddptok-per-sequence", "version": 1, "split", "checkpoint",
// "step", "model", "params_sha256", "corpus_lock", "split_sequences", "count", "tokens",
// "correct"}, then one record per sequence, by id (its index in the split): {"id", "tokens",
// "loss_sum", "loss", "correct"}. Nothing in it depends on the number of ranks. Written whole to
// a temporary name and renamed (base/fs.h): a reader sees the old file or the new one.
#ifndef DDPTOK_PER_SEQUENCE_H
#define DDPTOK_PER_SEQUENCE_H

#include <stddef.h>
#include <stdint.h>

#include "io/jsonio.h"
#include "train/evaluation.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PER_SEQUENCE_FORMAT "ddptok-per-sequence"
#define PER_SEQUENCE_VERSION 1

// The ids `arg` names: a list of numbers "A,B,C" (digits and commas only), or else a file of
// numbers separated by commas, spaces or newlines. 0 with *ids (malloc'd, as given) and *n;
// -1 with one phrase in `why` (what is wrong, naming the file and line for a file).
int per_sequence_ids_parse(const char *arg, int64_t **ids, int *n, char *why, size_t len);
// Whether `path` can take the file: nothing there, or a regular file that is an earlier
// per-sequence file (its first line is a header of one: any other file is not replaced), in a
// directory where a temporary can be made (made and removed again). 0, or -1 with why.
int per_sequence_target_check(const char *path, char *why, size_t len);
// Writes the header (its reference taken) and the records of the sequences with want[i] (NULL:
// every one of the n) to `path`, atomically. 0, or -1 (one line printed, nothing published).
int per_sequence_write(const char *path, json_t *header, const SequenceEval *seq, const uint8_t *want, int n);

#ifdef __cplusplus
}
#endif
#endif
