# evaluation: a model's loss over a whole split, exact for any number of ranks (evaluate
# under 1, 2, 3 ranks; train.eval_every during training), docs/commands.md "evaluate".
# The split is cut into chunks of 16 sequences whatever W is; each chunk is evaluated by
# one rank and the chunk sums are added in chunk order, so the numbers are bit-identical
# for every W. The denominator is checked against an independent count of the label rule's
# positions (from corpus.h5 alone). Each check has a negative control: the tail dropped
# (DDPTOK_TEST_EVAL_DROP_TAIL), padding in the denominator (DDPTOK_TEST_EVAL_PADDED), the
# ranks' own sums carried as float32 and added (DDPTOK_TEST_EVAL_RANK_SUMS), an evaluation that
# draws from the trainer's dropout stream (DDPTOK_TEST_EVAL_DISTURB).
cfg="$CONFIGS/tiny.yaml"
# 300 validation and 1000 test sequences (63 chunks, 1000 = 3·333 + 1), a label rule with
# a prefix, an ignored token and a cap, so padding and unlabelled positions are many.
E=(--config "$cfg" --set data.splits.validation=300 --set data.splits.test=1000 --set data.unsupervised_prefix=3
   --set data.ignore_token=4 --set data.max_labels=12)
fixture_ev_trained() { one prepare "${E[@]}" >/dev/null && ddp 2 train "${E[@]}" --continuous --set train.eval_every=0 >/dev/null 2>&1; }
CK=artifacts/continuous/step-0012

# supervised SPLIT: the label rule's positions of a split of outputs/data/corpus.h5, counted
# here (t >= 3, token != 4, at most 12 per sequence), and its sequences.
supervised() {
  /usr/bin/python3 - "$1" <<'PY'
import sys, h5py, numpy as np
with h5py.File("outputs/data/corpus.h5") as f:
    tok, off, split = f["tokens"][()], f["offsets"][()], f["split"][()]
s = {"validation": 1, "test": 2}[sys.argv[1]]
ids = np.nonzero(split == s)[0]
n = sum(min(sum(1 for t in range(3, off[i + 1] - off[i]) if tok[off[i] + t] != 4), 12) for i in ids)
print(n, len(ids))
PY
}
# ev_json NP [ENV=VALUE...] -- ARGS...: evaluate under NP ranks; prints the split's loss (all
# 17 digits), tokens, sequences and token accuracy from outputs/evaluate.json.
ev_json() {
  local np=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  rm -f outputs/evaluate.json
  if [ "$np" = 1 ]; then env "${envs[@]}" "$DDPTOK" evaluate "${E[@]}" --checkpoint "$CK" "$@" >/dev/null 2>&1
  else env "${envs[@]}" timeout -k 5 120 mpirun -np "$np" "$DDPTOK" evaluate "${E[@]}" --checkpoint "$CK" "$@" >/dev/null 2>&1; fi \
    || { echo "exit $?"; return; }
  json outputs/evaluate.json "' '.join(repr(v[k]) for v in [j.get('validation') or j['test']] for k in ('loss', 'tokens', 'sequences', 'token_accuracy'))"
}
# same_for_w SPLIT [ENV=VALUE...]: 0 when evaluate under 1, 2 and 3 ranks gives the same
# bits and the independent count of supervised tokens and sequences; says what it saw.
same_for_w() {
  local split=$1; shift
  local a b c want
  a=$(ev_json 1 "$@" -- --split "$split") b=$(ev_json 2 "$@" -- --split "$split") c=$(ev_json 3 "$@" -- --split "$split")
  want=$(supervised "$split")
  echo "W=1: $a; W=2: $b; W=3: $c; counted: $want"
  [ "$a" = "$b" ] && [ "$a" = "$c" ] && [ "$(cut -d' ' -f2,3 <<<"$a")" = "$want" ]
}

case_split_exact_for_any_w() {
  fixture ev_trained || return
  local split out
  for split in test validation; do
    out=$(same_for_w "$split") && ok "evaluate --split $split: the same loss bits for W = 1, 2, 3, the label rule's tokens counted independently" "— $out" \
      || bad "evaluate --split $split: the same loss bits for W = 1, 2, 3, the label rule's tokens counted independently" "— $out"
  done
  out=$(same_for_w test DDPTOK_TEST_EVAL_DROP_TAIL=1) \
    && bad "negative control: a dropped tail (W·floor(n/W) sequences) is caught" "— it passed: $out" \
    || ok "negative control: a dropped tail (W·floor(n/W) sequences) is caught" "— $out"
  out=$(same_for_w test DDPTOK_TEST_EVAL_PADDED=1) \
    && bad "negative control: padded positions in the denominator are caught" "— it passed: $out" \
    || ok "negative control: padded positions in the denominator are caught" "— $out"
  out=$(same_for_w test DDPTOK_TEST_EVAL_RANK_SUMS=1) \
    && bad "negative control: per-rank sums carried as float32 are caught (not bit-identical across W)" "— it passed: $out" \
    || ok "negative control: per-rank sums carried as float32 are caught (not bit-identical across W)" "— $out"
}

