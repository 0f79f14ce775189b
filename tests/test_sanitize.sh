# The commands and their failure paths under AddressSanitizer + UBSan (build/ddptok-asan,
# CPU-only): every exit code as expected and not one sanitizer report. Negative control: a
# deliberate heap overflow built with the same flags must be reported. What a command
# reads (prepared data, a reference, checkpoints) comes from fixtures that the plain binary
# builds: every command checked here runs under the sanitizers itself.
ASAN="$ROOT/build/ddptok-asan"
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cfg="$CONFIGS/tiny.yaml"
w3=(--set train.world_size=3 --set train.rank_bands=auto --set train.loss_unit=sequence --set paths.outputs=o3)
fixture_prepared() { one prepare --config "$cfg" >/dev/null; }
fixture_ref() { fixture prepared && one reference --config "$cfg" >/dev/null; }
fixture_trained() { fixture prepared && ddp 2 train --config "$cfg" >/dev/null 2>&1; }
# the whole protocol: parity, check-empty, the interrupted, continuous and resumed runs
fixture_protocol() {
  fixture ref && ddp 2 parity --config "$cfg" >/dev/null 2>&1 && ddp 2 check-empty --config "$cfg" >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" >/dev/null 2>&1 && ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" --resume latest >/dev/null 2>&1
}
# ... and a continuous run with the factored first layer (fact/continuous)
fixture_factored() { fixture protocol && ddp 2 train --config "$cfg" --continuous --set train.first_layer=factored --set paths.artifacts=fact >/dev/null 2>&1; }
fixture_w3() { one prepare --config "$cfg" "${w3[@]}" >/dev/null; }
fixture_w3_ref() { fixture w3 && one reference --config "$cfg" "${w3[@]}" >/dev/null; }

san() {  # NAME RC CMD...: runs CMD, expects exit RC and no sanitizer report
  local name=$1 want=$2; shift 2
  OUT=$("$@" 2>&1); local rc=$?
  if grep -qE 'Sanitizer|runtime error:' <<<"$OUT"; then
    bad "asan: $name" "— sanitizer report:"; grep -E -A6 'ERROR|runtime error:' <<<"$OUT" | head -12
  elif [ $rc -ne "$want" ]; then bad "asan: $name" "— exit $rc, expected $want"; echo "$OUT" | tail -4
  else ok "asan: $name" "(exit $rc)"; fi
}
run1() { timeout -k 5 300 "$ASAN" "$@"; }
runW() { local np=$1; shift; timeout -k 5 300 mpirun -np "$np" "$ASAN" "$@"; }

