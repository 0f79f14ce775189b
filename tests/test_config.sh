# Bad input: one line naming the file/key and what was expected, exit code 2, no crash.
good() { cp "$CONFIGS/tiny.yaml" good.yaml; }  # the good config, as good.yaml here
bad_case() {  # NAME PATTERN ARGS...
  local name=$1 pat=$2; shift 2
  OUT=$("$DDPTOK" "$@" 2>&1); local rc=$?
  local lines; lines=$(grep -c . <<<"$OUT")
  if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -qE -- "$pat" <<<"$OUT"; then ok "bad input: $name"
  else bad "bad input: $name" "— exit $rc, $lines line(s), expected exit 2, one line matching /$pat/:"; echo "$OUT" | head -5 | sed 's/^/       /'; fi
}
case_yaml_errors() {
  printf 'seed: 1\ndata: {vocab_size: [1, 2}\n' > syntax.yaml
  bad_case "YAML syntax error names file and line" '^ddptok: error: syntax.yaml:2: YAML syntax error' prepare --config syntax.yaml
  printf 'seed: 1\nmodel:\n  hidden_size: 3\n' > unknown.yaml
  bad_case "unknown key names file, line and key" 'unknown.yaml:3: model.hidden_size: unknown key' prepare --config unknown.yaml
  printf 'model:\n  hidden: abc\n' > type.yaml
  bad_case "wrong type" "type.yaml:2: model.hidden: expected a positive integer, got 'abc'" prepare --config type.yaml
  bad_case "missing config file" 'nope.yaml: cannot read config file' prepare --config nope.yaml
  mkdir adir
  bad_case "a directory as config file" 'adir: cannot read config file: Is a directory' prepare --config adir
  printf 'seed: 1\n\x80\x00\xfe\xc3' > noise.yaml
  bad_case "binary noise as config file" '^ddptok: error: noise.yaml:2: YAML syntax error: invalid' prepare --config noise.yaml
  printf 'model:\n  hidden: 99999999999999999999\n' > huge.yaml
  bad_case "integer overflow" 'huge.yaml:2: model.hidden: expected a positive integer, got 99999999999999999999 \(out of range: the range is \[1, 2\^20\]\)' prepare --config huge.yaml
  printf 'seed: 1\nseed: 2\n' > dup.yaml
  bad_case "duplicate key" 'dup.yaml:2: seed: duplicate key' prepare --config dup.yaml
}
case_value_errors() {
  good
  bad_case "zero size" 'train.batch_size_per_rank: expected a positive integer, got 0' prepare --config good.yaml --set train.batch_size_per_rank=0
  bad_case "negative size" 'model.embed_dim: expected a positive integer, got -4' prepare --config good.yaml --set model.embed_dim=-4
  bad_case "dropout 1" 'model.dropout: expected a number in \[0, 1\)' prepare --config good.yaml --set model.dropout=1
  bad_case "dropout negative" 'model.dropout: expected a number in \[0, 1\)' prepare --config good.yaml --set model.dropout=-0.1
  bad_case "min_length > max_length" 'data.min_length \(30\) must not exceed data.max_length \(24\)' prepare --config good.yaml --set data.min_length=30
  bad_case "overlapping bands" 'band 1 \[15, 24\] overlaps band 0 \[8, 15\]' prepare --config good.yaml '--set=train.rank_bands=[[8, 15], [15, 24]]'
  bad_case "band leaving a rank empty" 'band 1 \[40, 50\] leaves rank 1 empty' prepare --config good.yaml '--set=train.rank_bands=[[8, 24], [40, 50]]'
  bad_case "bands vs world size" '1 bands for train.world_size 2' prepare --config good.yaml '--set=train.rank_bands=[[8, 24]]'
  bad_case "unknown normalization" 'train.normalization: expected one of global-token' prepare --config good.yaml --set train.normalization=mean
  bad_case "unknown optimizer" 'train.optimizer.name: expected one of sgd, adamw' prepare --config good.yaml --set train.optimizer.name=adam
  bad_case "betas out of range" 'train.optimizer.betas: expected \[beta1, beta2\], each a number in \[0, 1\)' prepare --config good.yaml '--set=train.optimizer.betas=[0.9, 1.0]'
  bad_case "betas not a pair" 'train.optimizer.betas: expected' prepare --config good.yaml --set train.optimizer.betas=0.9
  bad_case "unknown train.first_layer names the key and its values" "train.first_layer: expected one of dense, factored, got 'fact'" prepare --config good.yaml --set train.first_layer=fact
  bad_case "unknown train.overlap names the key and its values" "train.overlap: expected one of none, output-layer, blocks, got 'yes'" prepare --config good.yaml --set train.overlap=yes
}
case_command_line_errors() {
  good
  bad_case "unknown command" "unknown command 'frobnicate'" frobnicate --config good.yaml
  bad_case "unknown --set key" "unknown key 'model.depth'" prepare --config good.yaml --set model.depth=3
  bad_case "--set without =" 'expected KEY=VALUE' prepare --config good.yaml --set model.hidden
  bad_case "unknown option" "unknown option '--fast'" train --config good.yaml --fast
  bad_case "missing --config" '--config FILE is required' prepare
}
# "Did you mean" across sections and for other trainers' names (config.c's synonym table
# beside the key table); the control: a word close to no key gets no suggestion.
case_set_key_suggestions() {
  good
  local c key want
  for c in "train.learning_rate train.optimizer.lr" "learning_rate train.optimizer.lr" "model.lr train.optimizer.lr" \
           "train.batch_size train.batch_size_per_rank" "train.steps train.updates" "train.momentum train.optimizer.momentum" \
           "train.momentun train.optimizer.momentum" "data.seed seed" "train.hidden model.hidden" "train.gradient_accumulation_steps train.accumulation"; do
    read -r key want <<<"$c"
    bad_case "--set $key suggests $want" "^ddptok: error: --set $key=1: unknown key '$key' \(did you mean '$want'\?\)$" prepare --config good.yaml --set "$key=1"
  done
  bad_case "--set epochs suggests train.epochs" "unknown key 'epochs' \(did you mean 'train.epochs'\?\)$" prepare --config good.yaml --set epochs=3
  bad_case "train.epochs under the bands sampler is refused, naming both keys" "train.epochs \(3\) needs train.sampler: global" prepare --config good.yaml --set train.epochs=3
  printf 'train:\n  learning_rate: 0.1\n' > lr.yaml
  bad_case "learning_rate in a config file suggests train.optimizer.lr" "^ddptok: error: lr.yaml:2: train.learning_rate: unknown key \(did you mean 'train.optimizer.lr'\?\)$" prepare --config lr.yaml
  bad_case "a key close to no key gets no suggestion (control)" "unknown key 'train.frobnicate'$" prepare --config good.yaml --set train.frobnicate=1
}
# The backend and what it can run are checked before the GPUs are counted: --check refuses
# what a run would (it used to say ok), and a run on a machine without a GPU names the first
# layer rather than the missing GPU. Controls: the same lines the backend can run pass --check.
case_backend_check() {
  good
  local w1=(--config good.yaml --set train.world_size=1 --set train.rank_bands=auto) how
  if "$DDPTOK" --version | grep -q 'CUDA backend: built in'; then
    for how in --check ""; do
      bad_case "train.first_layer factored with --backend cuda ${how:-(a run)}" '^ddptok: error: good.yaml: train.first_layer factored: the cuda backend computes only the dense first layer \(use --backend cpu' \
        $how train "${w1[@]}" --backend cuda --set train.first_layer=factored
    done
    expect_rc "--check --backend cuda with the dense first layer passes (the control)" 0 "$DDPTOK" --check train "${w1[@]}" --backend cuda
  else
    bad_case "--check --backend cuda in a build without it" 'built without the CUDA backend' --check train "${w1[@]}" --backend cuda
  fi
  expect_rc "--check --backend cpu with the factored first layer passes (the control)" 0 "$DDPTOK" --check train "${w1[@]}" --backend cpu --set train.first_layer=factored
  bad_case "--check: an unknown --backend" '^ddptok: error: --backend gpu: expected cpu or cuda$' --check train "${w1[@]}" --backend gpu
  bad_case "--check: an unknown --comm" '^ddptok: error: --comm gloo: expected mpi or nccl$' --check train "${w1[@]}" --comm gloo
  bad_case "--check: --comm nccl with --backend cpu" '^ddptok: error: --comm nccl needs --backend cuda' --check train "${w1[@]}" --comm nccl --backend cpu
}
# A good override is taken (and validated like the file): auto bands for 3 ranks.
case_set_overrides() {
  good
  expect_rc "--set overrides resolve (auto bands, W = 3)" 0 "$DDPTOK" prepare --config good.yaml --set train.world_size=3 --set train.rank_bands=auto
  expect_grep "--set overrides resolve: auto bands cover [8, 24] in 3 bands" 'rank 0: band \[8, 12\].*' "$OUT"
}
# A file's bad keys, all of them in the one line (only the first was reported): each with its
# line; negative control: a file with one bad key says that one, as before.
case_all_bad_keys() {
  printf 'train:\n  lr: 0.1\n  updates: 0\nmodel:\n  hiden: 3\nseed: x\n' > bad.yaml
  expect_rc "a file with four bad keys" 2 "$DDPTOK" --check train --config bad.yaml
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && grep -q "bad.yaml:2: train.lr: unknown key (did you mean 'train.optimizer.lr'?); bad.yaml:3: train.updates: expected a positive integer, got 0 (out of range: the range is \[1, 2^24\]); bad.yaml:5: model.hiden: unknown key (did you mean 'model.hidden'?); bad.yaml:6: seed: expected an integer in \[0, 2^32), got 'x' (4 bad keys in bad.yaml)$" <<<"$OUT" \
    && ok "a file's four bad keys: one line naming each with its line" || bad "a file's four bad keys: one line naming each with its line" "— $OUT"
  printf 'train:\n  lr: 0.1\n' > one.yaml
  expect_rc "negative control: a file with one bad key" 2 "$DDPTOK" --check train --config one.yaml
  expect_grep "negative control: one bad key, its line alone" "^ddptok: error: one.yaml:2: train.lr: unknown key \(did you mean 'train.optimizer.lr'\?\)$" "$OUT"
}
# The number of ranks must match train.world_size: same one-line error on every rank.
case_world_size_mismatch() {
  good
  "$DDPTOK" prepare --config good.yaml >/dev/null
  local n rc
  OUT=$(ddp 3 train --config good.yaml 2>&1); rc=$?
  n=$(grep -c '^ddptok: ranks 0-2: error: good.yaml: train.world_size is 2 but 3 ranks were started: run `[^`]* -np 2 train --config good.yaml`, or set train.world_size: auto (the ranks launched) with train.rank_bands: auto (--set train.world_size=auto --set train.rank_bands=auto)$' <<<"$OUT")
  [ $rc -eq 2 ] && [ "$n" -eq 1 ] && [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] \
    && ok "world size mismatch: exit 2, the error once for ranks 0-2, the hint naming both --set" || { bad "world size mismatch: exit 2, the error once for ranks 0-2, the hint naming both --set" "— exit $rc, $n lines"; echo "$OUT" | head; }
}
case_single_process_np2() {
  good
  local rc
  OUT=$(ddp 2 prepare --config good.yaml 2>&1); rc=$?
  [ $rc -eq 2 ] && grep -q 'runs in one process' <<<"$OUT" && ok "single-process command (prepare) refuses mpirun -np 2" || bad "single-process command (prepare) refuses mpirun -np 2" "— exit $rc"
}
# The data lock is derived from the key table: each key changed alone changes the lock
# exactly when the table marks it as deciding the data (both samplers); tiny.yaml's locks
# pinned (format v1); the corpus bytes alone (negative control) miss some lock keys.
case_data_lock_table() {
  local rc
  OUT=$(cd "$ROOT" && build/test_data_lock 2>&1); rc=$?  # it reads configs/ relative to the checkout
  [ $rc -eq 0 ] && ok "data lock follows the key table" "($(tail -1 <<<"$OUT"))" || { bad "data lock follows the key table" "— exit $rc"; echo "$OUT" | tail -8; }
}
