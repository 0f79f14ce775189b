# The PyTorch witness (tests/torch/witness.py): an independent autograd implementation of
# docs/spec.md §4 reading only ddptok's documented files. Skipped, visibly, without python3-torch.
# has_torch: python3-torch is importable; else the case is skipped, visibly.
has_torch() {
  /usr/bin/python3 -c "import torch" 2>/dev/null && return 0
  skip "$CASE" "python3-torch is not installed (make test installs it: run/install-deps.sh --tests)"; return 1
}
witness() { timeout -k 5 600 /usr/bin/python3 "$ROOT/tests/torch/witness.py" "$@"; }
# variant NAME KEY=VALUE...: writes NAME.yaml = minimum.yaml with those keys changed.
variant() {
  local name=$1; shift
  /usr/bin/python3 - "$CONFIGS/minimum.yaml" "$name.yaml" "$@" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
for kv in sys.argv[3:]:
    k, v = kv.split("=", 1)
    *path, last = k.split(".")
    d = c
    for p in path: d = d.setdefault(p, {})
    d[last] = yaml.safe_load(v)
yaml.safe_dump(c, open(sys.argv[2], "w"))
PY
}
grad_case() {  # NAME NP KEY=VALUE...
  local name=$1 np=$2; shift 2
  has_torch || return
  variant "$name" "$@"
  prep_ref "$name.yaml" && ddp "$np" parity --config "$name.yaml" >/dev/null 2>&1 \
    || { bad "witness $name: ddptok prepare/reference/parity"; return; }
  expect_rc "torch autograd agrees with reference.h5 and grads.h5 ($name), rejects the controls" 0 witness grad "$name.yaml" outputs
  echo "$OUT" | sed 's/^/       /'
}
case_grad_minimum() { grad_case minimum 2; }
case_grad_dropout0() { grad_case dropout0 2 model.dropout=0; }
case_grad_shapes_w3() { grad_case shapes-w3 3 train.world_size=3 train.rank_bands=auto model.context=3 model.embed_dim=5 model.hidden=40 data.unsupervised_prefix=10 train.accumulation=3; }
case_grad_prefix_w4() { grad_case prefix-w4 4 train.world_size=4 train.rank_bands=auto data.unsupervised_prefix=30 train.batch_size_per_rank=2; }
case_grad_sequence_unit_w3() { grad_case sequence-unit-w3 3 train.world_size=3 train.rank_bands=auto train.loss_unit=sequence data.unsupervised_prefix=40 data.ignore_token=3; }
case_grad_max_labels() { grad_case max-labels 2 data.max_labels=10 data.ignore_token=7; }
# (b) 100 updates, dropout 0: gloo DDP in PyTorch vs ddptok's continuous run, and the
# same witness against a ddptok trained with the mean of means (must disagree).
fixture_ddp() { variant ddp model.dropout=0 && prep_ref ddp.yaml; }
fixture_ddp_trained() { fixture ddp && ddp 2 train --config ddp.yaml --continuous >/dev/null 2>&1; }
case_ddp_sgd() {
  has_torch && shm_semaphores || return
  fixture ddp_trained || return
  witness_ddp "torch gloo DDP, 100 updates, agrees with ddptok's step-100 model" 0 ddp.yaml outputs artifacts/continuous/step-0100
}
case_ddp_mean_of_means_control() {
  has_torch && shm_semaphores || return
  fixture ddp || return
  ddp 2 train --config ddp.yaml --continuous --set train.normalization=mean-of-means --set paths.artifacts=mom >/dev/null 2>&1
  witness_ddp "negative control: the same witness rejects a ddptok trained with the mean of means" 1 ddp.yaml outputs mom/continuous/step-0100
}
# ddptok export: the step-100 weights, loaded from the safetensors file into witness.py's
# model, give evaluate's test loss (19329 tokens) within 1e-6; one element changed does not.
xc() { timeout -k 5 300 /usr/bin/python3 "$ROOT/tests/export_check.py" "$@"; }
case_export_minimum() {
  has_torch || return
  fixture ddp_trained || return
  one evaluate --config ddp.yaml --checkpoint artifacts/continuous/step-0100 >/dev/null 2>&1
  expect_rc "export of ddptok's step-100 model (minimum.yaml, dropout 0)" 0 one export --config ddp.yaml --checkpoint artifacts/continuous/step-0100 --out ddp.safetensors
  expect_rc "torch with the exported weights reproduces evaluate's test loss within 1e-6 (minimum.yaml)" 0 xc loss ddp.yaml outputs ddp.safetensors outputs/evaluate.json
  echo "$OUT" | sed 's/^/       /'
  expect_rc "negative control: the exported file with one element of w2 changed fails the loss check" 1 xc loss ddp.yaml outputs ddp.safetensors outputs/evaluate.json --tamper element
  echo "$OUT" | sed 's/^/       /'
}
# tiny.yaml's w1 and w2 have the same size (16 x 24, 24 x 16): their data swapped must fail.
case_export_tiny() {
  has_torch || return
  local t=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=otiny --set paths.artifacts=atiny)
  one prepare "${t[@]}" >/dev/null && ddp 2 train "${t[@]}" --continuous >/dev/null 2>&1 \
    && one evaluate "${t[@]}" --checkpoint atiny/continuous/step-0012 >/dev/null && one export "${t[@]}" --checkpoint atiny/continuous/step-0012 >/dev/null \
    || bad "tiny.yaml: prepare, train --continuous, evaluate or export failed"
  expect_rc "torch with the exported weights reproduces evaluate's test loss within 1e-6 (tiny.yaml)" 0 xc loss "$CONFIGS/tiny.yaml" otiny otiny/model.safetensors otiny/evaluate.json
  echo "$OUT" | sed 's/^/       /'
  expect_rc "negative control: the exported file with w1 and w2 swapped fails the loss check" 1 xc loss "$CONFIGS/tiny.yaml" otiny otiny/model.safetensors otiny/evaluate.json --tamper swap
  echo "$OUT" | sed 's/^/       /'
}
# The same 100-update DDP witness for the sequence unit (W·Q_r/M), with ignored labels.
case_ddp_sequence_unit() {
  has_torch && shm_semaphores || return
  variant ddpseq model.dropout=0 train.loss_unit=sequence train.normalization=global-sequence data.unsupervised_prefix=40 data.ignore_token=3
  prep_ref ddpseq.yaml --set paths.outputs=oseq
  ddp 2 train --config ddpseq.yaml --continuous --set paths.outputs=oseq --set paths.artifacts=aseq >/dev/null 2>&1
  witness_ddp "torch gloo DDP, sequence unit, agrees with ddptok's step-100 model" 0 ddpseq.yaml oseq aseq/continuous/step-0100
}
# witness_ddp NAME RC CONFIG OUTPUTS CHECKPOINT [--as VARIANT]: the torch gloo DDP witness of
# a fixture's 100-update run must exit RC (0 agrees, 1 outside the bounds); its verdict line is shown.
witness_ddp() {
  local name=$1 rc=$2; shift 2
  expect_rc "$name" "$rc" witness ddp "$@"
  echo "$OUT" | tail -1 | sed 's/^/       /'
}
# AdamW (torch.optim.AdamW semantics): 100 updates against torch's AdamW within the bounds
# stated in witness.py (measured, x10); negative control: the same witness with torch's
# Adam and coupled L2 weight decay instead (--as adam-l2) must fall outside them.
fixture_adamw() {
  variant adamw model.dropout=0 train.optimizer.name=adamw train.optimizer.lr=0.003 train.optimizer.weight_decay=0.1 \
    && prep_ref adamw.yaml --set paths.outputs=oadam \
    && ddp 2 train --config adamw.yaml --continuous --set paths.outputs=oadam --set paths.artifacts=aadam >/dev/null 2>&1
}
case_ddp_adamw() {
  has_torch && shm_semaphores || return
  fixture adamw || return
  witness_ddp "torch gloo DDP + torch.optim.AdamW, 100 updates, agrees with ddptok's AdamW step-100 model" 0 adamw.yaml oadam aadam/continuous/step-0100
}
case_ddp_adam_l2_control() {
  has_torch && shm_semaphores || return
  fixture adamw || return
  witness_ddp "negative control: torch Adam with coupled L2 decay falls outside the AdamW bounds" 1 adamw.yaml oadam aadam/continuous/step-0100 --as adam-l2
}
# SGD with dampening (torch.optim.SGD's dampening: buf = mu*buf + (1 - dampening)*g after the
# first update): 100 updates against torch within the SGD bounds; negative control: torch's
# SGD without the dampening must fall outside them.
fixture_damp() {
  variant damp model.dropout=0 train.optimizer.dampening=0.5 \
    && prep_ref damp.yaml --set paths.outputs=odamp \
    && ddp 2 train --config damp.yaml --continuous --set paths.outputs=odamp --set paths.artifacts=adamp >/dev/null 2>&1
}
case_ddp_sgd_dampening() {
  has_torch && shm_semaphores || return
  fixture damp || return
  witness_ddp "torch gloo DDP + torch.optim.SGD(dampening=0.5), 100 updates, agrees with ddptok's step-100 model" 0 damp.yaml odamp adamp/continuous/step-0100
}
case_ddp_sgd_undamped_control() {
  has_torch && shm_semaphores || return
  fixture damp || return
  witness_ddp "negative control: torch SGD without the dampening falls outside the SGD bounds" 1 damp.yaml odamp adamp/continuous/step-0100 --as sgd-undamped
}
