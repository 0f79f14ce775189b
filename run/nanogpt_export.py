#!/usr/bin/python3
"""ddptok's train/validation split as nanoGPT's train.bin / val.bin (run/nanogpt-compare.sh).

  nanogpt_export.py export CORPUS_H5 DIR [--block T] [--shifts K]
      reads an import's corpus.h5 (docs/file-formats.md) and writes, for the train and the
      validation split, one stream of ddptok ids: each document's pieces back to back (the
      document's text, less any piece the import dropped), the documents in corpus order with
      the delimiter "\\n%\\n" (ids 11 38 11) between them, cut to a multiple of T ids. DIR gets
      train.bin, val.bin (uint16, the ids as they are: byte b is id b + 1, nanoGPT's
      meta.pkl vocab_size 257), meta.pkl, and the same streams as bytes (id - 1),
      fortunes_train.bytes and fortunes_val.bytes, for ddptok to import again as one document
      per split (--split-from-names) cut into pieces of exactly T ids. With --shifts K
      (a divisor of T) the train bytes are K files, fortunes_train_s000.bytes ..., the stream
      from id k·T/K on (cut to a multiple of T): ddptok's train pieces then start at K offsets
      of the stream, not one (nanoGPT's blocks start at any).
  nanogpt_export.py check CORPUS_H5 DIR [--block T] [--shifts K] [--pieces CORPUS2_H5]
      exit 0 when DIR's bins hold exactly what export makes of CORPUS_H5 (and, with --pieces,
      when the second import's train and validation splits are those bins cut into pieces of
      exactly T ids, nothing else in it; under --shifts K its train split the K shifted
      streams in turn); else one line saying what differs, exit 1.
"""
import os
import pickle
import sys

import h5py
import numpy as np

DELIM = np.array([11, 38, 11], dtype=np.int64)  # "\n%\n" as ddptok ids (byte + 1)
SPLITS = ((0, "train"), (1, "val"))


def streams(corpus, block):
    with h5py.File(corpus, "r") as f:
        tok = f["tokens"][:].astype(np.int64)
        off = f["offsets"][:]
        split = f["split"][:]
        doc = f["document"][:]
        vocab = int(f.attrs["vocab_size"])
    if vocab != 257:
        sys.exit(f"{corpus}: vocab_size {vocab}, expected 257 (byte-level: byte b is id b + 1)")
    out = {}
    for s, name in SPLITS:
        parts, last = [], None
        for i in np.nonzero(split == s)[0]:
            if last is not None and doc[i] != last:
                parts.append(DELIM)
            parts.append(tok[off[i]:off[i + 1]])
            last = doc[i]
        ids = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        out[name] = ids[: len(ids) // block * block]
    return out


def shifted(ids, k, block):
    """the stream from id k, cut to a multiple of the block: its pieces start k ids later"""
    return ids[k:k + (len(ids) - k) // block * block]


def main():
    a = sys.argv[1:]
    block = 128
    if "--block" in a:
        i = a.index("--block"); block = int(a[i + 1]); del a[i:i + 2]
    shifts = 1
    if "--shifts" in a:
        i = a.index("--shifts"); shifts = int(a[i + 1]); del a[i:i + 2]
        if shifts < 1 or block % shifts:
            sys.exit(f"--shifts {shifts}: expected a divisor of the block {block}")
    pieces = None
    if "--pieces" in a:
        i = a.index("--pieces"); pieces = a[i + 1]; del a[i:i + 2]
    if len(a) != 3 or a[0] not in ("export", "check"):
        sys.exit(__doc__)
    verb, corpus, d = a
    want = streams(corpus, block)
    if verb == "export":
        os.makedirs(d, exist_ok=True)
        for name, ids in want.items():
            if len(ids) < 2 * block:
                sys.exit(f"{corpus}: the {name} split holds {len(ids)} ids, fewer than 2 blocks of {block}")
            assert ids.min() >= 1 and ids.max() <= 256
            ids.astype(np.uint16).tofile(os.path.join(d, f"{name}.bin"))
            if name == "train" and shifts > 1:
                for k in range(shifts):
                    (shifted(ids, k * block // shifts, block) - 1).astype(np.uint8).tofile(os.path.join(d, f"fortunes_train_s{k:03d}.bytes"))
            else:
                (ids - 1).astype(np.uint8).tofile(os.path.join(d, f"fortunes_{name}.bytes"))
            print(f"{name}.bin: {len(ids)} ids ({len(ids) // block} blocks of {block})")
        with open(os.path.join(d, "meta.pkl"), "wb") as f:
            pickle.dump({"vocab_size": 257}, f)
        return
    for name, ids in want.items():
        got = np.fromfile(os.path.join(d, f"{name}.bin"), dtype=np.uint16).astype(np.int64)
        if len(got) != len(ids) or not np.array_equal(got, ids):
            n = min(len(got), len(ids))
            at = int(np.argmax(got[:n] != ids[:n])) if n and not np.array_equal(got[:n], ids[:n]) else n
            print(f"{d}/{name}.bin: {len(got)} ids, ddptok's {name} split {len(ids)}; first difference at id {at}")
            sys.exit(1)
    with open(os.path.join(d, "meta.pkl"), "rb") as f:
        if pickle.load(f).get("vocab_size") != 257:
            print(f"{d}/meta.pkl: vocab_size is not 257"); sys.exit(1)
    if pieces:
        with h5py.File(pieces, "r") as f:
            tok = f["tokens"][:].astype(np.int64)
            off = f["offsets"][:]
            n = [int(x) for x in f.attrs["split_sequences"]]
        if n[2] != 0 or any(np.diff(off) != block):
            print(f"{pieces}: not pieces of exactly {block} ids with no test split"); sys.exit(1)
        for (s, name), begin, count in zip(SPLITS, (0, n[0]), n[:2]):
            ids = tok[off[begin]:off[begin + count]]
            w = want[name]
            if name == "train" and shifts > 1:
                w = np.concatenate([shifted(w, k * block // shifts, block) for k in range(shifts)])
            if not np.array_equal(ids, w):
                print(f"{pieces}: its {name} split is not {name}.bin's ids"); sys.exit(1)
    print(f"{d}: train.bin and val.bin hold ddptok's split of {corpus}" + (f", and {pieces} the same ids in pieces of {block}" if pieces else ""))


main()
