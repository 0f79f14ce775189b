"""label_counts.py OUTPUTS PREFIX IGNORE MAX_LABELS: per rank, window 1's padded, real
and supervised positions, computed from corpus.h5 and plan.h5 alone (independently of
ddptok's batch layout). Prints one line per rank: padded real supervised."""
import sys

import h5py
import numpy as np

out, P, ignore, cap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
with h5py.File(f"{out}/data/corpus.h5") as f:
    tokens, offsets = f["tokens"][()].astype(np.int64), f["offsets"][()]
with h5py.File(f"{out}/data/plan.h5") as f:
    plan = f["ids"][0]
for r in range(plan.shape[0]):
    padded = real = sup = 0
    for micro in plan[r]:
        seqs = [tokens[offsets[i]:offsets[i + 1]] for i in micro if i >= 0]
        padded += len(micro) * max(len(x) for x in seqs)
        for x in seqs:
            real += len(x)
            labels = [t for t in range(P, len(x)) if x[t] != ignore]
            sup += min(len(labels), cap) if cap else len(labels)
    print(padded, real, sup)
