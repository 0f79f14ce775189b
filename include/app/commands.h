// commands.h — the command table of docs/spec.md §8, in `ddptok --help` order. A command is one file,
// src/cmd/<name>.c, exporting `const Command cmd_<name>` (app.h), and one row here; main()
// dispatches from this list, and clean reads the outputs each entry declares.
#ifndef DDPTOK_COMMANDS_H
#define DDPTOK_COMMANDS_H

#include "app/app.h"

#define DDPTOK_COMMANDS(X) \
    X(prepare)             \
    X(import)              \
    X(reference)           \
    X(check_loss)          \
    X(parity)              \
    X(train)               \
    X(check_empty)         \
    X(evaluate)            \
    X(export)              \
    X(generate)            \
    X(exercise)            \
    X(check_env)           \
    X(bench_comm)          \
    X(check_checkpoints)   \
    X(plan)                \
    X(clean)               \
    X(plot)                \
    X(config)

#define DDPTOK_DECLARE_COMMAND(name) extern const Command cmd_##name;
DDPTOK_COMMANDS(DDPTOK_DECLARE_COMMAND)
#undef DDPTOK_DECLARE_COMMAND

#endif
