"""Checks `ddptok export`'s safetensors file with a reader of its own (the format from its
spec, numpy.frombuffer), the safetensors package's when it is installed, and the PyTorch
model of tests/torch/witness.py.

  export_check.py format FILE CHECKPOINT_DIR
      the header (8-byte little-endian length, JSON padded with spaces to 8 bytes, every
      tensor F32 with contiguous data_offsets covering the data exactly, in the model
      layout's order embedding, w1, b1, w2, b2), the string metadata (shape, config), the
      FILE.json beside it, and every tensor bit for bit against CHECKPOINT_DIR/rank-0000.h5.
  export_check.py safetensors FILE
      safetensors.numpy.load_file reads the same tensors as this reader; exit 77 when the
      package is not installed (Debian 12 has none: the caller counts a skip).
  export_check.py loss CONFIG OUTPUTS FILE EVALUATE_JSON [--tamper swap|element]
      the weights loaded into witness.py's model (float64) give evaluate's test loss within
      1e-6 over the same supervised test positions; --tamper first swaps the data of w1 and
      w2 (equal sizes) or changes one element of w2 by 4: a negative control that must fail.
  export_check.py generate FILE GENERATE_JSON [--tamper b2|ids]
      greedy generation by an independent numpy forward (float64) of the weights in FILE:
      from generate.json's prompt_ids (byte b = id b + 1, pad 0 before the start), as many
      ids as it holds, each the argmax of the logits over the byte ids 1..min(V, 257) - 1
      given the last k ids; they must equal generate.json's ids exactly. --tamper b2 first
      adds 3 to the bias of the id of ' ', --tamper ids takes the prompt's bytes as ids
      (without the + 1): negative controls that must fail.
Exit 0 when everything holds, 1 otherwise; prints what it compared."""
import json
import os
import struct
import sys

import numpy as np

PARAMS = ["embedding", "w1", "b1", "w2", "b2"]


