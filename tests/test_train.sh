# Train, checkpoint and exact resume: interrupted + resumed == continuous bit for bit
# (model and every optimizer state tensor, every rank), with dropout on, for W = 2 and
# W = 3, with SGD and with AdamW; resumes that skip the RNG, the sampler or one optimizer
# state tensor (SGD's momentum; AdamW's first or second moment) must come out different
# (negative controls). A version-1 checkpoint (tests/fixtures/checkpoint-v1-tiny, written
# by the format-1 binary) resumes to the same bits as its own state rewritten in the current
# format (tests/reseal_ckpt.py). The factored first layer resumes bit-exactly, and its
# checkpoints resume under the dense one.
cfg="$CONFIGS/tiny.yaml"
W3=(--set train.world_size=3 --set train.rank_bands=auto)
adamw=(--set train.optimizer.name=adamw --set train.optimizer.lr=0.01 --set train.optimizer.weight_decay=0.1)
cmp_ckpt() { /usr/bin/python3 "$ROOT/tests/compare_ckpt.py" "$@"; }
resume_case() {  # NP SETS...   (PARTS: the state parts whose omission must show; LABEL: the checks' names start with it)
  local np=$1; shift
  local parts=${PARTS:-rng momentum sampler} label=${LABEL:-exact resume W=$np} d part
  rm -rf outputs artifacts
  one prepare --config "$cfg" "$@" >/dev/null
  expect_rc "$label: train (interrupted at 6)" 0 ddp $np train --config "$cfg" "$@" || return
  [ -f artifacts/checkpoints/step-0006/rank-0000.h5 ] && [ ! -e artifacts/checkpoints/step-0006.tmp ] && ok "$label: step-0006 published, no temporary left" \
    || bad "$label: step-0006 published, no temporary left"
  expect_rc "$label: train --continuous" 0 ddp $np train --config "$cfg" "$@" --continuous || return
  expect_rc "$label: train --resume step-0006" 0 ddp $np train --config "$cfg" "$@" --resume artifacts/checkpoints/step-0006 || return
  d=$(cmp_ckpt artifacts/checkpoints/step-0012 artifacts/continuous/step-0012) \
    && ok "$label: resumed step-12 model and optimizer state bit-identical to continuous" "(max |dtheta| = $d)" \
    || bad "$label: resumed step-12 model and optimizer state bit-identical to continuous" "— max |dtheta| = $d"
  # Logged losses of steps 7..12 equal too (the same windows, the same masks).
  if diff <(sed -E 's/, "seconds".*//' outputs/train/resumed.jsonl) <(sed -E 's/, "seconds".*//' outputs/train/continuous.jsonl | tail -n +7) >/dev/null; then
    ok "$label: resumed log lines equal the continuous run's steps 7..12"
  else bad "$label: resumed log lines equal the continuous run's steps 7..12"; fi
  for part in $parts; do
    rm -rf artifacts/checkpoints/step-0012
    DDPTOK_TEST_RESUME_SKIP=$part ddp $np train --config "$cfg" "$@" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
    d=$(cmp_ckpt artifacts/checkpoints/step-0012 artifacts/continuous/step-0012) \
      && bad "$label: negative control — resume without the $part state differs" "— it still matched" \
      || ok "$label: negative control — resume without the $part state differs" "(max |dtheta| = $d)"
  done
}
# prepare, train (interrupted at 6) and train --continuous with SETS (quiet; fails if one does)
trained() { one prepare --config "$cfg" "$@" >/dev/null && ddp "$NP" train --config "$cfg" "$@" >/dev/null 2>&1 && ddp "$NP" train --config "$cfg" "$@" --continuous >/dev/null 2>&1; }
fixture_w3() { NP=3 trained "${W3[@]}"; }
fixture_factored() { NP=2 trained --set train.first_layer=factored; }