# The printed metrics and evaluate.json: bits/token = nats/token / ln 2; no bits/byte for
# synthetic data; the same lines under 3 ranks as in one process.
case_metrics_printed() {
  fixture ev_trained || return
  local one3
  expect_rc "evaluate (one process)" 0 one evaluate "${E[@]}" --checkpoint "$CK"
  local one1=$OUT
  expect_grep "evaluate prints bits/token (no bits/byte for synthetic data)" '^  [0-9]+\.[0-9]{5} bits/token$' "$OUT"
  [ "$(json outputs/evaluate.json "abs(j['test']['bits_per_token'] * __import__('math').log(2) - j['test']['loss']) <= 1e-15 * j['test']['loss'], j['test']['bits_per_byte']")" = "True None" ] \
    && ok "evaluate.json: bits_per_token = loss / ln 2, bits_per_byte null (synthetic data)" \
    || bad "evaluate.json: bits_per_token = loss / ln 2, bits_per_byte null (synthetic data)" "— $(cat outputs/evaluate.json)"
  one3=$(timeout -k 5 120 mpirun -np 3 "$DDPTOK" evaluate "${E[@]}" --checkpoint "$CK" 2>&1)
  [ "$one3" = "$one1" ] && ok "evaluate under 3 ranks prints what one process prints, once" \
    || bad "evaluate under 3 ranks prints what one process prints, once" "— $(diff <(echo "$one1") <(echo "$one3") | head -6)"
  expect_rc "evaluate under 2 ranks of a missing checkpoint: refused" 2 ddp 2 evaluate "${E[@]}" --checkpoint artifacts/nope
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && expect_grep "evaluate under 2 ranks of a missing checkpoint: one line" \
    '^ddptok: (ranks 0-1: )?error: evaluate --checkpoint artifacts/nope: no checkpoint there' "$OUT" \
    || bad "evaluate under 2 ranks of a missing checkpoint: one line" "— $OUT"
  expect_rc "evaluate --split with --protocol: refused" 2 one evaluate "${E[@]}" --protocol --split validation
  expect_grep "evaluate --split with --protocol: one line naming both" '^ddptok: error: evaluate --split validation: not with --protocol' "$OUT"
}

# train.eval_every: the validation split evaluated every 5 updates and at the last; the
# trajectory bit for bit as with it off; each value is evaluate --split validation's of
# that step's model.
case_train_eval_every() {
  fixture ev_trained || return
  local d
  expect_rc "train --continuous with train.eval_every=5" 0 ddp 2 train "${E[@]}" --continuous --set train.eval_every=5 \
    --set paths.artifacts=on --set train.checkpoint_every=5
  local printed=$OUT
  [ "$(grep -cE '^  step +(5|10|12)/12  loss .*  val [0-9.]+ \([0-9.]+ bits/token\)(  best)?$' <<<"$printed")" -eq 3 ] \
    && [ "$(grep -c '  val ' <<<"$printed")" -eq 3 ] && ok "progress lines of steps 5, 10 and 12 carry the validation loss and bits/token" \
    || bad "progress lines of steps 5, 10 and 12 carry the validation loss and bits/token" "— $(grep step <<<"$printed" | head -12)"
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" "$CK" on/continuous/step-0012) \
    && ok "train.eval_every=5: the step-12 model and optimizer state bit-identical to eval off" "($d)" \
    || bad "train.eval_every=5: the step-12 model and optimizer state bit-identical to eval off" "— $d"
  local want; want=$(supervised validation)
  /usr/bin/python3 - outputs/train/continuous.jsonl outputs/train/continuous.*.jsonl "$want" <<'PY' \
    && ok "JSONL: the validation entry at steps 5, 10, 12 only (loss, bits/token, counted tokens), every training loss as with eval off" \
    || bad "JSONL: the validation entry at steps 5, 10, 12 only (loss, bits/token, counted tokens), every training loss as with eval off"
import json, math, sys
on, off = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
tokens, seqs = map(int, sys.argv[3].split())
assert [l["loss"] for l in on] == [l["loss"] for l in off], "training losses differ"
assert [l["step"] for l in on if "validation" in l] == [5, 10, 12], [l["step"] for l in on if "validation" in l]
assert not any("validation" in l for l in off)
for l in on:
    v = l.get("validation")
    if v:
        assert v["tokens"] == tokens and v["sequences"] == seqs, v
        assert abs(v["bits_per_token"] - v["loss"] / math.log(2)) < 1e-8 * v["loss"] and v["bits_per_byte"] is None, v
assert on[4]["validation"]["loss"] > on[11]["validation"]["loss"], "validation loss did not fall"
PY
  # Each value is what evaluate --split validation says of that step's checkpoint (W = 3 here).
  local step ok_steps=""
  for step in 5 10 12; do
    local v e
    v=$(/usr/bin/python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][$step - 1]['validation']['loss'])" outputs/train/continuous.jsonl)
    e=$(CK=on/continuous/step-$(printf %04d $step); ev_json 3 -- --split validation | cut -d' ' -f1)
    [ "$(/usr/bin/python3 -c "print(float('%.9g' % $e) == $v)")" = True ] && ok_steps+="$step "
  done
  [ "$ok_steps" = "5 10 12 " ] && ok "the logged validation loss of steps 5, 10, 12 is evaluate --split validation's (W = 3) of that checkpoint" \
    || bad "the logged validation loss of steps 5, 10, 12 is evaluate --split validation's (W = 3) of that checkpoint" "— agree at: $ok_steps"
  # Negative control: an evaluation that draws from the trainer's dropout stream.
  DDPTOK_TEST_EVAL_DISTURB=1 ddp 2 train "${E[@]}" --continuous --set train.eval_every=5 --set paths.artifacts=dist >/dev/null 2>&1
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" "$CK" dist/continuous/step-0012) \
    && bad "negative control: an evaluation that advances the dropout stream changes the trajectory, and the check sees it" "— it passed ($d)" \
    || ok "negative control: an evaluation that advances the dropout stream changes the trajectory, and the check sees it" "($d)"
}

