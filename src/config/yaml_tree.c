// yaml_tree.c — a small YAML tree built from libyaml events (see yaml_tree.h): bounded
// depth, one error line with file and line, a strict mode for --set values.
#include "config/yaml_tree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "base/mem.h"
#include "base/report.h"

// Deeper YAML is refused (the config is 3 levels deep; a bound keeps the recursion's
// stack and libyaml's per-level work small however hostile the text).
#define MAX_DEPTH 64

void yaml_node_free(YamlNode *n) {
    if (!n) return;
    for (int i = 0; i < n->n; i++) yaml_node_free(n->kids[i]);
    free(n->kids);
    free(n->text);
    free(n);
}

static void node_push(YamlNode *parent, YamlNode *kid) {
    if (parent->n == parent->cap) {
        parent->cap = parent->cap ? 2 * parent->cap : 4;
        parent->kids = realloc(parent->kids, (size_t)parent->cap * sizeof *parent->kids);
        ASSERT(parent->kids);
    }
    parent->kids[parent->n++] = kid;
}

const char *yaml_at(YamlCtx *ctx, long line) {
    if (!strncmp(ctx->name, "--set", 5)) snprintf(ctx->where, sizeof ctx->where, "%s", ctx->name);
    else snprintf(ctx->where, sizeof ctx->where, "%s:%ld", ctx->name, line);
    return ctx->where;
}

int yaml_fail(YamlCtx *ctx, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, (size_t)ctx->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

// A libyaml error with its line: the reader (bad encoding) reports a byte offset only.
static void syntax_error(const yaml_parser_t *p, YamlCtx *ctx) {
    long line = (long)p->problem_mark.line + 1;
    if (p->error == YAML_READER_ERROR) {
        line = 1;
        for (size_t i = 0; i < p->problem_offset && ctx->text[i]; i++) line += ctx->text[i] == '\n';
    }
    yaml_fail(ctx, "%s: YAML syntax error: %s", yaml_at(ctx, line), p->problem ? p->problem : "unknown");
}

// Parses one node starting at `ev` (already taken), `depth` levels down. Returns NULL on
// error. `*end` gets the byte offset where the node's text ends.
static YamlNode *parse_node(yaml_parser_t *p, yaml_event_t *ev, int depth, size_t *end, YamlCtx *ctx);

static YamlNode *parse_children(yaml_parser_t *p, YamlNode *n, yaml_event_type_t end_type, int depth, size_t *end, YamlCtx *ctx) {
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(p, &ev)) {
            syntax_error(p, ctx);
            yaml_node_free(n);
            return NULL;
        }
        if (ev.type == end_type) {
            *end = ev.end_mark.index;
            yaml_event_delete(&ev);
            return n;
        }
        YamlNode *kid = parse_node(p, &ev, depth + 1, end, ctx);
        if (!kid) {
            yaml_node_free(n);
            return NULL;
        }
        node_push(n, kid);
    }
}

// Why a --set value is refused, or NULL: only a plain scalar or a flow list of them.
static const char *strict_refusal(const yaml_event_t *ev) {
    const yaml_char_t *tag = NULL, *anchor = NULL;
    if (ev->type == YAML_SCALAR_EVENT) {
        tag = ev->data.scalar.tag, anchor = ev->data.scalar.anchor;
        if (!tag && !anchor && ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return "a quoted or block scalar";
    } else if (ev->type == YAML_SEQUENCE_START_EVENT) {
        tag = ev->data.sequence_start.tag, anchor = ev->data.sequence_start.anchor;
        if (!tag && !anchor && ev->data.sequence_start.style != YAML_FLOW_SEQUENCE_STYLE) return "a block list";
    } else if (ev->type == YAML_MAPPING_START_EVENT) {
        return "a mapping";
    } else if (ev->type == YAML_ALIAS_EVENT) {
        return "an alias";
    }
    return tag ? "a YAML tag" : anchor ? "a YAML anchor" : NULL;
}

static YamlNode *parse_node(yaml_parser_t *p, yaml_event_t *ev, int depth, size_t *end, YamlCtx *ctx) {
    YamlNode *n = xcalloc(1, sizeof *n);
    n->line = (int)ev->start_mark.line + 1;
    const char *refused = ctx->strict ? strict_refusal(ev) : NULL;
    int too_deep = depth > MAX_DEPTH && (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT);
    if (refused || too_deep) {
        if (refused) yaml_fail(ctx, "%s: expected a plain value or a flow list [a, b], got %s", yaml_at(ctx, n->line), refused);
        else yaml_fail(ctx, "%s: YAML nested deeper than %d levels", yaml_at(ctx, n->line), MAX_DEPTH);
        yaml_event_delete(ev);
        free(n);
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        n->kind = N_SCALAR;
        n->len = ev->data.scalar.length;
        n->text = xmalloc(n->len + 1);
        memcpy(n->text, ev->data.scalar.value, n->len + 1);
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        *end = ev->end_mark.index;
        yaml_event_delete(ev);
        return n;
    case YAML_SEQUENCE_START_EVENT:
        n->kind = N_SEQ;
        yaml_event_delete(ev);
        return parse_children(p, n, YAML_SEQUENCE_END_EVENT, depth, end, ctx);
    case YAML_MAPPING_START_EVENT:
        n->kind = N_MAP;
        yaml_event_delete(ev);
        return parse_children(p, n, YAML_MAPPING_END_EVENT, depth, end, ctx);
    case YAML_ALIAS_EVENT:
        yaml_fail(ctx, "%s: YAML aliases are not supported", yaml_at(ctx, n->line));
        break;
    default:
        yaml_fail(ctx, "%s: unexpected YAML event", yaml_at(ctx, n->line));
        break;
    }
    yaml_event_delete(ev);
    free(n);
    return NULL;
}

YamlNode *yaml_parse(const char *text, size_t len, YamlCtx *ctx) {
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    ctx->text = text;
    YamlNode *root = NULL;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            syntax_error(&p, ctx);
            yaml_node_free(root);
            root = NULL;
            break;
        }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) {
            yaml_event_delete(&ev);
            if (!root) root = xcalloc(1, sizeof *root), root->kind = N_MAP, root->line = 1;
            break;
        }
        if (t == YAML_SCALAR_EVENT || t == YAML_SEQUENCE_START_EVENT || t == YAML_MAPPING_START_EVENT ||
            t == YAML_ALIAS_EVENT) {
            if (root) {
                yaml_fail(ctx, "%s: expected a single YAML document", yaml_at(ctx, (long)(ev.start_mark.line + 1)));
                yaml_event_delete(&ev);
                yaml_node_free(root);
                root = NULL;
                break;
            }
            size_t end = 0;
            root = parse_node(&p, &ev, 1, &end, ctx);
            if (!root) break;
            // A --set value is the whole text: nothing after it but blanks (a comment
            // would be dropped silently by YAML).
            while (ctx->strict && end < len && (text[end] == ' ' || text[end] == '\t' || text[end] == '\n')) end++;
            if (ctx->strict && end < len) {
                yaml_fail(ctx, "%s: expected a plain value or a flow list [a, b], got more after it: '%s'", yaml_at(ctx, root->line),
                     text + end);
                yaml_node_free(root);
                root = NULL;
                break;
            }
            continue;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return root;
}
