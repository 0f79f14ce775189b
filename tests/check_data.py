"""Checks corpus.h5 and plan.h5 against docs/spec.md §2-§3 and §10, read with h5py (an
independent reader of the documented format). Usage: check_data.py OUTPUTS W A B U LO HI [BANDS...]
Prints one line per failed property and exits 1 on any."""
import sys

import h5py
import numpy as np

out, W, A, B, U, lo, hi = sys.argv[1], *map(int, sys.argv[2:8])
bands = [tuple(map(int, b.split("-"))) for b in sys.argv[8:]]
fail = []
with h5py.File(f"{out}/data/corpus.h5", "r") as f:
    tokens, offsets, split = f["tokens"][()], f["offsets"][()], f["split"][()]
    corpus_lock = f.attrs["corpus_lock"]
    V = int(f.attrs["vocab_size"])
    if "data_lock" in f.attrs:
        fail.append("corpus.h5 carries a data_lock: the corpus lock alone belongs to it (the layout's keys are the plan's)")
lens = np.diff(offsets)
# format 3: tokens as uint16 where every id fits (V <= 65536), else int32
if tokens.dtype != (np.uint16 if V <= 65536 else np.int32) or offsets.dtype != np.int64 or split.dtype != np.uint8:
    fail.append(f"dtypes {tokens.dtype} {offsets.dtype} {split.dtype}")
if not (lens.min() >= lo and lens.max() <= hi):
    fail.append(f"lengths outside [{lo}, {hi}]: {lens.min()}..{lens.max()}")
if not (tokens.min() >= 1 and tokens.max() <= V - 1):
    fail.append(f"token ids outside 1..V-1: {tokens.min()}..{tokens.max()}")
with h5py.File(f"{out}/data/plan.h5", "r") as f:
    ids = f["ids"][()]
    lock = f.attrs["data_lock"]
    if len(lock) != 64 or lock == corpus_lock:
        fail.append("plan.h5's data lock is not a SHA-256 of its own (the corpus lock and the layout)")
if ids.shape != (U, W, A, B):
    fail.append(f"plan shape {ids.shape}, expected {(U, W, A, B)}")
for u in range(U):
    seen = [set() for _ in range(W)]
    for r in range(W):
        w = ids[u, r].ravel()
        w = w[w >= 0]
        if len(set(w)) != len(w):
            fail.append(f"step {u}: rank {r} draws an id twice in one window")
        for i in w:
            if split[i] != 0:
                fail.append(f"step {u}: rank {r} draws non-train id {i}")
            if bands and not (bands[r][0] <= lens[i] <= bands[r][1]):
                fail.append(f"step {u}: rank {r} id {i} of length {lens[i]} outside band {bands[r]}")
        seen[r] = set(w)
    for r in range(W):
        for q in range(r):
            if seen[r] & seen[q]:
                fail.append(f"step {u}: ranks {q} and {r} share ids")
# Windows repeat ids across steps (sampling is per window), but not the same window each time.
if U > 1 and all((ids[0] == ids[u]).all() for u in range(1, U)):
    fail.append("every window is identical")
for line in fail[:10]:
    print("FAIL", line)
sys.exit(1 if fail else 0)
