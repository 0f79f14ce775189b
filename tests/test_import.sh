# import: `ddptok import` (docs/data.md). An independent writer (tests/import_witness.py:
# numpy, struct, json, hashlib) builds one document set in every format; each imported
# corpus.h5 must equal, token for token, what the documented rules make of those documents
# (split by keyed hash, cut to max_length, drop below min_length). A damaged file of each
# kind gets one line naming the file, the offset and the rule, exit 2, no crash, no hang.
# Then a real corpus end to end: fortunes-min's English texts, byte-level, through
# reference, parity (W = 2, the controls rejected), training and evaluation, its test
# bits/byte beside the order-0 entropy and xz / zstd of the test split.
# Open MPI's session directory in each case's own tree: on a machine shared with other
# test runs, /tmp/ompi.* was removed under a starting singleton ("unable to create the
# desired directory", MPI_Init failed) in 2 of 5 runs here.
own_ompi() { mkdir -p "$PWD/ompi" && export OMPI_MCA_orte_tmpdir_base="$PWD/ompi"; }
PYW="$ROOT/tests/import_witness.py"
witness() { timeout -k 5 300 /usr/bin/python3 "$PYW" "$@"; }
t_yaml() {
  cat > t.yaml <<'EOF'
seed: 5
data:
  vocab_size: 301
  min_length: 4
  max_length: 32
  source: imported
  import: {split_seed: 3, validation_fraction: 0.2, test_fraction: 0.2}
model: {context: 3, embed_dim: 4, hidden: 8, dropout: 0.0}
train: {world_size: 2, rank_bands: auto, batch_size_per_rank: 2, accumulation: 1, updates: 3, interrupt_at: 0}
EOF
}
RULES=(--min 4 --max 32 --split-seed 3 --validation 0.2 --test 0.2)
# The writer's documents in every format (w/), and the damaged files (w/bad/), with t.yaml.
fixture_w() { own_ompi && t_yaml && witness make w && witness corrupt w >/dev/null && rm -rf ompi; }
case_independent_writer() {
  fixture w && ok "independent writer: every format, and the damaged files"
}

# 1. Every format, token for token.
fmt_case() {  # NAME FORMAT VOCAB INPUT [OPTIONS...]
  local name=$1 fmt=$2 v=$3 in=$4; shift 4
  own_ompi; fixture w || return
  rm -rf outputs
  expect_rc "import $name (--format $fmt $*)" 0 one import --config t.yaml --set data.vocab_size=$v --format "$fmt" "$@" --input "$in" || return
  local out; out=$(witness check "$name" w outputs/data/corpus.h5 "${RULES[@]}") \
    && ok "import $name: corpus.h5 equals the documented rules on the writer's documents" "— ${out#*: }" \
    || { bad "import $name: corpus.h5 equals the documented rules on the writer's documents"; echo "$out" | sed 's/^/       /'; }
}
case_format_bytes() { fmt_case bytes bytes 257 w/bytes --delimiter '\n%\n'; }
case_format_bytes_big() { fmt_case bytes-big bytes 257 w/bytes-big --delimiter '\n%\n'; }
case_format_llmc() { fmt_case llmc llmc 301 w/llmc --eot 299; }
case_format_llmc7() { fmt_case llmc7 llmc 70002 w/llmc7 --eot 70000; }
case_format_nanogpt() { fmt_case nanogpt nanogpt 301 w/nanogpt --eot 299; }
case_format_megatron() { fmt_case megatron megatron 301 w/megatron; }
case_format_jsonl() { fmt_case jsonl jsonl 301 w/jsonl; }
case_format_jsonl_big() { fmt_case jsonl-big jsonl 301 w/jsonl-big; }
# Every allocation filled with 0xa5 (glibc's MALLOC_PERTURB_): the corpus may not depend on
# what fresh memory holds (the first sequence's offset was read uninitialized: this case
# ended with SIGSEGV, exit 139, on main 6b24c39; ASan reported it for every format).
case_format_bytes_perturbed() {
  own_ompi; fixture w || return
  expect_rc "import bytes with every allocation filled with 0xa5 (MALLOC_PERTURB_=165)" 0 \
    env MALLOC_PERTURB_=165 "$DDPTOK" import --config t.yaml --set data.vocab_size=257 --format bytes --delimiter '\n%\n' --input w/bytes || return
  local out; out=$(witness check bytes w outputs/data/corpus.h5 "${RULES[@]}") \
    && ok "import bytes under MALLOC_PERTURB_: corpus.h5 equals the documented rules" "— ${out#*: }" \
    || { bad "import bytes under MALLOC_PERTURB_: corpus.h5 equals the documented rules"; echo "$out" | sed 's/^/       /'; }
}
case_format_jsonl_text() {
  fmt_case jsonl-text jsonl-text 257 w/jsonl-text
  # Negative control: the same check under another split seed must find the corpus different.
  witness check jsonl-text w outputs/data/corpus.h5 --min 4 --max 32 --split-seed 4 --validation 0.2 --test 0.2 >/dev/null \
    && bad "negative control: the import check finds the corpus different under another split seed" "— it passed" \
    || ok "negative control: the import check finds the corpus different under another split seed"
}

# 1b. The layouts of the field with the user's own split (tests/import_witness.py make_layouts):
# llm.c's fineweb.py shards (EOT before each document, fineweb_val_000000.bin then
# fineweb_train_000001.bin.., documents cut across every shard boundary), nanoGPT's train.bin
# and val.bin, Megatron prefixes per split, HF datasets' per-split JSONL of input_ids; each
# imported as a directory with --split-from-names and by the document hash, token for token
# against the witness's documents read in the documented order. On d22e7a6 there was no
# --split-from-names, input_ids was refused and a directory's train shards came before val.
layout_case() {  # NAME FORMAT INPUT [OPTIONS...]: both split rules
  local name=$1 fmt=$2 in=$3; shift 3
  own_ompi; fixture w || return
  local names out rule
  for names in --split-from-names ""; do
    rule="by hash"; [ -n "$names" ] && rule="by file name"
    rm -rf outputs
    # shellcheck disable=SC2086
    expect_rc "import the $name layout, split $rule" 0 one import --config t.yaml --format "$fmt" "$@" $names --input "$in" || return
    out=$(witness check "$name" w outputs/data/corpus.h5 "${RULES[@]}" ${names:+--names}) \
      && ok "the $name layout, split $rule: corpus.h5 equals its documents" "— ${out#*: }" \
      || { bad "the $name layout, split $rule: corpus.h5 equals its documents"; echo "$out" | sed 's/^/       /'; }
  done
}
case_layout_fineweb() {
  layout_case fineweb llmc w/fineweb --eot 299
  # The order matters where shards cut documents: train shards first (a name order) joins the
  # wrong pieces, and the same check must see it (negative control).
  rm -rf outputs
  one import --config t.yaml --format llmc --eot 299 --input 'w/fineweb/*_train_*.bin' --input w/fineweb/fineweb_val_000000.bin >/dev/null 2>&1
  witness check fineweb w outputs/data/corpus.h5 "${RULES[@]}" >/dev/null \
    && bad "negative control: the fineweb shards read train first are found different" "— they passed" \
    || ok "negative control: the fineweb shards read train first are found different"
  expect_rc "a quoted glob of shards: imported (ddptok expands it)" 0 one import --config t.yaml --format llmc --eot 299 --input 'w/fineweb/*_train_*.bin'
  expect_grep "a quoted glob of shards: its 4 train shards" '^import: 4 files' "$OUT"
}
case_layout_nanogpt() { layout_case nanogpt2 nanogpt w/nanogpt2 --eot 299; }
case_layout_megatron() {
  layout_case megatron2 megatron w/megatron2
  rm -rf outputs
  expect_rc "Megatron prefixes given one by one (--input PREFIX)" 0 one import --config t.yaml --format megatron --split-from-names \
    --input w/megatron2/corpus_valid_text_document --input w/megatron2/corpus_train_text_document --input w/megatron2/corpus_test_text_document
  local out
  out=$(witness check megatron2 w outputs/data/corpus.h5 "${RULES[@]}" --names) && ok "Megatron prefixes one by one: the same corpus" "— ${out#*: }" \
    || { bad "Megatron prefixes one by one: the same corpus"; echo "$out" | sed 's/^/       /'; }
}
case_layout_hf() { layout_case hf jsonl w/hf; }

