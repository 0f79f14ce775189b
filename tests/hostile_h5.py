"""Writes hostile variants of ddptok's HDF5 files for tests/test_hostile.sh, each with
its chunk checksums, their tree, the content digest and the corpus lock recomputed (all plain
SHA-256 anyone can redo, so they alone cannot be what keeps a file safe to index with).

  hostile_h5.py corpus OUTPUTS MODE   rewrite OUTPUTS/data/corpus.h5 (configs/tiny.yaml's
                                      corpus-lock fields); MODE: token=N | offsets | split |
                                      float-tokens | extra-tokens
  hostile_h5.py lock OUTPUTS          check that the lock recomputed here equals the stored
                                      one (the recomputation itself is right)
  hostile_h5.py inplace OUTPUTS POS V token POS becomes V in place (the same bytes of the file),
                                      its chunk's checksum, the tree, the digest and the lock
                                      rewritten in place to match: what a process starting now
                                      accepts, and one that verified the old root must refuse

Written from docs/file-formats.md (format 3) alone: chunks of 1024 tokens (uint16 where
data.vocab_size <= 65536) and 512 offsets, pages of 128 checksums up to one root.
"""
import hashlib
import sys

import h5py
import numpy as np

TOKEN_CHUNK, OFFSET_CHUNK, PAGE = 1024, 512, 128
# configs/tiny.yaml's corpus-lock lines (config_corpus_lock_fields: seed, vocab, splits,
# lengths, support for prepare's corpus), in the key table's order; the splits from the file
# (its split_sequences are data.splits.*).
def fields(counts):
    return f"ddptok-corpus-lock-v1\nseed=99\nvocab=24\nsplits={counts[0]},{counts[1]},{counts[2]}\nlengths=8,24\nsupport=3\n"


def sums(a, dtype, chunk):
    b = np.ascontiguousarray(a).astype(dtype)
    return np.array([list(hashlib.sha256(b[i:i + chunk].tobytes()).digest()) for i in range(0, len(b), chunk)],
                    dtype=np.uint8).reshape(-1, 32)


def tree(level0):
    levels, below = [], level0
    while True:
        up = np.array([list(hashlib.sha256(below[p:p + PAGE].tobytes()).digest()) for p in range(0, len(below), PAGE)],
                      dtype=np.uint8).reshape(-1, 32)
        levels.append(up)
        if len(up) == 1:
            return np.concatenate(levels)
        below = up


def content(tokens, offsets, counts, dtype):
    troot, oroot = tree(sums(tokens, dtype, TOKEN_CHUNK))[-1], tree(sums(offsets, "<i8", OFFSET_CHUNK))[-1]
    tb = np.dtype(dtype).itemsize
    line = (f"ddptok-corpus-v3 sequences={len(offsets) - 1} tokens={len(tokens)} token_bytes={tb} "
            f"chunks={TOKEN_CHUNK},{OFFSET_CHUNK} page={PAGE} splits={counts[0]},{counts[1]},{counts[2]}\n")
    return hashlib.sha256(line.encode() + troot.tobytes() + oroot.tobytes()).hexdigest()


def lock(tokens, offsets, counts, dtype):
    return hashlib.sha256((fields(counts) + "content " + content(tokens, offsets, counts, dtype) + "\n").encode()).hexdigest()


def main():
    what, out = sys.argv[1], sys.argv[2]
    path = f"{out}/data/corpus.h5"
    with h5py.File(path, "r") as f:
        tokens, offsets, split = f["tokens"][()], f["offsets"][()], f["split"][()]
        counts = [int(c) for c in f.attrs["split_sequences"]]
        stored = f.attrs["corpus_lock"]
        stored = stored.decode() if isinstance(stored, bytes) else stored
    dtype = "<u2" if int(h5py.File(path, "r").attrs["vocab_size"]) <= 65536 else "<i4"
    if lock(tokens, offsets, counts, dtype) != stored:
        sys.exit(f"hostile_h5.py: the recomputed lock differs from {path}'s: FIELDS is out of date")
    if what == "lock":
        return
    if what == "inplace":  # every write into the datasets as they lie: no address moves
        pos, v = int(sys.argv[3]), int(sys.argv[4])
        tokens[pos] = v
        with h5py.File(path, "r+") as f:
            f["tokens"][pos] = v
            c = pos // TOKEN_CHUNK
            f["token_sha256"][c] = sums(tokens[c * TOKEN_CHUNK:(c + 1) * TOKEN_CHUNK], dtype, TOKEN_CHUNK)[0]
            f["token_tree"][...] = tree(f["token_sha256"][()])
            f.attrs.modify("content_sha256", content(tokens, offsets, counts, dtype).encode())
            f.attrs.modify("corpus_lock", lock(tokens, offsets, counts, dtype).encode())
        return
    mode = sys.argv[3]
    ttype = dtype
    tokens = tokens.astype(np.int64)
    if mode.startswith("token="):  # in every sequence: whichever is read first finds it
        v = int(mode[6:])
        tokens[offsets[:-1] + 1] = v
        if dtype == "<u2" and not 0 <= v < 65536:  # beyond uint16: stored as int32, which the reader refuses by its dtype
            dtype = ttype = "<i4"
    elif mode == "offsets":  # still monotone, but sequence 1 is empty and 0 is longer
        offsets[1] = offsets[2]
    elif mode == "split":  # the split counts the digest covers: one train sequence moved to validation
        counts = [counts[0] - 1, counts[1] + 1, counts[2]]
        split[counts[0]] = 1
    elif mode == "float-tokens":
        ttype = "<f4"
    elif mode == "extra-tokens":  # many more tokens than the offsets cover
        tokens = np.concatenate([tokens, np.ones(10 ** 6, np.int64)])
    else:
        sys.exit(f"hostile_h5.py: unknown mode {mode}")
    with h5py.File(path, "r+") as f:  # attrs.modify keeps the attribute's own string type
        stored_tokens = tokens.astype(dtype)
        for name, data in (("tokens", tokens.astype(ttype)), ("offsets", offsets), ("split", split),
                           ("token_sha256", sums(stored_tokens, dtype, TOKEN_CHUNK)),
                           ("offset_sha256", sums(offsets, "<i8", OFFSET_CHUNK)),
                           ("token_tree", tree(sums(stored_tokens, dtype, TOKEN_CHUNK))),
                           ("offset_tree", tree(sums(offsets, "<i8", OFFSET_CHUNK)))):
            del f[name]
            f[name] = data
        f.attrs["split_sequences"] = np.array(counts, dtype=np.int64)
        f.attrs.modify("content_sha256", content(stored_tokens, offsets, counts, dtype).encode())
        f.attrs.modify("corpus_lock", lock(stored_tokens, offsets, counts, dtype).encode())


main()