# train.eval_every without a validation split: one line naming the key, nothing trained;
# the same config with eval off trains.
case_eval_every_empty_validation() {
  fixture prepared_noval || return
  local v=(--config "$cfg" --set data.splits.validation=0)
  expect_rc "train.eval_every=4 with an empty validation split: refused" 2 ddp 2 train "${v[@]}" --set train.eval_every=4
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && expect_grep "train.eval_every with an empty validation split: one line naming the key" \
    'train\.eval_every is 4 but the validation split is empty' "$OUT" || bad "train.eval_every with an empty validation split: one line naming the key" "— $OUT"
  [ ! -e artifacts/checkpoints ] && ok "train.eval_every refused: no checkpoint written" || bad "train.eval_every refused: no checkpoint written"
  expect_rc "control: the same config with train.eval_every=0 trains" 0 ddp 2 train "${v[@]}"
}
# A split without a supervised token has no loss: evaluate refuses it (exit 2, one line naming
# the split, the corpus and the fix, nothing written) on 1 and 2 ranks, as --protocol does; it
# printed "test loss 0.00000, accuracy 0.00 %" with exit 0 (0/0 written as 0). Negative
# control: the same model on the validation split it does have is scored (exit 0, a loss > 0).
T0=(--config "$cfg" --set data.splits.test=0)
fixture_no_test_split() { one prepare "${T0[@]}" >/dev/null && ddp 2 train "${T0[@]}" --continuous >/dev/null 2>&1; }
case_empty_split_refused() {
  fixture no_test_split || return
  local np
  for np in 1 2; do
    rm -f outputs/evaluate.json
    if [ $np = 1 ]; then expect_rc "evaluate of an empty test split: refused (1 rank)" 2 one evaluate "${T0[@]}" --checkpoint "$CK"
    else expect_rc "evaluate of an empty test split: refused (2 ranks)" 2 ddp 2 evaluate "${T0[@]}" --checkpoint "$CK"; fi
    [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && grep -q "^ddptok: \(ranks 0-1: \)\?error: evaluate: the test split of outputs/data/corpus.h5 has no supervised token (0 sequences): there is no test loss to report; score the validation split: run \`.* evaluate --config .*tiny.yaml --set data.splits.test=0 --checkpoint $CK --split validation\`; or set data.splits.test above 0 and prepare again$" <<<"$OUT" \
      && ! grep -q '^  test loss' <<<"$OUT" && [ ! -e outputs/evaluate.json ] \
      && ok "evaluate of an empty test split ($np rank(s)): one line naming the split and the fix, no loss printed, nothing written" \
      || { bad "evaluate of an empty test split ($np rank(s)): one line naming the split and the fix, no loss printed, nothing written"; echo "$OUT" | head -3; }
  done
  local hint; hint=$(sed -n 's/.*score the validation split: run `\([^`]*\)`; or set data.splits.test.*$/\1/p' <<<"$OUT")
  expect_rc "negative control: the printed --split validation hint scores the split there is" 0 bash -c "$hint"
  expect_grep "negative control: the validation split's loss is a number above 0" '^  validation loss [1-9][0-9.]* per token' "$OUT"
  mkdir -p artifacts/checkpoints && cp -r "$CK" artifacts/checkpoints/  # the step-U model --protocol judges
  expect_rc "evaluate --protocol on an empty test split: refused too" 2 one evaluate "${T0[@]}" --protocol
  expect_grep "evaluate --protocol on an empty test split: the same line" 'error: evaluate: the test split of outputs/data/corpus.h5 has no supervised token \(0 sequences\): there is no test loss to report; set data.splits.test above 0 and prepare again$' "$OUT"
}
fixture_prepared_noval() { one prepare --config "$cfg" --set data.splits.validation=0 >/dev/null; }

# Byte-level data (import --format bytes): bits/byte = bits/token (one supervised byte per
# token); the same bytes imported as token ids (--format jsonl) have no bits/byte.
fixture_bytes() {
  /usr/bin/python3 - <<'PY' || return 1
import json, random
r = random.Random(7)
words = ["the", "cat", "sat", "on", "a", "mat", "and", "dog", "ran", "far", "away", "home"]
lines = [" ".join(r.choice(words) for _ in range(r.randint(4, 12))) for _ in range(400)]
open("text.txt", "w").write("\n".join(lines) + "\n")
open("ids.jsonl", "w").write("".join(json.dumps(list(l.encode())) + "\n" for l in lines))
open("b.yaml", "w").write("""seed: 5
data:
  vocab_size: 257
  min_length: 8
  max_length: 64
  source: imported
  import: {split_seed: 3, validation_fraction: 0.2, test_fraction: 0.2}
model: {context: 4, embed_dim: 8, hidden: 32, dropout: 0.0}
train: {world_size: 2, rank_bands: auto, batch_size_per_rank: 4, accumulation: 1, updates: 8, interrupt_at: 0}
""")
PY
  one import --config b.yaml --format bytes --delimiter '\n' --input text.txt >/dev/null \
    && ddp 2 train --config b.yaml --set train.eval_every=4 >/dev/null 2>&1
}
case_bytes_bits_per_byte() {
  fixture bytes || return
  expect_rc "byte-level: evaluate" 0 one evaluate --config b.yaml
  expect_grep "byte-level: evaluate prints bits/token and bits/byte" '^  [0-9.]+ bits/token, [0-9.]+ bits/byte \(byte-level data\)$' "$OUT"
  [ "$(json outputs/evaluate.json "j['test']['bits_per_byte'] == j['test']['bits_per_token'] > 0")" = True ] \
    && ok "byte-level: evaluate.json bits_per_byte = bits_per_token" || bad "byte-level: evaluate.json bits_per_byte = bits_per_token" "— $(cat outputs/evaluate.json)"
  [ "$(/usr/bin/python3 -c "import json; l=[json.loads(x) for x in open('outputs/train/interrupted.jsonl')]; print([x['step'] for x in l if (x.get('validation') or {}).get('bits_per_byte')])")" = "[4, 8]" ] \
    && ok "byte-level: the JSONL's validation entries at steps 4 and 8 carry bits/byte" \
    || bad "byte-level: the JSONL's validation entries at steps 4 and 8 carry bits/byte" "— $(grep -o '"validation".*' outputs/train/interrupted.jsonl | head -2)"
  # Control: the same bytes as token ids (jsonl) are not byte-level for ddptok.
  rm -rf outputs artifacts
  one import --config b.yaml --format jsonl --input ids.jsonl >/dev/null && ddp 2 train --config b.yaml >/dev/null 2>&1
  expect_rc "token ids (jsonl): evaluate" 0 one evaluate --config b.yaml
  [ "$(json outputs/evaluate.json "j['test']['bits_per_byte']")" = None ] && ! grep -q 'bits/byte' <<<"$OUT" \
    && ok "control: the same bytes imported as token ids (jsonl) have no bits/byte" \
    || bad "control: the same bytes imported as token ids (jsonl) have no bits/byte" "— $(cat outputs/evaluate.json)"
}

# evaluate --protocol under 3 ranks: the same report.json, bit for bit, and the same exit
# code on every rank as one process; with a resumed model that differs (the negative
# control of the resume check), exit 1 under 3 ranks too.
fixture_protocol() {
  prep_ref "$cfg" && ddp 2 parity --config "$cfg" >/dev/null 2>&1 && ddp 2 check-empty --config "$cfg" >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" >/dev/null 2>&1 && ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
}
case_protocol_under_three_ranks() {
  fixture protocol || return
  expect_rc "evaluate --protocol, one process" 0 one evaluate --config "$cfg" --protocol
  local one1=$OUT
  cp outputs/report.json one.json
  expect_rc "evaluate --protocol under 3 ranks" 0 ddp 3 evaluate --config "$cfg" --protocol
  cmp -s one.json outputs/report.json && [ "$OUT" = "$one1" ] \
    && ok "evaluate --protocol under 3 ranks: report.json and the printed verdict identical to one process's" \
    || bad "evaluate --protocol under 3 ranks: report.json and the printed verdict identical to one process's" "— $(diff one.json outputs/report.json | head -4)"
  rm -rf artifacts/checkpoints/step-0012
  DDPTOK_TEST_RESUME_SKIP=momentum ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
  expect_rc "negative control: a resumed model that differs fails evaluate --protocol under 3 ranks" 1 ddp 3 evaluate --config "$cfg" --protocol
}

# train.eval_batch: a chunk of 16 sequences evaluated in passes of fewer (the memory of GPT-2
# small's context, docs/config.md). A GPT (attention within a sequence only) at 5 and 1
# sequences per pass against the chunk in one pass, under 1 and 2 ranks: the same tokens and
# hits, the loss within 1e-7 relative (float32's rounding: OpenBLAS picks its GEMM blocking by
# the rows, so a logit's float sum is grouped differently in a pass of 1 or 5 sequences than of
# 16, and the chunk's double sum is regrouped pass by pass; measured 2.8e-10 here). Control: a loop that evaluates only each chunk's first pass
# (DDPTOK_TEST_EVAL_SKIP_PASS) is rejected by the same comparison.
# (gpt-tiny's cosine warms up for 10 updates: the 4-update runs here need a shorter warmup; and
# on the bands sampler at B 4, as it shipped before the global one: there dropout is a stream an
# evaluation could advance, which the control below needs; the global sampler keys it by
# sequence and position)
EVAL_GPT=(--config "$CONFIGS/gpt-tiny.yaml" --set data.splits.validation=37 --set data.splits.test=45 --set train.warmup_updates=1
          --set train.sampler=bands --set train.batch_size_per_rank=4)
fixture_ev_gpt() { one prepare "${EVAL_GPT[@]}" >/dev/null && ddp 2 train "${EVAL_GPT[@]}" --continuous --set train.updates=4 --set train.interrupt_at=0 --set train.eval_every=0 >/dev/null 2>&1; }
# gpt_ev NP [ENV=VALUE...] -- ARGS...: the test split's loss (17 digits), tokens, accuracy.
gpt_ev() {
  local np=$1; shift
  local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  rm -f outputs/evaluate.json
  if [ "$np" = 1 ]; then env "${envs[@]}" "$DDPTOK" evaluate "${EVAL_GPT[@]}" --checkpoint artifacts/continuous/step-0004 "$@" >/dev/null 2>&1
  else env "${envs[@]}" timeout -k 5 120 mpirun -np "$np" "$DDPTOK" evaluate "${EVAL_GPT[@]}" --checkpoint artifacts/continuous/step-0004 "$@" >/dev/null 2>&1; fi \
    || { echo "exit $?"; return; }
  json outputs/evaluate.json "' '.join(repr(j['test'][k]) for k in ('loss', 'tokens', 'token_accuracy'))"
}
# eval_agree A B: 0 when tokens and accuracy are equal and the losses within 1e-7 relative.
eval_agree() { /usr/bin/python3 -c "import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); sys.exit(not (len(a) == len(b) == 3 and a[1:] == b[1:] and abs(float(a[0]) - float(b[0])) <= 1e-7 * abs(float(b[0]))))" "$1" "$2"; }
case_eval_batch_passes() {
  fixture ev_gpt || return
  local whole part np k
  for np in 1 2; do
    whole=$(gpt_ev $np -- --split test)
    for k in 5 1; do
      part=$(gpt_ev $np -- --split test --set train.eval_batch=$k)
      eval_agree "$part" "$whole" && ok "W=$np: train.eval_batch $k gives the one-pass chunk's tokens, accuracy and loss (1e-7 relative)" "— $part vs $whole" \
        || bad "W=$np: train.eval_batch $k gives the one-pass chunk's tokens, accuracy and loss (1e-7 relative)" "— $part vs $whole"
    done
  done
  part=$(gpt_ev 2 DDPTOK_TEST_EVAL_SKIP_PASS=1 -- --split test --set train.eval_batch=5)
  eval_agree "$part" "$whole" && bad "negative control: only each chunk's first pass (DDPTOK_TEST_EVAL_SKIP_PASS) is caught" "— it passed: $part" \
    || ok "negative control: only each chunk's first pass (DDPTOK_TEST_EVAL_SKIP_PASS) is caught" "— $part vs $whole"
}

# The GPT's output layer outside training in chunks of rows (include/model/gpt.h
# gpt_logits_rows: 64 MiB of logits, one chunk at every test config's V; here forced to 7
# rows per chunk, DDPTOK_TEST_LOGITS_ROWS, so each 16-sequence pass is cut into many chunks,
# the last one short): the same tokens and hits, the loss within 1e-7 relative of the one-chunk
# pass (float32's rounding: OpenBLAS groups a logit's sum by the rows of its GEMM, as in
# eval_batch_passes above), under 1 and 2 ranks, and per sequence. Control: a chunk loop that
# leaves a pass's last chunk with the previous chunk's logits (DDPTOK_TEST_LOGITS_SKIP_LAST)
# is rejected by the same comparison.
case_logits_chunks() {
  fixture ev_gpt || return
  local whole part np
  for np in 1 2; do
    whole=$(gpt_ev $np -- --split test)
    part=$(gpt_ev $np DDPTOK_TEST_LOGITS_ROWS=7 -- --split test)
    eval_agree "$part" "$whole" && ok "W=$np: the output layer in chunks of 7 rows gives the one-chunk pass's tokens, accuracy and loss (1e-7 relative)" "— $part vs $whole" \
      || bad "W=$np: the output layer in chunks of 7 rows gives the one-chunk pass's tokens, accuracy and loss (1e-7 relative)" "— $part vs $whole"
  done
  part=$(gpt_ev 2 DDPTOK_TEST_LOGITS_ROWS=7 DDPTOK_TEST_LOGITS_SKIP_LAST=1 -- --split test)
  eval_agree "$part" "$whole" && bad "negative control: a pass's last chunk left with stale logits (DDPTOK_TEST_LOGITS_SKIP_LAST) is caught" "— it passed: $part" \
    || ok "negative control: a pass's last chunk left with stale logits (DDPTOK_TEST_LOGITS_SKIP_LAST) is caught" "— $part vs $whole"
}

# train.eval_every with train.eval_batch <= B: the evaluation runs on the trainer's own
# instance between updates. The step-4 model and optimizer state are bit-identical to eval off,
# every training loss is the same, and the logged validation loss is evaluate's of that
# checkpoint (same train.eval_batch: same passes). Control: the same run with an evaluation
# that advances the trainer's dropout stream (DDPTOK_TEST_EVAL_DISTURB) is caught.
case_eval_on_trainer_instance() {
  fixture ev_gpt || return
  local d v e run=(--continuous --set train.updates=4 --set train.interrupt_at=0 --set train.eval_every=2 --set train.eval_batch=1)
  expect_rc "GPT train with train.eval_every 2, train.eval_batch 1 (B 4: the trainer's instance)" 0 ddp 2 train "${EVAL_GPT[@]}" "${run[@]}" --set paths.artifacts=on
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/continuous/step-0004 on/continuous/step-0004) \
    && ok "evaluating on the trainer's instance: the step-4 model and optimizer state bit-identical to eval off" "($d)" \
    || bad "evaluating on the trainer's instance: the step-4 model and optimizer state bit-identical to eval off" "— $d"
  /usr/bin/python3 -c "
import json, sys
on, off = ([json.loads(l) for l in open(p)] for p in sys.argv[1:3])
assert [l['loss'] for l in on] == [l['loss'] for l in off]
assert [l['step'] for l in on if 'validation' in l] == [2, 4]" outputs/train/continuous.jsonl outputs/train/continuous.*.jsonl \
    && ok "every training loss as with eval off; validation at steps 2 and 4" || bad "every training loss as with eval off; validation at steps 2 and 4"
  v=$(/usr/bin/python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][3]['validation']['loss'])" outputs/train/continuous.jsonl)
  rm -f outputs/evaluate.json
  "$DDPTOK" evaluate "${EVAL_GPT[@]}" --checkpoint on/continuous/step-0004 --split validation --set train.eval_batch=1 >/dev/null 2>&1
  e=$(json outputs/evaluate.json "repr(j['validation']['loss'])")
  [ "$(/usr/bin/python3 -c "print(float('%.9g' % $e) == $v)")" = True ] \
    && ok "the logged step-4 validation loss is evaluate's of that checkpoint (train.eval_batch 1)" "($v, $e)" \
    || bad "the logged step-4 validation loss is evaluate's of that checkpoint (train.eval_batch 1)" "— $v against $e"
  DDPTOK_TEST_EVAL_DISTURB=1 ddp 2 train "${EVAL_GPT[@]}" "${run[@]}" --set paths.artifacts=dist >/dev/null 2>&1
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/continuous/step-0004 dist/continuous/step-0004) \
    && bad "negative control: an evaluation that advances the dropout stream is caught" "— it passed ($d)" \
    || ok "negative control: an evaluation that advances the dropout stream is caught" "($d)"
}

