#!/usr/bin/env bash
# run/test.sh — the README's test command: every test (no GPU needed) from a fresh Debian 12,
# as root. It installs what `make test` needs, make itself included (a minimal Debian has no
# make), then runs `make test`. Not root: it prints the one command that installs the
# packages on this machine (run/install-deps.sh), and stops.
set -euo pipefail
cd "$(dirname "$0")/.."
bash run/install-deps.sh --tests
exec make test