case_resume_w2() { resume_case 2; }
case_resume_w3() { resume_case 3 "${W3[@]}"; }
# The JSONL lines carry the SPEC fields; the loss is the global token mean.
case_jsonl_fields() {
  fixture w3 || return
  local l n
  l=$(head -1 outputs/train/continuous.jsonl)
  expect_grep "train JSONL line has step, loss, tokens, rank_tokens, sequences, seconds" '^\{"step": 1, "loss": [0-9.]+, "tokens": [0-9]+, "rank_tokens": \[[0-9]+, [0-9]+, [0-9]+\], "sequences": [0-9]+, "seconds": [0-9.]+, ' "$l"
  n=$(wc -l < outputs/logs/continuous/rank-2.log)
  [ "$n" -eq 12 ] && ok "train writes a per-rank log outputs/logs/continuous/rank-2.log, a line per step" "($n lines)" \
    || bad "train writes a per-rank log outputs/logs/continuous/rank-2.log, a line per step" "— $n lines"
}
# --resume latest picks the newest complete checkpoint.
case_resume_latest() {
  fixture w3 || return
  expect_rc "--resume latest" 0 ddp 3 train --config "$cfg" "${W3[@]}" --resume latest
  expect_grep "--resume latest resumed from step 6 (the newest complete checkpoint)" 'steps 7\.\.12' "$OUT"
}
case_adamw_w2() { PARTS="exp_avg_sq exp_avg rng" LABEL="exact resume AdamW W=2" resume_case 2 "${adamw[@]}"; }
case_adamw_w3() {
  PARTS="exp_avg_sq exp_avg" LABEL="exact resume AdamW W=3" resume_case 3 "${W3[@]}" "${adamw[@]}"
  /usr/bin/python3 -c "
import h5py; f = h5py.File('artifacts/checkpoints/step-0006/rank-0002.h5'); o = f['optimizer']
assert set(o) == {'exp_avg', 'exp_avg_sq'} and o.attrs['name'] == b'adamw' and o.attrs['step'] == 6 and o.attrs['beta2'] == 0.999
assert (o['exp_avg_sq/w1'][()] > 0).any() and (o['exp_avg_sq/w1'][()] >= 0).all()" \
    && ok "AdamW checkpoint: /optimizer/{exp_avg,exp_avg_sq}/<param>, attributes name, step, betas" || bad "AdamW checkpoint: /optimizer/{exp_avg,exp_avg_sq}/<param>, attributes name, step, betas"
}
# train.lr_schedule: cosine (nanoGPT's get_lr, `it` the 0-based update): every update's rate
# in the JSONL is the formula's, and a resume follows it bit for bit (the rate is a function
# of the restored step count alone). Control: the same run at a constant rate ends elsewhere.
cosine=(--set train.lr_schedule=cosine --set train.warmup_updates=3 --set train.lr_decay_updates=10 --set train.min_lr=0.001)
case_cosine_w3() {
  PARTS="exp_avg" LABEL="exact resume cosine AdamW W=3" resume_case 3 "${W3[@]}" "${adamw[@]}" "${cosine[@]}" || return
  /usr/bin/python3 - outputs/train/continuous.jsonl <<'PY' && ok "cosine: the JSONL's lr of updates 1..12 is nanoGPT's get_lr(0..11)" || bad "cosine: the JSONL's lr of updates 1..12 is nanoGPT's get_lr(0..11)"
import json, math, sys
def get_lr(it, lr=0.01, warmup=3, decay=10, min_lr=0.001):
    if it < warmup: return lr * (it + 1) / (warmup + 1)
    if it > decay: return min_lr
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * (it - warmup) / (decay - warmup))) * (lr - min_lr)
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["step"] for r in rows] == list(range(1, 13)), rows
for r in rows:
    want = get_lr(r["step"] - 1)
    assert abs(r["lr"] - want) <= 1e-8 * want, (r["step"], r["lr"], want)
