# bench-comm: the nccl-tests-style all-reduce sweep through the backend the training uses.
# At W = 2 on small sizes: the table's columns, the count and gradient rows of the config,
# every size verified with exact sums (wrong = 0), busbw = algbw * 2(W-1)/W; and the
# negative control: one rank's input corrupted (a test hook) must be counted and fail it.
W=$(workdir); cd "$W"
cfg="$CONFIGS/tiny.yaml"
expect_rc "bench-comm at W=2 up to 64 KiB" 0 ddp 2 bench-comm --config "$cfg" --max-bytes 65536
expect_grep "... the table header" '^ +size\(B\) +count +type +redop +time\(us\) +algbw\(GB/s\) +busbw\(GB/s\) +wrong$' "$OUT"
expect_grep "... the count all-reduce row: 2W+3 int64" '^  count +56 +7 +int64 +sum ' "$OUT"
P=$(/usr/bin/python3 -c "V,k,D,H=24,3,8,16; print(V*D + H*k*D + H + V*H + V + 1)")
expect_grep "... the gradient row: P+1 = $P floats of tiny.yaml" "^  gradient +$((P * 4)) +$P +float +sum " "$OUT"
/usr/bin/python3 - <<PY "$OUT" && ok "... sizes 64 B..64 KiB x4, wrong = 0 on every row, busbw = algbw (W = 2)" || bad "bench-comm table"
import sys, re
rows = [l.split() for l in sys.argv[1].splitlines() if re.match(r"^  (count|gradient|) +\d+ +\d+ +(int64|float) ", l)]
sizes = sorted(int(r[-8]) for r in rows)
assert {64, 256, 1024, 4096, 16384, 65536} <= set(sizes) and len(rows) == 8, sizes
assert sizes == [int(r[-8]) for r in rows], "rows sorted by size"
for r in rows:
    alg, bus, wrong = float(r[-3]), float(r[-2]), int(r[-1])
    assert wrong == 0 and abs(bus - alg) <= 1e-3 and float(r[-4]) > 0, r
PY
expect_grep "... and says ok" '^bench-comm: ok \(0 wrong value\(s\) over 8 sizes\)$' "$OUT"
expect_rc "bench-comm at W=3: busbw = algbw * 4/3" 0 ddp 3 bench-comm --config "$cfg" --set train.world_size=3 --set train.rank_bands=auto --max-bytes 4096
r=$(grep -E '^  +4096 ' <<<"$OUT" | awk '{printf "%.3f %.3f", $6 * 4 / 3, $7}')
[ -n "$r" ] && /usr/bin/python3 -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 2e-3)" $r \
  && ok "... 4096 B row: algbw*4/3 vs busbw = $r" || bad "W=3 busbw" "— '$r'"
DDPTOK_TEST_BENCH_CORRUPT=1 expect_rc "negative control: rank 1's input off by one in one element fails it (exit 1)" 1 ddp 2 bench-comm --config "$cfg" --max-bytes 1024
expect_grep "... each size counts the wrong value on both ranks" '^bench-comm: FAILED \(10 wrong value\(s\) over 5 sizes\)$' "$OUT"
cd "$ROOT"; rm -rf "$W"
