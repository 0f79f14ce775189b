"""reseal_ckpt.py SRC DST [EDIT...]: rewrites the checkpoint directory SRC as DST in the current
format (version 3, or 4 for a file of version 4: the same layout, the global sampler's
windows_sha256 a digest instead of a running hash, kept as it is), after applying each EDIT, and reseals it: every rank file's payload checksum
recomputed as docs/file-formats.md defines it (what src/store/rank_file.c state_checksum
computes) and the directory's SHA256SUMS rewritten. Independent of ddptok's code (h5py,
numpy, hashlib), so a test can rewrite a checkpoint in the current format (a version-1 file
becomes version 2: /optimizer attributes name = sgd, step = momentum_valid ? step : 0; a
version-1 or -2 file's /sampler/history (step, A, B) becomes version 3's bounded state:
/sampler/last = its last window, /sampler attributes windows_sha256 = the running hash over
every window, epoch = 0, window = step, as the bands sampler's), or build one that differs in
one field and whose checksums are nevertheless right (both are unkeyed SHA-256: anyone can
recompute them).

Each source file's own checksum is verified first (format 1, 2, 3 or 4): a tool that cannot
reproduce ddptok's checksum of an untouched file would prove nothing (exit 1).

EDIT, applied to every rank file, or to rank R's only as R:EDIT:
  @GROUP:NAME=VALUE   set an attribute of GROUP (/, optimizer or sampler): an existing one keeps its
                      type; a new one is a float64 under optimizer (a hyper-parameter), else
                      an int64 or a string. VALUE: an integer, a float (nan, inf, -inf) or text
  -@GROUP:NAME        delete an attribute
  DATASET[I]=VALUE    set element I (flat, C order) of a dataset (rng/sampler/key[1]=5); an
                      edit of sampler/history (formats 1, 2) applies before its conversion
  DATASET:shape=A,B   store a dataset with another shape (the same elements, in order)
  DATASET:dtype=T     store a dataset as numpy dtype T (the same values)
The checksum covers the values as the format's types (float32, int32, uint32, uint64), so an
edit of a shape or a dtype changes nothing else."""
import hashlib
import os
import re
import sys

import h5py
import numpy as np

FORMAT = "ddptok-checkpoint"
PARAMS = ["embedding", "w1", "b1", "w2", "b2"]  # θ's order (docs/model.md)
STATES = {"sgd": ["momentum"], "adamw": ["exp_avg", "exp_avg_sq"]}  # /optimizer/<state>, in this order
# The hyper-parameter attributes of /optimizer, in the order the checksum's header lists the
# ones a file holds (include/method/optimizer.h's table order).
HYPERS = ["lr", "weight_decay", "momentum", "dampening", "beta1", "beta2", "eps"]
SAMPLER_HASH_DOMAIN = b"ddptok-sampler-windows v1"  # h_0 = SHA-256 of it (include/data/sampler.h)
DTYPES = {"model": "<f4", "optimizer": "<f4", "sampler/history": "<i4", "sampler/last": "<i4", "rng/sampler/key": "<u4",
          "rng/dropout/key": "<u4", "rng/sampler/counter": "<u8", "rng/dropout/counter": "<u8"}


def fail(msg):
    print(f"reseal_ckpt: {msg}")
    sys.exit(1)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def load(path):
    """A rank file as {'attrs': {...}, 'opt': {...}, 'data': {name: array}}."""
    with h5py.File(path, "r") as f:
        data = {}
        f.visititems(lambda n, o: data.__setitem__(n, o[()]) if isinstance(o, h5py.Dataset) else None)
        return {"attrs": dict(f.attrs), "opt": dict(f["optimizer"].attrs), "data": data,
                "sampler": dict(f["sampler"].attrs)}


def format_dtype(name):
    return np.dtype(DTYPES.get(name) or DTYPES[name.split("/")[0]])


def flat(state, name):
    return np.ascontiguousarray(state["data"][name], dtype=format_dtype(name)).tobytes()


def checksum(st, version, A, B):
    a, o = st["attrs"], st["opt"]
    step, world, rank = int(a["step"]), int(a["world_size"]), int(a["rank"])
    if version == 1:
        head = (f"{FORMAT} v1 step={step} world={world} rank={rank} A={A} B={B} mv={int(o['momentum_valid'])} "
                f"lr={float(o['lr']):.17g} mu={float(o['momentum']):.17g} wd={float(o['weight_decay']):.17g}\n")
        name = "sgd"
    else:
        name = text(o["name"])
        head = f"{FORMAT} v{version} step={step} world={world} rank={rank} A={A} B={B} optimizer={name} steps={int(o['step'])}"
        head += "".join(f" {h}={float(o[h]):.17g}" for h in HYPERS if h in o)
        if version >= 3:
            sa = st["sampler"]
            head += f" epoch={int(sa['epoch'])} window={int(sa['window'])} windows_sha256={text(sa['windows_sha256'])}"
        head += "\n"
    h = hashlib.sha256(head.encode())
    h.update(text(a["config"]).encode())
    h.update(text(a["data_lock"]).encode())
    for group in ["model"] + [f"optimizer/{s}" for s in STATES[name]]:
        for p in PARAMS:
            h.update(flat(st, f"{group}/{p}"))
    h.update(flat(st, "sampler/last" if version >= 3 else "sampler/history"))
    for r in ("sampler", "dropout"):
        h.update(flat(st, f"rng/{r}/key") + flat(st, f"rng/{r}/counter"))
    return h.hexdigest()


