"""The PyTorch peer of `make bench` (run/bench.sh): ddptok's training run written as plain
PyTorch DDP (gloo, CPU, FP32, one thread per rank), doing exactly ddptok's work:

  - the corpus and the window plan read from ddptok's outputs/data/{corpus,plan}.h5 and the
    initial parameters from outputs/reference.h5 (h5py), the config from the same YAML;
  - per window and rank: A microbatches of B sequences, only the supervised positions
    (token unit: every position t >= unsupervised_prefix whose target is not ignore_token,
    at most max_labels per sequence), contexts of k ids with 0 before the sequence start;
  - the rank loss W*S_r/N with the integer N all-reduced (int64) before the first backward,
    no_sync() on all but the last microbatch, DDP's gradient average, torch.optim.SGD;
  - dropout p on the hidden layer (torch's own masks: ddptok's Philox masks differ, so the
    loss check runs with dropout 0);
  - --first-layer factored: ddptok's train.first_layer factored in PyTorch: per-slot
    tables P_j = emb @ w1_j.T (V, H), once per window as ddptok builds them, and
    Z = b1 + sum_j P_j[ctx[:, j]] (embedding_bag, sum mode), autograd doing the backward.
    The tables' backward also runs once per window only if the window is one autograd
    graph: the DDP module's forward takes the window's A microbatches and one backward of
    W*S_r/N follows (DDP reduces once, as with no_sync on all but the last microbatch);
    the activations of all A microbatches are then alive at once (ddptok: one at a time).

    python3 run/bench_torch.py CONFIG OUTPUTS [--dropout P] [--updates U] [--first-layer dense|factored]

starts train.world_size rank processes itself (env rendezvous on 127.0.0.1: the Debian
torchrun of torch 1.13 fails in its elastic agent); under torchrun (RANK set) it is one rank.

Rank 0 prints one JSON line: tokens and seconds summed over windows 2..U (window 1 carries
DDP's one-time setup; ddptok's side is measured the same way), and the global loss of
windows 1 and 2 (all-reduced outside the timed windows). Setup (reading files, building the batches) is outside the timed windows, as it is
for ddptok (its draw-and-count is timed but costs microseconds)."""
import argparse
import json
import os
import socket
import subprocess
import sys
import time

import h5py
import numpy as np
import torch
import torch.distributed as dist
import yaml

PARAMS = ["embedding", "w1", "b1", "w2", "b2"]


def load_config(path):
    with open(path) as f:
        c = yaml.safe_load(f)
    d, m, t = c["data"], c["model"], c["train"]
    unit = t.get("loss_unit", "token")
    if unit != "token" or t.get("normalization", "global-token") != "global-token":
        raise SystemExit("bench_torch: only the token unit with global-token normalization is implemented")
    return dict(V=d["vocab_size"], P=d.get("unsupervised_prefix", 0), ignore=d.get("ignore_token", -1),
                max_labels=d.get("max_labels", 0), k=m["context"], D=m["embed_dim"], H=m["hidden"],
                p=float(m["dropout"]), W=t["world_size"], A=t["accumulation"], B=t["batch_size_per_rank"],
                U=t["updates"], lr=float(t["optimizer"]["lr"]), mu=float(t["optimizer"]["momentum"]),
                wd=float(t["optimizer"].get("weight_decay", 0.0)))


def microbatch(cfg, tokens, offsets, ids):
    """Contexts (T, k) and targets (T) of the supervised positions of one microbatch."""
    k, ctx, tgt = cfg["k"], [], []
    for i in ids:
        if i < 0:  # an empty slot
            continue
        x = tokens[offsets[i]:offsets[i + 1]].astype(np.int64)
        t = np.arange(cfg["P"], len(x))
        t = t[x[t] != cfg["ignore"]]
        if cfg["max_labels"]:
            t = t[:cfg["max_labels"]]
        padded = np.concatenate([np.zeros(k, np.int64), x])
        ctx.append(padded[t[:, None] + np.arange(k)[None, :]])  # x[t-k..t-1], 0 before the start
        tgt.append(x[t])
    if not ctx:
        return torch.zeros((0, k), dtype=torch.int64), torch.zeros(0, dtype=torch.int64)
    return torch.from_numpy(np.concatenate(ctx)), torch.from_numpy(np.concatenate(tgt))


