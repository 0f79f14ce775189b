// claim.h — one config per outputs and artifacts directory: two configs in one working
// directory never overwrite, mix or move each other's corpus, reports, logs or checkpoints.
// The first command of a config that writes under paths.outputs (or paths.artifacts) records
// that config there (`.ddptok-config`: its path, real path and SHA-256); a command of another
// config — another file, whose content differs too — is refused before it writes anything,
// naming the config the directory is for and the command that gives this one its own
// directories. The same file (edited, or with other --set) is the same config: its
// checkpoints and reports say themselves what differs (report_identity_check, lineage.h).
#ifndef DDPTOK_CLAIM_H
#define DDPTOK_CLAIM_H

#include "app/app.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CLAIM_FILE ".ddptok-config"

// The roots `cmd` writes under (its CommandOutput's), each checked on every rank; with
// `write` (a run, not --check) rank 0 records this config in a root that has no record yet;
// a command that checks every root (clean) records none.
// Dies (exit 2, every rank, one line) when a root is another config's. Collective.
void claim_roots(App *app, const Command *cmd, int write);

#ifdef __cplusplus
}
#endif
#endif