def read_safetensors(path):
    """(tensors in header order {name: float32 array}, metadata); raises ValueError on a
    file that is not the format."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError(f"{path}: {len(blob)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} runs past the file's {len(blob)} bytes")
    raw = blob[8:8 + n]
    if (8 + n) % 8:
        raise ValueError(f"{path}: the data starts at {8 + n}, not a multiple of 8")
    text = raw.decode("utf-8")
    if not text.startswith("{") or not text.rstrip(" ").endswith("}"):
        raise ValueError(f"{path}: the header is not a JSON object padded with spaces")
    header = json.loads(text)
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        raise ValueError(f"{path}: __metadata__ is not string to string")
    data = blob[8 + n:]
    tensors, at = {}, 0
    for name, t in header.items():
        begin, end = t["data_offsets"]
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: {name}: dtype {t['dtype']}, expected F32")
        if begin != at or end - begin != 4 * int(np.prod(t["shape"], dtype=np.int64)):
            raise ValueError(f"{path}: {name}: data_offsets {begin, end} for shape {t['shape']} after offset {at}")
        tensors[name] = np.frombuffer(data, dtype="<f4", count=(end - begin) // 4, offset=begin).reshape(t["shape"])
        at = end
    if at != len(data):
        raise ValueError(f"{path}: the tensors cover {at} of the {len(data)} data bytes")
    return tensors, meta


def beside(path):
    return (path[:-len(".safetensors")] if path.endswith(".safetensors") else path) + ".json"


def check_format(path, ckpt):
    import h5py

    tensors, meta = read_safetensors(path)
    ok = list(tensors) == PARAMS
    print(f"export: {path}: tensors {list(tensors)} (the model layout's order: {ok})")
    with h5py.File(f"{ckpt}/rank-0000.h5") as f:
        for p in PARAMS:
            mine = f[f"model/{p}"][()]
            same = p in tensors and tensors[p].shape == mine.shape and np.array_equal(tensors[p].view(np.uint32),
                                                                                     mine.astype("<f4").view(np.uint32))
            ok &= same
            print(f"  {p:9s} {str(mine.shape):12s} bit for bit as {ckpt}/rank-0000.h5: {same}")
    V, D, H = (int(tensors["embedding"].shape[0]), int(tensors["embedding"].shape[1]), int(tensors["w1"].shape[0]))
    k = tensors["w1"].shape[1] // D
    want = {"vocab_size": V, "embed_dim": D, "hidden": H, "context": k, "parameters": sum(t.size for t in tensors.values())}
    got = {key: int(meta.get(key, -1)) for key in want}
    shape_ok = got == want and "vocab_size: %d" % V in meta.get("config", "") and "hidden: %d" % H in meta.get("config", "")
    ok &= shape_ok
    print(f"  metadata: shape {got} (from the tensors: {want}), config of {len(meta.get('config', ''))} bytes: {shape_ok}")
    with open(beside(path)) as f:
        side = json.load(f)
    side_ok = (side["model"] == {key: want[key] for key in side["model"]} and [t["name"] for t in side["tensors"]] == PARAMS
               and side["config"] == meta.get("config") and side["weights"] == os.path.basename(path))
    ok &= side_ok
    print(f"  {beside(path)}: the same shape, tensors and config: {side_ok}")
    return ok


def check_safetensors(path):
    try:
        from safetensors.numpy import load_file
    except ImportError:
        print("export: the safetensors package is not installed (not in Debian 12)")
        sys.exit(77)
    theirs = load_file(path)
    mine, _ = read_safetensors(path)
    ok = sorted(theirs) == sorted(mine) and all(np.array_equal(theirs[p], mine[p]) for p in mine)
    print(f"export: safetensors.numpy.load_file reads the same {len(theirs)} tensors: {ok}")
    return ok


def tamper(path, how):
    """A copy of the file with w1's and w2's data swapped, or one element of w2 changed."""
    with open(path, "rb") as f:
        blob = bytearray(f.read())
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    (a0, a1), (b0, b1) = header["w1"]["data_offsets"], header["w2"]["data_offsets"]
    if how == "swap":
        if a1 - a0 != b1 - b0:
            raise SystemExit(f"export_check: w1 and w2 differ in size ({a1 - a0} and {b1 - b0} bytes): no swap")
        w1, w2 = bytes(blob[base + a0:base + a1]), bytes(blob[base + b0:base + b1])
        blob[base + a0:base + a1], blob[base + b0:base + b1] = w2, w1
    else:
        (x,) = struct.unpack("<f", blob[base + b0:base + b0 + 4])
        blob[base + b0:base + b0 + 4] = struct.pack("<f", x + 4.0)
    out = f"{path}.{how}.safetensors"
    with open(out, "wb") as f:
        f.write(blob)
    return out


def check_loss(cfg_path, out, path, evaluate_json, how=None):
    import h5py
    import torch

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch"))
    import witness  # the PyTorch model of docs/spec.md §4 (one definition, shared)

    if how:
        path = tamper(path, how)
    tensors, _ = read_safetensors(path)
    cfg = witness.load_config(cfg_path)
    cfg["unit"] = "token"  # evaluate scores every supervised position alike
    with h5py.File(f"{out}/data/corpus.h5") as f:
        tokens, offsets, split = f["tokens"][()].astype(np.int64), f["offsets"][()], f["split"][()]
    test = [i for i in range(len(split)) if split[i] == 2]
    parts = [witness.microbatch(cfg, tokens, offsets, [i]) for i in test]
    ctx = np.concatenate([p[0] for p in parts]).reshape(-1, cfg["k"])
    tgt = np.concatenate([p[1] for p in parts])
    w = np.ones(len(tgt))
    theta = [torch.tensor(tensors[p].astype(np.float64)) for p in witness.PARAMS]
    with torch.no_grad():
        loss = witness.loss_sum(cfg, theta, ctx, tgt, None, w).item() / len(tgt)
    with open(evaluate_json) as f:
        ev = json.load(f)["test"]
    diff = abs(loss - ev["loss"])
    ok = diff <= 1e-6 and len(tgt) == ev["tokens"] and len(test) == ev["sequences"]
    print(f"export: torch (witness.py, float64) on {path}: test loss {loss:.9f} over {len(tgt)} tokens of {len(test)} "
          f"sequences; evaluate: {ev['loss']:.9f} over {ev['tokens']}: |diff| {diff:.3e} "
          f"{'within' if ok else 'NOT within'} 1e-6{' (' + how + ': the loss differs, as it must)' if how and not ok else ''}")
    return ok


def check_generate(path, generate_json, how=None):
    tensors, _ = read_safetensors(path)
    emb, w1, b1, w2, b2 = (tensors[p].astype(np.float64) for p in PARAMS)
    V, D = emb.shape
    k = w1.shape[1] // D
    if how == "b2":
        b2 = b2.copy()
        b2[ord(" ") + 1] += 3.0
    with open(generate_json) as f:
        gen = json.load(f)
    seq = list(gen["prompt_ids"])
    if how == "ids":
        seq = [i - 1 for i in seq]
    n_ids = min(V, 257)
    mine = []
    for _ in range(len(gen["ids"])):
        ctx = [seq[len(seq) - k + j] if len(seq) - k + j >= 0 else 0 for j in range(k)]
        h = np.tanh(w1 @ emb[ctx].reshape(-1) + b1)
        logits = w2 @ h + b2
        nxt = 1 + int(np.argmax(logits[1:n_ids]))
        mine.append(nxt)
        seq.append(nxt)
    same = mine == list(gen["ids"])
    first = next((i for i, (a, b) in enumerate(zip(mine, gen["ids"])) if a != b), None)
    text = bytes(i - 1 for i in mine).decode("latin-1")
    print(f"generate: numpy (float64) greedy from {len(gen['prompt_ids'])} prompt ids, {len(mine)} ids: {text!r}; "
          f"ddptok's {gen['text']!r}: {'equal' if same else 'NOT equal, first difference at ' + str(first)}"
          f"{' (' + how + ': they differ, as they must)' if how and not same else ''}")
    return same and gen.get("temperature") == 0


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    try:
        if mode == "format":
            good = check_format(*args)
        elif mode == "safetensors":
            good = check_safetensors(*args)
        elif mode == "generate":
            good = check_generate(args[0], args[1], args[3] if len(args) > 3 and args[2] == "--tamper" else None)
        else:
            how = args[5] if len(args) > 5 and args[4] == "--tamper" else None
            good = check_loss(*args[:4], how)
    except (ValueError, KeyError) as e:
        print(f"export_check: {e}")
        good = False
    sys.exit(0 if good else 1)
