# Hostile input and files (docs/failure-model.md): sizes that overflow, files whose data
# lock was recomputed around hostile content, another seed's plan, FIFOs and devices in
# place of files, YAML built to exhaust the parser, --set values YAML would reinterpret,
# config values that must survive emission. Each is refused with exit 2 and one line
# naming the file or key (or, in check-checkpoints, counted as a problem: exit 1) — never
# a signal, a hang, exit 70 or silent use. Every case here failed on ddptok before this
# group existed (3337937), except the ones marked "guard" (already refused then).
cfg="$CONFIGS/tiny.yaml"
PY=/usr/bin/python3
HOSTILE_H5="$ROOT/tests/hostile_h5.py"
fixture_prepared() { one prepare --config "$cfg" >/dev/null; }                          # outputs/data
fixture_trained() { fixture prepared && ddp 2 train --config "$cfg" >/dev/null 2>&1; }  # ... and artifacts/checkpoints/step-0006
# refused_job NAME PATTERN CMD...: a distributed command refused (exit 2), one rank's line matching PATTERN.
refused_job() {
  local name=$1 pat=$2; shift 2
  expect_rc "$name" 2 "$@" && expect_grep "$name: naming it" "$pat" "$OUT"
}
# refused NAME CODE PATTERN CMD...: exit CODE, at most one stderr line per rank, PATTERN in it, no signal.
refused() {
  local name=$1 want=$2 pat=$3; shift 3
  OUT=$("$@" 2>&1 >/dev/null); local rc=$?
  local lines; lines=$(grep -c . <<<"$OUT")
  if [ $rc -eq "$want" ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" <<<"$OUT"; then ok "$name" "(exit $rc, one line)"
  else bad "$name" "— exit $rc, $lines line(s), expected exit $want and one line matching /$pat/:"; echo "$OUT" | head -4 | sed 's/^/       /'; fi
}
sums() { (cd artifacts/checkpoints/step-0006 && sha256sum rank-0000.h5 rank-0001.h5 > SHA256SUMS); }  # the manifest recomputed

# --- sizes: every product in 64 bits, the workload's memory checked before allocating
case_workload_sizes() {
  refused "plan U*W*A*B*4 = 2^64 bytes (all keys in range): exit 2 naming the plan's keys, not a heap overflow" 2 \
    'the workload needs 16.0 EiB or more \(largest: plan U\*W\*A\*B\*4 = 16.0 EiB: train.updates x train.world_size x train.accumulation x train.batch_size_per_rank\), more than the .* this machine has available' \
    one prepare --config "$cfg" --set data.max_length=512 --set train.world_size=256 --set train.rank_bands=auto \
    --set train.updates=16777216 --set train.accumulation=32768 --set train.batch_size_per_rank=32768 --set train.interrupt_at=0
  refused "B = max_length = 65536 (int cap = B*max_length overflowed): exit 2 at prepare" 2 \
    'train.batch_size_per_rank x data.max_length = 4294967296 positions per microbatch, at most 2147483647' \
    one prepare --config "$cfg" --set data.max_length=65536 --set train.batch_size_per_rank=65536 --set train.rank_bands=auto
  refused "V = H = 2^20 (V*H parameters): exit 2 naming the model keys and the bytes, not exit 70" 2 \
    'the workload needs [0-9.]+ TiB \(largest: parameters .* = 64.0 TiB: data.vocab_size, model.embed_dim, model.hidden' \
    one prepare --config "$cfg" --set data.vocab_size=1048576 --set model.hidden=1048576
  local big_tables=(--set model.context=1024 --set model.embed_dim=1 --set data.vocab_size=8192 --set model.hidden=8192)
  expect_rc "k = 1024, V = H = 8192 with the dense first layer: within the budget (--check)" 0 one --check prepare --config "$cfg" "${big_tables[@]}"
  refused "k = 1024, V = H = 8192 with train.first_layer factored (its tables k*V*H*8): exit 2 naming them and their keys" 2 \
    'largest: factored tables k\*V\*H\*8 = [0-9.]+ [GT]iB: model.context x data.vocab_size x model.hidden \(train.first_layer: factored\)' \
    one --check prepare --config "$cfg" "${big_tables[@]}" --set train.first_layer=factored
  refused "a corpus of 2^24 sequences of up to 65536 tokens: prepare (which writes it as drawn) exits 2 naming the disk it needs" 2 \
    'outputs/data/corpus.h5: cannot write: No space left on device \(the corpus needs [0-9.]+ TiB, the file system has [0-9.]+ [KMGT]?i?B free\)' \
    one --check prepare --config "$cfg" --set data.splits.train=16777216 --set data.max_length=65536
  expect_rc "the same corpus size for train, which reads it on demand: within the budget (--check)" 0 \
    one --check train --config "$cfg" --set data.splits.train=16777216 --set data.max_length=65536 --set train.rank_bands=auto
}
# The global sampler's sizes are its own (G = train.global_batch; no batch_size_per_rank enters them).
case_global_sampler_sizes() {
  local g_big=(--set train.sampler=global --set train.global_batch=1048576 --set train.accumulation=1 --set data.min_length=4096
    --set data.max_length=4097 --set train.rank_bands=auto)
  refused "--check prepare with the global sampler, G x max_length = 4296015872 positions in one int (was accepted up to the memory check; exit 70 where memory allows)" 2 \
    'tiny.yaml: train.global_batch x data.max_length = 4296015872 positions in one global window \(train.sampler: global; the reference.s one batch\), at most 2147483647$' \
    one --check prepare --config "$cfg" "${g_big[@]}"
  refused "--check train with the same global-sampler config: refused the same way" 2 'train.global_batch x data.max_length = 4296015872 positions' \
    one --check train --config "$cfg" "${g_big[@]}"
  refused "the global sampler over its memory budget: the message names train.global_batch, the key that sampler uses" 2 \
    'largest: activations (max\(G,16\)|\(G\+16\))\*Lmax\*\(2kD\+4H\+V\)\*4 = [0-9.]+ GiB: train.global_batch x data.max_length x \(model.\*, data.vocab_size\) \(train.sampler: global\)(, train.eval_batch)?\), more than the 1.0 MiB this machine has available \(DDPTOK_MEMORY_LIMIT\)' \
    env DDPTOK_MEMORY_LIMIT=1M "$DDPTOK" --check train --config "$cfg" --set train.sampler=global --set train.global_batch=100000
  grep -q batch_size_per_rank <<<"$OUT" && bad "the global sampler's memory message does not name train.batch_size_per_rank, which that sampler does not use" \
    || ok "the global sampler's memory message does not name train.batch_size_per_rank, which that sampler does not use"
  refused "negative control: the bands sampler over the same budget names train.batch_size_per_rank" 2 \
    'largest: activations .* = [0-9.]+ GiB: train.batch_size_per_rank x data.max_length' \
    env DDPTOK_MEMORY_LIMIT=1M "$DDPTOK" --check train --config "$cfg" --set train.batch_size_per_rank=65536 --set train.accumulation=1 \
    --set data.max_length=256 --set train.rank_bands=auto
}
# bench-comm's sweep is sized by --max-bytes, not the config: through the same budget.
case_bench_comm_budget() {
  local w1=(--set train.world_size=1 --set train.rank_bands=auto)
  refused "--check bench-comm --max-bytes 1e12: refused naming the option and the budget (was ok, then exit 70 out of memory)" 2 \
    "^ddptok: error: bench-comm --max-bytes 1000000000000: its largest all-reduce \(256.0 GiB\) and MPI's scratch for it needs 512.0 GiB, more than the .* this machine has available \((MemAvailable|ulimit -v)\): give a smaller --max-bytes$" \
    one --check bench-comm --config "$cfg" --max-bytes 1e12
  refused "bench-comm --max-bytes 3e8 under DDPTOK_MEMORY_LIMIT=64M: refused before allocating (used 430 MB)" 2 \
    'bench-comm --max-bytes 300000000: its largest all-reduce \(256.0 MiB\) .* needs 512.0 MiB, more than the 64.0 MiB this machine has available \(DDPTOK_MEMORY_LIMIT\)' \
    env DDPTOK_MEMORY_LIMIT=64M "$DDPTOK" bench-comm --config "$cfg" "${w1[@]}" --max-bytes 3e8
  refused "bench-comm with its default 64 MiB under DDPTOK_MEMORY_LIMIT=100M: refused at the start, naming the default" 2 \
    'bench-comm \(--max-bytes default 67108864\): its largest all-reduce \(64.0 MiB\) .* needs 128.0 MiB, more than the 100.0 MiB' \
    env DDPTOK_MEMORY_LIMIT=100M "$DDPTOK" bench-comm --config "$cfg" "${w1[@]}"
  local run_line=$OUT
  refused "--check bench-comm with its default 64 MiB under DDPTOK_MEMORY_LIMIT=100M: refused as the run is (was ok)" 2 \
    'bench-comm \(--max-bytes default 67108864\): its largest all-reduce \(64.0 MiB\) .* needs 128.0 MiB, more than the 100.0 MiB' \
    env DDPTOK_MEMORY_LIMIT=100M "$DDPTOK" --check bench-comm --config "$cfg" "${w1[@]}"
  [ "$OUT" = "$run_line" ] && ok "--check bench-comm and the run refuse with the same line" \
    || bad "--check bench-comm and the run refuse with the same line" "— '$OUT' vs '$run_line'"
  expect_rc "bench-comm --max-bytes 65536 under DDPTOK_MEMORY_LIMIT=64M: within the budget, it runs" 0 \
    env DDPTOK_MEMORY_LIMIT=64M timeout -k 5 60 "$DDPTOK" bench-comm --config "$cfg" "${w1[@]}" --max-bytes 65536
}
# import holds its readers' and its writer's buffers, whatever its inputs' sizes (IMPORT_MEMORY,
# 64 MiB, through the same budget), and a JSON line's parse per line on top.
case_import_budget() {
  cat > imp.yaml <<'YAML'
seed: 5
data: {vocab_size: 301, min_length: 4, max_length: 64, source: imported}
model: {context: 3, embed_dim: 4, hidden: 8, dropout: 0.0}
train: {world_size: 2, rank_bands: auto, batch_size_per_rank: 2, accumulation: 1, updates: 3, interrupt_at: 0}
YAML
  $PY -c "
import numpy as np; r = np.random.default_rng(1)
r.integers(0, 299, size=20_000_000).astype('<u2').tofile('big.bin')
open('line.jsonl', 'w').write(''.join(f'[{i}, 2, 3, 4, 5]\n' for i in range(300)) + '[' + ','.join(map(str, r.integers(0, 299, size=2_000_000))) + ']\n')"
  expect_rc "import of a 40 MB nanoGPT file under DDPTOK_MEMORY_LIMIT=64M: imported (refused on d22e7a6, which needed 286 MB)" 0 \
    env DDPTOK_MEMORY_LIMIT=64M $PY "$ROOT/tests/maxrss.py" rss "$DDPTOK" import --config imp.yaml --format nanogpt --eot 7 --input big.bin
  local kib; kib=$(cat rss.0)
  [ "$kib" -lt $((64 * 1024)) ] && ok "that import's peak RSS is within the 64 MiB it was allowed" "($kib KiB)" \
    || bad "that import's peak RSS is within the 64 MiB it was allowed" "— $kib KiB"
  refused "import under DDPTOK_MEMORY_LIMIT=32M, below its buffers: refused before reading, naming the limit" 2 \
    '^ddptok: error: import \(its readers. and its writer.s buffers, whatever the inputs. sizes\) needs 64.0 MiB, more than the 32.0 MiB this machine has available \(DDPTOK_MEMORY_LIMIT\)' \
    env DDPTOK_MEMORY_LIMIT=32M "$DDPTOK" import --config imp.yaml --format nanogpt --eot 7 --input big.bin
  refused "import of a JSON line of 7 MB under DDPTOK_MEMORY_LIMIT=160M: its parse refused, naming the line (used 140 MB)" 2 \
    '^ddptok: error: line.jsonl: offset [0-9]+: line 301 \([0-9]+ bytes, parsed whole\) beside the import.s buffers needs [0-9.]+ MiB, more than the 160.0 MiB' \
    env DDPTOK_MEMORY_LIMIT=160M "$DDPTOK" import --config imp.yaml --format jsonl --input line.jsonl
  expect_rc "the same JSON lines within the budget: imported" 0 env DDPTOK_MEMORY_LIMIT=1G "$DDPTOK" import --config imp.yaml --format jsonl --input line.jsonl
}
# DDPTOK_MEMORY_LIMIT is read strictly: "abc", "-1" and "0" were no limit at all, "8g" 8 bytes.
case_memory_limit_values() {
  local v
  for v in abc -1 0 1.5G 8x "64 M"; do
    refused "DDPTOK_MEMORY_LIMIT='$v': exit 2 naming it (was taken as no limit, or a few bytes)" 2 \
      "^ddptok: error: DDPTOK_MEMORY_LIMIT=$v: expected a number of bytes above 0, or one with K, M, G or T" \
      env DDPTOK_MEMORY_LIMIT="$v" "$DDPTOK" --check prepare --config "$cfg"
  done
  for v in 8g 1T 64MiB 100000000; do
    expect_rc "DDPTOK_MEMORY_LIMIT='$v': a limit tiny.yaml fits in" 0 env DDPTOK_MEMORY_LIMIT="$v" "$DDPTOK" --check prepare --config "$cfg"
  done
}
# parity --invariance derives global-sampler configs from a bands one: each is budgeted too.
case_invariance_budget() {
  local inv=(--set data.min_length=4095 --set data.max_length=4096 --set train.rank_bands=auto --set train.global_batch=1048576 --set paths.outputs=inv)
  one prepare --config "$cfg" "${inv[@]}" >/dev/null
  expect_rc "parity --invariance whose global window is 2^20 x 4096 = 2^32 positions: exit 2 (was exit 70, BUG at corpus.c)" 2 \
    ddp 2 parity --invariance --config "$cfg" "${inv[@]}"
  expect_grep "parity --invariance budgets the global config it derives: one line naming train.global_batch x data.max_length" \
    '^ddptok: ranks 0-1: error: parity --invariance: .*tiny.yaml: train.global_batch x data.max_length = 4294967296 positions in one global window' "$OUT"
}

# --- corpus.h5 whose content was changed and its data lock recomputed (tests/hostile_h5.py)
case_corpus_lock_recomputed() {
  fixture prepared || return
  $PY "$HOSTILE_H5" lock outputs && one reference --config "$cfg" >/dev/null \
    && ok "negative control: the lock recomputed by hostile_h5.py is the stored one, and that corpus is used (exit 0)" \
    || bad "negative control: the lock recomputed by hostile_h5.py is the stored one, and that corpus is used (exit 0)" "— the hostile corpus tests would prove nothing"
}
corpus_token() {  # ID: a token id out of range, the lock recomputed (one beyond uint16 needs int32 tokens: refused by their dtype)
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs "token=$1"
  local why="outputs/data/corpus.h5: sequence [0-9]+: token 1 \(at [0-9]+\) is $1, expected an id in \[1, 23\]"
  [ "$1" -lt 0 ] || [ "$1" -gt 65535 ] && why='outputs/data/corpus.h5: dataset tokens is int32, expected uint16'
  refused "corpus.h5 with a token id $1 and a recomputed lock: exit 2 naming the token" 2 "$why" one reference --config "$cfg"
}
case_corpus_token_128() { corpus_token 128; }
case_corpus_token_999() { corpus_token 999; }
case_corpus_token_5000() { corpus_token 5000; }
case_corpus_token_negative() { corpus_token -7; }
case_corpus_token_int_max() { corpus_token 2147483647; }
case_corpus_token_0() { corpus_token 0; }
case_corpus_empty_sequence() {
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs offsets
  refused "corpus.h5 with an empty sequence (monotone offsets) and a recomputed lock: exit 2" 2 \
    'outputs/data/corpus.h5: sequence [01] has offsets [0-9]+\.\.[0-9]+ \(length [0-9]+\), expected a length in \[8, 24\]' one reference --config "$cfg"
}
case_corpus_float_tokens() {
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs float-tokens
  refused "corpus.h5 with float tokens (HDF5 would convert them): exit 2 naming the dtype" 2 \
    'dataset tokens is float32, expected uint16' one reference --config "$cfg"
}
# The split is the digest's split_sequences (a split is a range of ids): moved by one and recomputed, refused against data.splits.*.
case_corpus_split_3() {
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs split
  refused "guard: corpus.h5 with a train sequence moved to validation: exit 2" 2 \
    'outputs/data/corpus.h5: splits of 95 / 9 / 32 sequences, this config has 96 / 8 / 32 \(data.splits.\*\)' one reference --config "$cfg"
}
case_corpus_extra_tokens() {
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs extra-tokens
  refused "guard: corpus.h5 with a million tokens more than the config makes: exit 2 before allocating them" 2 \
    'outputs/data/corpus.h5: 1002122 tokens, expected 1088\.\.3264' one reference --config "$cfg"
}

# --- plan.h5: its own lock and ids are checked (another seed's plan is stale, not "checkpoints invalid")
case_lineage_as_trained() {
  fixture trained || return
  expect_rc "check-checkpoints on the hostile group's lineage as trained (the control)" 0 one check-checkpoints --config "$cfg"
}
# A plan is derived from the corpus and the config: another seed's is made again (one line), never "checkpoints invalid".
case_plan_other_seed() {
  fixture trained || return
  one prepare --config "$cfg" --set seed=7 --set paths.outputs=other >/dev/null
  cp other/data/plan.h5 outputs/data/plan.h5
  expect_rc "another seed's plan.h5: derived again, the checkpoints checked and found ok" 0 one check-checkpoints --config "$cfg"
  expect_grep "another seed's plan.h5: said to be derived again from the corpus" 'outputs/data/plan.h5 is for another data lock .* derived again from the corpus' "$OUT"
}
case_plan_id_beyond() {
  fixture trained || return
  $PY -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); f['ids'][0, 0, 0, 0] = 5000; f.close()" outputs/data/plan.h5
  refused "plan.h5 with an id beyond the corpus: exit 2 naming it" 2 \
    'outputs/data/plan.h5: id 0 is 5000, expected -1 \(an empty slot\) or a sequence in \[0, 135\]' one check-checkpoints --config "$cfg"
}

