#!/usr/bin/env bash
# bench_data.sh — how long each rank waits for the corpus (docs/data.md "Prefetch"):
# configs/minimum.yaml (the tutorial's model) at W = 2 on a synthetic corpus of at least
# 2 GiB on disk (DATA_TRAIN train sequences, default 16 000 000: about 2.3 GB of uint16 tokens), 100 updates,
# with the page cache of corpus.h5 dropped first (cold: posix_fadvise DONTNEED, checked
# with fincore where it exists) and then kept (warm); each with the prefetch thread and
# without it (DDPTOK_PREFETCH=off, the control: the waits the prefetch hides). Per rank it
# prints the data wait summed over the windows (rank-R.log data_wait=) as a share of the
# windows' own seconds, REPS times each (default 3). Not a test: `make bench` runs it;
# DATA_DIR (default a new directory under /var/tmp) holds the corpus, which it removes at the
# end unless KEEP=1 (a kept corpus is used again by the next run with that DATA_DIR).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DDPTOK=${DDPTOK:-$ROOT/ddptok}
LAUNCH=${LAUNCH:-$ROOT/run/ddprun}
N=${DATA_TRAIN:-16000000}
DIR=${DATA_DIR:-$(mktemp -d /var/tmp/ddptok-bench-data.XXXXXX)}
cfg=$ROOT/configs/minimum.yaml
set_=(--set "data.splits.train=$N" --set train.interrupt_at=0)
cd "$DIR"
echo "bench_data: $DIR, $N train sequences of configs/minimum.yaml, W = 2, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}"
t0=$(date +%s.%N)
made="kept from an earlier run"
[ -f outputs/data/corpus.h5 ] || { "$DDPTOK" prepare --config "$cfg" "${set_[@]}" >/dev/null
  made="prepare $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"; }
bytes=$(stat -c %s outputs/data/corpus.h5)
echo "  corpus.h5 $bytes bytes ($(awk -v b="$bytes" 'BEGIN { printf "%.2f", b / 2^30 }') GiB; $made)"
[ "$bytes" -ge $((2 * 1024 * 1024 * 1024)) ] || echo "  WARNING: corpus.h5 is under 2 GiB (raise DATA_TRAIN)"
cached() { command -v fincore >/dev/null && fincore -nb -o RES outputs/data/corpus.h5 2>/dev/null | tr -d ' ' || echo "?"; }
drop() { /usr/bin/python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" outputs/data/corpus.h5; }
run() {  # LABEL CACHE(cold|warm) PREFETCH(on|off)
  rm -rf artifacts outputs/train outputs/logs
  [ "$2" = cold ] && drop
  local before; before=$(cached)
  DDPTOK_PREFETCH=$3 "$LAUNCH" -np 2 train --config "$cfg" "${set_[@]}" >/dev/null 2>&1 || { echo "  $1: train failed"; return 1; }
  local r line=""
  for r in 0 1; do
    line+=$(awk -v r="$r" '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "seconds") s += kv[2]; if (kv[1] == "data_wait") w += kv[2] } }
      END { printf "  rank %d: wait %7.1f ms of %7.1f ms (%5.2f %%)", r, 1e3 * w, 1e3 * s, (s > 0 ? 100 * w / s : 0) }' outputs/logs/interrupted/rank-$r.log)
  done
  printf '  %-22s cached before %12s bytes%s\n' "$1" "$before" "$line"
}
for rep in $(seq "${REPS:-3}"); do
  run "cold, prefetch on" cold on
  run "warm, prefetch on" warm on
  run "cold, prefetch off" cold off
  run "warm, prefetch off" warm off
done
cd / && [ "${KEEP:-0}" = 1 ] || rm -rf "$DIR"
