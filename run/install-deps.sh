#!/usr/bin/env bash
# Installs the Debian packages that ddptok's build and protocol need, if missing; with
# --tests also what the tests need (python3-torch for the PyTorch witness).
# As root it runs apt-get; otherwise it prints the exact command and stops.
set -euo pipefail
pkgs=(build-essential pkg-config openmpi-bin libopenmpi-dev libhdf5-dev libyaml-dev libopenblas-dev
      libssl-dev gnuplot-nox python3)
# Tests: the independent witnesses (h5py, PyTorch), a real Slurm, ssh + iproute2 for
# the two-host test, and procps (pgrep) for the fault tests.
if [ "${1:-}" = --tests ]; then
  pkgs+=(python3-numpy python3-h5py python3-yaml python3-torch slurm-wlm munge openssh-server openssh-client iproute2
        procps)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "ddptok: missing Debian packages; install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 2
fi
echo "ddptok: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