# --- checkpoints: a stored config whose buffers cannot fit is refused before allocating
case_checkpoint_huge_config() {
  fixture trained || return
  $PY - artifacts/checkpoints/step-0006/rank-0000.h5 <<'PY'
import h5py, numpy, sys
f = h5py.File(sys.argv[1], "r+")
c = f.attrs["config"].decode().replace("vocab_size: 24", "vocab_size: 1048576").replace("hidden: 16", "hidden: 1048576")
del f.attrs["config"]
f.attrs["config"] = numpy.bytes_((c + "\n").encode())  # fixed-size, as ddptok writes it
f.close()
PY
  sums
  OUT=$(one check-checkpoints --config "$cfg" 2>&1); local rc=$?
  [ $rc -eq 1 ] && grep -q "rank-0000.h5: stored config: .*the workload needs 68.0 TiB" <<<"$OUT" \
    && ok "a checkpoint (manifest recomputed) whose config asks for V = H = 2^20: a problem named (exit 1), not exit 70" \
    || { bad "a checkpoint (manifest recomputed) whose config asks for V = H = 2^20: a problem named (exit 1), not exit 70" "— exit $rc"; echo "$OUT" | tail -3; }
}
# --- a rank file whose attribute message makes HDF5 itself read past its buffer (H5Aexists ->
# H5MM_strdup: a heap-buffer-overflow under ASan, found by the checkpoint fuzzer in CI): named, INVALID
case_checkpoint_hdf5_overread() {
  fixture trained || return
  cp "$ROOT/tests/hostile/checkpoint-hdf5-attr-name-overread.h5" artifacts/checkpoints/step-0006/rank-0000.h5
  sums
  OUT=$(one check-checkpoints --config "$cfg" 2>&1); local rc=$?
  [ $rc -eq 1 ] && grep -q "^ddptok: error: artifacts/checkpoints/step-0006/rank-0000.h5: " <<<"$OUT" && grep -q "step-0006 *INVALID" <<<"$OUT" \
    && ok "a rank file that makes HDF5 read past its own buffer (manifest recomputed): INVALID, the file named (exit 1)" \
    || { bad "a rank file that makes HDF5 read past its own buffer (manifest recomputed): INVALID, the file named (exit 1)" "— exit $rc"; echo "$OUT" | tail -3; }
}
# --- a checkpoint's SHA256SUMS (tests/fuzz/fuzz_manifest.c): every line counts, whatever
# precedes it; two entries for one file that differ are refused, not the last one believed
case_manifest_blank_nul() {
  fixture trained || return
  (cd artifacts/checkpoints/step-0006 && { sha256sum rank-0000.h5; printf '\n\0\n'; sha256sum rank-0001.h5; } >SHA256SUMS)
  expect_rc "SHA256SUMS with a blank line and a NUL byte between its entries: both count (was INVALID: no entry for rank-0001.h5)" \
    0 one check-checkpoints --config "$cfg"
}
case_manifest_two_entries() {
  fixture trained || return
  cp artifacts/checkpoints/step-0006/SHA256SUMS sums.keep
  (cd artifacts/checkpoints/step-0006 && { printf '%064d  rank-0000.h5\n' 0; cat ../../../sums.keep; } >SHA256SUMS)
  refused "SHA256SUMS with two entries for rank-0000.h5 that differ: a problem named (was exit 0, the last one believed)" 1 \
    'step-0006/SHA256SUMS: two entries for rank-0000.h5 that differ' one check-checkpoints --config "$cfg"
}
# --- names that would forge output: every byte of a quoted name that reaches the terminal is
# safe (text_safe: a newline, a tab, any control or non-UTF-8 byte printed as '?'), so a
# directory named like check-checkpoints' own lines cannot add an "ok" line or a summary
case_forged_checkpoint_names() {
  fixture trained || return
  local forged rc
  printf x >>artifacts/checkpoints/step-0006/rank-0001.h5
  forged=$(printf 'step-0006x\n  \342\200\246 ok\ncheck-checkpoints: 1 checkpoint(s), 0 problem(s)')
  mkdir "artifacts/checkpoints/$forged" "artifacts/checkpoints/$(printf 'step-0007\tx')"
  OUT=$(one check-checkpoints --config "$cfg" 2>/dev/null); rc=$?
  [ $rc -eq 1 ] && [ "$(grep -c . <<<"$OUT")" -eq 4 ] && [ "$(grep -c '^check-checkpoints: ' <<<"$OUT")" -eq 1 ] \
    && [ "$(tail -1 <<<"$OUT")" = "check-checkpoints: 1 checkpoint(s), 1 problem(s)" ] \
    && grep -q '^  artifacts/checkpoints/step-0006x?  … ok?check-checkpoints: 1 checkpoint(s), 0 problem(s) ignored: not a' <<<"$OUT" \
    && grep -q '^  artifacts/checkpoints/step-0007?x  *ignored' <<<"$OUT" \
    && ok "a directory named like check-checkpoints' own lines beside a damaged checkpoint: one line each, '?' for newline and tab, no forged ok or summary" "(exit 1)" \
    || { bad "a directory named like check-checkpoints' own lines beside a damaged checkpoint: one line each, '?' for newline and tab, no forged ok or summary" "— exit $rc:"; echo "$OUT" | cat -A | head -6 | sed 's/^/       /'; }
}
case_forged_config_name() {
  local rc
  cp "$cfg" "$(printf 'c\nddptok --check: train: ok.yaml')"
  OUT=$(one --check prepare --config "$(printf 'c\nddptok --check: train: ok.yaml')" 2>&1); rc=$?
  [ $rc -eq 0 ] && [[ $OUT =~ ^"ddptok --check: prepare --config 'c?ddptok --check: train: ok.yaml': ok (one process; train.world_size 2; peak per rank "[0-9.]+" "[KMG]iB" (the budget))"$ ]] \
    && ok "--check with a config named like its own line: one line, the newline printed as '?'" \
    || { bad "--check with a config named like its own line: one line, the newline printed as '?'" "— exit $rc:"; echo "$OUT" | head -3 | sed 's/^/       /'; }
}
# ... and a unicode bidi control (Trojan Source: U+202E RIGHT-TO-LEFT OVERRIDE reverses what
# follows it on a terminal) or a line separator (U+2028) is '?' too
case_bidi_config_name() {
  local rc name; name=$(printf 'c\342\200\256lmay.\342\201\246x\342\200\250y.yaml')
  cp "$cfg" "$name"
  OUT=$(one --check prepare --config "$name" 2>&1); rc=$?
  [ $rc -eq 0 ] && [[ $OUT =~ ^"ddptok --check: prepare --config 'c?lmay.?x?y.yaml': ok (one process; train.world_size 2; peak per rank "[0-9.]+" "[KMG]iB" (the budget))"$ ]] \
    && ok "--check with a config named with bidi controls and a line separator: each printed as '?'" \
    || { bad "--check with a config named with bidi controls and a line separator: each printed as '?'" "— exit $rc:"; echo "$OUT" | head -3 | sed 's/^/       /'; }
}
# A path option longer than its buffer was cut silently: its first 1099 bytes can name another
# checkpoint (here step-0006 and 1068 slashes, before "../step-0099", which does not exist).
case_export_long_checkpoint() {
  fixture trained || return
  local p; p="artifacts/checkpoints/step-0006$(printf '/%.0s' $(seq 1068))../step-0099"
  refused "export --checkpoint of 1110 bytes whose first 1099 name step-0006: refused, not step-0006 exported (was exit 0)" 2 \
    '^ddptok: error: export --checkpoint artifacts/checkpoints/step-0006/+\.\./step-0099: path too long \(at most 1099 bytes\)$' \
    one export --config "$cfg" --checkpoint "$p"
  refused "export --out of 1110 bytes: refused, not written under its first 1099 bytes" 2 'export --out .*: path too long' \
    one export --config "$cfg" --out "o$(printf '/%.0s' $(seq 1100))m.safetensors"
}
# ... and in the hints say() prints (say keeps the newlines of its own text): the config's
# name inside "run `...`" is cleaned by hint_command itself
case_forged_hint_name() {
  local name; name=$(printf 'c\nddptok: forged.yaml')
  cp "$cfg" "$name"
  one prepare --config "$name" >/dev/null || { bad "prepare with a config named with a newline"; return; }
  OUT=$(ddp 2 train --config "$name" 2>/dev/null)
  grep -q "^train: to continue to step 12, run \`.* --config 'c?ddptok: forged.yaml' --resume latest\`$" <<<"$OUT" \
    && ! grep -q '^ddptok: forged' <<<"$OUT" \
    && ok "train's resume hint with a config named with a newline: one line, the newline printed as '?' (was split in two)" \
    || { bad "train's resume hint with a config named with a newline: one line, the newline printed as '?' (was split in two)"; tail -3 <<<"$OUT" | cat -A | sed 's/^/       /'; }
}
# ... and into JSON through json_text: a byte that is not UTF-8 becomes U+FFFD (jansson refuses it)
case_non_utf8_checkpoint_name() {
  fixture trained || return
  local ff; ff="artifacts/checkpoints/$(printf 'step-\377')"
  cp -r artifacts/checkpoints/step-0006 "$ff"
  expect_rc "evaluate --checkpoint of a directory whose name is not UTF-8: its metrics (was exit 70, BUG at jsonio.c)" 0 \
    one evaluate --config "$cfg" --checkpoint "$ff"
  [ "$(json outputs/evaluate.json "j['checkpoint'] == 'artifacts/checkpoints/step-\ufffd' and j['step']")" = 6 ] \
    && ok "evaluate.json names a checkpoint directory that is not UTF-8 with U+FFFD for the byte" \
    || bad "evaluate.json names a checkpoint directory that is not UTF-8 with U+FFFD for the byte" "— $(head -3 outputs/evaluate.json)"
}

