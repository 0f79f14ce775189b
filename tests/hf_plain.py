#!/usr/bin/env python3
"""A Hugging Face GPT-2 directory (config.json, model.safetensors) written with the standard
library alone, for the hostile cases that need no transformers (tests/test_hostile.sh):

  hf_plain.py DIR V POSITIONS N_EMBD N_LAYER N_HEAD [--tamper KIND]

Values are small and finite (a fixed pattern). --tamper:
  nan / inf        transformer.h.0.ln_1.weight's element 3 is NaN / +Inf
  head             an lm_head.weight that differs from wte by one element
  hidden_overlap   a zero-length tensor placed just before where ln_f.bias begins inside ln_f.weight's bytes
                   (ln_f.bias read from ln_f.weight), the offsets otherwise consistent
  bump             one byte of the last tensor changed (another θ0, the same shapes)
"""
import json, math, os, struct, sys


def main():
    d, V, P, C, L, H = sys.argv[1], *map(int, sys.argv[2:7])
    tamper = sys.argv[sys.argv.index("--tamper") + 1] if "--tamper" in sys.argv else None
    names = [("wte.weight", [V, C]), ("wpe.weight", [P, C])]
    for l in range(L):
        b = f"h.{l}."
        names += [(b + "ln_1.weight", [C]), (b + "ln_1.bias", [C]), (b + "attn.c_attn.weight", [C, 3 * C]),
                  (b + "attn.c_attn.bias", [3 * C]), (b + "attn.c_proj.weight", [C, C]), (b + "attn.c_proj.bias", [C]),
                  (b + "ln_2.weight", [C]), (b + "ln_2.bias", [C]), (b + "mlp.c_fc.weight", [C, 4 * C]),
                  (b + "mlp.c_fc.bias", [4 * C]), (b + "mlp.c_proj.weight", [4 * C, C]), (b + "mlp.c_proj.bias", [C])]
    names += [("ln_f.weight", [C]), ("ln_f.bias", [C])]
    tensors = []
    for k, (n, shape) in enumerate(names):
        count = math.prod(shape)
        vals = [((i * 7 + k * 13) % 17 - 8) / 64.0 for i in range(count)]
        if n.endswith("ln_1.weight") or n.endswith("ln_2.weight") or n == "ln_f.weight":
            vals = [1.0 + v / 8 for v in vals]
        tensors.append(["transformer." + n, shape, vals])
    if tamper in ("nan", "inf"):
        t = next(t for t in tensors if t[0] == "transformer.h.0.ln_1.weight")
        t[2][3] = float("nan") if tamper == "nan" else float("inf")
    if tamper == "head":
        wte = tensors[0][2][:]
        wte[5] += 1.0
        tensors.append(["lm_head.weight", [V, C], wte])
    header, blob, at = {}, b"", 0
    for n, shape, vals in tensors:
        data = struct.pack("<%df" % len(vals), *vals)
        header[n] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(data)]}
        blob += data
        at += len(data)
    if tamper == "hidden_overlap":  # ln_f.bias begins inside ln_f.weight, a zero-length tensor at the same offset
        w = header["transformer.ln_f.weight"]["data_offsets"]
        b0 = w[0] + 4
        header["transformer.ln_f.bias"]["data_offsets"] = [b0, b0 + 4 * C]
        header["transformer.empty"] = {"dtype": "F32", "shape": [0], "data_offsets": [b0 - 2, b0 - 2]}  # sorts between the two
    if tamper == "bump":
        blob = blob[:-1] + bytes([blob[-1] ^ 1])
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + blob)
    cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": V, "n_positions": P, "n_ctx": P, "n_embd": C,
           "n_layer": L, "n_head": H, "n_inner": None, "activation_function": "gelu_new", "layer_norm_epsilon": 1e-05,
           "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False, "tie_word_embeddings": True}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)


main()