# evaluate --per-sequence FILE (docs/commands.md "evaluate"): one JSONL record per sequence of
# the split, by id (its index in the split), after a header. On the trained model of the group's
# config (the MLP here, the GPT in the gpt group, which sources this file).
# perseq_run NP FILE ARGS...: evaluate --per-sequence FILE of $CK under NP ranks (quiet).
perseq_run() {
  local np=$1 file=$2; shift 2
  if [ "$np" = 1 ]; then one evaluate "${E[@]}" --checkpoint "$CK" --per-sequence "$file" "$@" >/dev/null 2>&1
  else ddp "$np" evaluate "${E[@]}" --checkpoint "$CK" --per-sequence "$file" "$@" >/dev/null 2>&1; fi
}
# perseq_sums FILE EVALUATE_JSON SPLIT: 0 when the records add up to the split's evaluate.json:
# one record per sequence, the tokens and hits exact, Σ loss_sum / Σ tokens within 1e-9
# relative of its loss; says what it saw.
perseq_sums() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
head, recs, e = lines[0], lines[1:], json.load(open(sys.argv[2]))[sys.argv[3]]
tokens, correct, loss_sum = sum(r["tokens"] for r in recs), sum(r["correct"] for r in recs), sum(r["loss_sum"] for r in recs)
rel = abs(loss_sum / tokens - e["loss"]) / e["loss"]
print(f"{len(recs)} records of {e['sequences']} sequences, {tokens} of {e['tokens']} tokens, {correct} of "
      f"{round(e['token_accuracy'] * e['tokens'])} hits, mean loss {loss_sum / tokens!r} vs {e['loss']!r} (relative {rel:.2g})")