PY
  rm -rf artifacts/cosine && mv artifacts/continuous artifacts/cosine
  expect_rc "cosine: the constant rate's continuous run" 0 ddp 3 train --config "$cfg" "${W3[@]}" "${adamw[@]}" --continuous
  d=$(cmp_ckpt artifacts/cosine/step-0012 artifacts/continuous/step-0012) \
    && bad "cosine: negative control — the constant rate's run differs" "— it still matched" \
    || ok "cosine: negative control — the constant rate's run differs" "(max |dtheta| = $d)"
  expect_rc "cosine: a resume under the constant schedule is refused" 2 ddp 3 train --config "$cfg" "${W3[@]}" "${adamw[@]}" --resume artifacts/checkpoints/step-0006
  expect_grep "cosine: the refusal names train.lr_schedule" 'train.lr_schedule' "$OUT"
  expect_rc "cosine: lr_decay_updates <= warmup_updates refused" 2 one train --config "$cfg" "${adamw[@]}" "${cosine[@]}" --set train.lr_decay_updates=3
  expect_grep "cosine: the refusal names both keys" 'train.lr_decay_updates \(3\) must exceed train.warmup_updates \(3\)' "$OUT"
}
# train.grad_clip: torch's clip_grad_norm_ on the all-reduced gradient. The norm before the
# clip is in every JSONL line and the progress line; at 0.05 it is active (the norm above
# it) and a resume stays bit-exact; control: the same run unclipped ends elsewhere.
case_clip_w3() {
  local clip=(--set train.grad_clip=0.05) d
  PARTS="exp_avg" LABEL="exact resume clipped AdamW W=3" resume_case 3 "${W3[@]}" "${adamw[@]}" "${clip[@]}" || return
  /usr/bin/python3 - outputs/train/continuous.jsonl <<'PY' && ok "clip: every JSONL line has grad_norm, above 0.05 (active) on every update" || bad "clip: every JSONL line has grad_norm, above 0.05 (active) on every update"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 12 and all(r["grad_norm"] > 0.05 for r in rows), [r.get("grad_norm") for r in rows]
PY
  expect_grep "clip: the progress line shows the norm" '  norm [0-9.]+  tokens' "$(ddp 3 train --config "$cfg" "${W3[@]}" "${adamw[@]}" "${clip[@]}" --resume artifacts/checkpoints/step-0006 2>&1)"
  rm -rf artifacts/clipped && mv artifacts/continuous artifacts/clipped
  expect_rc "clip: the unclipped continuous run" 0 ddp 3 train --config "$cfg" "${W3[@]}" "${adamw[@]}" --continuous
  grep -q grad_norm outputs/train/continuous.jsonl && bad "clip: off, no grad_norm in the JSONL" || ok "clip: off, no grad_norm in the JSONL"
  d=$(cmp_ckpt artifacts/clipped/step-0012 artifacts/continuous/step-0012) \
    && bad "clip: negative control — the unclipped run differs" "— it still matched" \
    || ok "clip: negative control — the unclipped run differs" "(max |dtheta| = $d)"
}
# train.optimizer.decay: matrices: weight decay on the tensors of rank >= 2 only. After one
# AdamW update from the same θ0 (the same gradient), a rank-1 tensor (bias) is bit-identical
# to the run without weight decay and every rank-2 tensor differs from it; control: under
# decay: all the biases differ too. Plus an exact resume under matrices.
# decay_runs: one AdamW update of $cfg at W = 2 under decay matrices, all, and weight decay 0
# ("none"), each step-1 checkpoint kept as artifacts/<group> (the GPT group's case uses it too).
decay_runs() {
  local one_update=(--set train.updates=1 --set train.interrupt_at=0) g
  rm -rf outputs artifacts; one prepare --config "$cfg" >/dev/null
  for g in matrices all none; do
    local set=(--set train.optimizer.decay=$g); [ $g = none ] && set=(--set train.optimizer.weight_decay=0)
    rm -rf artifacts/checkpoints
    expect_rc "decay $g: one update" 0 ddp 2 train --config "$cfg" "${adamw[@]}" "${set[@]}" "${one_update[@]}" || return
    rm -rf "artifacts/$g" && cp -r artifacts/checkpoints/step-0001 "artifacts/$g"
  done
}
case_decay_matrices() {
  decay_runs || return
  /usr/bin/python3 - <<'PY' && ok "decay matrices: after one update, rank-1 tensors equal the no-decay run's bits, rank-2 ones differ; under all every tensor differs" || bad "decay matrices: after one update, rank-1 tensors equal the no-decay run's bits, rank-2 ones differ; under all every tensor differs"
import h5py, numpy as np
f = {g: h5py.File(f"artifacts/{g}/rank-0000.h5")["model"] for g in ("matrices", "all", "none")}
names = list(f["none"])
assert any(f["none"][n].ndim == 1 for n in names) and any(f["none"][n].ndim >= 2 for n in names), names
for n in names:
    same = np.array_equal(f["matrices"][n][()], f["none"][n][()])
    assert same == (f["none"][n].ndim == 1), (n, f["none"][n].ndim, same)
    assert not np.array_equal(f["all"][n][()], f["none"][n][()]), n
PY
  PARTS="exp_avg" LABEL="exact resume decay matrices W=2" resume_case 2 "${adamw[@]}" --set train.optimizer.decay=matrices
}
# The best validation checkpoint: with train.keep_best and train.eval_every, artifacts/best is published whenever an
# evaluation is the lowest validation loss so far (the JSONL's "best": true, best.json its
# step and loss). At lr 3 tiny.yaml's validation loss turns up after step 8: best's step and
# loss are the logged minimum's, its θ and optimizer state are those of a run's own step-8
# checkpoint (control: its step 10 differs), evaluate --checkpoint artifacts/best scores the
# same loss, and the run's step 12 is bit-identical to one without evaluations (no best).
case_best_checkpoint() {
  local run=(--set train.optimizer.lr=3 --set train.interrupt_at=0) s d
  rm -rf outputs artifacts; one prepare --config "$cfg" >/dev/null
  expect_rc "best: train W=2 with train.eval_every 2, train.keep_best true" 0 ddp 2 train --config "$cfg" "${run[@]}" --set train.eval_every=2 --set train.keep_best=true || return
  expect_grep "best: the progress line marks an improving evaluation" 'val [0-9.]+ \([0-9.]+ bits/token\)  best$' "$OUT"
  s=$(/usr/bin/python3 - <<'PY'
import json, h5py
rows = [json.loads(l) for l in open("outputs/train/interrupted.jsonl")]
ev = [(r["step"], r["validation"]["loss"], r.get("best", False)) for r in rows if "validation" in r]
low, marks = float("inf"), []
for step, loss, best in ev:
    marks.append(best == (loss < low)); low = min(low, loss)
step, loss = min(((s, l) for s, l, _ in ev), key=lambda x: x[1])
b = json.load(open("artifacts/best.json"))
assert all(marks), ev
assert b["step"] == step and float(f'{b["validation_loss"]:.9g}') == loss and step < 12, (b, ev)  # the JSONL's 9 digits
for r in range(2): assert h5py.File(f"artifacts/best/rank-{r:04d}.h5").attrs["step"] == step
print(step)
PY
) && ok "best: best.json's step and loss are the logged minimum (before the last step), its rank files' step too, \"best\" on each improving line" "(step $s)" \
    || { bad "best: best.json's step and loss are the logged minimum (before the last step), its rank files' step too, \"best\" on each improving line" "— $s"; return; }
  expect_rc "best: evaluate --checkpoint artifacts/best --split validation" 0 one evaluate --config "$cfg" "${run[@]}" --checkpoint artifacts/best --split validation
  /usr/bin/python3 -c "import json; e = json.load(open('outputs/evaluate.json')); b = json.load(open('artifacts/best.json')); l = e.get('loss', e.get('validation', {}).get('loss')); g = lambda x: float(f'{x:.9g}'); assert g(l) == g(b['validation_loss']), (l, b)" \
    && ok "best: evaluate scores the best checkpoint at best.json's loss" || bad "best: evaluate scores the best checkpoint at best.json's loss" "— $(head -c 300 outputs/evaluate.json)"
  expect_rc "best: the continuous run with the same evaluations, train.keep_best at its default, checkpoints every 2" 0 ddp 2 train --config "$cfg" "${run[@]}" --set train.eval_every=2 --set train.checkpoint_every=2 --continuous || return
  [ ! -e artifacts/continuous-best ] && [ ! -e artifacts/continuous-best.json ] && ! grep -q '  best$' <<<"$OUT" \
    && ok "best: none kept where train.keep_best is false (the default)" || bad "best: none kept where train.keep_best is false (the default)"
  d=$(cmp_ckpt artifacts/best "artifacts/continuous/step-$(printf %04d "$s")") \
    && ok "best: its model and optimizer state are the step-$s checkpoint's, bit for bit" "(max |dtheta| = $d)" \
    || bad "best: its model and optimizer state are the step-$s checkpoint's, bit for bit" "— max |dtheta| = $d"
  d=$(cmp_ckpt artifacts/best "artifacts/continuous/step-$(printf %04d $((s + 2)))") \
    && bad "best: negative control — the step-$((s + 2)) checkpoint differs" "— it still matched" \
    || ok "best: negative control — the step-$((s + 2)) checkpoint differs" "(max |dtheta| = $d)"
  d=$(cmp_ckpt artifacts/checkpoints/step-0012 artifacts/continuous/step-0012) \
    && ok "best: the trajectory is unchanged: step 12 bit-identical to the run that keeps no best" "(max |dtheta| = $d)" \
    || bad "best: the trajectory is unchanged: step 12 bit-identical to the run that keeps no best" "— max |dtheta| = $d"
}
# The best carried across a resume: interrupted at 10 and resumed, the run must keep the
# uninterrupted run's best (step 8 at lr 3; the resumed evaluation at step 12 is worse than it
# but better than nothing) — the same step, the same loss, the same bits. Control: the same
# resume with best.json gone (the best loss forgotten) replaces the best with step 12's, and
# the same comparison catches it.
best_same() {  # DIR: artifacts/DIR(.json) against the continuous run's continuous-best(.json); prints why not
  /usr/bin/python3 - "$1" <<'PY' || return 1
import json, sys
a, b = json.load(open(f"artifacts/{sys.argv[1]}.json")), json.load(open("artifacts/continuous-best.json"))
same = a["step"] == b["step"] and a["validation_loss"] == b["validation_loss"]
print(f'step {a["step"]} loss {a["validation_loss"]:.9g} against step {b["step"]} loss {b["validation_loss"]:.9g}')
sys.exit(not same)
PY
  cmp_ckpt "artifacts/$1" artifacts/continuous-best >/dev/null
}
case_best_resume() {
  local run=(--set train.optimizer.lr=3 --set train.interrupt_at=10 --set train.eval_every=2 --set train.keep_best=true) why
  rm -rf outputs artifacts; one prepare --config "$cfg" >/dev/null
  expect_rc "best resume: the uninterrupted run (--continuous), keep_best" 0 ddp 2 train --config "$cfg" "${run[@]}" --continuous || return
  expect_rc "best resume: the run interrupted at step 10" 0 ddp 2 train --config "$cfg" "${run[@]}" || return
  /usr/bin/python3 -c "import json; b = json.load(open('artifacts/best.json')); c = json.load(open('artifacts/continuous-best.json')); assert b['step'] == c['step'] < 10, (b, c)" \
    && ok "best resume: the continuous run's best is before the interruption, the interrupted run has it too" \
    || { bad "best resume: the continuous run's best is before the interruption, the interrupted run has it too"; return; }
  mkdir -p ctl && cp -a artifacts ctl/  # the state at the interruption, for the control
  expect_rc "best resume: --resume latest to step 12" 0 ddp 2 train --config "$cfg" "${run[@]}" --resume latest || return
  grep -q '  best$' <<<"$OUT" && bad "best resume: the resumed run marks no evaluation best (step 12 is worse than the best it carries)" \
    || ok "best resume: the resumed run marks no evaluation best (step 12 is worse than the best it carries)"
  why=$(best_same best) && ok "best resume: artifacts/best is the uninterrupted run's: step, loss and bits" "($why)" \
    || bad "best resume: artifacts/best is the uninterrupted run's: step, loss and bits" "— $why"
  # control: the resume with the best loss forgotten
  rm -rf artifacts && mv ctl/artifacts artifacts && rm artifacts/best.json
  expect_rc "best resume control: --resume latest with best.json removed" 0 ddp 2 train --config "$cfg" "${run[@]}" --resume latest || return
  expect_grep "best resume control: the forgetting resume marks its worse step 12 best" 'step 12/12 .*  best$' "$OUT"
  why=$(best_same best) && bad "negative control: a resume that forgot the best loss is caught by the same comparison" "— it matched: $why" \
    || ok "negative control: a resume that forgot the best loss is caught by the same comparison" "($why)"
}
# train.first_layer: factored resumes bit-exactly too (its tables and per-window sums are
# rebuilt each window, nothing of them is checkpointed); a checkpoint resumes under the
# other first layer (a computation strategy, not the model), close to but not the same
# bits as the factored run.
case_factored_w2() { PARTS="rng momentum" LABEL="exact resume factored W=2" resume_case 2 --set train.first_layer=factored; }
case_factored_ckpt_dense_resume() {
  fixture factored || return
  local d
  expect_rc "factored checkpoint resumed with the dense first layer" 0 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006
  d=$(cmp_ckpt artifacts/checkpoints/step-0012 artifacts/continuous/step-0012)
  /usr/bin/python3 -c "import sys; sys.exit(not (0 < $d <= 1e-5))" && ok "factored checkpoint resumed dense: step 12 within 1e-5 of the factored run, not the same bits" "(max |dtheta| = $d)" \
    || bad "factored checkpoint resumed dense: step 12 within 1e-5 of the factored run, not the same bits" "— max |dtheta| = $d, expected in (0, 1e-5]"
}
# ... and the other way: a dense checkpoint resumed with the factored first layer.
case_dense_ckpt_factored_resume() {
  local d
  NP=2 trained || bad "dense W=2 training for the factored resume"
  expect_rc "dense checkpoint resumed with the factored first layer" 0 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 --set train.first_layer=factored
  d=$(cmp_ckpt artifacts/checkpoints/step-0012 artifacts/continuous/step-0012)
  /usr/bin/python3 -c "import sys; sys.exit(not (0 < $d <= 1e-5))" && ok "dense checkpoint resumed factored: step 12 within 1e-5 of the dense run, not the same bits" "(max |dtheta| = $d)" \
    || bad "dense checkpoint resumed factored: step 12 within 1e-5 of the dense run, not the same bits" "— max |dtheta| = $d, expected in (0, 1e-5]"
}
# A version-1 checkpoint (SGD momentum, fixed fields) still resumes, bit-exactly. Like with
# like: the fixture was written on another machine, whose BLAS kernel may round steps 1..6
# differently from this one's (an AMD host's Haswell sgemm against an Intel host's SkylakeX:
# the last bit of some weights), so it is not compared with a continuous run made here, but
# with itself: its state resumed through the version-1 reader, and the same state rewritten
# in the current format by tests/reseal_ckpt.py (independent of ddptok's code; it verifies
# the fixture's own checksum first) resumed through the current reader must give the same
# step 12, bit for bit. Without its momentum it must not (the fixture's state is really read).
fixture_case() {  # LABEL FIXTURE RESEAL-EDITS...: the fixture and its resealed twin resume alike
  local label=$1 fixture=$2 d; shift 2
  rm -rf outputs artifacts
  one prepare --config "$cfg" >/dev/null
  mkdir -p artifacts/checkpoints && cp -r "$fixture" artifacts/checkpoints/step-0006
  expect_rc "$label: check-checkpoints accepts it" 0 one check-checkpoints --config "$cfg"
  expect_rc "$label: train --resume" 0 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 || return
  mv artifacts/checkpoints/step-0012 fixture-12
  rm -rf artifacts/checkpoints/step-0006
  expect_rc "$label: tests/reseal_ckpt.py rewrites it in the current format (its checksums reproduced first)" 0 \
    /usr/bin/python3 "$ROOT/tests/reseal_ckpt.py" "$fixture" artifacts/checkpoints/step-0006 "$@" || return
  expect_rc "$label, resealed: check-checkpoints accepts it" 0 one check-checkpoints --config "$cfg"
  expect_rc "$label, resealed: train --resume" 0 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 || return
  d=$(cmp_ckpt fixture-12 artifacts/checkpoints/step-0012) \
    && ok "$label: resumed as it is and resealed in the current format, step 12 bit-identical" "(max |dtheta| = $d)" \
    || bad "$label: resumed as it is and resealed in the current format, step 12 bit-identical" "— max |dtheta| = $d"
  rm -rf artifacts/checkpoints/step-0012
  cp -r "$fixture" fixture-6 && rm -rf artifacts/checkpoints/step-0006 && mv fixture-6 artifacts/checkpoints/step-0006
  DDPTOK_TEST_RESUME_SKIP=momentum ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 >/dev/null 2>&1
  d=$(cmp_ckpt fixture-12 artifacts/checkpoints/step-0012) \
    && bad "$label: negative control — a resume without its momentum differs" "— it still matched" \
    || ok "$label: negative control — a resume without its momentum differs" "(max |dtheta| = $d)"
  rm -rf fixture-12
}
# Resealed as this ddptok would write that state: every hyper-parameter attribute, those
# version 1 did not hold at the table's defaults (docs/config.md).
case_v1_checkpoint() {
  /usr/bin/python3 -c "import h5py; assert h5py.File('$ROOT/tests/fixtures/checkpoint-v1-tiny/rank-0000.h5').attrs['version'] == 1" \
    && ok "tests/fixtures/checkpoint-v1-tiny is a version-1 checkpoint" || bad "tests/fixtures/checkpoint-v1-tiny is a version-1 checkpoint"
  fixture_case "version-1 checkpoint" "$ROOT/tests/fixtures/checkpoint-v1-tiny" @optimizer:beta1=0.9 @optimizer:beta2=0.999 @optimizer:eps=1e-8 @optimizer:dampening=0
}
# A format-2 checkpoint written before train.optimizer.dampening existed (2aa4f14): no
# dampening attribute, a checksum whose header does not list it. It verifies and resumes with
# the table's default (0), like the same state resealed with dampening = 0 as this ddptok
# writes it; a resume with another dampening is refused (its config says 0).
case_v2_checkpoint_before_dampening() {
  local f2="$ROOT/tests/fixtures/checkpoint-v2-tiny"
  /usr/bin/python3 -c "import h5py; f = h5py.File('$f2/rank-0000.h5'); assert f.attrs['version'] == 2 and 'dampening' not in f['optimizer'].attrs and 'dampening' not in f.attrs['config'].decode()" \
    && ok "tests/fixtures/checkpoint-v2-tiny is a format-2 checkpoint without a dampening attribute or key" \
    || bad "tests/fixtures/checkpoint-v2-tiny is a format-2 checkpoint without a dampening attribute or key"
  fixture_case "format-2 checkpoint before dampening" "$f2" @optimizer:dampening=0
  expect_rc "format-2 checkpoint before dampening: a resume with train.optimizer.dampening=0.5 refused" 2 \
    ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 --set train.optimizer.dampening=0.5
  expect_grep "format-2 checkpoint before dampening: the refusal names the key" 'config differs .* train.optimizer.dampening: 0 vs 0.5' "$OUT"
}