class Model(torch.nn.Module):
    def __init__(self, init, p, factored):
        super().__init__()
        self.embedding, self.w1, self.b1, self.w2, self.b2 = (
            torch.nn.Parameter(torch.from_numpy(init[n].astype(np.float32))) for n in PARAMS)
        self.p, self.factored = p, factored

    def tables(self):
        """The factored first layer's (k*V, H): rows j*V..j*V+V-1 are P_j = emb @ w1_j.T."""
        D, k = self.embedding.shape[1], self.w1.shape[1] // self.embedding.shape[1]
        return torch.cat([self.embedding @ self.w1[:, j * D:(j + 1) * D].t() for j in range(k)])

    def forward(self, micro):
        """(len(micro)) the rank's S of each microbatch (ctx, tgt): the sum of its cross-entropies."""
        tables = self.tables() if self.factored else None
        return torch.stack([self.loss(ctx, tgt, tables) for ctx, tgt in micro])

    def loss(self, ctx, tgt, tables):
        if tables is None:  # dense: Z = E @ w1.T + b1
            z = torch.addmm(self.b1, self.embedding[ctx].reshape(len(tgt), -1), self.w1.t())
        else:  # factored: Z = b1 + sum_j P_j[ctx[:, j]]; slot j's id v is row j*V + v
            V, k = self.embedding.shape[0], ctx.shape[1]
            z = self.b1 + torch.nn.functional.embedding_bag(ctx + V * torch.arange(k, dtype=ctx.dtype), tables, mode="sum")
        h = torch.tanh(z)
        if self.p > 0:
            h = torch.nn.functional.dropout(h, self.p, training=True)
        logits = torch.addmm(self.b2, h, self.w2.t())
        return torch.nn.functional.cross_entropy(logits, tgt, reduction="sum")


def launch(W):
    """Starts W copies of this command as ranks 0..W-1; returns the first failing exit code."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(W):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(r), WORLD_SIZE=str(W),
                   LOCAL_RANK=str(r), OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    rcs = [p.wait() for p in procs]
    return next((rc for rc in rcs if rc), 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("outputs")
    ap.add_argument("--dropout", type=float, default=None, help="override model.dropout")
    ap.add_argument("--updates", type=int, default=None, help="override train.updates")
    ap.add_argument("--first-layer", choices=["dense", "factored"], default="dense", help="as ddptok's train.first_layer")
    a = ap.parse_args()
    if "RANK" not in os.environ:
        sys.exit(launch(load_config(a.config)["W"]))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    cfg = load_config(a.config)
    if a.dropout is not None:
        cfg["p"] = a.dropout
    U = a.updates or cfg["U"]
    if W != cfg["W"]:
        raise SystemExit(f"bench_torch: {W} ranks started, the config says train.world_size {cfg['W']}")
    with h5py.File(f"{a.outputs}/data/corpus.h5") as f:
        tokens, offsets = f["tokens"][()].astype(np.int64), f["offsets"][()]
    with h5py.File(f"{a.outputs}/data/plan.h5") as f:
        plan = f["ids"][()]
    with h5py.File(f"{a.outputs}/reference.h5") as f:
        init = {p: f[f"init/{p}"][()] for p in PARAMS}
    A = cfg["A"]
    windows = [[microbatch(cfg, tokens, offsets, plan[u, rank, m]) for m in range(A)] for u in range(U)]

    model = torch.nn.parallel.DistributedDataParallel(Model(init, cfg["p"], a.first_layer == "factored"))
    opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["mu"], weight_decay=cfg["wd"])
    losses, tokens_timed, seconds = [], 0, 0.0
    for u in range(U):
        t0 = time.perf_counter()
        micro = windows[u]
        count = torch.tensor([sum(len(tgt) for _, tgt in micro)], dtype=torch.int64)
        dist.all_reduce(count)  # N: integer, before the first backward
        N = int(count.item())
        opt.zero_grad()
        S_r = 0.0
        if a.first_layer == "factored":  # the window as one graph: the tables and their backward once
            S = model(micro)
            (S.sum() * (W / N)).backward()
            S_r = sum(S.tolist())
        for m, (ctx, tgt) in enumerate(micro if a.first_layer == "dense" else []):
            S = model([(ctx, tgt)])[0]
            if m < A - 1:
                with model.no_sync():
                    (S * (W / N)).backward()
            else:
                (S * (W / N)).backward()
            S_r += S.item()
        opt.step()
        dt = time.perf_counter() - t0
        if u > 0:
            tokens_timed, seconds = tokens_timed + N, seconds + dt
        if u < 2:  # the loss check's windows: the global loss, outside the timed window
            loss = torch.tensor([S_r], dtype=torch.float64)
            dist.all_reduce(loss)
            losses.append(loss.item() / N)
    if rank == 0:
        print(json.dumps({"tokens": tokens_timed, "seconds": seconds, "losses": losses}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