ok = (len(recs) == e["sequences"] == head["count"] and tokens == e["tokens"] and correct == round(e["token_accuracy"] * e["tokens"])
      and rel <= 1e-9 and head["format"] == "ddptok-per-sequence" and head["split"] == sys.argv[3])
sys.exit(0 if ok else 1)
PY
}
# perseq_tamper FILE drop|dup > OUT: the file with one record of supervised tokens dropped, or
# one duplicated (the negative controls of perseq_sums).
perseq_tamper() {
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines(True)
i = next(k for k in range(1, len(lines)) if json.loads(lines[k])["tokens"] > 0)
sys.stdout.write("".join(lines[:i] + lines[i + 1:] if sys.argv[2] == "drop" else lines[:i + 1] + lines[i:]))
PY
}

# The records add up to the split evaluate reports: tokens and hits exact, the loss within 1e-9
# relative (the same per-token losses, grouped by sequence), for the test and validation splits;
# evaluate.json itself byte-identical to a run without --per-sequence. Controls: a record
# dropped, or one duplicated, is caught by the same comparison.
case_per_sequence_sums() {
  fixture ev_trained || return
  local split out
  for split in test validation; do
    rm -f outputs/evaluate.json
    one evaluate "${E[@]}" --checkpoint "$CK" --split "$split" >/dev/null 2>&1 && cp outputs/evaluate.json plain.json
    perseq_run 2 "ps-$split.jsonl" --split "$split" || { bad "evaluate --per-sequence --split $split under 2 ranks: exit 0"; continue; }
    out=$(perseq_sums "ps-$split.jsonl" outputs/evaluate.json "$split") \
      && ok "--split $split: the per-sequence records add up to evaluate's split (tokens, hits exact; loss 1e-9 relative)" "— $out" \
      || bad "--split $split: the per-sequence records add up to evaluate's split (tokens, hits exact; loss 1e-9 relative)" "— $out"
    cmp -s plain.json outputs/evaluate.json && ok "--split $split: evaluate.json byte-identical with and without --per-sequence" \
      || bad "--split $split: evaluate.json byte-identical with and without --per-sequence" "— $(diff plain.json outputs/evaluate.json | head -4)"
  done
  perseq_tamper ps-validation.jsonl drop > dropped.jsonl && perseq_tamper ps-validation.jsonl dup > dup.jsonl
  out=$(perseq_sums dropped.jsonl outputs/evaluate.json validation) \
    && bad "negative control: a dropped record is caught by the same comparison" "— it passed: $out" \
    || ok "negative control: a dropped record is caught by the same comparison" "— $out"
  out=$(perseq_sums dup.jsonl outputs/evaluate.json validation) \
    && bad "negative control: a duplicated record is caught by the same comparison" "— it passed: $out" \
    || ok "negative control: a duplicated record is caught by the same comparison" "— $out"
}

