#!/usr/bin/env bash
# bench_import.sh — import's memory and speed against the input's size (docs/data.md
# "Import at any size"). Not a test: `make bench` runs it (IMPORT_ARGS for its options).
#
#   bash run/bench_import.sh [--sizes "1M 64M 1G 4G"] [--speed SIZE] [--repeats N] [--big SIZE] [--keep]
#
#   --sizes LIST   llm.c shards (uint16, EOT 50256 before each document of 100..2000 tokens,
#                  as fineweb.py writes them) of these sizes, each imported once: peak RSS
#                  (/usr/bin/time %M), wall and CPU seconds, MB/s of input (default 1M 64M 1G)
#   --speed SIZE   the shard of that size imported REPEATS times side by side with
#                  `cat FILE | sha256sum` (the read + SHA-256 limit of this machine), each
#                  with the page cache of the input dropped first (cold: posix_fadvise
#                  DONTNEED) and kept (warm); medians and ranges (default 1G, 3 repeats)
#   --big SIZE     also a sparse input of SIZE (e.g. 20G) in shards of 1 GiB: a quarter of it
#                  real documents in blocks, the rest holes, which read as token 0 = the EOT
#                  here (empty documents): RSS and time over SIZE bytes read and hashed twice,
#                  then the corpus it makes trained (4 updates, W = 2) and evaluated
#   --keep         leave the work directory (default: removed, with every input and corpus)
# BENCH_DIR (default /var/tmp) holds the work directory; it refuses to start without room
# for the inputs and corpora it will write. The figures of docs/data.md came from
#   bash run/bench_import.sh --sizes "1M 16M 256M 1G 4G" --speed 1G --repeats 3 --big 20G
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DDPTOK=${DDPTOK:-$ROOT/ddptok}
LAUNCH=${LAUNCH:-$ROOT/run/ddprun}
PY=/usr/bin/python3
sizes="1M 64M 1G" speed=1G repeats=3 big="" keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --sizes) sizes=$2; shift 2 ;;
    --speed) speed=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --big) big=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n 2,24p "$0"; exit 0 ;;
    *) echo "bench_import: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