# 2. Determinism and the split's stability: the same import twice gives the same bytes;
# adding documents moves none of the others to another split.
case_deterministic() {
  own_ompi; fixture w || return
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null && cp outputs/data/corpus.h5 c1.h5
  sleep 1.1
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null
  cmp -s c1.h5 outputs/data/corpus.h5 && ok "the same import twice: byte-identical corpus.h5" || bad "the same import twice: byte-identical corpus.h5"
  # The inputs hashed on a second thread or on the reader's own (DDPTOK_IMPORT_THREADS=1): the same bytes.
  local f
  for f in "bytes --delimiter \n%\n --input w/bytes-big" "megatron --input w/megatron2" "llmc --eot 299 --input w/fineweb"; do
    # shellcheck disable=SC2086
    env DDPTOK_IMPORT_THREADS=2 "$DDPTOK" import --config t.yaml --set data.vocab_size=301 --format $f >/dev/null 2>&1 && cp outputs/data/corpus.h5 threads.h5
    # shellcheck disable=SC2086
    env DDPTOK_IMPORT_THREADS=1 "$DDPTOK" import --config t.yaml --set data.vocab_size=301 --format $f >/dev/null 2>&1
    cmp -s threads.h5 outputs/data/corpus.h5 && ok "import --format ${f%% *}: the inputs hashed on a second thread or on one, byte-identical corpus.h5" \
      || bad "import --format ${f%% *}: the inputs hashed on a second thread or on one, byte-identical corpus.h5"
  done
}
case_split_stable() {
  own_ompi; fixture w || return
  local out
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null && cp outputs/data/corpus.h5 c1.h5
  mkdir -p more && cp w/jsonl/a.jsonl more/a.jsonl
  /usr/bin/python3 -c "import json, random; r = random.Random(1); open('more/b.jsonl','w').write(''.join(json.dumps([r.randrange(299) for _ in range(r.randrange(1, 90))]) + '\n' for _ in range(80)))"
  one import --config t.yaml --format jsonl --input more >/dev/null
  out=$(/usr/bin/python3 - c1.h5 outputs/data/corpus.h5 <<'PY'
import sys, h5py
def seqs(p):
    f = h5py.File(p, "r"); t, o, s = f["tokens"][()], f["offsets"][()], f["split"][()]
    return {tuple(t[o[i]:o[i + 1]]): int(s[i]) for i in range(len(s))}
a, b = seqs(sys.argv[1]), seqs(sys.argv[2])
moved = sum(1 for k in a if b.get(k) != a[k])
print(f"{len(a)} sequences before, {len(b)} after adding 80 documents, {moved} moved or lost")
sys.exit(moved != 0)
PY
) && ok "split stability: adding documents moves none of the others to another split" "($out)" \
  || bad "split stability: adding documents moves none of the others to another split" "— $out"
}

# 3. The corpus's commands and the rules that guard it.
case_imported_corpus_rules() {
  own_ompi; fixture w || return
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null
  expect_rc "reference runs on an imported corpus" 0 one reference --config t.yaml
  expect_rc "a synthetic config refuses an imported corpus.h5" 2 one reference --config t.yaml --set data.source=synthetic
  expect_grep "a synthetic config refuses an imported corpus.h5, naming data.source" 'a corpus of data.source imported, this config has data.source synthetic' "$OUT"
  expect_rc "an imported corpus is stale under other split fractions (data lock)" 2 one reference --config t.yaml --set data.import.test_fraction=0.3
  expect_grep "an imported corpus stale under other split fractions: says to run import" 'imported with another config .*run `[^`]*ddptok import' "$OUT"
  expect_rc "prepare refuses data.source: imported" 2 one prepare --config t.yaml
  expect_rc "import refuses a synthetic config" 2 one import --config "$CONFIGS/tiny.yaml" --format jsonl --input w/jsonl
  expect_rc "a prepared (synthetic) corpus is refused under data.source: imported" 2 \
    bash -c "'$DDPTOK' prepare --config '$CONFIGS/tiny.yaml' >/dev/null && '$DDPTOK' reference --config '$CONFIGS/tiny.yaml' --set data.source=imported"
  expect_rc "--eot with --format bytes is refused" 2 one import --config t.yaml --format bytes --eot 3 --input w/bytes
  expect_rc "--delimiter with a token format is refused" 2 one import --config t.yaml --format llmc --delimiter x --input w/llmc
  expect_rc "--eot beyond 2^32 - 1 is refused" 2 one import --config t.yaml --format llmc --eot 4294967296 --input w/llmc
  # The separator is never stored: it may lie at V - 1 (GPT-2's 50256 with V = 50257), here 299 with V = 300.
  rm -rf outputs
  expect_rc "--eot V - 1 is accepted (the separator never enters the corpus)" 0 one import --config t.yaml --set data.vocab_size=300 --format llmc --eot 299 --input w/llmc
  witness check llmc w outputs/data/corpus.h5 "${RULES[@]}" >/dev/null && ok "--eot V - 1: the corpus is the same as the witness's" || bad "--eot V - 1: the corpus is the same as the witness's"
  expect_rc "an unknown --format is refused" 2 one import --config t.yaml --format parquet --input w/llmc
  expect_rc "fractions summing past 1 are refused" 2 one import --config t.yaml --set data.import.test_fraction=0.9 --format jsonl --input w/jsonl
  expect_rc "a corpus without a train sequence is refused" 2 one import --config t.yaml --set data.import.test_fraction=1 --set data.import.validation_fraction=0 --format jsonl --input w/jsonl
  expect_grep "a corpus without a train sequence: refused saying so" 'no train sequence' "$OUT"
}

