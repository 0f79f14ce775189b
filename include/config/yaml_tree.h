// yaml_tree.h — a YAML document as a tree of scalars, sequences and mappings (libyaml
// events underneath), for the config module. Errors go to the caller as one line naming
// the file (or the --set key) and the line.
#ifndef DDPTOK_YAML_TREE_H
#define DDPTOK_YAML_TREE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { N_SCALAR, N_SEQ, N_MAP } NodeKind;
typedef struct YamlNode {
    NodeKind kind;
    int line;         // 1-based
    char *text;       // scalar value
    size_t len;       // its length (an escaped "\0" makes strlen shorter)
    int plain;        // scalar was unquoted
    int n, cap;       // children (for a map: 2n entries key, value) and room for them
    struct YamlNode **kids;
} YamlNode;

typedef struct {
    const char *name;  // file name, or "--set" for a command-line override
    const char *text;  // the YAML being parsed, for the line of an encoding error
    char *err;
    int errlen;
    int strict;        // a --set value: a plain scalar or a flow list only (no tag, anchor, quote or comment)
    char where[600];   // scratch for yaml_at()
} YamlCtx;

// Parses a whole document; an empty document gives an empty mapping. NULL on error (the
// line in ctx->err).
YamlNode *yaml_parse(const char *text, size_t len, YamlCtx *ctx);
void yaml_node_free(YamlNode *n);
// "file:line" for a file; the name alone for an override (its line number means nothing).
const char *yaml_at(YamlCtx *ctx, long line);
// Writes the error line into ctx->err; returns -1.
int yaml_fail(YamlCtx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
