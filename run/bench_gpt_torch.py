"""The PyTorch peer of run/bench_gpt.sh: ddptok's GPT training run (model.kind: gpt) as plain
PyTorch DDP (gloo, CPU, FP32, one thread per rank) with nanoGPT's GPT class (written below:
nanoGPT's model.py with GPT-2's tanh GELU, which HF's GPT2LMHeadModel calls gelu_new),
doing ddptok's work:

  - the corpus and the window plan from ddptok's outputs/data/{corpus,plan}.h5 (the bands
    sampler's ids; under train.sampler: global, each rank's share of every window as `ddptok
    plan --steps 1..U` prints it, cut into A microbatches of ceil(n_r / A) as ddptok cuts it),
    the initial parameters from outputs/reference.h5's /init (llm.c's layout, which is
    nn.Linear's: weights (out, in)), the config from the same YAML;
  - per window and rank: A microbatches of the B sequences of the plan; each sequence runs from
    its position 0 to its last label, its input at t the token before (the begin id 0 at t = 0);
    the microbatch is the sequences padded at the end to the longest (causal attention: the
    padding changes no earlier position), the logits computed for the supervised positions only;
  - the rank loss W*S_r/N with the integer N all-reduced (int64) before the first backward,
    no_sync() on all but the last microbatch, DDP's gradient average, torch.optim.AdamW (or SGD)
    as the config says, on every parameter;
  - dropout p at nanoGPT's sites (the embeddings, the attention weights, both residual branches)
    with torch's own masks (ddptok's Philox masks differ: the loss check runs with dropout 0).

Attention: F.scaled_dot_product_attention(is_causal=True) where torch has it (2.x), else
nanoGPT's masked softmax (torch 1.13); the JSON says which.

    python3 run/bench_gpt_torch.py CONFIG OUTPUTS [--dropout P] [--updates U]
    python3 run/bench_gpt_torch.py CONFIG OUTPUTS --llmc DIR --llmc-B B --llmc-T T

starts train.world_size rank processes itself (env rendezvous on 127.0.0.1); rank 0 prints
one JSON line: tokens and seconds over windows 2..U, the seconds split (count all-reduce,
forward, backward — which holds DDP's gradient all-reduce, overlapped with it in buckets —,
optimizer), the global loss of windows 1 and 2, and each rank's peak RSS (KiB).

--llmc DIR writes llm.c's files in llm.c's formats from the same outputs, in one process:
DIR/model.bin (train_gpt2.c's checkpoint, header version 3: the same θ0, wte padded with zero
rows to llm.c's padded vocabulary, a multiple of 128) and DIR/train.bin (its token format,
version 1, uint16: the train split's sequences in corpus order, each after the begin id 0,
one contiguous stream as llm.c trains it), and prints the mean loss of the first B x T chunk
under this model (dropout 0, float32): llm.c's step-1 loss must agree with it."""
import argparse
import json
import math
import os
import re
import resource
import struct
import subprocess
import sys
import time

import h5py
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
import yaml

from bench_torch import launch  # W copies of this command as ranks (run/bench_torch.py, beside it)

PARAMS = ["wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb", "ln2w", "ln2b", "fcw", "fcb", "fcprojw",
          "fcprojb", "lnfw", "lnfb"]


def load_config(path):
    with open(path) as f:
        c = yaml.safe_load(f)
    d, m, t = c["data"], c["model"], c["train"]
    if m.get("kind") != "gpt":
        raise SystemExit(f"bench_gpt_torch: {path} is not model.kind: gpt")
    if t.get("loss_unit", "token") != "token" or t.get("normalization", "global-token") != "global-token":
        raise SystemExit("bench_gpt_torch: only the token unit with global-token normalization is implemented")
    if t.get("sampler", "bands") not in ("bands", "global"):
        raise SystemExit(f"bench_gpt_torch: train.sampler {t['sampler']}: only bands and global are implemented")
    o = t["optimizer"]
    return dict(V=d["vocab_size"], Lmax=d["max_length"], P=d.get("unsupervised_prefix", 0), ignore=d.get("ignore_token", -1),
                max_labels=d.get("max_labels", 0), NL=m["n_layer"], NH=m["n_head"], C=m["n_embd"], p=float(m.get("dropout", 0.1)),
                W=t["world_size"], A=t["accumulation"], B=t["batch_size_per_rank"], U=t["updates"],
                sampler=t.get("sampler", "bands"),
                optimizer=o.get("name", "sgd"), lr=float(o["lr"]), mu=float(o.get("momentum", 0.9)),
                wd=float(o.get("weight_decay", 0.0)), betas=tuple(float(b) for b in o.get("betas", (0.9, 0.999))),
                eps=float(o.get("eps", 1e-8)))