# /import_files (corpus.h5) is sha256sum's format: a file named with a newline is one line
# (escaped as sha256sum escapes it), never a second, forged entry; `sha256sum -c` checks them all.
case_import_files_names() {
  own_ompi; fixture w || return
  mkdir -p nd && cp w/jsonl/a.jsonl "nd/$(printf 'a\n0000000000000000000000000000000000000000000000000000000000000000  forged')" \
    && cp w/jsonl/a.jsonl 'nd/b\c' && cp w/jsonl/a.jsonl "nd/$(printf 'c\r')" && cp w/jsonl/a.jsonl nd/d
  expect_rc "import of files named with a newline, a backslash, a carriage return" 0 one import --config t.yaml --format jsonl --input nd || return
  /usr/bin/python3 -c "
import h5py, sys; sys.stdout.buffer.write(h5py.File('outputs/data/corpus.h5', 'r')['import_files'][()].tobytes())" > sums.txt
  local n; n=$(grep -c . sums.txt)
  [ "$n" -eq 4 ] && OUT=$(sha256sum -c sums.txt 2>&1) && [ "$(grep -c ': OK$' <<<"$OUT")" -eq 4 ] \
    && ok "import_files: one line per file whatever its name, and sha256sum -c checks each" "($n lines)" \
    || { bad "import_files: one line per file whatever its name, and sha256sum -c checks each" "— $n lines:"; cat -A sums.txt | head -6 | sed 's/^/       /'; }
}

# --check import runs the run's checks before a token is read: data.source, every --input
# there, the memory budget (it said ok to all three), with the run's own line.
case_check_import() {
  own_ompi; fixture w || return
  local c n=0 run_err chk_err
  for c in "--config $CONFIGS/tiny.yaml --format jsonl --input w/jsonl" "--config t.yaml --format jsonl --input w/absent" \
           "--config t.yaml --format jsonl --input w/jsonl-big"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    run_err=$(env DDPTOK_MEMORY_LIMIT=8M "$DDPTOK" import $c 2>&1 >/dev/null); local rc=$?
    # shellcheck disable=SC2086
    chk_err=$(env DDPTOK_MEMORY_LIMIT=8M "$DDPTOK" --check import $c 2>&1 >/dev/null); local crc=$?
    [ $rc -eq 2 ] && [ $crc -eq 2 ] && [ -n "$chk_err" ] && [ "$chk_err" = "$run_err" ] \
      && ok "--check import refuses what the run refuses ($n), with the same line" "— ${chk_err#ddptok: error: }" \
      || bad "--check import refuses what the run refuses ($n), with the same line" "— run exit $rc '$run_err', --check exit $crc '$chk_err'"
  done
}

# 4. Damaged files: one line naming the file, the offset and the rule; exit 2; no hang.
case_damaged_files() {
  own_ompi; fixture w || return
  local n=0 name fmt v path words opts err rc lines
  while IFS='|' read -r name fmt v path words opts; do
    # shellcheck disable=SC2086
    err=$(timeout -k 2 20 "$DDPTOK" import --config t.yaml --set data.vocab_size="$v" --format "$fmt" $opts --input "$path" 2>&1 >/dev/null); rc=$?
    lines=$(printf '%s\n' "$err" | grep -c .)
    n=$((n + 1))
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -qE -- "$words" <<<"$err"; then ok "damaged import input: $name" "— ${err#ddptok: error: }"
    else bad "damaged import input: $name" "— exit $rc, $lines line(s), expected exit 2 and one line matching /$words/: $err"; fi
  done < w/bad/cases.tsv
  [ "$n" -ge 45 ] && ok "damaged import inputs: at least 45 tried" "($n)" || bad "damaged import inputs: at least 45 tried" "— only $n"
}

