"""compare_ckpt.py [--rank0] A B: max |Δ| over /model and every optimizer state tensor
(/optimizer/<state>/<param>) of two checkpoint directories, every rank file (--rank0: rank
0's only, for checkpoints written by different world sizes); prints it and exits 0 when
bit-identical (exact compare, the optimizer's step count included)."""
import glob
import os
import sys

import h5py
import numpy as np

rank0 = sys.argv[1] == "--rank0"
a, b = sys.argv[1 + rank0], sys.argv[2 + rank0]
files = sorted(os.path.basename(p) for p in glob.glob(f"{a}/rank-*.h5"))
if rank0:
    files = [f for f in files if f == "rank-0000.h5"]
if not files or not all(os.path.exists(f"{b}/{f}") for f in files) or (
        not rank0 and files != sorted(os.path.basename(p) for p in glob.glob(f"{b}/rank-*.h5"))):
    print("rank files differ or are missing")
    sys.exit(2)


def tensors(f):
    out = {f"model/{p}": f["model"][p] for p in f["model"]}
    for state in f["optimizer"]:
        out.update({f"optimizer/{state}/{p}": f["optimizer"][state][p] for p in f["optimizer"][state]})
    return out


worst, identical = 0.0, True
for name in files:
    with h5py.File(f"{a}/{name}") as fa, h5py.File(f"{b}/{name}") as fb:
        ta, tb = tensors(fa), tensors(fb)
        if set(ta) != set(tb):
            print(f"{name}: datasets differ: {sorted(set(ta) ^ set(tb))}")
            sys.exit(2)
        identical &= fa["optimizer"].attrs.get("step") == fb["optimizer"].attrs.get("step")
        for k in ta:
            x, y = ta[k][()], tb[k][()]
            identical &= x.tobytes() == y.tobytes()
            worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y))))
print(f"{worst:.9g}")
sys.exit(0 if identical else 1)
