"""bench_overlap.py — train.overlap's window split, none against output-layer and blocks.

    python3 run/bench_overlap.py [--shapes mid[,wide]] [--ranks "2 4"] [--repeats 3]
                                 [--updates N] [--no-progress-row]

For each shape of run/bench_gpt.py (SHAPES: equal lengths, A 1, dropout 0; here under the
global sampler, W·B sequences a window, partition balanced) and each W: train
--continuous with train.overlap none, output-layer, blocks and blocks with
DDPTOK_BUCKET_PROGRESS=off (the hook starts the buckets but does not MPI_Testall the ones in
flight), in interleaved rounds; per run the mean over its windows but the first of rank 0's
JSONL window, window_split.compute, grad_allreduce and overlap (ms); the table prints the
medians over the rounds and the 1-minute load average seen. W beyond the cores is
oversubscribed (the ranks take turns). Run from the repository root after `make`; it works
in a temporary directory."""
import argparse
import json
import os
import statistics as st
import subprocess
import sys
import tempfile

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("ROOT", ROOT), os.environ.setdefault("REPEATS", "1"), os.environ.setdefault("SCALE", "1")
sys.path.insert(0, os.path.join(ROOT, "run"))
from bench_gpt import SHAPES  # noqa: E402  (the bench's shapes, one definition)

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--shapes", default="mid")
p.add_argument("--ranks", default="2 4")
p.add_argument("--repeats", type=int, default=3)
p.add_argument("--updates", type=int, default=0, help="updates per run (default: the shape's)")
p.add_argument("--no-progress-row", action="store_true", help="leave out blocks with DDPTOK_BUCKET_PROGRESS=off")
a = p.parse_args()
DDPTOK = os.path.join(ROOT, "ddptok")
MODES = [("none", {}), ("output-layer", {}), ("blocks", {})]
if not a.no_progress_row:
    MODES.append(("blocks", {"DDPTOK_BUCKET_PROGRESS": "off"}))
FIELDS = ("window", "compute", "grad_allreduce", "overlap")
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1")


def load():
    return float(open("/proc/loadavg").read().split()[0])


def config(shape, W, updates):
    c = yaml.safe_load(open(f"{ROOT}/configs/gpt-tiny.yaml"))
    title, over, U = SHAPES[shape]
    pinned = ["train.lr_schedule=constant", "train.grad_clip=0"]
    # W ranks at equal lengths: the global sampler, W·B sequences a window, the partition that
    # balances tokens (the bands sampler cannot cut lengths T-1..T into more than 2 bands).
    B = int(dict(kv.split("=", 1) for kv in over).get("train.batch_size_per_rank", c["train"]["batch_size_per_rank"]))
    per_w = [f"train.world_size={W}", "train.rank_bands=auto", "train.sampler=global", f"train.global_batch={W * B}",
             "train.partition=balanced"]
    for kv in pinned + over + [f"train.updates={updates or U}", "train.interrupt_at=0"] + per_w:
        k, v = kv.split("=", 1)
        *path, last = k.split(".")
        d = c
        for q in path:
            d = d[q]
        d[last] = yaml.safe_load(v)
    c["paths"] = {"outputs": f"o-{shape}-{W}", "artifacts": f"a-{shape}-{W}"}
    name = f"{shape}-w{W}.yaml"
    yaml.safe_dump(c, open(name, "w"))
    return name, title


def train(cfg, shape, W, mode, extra_env):
    out = f"o-{shape}-{W}"
    subprocess.run(["rm", "-rf", f"a-{shape}-{W}", f"{out}/train"], check=True)
    xs = sum((["-x", k] for k in extra_env), [])
    p = subprocess.run(["mpirun", "-np", str(W)] + xs + [DDPTOK, "train", "--config", cfg, "--continuous", "--set",
                                                          f"train.overlap={mode}"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(env, **extra_env))
    if p.returncode:
        raise SystemExit(f"bench_overlap: train {cfg} {mode} exited {p.returncode}:\n{p.stdout[-2000:]}")
    rows = [json.loads(l) for l in open(f"{out}/train/continuous.jsonl")][1:]
    r = {"window": 1e3 * st.mean(x["seconds"] for x in rows)}
    for k in FIELDS[1:]:
        r[k] = 1e3 * st.mean(x["window_split"][k] for x in rows)
    return r


work = tempfile.mkdtemp(prefix="ddptok-bench-overlap.")
os.chdir(work)
for shape in a.shapes.split(","):
    for W in map(int, a.ranks.split()):
        cfg, title = config(shape, W, a.updates)
        subprocess.run([DDPTOK, "prepare", "--config", cfg], check=True, stdout=subprocess.DEVNULL, env=env)
        res, loads = {i: [] for i in range(len(MODES))}, []
        for rnd in range(a.repeats):
            for i, (mode, extra) in enumerate(MODES):
                loads.append(load())
                res[i].append(train(cfg, shape, W, mode, extra))
        print(f"{shape} ({title}), W = {W}: medians of {a.repeats} interleaved rounds, ms per window "
              f"(rank 0, the first window left out); load average {min(loads):.1f}-{max(loads):.1f}")
        print(f"  {'train.overlap':<28} {'window':>9} {'compute':>9} {'grad a-r':>9} {'overlap':>9}   per round (window)")
        for i, (mode, extra) in enumerate(MODES):
            label = mode + (" (no progress calls)" if extra else "")
            med = {k: st.median(r[k] for r in res[i]) for k in FIELDS}
            rounds = " ".join(f"{r['window']:.1f}" for r in res[i])
            print(f"  {label:<28} {med['window']:>9.1f} {med['compute']:>9.1f} {med['grad_allreduce']:>9.1f} "
                  f"{med['overlap']:>9.1f}   {rounds}")
        sys.stdout.flush()
subprocess.run(["rm", "-rf", work])