# --- nanoGPT's GPT (github.com/karpathy/nanoGPT, model.py), GPT-2's tanh GELU ------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, C, NH, Lmax, p):
        super().__init__()
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.attn_dropout, self.resid_dropout = nn.Dropout(p), nn.Dropout(p)
        self.n_head, self.n_embd, self.dropout = NH, C, p
        self.flash = hasattr(F, "scaled_dot_product_attention")
        if not self.flash:
            self.register_buffer("bias", torch.tril(torch.ones(Lmax, Lmax)).view(1, 1, Lmax, Lmax))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, C, p):
        super().__init__()
        self.c_fc, self.c_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.gelu, self.dropout = nn.GELU(approximate="tanh"), nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, C, NH, Lmax, p):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(C, eps=1e-5), nn.LayerNorm(C, eps=1e-5)
        self.attn, self.mlp = CausalSelfAttention(C, NH, Lmax, p), MLP(C, p)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg, init):
        super().__init__()
        V, C, NL, NH, Lmax, p = cfg["V"], cfg["C"], cfg["NL"], cfg["NH"], cfg["Lmax"], cfg["p"]
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(V, C), wpe=nn.Embedding(Lmax, C), drop=nn.Dropout(p),
                                              h=nn.ModuleList([Block(C, NH, Lmax, p) for _ in range(NL)]),
                                              ln_f=nn.LayerNorm(C, eps=1e-5)))
        self.lm_head = nn.Linear(C, V, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied
        t = self.transformer
        with torch.no_grad():  # ddptok's θ0: llm.c's tensors, stacked over the blocks
            f = lambda name: torch.from_numpy(np.ascontiguousarray(init[name], dtype=np.float32))
            t.wte.weight.copy_(f("wte")), t.wpe.weight.copy_(f("wpe"))
            t.ln_f.weight.copy_(f("lnfw")), t.ln_f.bias.copy_(f("lnfb"))
            for l, blk in enumerate(t.h):
                g = lambda name: f(name)[l]
                blk.ln_1.weight.copy_(g("ln1w")), blk.ln_1.bias.copy_(g("ln1b"))
                blk.attn.c_attn.weight.copy_(g("qkvw")), blk.attn.c_attn.bias.copy_(g("qkvb"))
                blk.attn.c_proj.weight.copy_(g("attprojw")), blk.attn.c_proj.bias.copy_(g("attprojb"))
                blk.ln_2.weight.copy_(g("ln2w")), blk.ln_2.bias.copy_(g("ln2b"))
                blk.mlp.c_fc.weight.copy_(g("fcw")), blk.mlp.c_fc.bias.copy_(g("fcb"))
                blk.mlp.c_proj.weight.copy_(g("fcprojw")), blk.mlp.c_proj.bias.copy_(g("fcprojb"))

    def forward(self, idx, sup, tgt):
        """Σ of the cross-entropies at the supervised positions sup (a flat index into idx's (B, T))."""
        B, T = idx.size()
        t = self.transformer
        x = t.drop(t.wte(idx) + t.wpe(torch.arange(T, dtype=torch.long)))
        for blk in t.h:
            x = blk(x)
        x = t.ln_f(x).view(B * T, -1)
        logits = self.lm_head(x if sup is None else x.index_select(0, sup))
        return F.cross_entropy(logits, tgt, reduction="sum")


# --- ddptok's microbatches ----------------------------------------------------------------------

def microbatch(cfg, tokens, offsets, ids):
    """(idx (B', Lm), sup, tgt): the slots' sequences up to their last label, padded at the end."""
    runs, sups, tgts = [], [], []
    for i in ids:
        if i < 0:
            continue
        x = tokens[offsets[i]:offsets[i + 1]].astype(np.int64)
        t = np.arange(cfg["P"], len(x))
        t = t[x[t] != cfg["ignore"]]
        if cfg["max_labels"]:
            t = t[:cfg["max_labels"]]
        if len(t) == 0:
            continue
        n = t[-1] + 1
        runs.append(np.concatenate([[0], x[:n - 1]]))
        sups.append(t), tgts.append(x[t])
    if not runs:
        return None
    Lm = max(len(r) for r in runs)
    idx = np.zeros((len(runs), Lm), np.int64)
    for b, r in enumerate(runs):
        idx[b, :len(r)] = r
    sup = np.concatenate([b * Lm + s for b, s in enumerate(sups)])
    all_rows = len(sup) == idx.size  # every position supervised: no gather
    return torch.from_numpy(idx), None if all_rows else torch.from_numpy(sup), torch.from_numpy(np.concatenate(tgts))


def global_windows(config, W, A, U, rank):
    """Under train.sampler: global: rank's ids of windows 1..U as `ddptok plan` prints them (the
    partition's share, in window order), each cut into A microbatches of ceil(n_r / A) slots (the
    last ones short or empty), as the trainer cuts them (docs/sampling.md "Microbatches")."""
    ddptok = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ddptok")
    p = subprocess.run([ddptok, "plan", "--config", config, "--steps", f"1..{U}", "--world-size", str(W)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        raise SystemExit(f"bench_gpt_torch: ddptok plan exited {p.returncode}: {p.stdout[-500:]}")
    shares = [[int(i) for i in m.group(1).split()] for m in re.finditer(rf"^  rank {rank}:(.*)$", p.stdout, re.M)]
    if len(shares) != U:
        raise SystemExit(f"bench_gpt_torch: ddptok plan printed {len(shares)} windows of rank {rank}, expected {U}")
    out = []
    for ids in shares:
        Bw = -(-len(ids) // A)
        out.append([ids[m * Bw:(m + 1) * Bw] for m in range(A)])
    return out


def write_llmc(cfg, outputs, out_dir, B, T):
    """llm.c's checkpoint and token file of these outputs; prints the first chunk's loss."""
    with h5py.File(f"{outputs}/reference.h5") as f:
        init = {p: f[f"init/{p}"][()].astype(np.float32) for p in PARAMS}
    with h5py.File(f"{outputs}/data/corpus.h5") as f:
        tokens, offsets, split = f["tokens"][()], f["offsets"][()], f["split"][()]
    V, C, NL, NH, Lmax = cfg["V"], cfg["C"], cfg["NL"], cfg["NH"], cfg["Lmax"]
    if V > 65536:
        raise SystemExit("bench_gpt_torch: llm.c's token files are uint16: data.vocab_size must be at most 65536")
    Vp = (V + 127) // 128 * 128
    os.makedirs(out_dir, exist_ok=True)
    with open(f"{out_dir}/model.bin", "wb") as f:
        f.write(struct.pack("<256i", *([20240326, 3, Lmax, V, NL, NH, C, Vp] + [0] * 248)))
        for p in PARAMS:
            x = init[p]
            if p == "wte":
                x = np.concatenate([x, np.zeros((Vp - V, C), np.float32)])
            f.write(np.ascontiguousarray(x, dtype="<f4").tobytes())
    train = np.flatnonzero(split == 0)
    stream = np.concatenate([np.concatenate([[0], tokens[offsets[i]:offsets[i + 1]]]) for i in train]).astype(np.uint16)
    need = B * T + 1
    if len(stream) < need * 2:
        raise SystemExit(f"bench_gpt_torch: the train split has {len(stream)} tokens, llm.c's B x T = {B} x {T} needs more")
    with open(f"{out_dir}/train.bin", "wb") as f:
        f.write(struct.pack("<256i", *([20240520, 1, len(stream)] + [0] * 253)))
        f.write(stream.astype("<u2").tobytes())
    torch.set_num_threads(1)
    model = GPT(dict(cfg, p=0.0), init).eval()
    chunk = torch.from_numpy(stream[:need].astype(np.int64))
    with torch.no_grad():
        loss = model(chunk[:-1].view(B, T), None, chunk[1:]).item() / (B * T)
    print(json.dumps({"loss_first_chunk": loss, "Vp": Vp, "tokens": int(len(stream)), "chunks": int((len(stream) - 1) // (B * T))}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("config")
    ap.add_argument("outputs")
    ap.add_argument("--dropout", type=float, default=None, help="override model.dropout")
    ap.add_argument("--updates", type=int, default=None, help="override train.updates")
    ap.add_argument("--llmc", default=None, help="write llm.c's files into this directory (one process)")
    ap.add_argument("--llmc-B", type=int, default=4)
    ap.add_argument("--llmc-T", type=int, default=64)
    a = ap.parse_args()
    cfg = load_config(a.config)
    if a.llmc:
        return write_llmc(cfg, a.outputs, a.llmc, a.llmc_B, a.llmc_T)
    if "RANK" not in os.environ:
        sys.exit(launch(cfg["W"]))
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, W = dist.get_rank(), dist.get_world_size()
    if a.dropout is not None:
        cfg["p"] = a.dropout
    U = a.updates or cfg["U"]
    if W != cfg["W"]:
        raise SystemExit(f"bench_gpt_torch: {W} ranks started, the config says train.world_size {cfg['W']}")
    with h5py.File(f"{a.outputs}/data/corpus.h5") as f:
        tokens, offsets = f["tokens"][()], f["offsets"][()]
    A = cfg["A"]
    if cfg["sampler"] == "global":
        plan = global_windows(a.config, W, A, U, rank)
    else:
        with h5py.File(f"{a.outputs}/data/plan.h5") as f:
            plan = f["ids"][()]
    with h5py.File(f"{a.outputs}/reference.h5") as f:
        init = {p: f[f"init/{p}"][()] for p in PARAMS}
    windows = [[microbatch(cfg, tokens, offsets, plan[u][rank][m] if cfg["sampler"] == "bands" else plan[u][m])
                for m in range(A)] for u in range(U)]
    net = GPT(cfg, init)
    model = nn.parallel.DistributedDataParallel(net)
    if cfg["optimizer"] == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], betas=cfg["betas"], eps=cfg["eps"], weight_decay=cfg["wd"])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=cfg["mu"], weight_decay=cfg["wd"])
    losses, tokens_timed, seconds = [], 0, 0.0
    split = dict(count_allreduce=0.0, forward=0.0, backward=0.0, optimizer=0.0)
    for u in range(U):
        t0 = time.perf_counter()
        micro = [mb for mb in windows[u] if mb is not None]
        count = torch.tensor([sum(len(tgt) for _, _, tgt in micro)], dtype=torch.int64)
        dist.all_reduce(count)  # N: integer, before the first backward
        N = int(count.item())
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        S_r, fwd, bwd = 0.0, 0.0, 0.0
        if not micro:
            raise SystemExit(f"bench_gpt_torch: rank {rank} has no labelled sequence in window {u + 1} (not implemented)")
        for m, (idx, sup, tgt) in enumerate(micro):
            last = m == len(micro) - 1
            ta = time.perf_counter()
            if last:
                S = model(idx, sup, tgt)
                tb = time.perf_counter()
                (S * (W / N)).backward()
            else:
                with model.no_sync():
                    S = model(idx, sup, tgt)
                    tb = time.perf_counter()
                    (S * (W / N)).backward()
            tc = time.perf_counter()
            S_r += S.item()
            fwd, bwd = fwd + tb - ta, bwd + tc - tb
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if u > 0:
            tokens_timed, seconds = tokens_timed + N, seconds + t3 - t0
            split["count_allreduce"] += t1 - t0
            split["forward"] += fwd
            split["backward"] += bwd
            split["optimizer"] += t3 - t2
        if u < 2:  # the loss check's windows: the global loss, outside the timed window
            loss = torch.tensor([S_r], dtype=torch.float64)
            dist.all_reduce(loss)
            losses.append(loss.item() / N)
    rss = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss], dtype=torch.int64)
    every = [torch.zeros_like(rss) for _ in range(W)]
    dist.all_gather(every, rss)
    if rank == 0:
        print(json.dumps({"tokens": tokens_timed, "seconds": seconds, "split": split, "losses": losses,
                          "rss_kib": [int(x.item()) for x in every], "torch": torch.__version__,
                          "attention": "sdpa" if net.transformer.h[0].attn.flash else "masked softmax (nanoGPT's fallback)",
                          "threads": torch.get_num_threads()}))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