def number(v):
    v = v.strip()
    return int(v) if re.fullmatch(r"-?\d+", v) else float(v)


def edit(st, e):
    m = re.fullmatch(r"(-?)@([^:]+):([^=]+)(?:=(.*))?", e)
    if m:
        delete, group, name, value = m.groups()
        attrs = {"/": st["attrs"], "optimizer": st["opt"], "sampler": st["sampler"]}.get(group)
        if attrs is None:
            fail(f"no attribute group {group}")
        if delete:
            attrs.pop(name, None) if name in attrs else fail(f"{e}: no attribute {name}")
            return
        old = attrs.get(name)
        if isinstance(old, (bytes, np.bytes_)) or (old is None and group == "optimizer" and name == "name"):
            attrs[name] = np.bytes_(value.encode())
        elif isinstance(old, (float, np.floating)) or (old is None and group == "optimizer" and name != "step"):
            attrs[name] = np.float64(float(value))
        elif isinstance(old, (int, np.integer)) or old is None:
            try:
                attrs[name] = np.int64(number(value)) if isinstance(number(value), int) else np.float64(number(value))
            except ValueError:
                attrs[name] = np.bytes_(value.encode())
        return
    m = re.fullmatch(r"([\w/]+)\[(\d+)\]=(.*)", e)
    if m:
        name, i, value = m.groups()
        x = st["data"][name].copy()
        x.reshape(-1)[int(i)] = number(value)
        st["data"][name] = x
        return
    m = re.fullmatch(r"([\w/]+):(shape|dtype)=(.*)", e)
    if not m:
        fail(f"cannot parse the edit '{e}'")
    name, what, value = m.groups()
    x = st["data"][name]
    st["data"][name] = x.reshape([int(d) for d in value.split(",")]) if what == "shape" else x.astype(value)


def set_attr(obj, k, v):
    if isinstance(v, (bytes, np.bytes_)):  # as ddptok writes a string: fixed size, NUL-terminated
        t = h5py.h5t.C_S1.copy()
        t.set_size(len(v) + 1)
        t.set_strpad(h5py.h5t.STR_NULLTERM)
        obj.attrs.create(k, np.bytes_(v), dtype=h5py.Datatype(t))
    else:
        obj.attrs[k] = v


def write(path, st):
    with h5py.File(path, "w") as f:
        for name, x in sorted(st["data"].items()):
            f.create_dataset(name, data=x)
        for k, v in st["attrs"].items():
            set_attr(f, k, v)
        for k, v in st["opt"].items():
            set_attr(f["optimizer"], k, v)
        for k, v in st["sampler"].items():
            set_attr(f["sampler"], k, v)


def running_hash(windows):
    """The running hash over (U, A, B) windows: h_u = SHA-256(hex(h_{u-1}) || window u as int32 LE)."""
    h = hashlib.sha256(SAMPLER_HASH_DOMAIN).hexdigest()
    for w in windows:
        h = hashlib.sha256(h.encode() + np.ascontiguousarray(w, dtype="<i4").tobytes()).hexdigest()
    return h


def to_bounded(st):
    """A format 1 or 2 state's history as format 3's bounded sampler state (the bands sampler's position)."""
    hist = st["data"].pop("sampler/history")
    step, A, B = hist.shape
    st["data"]["sampler/last"] = hist[-1].copy() if step else np.full((A, B), -1, dtype="<i4")
    st["sampler"] = {"windows_sha256": np.bytes_(running_hash(hist).encode()), "epoch": np.int64(0),
                     "window": np.int64(step)}


def main(src, dst, edits):
    ranks = sorted(n for n in os.listdir(src) if re.fullmatch(r"rank-\d{4}\.h5", n))
    if not ranks:
        fail(f"{src}: no rank file")
    os.makedirs(dst, exist_ok=True)
    sums = []
    for name in ranks:
        st = load(f"{src}/{name}")
        a, o = st["attrs"], st["opt"]
        version = int(a["version"])
        A, B = st["data"]["sampler/last" if version >= 3 else "sampler/history"].shape[-2:]
        if checksum(st, version, A, B) != text(a["checksum"]):
            fail(f"{src}/{name}: the checksum recomputed here differs from the stored one: this tool does not "
                 "reproduce ddptok's format")
        if version == 1:  # the same state in format 2
            mv = int(o.pop("momentum_valid"))
            st["opt"] = {"name": np.bytes_(b"sgd"), "step": np.int64(int(a["step"]) if mv else 0), **o}
            a["version"] = np.int64(2)
        r = int(name[5:9])
        mine = []
        for e in edits:
            m = re.fullmatch(r"(\d+):(.*)", e)
            if not m or int(m.group(1)) == r:
                mine.append(m.group(2) if m else e)
        if version < 3:  # the history's edits first, then the same state in format 3
            for e in mine:
                if e.startswith("sampler/history"):
                    edit(st, e)
            to_bounded(st)
            a["version"] = np.int64(3)
        for e in mine:
            if not e.startswith("sampler/history"):
                edit(st, e)
        st["attrs"]["checksum"] = np.bytes_(checksum(st, int(a["version"]), A, B).encode())
        tmp = f"{dst}/{name}.tmp"
        write(tmp, st)
        os.replace(tmp, f"{dst}/{name}")
        with open(f"{dst}/{name}", "rb") as f:
            sums.append(f"{hashlib.sha256(f.read()).hexdigest()}  {name}\n")
    with open(f"{dst}/SHA256SUMS", "w") as f:
        f.writelines(sums)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
