# prepare: byte-identical reruns, splits, lengths, bands, unique and disjoint windows,
# plan shape, auto bands for other world sizes; the data lock guards later commands.
cfg="$CONFIGS/minimum.yaml"
fixture_prepared() { one prepare --config "$cfg" >/dev/null; }  # outputs/data of minimum.yaml
case_determinism() {
  expect_rc "prepare minimum.yaml" 0 one prepare --config "$cfg"
  cp outputs/data/corpus.h5 c1.h5; cp outputs/data/plan.h5 p1.h5
  sleep 1.1  # cross a clock second: HDF5 stamps objects with times unless told not to
  one prepare --config "$cfg" >/dev/null
  cmp -s c1.h5 outputs/data/corpus.h5 && cmp -s p1.h5 outputs/data/plan.h5 && ok "prepare twice, same config: byte-identical corpus and plan" \
    || bad "prepare twice, same config: byte-identical corpus and plan"
  one prepare --config "$cfg" --set seed=1235 >/dev/null
  cmp -s c1.h5 outputs/data/corpus.h5 && bad "prepare with another seed gives another corpus" || ok "prepare with another seed gives another corpus"
}
# The chain is O(V·S): the largest vocabulary the config allows takes seconds (it took
# minutes when every row reset a permutation of all V tokens).
case_big_vocab() {
  DDPTOK_TEST_TIMEOUT=30 expect_rc "prepare with vocab_size 2^20 finishes within 30 s" 0 one prepare --config "$CONFIGS/tiny.yaml" --set data.vocab_size=1048576 --set paths.outputs=bigv
}
case_splits_plan() {
  fixture prepared || return
  local n out
  n=$(/usr/bin/python3 -c "import h5py,numpy as np; s=h5py.File('outputs/data/corpus.h5')['split'][()]; print(*np.bincount(s))")
  [ "$n" = "1024 128 256" ] && ok "prepare minimum.yaml: splits 1024/128/256" || bad "prepare minimum.yaml: splits 1024/128/256" "— got $n"
  out=$(/usr/bin/python3 "$ROOT/tests/check_data.py" outputs 2 2 4 100 16 128 16-64 65-128) \
    && ok "prepare minimum.yaml: plan bands, unique ids per window, ranks disjoint, shape [U][W][A][B]" \
    || { bad "prepare minimum.yaml: plan bands, unique ids per window, ranks disjoint, shape [U][W][A][B]"; echo "$out"; }
}
# Auto bands for W = 3 and 4.
auto_bands() {  # W
  local w=$1 bands out
  one prepare --config "$cfg" --set train.world_size=$w --set train.rank_bands=auto > prep.txt
  bands=$(sed -nE 's/.*band \[([0-9]+), ([0-9]+)\].*/\1-\2/p' prep.txt | tr '\n' ' ')
  out=$(/usr/bin/python3 "$ROOT/tests/check_data.py" outputs $w 2 4 100 16 128 $bands) && ok "prepare: auto bands W = $w" "($bands)" \
    || { bad "prepare: auto bands W = $w"; echo "$out"; }
}
case_auto_bands_w3() { auto_bands 3; }
case_auto_bands_w4() { auto_bands 4; }
# The two locks (docs/data.md "Two locks"): corpus.h5 carries the corpus lock, which holds the
# keys that generate or cut the corpus, never the layout on ranks; so a corpus prepared under
# another batch size, world size, accumulation or sampler is this config's corpus (reference
# runs on it, plan.h5 is derived again, nothing is re-made), while one of another seed (which
# generates prepare's corpus) is refused with the command that makes it. On d22e7a6 the batch
# size alone made it "stale: run prepare".
case_lock_mismatch() {
  fixture prepared || return
  cp outputs/data/corpus.h5 before.h5
  expect_rc "reference runs on a corpus prepared for another batch size and world size (the corpus lock holds no layout)" 0 \
    one reference --config "$cfg" --set train.batch_size_per_rank=3 --set train.world_size=3 --set train.rank_bands=auto
  cmp -s before.h5 outputs/data/corpus.h5 && ok "another layout: corpus.h5 untouched" || bad "another layout: corpus.h5 untouched"
  expect_rc "check-checkpoints' plan under another layout is derived again, not refused" 2 \
    one check-checkpoints --config "$cfg" --set train.batch_size_per_rank=3
  expect_grep "another layout: plan.h5 is said to be derived again (then no checkpoint to check)" 'plan.h5 is for another data lock .* derived again' "$OUT"
  expect_rc "reference refuses a corpus prepared with another seed (the seed generates it)" 2 one reference --config "$cfg" --set seed=5
  expect_grep "another seed: refused naming the corpus lock, saying to run prepare" 'corpus lock .* does not match .* run `'"$DDPTOK"' prepare --config .* --set seed=5`' "$OUT"
}
# A damaged corpus file is refused, not used.
case_modified_corpus() {
  fixture prepared || return
  /usr/bin/python3 -c "import h5py; f=h5py.File('outputs/data/corpus.h5','r+'); t=f['tokens']; t[5]=(t[5]%100)+1; f.close()"
  expect_rc "a modified corpus is refused by its data lock" 2 one reference --config "$cfg"
}
# The corpus is read on demand and each chunk checked as it is read (docs/data.md "On disk"):
# a token changed after prepare, in the test split's last chunk, is not read by start-up or
# by window 1 (reference passes: nothing hashes the whole corpus), and is refused by name
# when evaluate reads it. The control: the same evaluate before the change passes.
case_altered_when_read() {
  local set=(--set train.updates=2 --set train.interrupt_at=0)
  one prepare --config "$cfg" "${set[@]}" >/dev/null && ddp 2 train --config "$cfg" "${set[@]}" >/dev/null 2>&1
  expect_rc "negative control: evaluate reads the untouched corpus (exit 0)" 0 one evaluate --config "$cfg" "${set[@]}" || return
  /usr/bin/python3 -c "import h5py; f=h5py.File('outputs/data/corpus.h5','r+'); t=f['tokens']; t[len(t)-1]=t[len(t)-1]%20+1; f.close()"
  expect_rc "a token altered after prepare, not in window 1: reference starts and runs (the part is not read)" 0 \
    one reference --config "$cfg" "${set[@]}"
  expect_rc "the altered token refused when evaluate reads it" 2 one evaluate --config "$cfg" "${set[@]}"
  expect_grep "the refusal names the file, the sequence read, the tokens of the chunk and what to run" \
    '^ddptok: error: outputs/data/corpus.h5: read for sequence [0-9]+: tokens [0-9]+\.\.[0-9]+ \(chunk [0-9]+\) do not match their SHA-256 in /token_sha256: altered after it was made: run `.*ddptok prepare --config .*minimum.yaml --set train.updates=2 --set train.interrupt_at=0`$' "$OUT"
}
# What start-up verified stays what reads are checked against (issue 30.1): evaluate holds
# (DDPTOK_TEST_PAUSE_AT) right after opening a corpus of 20 000 train sequences (300 chunks:
# a tree of two levels); meanwhile one test-split token is changed in place and its chunk's
# checksum, the tree, the digest and the corpus lock rewritten in place to match
# (tests/hostile_h5.py inplace): evaluate, reading the test split, refuses it, naming the
# checksums that no longer hash to the page above them. Control: a process starting now
# accepts the rewritten file (it is self-consistent: only the root verified at start-up
# catches it). On d22e7a6 each chunk's checksum was read from the file when used: accepted, exit 0.
held_evaluate() {  # FILE CMD...: evaluate holding after it opened the corpus; the world changes (CMD); then it goes on
  local flag=$1; shift
  DDPTOK_TEST_PAUSE_AT=corpus-open:"$PWD/$flag" "$DDPTOK" evaluate --config "$CONFIGS/tiny.yaml" "${big[@]}" > eval.out 2>&1 &
  local pid=$! i
  for ((i = 0; i < 500; i++)); do [ -e "$flag" ] && break; sleep 0.02; done
  "$@"
  rm -f "$flag"; wait $pid
}
big=(--set data.splits.train=20000 --set train.updates=2 --set train.interrupt_at=0)
fixture_big_trained() { one prepare --config "$CONFIGS/tiny.yaml" "${big[@]}" >/dev/null && ddp 2 train --config "$CONFIGS/tiny.yaml" "${big[@]}" >/dev/null 2>&1; }
case_altered_after_start() {
  fixture big_trained || return
  local last; last=$(/usr/bin/python3 -c "import h5py; f = h5py.File('outputs/data/corpus.h5'); t = f['tokens']; print(len(t) - 1, t[len(t) - 1] % 20 + 1)")
  held_evaluate held /usr/bin/python3 "$ROOT/tests/hostile_h5.py" inplace outputs $last; local rc=$?
  [ $rc -eq 2 ] && grep -qE 'corpus.h5: read for sequence [0-9]+: the checksums in /token_(sha256|tree) rows [0-9]+\.\.[0-9]+ do not hash to (their entry in /token_tree \(the page above them\)|the root of /token_tree verified at start-up): altered after it was made' eval.out \
    && ok "a token and every checksum above it rewritten in place under evaluate: refused when read (exit 2)" \
    || { bad "a token and every checksum above it rewritten in place under evaluate: refused when read (exit 2)" "— exit $rc:"; tail -3 eval.out | sed 's/^/       /'; }
  expect_rc "control: a process starting now opens the rewritten corpus (only the root held from start-up tells)" 0 \
    one reference --config "$CONFIGS/tiny.yaml" "${big[@]}"
}
# A corpus truncated under a reader is said to be (issue 30.9): was "Input/output error".
case_truncated_while_read() {
  fixture big_trained || return
  held_evaluate held truncate -s 200000 outputs/data/corpus.h5; local rc=$?
  [ $rc -eq 2 ] && grep -qE 'corpus.h5: read for sequence [0-9]+: cannot read tokens chunk [0-9]+: the file ends at byte [0-9]+, before byte [0-9]+ \(truncated after it was opened; it had [0-9]+ bytes\)' eval.out \
    && ok "corpus.h5 truncated under evaluate: one line saying so (exit 2)" || { bad "corpus.h5 truncated under evaluate: one line saying so (exit 2)" "— exit $rc:"; tail -3 eval.out | sed 's/^/       /'; }
}
# Memory does not grow with the corpus (docs/data.md "On disk"), under either sampler, and
# prepare writes it without holding it (data/writer.h): tiny.yaml with sequences of 8..16
# tokens, 30 000 and 4 000 000 train sequences (~1 MB and ~130 MB of corpus.h5), prepared once
# each, then trained at W = 2 under DDPTOK_MEMORY_LIMIT=24M with the bands sampler and with the
# global one on that same corpus.h5 (the corpus lock holds no sampler). Each rank's peak RSS
# (tests/maxrss.py) for the 130x corpus must be within 10 % of the small one's, and prepare's.
# On d22e7a6 the bands sampler held its pool (4 bytes per train sequence of the band: +6 MB,
# 34.8 vs 27.9 MB here) and prepare the whole corpus (536 MB). The control that the measurement
# sees corpus-sized memory: h5py reading /tokens whole grows by at least half the corpus's growth.
case_on_demand_memory() {
  local tiny="$CONFIGS/tiny.yaml" py=/usr/bin/python3
  local set=(--set data.min_length=8 --set data.max_length=16 --set train.rank_bands=auto --set train.interrupt_at=0)
  local n sampler size sizes=() r rss=() prep=() load=()
  declare -A peak
  for n in 30000 4000000; do
    mkdir -p "n$n" && ( cd "n$n" && $py "$ROOT/tests/maxrss.py" prep "$DDPTOK" prepare --config "$tiny" "${set[@]}" --set data.splits.train=$n >/dev/null ) \
      || { bad "on-demand memory: prepare $n train sequences"; return; }
    size=$(stat -c %s "n$n/outputs/data/corpus.h5") && sizes+=("$size")
    prep+=("$(cat "n$n/prep.0")")
    ( cd "n$n" && $py "$ROOT/tests/maxrss.py" load $py -c "import h5py; t = h5py.File('outputs/data/corpus.h5')['tokens'][()]" ) && load+=("$(cat "n$n/load.0")")
    for sampler in bands global; do
      ( cd "n$n" && DDPTOK_MEMORY_LIMIT=24M timeout -k 5 120 mpirun -np 2 $py "$ROOT/tests/maxrss.py" "rss-$sampler" "$DDPTOK" train --config "$tiny" "${set[@]}" \
          --set data.splits.train=$n --set train.sampler=$sampler --fresh >train.out 2>&1 ) \
        || { tail -5 "n$n/train.out"; bad "on-demand memory: train ($sampler sampler) on $n train sequences ($size bytes) under DDPTOK_MEMORY_LIMIT=24M"; return; }
      for r in 0 1; do peak[$n.$sampler.$r]=$(cat "n$n/rss-$sampler.$r"); done
    done
  done
  [ "$size" -ge $((4 * 24 * 1024 * 1024)) ] && ok "a corpus of $size bytes, more than 4x DDPTOK_MEMORY_LIMIT=24M, trains at W = 2 under either sampler" \
    || bad "a corpus of $size bytes, more than 4x DDPTOK_MEMORY_LIMIT=24M, trains at W = 2 under either sampler" "— the corpus is too small for the claim"
  for sampler in bands global; do
    for r in 0 1; do
      local a=${peak[30000.$sampler.$r]} b=${peak[4000000.$sampler.$r]}
      awk -v a="$a" -v b="$b" 'BEGIN { exit !(b < a * 1.10 && a < b * 1.10) }' \
        && ok "$sampler sampler: rank $r's peak RSS with the 130x corpus within 10 % of the small one's" "($a vs $b KiB)" \
        || bad "$sampler sampler: rank $r's peak RSS with the 130x corpus within 10 % of the small one's" "— $a vs $b KiB"
    done
  done
  awk -v a="${prep[0]}" -v b="${prep[1]}" 'BEGIN { exit !(b < a * 1.10 && a < b * 1.10) }' \
    && ok "prepare's peak RSS with the 130x corpus within 10 % of the small one's (it streams)" "(${prep[0]} vs ${prep[1]} KiB)" \
    || bad "prepare's peak RSS with the 130x corpus within 10 % of the small one's (it streams)" "— ${prep[0]} vs ${prep[1]} KiB"
  awk -v a="${load[0]}" -v b="${load[1]}" -v d="$(( (sizes[1] - sizes[0]) / 1024 ))" 'BEGIN { exit !(b - a >= d / 2) }' \
    && ok "control: reading /tokens whole grows by at least half the corpus's growth (the measurement sees it)" "(${load[0]} vs ${load[1]} KiB)" \
    || bad "control: reading /tokens whole grows by at least half the corpus's growth (the measurement sees it)" "— ${load[0]} vs ${load[1]} KiB"
}
# More than 2^31 tokens (docs/data.md "Limits"): tests/make_big_corpus.c writes prepare's
# format with 32 800 sequences of 65 536 tokens (2 149 580 800 tokens, 8.7 GB apparent, a
# hole of zeros where the validation split lies: ~80 MB on disk); the test split starts at
# token 2^31. train at W = 2 (global sampler) reads the train split; evaluate reads the whole
# test split beyond 2^31 and counts its 32 x 65536 supervised tokens. The control that those
# reads land where they should: one token changed at 2^31 + 100 is refused by evaluate,
# naming sequence 32768 and the chunk at token 2^31.
case_beyond_2_31() {
  local tiny="$CONFIGS/tiny.yaml"
  local set=(--set data.min_length=65535 --set data.max_length=65536 --set data.splits.train=16 --set data.splits.validation=32752
    --set data.splits.test=32 --set train.sampler=global --set train.global_batch=4 --set train.accumulation=1 --set train.updates=4
    --set train.interrupt_at=0 --set train.rank_bands=auto)
  mkdir -p outputs/data
  expect_rc "a corpus of 2149580800 tokens (sparse) written in prepare's format" 0 "$ROOT/build/make_big_corpus" "$tiny" outputs/data/corpus.h5 "${set[@]}" || return
  expect_rc "train at W = 2 on more than 2^31 tokens" 0 ddp 2 train --config "$tiny" "${set[@]}" || return
  expect_rc "evaluate the test split, all beyond token 2^31" 0 one evaluate --config "$tiny" "${set[@]}" || return
  local tokens
  tokens=$(/usr/bin/python3 -c "import json; print(json.load(open('outputs/evaluate.json'))['test']['tokens'])")
  [ "$tokens" = 2097152 ] && ok "evaluate counted the test split's 32 x 65536 supervised tokens" "($tokens)" \
    || bad "evaluate counted the test split's 32 x 65536 supervised tokens" "— $tokens"
  /usr/bin/python3 -c "import h5py; f = h5py.File('outputs/data/corpus.h5', 'r+'); t = f['tokens']; t[2**31 + 100] = t[2**31 + 100] % 23 + 1; f.close()"
  expect_rc "control: a token changed at 2^31 + 100 is refused when evaluate reads it" 2 one evaluate --config "$tiny" "${set[@]}"
  expect_grep "control: the refusal names sequence 32768 and the chunk at token 2^31" \
    'read for sequence 32768: tokens 2147483648\.\.2147484671 \(chunk 2097152\) do not match' "$OUT"
}
case_truncated_corpus() {
  fixture prepared || return
  head -c 5000 outputs/data/corpus.h5 > c && mv c outputs/data/corpus.h5
  expect_rc "a truncated corpus is refused" 2 one reference --config "$cfg"
  expect_grep "a truncated corpus is refused, naming the file" 'corpus.h5: not a readable HDF5 file' "$OUT"
}
# Epochs of the global sampler (docs/sampling.md "Epochs"): `ddptok plan` prints 3 epochs of
# tiny's 96 train sequences in windows of G = 10 (Q = 10 windows, the last holding 6) for
# W = 1, 2, 3; tests/epoch_coverage.py checks from the printed ids alone that each epoch
# visits every train id exactly once, each rank's shares partition each window, and the
# epochs' orders differ; the windows are the same for every W. Negative controls: the same
# output with one window dropped, and with one id drawn twice in an epoch (a with-replacement
# draw), are refused by the same check.
ge=(--set train.sampler=global --set train.global_batch=10 --set train.rank_bands=auto --set paths.outputs=oe --set paths.artifacts=ae)
case_epoch_coverage() {
  local tiny="$CONFIGS/tiny.yaml" w out first=""
  one prepare --config "$tiny" "${ge[@]}" >/dev/null || { bad "epochs: prepare (global sampler, G = 10)"; return; }
  for w in 1 2 3; do
    one plan --config "$tiny" "${ge[@]}" --steps 1..30 --world-size $w > plan-w$w.txt || { bad "epochs: plan --steps 1..30 --world-size $w"; continue; }
    out=$(/usr/bin/python3 "$ROOT/tests/epoch_coverage.py" 0 96 10 $w 3 < plan-w$w.txt) \
      && ok "epochs W = $w: every train sequence exactly once per epoch (3 epochs of 10 windows, the last holding 6), the ranks' shares a partition" \
      || { bad "epochs W = $w: every train sequence exactly once per epoch"; echo "$out" | head -5; }
    [ -z "$first" ] && first=$out
    [ "$out" = "$first" ] && ok "epochs W = $w: the same windows as W = 1" || bad "epochs W = $w: the same windows as W = 1"
  done
  sed '/^step 7 /,/^step 8 /{/^step 8 /!d}' plan-w2.txt > dropped.txt
  ! grep -q '^step 7 ' dropped.txt && ! /usr/bin/python3 "$ROOT/tests/epoch_coverage.py" 0 96 10 2 3 < dropped.txt >/dev/null \
    && ok "epochs negative control: a window dropped (step 7) is caught" || bad "epochs negative control: a window dropped (step 7) is caught"
  # Step 2's first id replaced by step 1's first id, in the window and in the rank share holding it.
  /usr/bin/python3 - plan-w2.txt > replaced.txt <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
w1 = next(l for l in lines if l.startswith("step 1 ")).split(":")[1].split()
i2 = next(i for i, l in enumerate(lines) if l.startswith("step 2 "))
old = lines[i2].split(":")[1].split()[0]
lines[i2] = lines[i2].replace(f": {old} ", f": {w1[0]} ", 1)
for i in range(i2 + 1, len(lines)):
    if not lines[i].startswith("  rank"):
        break
    ids = lines[i].split(":")[1].split()
    if old in ids:
        ids[ids.index(old)] = w1[0]
        lines[i] = lines[i].split(":")[0] + ": " + " ".join(ids)
print("\n".join(lines))
PY
  ! /usr/bin/python3 "$ROOT/tests/epoch_coverage.py" 0 96 10 2 3 < replaced.txt >/dev/null \
    && ok "epochs negative control: one id drawn twice in an epoch (with replacement) is caught" \
    || bad "epochs negative control: one id drawn twice in an epoch (with replacement) is caught"
}
# The trainer draws what `plan` prints: a W = 2 run's step-6 checkpoint holds plan's step 6 as
# its last window (its own draw; plan's step 7, a control shifted by one, differs), and, format
# 4, the digest of what determines its 6 windows, computed here as docs/checkpoints.md defines
# it (for 7 windows, the control, it differs); the running hash over plan's steps 1..6 as
# format 3 defined it is not what a format-4 file holds (a control: the digest is not the old hash).
case_epoch_trainer_draws() {
  local tiny="$CONFIGS/tiny.yaml"
  one prepare --config "$tiny" "${ge[@]}" >/dev/null && ddp 2 train --config "$tiny" "${ge[@]}" >/dev/null 2>&1 \
    || { bad "epochs: train W = 2 to step 6 (global sampler, G = 10)"; return; }
  one plan --config "$tiny" "${ge[@]}" --steps 1..7 > plan.txt || { bad "epochs: plan --steps 1..7"; return; }
  /usr/bin/python3 - <<'PY' && ok "epochs: the step-6 checkpoint's running hash is plan's steps 1..6 (and not steps 2..7)" \
    || bad "epochs: the step-6 checkpoint's running hash is plan's steps 1..6 (and not steps 2..7)"
import hashlib, re
import h5py, numpy as np
w = [np.array(l.split(":")[1].split(), dtype="<i4") for l in open("plan.txt") if re.match(r"step \d+ ", l)]
def run(ws):
    h = hashlib.sha256(b"ddptok-sampler-windows v1").hexdigest()
    for x in ws:
        h = hashlib.sha256(h.encode() + x.tobytes()).hexdigest()
    return h
f = h5py.File("ae/checkpoints/step-0006/rank-0001.h5")
have = f["sampler"].attrs["windows_sha256"].decode()
p = h5py.File("oe/data/plan.h5").attrs
def digest(k):
    t = f"ddptok-sampler-windows v2 global seed={int(p['seed'])} n_train={int(p['n_train'])} train_begin={int(p['train_begin'])} global_batch={int(p['global_batch'])} windows={k}"
    return hashlib.sha256(t.encode()).hexdigest()
assert f.attrs["version"] == 4 and have == digest(6) and have != digest(7) and have != run(w[:6]), (have, digest(6))
assert (f["sampler/last"][0] == w[5]).all() and not (f["sampler/last"][0] == w[6]).all()
PY
}
# plan refuses what it cannot print, in one line, exit 2: steps not a..b with 1 <= a <= b, and
# another world size under the bands sampler (its windows are per rank); controls: the same
# commands with valid values print the windows.
case_plan_refusals() {
  local tiny="$CONFIGS/tiny.yaml" v
  one prepare --config "$tiny" >/dev/null
  for v in 3..1 0..2 1..x ..4; do
    expect_rc "plan --steps $v refused (exit 2)" 2 one plan --config "$tiny" --steps "$v"
    expect_grep "plan --steps $v: one line saying what is expected" "^ddptok: error: plan: --steps $v: expected a\.\.b with 1 <= a <= b" "$OUT"
  done
  expect_rc "plan --world-size 3 under the bands sampler refused (exit 2)" 2 one plan --config "$tiny" --steps 1..2 --world-size 3
  expect_grep "plan --world-size 3 under the bands sampler: says why" "the bands sampler's windows are drawn per rank of train.world_size 2" "$OUT"
  expect_rc "control: plan --steps 2..3 (bands) prints" 0 one plan --config "$tiny" --steps 2..3
  [ "$(grep -c '^step [23] rank [01]:' <<<"$OUT")" -eq 4 ] && ok "control: plan --steps 2..3 (bands): 2 steps x 2 ranks, A x B = 6 ids each" \
    || bad "control: plan --steps 2..3 (bands): 2 steps x 2 ranks, A x B = 6 ids each"
  echo "$OUT" > plan.txt
  cat > same.py <<'PY'
import re, sys
import h5py
ids = h5py.File(sys.argv[1] + "/data/plan.h5")["ids"][()]
n = 0
for line in sys.stdin:
    m = re.fullmatch(r"step (\d+) rank (\d+):((?: -?\d+)*)\n?", line)
    if m:
        u, r = int(m.group(1)), int(m.group(2))
        assert [int(x) for x in m.group(3).split()] == list(ids[u - 1, r].ravel()), (u, r)
        n += 1
assert n == 4
PY
  /usr/bin/python3 same.py outputs < plan.txt && ok "control: plan's bands windows equal plan.h5's steps 2..3" || bad "control: plan's bands windows equal plan.h5's steps 2..3"
}