# perseq_header FILE CHECKPOINT: 0 when FILE's header names CHECKPOINT's step and its
# params_sha256 is the SHA-256 of CHECKPOINT's /model tensors (float32 LE, row-major), tensor
# after tensor in the model's order, computed here from rank-0000.h5.
perseq_header() {
  /usr/bin/python3 - "$@" <<'PY'
import hashlib, json, sys, h5py
head = json.loads(open(sys.argv[1]).readline())
order = {"mlp": ["embedding", "w1", "b1", "w2", "b2"],
         "gpt": ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw",
                 "fcprojb", "lnfw", "lnfb"]}[head["model"]]
with h5py.File(f"{sys.argv[2]}/rank-0000.h5") as f:
    digest = hashlib.sha256(b"".join(f["model"][n][()].astype("<f4").tobytes() for n in order)).hexdigest()
    step = int(f.attrs["step"])
sys.exit(0 if head["params_sha256"] == digest and head["step"] == step and head["count"] == head["split_sequences"] else 1)
PY
}
# W = 1, 2 and 3 write the same bytes; the header's parameter digest and step are the
# checkpoint's (recomputed from rank-0000.h5). Controls: the same run's earlier checkpoint gives
# another file, its records too (not only the header's path and digest), and its tensors do not
# give the first file's digest.
case_per_sequence_any_w() {
  fixture ev_trained || return
  local np other
  for np in 1 2 3; do perseq_run "$np" "w$np.jsonl" || bad "evaluate --per-sequence under $np rank(s): exit 0"; done
  cmp -s w1.jsonl w2.jsonl && cmp -s w1.jsonl w3.jsonl && [ "$(wc -l < w1.jsonl)" -gt 100 ] \
    && ok "--per-sequence: W = 1, 2, 3 write byte-identical files" "($(($(wc -l < w1.jsonl) - 1)) records)" \
    || bad "--per-sequence: W = 1, 2, 3 write byte-identical files" "— $(cmp w1.jsonl w2.jsonl; cmp w1.jsonl w3.jsonl)"
  ddp 2 train "${E[@]}" --continuous --set train.eval_every=0 --set train.checkpoint_every=6 --set paths.artifacts=other >/dev/null 2>&1
  other=$(ls -d other/continuous/step-* 2>/dev/null | head -1)
  [ -n "$other" ] && [ "$other" != "other/${CK#artifacts/}" ] || { bad "negative control: an earlier checkpoint to compare with" "— none under other/continuous"; return; }
  perseq_header w1.jsonl "$CK" && ok "--per-sequence: the header's params_sha256 and step are the checkpoint's (recomputed from rank-0000.h5)" \
    || bad "--per-sequence: the header's params_sha256 and step are the checkpoint's (recomputed from rank-0000.h5)" "— $(head -1 w1.jsonl)"
  perseq_header w1.jsonl "$other" && bad "negative control: another checkpoint's tensors do not give the header's digest" "— they did ($other)" \
    || ok "negative control: another checkpoint's tensors do not give the header's digest" "($other)"
  CK=$other perseq_run 2 earlier.jsonl
  ! cmp -s w1.jsonl earlier.jsonl && ! cmp -s <(tail -n +2 w1.jsonl) <(tail -n +2 earlier.jsonl) \
    && ok "negative control: the file of another checkpoint ($other) differs, records included" \
    || bad "negative control: the file of another checkpoint ($other) differs, records included"
}

