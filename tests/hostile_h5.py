"""Writes hostile variants of ddptok's HDF5 files for tests/test_hostile.sh, each with
its data lock recomputed (the lock is a plain SHA-256 anyone can redo, so the lock alone
cannot be what keeps a file safe to index with).

  hostile_h5.py corpus OUTPUTS MODE   rewrite OUTPUTS/data/corpus.h5 (configs/tiny.yaml's
                                      lock fields); MODE: token=N | offsets | split |
                                      float-tokens | extra-tokens
  hostile_h5.py lock OUTPUTS          check that the lock recomputed here equals the stored
                                      one (the recomputation itself is right)
"""
import hashlib
import sys

import h5py
import numpy as np

# configs/tiny.yaml's lock fields (corpus_lock in src/corpus.c).
FIELDS = ("ddptok-data-lock-v1\nseed=99\nvocab=24\nsplits=96,8,32\nlengths=8,24\nlabels=0,-1,0\n"
          "support=3\nworld=2\nbatch=3\naccumulation=2\nbands=8-15;16-24;")


def lock(tokens, offsets, split):
    h = hashlib.sha256(FIELDS.encode())
    h.update(np.ascontiguousarray(tokens).astype("<i4").tobytes())
    h.update(np.ascontiguousarray(offsets).astype("<i8").tobytes())
    h.update(np.ascontiguousarray(split).astype("u1").tobytes())
    return h.hexdigest()


def main():
    what, out = sys.argv[1], sys.argv[2]
    path = f"{out}/data/corpus.h5"
    with h5py.File(path, "r") as f:
        tokens, offsets, split = f["tokens"][()], f["offsets"][()], f["split"][()]
        stored = f.attrs["data_lock"]
        stored = stored.decode() if isinstance(stored, bytes) else stored
    if lock(tokens, offsets, split) != stored:
        sys.exit(f"hostile_h5.py: the recomputed lock differs from {path}'s: FIELDS is out of date")
    if what == "lock":
        return
    mode = sys.argv[3]
    ttype = np.int32
    if mode.startswith("token="):
        tokens[len(tokens) // 2] = int(mode[6:])
    elif mode == "offsets":  # still monotone, but sequence 1 is empty and 0 is longer
        offsets[1] = offsets[2]
    elif mode == "split":
        split[0] = 3
    elif mode == "float-tokens":
        ttype = np.float32
    elif mode == "extra-tokens":  # many more tokens than the offsets cover
        tokens = np.concatenate([tokens, np.ones(10 ** 6, np.int32)])
    else:
        sys.exit(f"hostile_h5.py: unknown mode {mode}")
    with h5py.File(path, "r+") as f:  # attrs.modify keeps the attribute's own string type
        for name, data in (("tokens", tokens.astype(ttype)), ("offsets", offsets), ("split", split)):
            del f[name]
            f[name] = data
        f.attrs.modify("data_lock", lock(tokens.astype(np.int32), offsets, split).encode())

main()
