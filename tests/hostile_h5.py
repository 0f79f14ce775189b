"""Writes hostile variants of ddptok's HDF5 files for tests/test_hostile.sh, each with
its chunk checksums, content digest and data lock recomputed (all plain SHA-256 anyone can
redo, so they alone cannot be what keeps a file safe to index with).

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

# configs/tiny.yaml's lock fields (corpus_lock in src/data/corpus.c), format 2.
TOKEN_CHUNK, OFFSET_CHUNK = 1024, 512
FIELDS = ("ddptok-data-lock-v2\nseed=99\nvocab=24\nsplits=96,8,32\nlengths=8,24\nlabels=0,-1,0\n"
          "support=3\nworld=2\nbatch=3\naccumulation=2\nbands=8-15;16-24;")


def sums(a, dtype, chunk):
    b = np.ascontiguousarray(a).astype(dtype)
    return np.array([list(hashlib.sha256(b[i:i + chunk].tobytes()).digest()) for i in range(0, len(b), chunk)],
                    dtype=np.uint8).reshape(-1, 32)


def content(tokens, offsets, split):
    h = hashlib.sha256(f"ddptok-corpus-v2 sequences={len(split)} tokens={len(tokens)} chunks={TOKEN_CHUNK},{OFFSET_CHUNK}\n".encode())
    h.update(sums(tokens, "<i4", TOKEN_CHUNK).tobytes())
    h.update(sums(offsets, "<i8", OFFSET_CHUNK).tobytes())
    h.update(np.ascontiguousarray(split).astype("u1").tobytes())
    return h.hexdigest()


def lock(tokens, offsets, split):
    return hashlib.sha256((FIELDS + "content " + content(tokens, offsets, split) + "\n").encode()).hexdigest()


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
    if mode.startswith("token="):  # in every sequence: whichever is read first finds it
        tokens[offsets[:-1] + 1] = int(mode[6:])
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
        t32 = tokens.astype(np.int32)
        for name, data in (("tokens", tokens.astype(ttype)), ("offsets", offsets), ("split", split),
                           ("token_sha256", sums(t32, "<i4", TOKEN_CHUNK)), ("offset_sha256", sums(offsets, "<i8", OFFSET_CHUNK))):
            del f[name]
            f[name] = data
        f.attrs.modify("content_sha256", content(t32, offsets, split).encode())
        f.attrs.modify("data_lock", lock(t32, offsets, split).encode())

main()
