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

# 2. Determinism and the split's stability: the same import twice gives the same bytes;
# adding documents moves none of the others to another split.
case_deterministic() {
  own_ompi; fixture w || return
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null && cp outputs/data/corpus.h5 c1.h5
  sleep 1.1
  one import --config t.yaml --format jsonl --input w/jsonl >/dev/null
  cmp -s c1.h5 outputs/data/corpus.h5 && ok "the same import twice: byte-identical corpus.h5" || bad "the same import twice: byte-identical corpus.h5"
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
  local n=0 name fmt v path words err rc lines
  while IFS='|' read -r name fmt v path words; do
    err=$(timeout -k 2 20 "$DDPTOK" import --config t.yaml --set data.vocab_size="$v" --format "$fmt" --input "$path" 2>&1 >/dev/null); rc=$?
    lines=$(printf '%s\n' "$err" | grep -c .)
    n=$((n + 1))
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -qE -- "$words" <<<"$err"; then ok "damaged import input: $name" "— ${err#ddptok: error: }"
    else bad "damaged import input: $name" "— exit $rc, $lines line(s), expected exit 2 and one line matching /$words/: $err"; fi
  done < w/bad/cases.tsv
  [ "$n" -ge 30 ] && ok "damaged import inputs: at least 30 tried" "($n)" || bad "damaged import inputs: at least 30 tried" "— only $n"
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
    && ok "fortunes W=2 -> W=3: the same 12 windows as the uninterrupted run" || bad "fortunes W=2 -> W=3: the same 12 windows as the uninterrupted run"
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
    expect_rc "fortunes: the PyTorch witness, reading the original files itself, agrees on window 1" 0 \
      timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/torch/witness.py" grad "$C" outputs --bytes '\n%\n' "$F/fortunes" "$F/literature" "$F/riddles"
    echo "$OUT" | grep -E 'window 1|reference.h5|global-token' | sed 's/^/       /'
    expect_rc "fortunes, negative control: the same witness with the files in another order disagrees" 1 \
      timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/torch/witness.py" grad "$C" outputs --bytes '\n%\n' "$F/riddles" "$F/fortunes" "$F/literature"
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
