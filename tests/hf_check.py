"""The GPT in and out of Hugging Face transformers (docs/model.md "Hugging Face"), checked with
transformers itself: run with a python that has transformers and a torch it supports (make
test-hf builds one in build/hf-venv from PyPI; Debian has neither).

  hf_check.py loss HFDIR OUTPUTS EVALUATE_JSON [--tamper rotate]
      GPT2LMHeadModel.from_pretrained(HFDIR) loads with no missing or unexpected weight; its loss
      on the test split of OUTPUTS/data/corpus.h5 — each sequence fed as HF ids, the begin id
      first (HF id = ddptok id - 1, ddptok's 0 = HF's vocab_size - 1), position t predicting token
      t — equals evaluate's within 1e-6 relative. --tamper rotate feeds ddptok's ids unrotated
      (a wrong mapping): the check must fail.
  hf_check.py make HFDIR V N_POSITIONS N_EMBD N_LAYER N_HEAD SEED
      a GPT2LMHeadModel of that shape, initialised by transformers (its own init), perturbed off
      its zero biases and unit LayerNorms, saved with save_pretrained (safetensors) — weights a
      user might have.
  hf_check.py mapping HFDIR REFERENCE_H5 [--tamper rotate|transpose]
      reference.h5's /init (what train.init_from made of HFDIR) is HFDIR's weights mapped:
      wte's rows rotated (ddptok row d = HF row d - 1, row 0 = HF row V - 1), Conv1D weights
      transposed, the first max_length rows of wpe, bit for bit. A tamper reads them another way:
      the check must fail.
Exit 0 when it holds, 1 when not."""
import json
import os
import sys

import h5py
import numpy as np
import torch
import transformers


def load(hfdir):
    model, info = transformers.GPT2LMHeadModel.from_pretrained(hfdir, output_loading_info=True)
    return model.eval(), info


def check_loss(hfdir, out, ev, tamper=None):
    model, info = load(hfdir)
    missing = [k for k in info["missing_keys"] if not k.endswith(("attn.bias", "attn.masked_bias"))]
    unexpected = list(info["unexpected_keys"])
    V = model.config.vocab_size
    with h5py.File(f"{out}/data/corpus.h5") as f:
        tok, off, split = f["tokens"][()].astype(np.int64), f["offsets"][()], f["split"][()]
    total, n = 0.0, 0
    for i in np.nonzero(split == 2)[0]:
        x = tok[off[i]:off[i + 1]].astype(np.int64)
        inp = np.concatenate([[0], x[:-1]])  # the begin id, then the previous tokens
        rot = (lambda a: a) if tamper == "rotate" else (lambda a: (a + V - 1) % V)
        with torch.no_grad():
            logits = model(torch.from_numpy(rot(inp))[None]).logits[0].double()
        total += torch.nn.functional.cross_entropy(logits, torch.from_numpy(rot(x)), reduction="sum").item()
        n += len(x)
    with open(ev) as f:
        want = json.load(f)["test"]
    loss = total / n
    diff = abs(loss - want["loss"])
    ok = not missing and not unexpected and n == want["tokens"] and diff <= 1e-6 * abs(want["loss"])
    print(f"hf: transformers {transformers.__version__} (torch {torch.__version__}) loaded {hfdir}: missing {missing or 'none'}, "
          f"unexpected {unexpected or 'none'}; test loss {loss:.9f} over {n} tokens{' (ids unrotated: tamper)' if tamper else ''}; "
          f"ddptok evaluate: {want['loss']:.9f} over {want['tokens']}: |diff| {diff:.3e} {'within' if ok else 'NOT within'} 1e-6 relative")
    return ok


def make(hfdir, V, npos, C, NL, NH, seed):
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(vocab_size=V, n_positions=npos, n_embd=C, n_layer=NL, n_head=NH, resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, bos_token_id=V - 1, eos_token_id=V - 1)
    model = transformers.GPT2LMHeadModel(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln_" in name or "ln_f" in name:
                p.add_(0.1 * torch.randn_like(p))  # off HF's zero biases and unit LayerNorms
    model.save_pretrained(hfdir, safe_serialization=True)
    print(f"hf: a GPT2LMHeadModel (V {V}, n_positions {npos}, n_embd {C}, n_layer {NL}, n_head {NH}) -> {hfdir}")
    return True


def check_mapping(hfdir, ref, tamper=None):
    model, _ = load(hfdir)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    V = model.config.vocab_size
    with h5py.File(ref) as f:
        init = {p: f[f"init/{p}"][()] for p in f["init"]}
    L = init["wpe"].shape[0]
    NL = init["qkvw"].shape[0]
    T = (lambda w: w) if tamper == "transpose" else (lambda w: w.T)
    wte = sd["transformer.wte.weight"]
    want = {"wte": wte if tamper == "rotate" else np.concatenate([wte[V - 1:], wte[:V - 1]]), "wpe": sd["transformer.wpe.weight"][:L],
            "lnfw": sd["transformer.ln_f.weight"], "lnfb": sd["transformer.ln_f.bias"]}
    per = {"ln1w": ("ln_1.weight", 0), "ln1b": ("ln_1.bias", 0), "qkvw": ("attn.c_attn.weight", 1), "qkvb": ("attn.c_attn.bias", 0),
           "attprojw": ("attn.c_proj.weight", 1), "attprojb": ("attn.c_proj.bias", 0), "ln2w": ("ln_2.weight", 0),
           "ln2b": ("ln_2.bias", 0), "fcw": ("mlp.c_fc.weight", 1), "fcb": ("mlp.c_fc.bias", 0), "fcprojw": ("mlp.c_proj.weight", 1),
           "fcprojb": ("mlp.c_proj.bias", 0)}
    for p, (name, conv) in per.items():
        want[p] = np.stack([T(sd[f"transformer.h.{l}.{name}"]) if conv else sd[f"transformer.h.{l}.{name}"] for l in range(NL)])
    bad = [p for p in init if init[p].shape != want[p].shape or not np.array_equal(init[p].view(np.uint32), want[p].astype(np.float32).view(np.uint32))]
    print(f"hf: reference.h5 /init vs {hfdir} mapped (wte rotated, Conv1D transposed, wpe's first {L} of "
          f"{sd['transformer.wpe.weight'].shape[0]} rows){' [tamper: ' + tamper + ']' if tamper else ''}: "
          f"{len(init) - len(bad)} of {len(init)} tensors bit for bit{'; differ: ' + ', '.join(bad) if bad else ''}")
    return not bad


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    tamper = args[args.index("--tamper") + 1] if "--tamper" in args else None
    if tamper:
        args = args[:args.index("--tamper")]
    if mode == "loss":
        ok = check_loss(args[0], args[1], args[2], tamper)
    elif mode == "make":
        ok = make(args[0], *map(int, args[1:7]))
    elif mode == "mapping":
        ok = check_mapping(args[0], args[1], tamper)
    else:
        raise SystemExit(f"hf_check: no mode {mode}")
    sys.exit(0 if ok else 1)