# --- a file that crashes HDF5 itself (found by the fuzzer: tests/fuzz/run.sh): one line, exit 2, no SIGSEGV
case_plan_hdf5_crash() {
  fixture trained || return
  # Its data_lock made this corpus's (the 64 characters in place, the crafted structure kept), so its /ids is read.
  $PY - "$ROOT/tests/hostile/plan-hdf5-null-read.h5" outputs/data/plan.h5 <<'PY'
import sys, h5py
crafted = open(sys.argv[1], "rb").read()
old = h5py.File(sys.argv[1], "r").attrs["data_lock"]
new = h5py.File(sys.argv[2], "r").attrs["data_lock"]
old, new = (x if isinstance(x, bytes) else x.encode() for x in (old, new))
assert len(old) == len(new) == 64 and crafted.count(old) == 1
open(sys.argv[2], "wb").write(crafted.replace(old, new))
PY
  refused "a plan.h5 that makes HDF5 read through a failed allocation (was SIGSEGV, exit 139)" 2 \
    '^ddptok: error: outputs/data/plan.h5: HDF5 crashed parsing it \(a damaged or crafted HDF5 file\): refused$' \
    one check-checkpoints --config "$cfg"
}

# --- only regular files are read: a FIFO or a device is refused at once, never waited on
case_fifo_config() {
  mkfifo fifo
  refused "a FIFO as the config file: refused at once" 2 'fifo: cannot read config file: a FIFO, not a regular file' \
    one prepare --config fifo
}
case_dev_zero_config() {
  refused "/dev/zero as the config file: refused at once" 2 '/dev/zero: cannot read config file: a character device' \
    one prepare --config /dev/zero
}
case_fifo_corpus() {
  fixture prepared || return
  rm outputs/data/corpus.h5 && mkfifo outputs/data/corpus.h5
  refused "a FIFO as corpus.h5: refused at once" 2 'outputs/data/corpus.h5: cannot open: a FIFO, not a regular file' \
    one reference --config "$cfg"
}
case_dev_zero_corpus() {
  fixture prepared || return
  rm outputs/data/corpus.h5 && ln -s /dev/zero outputs/data/corpus.h5
  refused "a link to /dev/zero as corpus.h5: refused at once" 2 'outputs/data/corpus.h5: cannot open: a character device' \
    one reference --config "$cfg"
}
s=artifacts/checkpoints/step-0006
case_fifo_manifest() {
  fixture trained || return
  rm $s/SHA256SUMS && mkfifo $s/SHA256SUMS
  OUT=$(timeout -k 5 60 "$DDPTOK" check-checkpoints --config "$cfg" 2>&1); local rc=$?
  [ $rc -eq 1 ] && grep -q "$s/SHA256SUMS: cannot read (a FIFO, not a regular file)" <<<"$OUT" \
    && ok "a FIFO as a checkpoint's SHA256SUMS: that checkpoint is INVALID at once (exit 1)" || { bad "a FIFO as a checkpoint's SHA256SUMS: that checkpoint is INVALID at once (exit 1)" "— exit $rc"; echo "$OUT" | tail -3; }
}
case_fifo_rank_file() {
  fixture trained || return
  mv $s/rank-0001.h5 rank.keep && mkfifo $s/rank-0001.h5
  OUT=$(timeout -k 5 60 "$DDPTOK" check-checkpoints --config "$cfg" 2>&1); local rc=$?
  [ $rc -eq 1 ] && grep -q "$s/rank-0001.h5: cannot open: a FIFO, not a regular file" <<<"$OUT" \
    && ok "a FIFO as a rank file: refused at once (exit 1)" || { bad "a FIFO as a rank file: refused at once (exit 1)" "— exit $rc"; echo "$OUT" | tail -3; }
  expect_rc "a FIFO as a rank file: --resume from it exits 2 at once on every rank" 2 ddp 2 train --config "$cfg" --resume "$s"
  expect_grep "a FIFO as a rank file: --resume's rank 1 names the FIFO" "^ddptok: rank 1: error: $s/rank-0001.h5: cannot open: a FIFO, not a regular file" "$OUT"
  rm $s/rank-0001.h5 && mv rank.keep $s/rank-0001.h5
  expect_rc "a FIFO as a rank file: with the real files back, the checkpoints are valid again" 0 one check-checkpoints --config "$cfg"
}