bytes_of() { numfmt --from=iec "$1"; }
W=$(mktemp -d "${BENCH_DIR:-/var/tmp}/ddptok-bench-import.XXXXXX")
[ $keep = 1 ] || trap 'rm -rf "$W"' EXIT
cd "$W"
# Room: each real input and its corpus (about its size again), the largest two at once; the big one's real quarter twice.
need=0
for s in $sizes $speed; do b=$(bytes_of "$s"); [ $((2 * b)) -gt $need ] && need=$((2 * b)); done
[ -n "$big" ] && need=$((need + $(bytes_of "$big") / 2))
free=$(df -B1 --output=avail . | tail -1)
[ "$free" -gt $((need + (1 << 30))) ] || { echo "bench_import: $W has $(numfmt --to=iec "$free") free, needs $(numfmt --to=iec $((need + (1 << 30))))" >&2; exit 2; }
cat > c.yaml <<'EOF'
seed: 1
data: {vocab_size: 50257, min_length: 16, max_length: 256, source: imported, import: {validation_fraction: 0.01, test_fraction: 0.01}}
model: {context: 2, embed_dim: 4, hidden: 8, dropout: 0.0}  # the corpus's test: a small model scores its 1 %
train: {world_size: 2, sampler: global, global_batch: 8, updates: 4, interrupt_at: 0}
EOF
# shard FILE BYTES [sparse]: an llm.c v1 shard of BYTES (header included)
shard() {
  $PY - "$1" "$2" "${3:-}" <<'PY'
import sys, numpy as np
path, size, sparse = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "sparse"
n = (size - 1024) // 2
r = np.random.default_rng(size)
eot = 0 if sparse else 50256
h = np.zeros(256, "<i4"); h[0], h[1], h[2] = 20240520, 1, n
block = 1 << 24  # tokens per write (32 MiB)
with open(path, "wb") as f:
    f.write(h.tobytes())
    done = 0
    while done < n:
        k = min(block, n - done)
        if sparse and (done // block) % 4:  # three blocks in four: a hole (zeros, read as token 0 = the EOT)
            f.seek(2 * k, 1)
        else:
            t = r.integers(1, 4096 if sparse else 50000, size=k, dtype=np.uint16)  # sparse: trained on, a small V
            t[np.cumsum(r.integers(100, 2000, size=k // 100 + 1)).clip(0, k - 1)] = eot  # documents of 100..2000 tokens
            f.write(t.astype("<u2").tobytes())
        done += k
    f.truncate(1024 + 2 * n)
PY
}
drop() { $PY -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)" "$1"; }
measure() {  # OUT CMD...: "wall user sys maxrss_kb" into OUT
  /usr/bin/time -f "%e %U %S %M" -o "$1" "${@:2}" >/dev/null 2>&1 || { echo "bench_import: failed: ${*:2}" >&2; return 1; }
}
echo "bench_import: $W, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "  input          bytes  peak RSS   wall s    CPU s   MB/s (of input)"
for s in $sizes; do
  b=$(bytes_of "$s"); shard "in-$s.bin" "$b"
  rm -rf outputs && measure t.txt "$DDPTOK" import --config c.yaml --format llmc --eot 50256 --input "in-$s.bin"
  read -r wall user sys rss < t.txt
  awk -v s="$s" -v b="$b" -v w="$wall" -v u="$user" -v y="$sys" -v r="$rss" 'BEGIN { printf "  %-6s %13.0f %7.1f MB %8.2f %8.2f %8.0f\n", s, b, r / 1024, w, u + y, b / w / 1e6 }'
  [ "$s" = "$speed" ] || rm -f "in-$s.bin"
done
rm -rf outputs
# Side by side: REPEATS rounds of cat | sha256sum and import, cold then warm.
b=$(bytes_of "$speed"); [ -f "in-$speed.bin" ] || shard "in-$speed.bin" "$b"
for mode in cold warm; do
  : > "$mode.cat"; : > "$mode.imp"
  for ((i = 0; i < repeats; i++)); do
    [ $mode = cold ] && drop "in-$speed.bin"
    measure t.txt sh -c "cat in-$speed.bin | sha256sum" && cat t.txt >> "$mode.cat"
    [ $mode = cold ] && drop "in-$speed.bin"
    rm -rf outputs && measure t.txt "$DDPTOK" import --config c.yaml --format llmc --eot 50256 --input "in-$speed.bin" && cat t.txt >> "$mode.imp"
  done
done
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f..%.2f)", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR] }'; }
echo "  $speed side by side, $repeats rounds, median (range) wall seconds:"
for mode in cold warm; do
  c=$(cut -d' ' -f1 "$mode.cat" | stats) m=$(cut -d' ' -f1 "$mode.imp" | stats)
  mc=$(cut -d' ' -f1 "$mode.cat" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  mi=$(cut -d' ' -f1 "$mode.imp" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  cpu=$(awk '{ s += $2 + $3 } END { printf "%.2f", s / NR }' "$mode.imp") ccpu=$(awk '{ s += $2 + $3 } END { printf "%.2f", s / NR }' "$mode.cat")
  awk -v mode="$mode" -v c="$c" -v m="$m" -v mc="$mc" -v mi="$mi" -v b="$b" -v cpu="$cpu" -v ccpu="$ccpu" 'BEGIN {
    printf "    %-4s cat | sha256sum %s s (%.0f MB/s, CPU %s s); import %s s (%.0f MB/s, CPU %s s): import at %.0f %% of the limit\n",
      mode, c, b / mc / 1e6, ccpu, m, b / mi / 1e6, cpu, 100 * mc / mi }'
done
rm -f "in-$speed.bin"
# The big sparse input: shards of 1 GiB (llm.c's header counts tokens in an int32), RSS and
# time over all of it, then its corpus trained and evaluated.
if [ -n "$big" ]; then
  b=$(bytes_of "$big") k=0
  mkdir -p big
  for ((left = b; left > 0; left -= 1 << 30)); do
    shard "big/shard_$(printf %04d $k).bin" $((left < (1 << 30) ? left : (1 << 30))) sparse; k=$((k + 1))
  done
  echo "  $big sparse in $k shards ($(du -sk big | cut -f1) KiB on disk; a quarter real documents, holes read as EOTs):"
  sed 's/vocab_size: 50257/vocab_size: 4097/' c.yaml > cb.yaml
  rm -rf outputs && measure t.txt "$DDPTOK" import --config cb.yaml --format llmc --eot 0 --input big
  read -r wall user sys rss < t.txt
  awk -v b="$b" -v w="$wall" -v u="$user" -v y="$sys" -v r="$rss" 'BEGIN { printf "    import: peak RSS %.1f MB, %.1f s wall, %.1f s CPU, %.0f MB/s of input\n", r / 1024, w, u + y, b / w / 1e6 }'
  echo "    corpus.h5 $(stat -c %s outputs/data/corpus.h5) bytes"
  rm -rf big
  measure t.txt "$LAUNCH" -np 2 train --config cb.yaml && echo "    train (4 updates, W = 2): peak RSS $(awk '{ printf "%.1f", $4 / 1024 }' t.txt) MB (the launcher's largest child), $(cut -d' ' -f1 t.txt) s"
  measure t.txt "$DDPTOK" evaluate --config cb.yaml && echo "    evaluate (the test split, $($PY -c "import json; print(json.load(open('outputs/evaluate.json'))['test']['tokens'])") tokens): peak RSS $(awk '{ printf "%.1f", $4 / 1024 }' t.txt) MB, $(cut -d' ' -f1 t.txt) s"
fi