case_canary() {
  mpicc -fsanitize=address,undefined -g -o canary "$ROOT/tests/asan_canary.c" 2>/dev/null
  ./canary > canary.txt 2>&1
  grep -q 'AddressSanitizer: heap-buffer-overflow' canary.txt && ok "negative control: the sanitizer reports a planted heap overflow" \
    || { bad "negative control: the sanitizer reports a planted heap overflow" "— no report:"; head -3 canary.txt; }
}
case_train_before_prepare() { san "train before prepare" 2 runW 2 train --config "$cfg"; }
case_prepare() { san "prepare" 0 run1 prepare --config "$cfg"; }
case_reference() { fixture prepared || return; san "reference" 0 run1 reference --config "$cfg"; }
case_check_loss() { fixture ref || return; san "check-loss" 0 run1 check-loss --config "$cfg"; }
case_parity() { fixture ref || return; san "parity W=2" 0 runW 2 parity --config "$cfg"; }
case_check_empty() { fixture ref || return; san "check-empty W=2" 0 runW 2 check-empty --config "$cfg"; }
case_train() { fixture prepared || return; san "train (interrupted)" 0 runW 2 train --config "$cfg"; }
case_train_continuous() { fixture prepared || return; san "train --continuous" 0 runW 2 train --config "$cfg" --continuous; }
case_train_resume() { fixture trained || return; san "train --resume latest" 0 runW 2 train --config "$cfg" --resume latest; }
case_evaluate() { fixture protocol || return; san "evaluate" 0 run1 evaluate --config "$cfg"; }
case_evaluate_w3() { fixture protocol || return; san "evaluate under 3 ranks" 0 runW 3 evaluate --config "$cfg" --split validation; }
case_train_eval_every() { fixture prepared || return; san "train --continuous, train.eval_every=4" 0 runW 2 train --config "$cfg" --continuous --set train.eval_every=4; }
case_evaluate_protocol() { fixture protocol || return; san "evaluate --protocol" 0 run1 evaluate --config "$cfg" --protocol; }
case_export() { fixture protocol || return; san "export" 0 run1 export --config "$cfg"; }
case_parity_factored() { fixture ref || return; san "parity W=2, factored first layer" 0 runW 2 parity --config "$cfg" --set train.first_layer=factored; }
case_train_factored() {
  fixture prepared || return
  san "train --continuous, factored first layer" 0 runW 2 train --config "$cfg" --continuous --set train.first_layer=factored --set paths.artifacts=fact
}
case_evaluate_factored() {
  fixture factored || return
  san "evaluate, factored first layer" 0 run1 evaluate --config "$cfg" --checkpoint fact/continuous/step-0012 --set train.first_layer=factored
}
case_check_checkpoints() { fixture factored || return; san "check-checkpoints" 0 run1 check-checkpoints --config "$cfg"; }
case_check_env() { san "check-env W=2" 0 runW 2 check-env --config "$cfg"; }
case_exercise() { san "exercise" 0 run1 exercise --config "$CONFIGS/exercise.yaml"; }
case_resume_missing_dir() { fixture prepared || return; san "--resume of a directory that does not exist" 2 runW 2 train --config "$cfg" --resume no/such; }
case_config_differs() {
  fixture prepared || return
  san "a config that differs on rank 1" 2 timeout -k 5 300 mpirun -np 2 sh -c "exec '$ASAN' train --config '$cfg' --set train.optimizer.lr=0.\$((OMPI_COMM_WORLD_RANK + 1))"
}
case_log_unwritable() {
  fixture protocol || return
  rm -f outputs/logs/continuous/rank-1.log; mkdir outputs/logs/continuous/rank-1.log
  san "rank 1 cannot write its log" 2 runW 2 train --config "$cfg" --continuous --fresh
}
case_prepare_w3() { san "prepare W=3" 0 run1 prepare --config "$cfg" "${w3[@]}"; }
case_reference_w3() { fixture w3 || return; san "reference W=3" 0 run1 reference --config "$cfg" "${w3[@]}"; }
case_parity_w3() { fixture w3_ref || return; san "parity W=3, sequence unit" 0 runW 3 parity --config "$cfg" "${w3[@]}"; }
case_truncated_corpus() {
  fixture w3 || return
  san "a truncated corpus" 2 sh -c "head -c 1000 o3/data/corpus.h5 > c && mv c o3/data/corpus.h5 && exec '$ASAN' reference --config '$cfg' ${w3[*]}"
}

# import: each reader on the independent writer's valid files (tests/import_witness.py make)
# and on every damaged file of its `corrupt` (exit 2 each, as test_import.sh expects).
import_yaml() {
  cat > t.yaml <<'YAML'
seed: 5
data: {vocab_size: 301, min_length: 4, max_length: 32, source: imported, import: {split_seed: 3, validation_fraction: 0.2, test_fraction: 0.2}}
model: {context: 3, embed_dim: 4, hidden: 8, dropout: 0.0}
train: {world_size: 2, rank_bands: auto, batch_size_per_rank: 2, accumulation: 1, updates: 3, interrupt_at: 0}
YAML
}
fixture_import_w() {
  import_yaml && timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/import_witness.py" make w >/dev/null \
    && timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/import_witness.py" corrupt w >/dev/null
}
san_import() {  # NAME VOCAB INPUT OPTIONS...: one valid import under the sanitizers
  local name=$1 v=$2 in=$3; shift 3
  fixture import_w || return
  san "import $name" 0 run1 import --config t.yaml --set data.vocab_size="$v" "$@" --input "$in"
}
case_import_bytes() { san_import "--format bytes" 257 w/bytes --format bytes --delimiter '\n%\n'; }
case_import_llmc() { san_import "--format llmc (v1, uint16)" 301 w/llmc --format llmc --eot 299; }
case_import_llmc7() { san_import "--format llmc (v7, uint32)" 70002 w/llmc7 --format llmc --eot 70000; }
case_import_nanogpt() { san_import "--format nanogpt" 301 w/nanogpt --format nanogpt --eot 299; }
case_import_megatron() { san_import "--format megatron" 301 w/megatron --format megatron; }
case_import_jsonl() { san_import "--format jsonl" 301 w/jsonl --format jsonl; }
case_import_jsonl_text() { san_import "--format jsonl-text" 257 w/jsonl-text --format jsonl-text; }
case_import_damaged() {
  fixture import_w || return
  local n=0 name fmt v path words
  while IFS='|' read -r name fmt v path words; do
    san "import, damaged: $name" 2 timeout -k 2 60 "$ASAN" import --config t.yaml --set data.vocab_size="$v" --format "$fmt" --input "$path"
    n=$((n + 1))
  done < w/bad/cases.tsv
  [ "$n" -ge 30 ] && ok "asan: damaged import inputs: at least 30 tried" "($n)" || bad "asan: damaged import inputs: at least 30 tried" "— only $n"
}