# --- the config parser: bounded nesting, --set takes a plain value or a flow list only
case_yaml_deep() {
  $PY -c "print('x: ' + '[' * 20000 + ']' * 20000)" > deep.yaml
  # Timed in CPU seconds (user + system of the process tree, bash's `time`), against a one-line
  # config refused the same way: wall time under a loaded machine took 5 s where the parse took
  # milliseconds; the quadratic parser spent 7 s more of CPU on a quiet one.
  echo 'x: [[1]]' > shallow.yaml
  local TIMEFORMAT='%3U %3S' t base ms
  t=$( { time one prepare --config shallow.yaml >/dev/null 2>&1; } 2>&1 ); base=$(cpu_ms $t)
  refused "YAML 20000 lists deep: refused (was 7 s, quadratic)" 2 'deep.yaml:1: YAML nested deeper than 64 levels' one prepare --config deep.yaml
  t=$( { time one prepare --config deep.yaml >/dev/null 2>&1; } 2>&1 ); ms=$(cpu_ms $t)
  [ $ms -lt $((base + 2000)) ] && ok "YAML 20000 lists deep: refused within 2 CPU s of a one-line config's refusal" "($ms ms of CPU; a one-line config: $base ms)" \
    || bad "YAML 20000 lists deep: refused within 2 CPU s of a one-line config's refusal" "— $ms ms of CPU; a one-line config took $base ms"
}
# cpu_ms USER SYS: bash `time`'s two seconds figures (%3U %3S) as whole milliseconds.
cpu_ms() { echo $(( (10#${1/./} + 10#${2/./}) )); }
case_yaml_deeper() {
  $PY -c "print('x: ' + '[' * 60000)" > deeper.yaml
  refused "YAML 60000 lists deep (was a stack overflow): refused" 2 'deeper.yaml:1: YAML nested deeper than 64 levels' one prepare --config deeper.yaml
}
case_yaml_deep_mappings() {
  $PY -c "print(''.join('  ' * i + 'k%d:\n' % i for i in range(200)))" > deepmap.yaml
  refused "YAML mappings 200 deep: refused" 2 'deepmap.yaml:65: YAML nested deeper than 64 levels' one prepare --config deepmap.yaml
}
case_set_plain_values() {
  refused "--set seed=!!int 5 (a YAML tag)" 2 "--set seed: expected a plain value or a flow list \[a, b\], got a YAML tag" one prepare --config "$cfg" --set 'seed=!!int 5'
  refused "--set seed=5 # x (a comment YAML would drop)" 2 "--set seed: expected a plain value or a flow list \[a, b\], got more after it: '# x'" one prepare --config "$cfg" --set 'seed=5 # x'
  refused "--set seed=&a 5 (an anchor)" 2 'got a YAML anchor' one prepare --config "$cfg" --set 'seed=&a 5'
  refused "--set train.rank_bands as a block list" 2 'got a block list' one prepare --config "$cfg" --set 'train.rank_bands=- [8, 15]'
}
case_bands_huge() {
  refused "bands of 1e300 (was -2147483648): exit 2" 2 'train.rank_bands: band 0: expected \[lo, hi\] with integer lengths in \[1, 65536\]' \
    one prepare --config "$cfg" '--set=train.rank_bands=[[1e300, 15], [16, 24]]'
  refused "a band of -1e300" 2 'band 1: expected \[lo, hi\] with integer lengths in \[1, 65536\]' \
    one prepare --config "$cfg" '--set=train.rank_bands=[[8, 15], [16, -1e300]]'
}
case_comm_timeout_values() {
  local v
  for v in nan inf 1e-9 0.05 -1 1e7; do
    refused "--comm-timeout $v" 2 "--comm-timeout $v: expected a number of seconds in \[0.1, 1e6\]" one train --config "$cfg" --comm-timeout "$v"
  done
}
# What a rank accepts it can emit and re-parse: rank 0's config reaches the others as YAML.
case_outputs_path_quoting() {
  local p
  for p in 'q"o' 'a\q' "o';touch INJECTED;'"; do
    one prepare --config "$cfg" --set "paths.outputs=$p" >/dev/null
    expect_rc "paths.outputs=$p: accepted by prepare, and by every rank of a distributed run (was a YAML error)" 0 \
      ddp 2 train --config "$cfg" --set "paths.outputs=$p" --set paths.artifacts=art-q
    rm -rf art-q
  done
  [ ! -e INJECTED ] && ok "paths.outputs with quotes and a shell command: no INJECTED file anywhere" || bad "paths.outputs with quotes and a shell command: no INJECTED file anywhere"
}
# --- no shell: plot runs gnuplot with an argv, in its directory, on a script of fixed names
plot_path() {  # PATHS.OUTPUTS
  local p=$1
  (one prepare --config "$cfg" --set "paths.outputs=$p" && one reference --config "$cfg" --set "paths.outputs=$p" \
    && ddp 2 parity --config "$cfg" --set "paths.outputs=$p" && ddp 2 train --config "$cfg" --set "paths.outputs=$p" \
    --set paths.artifacts=art-p) >/dev/null 2>&1
  rm -rf art-p
  expect_rc "plot with paths.outputs=$p" 0 one plot --config "$cfg" --set "paths.outputs=$p"
  [ ! -e INJECTED ] && [ -s "$p/figure.png" ] && ok "plot with paths.outputs=$p: the figure is made and no command ran (no INJECTED file)" \
    || { bad "plot with paths.outputs=$p: the figure is made and no command ran (no INJECTED file)" "— INJECTED exists or no figure"; rm -f INJECTED; }
}
case_plot_shell_quote() { plot_path "o';touch INJECTED;'"; }
case_plot_gnuplot_quote() { plot_path "g');system('touch INJECTED');print('"; }

# --- plot checks every input before writing anything and names each missing one, with the
# command that makes it, in one line; a loss log of any length is streamed (no 16 MiB cap)
pl=(--set paths.outputs=pl)
case_plot_missing_inputs() {
  one prepare --config "$cfg" "${pl[@]}" >/dev/null
  # (reference.h5 and grads.h5 are the parity panel's, drawn only where they are: not required)
  refused "plot right after prepare: one line naming the loss curve, with its command" 2 \
    "^ddptok: error: plot needs what is missing: a loss curve: no step in pl/train/continuous.jsonl, interrupted.jsonl or resumed.jsonl \(run \`[^\`]*(ddprun|mpirun) -np 2 [^\`]*train --config .*tiny.yaml --set paths.outputs=pl\`\); nothing written$" \
    one plot --config "$cfg" "${pl[@]}"
  [ ! -e pl/plot ] && [ ! -e pl/figure.png ] && ok "plot with its inputs missing writes nothing (no pl/plot, no figure)" \
    || bad "plot with its inputs missing writes nothing (no pl/plot, no figure)"
  one reference --config "$cfg" "${pl[@]}" >/dev/null && ddp 2 parity --config "$cfg" "${pl[@]}" >/dev/null 2>&1
  refused "plot before any training: names the loss curve alone and train (was: gnuplot failed ... is gnuplot installed?)" 2 \
    '^ddptok: error: plot needs what is missing: a loss curve: no step in pl/train/continuous.jsonl, .*; nothing written$' \
    one plot --config "$cfg" "${pl[@]}"
  mkdir -p pl/train && : >pl/train/interrupted.jsonl
  refused "plot with an empty interrupted.jsonl (no step): the loss curve still named missing" 2 'a loss curve: no step in' \
    one plot --config "$cfg" "${pl[@]}"
  refused "plot without gnuplot in PATH: names gnuplot with its package, before writing anything" 2 \
    'a loss curve: .*; gnuplot \(not in PATH: `apt-get install gnuplot-nox`\); nothing written$' env PATH=/nonexistent "$DDPTOK" plot --config "$cfg" "${pl[@]}"
  [ ! -e pl/plot ] && ok "plot refused for missing inputs leaves no pl/plot behind" || bad "plot refused for missing inputs leaves no pl/plot behind"
}
# 45 000 records of ~490 bytes, 21.9 MB: above the 16 MiB that plot read whole (a longer log was dropped silently)
case_plot_long_log() {
  one prepare --config "$cfg" "${pl[@]}" >/dev/null && one reference --config "$cfg" "${pl[@]}" >/dev/null && ddp 2 parity --config "$cfg" "${pl[@]}" >/dev/null 2>&1
  mkdir -p pl/train
  $PY - pl/train/continuous.jsonl <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for s in range(1, 45001):
        f.write(json.dumps({"step": s, "loss": 3.0 / s ** 0.1, "tokens": 485, "rank_tokens": [200, 285], "sequences": 6,
                            "seconds": 0.001234, "updates": 45000, "elapsed": s * 0.001, "tokens_per_s": 123456.7,
                            "ms_per_step": 1.234, "eta_seconds": 12.5, "eta": "0:12", "split": {"draw": 1e-05,
                            "count_allreduce": 2e-05, "compute": 0.001, "grad_allreduce": 5e-05, "optimizer": 1e-05,
                            "overlap": 0}, "note": "x" * 100}) + "\n")
PY
  expect_rc "plot of a loss log over 16 MiB (45 000 updates)" 0 one plot --config "$cfg" "${pl[@]}"
  [ "$(wc -l <pl/plot/loss-continuous.dat 2>/dev/null)" = 45000 ] && [ -s pl/figure.png ] \
    && ok "plot streams a loss log over 16 MiB: all 45 000 points drawn (was dropped silently, exit 0)" \
    || bad "plot streams a loss log over 16 MiB: all 45 000 points drawn (was dropped silently, exit 0)" "— $(wc -l <pl/plot/loss-continuous.dat 2>&1) points"
}

# --- symbolic links: ddptok never writes, truncates or empties through one
sl=(--set paths.outputs=sl --set paths.artifacts=art)
fixture_sl() { one prepare --config "$cfg" "${sl[@]}" >/dev/null; }                        # sl/data
fixture_sl_trained() { fixture sl && ddp 2 train --config "$cfg" "${sl[@]}" >/dev/null 2>&1; }  # art/checkpoints/step-0006, to resume from
case_symlink_lock() {
  fixture sl || return
  echo precious > target
  mkdir -p art/continuous && ln -s "$PWD/target" art/continuous/.lock
  refused_job "a symlinked continuous/.lock: refused" 'art/continuous/.lock: cannot open: a symbolic link is there, not a regular file: refused' \
    ddp 2 train --config "$cfg" --continuous "${sl[@]}"
  [ "$(cat target)" = precious ] && ok "a symlinked continuous/.lock: its target untouched" || bad "a symlinked continuous/.lock: its target untouched"
}
case_symlink_step() {
  fixture sl_trained || return
  mkdir -p victim && echo keep > victim/keep
  ln -s "$PWD/victim" art/checkpoints/step-0012
  refused_job "a symlinked step-0012 where the resumed run publishes: refused, nothing published" \
    'art/checkpoints/step-0012: a symbolic link where ddptok keeps a checkpoint directory: refused, left as it is' \
    ddp 2 train --config "$cfg" "${sl[@]}" --resume latest
  [ "$(cat victim/keep 2>/dev/null)" = keep ] && [ -L art/checkpoints/step-0012 ] && ok "a symlinked step-0012: the link and its target untouched" \
    || bad "a symlinked step-0012: the link and its target untouched"
}
case_symlink_step_tmp() {
  fixture sl_trained || return
  mkdir -p victim && echo keep > victim/keep
  ln -s "$PWD/victim" art/checkpoints/step-0012.tmp
  refused_job "a symlinked step-0012.tmp: refused" 'art/checkpoints/step-0012.tmp: a symbolic link where ddptok keeps a checkpoint directory' \
    ddp 2 train --config "$cfg" "${sl[@]}" --resume latest
  [ "$(cat victim/keep 2>/dev/null)" = keep ] && ok "a symlinked step-0012.tmp: its target untouched" || bad "a symlinked step-0012.tmp: its target untouched"
}
# PATH.tmp.PID: the shell plants the link under its own pid, then becomes ddptok (exec keeps the pid).
case_planted_tmp_link() {
  fixture prepared || return
  echo precious > target
  refused "a planted corpus.h5.tmp.PID link: refused" 2 'outputs/data/corpus.h5: cannot write: outputs/data/corpus.h5.tmp.[0-9]+ already exists \(a leftover or a planted file or link\): refused' \
    timeout -k 5 60 sh -c 'ln -s "$1" outputs/data/corpus.h5.tmp.$$ && exec "$2" prepare --config "$3"' sh "$PWD/target" "$DDPTOK" "$cfg"
  [ "$(cat target)" = precious ] && ok "a planted corpus.h5.tmp.PID link: its target untouched" || bad "a planted corpus.h5.tmp.PID link: its target untouched"
}
case_symlink_jsonl() {
  fixture sl || return
  echo precious > target
  mkdir -p sl/train && ln -sf "$PWD/target" sl/train/interrupted.jsonl
  refused_job "a symlinked train/interrupted.jsonl: refused" 'sl/train/interrupted.jsonl: cannot write: not a regular file' \
    ddp 2 train --config "$cfg" "${sl[@]}"
  [ "$(cat target)" = precious ] && ok "a symlinked train/interrupted.jsonl: its target untouched" || bad "a symlinked train/interrupted.jsonl: its target untouched"
}
case_clean_linked_logs() {
  fixture prepared || return
  mkdir -p keepdir && echo keep > keepdir/keep && rm -rf outputs/logs && ln -s "$PWD/keepdir" outputs/logs
  # ddptok makes no link, so clean leaves it (exit 1: something left) and never follows it.
  expect_rc "clean with outputs/logs a link to a directory" 1 one clean --config "$cfg" --scope generated
  [ "$(cat keepdir/keep 2>/dev/null)" = keep ] && [ -L outputs/logs ] && grep -q '^left: outputs/logs (not made by ddptok)$' <<<"$OUT" \
    && ok "clean with outputs/logs a link: the link left and listed, its target's files untouched (guard)" \
    || bad "clean with outputs/logs a link: the link left and listed, its target's files untouched (guard)"
}

# --- where ddptok writes, only nothing or a regular file: never through a link (symbolic or
# hard), never over a device, a FIFO or a directory (each made here in the scratch
# directory: no test touches /dev). export --out /dev/null, as root, made the machine's
# /dev/null a regular file; a hard link planted at the lineage's .lock, at plot's data files
# or at a record .ddptok-made got the user's file written into.
case_export_out_not_regular() {
  fixture trained || return
  echo precious > mine.txt
  mkfifo fifo && mkdir adir && ln -s "$PWD/mine.txt" alink
  local made_node=0 t
  if mknod null c 1 3 2>/dev/null; then made_node=1; else skip "export --out a device node made here" "mknod needs root"; fi
  for t in fifo adir alink $([ $made_node = 1 ] && echo null); do
    refused "export --out $t: refused in one line" 2 "^ddptok: error: $t: cannot write: a (FIFO|directory|symbolic link|character device) is there, not a regular file: refused, left as it is$" \
      one export --config "$cfg" --out "$t"
  done
  [ -p fifo ] && [ -d adir ] && [ -L alink ] && [ "$(cat mine.txt)" = precious ] && { [ $made_node = 0 ] || [ -c null ]; } && [ ! -e fifo.json ] \
    && ok "export --out a FIFO, a directory, a link or a device node: each left as it was, the link's target untouched" \
    || bad "export --out a FIFO, a directory, a link or a device node: each left as it was, the link's target untouched" "— $(ls -l fifo adir alink null 2>&1 | tr '\n' ' ')"
  echo "a user's file" > regular && ln regular regular-too
  expect_rc "export --out a regular file (the control): replaced" 0 one export --config "$cfg" --out regular
  [ "$(head -c 8 regular | od -An -tu8 | tr -d ' ')" -gt 0 ] && [ "$(cat regular-too)" = "a user's file" ] \
    && ok "export --out a regular file with a second name: replaced whole, the other name keeps its bytes" \
    || bad "export --out a regular file with a second name: replaced whole, the other name keeps its bytes"
}
case_hardlink_lock() {
  fixture sl || return
  echo precious > mine.txt
  mkdir -p art/checkpoints && ln mine.txt art/checkpoints/.lock
  refused_job "a hard link planted at checkpoints/.lock: refused" 'art/checkpoints/.lock: cannot open: a file with 2 names \(a hard link\): refused, left as it is' \
    ddp 2 train --config "$cfg" "${sl[@]}"
  [ "$(cat mine.txt)" = precious ] && [ ! -e art/checkpoints/step-0006 ] && ok "a hard-linked .lock: the user's file untouched, nothing trained" \
    || bad "a hard-linked .lock: the user's file untouched, nothing trained" "— mine.txt: $(head -c 60 mine.txt)"
  rm art/checkpoints/.lock
  expect_rc "train once the hard link is gone (the control)" 0 ddp 2 train --config "$cfg" "${sl[@]}"
}
case_hardlink_record() {
  echo precious > mine.txt
  mkdir -p outputs/data && ln mine.txt outputs/data/.ddptok-made
  expect_rc "prepare with a hard link planted at outputs/data/.ddptok-made" 0 one prepare --config "$cfg"
  expect_grep "prepare says it cannot record there, naming the hard link" 'outputs/data/.ddptok-made: cannot record what ddptok made here \(a file with 2 names \(a hard link\)' "$OUT"
  [ "$(cat mine.txt)" = precious ] && ok "a hard-linked .ddptok-made: the user's file got no line" || bad "a hard-linked .ddptok-made: the user's file got no line" "— $(cat mine.txt | head -3)"
}
# A checkpoint replaced by a newer one of its step (--resume DIR of an earlier step) loses its
# checkpoint files, not what someone else put in its directory (found by the fresh round: a
# FIFO planted as SHA256SUMS, a user's notes.txt went with remove_tree).
case_replaced_checkpoint_keeps_foreign() {
  fixture sl_trained || return
  ddp 2 train --config "$cfg" "${sl[@]}" --resume latest >/dev/null 2>&1 || { bad "replaced checkpoint: resume to step 12"; return; }
  echo "my notes" > art/checkpoints/step-0012/notes.txt
  rm art/checkpoints/step-0012/SHA256SUMS && mkfifo art/checkpoints/step-0012/SHA256SUMS
  expect_rc "resume from step 6 again, over a step-0012 holding a user's file and a FIFO" 0 ddp 2 train --config "$cfg" "${sl[@]}" --resume art/checkpoints/step-0006
  expect_grep "the replaced step-0012: a warning names what ddptok did not write and where it is kept" \
    'warning: art/checkpoints/step-0012 held what ddptok did not write \((notes.txt|SHA256SUMS), \.\.\.\): its checkpoint files removed, the rest kept in art/checkpoints/step-0012\.kept-[0-9T]+Z$' "$OUT"
  local kept; kept=$(ls -d art/checkpoints/step-0012.kept-* 2>/dev/null | head -1)
  [ -n "$kept" ] && [ "$(cat "$kept/notes.txt")" = "my notes" ] && [ -p "$kept/SHA256SUMS" ] && [ ! -e "$kept/rank-0000.h5" ] \
    && ok "the replaced step-0012: the user's file and the FIFO kept, its rank files gone" || bad "the replaced step-0012: the user's file and the FIFO kept, its rank files gone" "— $(ls "$kept" 2>&1 | tr '\n' ' ')"
  expect_rc "the new step-0012 passes check-checkpoints (the kept directory is not a checkpoint's name)" 0 one check-checkpoints --config "$cfg" "${sl[@]}"
}
fixture_plotready() {
  one prepare --config "$cfg" >/dev/null && one reference --config "$cfg" >/dev/null && ddp 2 parity --config "$cfg" >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" >/dev/null 2>&1
}
case_plot_hardlinks() {
  fixture plotready || return
  local f
  mkdir -p outputs/plot
  for f in loss-interrupted.dat parity.dat figure.gp; do echo "precious $f" > "mine-$f" && ln "mine-$f" "outputs/plot/$f"; done
  echo precious > mine-png && ln -s "$PWD/mine-png" outputs/plot/figure.tmp.png  # where gnuplot wrote the figure before
  expect_rc "plot with its data files hard links to the user's files" 0 one plot --config "$cfg"
  local intact=1
  for f in loss-interrupted.dat parity.dat figure.gp; do [ "$(cat "mine-$f")" = "precious $f" ] || intact=0; done
  [ $intact = 1 ] && [ "$(cat mine-png)" = precious ] && [ -s outputs/figure.png ] && [ "$(wc -l <outputs/plot/loss-interrupted.dat)" -gt 0 ] \
    && ok "plot replaced its hard-linked data files whole (the user's files untouched) and wrote through no link" \
    || bad "plot replaced its hard-linked data files whole (the user's files untouched) and wrote through no link" "— $(head -c 40 mine-parity.dat) / $(head -c 20 mine-png)"
  rm outputs/figure.png && mkfifo outputs/figure.png
  refused "plot with a FIFO at outputs/figure.png: refused" 2 '^ddptok: error: outputs/figure.png: cannot write: a FIFO is there, not a regular file: refused, left as it is$' \
    one plot --config "$cfg"
  [ -p outputs/figure.png ] && ok "plot with a FIFO at figure.png: the FIFO left as it is" || bad "plot with a FIFO at figure.png: the FIFO left as it is"
}
# ... nor through a symbolic link below paths.outputs or paths.artifacts, where every directory
# is ddptok's own (found by the fresh round: outputs/plot a link to a user's directory got its
# parity.dat replaced); paths.outputs itself a link is the user's choice (the control)
case_linked_subdirectory() {
  fixture plotready || return
  mkdir -p userdir && echo "the user's data" > userdir/parity.dat && rm -rf outputs/plot && ln -s "$PWD/userdir" outputs/plot
  refused "plot with outputs/plot a link to a user's directory: refused" 2 \
    '^ddptok: error: outputs/plot: a symbolic link is there, where ddptok keeps a directory of its own: refused, left as it is' one plot --config "$cfg"
  [ "$(cat userdir/parity.dat)" = "the user's data" ] && [ "$(ls userdir)" = parity.dat ] && ok "plot with outputs/plot a link: nothing written into the user's directory" \
    || bad "plot with outputs/plot a link: nothing written into the user's directory" "— $(ls userdir | tr '\n' ' ')"
  rm outputs/plot && rm -rf outputs/logs && ln -s "$PWD/userdir" outputs/logs
  refused_job "train with outputs/logs a link: refused" 'outputs/logs: a symbolic link is there, where ddptok keeps a directory of its own' \
    ddp 2 train --config "$cfg" --set paths.artifacts=a2
  [ "$(ls userdir)" = parity.dat ] && ok "train with outputs/logs a link: no log in the user's directory" || bad "train with outputs/logs a link: no log in the user's directory"
  rm outputs/logs && mv outputs real-outputs && ln -s real-outputs outputs
  expect_rc "reference with paths.outputs itself a link (the user's choice): written through it" 0 one reference --config "$cfg"
  [ -f real-outputs/reference.h5 ] && ok "paths.outputs a link: reference.h5 in the directory it names" || bad "paths.outputs a link: reference.h5 in the directory it names"
}
# --- clean removes only what ddptok wrote, unchanged: the same inode written over in place (cp
# onto it, > redirection, a cp -r restore onto the tree) is the user's text now
case_clean_changed_in_place() {
  one prepare --config "$cfg" >/dev/null || { bad "clean_changed_in_place: prepare"; return; }
  mkdir backup && cp -r outputs/data backup/ && echo "the user's corpus notes" > backup/data/plan.h5
  echo "my thesis" > thesis.txt
  cp -r backup/data/. outputs/data/                    # a cp -r restore onto the tree: each file in place
  cp thesis.txt outputs/data/corpus.h5                 # cp onto it: the same inode, new content
  expect_rc "clean after the user wrote over corpus.h5 and plan.h5 in place: exit 1, they are left" 1 one clean --config "$cfg" --scope generated
  expect_grep "clean lists corpus.h5 as changed since ddptok wrote it" '^left: outputs/data/corpus.h5 \(made by ddptok, but changed since it wrote it' "$OUT"
  expect_grep "clean lists plan.h5 (restored by cp -r) as changed" '^left: outputs/data/plan.h5 \(made by ddptok, but changed since it wrote it' "$OUT"
  [ "$(cat outputs/data/corpus.h5)" = "my thesis" ] && [ "$(cat outputs/data/plan.h5)" = "the user's corpus notes" ] \
    && ok "clean left the user's text written over ddptok's files" || bad "clean left the user's text written over ddptok's files"
  one prepare --config "$cfg" >/dev/null && echo "> redirected" > outputs/data/plan.h5
  expect_rc "clean after a > redirection onto plan.h5" 1 one clean --config "$cfg" --scope generated
  [ "$(cat outputs/data/plan.h5)" = "> redirected" ] && [ ! -e outputs/data/corpus.h5 ] \
    && ok "clean left plan.h5 written by a redirection and removed corpus.h5 as prepare wrote it (the control)" \
    || bad "clean left plan.h5 written by a redirection and removed corpus.h5 as prepare wrote it (the control)" "— $(ls outputs/data)"
}

# ... and not the lineage a running train writes (found by the fresh round: clean removed its
# published checkpoints and its .lock, so a second train could start on it meanwhile)
case_clean_running_lineage() {
  local L=(--set train.updates=200000 --set train.interrupt_at=0 --set train.checkpoint_every=2000) pid rc n
  one prepare --config "$cfg" "${L[@]}" >/dev/null
  mpirun -np 2 "$DDPTOK" train --config "$cfg" "${L[@]}" >run.txt 2>&1 &
  pid=$!
  for ((n = 0; n < 300; n++)); do [ -d artifacts/checkpoints/step-2000 ] && break; sleep 0.1; done
  expect_rc "clean while a train writes its lineage: exit 1, something left" 1 one clean --config "$cfg" "${L[@]}" --scope generated
  expect_grep "clean names the lineage in use and the lock's holder" '^left: artifacts/checkpoints/ \(in use: its .lock is held by pid [0-9]+, a train writing it\)$' "$OUT"
  [ -f artifacts/checkpoints/.lock ] && [ -d artifacts/checkpoints/step-2000 ] && ok "clean left the running lineage whole: its .lock and its checkpoints" \
    || bad "clean left the running lineage whole: its .lock and its checkpoints" "— $(ls -a artifacts/checkpoints 2>&1 | tr '\n' ' ')"
  kill -USR1 "$pid"; wait "$pid"; rc=$?
  [ $rc -eq 75 ] && ok "the train beside clean stopped as asked (exit 75)" || bad "the train beside clean stopped as asked (exit 75)" "— exit $rc"
}

case_config_roundtrip() {
  OUT=$("$ROOT"/build/test_config_roundtrip 2>&1); local rc=$?
  [ $rc -eq 0 ] && ok "property test over the key table: what the config accepts survives emission" "($(tail -1 <<<"$OUT"))" \
    || { bad "property test over the key table: what the config accepts survives emission" "— exit $rc"; echo "$OUT" | tail -8; }
}

# --- issue 39: the GPT's inputs from Hugging Face trusted no more than a corpus (tests/hf_plain.py
# writes the directories with the standard library: these need no transformers).
gcfg="$CONFIGS/gpt-tests.yaml"
hf_plain() { $PY "$ROOT/tests/hf_plain.py" "$1" 24 32 16 2 2 "${@:2}"; }
# refused_hf_dir NAME PATTERN DIR: --check train and reference refuse train.init_from DIR at once,
# one line, exit 2, and reference writes nothing.
refused_hf_dir() {
  refused "$1: --check train" 2 "$2" one --check train --config "$gcfg" --set train.init_from="$3"
  refused "$1: reference" 2 "$2" one reference --config "$gcfg" --set train.init_from="$3"
  [ ! -e outputs/reference.h5 ] && ok "$1: reference wrote nothing" || bad "$1: reference wrote nothing" "— outputs/reference.h5 is there"
}
fixture_gpt_prepared() { one prepare --config "$CONFIGS/gpt-tests.yaml" >/dev/null; }
case_fifo_init_from() {  # item 1: was a hang in open(2), every process, for ever
  fixture gpt_prepared || return
  hf_plain hf && rm hf/model.safetensors && mkfifo hf/model.safetensors
  refused_hf_dir "a FIFO as init_from's model.safetensors: refused at once" 'hf/model.safetensors: cannot open: a FIFO, not a regular file' hf
  expect_rc "a FIFO as init_from's model.safetensors, W = 2 train: every rank refuses at once" 2 ddp 2 train --config "$gcfg" --set train.init_from=hf
}
case_device_init_from() {  # item 5: a device is stat'ed, never opened (/dev/tty without a terminal: its open fails ENXIO)
  fixture gpt_prepared || return
  hf_plain hf && rm hf/model.safetensors && ln -s /dev/tty hf/model.safetensors
  refused "a link to /dev/tty as model.safetensors (no terminal): refused before it is opened" 2 \
    'hf/model.safetensors: cannot open: a character device, not a regular file' setsid -w "$DDPTOK" --check train --config "$gcfg" --set train.init_from=hf
  refused "/dev/tty as import's input (no terminal): refused before it is opened" 2 '^ddptok: error: /dev/tty: cannot open: a character device, not a regular file$' \
    setsid -w "$DDPTOK" import --config "$cfg" --set data.source=imported --set paths.outputs=imp --format bytes --input /dev/tty
  [ ! -e imp/data ] && ok "import of /dev/tty: nothing written" || bad "import of /dev/tty: nothing written" "— $(ls imp/data)"
}
case_init_from_other_bytes() {  # item 2: ranks that read different θ0 refuse together, naming the rank
  fixture gpt_prepared || return
  mkdir r0 r1 && hf_plain r0/hf && hf_plain r1/hf --tamper bump  # rank 1's copy differs in one byte
  local s=(--config "$gcfg" --set train.init_from=hf --set paths.outputs="$PWD/outputs" --set paths.artifacts="$PWD/artifacts" --set train.updates=2 --set train.interrupt_at=0)
  expect_rc "W = 2, rank 1's init_from copy one byte off: refused (exit 2)" 2 \
    timeout -k 5 120 mpirun -np 1 --wdir r0 "$DDPTOK" train "${s[@]}" : -np 1 --wdir r1 "$DDPTOK" train "${s[@]}"
  expect_grep "the refusal names rank 1 and θ0" 'rank 1: error: train.init_from hf: rank 1 read other weights than rank 0 \(θ0 SHA-256 [0-9a-f]{16} here, [0-9a-f]{16} on rank 0\)' "$OUT"
  [ ! -e artifacts/checkpoints ] && ok "refused: no checkpoint written" || bad "refused: no checkpoint written" "— $(ls artifacts/checkpoints)"
  rm -rf r1/hf && hf_plain r1/hf
  s+=(--set paths.artifacts="$PWD/art2")
  expect_rc "control: the same bytes on both ranks train (exit 0)" 0 \
    timeout -k 5 120 mpirun -np 1 --wdir r0 "$DDPTOK" train "${s[@]}" : -np 1 --wdir r1 "$DDPTOK" train "${s[@]}"
}
case_hf_config_types() {  # item 3: config.json's fields as transformers reads them, or refused
  # (the attack round found the last two: -1 was config_int's own error, exit 2 with no line;
  # a wpe of other rows than n_positions, which from_pretrained refuses, was accepted)
  fixture gpt_prepared || return
  hf_plain hf
  local key val pat
  while IFS='|' read -r key val pat; do
    rm -rf c && cp -r hf c
    $PY -c "import json,sys; p='c/config.json'; j=json.load(open(p)); j[sys.argv[1]]=json.loads(sys.argv[2]); json.dump(j,open(p,'w'))" "$key" "$val"
    refused "config.json $key: $val" 2 "c/$pat" one --check train --config "$gcfg" --set train.init_from=c
  done <<'CASES'
scale_attn_by_inverse_layer_idx|1|config.json: scale_attn_by_inverse_layer_idx is 1 \(true, as transformers reads it\): the GPT computes it false
scale_attn_by_inverse_layer_idx|"true"|config.json: scale_attn_by_inverse_layer_idx is "true" \(true, as transformers reads it\)
scale_attn_weights|null|config.json: scale_attn_weights is null \(false, as transformers reads it\): the GPT computes it true
tie_word_embeddings|0|config.json: tie_word_embeddings is 0 \(false
activation_function|null|config.json: activation_function is null: expected a string
layer_norm_epsilon|"1e-05"|config.json: layer_norm_epsilon is "1e-05": expected a number \(1e-05\)
vocab_size|-1|config.json: vocab_size: expected a non-negative integer
n_positions|64|model.safetensors: transformer.wpe.weight has shape \[32, 16\], expected \[64, 16\]
CASES
  for val in 0 '""' false; do
    rm -rf c && cp -r hf c
    $PY -c "import json,sys; p='c/config.json'; j=json.load(open(p)); j['scale_attn_by_inverse_layer_idx']=json.loads(sys.argv[1]); json.dump(j,open(p,'w'))" "$val"
    expect_rc "control: scale_attn_by_inverse_layer_idx $val (false as transformers reads it) passes" 0 one --check train --config "$gcfg" --set train.init_from=c
  done
}
case_safetensors_hostile() {  # item 4
  fixture gpt_prepared || return
  hf_plain ov --tamper hidden_overlap && hf_plain nan --tamper nan && hf_plain inf --tamper inf && hf_plain head --tamper head && hf_plain good
  refused_hf_dir "an overlap behind a zero-length tensor" 'ov/model.safetensors: tensors transformer.ln_f.weight and transformer.ln_f.bias overlap' ov
  refused_hf_dir "a NaN weight" 'nan/model.safetensors: tensor transformer.h.0.ln_1.weight: element 3 is NaN: refused' nan
  refused_hf_dir "an Inf weight" 'inf/model.safetensors: tensor transformer.h.0.ln_1.weight: element 3 is \+Inf: refused' inf
  refused_hf_dir "an lm_head.weight other than wte (--check too)" 'head/model.safetensors: lm_head.weight differs from transformer.wte.weight' head
  expect_rc "control: the same directory untampered passes --check" 0 one --check train --config "$gcfg" --set train.init_from=good
}
case_corpus_over_link() {  # item 5: the corpus writer's rename follows the rule of every writer
  local kind
  for kind in link fifo socket; do
    rm -rf outputs && mkdir -p outputs/data && echo keep >target
    case $kind in
      link) ln -s ../../target outputs/data/corpus.h5 ;;
      fifo) mkfifo outputs/data/corpus.h5 ;;
      socket) $PY -c "import socket; socket.socket(socket.AF_UNIX).bind('outputs/data/corpus.h5')" ;;
    esac
    refused "prepare over a $kind at corpus.h5: refused, left as it is" 2 'outputs/data/corpus.h5: cannot write: a (symbolic link|FIFO|socket) is there, not a regular file: refused, left as it is' \
      one prepare --config "$cfg"
    { [ "$kind" != link ] || [ -L outputs/data/corpus.h5 ]; } && [ "$(cat target)" = keep ] && [ -z "$(ls outputs/data | grep -v '^corpus.h5$')" ] \
      && ok "prepare over a $kind: it and its target untouched, no temporary or plan left" || bad "prepare over a $kind: it and its target untouched, nothing left" "— $(ls -la outputs/data)"
  done
}

# --- issue 39 item 7, messages. A refusal of an imported corpus: one line for every rank (was
# once per rank plus an empty "ranks 0-1: error:" line: the remedy's own capture, nested in
# load_corpus_or_die's, switched that one off and cleared its line)
case_imported_corpus_refused_once() {
  local S=(--set data.source=imported --set data.vocab_size=257)
  printf 'one\n%%\ntwo words\n%%\nthree words here\n' > in.txt
  for ((HOSTILE_I = 0; HOSTILE_I < 60; HOSTILE_I++)); do printf '\n%%\nline %d of the corpus' "$HOSTILE_I"; done >> in.txt
  one import --config "$cfg" "${S[@]}" --format bytes --delimiter '\n%\n' --input in.txt >/dev/null 2>&1 || { bad "imported_corpus_refused_once: import"; return; }
  ddp 2 train --config "$cfg" "${S[@]}" --set paths.artifacts=control >/dev/null 2>&1 \
    && ok "control: W = 2 train on the imported corpus as imported (exit 0)" || bad "control: W = 2 train on the imported corpus as imported (exit 0)"
  truncate -s 2000 outputs/data/corpus.h5
  expect_rc "W = 2 train on a truncated imported corpus.h5: refused" 2 ddp 2 train --config "$cfg" "${S[@]}"
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && grep -q '^ddptok: ranks 0-1: error: outputs/data/corpus.h5: not a readable HDF5 file' <<<"$OUT" \
    && ok "W = 2 train on a truncated imported corpus.h5: one line for both ranks, no empty error line" \
    || { bad "W = 2 train on a truncated imported corpus.h5: one line for both ranks, no empty error line"; grep '^ddptok: ' <<<"$OUT" | head -4; }
  [ ! -e artifacts/checkpoints ] && ok "a truncated imported corpus.h5: nothing trained" || bad "a truncated imported corpus.h5: nothing trained"
}
# --- export --out '': one line (was two from the HF writer); export is the one command with --out
case_export_out_empty() {
  fixture gpt_prepared && ddp 2 train --config "$gcfg" >/dev/null 2>&1 || { bad "export_out_empty: train"; return; }
  refused "export --out '': one line" 2 "^ddptok: error: export --out '': an empty path: expected the safetensors file" one export --config "$gcfg" --out ''
  refused "export --format hf --out '': one line (was two)" 2 "^ddptok: error: export --out '': an empty path: expected the Hugging Face directory" \
    one export --config "$gcfg" --format hf --out ''
  refused "--check export --out '': refused as the run is (was ok)" 2 "export --out '': an empty path" one --check export --config "$gcfg" --out ''
  [ ! -e outputs/model.safetensors ] && [ ! -e outputs/hf ] && ok "export --out '': nothing written" || bad "export --out '': nothing written"
  expect_rc "control: export --format hf --out hfdir" 0 one export --config "$gcfg" --format hf --out hfdir
}
# --- a rank file holds what the format defines and nothing else; SHA256SUMS holds entries for
# the rank files that are there and nothing else (both were accepted)
hostile_extra_object() {  # FILE NAME: a dataset NAME added to FILE, the manifest recomputed
  $PY -c "import h5py,sys; f=h5py.File(sys.argv[1],'r+'); f[sys.argv[2]]=[1.0,2.0]; f.close()" "$1" "$2" && sums
}
case_checkpoint_extra_dataset() {
  fixture trained || return
  cp -r artifacts/checkpoints/step-0006 step.keep
  expect_rc "control: the untouched checkpoint passes check-checkpoints" 0 one check-checkpoints --config "$cfg"
  hostile_extra_object artifacts/checkpoints/step-0006/rank-0001.h5 model/extra
  refused "check-checkpoints, an extra /model/extra in rank-0001.h5: named" 1 \
    'step-0006/rank-0001.h5: /model/extra is not an object of checkpoint format 4' one check-checkpoints --config "$cfg"
  refused_job "resume, an extra /model/extra in rank-0001.h5: refused" 'step-0006/rank-0001.h5: /model/extra is not an object of checkpoint format 4' \
    ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006
  rm -rf artifacts/checkpoints/step-0006 && cp -r step.keep artifacts/checkpoints/step-0006
  hostile_extra_object artifacts/checkpoints/step-0006/rank-0000.h5 sampler/extra
  refused "evaluate, an extra /sampler/extra in rank-0000.h5: refused" 2 'step-0006/rank-0000.h5: /sampler/extra is not an object' one evaluate --config "$cfg" --checkpoint artifacts/checkpoints/step-0006
  rm -rf artifacts/checkpoints/step-0006 && cp -r step.keep artifacts/checkpoints/step-0006
  hostile_extra_object artifacts/checkpoints/step-0006/rank-0000.h5 optimizer/momentum/w9
  refused "check-checkpoints, an extra /optimizer/momentum/w9: named" 1 '/optimizer/momentum/w9 is not an object' one check-checkpoints --config "$cfg"
}
case_manifest_stray_line() {
  fixture trained || return
  local d=artifacts/checkpoints/step-0006 line pat
  cp $d/SHA256SUMS sums.keep
  while IFS='|' read -r line pat; do
    { cat sums.keep; printf "$line"; } > $d/SHA256SUMS
    refused "SHA256SUMS with an extra line ${line%%\\n}: check-checkpoints names it" 1 "step-0006/SHA256SUMS: line 3 $pat" one check-checkpoints --config "$cfg"
    refused "SHA256SUMS with an extra line ${line%%\\n}: evaluate refuses" 2 "step-0006/SHA256SUMS: line 3 $pat" one evaluate --config "$cfg" --checkpoint $d
    refused_job "SHA256SUMS with an extra line ${line%%\\n}: resume refuses" "step-0006/SHA256SUMS: line 3 $pat" ddp 2 train --config "$cfg" --resume $d </dev/null
  done <<CASES
$(printf '%064d' 7)  rank-0002.h5\n|names rank-0002.h5, which is not there
$(printf '%064d' 7)  notes.txt\n|names notes.txt, not a rank file
xyz  rank-0001.h5\n|is not "SHA-256  rank-NNNN.h5"
CASES
  { tr -d '\r' < sums.keep | sed 's/$/\r/'; printf '\n'; } > $d/SHA256SUMS
  expect_rc "control: SHA256SUMS with CRLF line ends and a blank line passes check-checkpoints" 0 one check-checkpoints --config "$cfg"
}
# --- "intact" under the global sampler: every rank reads rank 0's file, and each verifies its
# share of the others against SHA256SUMS (rank 1's damaged file was resumed from)
case_global_resume_damaged_rank1() {
  local G=(--set train.sampler=global)
  one prepare --config "$cfg" "${G[@]}" >/dev/null && ddp 2 train --config "$cfg" "${G[@]}" >/dev/null 2>&1 || { bad "global_resume_damaged_rank1: train"; return; }
  cp -r artifacts/checkpoints/step-0006 step.keep
  printf x >> artifacts/checkpoints/step-0006/rank-0001.h5
  refused_job "global sampler, rank-0001.h5 damaged: --resume DIR refused, naming it" \
    'rank 1: error: artifacts/checkpoints/step-0006/rank-0001.h5: SHA-256 [0-9a-f]+… differs from SHA256SUMS' \
    ddp 2 train --config "$cfg" "${G[@]}" --resume artifacts/checkpoints/step-0006
  refused "global sampler, rank-0001.h5 damaged: an elastic W = 1 resume refused too" 2 'step-0006/rank-0001.h5: SHA-256 [0-9a-f]+… differs' \
    one train --config "$cfg" "${G[@]}" --set train.world_size=1 --set train.rank_bands=auto --resume artifacts/checkpoints/step-0006
  expect_rc "global sampler, rank-0001.h5 damaged: --resume latest finds no intact checkpoint" 2 ddp 2 train --config "$cfg" "${G[@]}" --resume latest
  expect_grep "global sampler, rank-0001.h5 damaged: rank 1's warning names the file" 'rank 1: warning: artifacts/checkpoints/step-0006 skipped \(damaged\): artifacts/checkpoints/step-0006/rank-0001.h5' "$OUT"
  [ ! -e artifacts/checkpoints/step-0012 ] && ok "global sampler, damaged rank-0001.h5: nothing trained" || bad "global sampler, damaged rank-0001.h5: nothing trained"
  rm -rf artifacts/checkpoints/step-0006 && cp -r step.keep artifacts/checkpoints/step-0006
  expect_rc "control: the intact checkpoint resumes under the global sampler" 0 ddp 2 train --config "$cfg" "${G[@]}" --resume latest
}
# Another rank's file under the global sampler is only hashed, in 1 MiB pieces (it was read
# whole: a GPT-2 small rank file with Adam's state is ~1.5 GB), and `--resume latest` hashes
# it once, not when it picks the checkpoint and again when it resumes. rank-0001.h5 gets 256 MiB
# more (sparse, with SHA256SUMS made to match): only its bytes are read at W = 2. At the test
# point after each hash, the peak RSS (VmHWM) of this directory's ranks is read from /proc.
# Controls: the same probe on a process that reads the file whole sees it; a file touched while
# paused is hashed a second time.
hwm_here() {  # the largest VmHWM (KiB) of the processes running in this directory
  local p peak=0 kb
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$PWD" ] || continue
    kb=$(awk '/^VmHWM:/ {print $2}' "$p/status" 2>/dev/null); [ -n "$kb" ] && [ "$kb" -gt "$peak" ] && peak=$kb
  done
  echo "$peak"
}
share_hash_run() {  # OUTVAR_PAUSES OUTVAR_PEAK [touch]: a --resume latest, counting the hashes
  local sh_job sh_waited=0 sh_pauses=0 sh_peak=0 sh_kb
  rm -f paused
  DDPTOK_TEST_PAUSE_AT=checkpoint_share_hashed:$PWD/paused ddp 2 train --config "$cfg" --set train.sampler=global --resume latest > resume.out 2>&1 &
  sh_job=$!
  while kill -0 $sh_job 2>/dev/null && [ $sh_waited -lt 2400 ]; do  # ddp's own timeout (120 s) ends it first
    if [ -e paused ]; then
      sh_pauses=$((sh_pauses + 1)); sh_kb=$(hwm_here); [ "$sh_kb" -gt "$sh_peak" ] && sh_peak=$sh_kb
      [ "${3:-}" = touch ] && [ $sh_pauses -eq 1 ] && touch artifacts/checkpoints/step-0006/rank-0001.h5
      rm -f paused
    fi
    sleep 0.05; sh_waited=$((sh_waited + 1))
  done
  wait $sh_job; SHARE_RC=$?
  printf -v "$1" %d $sh_pauses; printf -v "$2" %d $sh_peak
}
case_global_share_hashed_in_pieces() {
  local G=(--set train.sampler=global) d=artifacts/checkpoints/step-0006 n peak digest
  grep -q '^VmHWM:' /proc/self/status 2>/dev/null || { skip "$CASE" "no /proc/PID/status VmHWM here (a chroot without /proc)"; return; }
  one prepare --config "$cfg" "${G[@]}" >/dev/null && ddp 2 train --config "$cfg" "${G[@]}" >/dev/null 2>&1 || { bad "global_share_hashed_in_pieces: train"; return; }
  rm -rf artifacts/checkpoints/step-0012 && cp -r $d step.keep
  truncate -s +256M $d/rank-0001.h5 && digest=$(sha256sum $d/rank-0001.h5 | cut -d' ' -f1) \
    && sed -i "s/^[0-9a-f]\{64\}  rank-0001.h5\$/$digest  rank-0001.h5/" $d/SHA256SUMS && grep -q "^$digest  rank-0001.h5" $d/SHA256SUMS \
    || { bad "global_share_hashed_in_pieces: a 256 MiB rank-0001.h5 with its digest"; return; }
  share_hash_run n peak
  [ $SHARE_RC -eq 0 ] && [ "$n" -eq 1 ] && ok "global sampler, --resume latest: rank-0001.h5 hashed once (picked, then resumed)" "($n hash)" \
    || { bad "global sampler, --resume latest: rank-0001.h5 hashed once (picked, then resumed)" "— exit $SHARE_RC, $n hashes"; tail -3 resume.out; }
  [ "$peak" -gt 0 ] && [ "$peak" -lt $((128 * 1024)) ] && ok "a 256 MiB rank file hashed in pieces: peak RSS of a rank below 128 MiB" "($((peak / 1024)) MiB)" \
    || bad "a 256 MiB rank file hashed in pieces: peak RSS of a rank below 128 MiB" "— $((peak / 1024)) MiB"
  # Controls.
  $PY -c "import os, sys; d = open(sys.argv[1], 'rb').read(); open('paused', 'w').close()
import time
while os.path.exists('paused'): time.sleep(0.05)" $d/rank-0001.h5 &
  local job=$! waited=0
  while [ ! -e paused ] && [ $waited -lt 600 ]; do sleep 0.05; waited=$((waited + 1)); done
  peak=$(hwm_here); rm -f paused; wait $job
  [ "$peak" -ge $((256 * 1024)) ] && ok "control: the same probe sees a process that reads the file whole" "($((peak / 1024)) MiB)" \
    || bad "control: the same probe sees a process that reads the file whole" "— $((peak / 1024)) MiB"
  rm -rf artifacts/checkpoints/step-0012 artifacts/checkpoints/step-0006 && cp -r step.keep $d
  share_hash_run n peak touch
  [ $SHARE_RC -eq 0 ] && [ "$n" -eq 2 ] && ok "control: touched between the pick and the resume, rank-0001.h5 is hashed again" "($n hashes)" \
    || { bad "control: touched between the pick and the resume, rank-0001.h5 is hashed again" "— exit $SHARE_RC, $n hashes"; tail -3 resume.out; }
}
