# Hostile input and files (README "Failure model"): sizes that overflow, files whose data
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
    'the workload needs [0-9.]+ TiB \(largest: parameters .* = 32.0 TiB: data.vocab_size, model.embed_dim, model.hidden' \
    one prepare --config "$cfg" --set data.vocab_size=1048576 --set model.hidden=1048576
  local big_tables=(--set model.context=1024 --set model.embed_dim=1 --set data.vocab_size=8192 --set model.hidden=8192)
  expect_rc "k = 1024, V = H = 8192 with the dense first layer: within the budget (--check)" 0 one --check prepare --config "$cfg" "${big_tables[@]}"
  refused "k = 1024, V = H = 8192 with train.first_layer factored (its tables k*V*H*8): exit 2 naming them and their keys" 2 \
    'largest: factored tables k\*V\*H\*8 = [0-9.]+ [GT]iB: model.context x data.vocab_size x model.hidden \(train.first_layer: factored\)' \
    one --check prepare --config "$cfg" "${big_tables[@]}" --set train.first_layer=factored
  refused "a corpus of 2^24 sequences of up to 65536 tokens: exit 2 naming data.splits and data.max_length" 2 \
    'largest: corpus n\*\(Lmax\*4\+9\) = 4.0 TiB: data.splits.\* x data.max_length' \
    one prepare --config "$cfg" --set data.splits.train=16777216 --set data.max_length=65536
}

# --- corpus.h5 whose content was changed and its data lock recomputed (tests/hostile_h5.py)
case_corpus_lock_recomputed() {
  fixture prepared || return
  $PY "$HOSTILE_H5" lock outputs && one reference --config "$cfg" >/dev/null \
    && ok "negative control: the lock recomputed by hostile_h5.py is the stored one, and that corpus is used (exit 0)" \
    || bad "negative control: the lock recomputed by hostile_h5.py is the stored one, and that corpus is used (exit 0)" "— the hostile corpus tests would prove nothing"
}
corpus_token() {  # ID: a token id out of range, the lock recomputed
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs "token=$1"
  refused "corpus.h5 with a token id $1 and a recomputed lock: exit 2 naming the token" 2 \
    "outputs/data/corpus.h5: token [0-9]+ is $1, expected an id in \[1, 23\]" one reference --config "$cfg"
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
    'outputs/data/corpus.h5: sequence 1 has offsets [0-9]+\.\.[0-9]+ \(length 0\), expected a length in \[8, 24\]' one reference --config "$cfg"
}
case_corpus_float_tokens() {
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs float-tokens
  refused "corpus.h5 with float tokens (HDF5 would convert them): exit 2 naming the dtype" 2 \
    'dataset tokens holds floating-point numbers, expected integers' one reference --config "$cfg"
}
case_corpus_split_3() {
  fixture prepared || return
  $PY "$HOSTILE_H5" corpus outputs split
  refused "guard: corpus.h5 with split 3: exit 2" 2 'outputs/data/corpus.h5: sequence 0 has split 3, expected 0' one reference --config "$cfg"
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
case_plan_other_seed() {
  fixture trained || return
  one prepare --config "$cfg" --set seed=7 --set paths.outputs=other >/dev/null
  cp other/data/plan.h5 outputs/data/plan.h5
  refused "another seed's plan.h5: exit 2 saying the plan is stale, not calling the checkpoints invalid" 2 \
    'outputs/data/plan.h5: stale: made for data lock [0-9a-f]{12}…, the corpus has [0-9a-f]{12}…: run .ddptok prepare' \
    one check-checkpoints --config "$cfg"
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
  [ $rc -eq 1 ] && grep -q "rank-0000.h5: stored config: .*the workload needs 32.0 TiB" <<<"$OUT" \
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
# --- a file that crashes HDF5 itself (found by the fuzzer: tests/fuzz/run.sh): one line, exit 2, no SIGSEGV
case_plan_hdf5_crash() {
  fixture trained || return
  cp "$ROOT/tests/hostile/plan-hdf5-null-read.h5" outputs/data/plan.h5
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
  # Timed against a one-line config refused the same way just before, so a loaded machine
  # (which slows both) does not fail it; the quadratic parser took 7 s more on a quiet one.
  echo 'x: [[1]]' > shallow.yaml
  local t0 base ms
  t0=$(date +%s%N); one prepare --config shallow.yaml >/dev/null 2>&1; base=$(( ($(date +%s%N) - t0) / 1000000 ))
  t0=$(date +%s%N)
  refused "YAML 20000 lists deep: refused (was 7 s, quadratic)" 2 'deep.yaml:1: YAML nested deeper than 64 levels' one prepare --config deep.yaml
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $ms -lt $((base + 2000)) ] && ok "YAML 20000 lists deep: refused within 2 s of a one-line config's refusal" "($ms ms; a one-line config: $base ms)" \
    || bad "YAML 20000 lists deep: refused within 2 s of a one-line config's refusal" "— $ms ms; a one-line config took $base ms"
}
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

# --- symbolic links: ddptok never writes, truncates or empties through one
sl=(--set paths.outputs=sl --set paths.artifacts=art)
fixture_sl() { one prepare --config "$cfg" "${sl[@]}" >/dev/null; }                        # sl/data
fixture_sl_trained() { fixture sl && ddp 2 train --config "$cfg" "${sl[@]}" >/dev/null 2>&1; }  # art/checkpoints/step-0006, to resume from
case_symlink_lock() {
  fixture sl || return
  echo precious > target
  mkdir -p art/continuous && ln -s "$PWD/target" art/continuous/.lock
  refused_job "a symlinked continuous/.lock: refused" 'art/continuous/.lock: cannot open: a symbolic link: refused' \
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
  expect_rc "clean with outputs/logs a link to a directory" 0 one clean --config "$cfg" --scope generated
  [ "$(cat keepdir/keep 2>/dev/null)" = keep ] && [ ! -e outputs/logs ] && ok "clean with outputs/logs a link: the link removed, its target's files untouched (guard)" \
    || bad "clean with outputs/logs a link: the link removed, its target's files untouched (guard)"
}

case_config_roundtrip() {
  OUT=$("$ROOT"/build/test_config_roundtrip 2>&1); local rc=$?
  [ $rc -eq 0 ] && ok "property test over the key table: what the config accepts survives emission" "($(tail -1 <<<"$OUT"))" \
    || { bad "property test over the key table: what the config accepts survives emission" "— exit $rc"; echo "$OUT" | tail -8; }
}