# --ids: a subset (the first, a middle and the last sequence, unsorted, one twice; and the same
# ids from a file) under 2 ranks gives exactly the full file's records of them, in id order,
# and leaves evaluate.json alone. Control: records carrying the next sequence's numbers (an id
# mapping off by one, DDPTOK_TEST_PERSEQ_ID_SHIFT) are caught by the same comparison.
perseq_ids_match() {  # SUBSET FULL IDS: 0 when SUBSET's records are FULL's lines of IDS (sorted, once each)
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
sub, full = open(sys.argv[1]).read().splitlines(), open(sys.argv[2]).read().splitlines()
ids = sorted(set(int(i) for i in sys.argv[3].split(",")))
want = [full[1 + i] for i in ids]
head = json.loads(sub[0])
sys.exit(0 if sub[1:] == want and head["count"] == len(ids) and head["params_sha256"] == json.loads(full[0])["params_sha256"] else 1)
PY
}
case_per_sequence_ids() {
  fixture ev_trained || return
  perseq_run 1 full.jsonl || { bad "evaluate --per-sequence (the full file): exit 0"; return; }
  local n ids; n=$(($(wc -l < full.jsonl) - 1)); ids="$((n - 1)),$((n / 2)),0,$((n / 2))"
  rm -f outputs/evaluate.json
  perseq_run 2 sub.jsonl --ids "$ids" && [ ! -e outputs/evaluate.json ] \
    && ok "--ids $ids under 2 ranks: exit 0, evaluate.json not written" || bad "--ids $ids under 2 ranks: exit 0, evaluate.json not written"
  perseq_ids_match sub.jsonl full.jsonl "$ids" && ok "--ids $ids: exactly the full file's records of those ids, in id order" \
    || bad "--ids $ids: exactly the full file's records of those ids, in id order" "— $(tail -n +2 sub.jsonl | head -3)"
  printf '%s\n%s 0\n' "$((n / 2))" "$((n - 1))" > ids.txt
  perseq_run 3 subf.jsonl --ids ids.txt && perseq_ids_match subf.jsonl full.jsonl "$ids" \
    && ok "--ids FILE under 3 ranks: the same records" || bad "--ids FILE under 3 ranks: the same records" "— $(tail -n +2 subf.jsonl | head -3)"
  DDPTOK_TEST_PERSEQ_ID_SHIFT=1 perseq_run 2 shifted.jsonl --ids "$ids"
  perseq_ids_match shifted.jsonl full.jsonl "$ids" \
    && bad "negative control: records of the next sequence (ids off by one) are caught" "— it passed" \
    || ok "negative control: records of the next sequence (ids off by one) are caught"
}