# 5. A real corpus end to end: fortunes-min (Debian), byte-level.
F=/usr/share/games/fortunes
# Partition invariance and elastic resume on an imported corpus, as on the synthetic one
# (docs/sampling.md): fortunes-min, global sampler (G = 16), W = 2. parity --invariance
# passes; a run interrupted at 6 and resumed on W = 3 draws the same 12 windows as the
# uninterrupted W = 2 run and ends within the bound of tests/test_invariance.sh (6 float32
# ulps of the largest parameter). Control: the resume without its sampler counter draws
# other windows.
case_fortunes_invariance_elastic() {
  if [ ! -f "$F/fortunes" ] || [ ! -f "$F/literature" ] || [ ! -f "$F/riddles" ]; then
    skip "fortunes invariance and elastic resume" "fortunes-min is not installed (run/install-deps.sh --tests installs it)"; return
  fi
  own_ompi
  local C="$CONFIGS/fortunes.yaml" d bound
  local G=(--set train.sampler=global --set train.global_batch=16 --set train.updates=12 --set train.interrupt_at=6)
  expect_rc "fortunes (global sampler): import" 0 one import --config "$C" "${G[@]}" --format bytes --delimiter '\n%\n' \
    --input "$F/fortunes" --input "$F/literature" --input "$F/riddles" || return
  expect_rc "fortunes: parity --invariance W=2 on the imported corpus" 0 ddp 2 parity --invariance --config "$C" "${G[@]}"
  expect_rc "fortunes: train --continuous W=2" 0 ddp 2 train --config "$C" "${G[@]}" --continuous || return
  expect_rc "fortunes: train W=2, interrupted at 6" 0 ddp 2 train --config "$C" "${G[@]}" || return
  windows() { /usr/bin/python3 -c "
import h5py, sys
f = h5py.File(sys.argv[1] + '/rank-0000.h5')
print(f['sampler'].attrs['windows_sha256'].decode(), *f['sampler/last'][()].ravel())" "$1"; }
  bound=$(/usr/bin/python3 -c "
import h5py, numpy as np
with h5py.File('artifacts/continuous/step-0012/rank-0000.h5') as f:
    print(2**-23 * 6 * max(float(np.max(np.abs(f['model'][p][()]))) for p in f['model']))")
  local e
  for e in DDPTOK_NONE=1 DDPTOK_TEST_RESUME_SKIP=sampler; do
    rm -rf "e-${e%%=*}" && mkdir -p "e-${e%%=*}/checkpoints" && cp -r artifacts/checkpoints/step-0006 "e-${e%%=*}/checkpoints/"
    expect_rc "fortunes: resume W=2 -> W=3 (${e%%=*})" 0 env "$e" timeout -k 5 120 mpirun -np 3 --oversubscribe "$DDPTOK" train --config "$C" "${G[@]}" \
      --set train.world_size=3 --set paths.artifacts="e-${e%%=*}" --resume latest || return
  done
  [ "$(windows e-DDPTOK_NONE/checkpoints/step-0012)" = "$(windows artifacts/continuous/step-0012)" ] \
    && ok "fortunes W=2 -> W=3: the sampler's state at step 12 is the uninterrupted run's (windows' digest and window 12's ids)" \
    || bad "fortunes W=2 -> W=3: the sampler's state at step 12 is the uninterrupted run's (windows' digest and window 12's ids)"
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" --rank0 e-DDPTOK_NONE/checkpoints/step-0012 artifacts/continuous/step-0012)
  /usr/bin/python3 -c "import sys; sys.exit(not ($d <= $bound))" && ok "fortunes W=2 -> W=3: step 12 within the bound" "(max |dtheta| = $d <= $bound)" \
    || bad "fortunes W=2 -> W=3: step 12 within the bound" "— max |dtheta| = $d > $bound"
  [ "$(windows e-DDPTOK_TEST_RESUME_SKIP/checkpoints/step-0012)" != "$(windows artifacts/continuous/step-0012)" ] \
    && ok "fortunes, control: without the sampler's counter the windows differ" || bad "fortunes, control: without the sampler's counter the windows differ"
}

case_fortunes_end_to_end() {
  if [ ! -f "$F/fortunes" ] || [ ! -f "$F/literature" ] || [ ! -f "$F/riddles" ]; then
    skip "fortunes end to end" "fortunes-min is not installed (run/install-deps.sh --tests installs it)"; return
  fi
  own_ompi
  local C="$CONFIGS/fortunes.yaml" m base out d
  local FILES=(--input "$F/fortunes" --input "$F/literature" --input "$F/riddles")
  local R=(--set train.updates=20 --set train.interrupt_at=10 --set paths.artifacts=resume)
  mkdir -p fort && cd fort
  expect_rc "fortunes: import, byte-level, documents split at \"\\n%\\n\"" 0 one import --config "$C" --format bytes --delimiter '\n%\n' "${FILES[@]}"
  echo "$OUT" | sed 's/^/       /'
  expect_rc "fortunes: reference" 0 one reference --config "$C"
  expect_rc "fortunes: parity W=2 on the imported corpus" 0 ddp 2 parity --config "$C"
  echo "$OUT" | tail -7 | sed 's/^/       /'
  m=$(json outputs/parity.json "j['modes']['global-token']['pass'] and all(not j['modes'][m]['pass'] for m in ('global-sequence','mean-of-means','extra-accumulation-division','padding-in-denominator'))")
  [ "$m" = True ] && ok "fortunes: global-token passes, every negative control rejected" || bad "fortunes: global-token passes, every negative control rejected" "— $m"
  if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    # The witness replays plan.h5's windows (the bands sampler's): imported again under
    # train.sampler: bands into other outputs (for that plan.h5), the corpus.h5 is the same file.
    sed 's/^  sampler: global .*/  sampler: bands/' "$C" > fb.yaml
    expect_rc "fortunes (bands): import, reference and parity" 0 \
      bash -c "'$DDPTOK' import --config fb.yaml --set paths.outputs=ob --format bytes --delimiter '\\n%\\n' --input '$F/fortunes' --input '$F/literature' --input '$F/riddles' >/dev/null && '$DDPTOK' reference --config fb.yaml --set paths.outputs=ob >/dev/null && timeout -k 5 120 mpirun -np 2 '$DDPTOK' parity --config fb.yaml --set paths.outputs=ob >/dev/null"
    cmp -s outputs/data/corpus.h5 ob/data/corpus.h5 && ok "fortunes: the corpus under either sampler is the same file" || bad "fortunes: the corpus under either sampler is the same file"
    expect_rc "fortunes: the PyTorch witness, reading the original files itself, agrees on window 1" 0 \
      timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/torch/witness.py" grad fb.yaml ob --bytes '\n%\n' "$F/fortunes" "$F/literature" "$F/riddles"
    echo "$OUT" | grep -E 'window 1|reference.h5|global-token' | sed 's/^/       /'
    expect_rc "fortunes, negative control: the same witness with the files in another order disagrees" 1 \
      timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/torch/witness.py" grad fb.yaml ob --bytes '\n%\n' "$F/riddles" "$F/fortunes" "$F/literature"
  else
    skip "fortunes: PyTorch witness" "python3-torch is not installed"
  fi
  DDPTOK_TEST_TIMEOUT=300 expect_rc "fortunes: train W=2, 300 updates" 0 ddp 2 train --config "$C"
  echo "$OUT" | tail -1 | sed 's/^/       /'
  expect_rc "fortunes: evaluate the step-300 model" 0 one evaluate --config "$C" --checkpoint artifacts/checkpoints/step-0300
  base=$(witness baselines outputs/data/corpus.h5)
  out=$(/usr/bin/python3 - outputs/evaluate.json "$base" <<'PY'
import json, math, sys
e, b = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
bpb = e["test"]["loss"] / math.log(2)  # nats per token; one token per byte
print(f"test split {b['test_bytes']} bytes: ddptok {bpb:.3f} bits/byte (evaluate's {e['test']['loss']:.5f} nats/token / ln 2); "
      f"order-0 entropy {b['order0_bits_per_byte']:.3f}, xz -9 {b['xz_bits_per_byte']:.3f}, zstd -19 {b['zstd_bits_per_byte']:.3f}")
sys.exit(not bpb < b["order0_bits_per_byte"])
PY
) && ok "fortunes: bits/byte below the order-0 entropy" "— $out" || bad "fortunes: bits/byte below the order-0 entropy" "— $out"
  # Exact resume on the imported corpus: 20 updates interrupted at 10 and resumed, against
  # the uninterrupted run (AdamW, dropout 0.1, W = 2), bit for bit.
  ddp 2 train --config "$C" "${R[@]}" >/dev/null 2>&1 && ddp 2 train --config "$C" "${R[@]}" --resume latest >/dev/null 2>&1 \
    && ddp 2 train --config "$C" "${R[@]}" --continuous >/dev/null 2>&1 \
    && d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" resume/checkpoints/step-0020 resume/continuous/step-0020) \
    && ok "fortunes: interrupted at 10 and resumed, bit-identical to the uninterrupted step-20 run" "($d)" \
    || bad "fortunes: interrupted at 10 and resumed, bit-identical to the uninterrupted step-20 run" "— ${d:-a train failed}"
}
# The memory budget of an imported corpus is what its file says once it exists (2 x its size:
# src/config/budget.c), not data.splits.*, which an import does not follow: with
# data.splits.train = 2^24 and data.max_length = 2^16 the estimate is 4 TiB, refused by
# --check train under DDPTOK_MEMORY_LIMIT=4G before the import (negative control: no file
# yet, the message names data.splits.*) and accepted once the corpus file exists.
case_budget_from_file() {
  # The corpus is read on demand: its size is not in the training budget, before the import
  # (data.splits.* would say 4 TiB) or after it. The control, prepare (which builds a corpus
  # of that size in memory), is refused: hostile:workload_sizes.
  own_ompi; fixture w || return
  local big=(--set data.splits.train=16777216 --set data.max_length=65536 --set train.sampler=global)
  rm -rf outputs
  DDPTOK_MEMORY_LIMIT=4G expect_rc "budget: no corpus file yet, data.splits.train = 2^24 of 65536 tokens: --check train accepted" 0 \
    one --check train --config t.yaml "${big[@]}"
  expect_rc "budget: import jsonl" 0 one import --config t.yaml --set data.max_length=65536 --set train.sampler=global --format jsonl --input w/jsonl || return
  DDPTOK_MEMORY_LIMIT=4G expect_rc "budget: the imported corpus exists: --check train accepted" 0 \
    one --check train --config t.yaml "${big[@]}"
}

# 6. Streaming (issue 28): a failed import leaves nothing half-made, the memory is the
# buffers', the corpus is the data and not the training layout.

# kill -9 at every stage (DDPTOK_TEST_KILL_AT, base/testpoint.h) of an import replacing an
# earlier corpus: after each, corpus.h5 is the earlier one byte for byte and a later command
# accepts it; the next import says what it removed and publishes the new one. Killed after
# the rename, corpus.h5 is the complete new corpus. A kill at a random moment leaves one of
# the two, never anything else that a command accepts. On d22e7a6 there was no temporary name
# to leave, and nothing said what a killed import left.
case_killed_anywhere() {
  own_ompi; fixture w || return
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null || { bad "killed import: the earlier corpus"; return; }
  cp outputs/data/corpus.h5 before.h5
  local point out
  for point in import-counted writer-open import-placing writer-rename; do
    env DDPTOK_TEST_KILL_AT=$point "$DDPTOK" import --config t.yaml --set data.vocab_size=257 --format bytes --delimiter '\n%\n' --input w/bytes-big >/dev/null 2>&1
    local rc=$?
    [ $rc -eq 137 ] && cmp -s before.h5 outputs/data/corpus.h5 \
      && ok "kill -9 at $point: the earlier corpus.h5 is there, byte for byte" || bad "kill -9 at $point: the earlier corpus.h5 is there, byte for byte" "— exit $rc"
    expect_rc "kill -9 at $point: a later command accepts the earlier corpus" 0 one reference --config t.yaml
  done
  ls outputs/data/corpus.h5.tmp.* >/dev/null 2>&1 && ok "the killed imports left their temporary files (the last one's is there)" \
    || bad "the killed imports left their temporary files (the last one's is there)"
  expect_rc "the next import, after the kills" 0 one import --config t.yaml --set data.vocab_size=257 --format bytes --delimiter '\n%\n' --input w/bytes-big
  expect_grep "the next import says what it removed and why" 'corpus.h5: removed outputs/data/corpus.h5.tmp.[0-9]+, left by a write that did not finish \(pid [0-9]+, gone\): outputs/data/corpus.h5 was kept as it was' "$OUT"
  ! ls outputs/data/corpus.h5.tmp.* >/dev/null 2>&1 && ok "after it, no temporary file is left" || bad "after it, no temporary file is left" "— $(ls outputs/data)"
  out=$(witness check bytes-big w outputs/data/corpus.h5 --min 4 --max 32 --split-seed 3 --validation 0.2 --test 0.2) \
    && ok "after it, corpus.h5 is the new corpus, token for token" || bad "after it, corpus.h5 is the new corpus, token for token" "— $out"
  rm -rf outputs
  env DDPTOK_TEST_KILL_AT=writer-published "$DDPTOK" import --config t.yaml --format jsonl --input w/jsonl >/dev/null 2>&1
  out=$(witness check jsonl w outputs/data/corpus.h5 "${RULES[@]}") \
    && ok "kill -9 just after the rename: corpus.h5 is the complete new corpus" || bad "kill -9 just after the rename: corpus.h5 is the complete new corpus" "— $out"
  rm -rf outputs
  env DDPTOK_TEST_KILL_AT=writer-rename "$DDPTOK" import --config t.yaml --format jsonl --input w/jsonl >/dev/null 2>&1
  expect_rc "kill -9 of the first import before its rename: no corpus, a later command refuses" 2 one reference --config t.yaml
  expect_grep "no corpus: the refusal says to run import" 'corpus.h5: cannot open: No such file or directory: run `.*import' "$OUT"
  # A kill at a moment nobody chose: the earlier corpus, or the complete new one.
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null && cp outputs/data/corpus.h5 before.h5
  "$DDPTOK" import --config t.yaml --set data.vocab_size=257 --format bytes --delimiter '\n%\n' --input w/bytes-big >/dev/null 2>&1 &
  local pid=$!
  sleep 0.$((RANDOM % 4 + 1)); kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  if cmp -s before.h5 outputs/data/corpus.h5; then ok "kill -9 at a random moment: the earlier corpus, byte for byte"
  elif witness check bytes-big w outputs/data/corpus.h5 --min 4 --max 32 --split-seed 3 --validation 0.2 --test 0.2 >/dev/null; then ok "kill -9 at a random moment: the complete new corpus"
  else bad "kill -9 at a random moment: the earlier corpus or the complete new one"; fi
}

# A full disk: one line naming corpus.h5, exit 2, nothing published and no temporary file;
# the earlier corpus untouched.
case_disk_full() {
  [ "$(id -u)" = 0 ] && mkdir -p disk && mount -t tmpfs -o size=400k tmpfs "$PWD/disk" 2>/dev/null \
    || { skip "import on a full disk" "mounting a tmpfs needs root (and a mount namespace that allows it)"; return; }
  own_ompi; fixture w || { umount "$PWD/disk"; return; }
  local o=(--set paths.outputs=disk/o)
  one import --config t.yaml "${o[@]}" --format jsonl --input w/jsonl >/dev/null && cp disk/o/data/corpus.h5 before.h5
  OUT=$("$DDPTOK" import --config t.yaml "${o[@]}" --set data.vocab_size=257 --format bytes --delimiter '\n%\n' --input w/bytes-big 2>&1 >/dev/null); local rc=$?
  [ $rc -eq 2 ] && [ "$(grep -c . <<<"$OUT")" -eq 1 ] && grep -qE '^ddptok: error: disk/o/data/corpus.h5: cannot write: No space left on device' <<<"$OUT" \
    && ok "import on a full disk: exit 2, one line naming corpus.h5 and the reason" "— ${OUT#ddptok: error: }" \
    || bad "import on a full disk: exit 2, one line naming corpus.h5 and the reason" "— exit $rc: $OUT"
  cmp -s before.h5 disk/o/data/corpus.h5 && [ "$(ls disk/o/data)" = "$(printf 'corpus.h5\nplan.h5')" ] \
    && ok "import on a full disk: the earlier corpus untouched, nothing else left" || bad "import on a full disk: the earlier corpus untouched, nothing else left" "— $(ls -a disk/o/data)"
  umount "$PWD/disk"
}

# Peak RSS does not grow with the input (docs/data.md "Import in bounded memory"): llm.c
# shards of 4 and 40 M tokens (8 and 80 MiB, past the point where every buffer of the writer
# is full) import within 10 % of each other's peak; on d22e7a6 the larger needed 16 bytes per
# token (~640 MB). Control: h5py reading the larger corpus's /tokens whole peaks at least
# 50 MB higher (the measurement sees corpus-sized memory).
case_rss_flat() {
  own_ompi; t_yaml
  local n a b load=()
  for n in 4 40; do
    /usr/bin/python3 - "$n" <<'PY'
import sys, numpy as np
n = int(sys.argv[1]) * 2**20
r = np.random.default_rng(n)
t = r.integers(0, 299, size=n, dtype=np.uint16); t[r.integers(0, n, size=n // 200)] = 299  # documents of ~200
h = np.zeros(256, '<i4'); h[0], h[1], h[2] = 20240520, 1, n
open(f"s{sys.argv[1]}.bin", "wb").write(h.tobytes() + t.astype('<u2').tobytes())
PY
    mkdir -p "r$n" && ( cd "r$n" && /usr/bin/python3 "$ROOT/tests/maxrss.py" rss "$DDPTOK" import --config ../t.yaml --format llmc --eot 299 --input "../s$n.bin" >/dev/null ) \
      || { bad "rss: import of $n M tokens"; return; }
    ( cd "r$n" && /usr/bin/python3 "$ROOT/tests/maxrss.py" load /usr/bin/python3 -c "import h5py; t = h5py.File('outputs/data/corpus.h5')['tokens'][()]" ) && load+=("$(cat "r$n/load.0")")
  done
  a=$(cat r4/rss.0) b=$(cat r40/rss.0)
  awk -v a="$a" -v b="$b" 'BEGIN { exit !(b < a * 1.10) }' && ok "import of 40 M tokens peaks within 10 % of 4 M tokens" "($a vs $b KiB)" \
    || bad "import of 40 M tokens peaks within 10 % of 4 M tokens" "— $a vs $b KiB"
  awk -v a="${load[0]}" -v b="${load[1]}" 'BEGIN { exit !(b - a > 50000) }' \
    && ok "control: reading the larger corpus whole peaks 50 MB higher (the measurement sees it)" "(${load[0]} vs ${load[1]} KiB)" \
    || bad "control: reading the larger corpus whole peaks 50 MB higher (the measurement sees it)" "— ${load[0]} vs ${load[1]} KiB"
}

# The corpus is the data, not the layout (issue 28.5): one import, then train on it with
# another world size, batch, accumulation, seed and sampler, corpus.h5 untouched; a
# checkpoint trained on it refuses other data (an import of other files), and the refusal
# of a corpus cut by other rules rebuilds the exact import command from corpus.h5, which runs
# as printed. On d22e7a6 each of those layouts was "data lock ... run import" with the
# template `--format F --input PATH`.
case_layout_not_data() {
  own_ompi; fixture w || return
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null && cp outputs/data/corpus.h5 c.h5
  local s n=0
  for s in "train.world_size=1" "train.batch_size_per_rank=3" "train.accumulation=2" "seed=11" "train.sampler=global"; do
    n=$((n + 1))
    local extra=(); [ "$s" = train.world_size=1 ] && extra=(--set train.rank_bands=auto)
    expect_rc "the same corpus.h5 trains with --set $s (no re-import)" 0 \
      bash -c "'$DDPTOK' train --config t.yaml --set $s ${extra[*]} --set paths.artifacts=a$n --set train.interrupt_at=0 >/dev/null 2>&1 || timeout -k 5 120 mpirun -np 2 '$DDPTOK' train --config t.yaml --set $s --set paths.artifacts=a$n --set train.interrupt_at=0"
  done
  cmp -s c.h5 outputs/data/corpus.h5 && ok "after five layouts, corpus.h5 is byte for byte the imported one" || bad "after five layouts, corpus.h5 is byte for byte the imported one"
  one import --config t.yaml --format llmc --eot 299 --input w/llmc >/dev/null
  expect_rc "a checkpoint trained on the first import refuses the second one's data" 2 \
    timeout -k 5 120 mpirun -np 2 "$DDPTOK" train --config t.yaml --set train.batch_size_per_rank=3 --set paths.artifacts=a2 --set train.interrupt_at=0 --resume latest
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null
  expect_rc "a corpus cut under other split fractions is refused" 2 one reference --config t.yaml --set data.import.test_fraction=0.3
  local hint; hint=$(sed -n 's/.*run `\([^`]*\)`.*/\1/p' <<<"$OUT" | head -1)
  expect_grep "the refusal's command is the import that made it, with this config" 'import --config t.yaml --set data.import.test_fraction=0.3 --format jsonl --input w/jsonl$' "$hint"
  expect_rc "that command runs as printed" 0 bash -c "$hint"
  expect_rc "then the corpus is this config's" 0 one reference --config t.yaml --set data.import.test_fraction=0.3
}

# Inputs are hashed as they are read (issue 30.6): an input changed between the two passes
# (DDPTOK_TEST_PAUSE_AT holds the import there; one token of one line, in place: the same
# lengths) is refused, naming it, and nothing is published; /import_files holds what
# sha256sum says of each input as read. On d22e7a6 the recorded hash was taken after the
# read, of the changed file, and the corpus held the old bytes.
case_input_changed() {
  own_ompi; fixture w || return
  mkdir -p in && cp w/jsonl/a.jsonl in/a.jsonl
  DDPTOK_TEST_PAUSE_AT=import-counted:"$PWD/held" "$DDPTOK" import --config t.yaml --format jsonl --input in > run.out 2>&1 &
  local pid=$! i
  for ((i = 0; i < 300; i++)); do [ -e held ] && break; sleep 0.02; done
  sed -i '2s/^\[[0-9]*/[1/' in/a.jsonl  # line 2's first token becomes 1: the same lines, the same documents' lengths
  rm -f held; wait $pid; local rc=$?
  [ $rc -eq 2 ] && grep -qE '^ddptok: error: in/a.jsonl: document [0-9]+ holds other ids than in the first pass: the file changed while importing \(nothing written' run.out \
    && ok "an input changed between the passes: refused naming it (exit 2)" || { bad "an input changed between the passes: refused naming it (exit 2)" "— exit $rc:"; head -3 run.out | sed 's/^/       /'; }
  [ ! -e outputs/data/corpus.h5 ] && ! ls outputs/data/corpus.h5.tmp.* >/dev/null 2>&1 \
    && ok "an input changed between the passes: nothing published, nothing left" || bad "an input changed between the passes: nothing published, nothing left"
  expect_rc "the same input, unchanged: imported" 0 one import --config t.yaml --format jsonl --input in
  [ "$(/usr/bin/python3 -c "import h5py; print(h5py.File('outputs/data/corpus.h5')['import_files'][()].tobytes().decode().split()[0])")" = "$(sha256sum < in/a.jsonl | cut -d' ' -f1)" ] \
    && ok "/import_files holds the input's SHA-256 as sha256sum computes it" || bad "/import_files holds the input's SHA-256 as sha256sum computes it"
}

# An input changed between the passes is the one named (issue 39.7): with two inputs, the last
# non-empty line of one removed while the import is held after its first pass (fewer documents, each
# the same). Was: the first's change named the second (where the shifted records disagreed),
# the second's named no file ("the inputs hold fewer documents").
case_changed_input_named() {
  own_ompi; fixture w || return
  local which other pid rc i
  for which in a b; do
    rm -rf in outputs held && mkdir -p in && cp w/jsonl/a.jsonl in/a.jsonl && cp w/jsonl/a.jsonl in/b.jsonl
    DDPTOK_TEST_PAUSE_AT=import-counted:"$PWD/held" "$DDPTOK" import --config t.yaml --format jsonl --input in > run.out 2>&1 &
    pid=$!
    for ((i = 0; i < 300; i++)); do [ -e held ] && break; sleep 0.02; done
    i=$(grep -n '[0-9]' in/$which.jsonl | tail -1 | cut -d: -f1) && sed -i "${i}d" in/$which.jsonl  # its last non-empty document
    rm -f held; wait $pid; rc=$?
    other=$([ $which = a ] && echo b || echo a)
    [ $rc -eq 2 ] && [ "$(grep -c . run.out)" -eq 1 ] && grep -qE "^ddptok: error: in/$which.jsonl: .*changed while importing" run.out && ! grep -q "in/$other.jsonl" run.out \
      && ok "two inputs, in/$which.jsonl changed between the passes: refused naming it, not in/$other.jsonl (exit 2, one line)" \
      || { bad "two inputs, in/$which.jsonl changed between the passes: refused naming it, not in/$other.jsonl (exit 2, one line)" "— exit $rc:"; head -3 run.out | sed 's/^/       /'; }
    [ ! -e outputs/data/corpus.h5 ] && ! ls outputs/data/corpus.h5.tmp.* >/dev/null 2>&1 \
      && ok "two inputs, in/$which.jsonl changed: nothing published, nothing left" || bad "two inputs, in/$which.jsonl changed: nothing published, nothing left"
  done
  expect_rc "control: the two inputs as they are now, unchanged: imported" 0 one import --config t.yaml --format jsonl --input in
}

# Lists that grow with the inputs are datasets (issue 30.7): 800 inputs import (the 64 KiB
# attribute cap refused ~770 on d22e7a6, after reading them all); --check import refuses what
# the run refuses, here shard 700 of 800 with another magic, with the run's own line.
case_many_inputs() {
  own_ompi; t_yaml
  /usr/bin/python3 - <<'PY'
import os, numpy as np
os.makedirs("many", exist_ok=True); os.makedirs("shards", exist_ok=True)
for i in range(800):
    open(f"many/part_{i:04d}.jsonl", "w").write(f"[{i % 299}, 1, 2, 3, 4, 5]\n[7, 8, 9, {i % 299}, 10]\n")
    h = np.zeros(256, "<i4"); h[0], h[1], h[2] = (20240520 if i != 699 else 20240521), 1, 6
    open(f"shards/shard_{i:04d}.bin", "wb").write(h.tobytes() + np.asarray([299, i % 299, 1, 2, 3, 4], "<u2").tobytes())
PY
  expect_rc "800 inputs: imported" 0 one import --config t.yaml --set train.sampler=global --format jsonl --input many
  local n; n=$(/usr/bin/python3 -c "import h5py; print(len(h5py.File('outputs/data/corpus.h5')['import_files'][()].tobytes().splitlines()))")
  [ "$n" = 800 ] && ok "800 inputs: /import_files lists them all" || bad "800 inputs: /import_files lists them all" "— $n lines"
  local run_err chk_err
  run_err=$("$DDPTOK" import --config t.yaml --set train.sampler=global --format llmc --eot 299 --input shards 2>&1 >/dev/null); local rc=$?
  chk_err=$("$DDPTOK" --check import --config t.yaml --set train.sampler=global --format llmc --eot 299 --input shards 2>&1 >/dev/null); local crc=$?
  [ $rc -eq 2 ] && [ $crc -eq 2 ] && [ "$chk_err" = "$run_err" ] && grep -q 'shard_0699.bin: offset 0: magic 20240521' <<<"$chk_err" \
    && ok "--check import refuses shard 700's header as the run does, with the same line" "— ${chk_err#ddptok: error: }" \
    || bad "--check import refuses shard 700's header as the run does, with the same line" "— run exit $rc '$run_err', --check exit $crc '$chk_err'"
}

# Your own text with the shipped config (issue 29.2): one whole file, long documents and a
# directory with a link in it train with configs/fortunes.yaml (the global sampler: no band
# can be empty); an empty validation or test split is one warning line with the fix; the
# bands sampler refuses long documents naming the fix, which works as printed. On d22e7a6 the
# first ended "rank 0's band [16, 71] holds no train sequence" with no fix, the empty splits
# and the skipped link went unsaid.
case_own_text() {
  own_ompi
  local C="$CONFIGS/fortunes.yaml" R=(--set train.updates=6)
  mkdir -p txt && /usr/bin/python3 - <<'PY'
import hashlib, struct
words = "the quick brown fox jumps over the lazy dog while rivers run to the sea".split()
def text(seed, n):
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(words[x % len(words)])
    return " ".join(out)
def split(s):  # docs/data.md's rule, split_seed 0, fractions 0.1 and 0.1: 0 train
    ids = [b + 1 for b in s.encode()]
    h = hashlib.sha256(b"ddptok-split-v1" + struct.pack("<I", 0) + struct.pack(f"<{len(ids)}i", *ids)).digest()
    x = (int.from_bytes(h[:8], "big") >> 11) / 2**53
    return 2 if x < 0.1 else 1 if x < 0.2 else 0
seed = next(s for s in range(1, 100) if split(text(s, 3000)) == 0)  # one file, one document: in train
open("txt/one.txt", "w").write(text(seed, 3000))
open("txt/long.txt", "w").write("\n\n".join(text(s, 400) for s in range(1, 13)))
PY
  mkdir -p own && cp txt/long.txt own/ && ln -s "$PWD/txt/one.txt" own/linked.txt && mkdir own/sub
  expect_rc "one whole file (no --delimiter): imported" 0 one import --config "$C" --format bytes --input txt/one.txt
  expect_grep "one whole file: one warning line says validation and test are empty, with the fix" \
    'warning: import: the validation and test splits are empty \(1 document, .*cut the input into more documents \(--delimiter TEXT' "$OUT"
  expect_rc "one whole file: trains with configs/fortunes.yaml" 0 ddp 2 train --config "$C" "${R[@]}"
  expect_rc "long documents, and a directory holding a link and a sub-directory: imported" 0 \
    one import --config "$C" --format bytes --delimiter '\n\n' --input own
  expect_grep "the skipped link and sub-directory are counted" 'skipped in the directories and patterns given: 1 symbolic link, 1 sub-directory' "$OUT"
  expect_rc "long documents: train with configs/fortunes.yaml" 0 ddp 2 train --config "$C" "${R[@]}" --fresh
  expect_rc "long documents under the bands sampler: refused" 2 ddp 2 train --config "$C" "${R[@]}" --set train.sampler=bands --fresh
  local fix; fix=$(grep -o "train.rank_bands=\[\[[^']*\]\]" <<<"$OUT" | head -1)
  expect_grep "the refusal names the fixes: the global sampler, or bands that hold its lengths" \
    "holds no train sequence: --set train.sampler=global .*or bands that hold its lengths: --set 'train.rank_bands=\[\[16, " "$OUT"
  expect_rc "the bands it names train as printed" 0 ddp 2 train --config "$C" "${R[@]}" --set train.sampler=bands --set "$fix" --fresh
}

# run/nanogpt-compare.sh's alignment (docs/nanogpt.md): run/nanogpt_export.py writes ddptok's
# train and validation split as nanoGPT's train.bin / val.bin (ddptok ids, byte b = b + 1),
# and the same text as bytes that ddptok imports again as pieces of exactly the block. Its
# check must pass the export and reject an off-by-one id mapping, another split (split_seed
# 1), swapped splits and a re-import cut to another length. With NANOGPT_DIR (a checkout of
# karpathy/nanoGPT) and python3-torch, nanoGPT's train.py also reads the bins (eval_only);
# without them that check is skipped, saying why (the bin checks need neither).
NANOGPT_X="$ROOT/run/nanogpt_export.py"
nanogpt_x() { timeout -k 5 120 /usr/bin/python3 "$NANOGPT_X" "$@"; }
case_nanogpt_bins() {
  own_ompi
  cat > ng.yaml <<'YML'
seed: 1
data:
  vocab_size: 257
  min_length: 4
  max_length: 32
  source: imported
  import: {split_seed: 0, validation_fraction: 0.2, test_fraction: 0.2}
model: {context: 3, embed_dim: 4, hidden: 8, dropout: 0.0}
train: {world_size: 2, sampler: global, global_batch: 4, rank_bands: auto, batch_size_per_rank: 2, accumulation: 1, updates: 3, interrupt_at: 0}
YML
  /usr/bin/python3 - <<'PY'
words = "the quick brown fox jumps over the lazy dog while rivers run to the sea".split()
x, docs = 7, []
for d in range(300):
    n = 1 + (d * 7919) % 23
    out = []
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out.append(words[x % len(words)])
    docs.append(" ".join(out))
open("ng.txt", "w").write("\n%\n".join(docs))
PY
  local I=(--format bytes --delimiter '\n%\n' --input ng.txt)
  expect_rc "nanogpt bins: ddptok's split imported" 0 one import --config ng.yaml --set paths.outputs=sp "${I[@]}" || return
  expect_rc "nanogpt bins: export of the split" 0 nanogpt_x export sp/data/corpus.h5 bins --block 32 || return
  expect_rc "nanogpt bins: the bytes imported again, one document per split" 0 one import --config ng.yaml --set paths.outputs=pc \
    --format bytes --split-from-names --input bins/fortunes_train.bytes --input bins/fortunes_val.bytes || return
  expect_rc "nanogpt bins: train.bin and val.bin are ddptok's split, the re-import its pieces" 0 \
    nanogpt_x check sp/data/corpus.h5 bins --block 32 --pieces pc/data/corpus.h5
  # Controls: each a deliberately wrong variant the same check must reject.
  mkdir -p obo && cp bins/meta.pkl bins/val.bin obo/ && /usr/bin/python3 -c "
import numpy as np; a = np.fromfile('bins/train.bin', np.uint16); (a - 1).astype(np.uint16).tofile('obo/train.bin')"
  expect_rc "nanogpt bins: negative control: byte b as id b (off by one) rejected" 1 nanogpt_x check sp/data/corpus.h5 obo --block 32
  one import --config ng.yaml --set paths.outputs=sp1 --set data.import.split_seed=1 "${I[@]}" >/dev/null &&
    nanogpt_x export sp1/data/corpus.h5 bins1 --block 32 >/dev/null || { bad "nanogpt bins: the split_seed 1 import and export"; return; }
  expect_rc "nanogpt bins: negative control: another split (split_seed 1) rejected" 1 nanogpt_x check sp/data/corpus.h5 bins1 --block 32
  mkdir -p swap && cp bins/meta.pkl swap/ && cp bins/train.bin swap/val.bin && cp bins/val.bin swap/train.bin
  expect_rc "nanogpt bins: negative control: train and validation swapped rejected" 1 nanogpt_x check sp/data/corpus.h5 swap --block 32
  one import --config ng.yaml --set paths.outputs=pc30 --set data.max_length=30 \
    --format bytes --split-from-names --input bins/fortunes_train.bytes --input bins/fortunes_val.bytes >/dev/null 2>&1 || { bad "nanogpt bins: re-import at max_length 30"; return; }
  expect_rc "nanogpt bins: negative control: a re-import in pieces of 30, not 32, rejected" 1 \
    nanogpt_x check sp/data/corpus.h5 bins --block 32 --pieces pc30/data/corpus.h5
  # --shifts 4: the train pieces start at 4 offsets of the stream (0, 8, 16, 24), the check
  # passes them and rejects the same corpus taken for 2 offsets.
  nanogpt_x export sp/data/corpus.h5 bins4 --block 32 --shifts 4 >/dev/null &&
    one import --config ng.yaml --set paths.outputs=pc4 --format bytes --split-from-names \
      --input 'bins4/fortunes_train_s*.bytes' --input bins4/fortunes_val.bytes >/dev/null 2>&1 || { bad "nanogpt bins: --shifts 4 export and import"; return; }
  expect_rc "nanogpt bins: --shifts 4: the re-import's train pieces start at 4 offsets" 0 \
    nanogpt_x check sp/data/corpus.h5 bins4 --block 32 --shifts 4 --pieces pc4/data/corpus.h5
  expect_rc "nanogpt bins: negative control: --shifts 4's re-import checked as 2 offsets rejected" 1 \
    nanogpt_x check sp/data/corpus.h5 bins4 --block 32 --shifts 2 --pieces pc4/data/corpus.h5
  if [ -z "${NANOGPT_DIR:-}" ] || [ ! -f "${NANOGPT_DIR}/train.py" ]; then
    skip "nanogpt bins: nanoGPT's train.py reads them" "no nanoGPT checkout (set NANOGPT_DIR to a clone of karpathy/nanoGPT); the bin checks above need none"
  elif ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    skip "nanogpt bins: nanoGPT's train.py reads them" "python3-torch is not installed"
  else
    local here=$PWD
    expect_rc "nanogpt bins: nanoGPT's train.py reads them (eval_only)" 0 env OMP_NUM_THREADS=1 PYTHONDONTWRITEBYTECODE=1 \
      sh -c "cd '$NANOGPT_DIR' && timeout -k 5 120 /usr/bin/python3 train.py --dataset='$here/bins' --out_dir='$here/ngout' \
        --device=cpu --compile=False --dtype=float32 --block_size=32 --batch_size=4 --n_layer=1 --n_head=1 --n_embd=8 \
        --eval_iters=2 --eval_only=True --bias=True" || return
    expect_grep "nanogpt bins: nanoGPT found meta.pkl's vocab_size 257" 'found vocab_size = 257' "$OUT"
  fi
}