# A failure stops every rank with one line each: the failed rank names the file and what
# to do, the others name the failed rank; nothing else from ddptok.
lines() { grep -c '^ddptok: ' <<<"$OUT"; }
# Bounded sampler state (docs/checkpoints.md "Sampler state"): a format-2 file's whole history
# becomes the last window and a running hash when read. One id of one past window (window 2 of
# 6, slot 0, rank 0) changed in the history before conversion, both checksums recomputed: the
# replayed sampler's hash differs and check-checkpoints and --resume refuse it, naming the
# file; the same fixture resealed untouched passes (fixture_case above, and here).
case_v2_past_window_changed() {
  local f2="$ROOT/tests/fixtures/checkpoint-v2-tiny" was v
  rm -rf outputs artifacts
  one prepare --config "$cfg" >/dev/null
  was=$(/usr/bin/python3 -c "import h5py; print(int(h5py.File('$f2/rank-0000.h5')['sampler/history'][1, 0, 0]))")
  v=$(( was == 5 ? 6 : 5 ))
  expect_rc "past window: the format-2 fixture resealed untouched (negative control)" 0 \
    /usr/bin/python3 "$ROOT/tests/reseal_ckpt.py" "$f2" artifacts/checkpoints/step-0006
  expect_rc "past window: resealed untouched, check-checkpoints accepts it" 0 one check-checkpoints --config "$cfg"
  rm -rf artifacts/checkpoints/step-0006
  expect_rc "past window: window 2's first id $was -> $v in rank 0's history, resealed" 0 \
    /usr/bin/python3 "$ROOT/tests/reseal_ckpt.py" "$f2" artifacts/checkpoints/step-0006 "0:sampler/history[6]=$v"
  expect_rc "past window changed: check-checkpoints refuses" 1 one check-checkpoints --config "$cfg"
  expect_grep "past window changed: check-checkpoints names the file and the running hash" \
    'step-0006/rank-0000.h5: /sampler windows_sha256 is [0-9a-f]{12}…, expected [0-9a-f]{12}… \(the running hash of the 6 windows replayed from seed 99\): a window drawn before differs' "$OUT"
  DDPTOK_TEST_TIMEOUT=60 expect_rc "past window changed: --resume refused on every rank" 2 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006
  expect_grep "past window changed: --resume names the file" 'step-0006/rank-0000.h5: /sampler windows_sha256 is' "$OUT"
  # The fixture itself, its history converted on reading, is accepted.
  rm -rf artifacts/checkpoints/step-0006 && cp -r "$f2" artifacts/checkpoints/step-0006
  expect_rc "past window: the format-2 fixture as it is: check-checkpoints accepts it (the conversion)" 0 one check-checkpoints --config "$cfg"
}
case_train_before_prepare() {
  expect_rc "train before prepare: every rank stops" 2 ddp 2 train --config "$cfg"
  [ "$(lines)" -eq 1 ] && [ "$(grep -c "^ddptok: ranks 0-1: error: outputs/data/corpus.h5: cannot open: No such file or directory: run \`$DDPTOK prepare --config .*tiny.yaml\` first" <<<"$OUT")" -eq 1 ] \
    && ok "train before prepare: one line for both ranks, naming the file and the command to run (the binary as invoked)" \
    || { bad "train before prepare: one line for both ranks, naming the file and the command to run (the binary as invoked)"; echo "$OUT" | grep ddptok | head -4; }
}
case_log_unwritable() {
  one prepare --config "$cfg" >/dev/null
  mkdir -p outputs/logs/interrupted/rank-1.log
  expect_rc "rank 1 cannot write its log: every rank stops" 2 ddp 2 train --config "$cfg"
  [ "$(lines)" -eq 2 ] && grep -q '^ddptok: rank 1: error: .*rank-1.log: cannot write: Is a directory$' <<<"$OUT" \
    && grep -q '^ddptok: rank 0: error: stopping: rank 1 failed opening its training log$' <<<"$OUT" \
    && ok "rank 1 cannot write its log: rank 1 names the file, rank 0 names rank 1" || { bad "rank 1 cannot write its log: rank 1 names the file, rank 0 names rank 1"; echo "$OUT" | grep ddptok | head -4; }
}