# Bad input: one line (exit 2, every rank), nothing written — no records, no temporary, no
# evaluate.json, an unrelated file in the way left as it was. Control: the same command with a
# writable path and ids in range writes its file.
case_per_sequence_refused() {
  fixture ev_trained || return
  mkdir -p adir && echo keep > notmine.txt && echo x > afile
  local what pat np=2 args
  while IFS='|' read -r -u 3 what pat args; do
    rm -f outputs/evaluate.json
    # shellcheck disable=SC2086
    expect_rc "--per-sequence refused: $what" 2 ddp $np evaluate "${E[@]}" --checkpoint "$CK" $args
    [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && grep -qE "^ddptok: (ranks 0-1: )?error: evaluate $pat" <<<"$OUT" \
      && [ ! -e outputs/evaluate.json ] && [ ! -e ps.jsonl ] && [ -z "$(find . -name '*.tmp.*')$(ls -A adir)" ] && [ "$(cat afile)" = x ] \
      && [ "$(cat notmine.txt)" = keep ] \
      && ok "--per-sequence refused: $what: one line, nothing written" || { bad "--per-sequence refused: $what: one line, nothing written"; echo "$OUT" | head -3; }
  done 3<<'CASES'
a path under a file|--per-sequence afile/x\.jsonl: .*Not a directory|--per-sequence afile/x.jsonl
a directory|--per-sequence adir is a directory, not a file|--per-sequence adir
a file that is no per-sequence file|--per-sequence notmine\.txt exists and is no per-sequence file of ddptok|--per-sequence notmine.txt
an unwritable place|--per-sequence /proc/ddptok-x\.jsonl: cannot write there|--per-sequence /proc/ddptok-x.jsonl
an id past the split|--ids 999999: no sequence 999999 in the test split \(its ids are 0\.\.[0-9]+\)$|--per-sequence ps.jsonl --ids 999999
an id that is no number|--ids x: neither sequence ids \(A,B,C|--per-sequence ps.jsonl --ids x
--ids without --per-sequence|--ids 3: only with --per-sequence FILE|--ids 3
CASES
  expect_rc "control: the same with a writable path and ids in range writes its file" 0 ddp 2 evaluate "${E[@]}" --checkpoint "$CK" --per-sequence ps.jsonl --ids 0,1
  [ "$(wc -l < ps.jsonl)" = 3 ] && ok "control: its file holds the header and 2 records" || bad "control: its file holds the header and 2 records" "— $(cat ps.jsonl)"
  expect_rc "control: an earlier per-sequence file is replaced" 0 ddp 2 evaluate "${E[@]}" --checkpoint "$CK" --per-sequence ps.jsonl --ids 2
  [ "$(wc -l < ps.jsonl)" = 2 ] && ok "control: the replaced file holds the new record" || bad "control: the replaced file holds the new record"
}

# Imported data (import --format bytes) scored on its validation split: the records add up
# under 1 and 2 ranks, and both write the same bytes.
case_per_sequence_imported() {
  fixture bytes || return
  local out
  expect_rc "imported corpus: evaluate --split validation --per-sequence" 0 one evaluate --config b.yaml --split validation --per-sequence p1.jsonl
  cp outputs/evaluate.json plain.json
  expect_rc "imported corpus: the same under 2 ranks" 0 ddp 2 evaluate --config b.yaml --split validation --per-sequence p2.jsonl
  out=$(perseq_sums p1.jsonl plain.json validation) \
    && ok "imported corpus: the records add up to the validation split (tokens, hits exact; loss 1e-9 relative)" "— $out" \
    || bad "imported corpus: the records add up to the validation split (tokens, hits exact; loss 1e-9 relative)" "— $out"
  cmp -s p1.jsonl p2.jsonl && ok "imported corpus: W = 1 and 2 write byte-identical files" || bad "imported corpus: W = 1 and 2 write byte-identical files"
  perseq_tamper p1.jsonl drop > dropped.jsonl
  out=$(perseq_sums dropped.jsonl plain.json validation) \
    && bad "imported corpus, negative control: a dropped record is caught" "— it passed: $out" \
    || ok "imported corpus, negative control: a dropped record is caught" "— $out"
}
