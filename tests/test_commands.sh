# check-loss, exercise, evaluate, plot, check-env and clean, on the tiny config.
cfg="$CONFIGS/tiny.yaml"
# The whole protocol on the tiny config, before the report.
fixture_protocol() {
  prep_ref "$cfg" && ddp 2 parity --config "$cfg" >/dev/null 2>&1 && ddp 2 check-empty --config "$cfg" >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" >/dev/null 2>&1 && ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
}
case_check_loss() {
  expect_rc "check-loss" 0 one check-loss --config "$cfg"
  local r; r=$(json outputs/check_loss.json "j['counter_example']['mean_of_means'], j['counter_example']['global_mean'], j['counter_example']['local_scalars'], j['one_parameter']['mean_of_means']['gradient'], j['one_parameter']['global_token']['gradient']")
  [ "$r" = "2 2.5 [0.5, 4.5] 0 1" ] && ok "check-loss: 2, 2.5, scalars 0.5 and 4.5, gradients 0 and 1 at loss 1" || bad "check-loss: 2, 2.5, scalars 0.5 and 4.5, gradients 0 and 1 at loss 1" "— $r"
}
case_exercise() {
  expect_rc "exercise (12/12 coincide, 12/36 differ)" 0 one exercise --config "$CONFIGS/exercise.yaml"
  local r; r=$(json outputs/exercise.json "[c['counts'] for c in j['cases']], j['cases'][1]['hand']['global'], j['cases'][0]['model']['grad_max_abs_diff'] < 1e-9 < j['cases'][1]['model']['grad_max_abs_diff']")
  [ "$r" = "[[12, 12], [12, 36]] 2.5 True" ] && ok "exercise: counts, 2.5 by hand, gradients equal then different" || bad "exercise: counts, 2.5 by hand, gradients equal then different" "— $r"
}
# evaluate is a model's metrics, exit 0 on a good checkpoint, whatever the protocol lacks:
# after train and train --resume latest alone it evaluates the newest checkpoint (it failed
# with an error about the continuous run interleaved in the metrics). The protocol's verdict
# is --protocol's: each missing part named once, with its command, after the metrics.
e=(--config "$cfg" --set paths.outputs=ev/o --set paths.artifacts=ev/a)
case_evaluate_without_protocol() {
  local rc after
  one prepare "${e[@]}" >/dev/null && ddp 2 train "${e[@]}" >/dev/null 2>&1
  expect_rc "evaluate after the interrupted train alone: exit 0" 0 one evaluate "${e[@]}"
  [ "$(json ev/o/evaluate.json "j['step'], j['checkpoint']")" = "6 ev/a/checkpoints/step-0006" ] \
    && ok "evaluate without --checkpoint: the newest checkpoint's model into evaluate.json" \
    || bad "evaluate without --checkpoint: the newest checkpoint's model into evaluate.json" "— $(cat ev/o/evaluate.json)"
  ddp 2 train "${e[@]}" --resume latest >/dev/null 2>&1
  OUT=$(one evaluate "${e[@]}" 2>ev/err); rc=$?
  [ $rc -eq 0 ] && [ ! -s ev/err ] && grep -q '^evaluate: step-12 model of ev/a/checkpoints/step-0012 ' <<<"$OUT" && ! grep -q FAILED <<<"$OUT" \
    && ok "evaluate after train and train --resume latest: the step-12 model, exit 0, nothing on stderr" \
    || { bad "evaluate after train and train --resume latest: the step-12 model, exit 0, nothing on stderr" "— exit $rc:"; cat ev/err "$OUT" 2>/dev/null | head -5; }
  [ ! -e ev/o/report.json ] && ok "evaluate without --protocol leaves report.json alone" || bad "evaluate without --protocol leaves report.json alone"
  OUT=$(one evaluate "${e[@]}" --protocol 2>ev/err); rc=$?
  after=$(sed -n '/^  test loss [0-9]/,$p' <<<"$OUT")
  [ $rc -eq 1 ] && [ ! -s ev/err ] && [ "$(grep -c 'run `' <<<"$OUT")" -eq 3 ] && [ "$(grep -c 'run `' <<<"$after")" -eq 3 ] \
    && grep -q 'continuous run.* missing (ev/a/continuous/step-0012): run `.* train .* --continuous`' <<<"$after" \
    && grep -q 'parity report: missing (ev/o/parity.json): run `.* parity ' <<<"$after" \
    && grep -q 'empty-window report: missing (ev/o/empty.json): run `.* check-empty ' <<<"$after" \
    && grep -q '^evaluate --protocol: INCOMPLETE (3 parts missing' <<<"$OUT" \
    && ok "evaluate --protocol: the continuous run, parity and empty-window reports named once each with their command, after the metrics, exit 1" \
    || { bad "evaluate --protocol: the continuous run, parity and empty-window reports named once each with their command, after the metrics, exit 1" "— exit $rc:"; cat ev/err; echo "$OUT" | sed 's/^/       /'; }
  expect_rc "evaluate --protocol --checkpoint DIR is refused" 2 one evaluate "${e[@]}" --protocol --checkpoint ev/a/checkpoints/step-0006
}
# export: the newest checkpoint's model as safetensors, read back by tests/export_check.py's
# own reader (and by the safetensors package where it is installed).
fixture_ev_resumed() { one prepare "${e[@]}" >/dev/null && ddp 2 train "${e[@]}" >/dev/null 2>&1 && ddp 2 train "${e[@]}" --resume latest >/dev/null 2>&1; }
xc() { /usr/bin/python3 "$ROOT/tests/export_check.py" "$@"; }
case_export() {
  fixture ev_resumed || return
  local rc
  expect_rc "export of the newest checkpoint" 0 one export "${e[@]}"
  expect_grep "export names the model, the safetensors file and the JSON beside it" '^export: step-12 model of ev/a/checkpoints/step-0012 -> ev/o/model.safetensors \(safetensors, 5 tensors, 1000 parameters, [0-9]+ bytes\) and ev/o/model.json$' "$OUT"
  expect_rc "exported file: header, tensor order, metadata, model.json, every tensor bit for bit as the checkpoint" 0 xc format ev/o/model.safetensors ev/a/checkpoints/step-0012
  OUT=$(xc safetensors ev/o/model.safetensors 2>&1); rc=$?
  case $rc in
    0) ok "safetensors.numpy.load_file reads the exported tensors as export_check.py's reader does" ;;
    77) skip "safetensors.numpy.load_file reads the exported tensors as export_check.py's reader does" "the Python safetensors package is not installed (not in Debian 12)" ;;
    *) bad "safetensors.numpy.load_file reads the exported tensors as export_check.py's reader does" "— exit $rc: $OUT" ;;
  esac
  head -c -4 ev/o/model.safetensors > ev/cut.safetensors && cp ev/o/model.json ev/cut.json
  expect_rc "export_check's reader refuses a file cut 4 bytes short (control)" 1 xc format ev/cut.safetensors ev/a/checkpoints/step-0012
  expect_rc "export --checkpoint DIR --out FILE" 0 one export "${e[@]}" --checkpoint ev/a/checkpoints/step-0006/ --out ev/m6.safetensors
  [ "$(json ev/m6.json "j['step'], j['weights'], j['checkpoint']")" = "6 m6.safetensors ev/a/checkpoints/step-0006" ] \
    && ok "export --out FILE: FILE's .json beside it names step 6 and its weights" || bad "export --out FILE: FILE's .json beside it names step 6 and its weights" "— $(head -c 300 ev/m6.json)"
}
case_export_without_checkpoint() {
  expect_rc "export without a checkpoint is refused" 2 one export --config "$cfg" --set paths.outputs=ev/o --set paths.artifacts=ev/none
  expect_grep "export without a checkpoint names the train command to run" '^ddptok: error: export: no checkpoint under ev/none/checkpoints to export: train a model first: run `.* -np 2 .*train --config .*tiny.yaml --set paths.outputs=ev/o --set paths.artifacts=ev/none`' "$OUT"
}
# train's own parser once ended in an `else` that set --fresh: an option that is not --fresh
# (here a typo of it) must be refused, and the lineage must not be moved aside.
case_train_fresh_typo() {
  fixture protocol || return
  expect_rc "train --frsh on a lineage with checkpoints is refused" 2 ddp 2 train --config "$cfg" --frsh
  expect_grep "train --frsh: unknown option, did you mean '--fresh'" "^ddptok: ranks 0-1: error: train: unknown option '--frsh' \(did you mean '--fresh'\? try: [^ ]*ddptok train --help\)$" "$OUT"
  [ -z "$(ls -d artifacts/checkpoints.old-* 2>/dev/null)" ] && [ -d artifacts/checkpoints/step-0006 ] && [ -d artifacts/checkpoints/step-0012 ] \
    && ok "train --frsh moved nothing aside (the lineage's checkpoints are where they were)" || bad "train --frsh moved nothing aside (the lineage's checkpoints are where they were)"
}
case_evaluate_report() {
  fixture protocol || return
  expect_rc "evaluate --protocol" 0 one evaluate --config "$cfg" --protocol
  local r; r=$(json outputs/report.json "j['resume']['max_abs_diff'], j['parity']['ok'], j['empty']['ok'], j['test']['sequences'], j['test']['loss'] < j['test']['unigram_loss'], j['test']['best_loss'] < j['test']['loss']")
  [ "$r" = "0 True True 32 True True" ] && ok "report.json: resume 0, parity and empty ok, test loss between best and unigram" || bad "report.json: resume 0, parity and empty ok, test loss between best and unigram" "— $r"
}
# A resumed model that differs from the continuous one makes evaluate fail. (Skipping the
# momentum, not the RNG: a resume that restarts the dropout stream writes a step 12 whose
# counter is not 12 x A, which every reader now refuses outright, exit 2.)
case_evaluate_resume_differs() {
  fixture protocol || return
  rm -rf artifacts/checkpoints/step-0012
  DDPTOK_TEST_RESUME_SKIP=momentum ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
  expect_rc "evaluate --protocol fails when the resumed model differs (negative control)" 1 one evaluate --config "$cfg" --protocol
}
# A parity.json nested 1001 levels deep: report.json, which carries it and indents every
# level, grew quadratically (this 64 KiB file: 32 MB; 4 MiB: 6.3 GB). Refused in one line.
case_evaluate_deep_parity_json() {
  fixture protocol || return
  /usr/bin/python3 -c "import sys; sys.stdout.write('[' + ','.join(['[' * 1000 + ']' * 1000] * 32) + ']')" >outputs/parity.json
  OUT=$(one evaluate --config "$cfg" --protocol 2>&1 >/dev/null); local rc=$?
  [ $rc -eq 1 ] && [ "$OUT" = "ddptok: error: outputs/parity.json: nested 1001 levels deep, at most 8 expected (ddptok's reports nest 3): not read" ] \
    && [ "$(stat -c %s outputs/report.json)" -lt 100000 ] \
    && ok "evaluate: a parity.json nested 1001 deep is refused in one line, report.json stays small" "($(stat -c %s outputs/report.json) bytes)" \
    || bad "evaluate: a parity.json nested 1001 deep is refused in one line, report.json stays small" "— exit $rc, report.json $(stat -c %s outputs/report.json 2>/dev/null) bytes: $OUT"
}
# A negative-control cell whose directory name is not UTF-8 (no JSON key can name it) was
# counted ok but left out of report.json; now it is named and not ok. A good name: carried.
case_evaluate_matrix_cell() {
  fixture protocol || return
  mkdir -p outputs/matrix/W2-A2 && cp outputs/parity.json outputs/matrix/W2-A2/
  expect_rc "evaluate --protocol with a matrix cell W2-A2 (control)" 0 one evaluate --config "$cfg" --protocol
  [ "$(json outputs/report.json "j['matrix']['W2-A2']['ok']")" = True ] && ok "evaluate: the matrix cell W2-A2 is carried into report.json" || bad "evaluate: the matrix cell W2-A2 is carried into report.json"
}
case_evaluate_matrix_non_utf8() {
  fixture protocol || return
  local bad_cell; bad_cell="outputs/matrix/$(printf 'W2-\377')" && mkdir -p "$bad_cell" && cp outputs/parity.json "$bad_cell/"
  OUT=$(one evaluate --config "$cfg" --protocol 2>&1 >/dev/null); local rc=$?
  [ $rc -eq 1 ] && LC_ALL=C grep -aq "^ddptok: error: outputs/matrix/W2-.: a cell name that is not UTF-8 cannot be a key of report.json: not ok$" <<<"$OUT" \
    && [ "$(grep -c . <<<"$OUT")" -eq 1 ] && ok "evaluate: a matrix cell whose name is not UTF-8: named in one line, not ok (exit 1)" \
    || bad "evaluate: a matrix cell whose name is not UTF-8: named in one line, not ok (exit 1)" "— exit $rc: $OUT"
}
# evaluate with the factored first layer (its tables from the loaded θ): the dense test loss
# within float rounding, on the same tokens.
case_evaluate_factored() {
  fixture protocol || return
  one evaluate --config "$cfg" --checkpoint artifacts/checkpoints/step-0012 >/dev/null 2>&1 && cp outputs/evaluate.json dense.json
  expect_rc "evaluate --checkpoint with train.first_layer factored" 0 one evaluate --config "$cfg" --checkpoint artifacts/checkpoints/step-0012 --set train.first_layer=factored
  local r; r=$(/usr/bin/python3 -c "import json; d, f = (json.load(open(p))['test'] for p in ('dense.json', 'outputs/evaluate.json')); print(d['tokens'] == f['tokens'] > 0, abs(d['loss'] - f['loss']) <= 1e-5 * d['loss'], d['loss'] != 0)")
  [ "$r" = "True True True" ] && ok "evaluate with the factored first layer: the dense test loss within 1e-5 relative, the same tokens" \
    || bad "evaluate with the factored first layer: the dense test loss within 1e-5 relative, the same tokens" "— $r"
}
has_gnuplot() { command -v gnuplot >/dev/null && return 0; bad "$CASE: gnuplot is installed" "— it is not (run/install-deps.sh installs gnuplot-nox)"; return 1; }
case_plot() {
  has_gnuplot || return
  fixture protocol || return
  expect_rc "plot" 0 one plot --config "$cfg"
  local sig; sig=$(head -c 8 outputs/figure.png | od -An -tx1 | tr -d ' \n')
  [ "$sig" = 89504e470d0a1a0a ] && [ "$(stat -c %s outputs/figure.png)" -gt 10000 ] && ok "plot: figure.png is a PNG of more than 10 kB" "($(stat -c %s outputs/figure.png) bytes)" \
    || bad "plot: figure.png is a PNG of more than 10 kB"
  # The bars are the per-tensor worst ratio to the parity bound (<= 1: passes): below 1 for
  # every tensor of the product, above 1 for some tensor of each rejected control, exactly
  # as parity.json decided; the key sits outside the plotting area.
  /usr/bin/python3 - outputs/plot/parity.dat outputs/parity.json <<'PY' && ok "plot: figure data: worst ratio to atol + rtol|g_ref| per tensor agrees with parity.json's verdicts" || bad "plot: figure data: worst ratio to atol + rtol|g_ref| per tensor agrees with parity.json's verdicts"
import json, sys
rows = [l.split() for l in open(sys.argv[1])][1:]
modes = {r[0]: [float(x) for x in r[1:]] for r in rows}
rep = json.load(open(sys.argv[2]))
verdicts = {m["mode"] if "mode" in m else k: m for k, m in (rep["modes"].items() if isinstance(rep.get("modes"), dict) else [(m["mode"], m) for m in rep["modes"]])}
for name, ratios in modes.items():
    v = verdicts[name]
    passes = v.get("passes", v.get("pass"))
    assert passes == (max(ratios) <= 1), (name, ratios, v)
assert max(modes["global-token"]) <= 1 and max(modes["mean-of-means"]) > 1
PY
  grep -q "set key below" outputs/plot/figure.gp && grep -q "^1 with lines\|, 1 with lines" outputs/plot/figure.gp && ok "plot: figure.gp has the key outside the data, the bound drawn at ratio 1" \
    || bad "plot: figure.gp has the key outside the data, the bound drawn at ratio 1"
}
# A run's JSONL with a NUL byte and a blank line (found by tests/fuzz/fuzz_json.c) and a
# step beyond 32 bits: every record after them is a point, the step whole; the damaged and
# the cut lines are skipped (were: the curve ended at the NUL, step 4294967297 drawn at 1).
case_plot_damaged_jsonl() {
  has_gnuplot || return
  fixture protocol || return
  mv outputs/train/continuous.jsonl jsonl.keep
  { head -2 jsonl.keep; printf '{"step": 3,\0 "loss": 1}\n\n'; sed -n 4,12p jsonl.keep
    printf '{"step": 4294967297, "loss": 2.5}\n{"step": 13, "lo'; } >outputs/train/continuous.jsonl
  one plot --config "$cfg" >/dev/null 2>&1
  local r; r=$(cut -d' ' -f1 outputs/plot/loss-continuous.dat | tr '\n' ' ')
  [ "$r" = "1 2 4 5 6 7 8 9 10 11 12 4294967297 " ] && ok "plot: a JSONL with a NUL byte and a blank line loses no later point, a 64-bit step kept" \
    || bad "plot: a JSONL with a NUL byte and a blank line loses no later point, a 64-bit step kept" "— steps drawn: $r"
}
# plot never joins two runs (issue 20.4): after train, --resume and then `train --fresh --set
# train.optimizer.lr=0.02`, the old run's resumed.jsonl goes aside with its checkpoints, so
# the figure has no resumed curve (was: the new run's 1-6 drawn joined at step 6 to the old
# run's resumed 7-12, without a word). The same check sees the resumed curve of the
# genuine pair (negative control: it can fail); a resumed log of another config put back by
# hand is labelled ANOTHER CONFIG and kept out of the comparison; a log whose records come
# from two configs is refused.
case_plot_never_mixes_runs() {
  has_gnuplot || return
  fixture protocol || return
  expect_rc "plot of the genuine interrupted + resumed pair" 0 one plot --config "$cfg"
  [ -s outputs/plot/loss-resumed.dat ] && grep -q "'loss-resumed.dat'" outputs/plot/figure.gp \
    && ok "negative control: the genuine pair's figure has its resumed curve (the check below can fail)" \
    || bad "negative control: the genuine pair's figure has its resumed curve (the check below can fail)"
  expect_rc "train --fresh --set train.optimizer.lr=0.02 after the finished lineage" 0 ddp 2 train --config "$cfg" --fresh --set train.optimizer.lr=0.02
  expect_grep "train --fresh: says the earlier run's resumed.jsonl moved aside" "^train: a fresh start: the earlier run's outputs/train/resumed.jsonl moved aside to outputs/train/resumed\.[0-9T]+Z\.jsonl$" "$OUT"
  [ ! -e outputs/train/resumed.jsonl ] && [ ! -e outputs/logs/resumed/rank-0.log ] && [ ! -e outputs/logs/resumed/rank-1.log ] \
    && ls outputs/train/resumed.*.jsonl outputs/logs/resumed/rank-1.*.log >/dev/null 2>&1 \
    && ok "train --fresh: the old run's resumed.jsonl and rank logs went aside (renamed, kept)" || bad "train --fresh: the old run's resumed.jsonl and rank logs went aside (renamed, kept)" "— $(ls outputs/train outputs/logs/resumed 2>&1 | tr '\n' ' ')"
  rm -rf outputs/plot
  expect_rc "plot after train --fresh --set train.optimizer.lr=0.02" 0 one plot --config "$cfg" --set train.optimizer.lr=0.02
  [ ! -e outputs/plot/loss-resumed.dat ] && ! grep -q "'loss-resumed.dat'" outputs/plot/figure.gp && grep -q 'loss curves of continuous, interrupted;' <<<"$OUT" \
    && ok "plot after --fresh: no resumed curve joined to the new run's interrupted one (was: the old run's 7-12)" \
    || bad "plot after --fresh: no resumed curve joined to the new run's interrupted one (was: the old run's 7-12)" "— $OUT"
  grep -q 'title "continuous (uninterrupted witness), steps 1-12 (ANOTHER CONFIG: not compared)"' outputs/plot/figure.gp \
    && grep -q 'title "interrupted at step 6 (not resumed), steps 1-6"' outputs/plot/figure.gp && grep -q 'sgd lr 0.02' outputs/plot/figure.gp \
    && ! grep -q 'identical' outputs/plot/figure.gp \
    && ok "plot after --fresh: the lr 0.2 witness is labelled ANOTHER CONFIG, no identity claimed, the title says lr 0.02" \
    || bad "plot after --fresh: the lr 0.2 witness is labelled ANOTHER CONFIG, no identity claimed, the title says lr 0.02" "— $(grep title outputs/plot/figure.gp | head -3)"
  expect_grep "plot after --fresh (lr 0.02): says the uninterrupted run is another config's" '; the uninterrupted run is another config.s: nothing compared;' "$OUT"
  # this config's (lr 0.2) uninterrupted run beside another config's interrupted one: the message
  # names the interrupted and resumed runs as the other config's (was: "no uninterrupted run of this config")
  expect_rc "plot of lr 0.2 with lr 0.02's interrupted run" 0 one plot --config "$cfg"
  expect_grep "plot of lr 0.2 with lr 0.02's interrupted run: names the interrupted and resumed runs as another config's" \
    '; the interrupted and resumed runs are another config.s: nothing compared;' "$OUT"
  cp outputs/train/resumed.*.jsonl outputs/train/resumed.jsonl  # the old way: the old run's resumed log beside the new run
  expect_rc "plot with the old run's resumed.jsonl put back" 0 one plot --config "$cfg" --set train.optimizer.lr=0.02
  grep -q 'title "resumed, steps 7-12 (ANOTHER CONFIG: not compared)"' outputs/plot/figure.gp \
    && grep -q "^plot: WARNING: outputs/train/resumed.jsonl was written by a run of another config" <<<"$OUT" \
    && ok "plot keys each curve by its run's config: the old resumed curve is labelled ANOTHER CONFIG, with a warning" \
    || bad "plot keys each curve by its run's config: the old resumed curve is labelled ANOTHER CONFIG, with a warning" "— $OUT"
  cat outputs/train/interrupted.jsonl >>outputs/train/resumed.jsonl  # lr 0.2's 7-12, then lr 0.02's 1-6
  rm -rf outputs/plot outputs/figure.png
  expect_rc "plot of a log holding two configs' records" 2 one plot --config "$cfg"
  expect_grep "plot of a log holding two configs' records: one line naming it; nothing written" '^ddptok: error: outputs/train/resumed.jsonl: its records come from more than one config' "$OUT"
  [ ! -e outputs/plot ] && [ ! -e outputs/figure.png ] && ok "plot refused for a log of two runs: nothing written" || bad "plot refused for a log of two runs: nothing written"
}
# The figure states the config, W and A, "identical (max |Δloss| = 0)" where the resumed
# curves coincide with the uninterrupted run, and each parity mode's must-pass / must-reject
# mark with its verdict (issue 20.4). Negative control: one loss of the witness changed in
# its 6th digit: the same figure says NOT identical.
case_plot_states_what_it_shows() {
  has_gnuplot || return
  fixture protocol || return
  expect_rc "plot of the protocol's runs" 0 one plot --config "$cfg"
  local gp=outputs/plot/figure.gp
  grep -q 'title ".*/tiny.yaml: W = 2 ranks, A = 2, B = 3, 12 updates, sgd lr 0.2, token unit"' $gp \
    && ok "plot: the title states the config, W, A, B, U, the optimizer and the unit" || bad "plot: the title states the config, W, A, B, U, the optimizer and the unit" "— $(grep multiplot $gp)"
  grep -q 'interrupted at step 6 + resumed vs the uninterrupted run: identical (max |Δloss| = 0 over 12 steps)' $gp && grep -q 'interrupted at step 6 + resumed vs the uninterrupted run: identical (max |Δloss| = 0)' <<<"$OUT" \
    && ok "plot: 'identical (max |Δloss| = 0 over 12 steps)' on the figure and in its line" || bad "plot: 'identical (max |Δloss| = 0 over 12 steps)' on the figure and in its line" "— $OUT"
  [ "$(grep -o 'MUST PASS' $gp | wc -l)" -eq 1 ] && [ "$(grep -o 'MUST BE REJECTED' $gp | wc -l)" -eq 4 ] \
    && [ "$(grep -c '^set label 1[0-4] "\(passes\|rejected\) ✓"' $gp)" -eq 5 ] && ! grep -q WRONG $gp \
    && grep -q 'global-token\\nMUST PASS\\npasses: ok' $gp && grep -q 'mean-of-means\\nMUST BE REJECTED\\nrejected: ok' $gp \
    && ok "plot: global-token marked MUST PASS (passes), the 4 controls MUST BE REJECTED (rejected), each with ✓" \
    || bad "plot: global-token marked MUST PASS (passes), the 4 controls MUST BE REJECTED (rejected), each with ✓" "— $(grep xtics $gp)"
  sed -i '5s/"loss": \([0-9]\.[0-9][0-9][0-9][0-9]\)[0-9]/"loss": \19/' outputs/train/continuous.jsonl
  expect_rc "plot with one witness loss changed (negative control)" 0 one plot --config "$cfg"
  grep -q 'NOT identical (max |Δloss| = [0-9.e-]* over 12 steps)' $gp && ! grep -q ': identical' $gp \
    && ok "negative control: a witness differing at one step is NOT identical on the figure" || bad "negative control: a witness differing at one step is NOT identical on the figure" "— $(grep 'Loss (global' $gp)"
}
# generate (issue 20, "the model out"): on a byte-level corpus (import --format bytes: byte b
# is id b + 1), greedy generation equals an independent numpy forward of the exported
# weights, id for id (tests/export_check.py generate); the same check rejects the weights
# with one bias changed and the prompt taken without the + 1 (negative controls). Sampling
# is the seed's: the same seed, the same text; another seed, another. Refused, one line,
# exit 2: a corpus that is not byte-level, a prompt longer than the context allows, a bad
# temperature, no prompt.
fixture_bytes_trained() {
  cat >bytes.yaml <<'Y'
seed: 3
data:
  vocab_size: 257
  min_length: 8
  max_length: 64
  source: imported
  import: {split_seed: 0, validation_fraction: 0.1, test_fraction: 0.1}
model: {context: 4, embed_dim: 8, hidden: 32, dropout: 0.0}
train:
  world_size: 2
  rank_bands: auto
  batch_size_per_rank: 4
  accumulation: 1
  updates: 40
  interrupt_at: 0
  optimizer: {name: adamw, lr: 0.02, weight_decay: 0.0}
Y
  /usr/bin/python3 -c "
import random
r = random.Random(1)
w = 'the quick brown fox jumps over a lazy dog and then sleeps in the warm sun all day long'.split()
print('\n%\n'.join(' '.join(r.choice(w) for _ in range(r.randint(4, 12))) for _ in range(200)))" >text.txt
  one import --config bytes.yaml --format bytes --delimiter '\n%\n' --input text.txt && ddp 2 train --config bytes.yaml
}
case_generate() {
  fixture bytes_trained || return
  local b=(--config bytes.yaml) greedy a c
  expect_rc "generate --temperature 0 (greedy) on the byte-level corpus" 0 one generate "${b[@]}" --prompt "the quick" --tokens 60 --temperature 0
  greedy=$(one generate "${b[@]}" --prompt "the quick" --tokens 60 --temperature 0 2>/dev/null)
  [[ $greedy == "the quick"* ]] && [ "${#greedy}" -eq 69 ] && ok "generate prints the prompt and its 60 bytes" "(${greedy:0:40}...)" \
    || bad "generate prints the prompt and its 60 bytes" "— '$greedy'"
  expect_rc "export of the same checkpoint" 0 one export "${b[@]}"
  expect_rc "greedy generation = an independent numpy forward of the exported weights, id for id" 0 xc generate outputs/model.safetensors outputs/generate.json
  echo "$OUT" | sed 's/^/       /'
  expect_rc "negative control: the same check with one bias of the weights changed fails" 1 xc generate outputs/model.safetensors outputs/generate.json --tamper b2
  expect_rc "negative control: the same check with the prompt's bytes taken as ids (no + 1) fails" 1 xc generate outputs/model.safetensors outputs/generate.json --tamper ids
  a=$(one generate "${b[@]}" --prompt "the" --tokens 60 --seed 7 2>/dev/null); c=$(one generate "${b[@]}" --prompt "the" --tokens 60 --seed 7 2>/dev/null)
  [ -n "$a" ] && [ "$a" = "$c" ] && ok "generate --seed 7 twice: the same text" || bad "generate --seed 7 twice: the same text" "— '$a' vs '$c'"
  c=$(one generate "${b[@]}" --prompt "the" --tokens 60 --seed 8 2>/dev/null)
  [ "$a" != "$c" ] && ok "negative control: --seed 8 samples another text" || bad "negative control: --seed 8 samples another text" "— '$c'"
  a=$(one generate "${b[@]}" --prompt "$(printf 'a\tb\001\377\\')" --tokens 1 --temperature 0 2>/dev/null)
  [[ $a == "$(printf 'a\tb')\\x01\\xff\\\\"? ]] && ok "generate escapes what is not printable (\\x01, \\xff, a backslash doubled; a tab kept)" "($a)" \
    || bad "generate escapes what is not printable (\\x01, \\xff, a backslash doubled; a tab kept)" "— '$a'"
  expect_rc "generate with a prompt of data.max_length bytes" 2 one generate "${b[@]}" --prompt "$(printf 'x%.0s' {1..64})"
  expect_grep "generate with a prompt of data.max_length bytes: one line, longer than the context allows, the limit named" '^ddptok: error: generate: a prompt of 64 bytes, longer than the context allows: .*data.max_length = 64, so a prompt of at most 63' "$OUT"
  expect_rc "generate with a prompt of data.max_length - 1 bytes" 0 one generate "${b[@]}" --prompt "$(printf 'x%.0s' {1..63})" --tokens 1
  expect_rc "generate --temperature -1" 2 one generate "${b[@]}" --prompt the --temperature -1
  expect_grep "generate --temperature -1: one line naming the option and the range" '^ddptok: error: generate --temperature -1: expected a number from 0 to 100' "$OUT"
  expect_rc "generate without --prompt" 2 one generate "${b[@]}"
  expect_grep "generate without --prompt or --ids: one line naming both" '^ddptok: error: generate: give the prompt as --prompt TEXT .* or as --ids S,S,' "$OUT"
  expect_rc "generate before any corpus is refused" 2 one generate --config "$cfg" --set paths.outputs=syn --set paths.artifacts=syn-a --prompt the
  one prepare --config "$cfg" --set paths.outputs=syn >/dev/null
  expect_rc "generate on tiny.yaml's synthetic corpus" 2 one generate --config "$cfg" --set paths.outputs=syn --set paths.artifacts=syn-a --prompt the
  [ "$(grep -c . <<<"$OUT")" -eq 1 ] && grep -q '^ddptok: error: generate --prompt: syn/data/corpus.h5 holds token ids, not bytes (data.source: synthetic): give the prompt as --ids .*import --format bytes' <<<"$OUT" \
    && ok "generate on a synthetic corpus: one line, not byte-level, with the import to run" || bad "generate on a synthetic corpus: one line, not byte-level, with the import to run" "— $OUT"
  printf '[5, 6, 7, 8, 9, 10, 11, 12, 13, 14]\n%.0s' {1..40} >tok.jsonl
  local t=(--config bytes.yaml --set paths.outputs=tok --set train.world_size=1)
  one import "${t[@]}" --format jsonl --input tok.jsonl >/dev/null
  expect_rc "generate on a token corpus (import --format jsonl)" 2 one generate "${t[@]}" --prompt the
  expect_grep "generate on a token corpus: one line, not byte-level (import --format jsonl)" '^ddptok: error: generate --prompt: tok/data/corpus.h5 holds token ids, not bytes \(import --format jsonl\)' "$OUT"
  # On a corpus of token ids the prompt and the output are the source's ids (--ids).
  ddp 1 train "${t[@]}" --set paths.artifacts=tok-a --set train.rank_bands=auto --set train.interrupt_at=0 >/dev/null 2>&1
  expect_rc "generate --ids on the token corpus" 0 one generate "${t[@]}" --set paths.artifacts=tok-a --set train.rank_bands=auto --set train.interrupt_at=0 --ids 4,5,6 --tokens 5 --temperature 0
  expect_grep "generate --ids prints the prompt's and 5 more source ids" '^4 5 6( [0-9]+){5}$' "$OUT"
  expect_rc "generate --ids with an id beyond the vocabulary" 2 one generate "${t[@]}" --set paths.artifacts=tok-a --set train.rank_bands=auto --set train.interrupt_at=0 --ids 4,999
  expect_grep "generate --ids beyond the vocabulary: one line with the range" 'is not a source id in \[0, [0-9]+\]' "$OUT"
  # jsonl-text is byte-level (its UTF-8 bytes are ids b + 1, as evaluate's bits/byte says): not refused as "not byte-level"
  for i in {1..40}; do printf '"the quick brown fox jumps over %d lazy dogs"\n' "$i"; done >text.jsonl
  local j=(--config bytes.yaml --set paths.outputs=jt --set paths.artifacts=jt-a --set train.world_size=1)
  one import "${j[@]}" --format jsonl-text --input text.jsonl >/dev/null
  expect_rc "generate on a jsonl-text corpus with no checkpoint yet" 2 one generate "${j[@]}" --prompt the
  expect_grep "generate on a jsonl-text corpus: byte-level, refused only for the missing checkpoint" '^ddptok: error: generate: no checkpoint under jt-a/checkpoints' "$OUT"
}
# generate --top-k K (nanoGPT's top_k): only the K most likely ids are drawn from. K = 1 is the
# argmax whatever the temperature and seed (= --temperature 0); control: K = 2 samples another
# text for some seed of 0..9; 0 and K >= the vocabulary are off (the plain draw's text).
case_generate_top_k() {
  fixture bytes_trained || return
  local b=(--config bytes.yaml --prompt "the" --tokens 40) greedy s T k1=0 k2=0 plain
  greedy=$(one generate "${b[@]}" --temperature 0 2>/dev/null)
  for T in 1 3; do for s in 0 1 2 3 4; do
    [ "$(one generate "${b[@]}" --temperature $T --seed $s --top-k 1 2>/dev/null)" = "$greedy" ] && k1=$((k1 + 1))
  done; done
  [ -n "$greedy" ] && [ $k1 -eq 10 ] && ok "generate --top-k 1: the greedy text at temperatures 1 and 3, seeds 0..4" "(10 of 10)" \
    || bad "generate --top-k 1: the greedy text at temperatures 1 and 3, seeds 0..4" "— $k1 of 10"
  for s in 0 1 2 3 4 5 6 7 8 9; do
    [ "$(one generate "${b[@]}" --seed $s --top-k 2 2>/dev/null)" != "$greedy" ] && k2=$((k2 + 1))
  done
  [ $k2 -gt 0 ] && ok "negative control: generate --top-k 2 differs from greedy for some seed of 0..9" "($k2 of 10)" \
    || bad "negative control: generate --top-k 2 differs from greedy for some seed of 0..9" "— none did"
  grep -q '"top_k": 2' outputs/generate.json && ok "generate.json records top_k" || bad "generate.json records top_k"
  plain=$(one generate "${b[@]}" --seed 7 2>/dev/null)
  [ "$(one generate "${b[@]}" --seed 7 --top-k 0 2>/dev/null)" = "$plain" ] && [ "$(one generate "${b[@]}" --seed 7 --top-k 100000 2>/dev/null)" = "$plain" ] \
    && ok "generate --top-k 0 and --top-k 100000 (>= V): the plain draw's text" || bad "generate --top-k 0 and --top-k 100000 (>= V): the plain draw's text"
  [ "$(one generate "${b[@]}" --seed 7 --top-k 3 2>/dev/null)" != "$plain" ] && ok "negative control: --top-k 3 at seed 7 is another text than the plain draw" \
    || bad "negative control: --top-k 3 at seed 7 is another text than the plain draw"
  expect_rc "generate --top-k -1" 2 one generate "${b[@]}" --top-k -1
  [ "$(grep -c . <<<"$OUT")" -eq 1 ] && grep -q -- '--top-k' <<<"$OUT" && ok "generate --top-k -1: one line naming the option" "($OUT)" \
    || bad "generate --top-k -1: one line naming the option" "— $OUT"
}
# The build line, as the Makefile can write it: the release, then the commit or "(no git)"
# where none is known (a tarball, a tree copied without .git, a machine without git).
BUILD_LINE_RE='^ddptok [0-9]+\.[0-9]+\.[0-9]+ \(([0-9a-f]{7,}(-dirty)?|no git)\) \(CUDA backend: .*\); Open MPI v[0-9.]+, HDF5 [0-9.]+, libyaml [0-9.]+, jansson [0-9.]+, OpenBLAS [0-9.]+'
case_check_env() {
  expect_rc "check-env W=2" 0 ddp 2 check-env --config "$cfg"
  expect_grep "check-env: exact test all-reduce" 'int64 sum 3 \(expected 3\), float average 1.5 \(expected 1.5\): ok' "$OUT"
  expect_grep "check-env: the build line" "$BUILD_LINE_RE" "$OUT"
}
# Issue 38.1: a tree without .git on a machine without git (a fresh minimal Debian has none)
# builds, says "(no git)", and its check-env passes the same build-line check as above.
case_build_without_git() {
  local X="$PWD/nogit" shim="$PWD/shim" rc
  mkdir -p "$X" "$shim"
  tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude=./ddptok --exclude=./COMMIT --exclude=./outputs \
    --exclude=./artifacts -cf - . | tar -C "$X" -xf -
  # git absent: the name resolves to a command that is not there (exit 127, as the shell's own).
  printf '#!/bin/sh\necho "git: not found" >&2\nexit 127\n' >"$shim/git" && chmod +x "$shim/git"
  OUT=$(cd "$X" && PATH="$shim:$PATH" timeout 900 make -s CUDA=0 -j"$(nproc)" ddptok 2>&1); rc=$?
  [ $rc -eq 0 ] && [ -x "$X/ddptok" ] && ok "a tree without .git builds where git is absent (make CUDA=0 ddptok)" \
    || { bad "a tree without .git builds where git is absent (make CUDA=0 ddptok)" "— exit $rc"; echo "$OUT" | tail -3; return; }
  OUT=$("$X/ddptok" --version 2>&1)
  expect_grep "built without git: --version says (no git)" '^ddptok [0-9]+\.[0-9]+\.[0-9]+ \(no git\) \(CUDA backend: not built in\)' "$OUT"
  OUT=$(timeout -k 5 120 mpirun -np 2 "$X/ddptok" check-env --config "$cfg" 2>&1); rc=$?
  [ $rc -eq 0 ] && ok "built without git: check-env W=2 passes" || { bad "built without git: check-env W=2 passes" "— exit $rc"; echo "$OUT" | tail -3; }
  expect_grep "built without git: check-env's build line passes check-env's build-line check" "$BUILD_LINE_RE" "$OUT"
  # The control: the same check rejects a build line that is not one (no release number).
  if grep -qE -- "$BUILD_LINE_RE" <<<"${OUT//ddptok [0-9]/ddptok x}"; then bad "the build-line check rejects a line without its release number"
  else ok "the build-line check rejects a line without its release number"; fi
}
# Issue 38.5: `make hf-venv` is CPU-sized: a venv over Debian's torch (--system-site-packages,
# the --hf packages bring python3-torch), PyPI giving transformers pinned and safetensors, never a
# torch (a plain `pip install torch` is ~5.6 GB of CUDA wheels). Read from make's own dry run.
hf_venv_sized() {  # RECIPE PACKAGES: 0 where the recipe is CPU-sized
  local pip
  grep -q -- '-m venv --system-site-packages' <<<"$1" || return 1
  pip=$(grep -m1 'pip install' <<<"$1") || return 1
  grep -qE '(^| )torch([=<> ]|$)' <<<"${pip#*install}" && return 1
  grep -qE 'transformers==[0-9]' <<<"$pip" || return 1
  grep -qw python3-torch <<<"$2" && grep -qw python3-venv <<<"$2"
}
case_hf_venv_cpu_sized() {
  local recipe pkgs
  recipe=$(make -C "$ROOT" -n -B build/hf-venv/.ready 2>&1)
  pkgs=$(sed -n '/= --hf ]/,/^fi/p' "$ROOT/run/install-deps.sh")
  hf_venv_sized "$recipe" "$pkgs" && ok "make hf-venv: a venv over Debian's torch, transformers pinned from PyPI, no torch wheel"     || bad "make hf-venv: a venv over Debian's torch, transformers pinned from PyPI, no torch wheel" "— $(grep -m2 'venv\|pip' <<<"$recipe")"
  # The control: the recipe it replaced (a bare venv, torch from PyPI) is not CPU-sized.
  hf_venv_sized "rm -rf build/hf-venv && /usr/bin/python3 -m venv build/hf-venv
build/hf-venv/bin/pip install --quiet torch transformers safetensors numpy h5py pyyaml" "$pkgs" \
    && bad "negative control: a venv that pip-installs torch is refused" || ok "negative control: a venv that pip-installs torch is refused"
  grep -q 'make hf-venv' "$ROOT/README.md" && ok "the README names make hf-venv" || bad "the README names make hf-venv"
}
case_version() {
  expect_rc "ddptok --version" 0 one --version
  expect_grep "ddptok --version names the release, the commit, the backends and the libraries" '^ddptok [0-9]+\.[0-9]+\.[0-9]+ \(([0-9a-f]{7,}(-dirty)?|no git)\) \(CUDA backend: (built in, (NCCL [0-9.]+, )?module [^ ]+(, opened on use| missing)?|not built in)\); Open MPI' "$OUT"
  expect_grep "ddptok --version names the BLAS kernel OpenBLAS runs" '; BLAS kernel [A-Za-z0-9]+' "$OUT"
}
case_check_env_dual() { expect_rc "check-env --dual refuses a CPU run" 1 ddp 2 check-env --config "$cfg" --dual; }
# Singulars (issue 20.5): one rank "was" started, not "1 ranks were"; --help lists every exit code.
case_singulars_and_exit_codes() {
  expect_rc "train on 1 rank with train.world_size 2" 2 one train --config "$cfg"
  expect_grep "train on 1 rank with train.world_size 2: says 1 rank was started" 'train.world_size is 2 but 1 rank was started: run `' "$OUT"
  expect_rc "ddptok --help" 0 one --help
  expect_grep "ddptok --help lists exit code 70 (internal error)" '70 internal error' "$OUT"
}
# clean: the dry run changes nothing; the real one removes only what ddptok generated.
# The protocol is run here, not copied from the fixture: clean removes only what ddptok
# recorded making, and a copy is not what ddptok made.
case_clean() {
  fixture_protocol || { bad "clean: the whole protocol on the tiny config ran"; return; }
  echo keep > outputs/mine.txt
  local before left; before=$(find outputs artifacts | sort | sha256sum)
  expect_rc "clean --dry-run" 0 one clean --scope generated --dry-run --config "$cfg"
  [ "$(find outputs artifacts | sort | sha256sum)" = "$before" ] && ok "clean --dry-run changed nothing" || bad "clean --dry-run changed nothing"
  expect_rc "clean --scope generated" 0 one clean --scope generated --config "$cfg"
  left=$(find outputs artifacts | sort | tr '\n' ' ')
  [ "$left" = "artifacts outputs outputs/mine.txt " ] && ok "clean removed only generated files (kept outputs/mine.txt)" || bad "clean removed only generated files (kept outputs/mine.txt)" "— left: $left"
  expect_rc "clean without --scope is refused" 2 one clean --config "$cfg"
}
# Options come from each command's table (options.h): `ddptok CMD --help` lists every option
# its usage line names, the same ones `ddptok --help` lists under CMD, and the command
# accepts each of them (an option it does not declare is refused: the control).
case_help_lists_options() {
  local r
r=$(/usr/bin/python3 - "$DDPTOK" "$cfg" <<'PY' 2>&1
import re, subprocess, sys
ddptok, cfg = sys.argv[1:]
run = lambda *a: subprocess.run([ddptok, *a], capture_output=True, text=True)
top = run("--help").stdout
listed, cur = {}, None  # the options under each command in `ddptok --help`
for line in top.splitlines():
    m = re.match(r"^  ([a-z][a-z-]*) +\[(W ranks|1 rank)\]", line)
    o = re.match(r"^      (--[a-z-]+)", line)
    if m: cur = m.group(1); listed[cur] = []
    elif o and cur: listed[cur].append(o.group(1))
    else: cur = None
assert len(listed) >= 13, f"commands in ddptok --help: {sorted(listed)}"
total = 0
for c in listed:
    h = run(c, "--help")
    assert h.returncode == 0, f"{c} --help: exit {h.returncode}"
    usage = h.stdout.splitlines()[0].split("[--set KEY=VALUE]...", 1)[1]
    section = h.stdout.split("\noptions:\n", 1)[1].split("\n\n", 1)[0] if "\noptions:\n" in h.stdout else ""
    opts = re.findall(r"^  (--[a-z-]+)(?: (\S+))?  ", section, re.M)
    names = [n for n, _ in opts]
    assert sorted(names) == sorted(re.findall(r"--[a-z-]+", usage)), f"{c}: options section {names} vs usage line{usage}"
    assert names == listed[c], f"{c}: {c} --help lists {names}, ddptok --help {listed[c]}"
    for name, metavar in opts:
        r = run("--check", c, "--config", cfg, name, *([metavar.split("|")[0]] if metavar else []))
        assert "unknown option" not in r.stderr, f"{c} {name}: {r.stderr.strip()}"
        total += 1
    r = run("--check", c, "--config", cfg, "--no-such-option")
    assert r.returncode == 2 and "unknown option '--no-such-option'" in r.stderr, f"{c}: an undeclared option: {r.stderr.strip()}"
assert total >= 9, f"only {total} options declared"
print(total)
PY
) && ok "--help: the declared options of every command are listed by CMD --help and ddptok --help, and accepted" "($r options)" \
  || bad "--help: the declared options of every command are listed by CMD --help and ddptok --help, and accepted" "— $r"
}
# "Did you mean" for every command's options and the common ones (train's: case train_fresh_typo).
case_option_suggestions() {
  expect_rc "a mistyped option of clean" 2 one --check clean --config "$cfg" --scope generated --dryrun
  expect_grep "clean --dryrun: did you mean '--dry-run'" "^ddptok: error: clean: unknown option '--dryrun' \(did you mean '--dry-run'\? try: [^ ]*ddptok clean --help\)$" "$OUT"
  expect_rc "a mistyped option of evaluate" 2 one --check evaluate --config "$cfg" --checkpiont x
  expect_grep "evaluate --checkpiont: did you mean '--checkpoint'" "^ddptok: error: evaluate: unknown option '--checkpiont' \(did you mean '--checkpoint'\? try: [^ ]*ddptok evaluate --help\)$" "$OUT"
  expect_rc "a mistyped common option" 2 one prepare --confg "$cfg"
  expect_grep "prepare --confg: did you mean '--config'" "^ddptok: error: prepare: unknown option '--confg' \(did you mean '--config'\? try: [^ ]*ddptok prepare --help\)$" "$OUT"
}
# --check validates the options as the run does (issue 21.10: it accepted --scope x).
case_check_validates_options() {
  expect_rc "--check clean --scope x is refused as the run refuses it" 2 one --check clean --config "$cfg" --scope x
  expect_grep "--check clean --scope x: names the one scope" "^ddptok: error: clean: --scope x: expected generated$" "$OUT"
  expect_rc "--check clean without --scope is refused" 2 one --check clean --config "$cfg"
  expect_rc "--check train --fresh --resume latest is refused" 2 one --check train --config "$cfg" --fresh --resume latest
  expect_grep "--check train --fresh --resume: they exclude each other" "^ddptok: error: train: --fresh and --resume exclude each other" "$OUT"
}
# ... and a command's checks of its config and options that come before any file is read:
# --check refuses them with the run's own line (each said ok before).
check_like_run() {  # NAME CMD ARGS...: the run and --check both exit 2 with the same one line
  local name=$1; shift
  local run_err chk_err rc crc
  run_err=$("$DDPTOK" "$@" 2>&1 >/dev/null); rc=$?
  chk_err=$("$DDPTOK" --check "$@" 2>&1 >/dev/null); crc=$?
  [ $rc -eq 2 ] && [ $crc -eq 2 ] && [ "$(grep -c . <<<"$chk_err")" -eq 1 ] && [ "$chk_err" = "$run_err" ] \
    && ok "$name: --check refuses it with the run's line" "— ${chk_err#ddptok: error: }" \
    || bad "$name: --check refuses it with the run's line" "— run exit $rc '$run_err', --check exit $crc '$chk_err'"
}
case_check_like_run() {
  check_like_run "prepare with data.source: imported" prepare --config "$cfg" --set data.source=imported
  check_like_run "exercise with its token counts past data.max_length" exercise --config "$CONFIGS/exercise.yaml" \
    --set data.min_length=4 --set data.max_length=20 --set train.rank_bands=auto
  check_like_run "export --out longer than 1099 bytes" export --config "$cfg" --out "o$(printf '/%.0s' $(seq 1100))m.safetensors"
}
# clean removes only what ddptok recorded making (issue 21.1), not what merely has the name
# of an output: a user's data/ and checkpoints.old-X/ were removed before (exit 0).
case_clean_user_files() {
  mkdir -p home/data art/checkpoints.old-X && echo t > home/data/thesis.tex && echo k > art/checkpoints.old-X/p
  local mine=(--set paths.outputs=home --set paths.artifacts=art)
  expect_rc "clean with a user's home/data/ and art/checkpoints.old-X/: exit 1, something left" 1 one clean --config "$cfg" "${mine[@]}" --scope generated
  [ "$(cat home/data/thesis.tex art/checkpoints.old-X/p 2>/dev/null | tr '\n' ' ')" = "t k " ] \
    && ok "clean left the user's home/data/thesis.tex and art/checkpoints.old-X/p" || bad "clean left the user's home/data/thesis.tex and art/checkpoints.old-X/p"
  expect_grep "clean lists the user's data/ as left" "^left: home/data/ \(not made by ddptok\)$" "$OUT"
  expect_grep "clean lists the user's checkpoints.old-X/ as left" "^left: art/checkpoints.old-X/ \(not made by ddptok\)$" "$OUT"
  one prepare --config "$cfg" "${mine[@]}" >/dev/null
  expect_rc "clean after prepare wrote into the user's home/data/: exit 1" 1 one clean --config "$cfg" "${mine[@]}" --scope generated
  [ ! -e home/data/corpus.h5 ] && [ ! -e home/data/plan.h5 ] && [ "$(cat home/data/thesis.tex)" = t ] \
    && ok "clean removed the corpus ddptok wrote into the user's directory, kept the directory and the user's file" \
    || bad "clean removed the corpus ddptok wrote into the user's directory, kept the directory and the user's file"
}
# In directories ddptok made: a user's file and a link to a user's directory are left (the
# link never followed); what ddptok made beside them goes (the negative control), and so
# does the directory train --fresh moved the lineage aside to, but not a user's look-alike.
case_clean_made_directories() {
  local made=(--set paths.outputs=made --set paths.artifacts=made-art) aside W=$PWD
  one prepare --config "$cfg" "${made[@]}" >/dev/null && ddp 2 train --config "$cfg" "${made[@]}" >/dev/null 2>&1 \
    && ddp 2 train --config "$cfg" "${made[@]}" --fresh >/dev/null 2>&1
  aside=$(ls -d made-art/checkpoints.old-* 2>/dev/null)
  echo t > made/data/thesis.tex && mkdir -p foreign made-art/checkpoints.old-mine && echo f > foreign/keep && ln -s "$W/foreign" made/plot
  echo k > made-art/checkpoints.old-mine/p
  expect_rc "clean of ddptok-made directories holding a user's file and a link: exit 1" 1 one clean --config "$cfg" "${made[@]}" --scope generated
  [ "$(cat made/data/thesis.tex)" = t ] && [ ! -e made/data/corpus.h5 ] && [ ! -e made/data/plan.h5 ] \
    && ok "clean kept the user's file in ddptok's made/data/ and removed ddptok's corpus and plan beside it" \
    || bad "clean kept the user's file in ddptok's made/data/ and removed ddptok's corpus and plan beside it"
  expect_grep "clean lists the user's file in made/data/" "^left: made/data/thesis.tex \(not made by ddptok\)$" "$OUT"
  [ -L made/plot ] && [ "$(cat foreign/keep)" = f ] && ok "clean left the link made/plot and its target's files" || bad "clean left the link made/plot and its target's files"
  expect_grep "clean lists the link as left" "^left: made/plot \(not made by ddptok\)$" "$OUT"
  [ -n "$aside" ] && [ ! -e "$aside" ] && [ ! -e made-art/checkpoints ] && [ ! -e made/train ] && [ ! -e made/logs ] \
    && ok "clean removed train's logs, checkpoints and what train --fresh moved aside" "(${aside:-none})" \
    || bad "clean removed train's logs, checkpoints and what train --fresh moved aside" "— aside '${aside}'"
  [ "$(cat made-art/checkpoints.old-mine/p)" = k ] && ok "clean left the user's made-art/checkpoints.old-mine/" || bad "clean left the user's made-art/checkpoints.old-mine/"
}
# make install into a DESTDIR: the installed ddptok and ddprun work from another directory
# (ddprun finds the ddptok beside it), and make uninstall leaves no file behind.
case_install() {
  local W=$PWD rc left; local I="$W/destdir" ver; ver=$(cat "$ROOT/VERSION")
  OUT=$(make -s -C "$ROOT" install DESTDIR="$I" 2>&1); rc=$?
  [ $rc -eq 0 ] && [ -x "$I/usr/local/bin/ddptok" ] && [ -x "$I/usr/local/bin/ddprun" ] && [ -f "$I/usr/local/share/ddptok/configs/tiny.yaml" ] \
    && [ -f "$I/usr/local/share/ddptok/docs/launching.md" ] && [ -f "$I/usr/local/share/ddptok/README.md" ] \
    && ok "make install DESTDIR=...: bin/ddptok, bin/ddprun, share/ddptok/{configs,docs,README.md}" \
    || { bad "make install DESTDIR=...: bin/ddptok, bin/ddprun, share/ddptok/{configs,docs,README.md}" "— exit $rc"; echo "$OUT" | tail -3; }
  mkdir -p "$W/elsewhere"
  OUT=$(cd "$W/elsewhere" && "$I/usr/local/bin/ddptok" --version 2>&1)
  expect_grep "the installed ddptok --version names release $ver" "^ddptok ${ver//./\\.} \(([0-9a-f]{7,}(-dirty)?|no git)\) \(CUDA backend" "$OUT"
  OUT=$(cd "$W/elsewhere" && timeout 60 "$I/usr/local/bin/ddptok" check-loss --config "$I/usr/local/share/ddptok/configs/tiny.yaml" 2>&1); rc=$?
  [ $rc -eq 0 ] && [ -f "$W/elsewhere/outputs/check_loss.json" ] && ok "the installed ddptok runs check-loss from another directory, with the installed config" \
    || { bad "the installed ddptok runs check-loss from another directory, with the installed config" "— exit $rc"; echo "$OUT" | tail -3; }
  OUT=$(cd "$W/elsewhere" && DDPRUN_QUIET=1 timeout 60 "$I/usr/local/bin/ddprun" -np 1 check-loss --config "$I/usr/local/share/ddptok/configs/tiny.yaml" 2>&1); rc=$?
  [ $rc -eq 0 ] && ok "the installed ddprun -np 1 check-loss runs the ddptok installed beside it" \
    || { bad "the installed ddprun -np 1 check-loss runs the ddptok installed beside it" "— exit $rc"; echo "$OUT" | tail -3; }
  OUT=$(make -s -C "$ROOT" uninstall DESTDIR="$I" 2>&1); rc=$?
  left=$(find "$I" ! -type d | tr '\n' ' ')
  [ $rc -eq 0 ] && [ -z "$left" ] && [ ! -e "$I/usr/local/share/ddptok" ] && ok "make uninstall: no file left, share/ddptok gone" \
    || { bad "make uninstall: no file left, share/ddptok gone" "— exit $rc, left: $left"; echo "$OUT" | tail -3; }
}
# make dist: the tarball builds outside git and --version shows the number and its commit;
# without the COMMIT file, the number alone.
case_dist() {
  if ! command -v git >/dev/null; then
    skip "make dist" "git is not installed (make dist archives HEAD with git; commands:build_without_git builds such a tree)"; return
  fi
  if ! git -C "$ROOT" rev-parse --verify -q HEAD >/dev/null 2>&1; then
    skip "make dist" "$ROOT is not a git checkout (make dist archives HEAD)"; return
  fi
  local X="$PWD/dist" rc head ver; ver=$(cat "$ROOT/VERSION"); mkdir -p "$X"
  OUT=$(make -s -C "$ROOT" dist DIST_TO="$X" 2>&1); rc=$?
  head=$(git -C "$ROOT" rev-parse --short HEAD)
  [ $rc -eq 0 ] && tar -xzf "$X/ddptok-$ver.tar.gz" -C "$X" && [ ! -e "$X/ddptok-$ver/.git" ] && [ "$(cat "$X/ddptok-$ver/COMMIT")" = "$head" ] \
    && ok "make dist: ddptok-$ver.tar.gz unpacks without .git, COMMIT $head" || { bad "make dist: ddptok-$ver.tar.gz unpacks without .git, COMMIT $head" "— exit $rc"; echo "$OUT" | tail -3; }
  OUT=$(cd "$X/ddptok-$ver" && timeout 600 make -s CUDA=0 -j"$(nproc)" ddptok 2>&1 && ./ddptok --version 2>&1); rc=$?
  expect_grep "make dist: the tarball builds outside git (make CUDA=0 ddptok): ddptok $ver ($head)" "^ddptok ${ver//./\\.} \($head\) \(CUDA backend: not built in\)" "$OUT"
  OUT=$(cd "$X/ddptok-$ver" && rm COMMIT && make -s CUDA=0 ddptok 2>&1 && ./ddptok --version 2>&1)
  expect_grep "make dist: with no commit known, --version says so: ddptok $ver (no git)" "^ddptok ${ver//./\\.} \(no git\) \(CUDA backend: not built in\)" "$OUT"
}
