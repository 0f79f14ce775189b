#!/usr/bin/env bash
# Installs the Debian packages that ddptok's build and protocol need, if missing (make
# itself among them: a minimal Debian has none); with --tests also what the tests need
# (python3-torch for the PyTorch witness, Slurm, clang...).
# As root it runs apt-get; otherwise it prints the one command that installs them on this
# machine (sudo ..., or su -c '...' where there is no sudo; apt-get update first when the
# package lists do not know a package yet) and stops with exit 2. --check (make runs it
# when mpicc or a library is missing) only prints what is missing and that command.
set -euo pipefail
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
pkgs=(build-essential pkg-config openmpi-bin libopenmpi-dev libhdf5-dev libyaml-dev libopenblas-dev libjansson-dev
      libssl-dev gnuplot-nox python3)
# Tests: the independent witnesses (h5py, PyTorch), a real Slurm, ssh + iproute2 for
# the two-host test, procps (pgrep) for the fault tests, clang and its libFuzzer/sanitizer
# runtime for the fuzz targets (make fuzz-bins), llvm-14 for llvm-symbolizer (the fuzz runner
# tells a crash inside libhdf5 from one in ddptok by the symbolized stack; clang only
# recommends it, so a minimal machine lacks it), fortunes-min for a real English text to
# import (tests/test_import.sh), xz-utils and zstd for its compression baselines.
tests=0
hf=0
if [ "${1:-}" = --hf ]; then  # make hf-venv: a venv over Debian's torch for transformers from PyPI
  hf=1
  pkgs+=(python3-venv python3-torch python3-numpy python3-h5py python3-yaml)
fi
if [ "${1:-}" = --tests ]; then
  tests=1
  pkgs+=(python3-numpy python3-h5py python3-yaml python3-torch slurm-wlm munge openssh-server openssh-client iproute2
        procps clang libclang-rt-14-dev llvm-14 fortunes-min xz-utils zstd)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ $check = 1 ]; then
  if ! command -v dpkg-query >/dev/null; then
    echo "ddptok: not a Debian system: install Open MPI, HDF5, libyaml, OpenBLAS, OpenSSL and pkg-config (see README)" >&2; exit 2
  fi
  if [ ${#missing[@]} -eq 0 ]; then
    echo "ddptok: the Debian packages are installed; is mpicc or pkg-config off your PATH?" >&2; exit 2
  fi
fi
[ ${#missing[@]} -eq 0 ] && exit 0
# The package lists of a fresh system (debootstrap, a container) may be empty: apt-get
# update first unless apt-cache already has a candidate for every missing package.
known=$(apt-cache policy "${missing[@]}" 2>/dev/null | grep -c '^  Candidate: [^(]') || true
install="apt-get install -y --no-install-recommends ${missing[*]}"
[ "$known" -ge ${#missing[@]} ] || install="apt-get update && $install"
target=deps; [ "$tests" = 1 ] && target=test-deps; [ "$hf" = 1 ] && target=hf-venv
# The command is printed alone on its line, so that the line pasted whole into a shell is
# that command and nothing else (a remark after it was a syntax error); what it needs is
# said on the lines around it.
if [ "$(id -u)" -ne 0 ] || [ $check = 1 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    cmd=$install how="install them with this line (or: make $target):"
  elif command -v sudo >/dev/null; then
    case $install in apt-get\ update*) cmd="sudo sh -c '$install'" ;; *) cmd="sudo $install" ;; esac
    how="install them with this line (sudo asks for your password):"
  else
    cmd="su -c '$install'" how="install them as root with this line (this machine has no sudo; su asks for root's password):"
  fi
  echo "ddptok: missing Debian packages; $how" >&2
  echo "  $cmd" >&2
  case $cmd in su\ *)
    echo "ddptok: where su says \"Authentication failure\" (root has no password: the Debian installer locks it when it sets up sudo), run the part between the quotes as root another way (a root login, or whoever administers this machine), then this script again" >&2 ;;
  *) echo "ddptok: then run this script again" >&2 ;;
  esac
  exit 2
fi
echo "ddptok: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
