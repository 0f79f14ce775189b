# The GPT in and out of Hugging Face transformers (docs/model.md "Hugging Face"), with
# transformers itself (tests/hf_check.py): transformers and the torch it needs are on PyPI,
# not in Debian, so these cases need the python `make hf-venv` builds (build/hf-venv, or
# DDPTOK_HF_PYTHON); `make test` skips them with that reason.
# - export --format hf: GPT2LMHeadModel.from_pretrained loads the directory as it is and its
#   test loss (HF ids, the begin id first) equals evaluate's; fed unrotated ids it does not;
# - train.init_from: export -> init_from -> evaluate gives the same loss bit for bit;
# - weights transformers made (its own init and save_pretrained, more positions than the
#   config's context): reference.h5's /init is them mapped bit for bit (rows rotated, Conv1D
#   transposed, the first rows of wpe), and ddptok's evaluate of them equals transformers'
#   loss; read another way (unrotated, untransposed) the check fails;
# - a vocabulary, width or activation that does not fit: one line, exit 2, also under --check.
cfg="$CONFIGS/gpt-tests.yaml"
HF_PY=${DDPTOK_HF_PYTHON:-$ROOT/build/hf-venv/bin/python}
has_hf() {
  [ -x "$HF_PY" ] && "$HF_PY" -c "import transformers, torch, h5py" 2>/dev/null && return 0
  skip "$CASE" "no python with transformers ($HF_PY): transformers is on PyPI, not in Debian; make hf-venv builds one over Debian's torch (~180 MB), or DDPTOK_HF_PYTHON=path/to/python"
  return 1
}
hf() { timeout -k 5 600 "$HF_PY" "$ROOT/tests/hf_check.py" "$@"; }
CK=artifacts/continuous/step-0012
same_model() {  # A B: rank 0's /model of two checkpoint directories, bit for bit
  /usr/bin/python3 -c "
import h5py, sys
a, b = (h5py.File(d + '/rank-0000.h5') for d in sys.argv[1:3])
sys.exit(not (set(a['model']) == set(b['model']) and all(a['model'][p][()].tobytes() == b['model'][p][()].tobytes() for p in a['model'])))" "$1" "$2"
}
fixture_trained_hf() {
  one prepare --config "$cfg" >/dev/null && ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1 \
    && one evaluate --config "$cfg" --checkpoint $CK >/dev/null 2>&1 && one export --config "$cfg" --checkpoint $CK --format hf --out hf >/dev/null
}
case_export_loads() {
  has_hf || return
  fixture trained_hf || return
  [ -f hf/config.json ] && [ -f hf/model.safetensors ] && ok "export --format hf writes config.json and model.safetensors" \
    || bad "export --format hf writes config.json and model.safetensors"
  expect_rc "transformers loads the export as it is; its test loss equals evaluate's within 1e-6" 0 hf loss hf outputs outputs/evaluate.json
  echo "$OUT" | tail -1 | sed 's/^/       /'
  expect_rc "negative control: the same export fed unrotated ids misses evaluate's loss" 1 hf loss hf outputs outputs/evaluate.json --tamper rotate
  echo "$OUT" | tail -1 | sed 's/^/       /'
}
case_init_from_roundtrip() {
  has_hf || return
  fixture trained_hf || return
  local s=(--set train.init_from=hf --set train.updates=1 --set train.interrupt_at=0 --set train.optimizer.lr=0 --set paths.artifacts=rt)
  expect_rc "train.init_from the export: one update of lr 0" 0 ddp 2 train --config "$cfg" "${s[@]}" --continuous
  same_model rt/continuous/step-0001 $CK && ok "export -> init_from: the model is the exported checkpoint's bit for bit" \
    || bad "export -> init_from: the model is the exported checkpoint's bit for bit"
  cp outputs/evaluate.json before.json
  expect_rc "evaluate the init_from model" 0 one evaluate --config "$cfg" "${s[@]}" --checkpoint rt/continuous/step-0001
  [ "$(json before.json "repr(j['test']['loss'])")" = "$(json outputs/evaluate.json "repr(j['test']['loss'])")" ] \
    && ok "export -> init_from -> evaluate: the same test loss, bit for bit" || bad "export -> init_from -> evaluate: the same test loss, bit for bit"
}
case_weights_from_transformers() {
  has_hf || return
  one prepare --config "$cfg" >/dev/null
  expect_rc "transformers makes a GPT-2 of gpt-tests.yaml's shape, 32 positions (the config's context: 24)" 0 hf make theirs 24 32 16 2 2 5
  expect_rc "reference from train.init_from: the transformers weights" 0 one reference --config "$cfg" --set train.init_from=theirs
  expect_rc "reference.h5 /init is transformers' weights mapped bit for bit (rows rotated, Conv1D transposed, wpe's first 24 rows)" 0 \
    hf mapping theirs outputs/reference.h5
  echo "$OUT" | tail -1 | sed 's/^/       /'
  expect_rc "negative control: read unrotated, the mapping check fails" 1 hf mapping theirs outputs/reference.h5 --tamper rotate
  expect_rc "negative control: read untransposed, the mapping check fails" 1 hf mapping theirs outputs/reference.h5 --tamper transpose
  local s=(--set train.init_from=theirs --set train.updates=1 --set train.interrupt_at=0 --set train.optimizer.lr=0 --set train.optimizer.weight_decay=0)
  ddp 2 train --config "$cfg" "${s[@]}" --continuous >/dev/null 2>&1 && one evaluate --config "$cfg" "${s[@]}" --checkpoint artifacts/continuous/step-0001 >/dev/null 2>&1 \
    || bad "train (lr 0) and evaluate from the transformers weights"
  expect_rc "ddptok's test loss of the transformers weights equals transformers' own" 0 hf loss theirs outputs outputs/evaluate.json
  echo "$OUT" | tail -1 | sed 's/^/       /'
}
refused_hf() {  # NAME PATTERN SETS...: train --check and reference refuse it in one line, exit 2
  local name=$1 pat=$2; shift 2
  expect_rc "$name: --check train refuses it" 2 one --check train --config "$cfg" "$@"
  [ "$(grep -c '^ddptok: ' <<<"$OUT")" -eq 1 ] && expect_grep "$name: one line saying why" "$pat" "$OUT" || bad "$name: one line saying why" "— $OUT"
}
# Issue 38.5: the README's Python line, as it stands there (the venv's python it names replaced
# by this group's), loads an export and prints its blocks and its parameters, which are the
# export's own (config.json's n_layer; the tensors of model.safetensors, the tied lm_head once).
case_readme_snippet() {
  has_hf || return
  fixture trained_hf || return
  local line want
  line=$(grep -m1 '^build/hf-venv/bin/python -c ' "$ROOT/README.md")
  [ -n "$line" ] && ok "the README has the venv's Python line" || { bad "the README has the venv's Python line"; return; }
  line=${line//outputs-gpt-tiny\/hf/hf}
  want=$(/usr/bin/python3 -c "
import json, struct, sys
d = sys.argv[1]
raw = open(d + '/model.safetensors', 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
h = json.loads(raw[8:8 + n])
p = 0
for k, v in h.items():
    if k == '__metadata__' or k.endswith('lm_head.weight') or '.attn.bias' in k or '.attn.masked_bias' in k: continue
    q = 1
    for x in v['shape']: q *= x
    p += q
print(json.load(open(d + '/config.json'))['n_layer'], 'blocks,', p, 'parameters')" hf)
  OUT=$(eval "\"\$HF_PY\"${line#build/hf-venv/bin/python}" 2>&1 | tail -1)
  [ "$OUT" = "$want" ] && ok "the README's Python line loads the export: $OUT" || bad "the README's Python line loads the export" "— got: $OUT | want: $want"
  cp -r hf hf-cut && rm hf-cut/model.safetensors
  line=${line//\"hf\"/\"hf-cut\"}
  if eval "\"\$HF_PY\"${line#build/hf-venv/bin/python}" >/dev/null 2>&1; then bad "negative control: the line fails on a directory without model.safetensors"
  else ok "negative control: the line fails on a directory without model.safetensors"; fi
}
case_refusals() {
  has_hf || return
  hf make v25 25 32 16 2 2 1 >/dev/null && hf make c8 24 32 8 2 2 1 >/dev/null && hf make p16 24 16 16 2 2 1 >/dev/null \
    || { bad "transformers makes the mismatched directories"; return; }
  refused_hf "a vocabulary of 25 for data.vocab_size 24" 'v25/config.json: a vocabulary of 25 ids, this config.s data.vocab_size is 24' --set train.init_from=v25
  refused_hf "n_embd 8 for model.n_embd 16" 'c8/config.json: n_embd is 8, this config.s model.n_embd is 16' --set train.init_from=c8
  refused_hf "16 positions for data.max_length 24" 'p16/config.json: n_positions 16, fewer than this config.s data.max_length 24' --set train.init_from=p16
  refused_hf "a directory that does not exist" 'train.init_from nowhere: not a directory' --set train.init_from=nowhere
  sed -i 's/"gelu_new"/"relu"/' v25/config.json
  refused_hf "activation relu" 'activation_function relu: the GPT computes GELU.s tanh form' --set train.init_from=v25 --set data.vocab_size=25
  expect_rc "control: the matching directory passes --check" 0 one --check train --config "$cfg" --set train.init_from=c8 --set model.n_embd=8
}
