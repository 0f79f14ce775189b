"""The body of run/bench_gpt.sh (read its header): runs every contender of every shape in
interleaved rounds, checks that they do the same work, profiles ddptok's step and prints the
tables. Started by bench_gpt.sh, which builds, finds the peers and sets the environment
(ROOT, WORK, REPEATS, SHAPES, SCALE, PROFILE, PERF_OK, TORCH_OLD/NEW, SKIP_*, LLMC_*)."""
import json
import math
import os
import re
import statistics as st
import subprocess
import sys
import threading
import time

import yaml

ROOT, R, SCALE = os.environ["ROOT"], int(os.environ["REPEATS"]), float(os.environ["SCALE"])
DDPTOK, KERN = f"{ROOT}/ddptok", f"{ROOT}/build/bench_kernels"
GNU_TIME = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
med = lambda xs: st.median(xs) if xs else float("nan")

# name -> (title, overrides of configs/gpt-tiny.yaml, updates)
SHAPES = {
    "tiny": ("the tutorial's GPT: configs/gpt-tiny.yaml (C 64, 4 heads, 2 blocks, lengths 16-128, V 128, dropout 0.1; the "
             "global sampler, partition balanced)", [], 40),
    # The layout gpt-tiny.yaml shipped before: each rank its own length band, rank 1 the long ones.
    "tiny-bands": ("configs/gpt-tiny.yaml on the bands sampler (rank 0 lengths 16-64, rank 1 65-128)",
                   ["train.sampler=bands", "train.rank_bands=[[16, 64], [65, 128]]"], 40),
    "gemm": ("GEMM-heavy: C 256, 4 heads, 4 blocks, lengths 255-256 (context 256), V 1024, B 4, A 2, dropout 0",
             ["data.vocab_size=1024", "data.min_length=255", "data.max_length=256", "model.n_embd=256", "model.n_head=4",
              "model.n_layer=4", "model.dropout=0", "train.rank_bands=auto", "train.batch_size_per_rank=4"], 10),
    "gpt2s": ("GPT-2 small's width: C 768, 12 heads, 4 of its 12 blocks, lengths 511-512 (context 512), V 50304, B 1, A 1, "
              "dropout 0", ["data.vocab_size=50304", "data.min_length=511", "data.max_length=512", "model.n_embd=768",
                            "model.n_head=12", "model.n_layer=4", "model.dropout=0", "train.rank_bands=auto",
                            "train.batch_size_per_rank=1", "train.accumulation=1", "data.splits.train=256",
                            "data.splits.validation=16", "data.splits.test=16"], 5),
    # The three shapes of issue 40's table, at equal lengths (T-1..T on both ranks: gpt-tiny.yaml's
    # global sampler, balanced), A 1: what the goals (>= 1.5x PyTorch DDP, share of the GEMM
    # ceiling) are set on.
    "small": ("L2 C64 4 heads T128 B8 V257, lengths 127-128, A 1, dropout 0",
              ["data.vocab_size=257", "data.min_length=127", "data.max_length=128", "model.n_embd=64", "model.n_head=4",
               "model.n_layer=2", "model.dropout=0", "train.rank_bands=auto", "train.batch_size_per_rank=8",
               "train.accumulation=1"], 40),
    "mid": ("L4 C256 8 heads T256 B4 V257, lengths 255-256, A 1, dropout 0",
            ["data.vocab_size=257", "data.min_length=255", "data.max_length=256", "model.n_embd=256", "model.n_head=8",
             "model.n_layer=4", "model.dropout=0", "train.rank_bands=auto", "train.batch_size_per_rank=4",
             "train.accumulation=1"], 10),
    "wide": ("L2 C768 12 heads T256 B2 V50257, lengths 255-256, A 1, dropout 0",
             ["data.vocab_size=50257", "data.min_length=255", "data.max_length=256", "model.n_embd=768", "model.n_head=12",
              "model.n_layer=2", "model.dropout=0", "train.rank_bands=auto", "train.batch_size_per_rank=2",
              "train.accumulation=1", "data.splits.train=256", "data.splits.validation=16", "data.splits.test=16"], 5),
}
SHAPE_SETS = {"equal": "small,mid,wide"}  # --shapes equal: issue 40's three


def run(cmd, env=None, timeout=3600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout,
                       env=None if env is None else dict(os.environ, **env))
    if p.returncode:
        raise SystemExit(f"bench_gpt: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-3000:]}")
    return p.stdout


def last_json(out):
    return json.loads([l for l in out.splitlines() if l.startswith("{")][-1])


class Load(threading.Thread):  # the 1-minute load average every 5 s while the bench runs
    def __init__(self):
        super().__init__(daemon=True)
        self.samples, self.stop = [], threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.samples.append(float(open("/proc/loadavg").read().split()[0]))
            self.stop.wait(5)

    def text(self):
        s = self.samples or [float("nan")]
        return f"load average (1 min, every 5 s) mean {st.mean(s):.1f}, min {min(s):.1f}, max {max(s):.1f} on {os.cpu_count()} cores"


def write_config(shape, overrides, updates):
    c = yaml.safe_load(open(f"{ROOT}/configs/gpt-tiny.yaml"))
    # The peers train AdamW at a constant rate, unclipped, decay on every tensor
    # (run/bench_gpt_torch.py, llm.c's driver): pinned here, whatever recipe gpt-tiny.yaml ships.
    pinned = ["train.lr_schedule=constant", "train.grad_clip=0", "train.optimizer.decay=all"]
    for kv in pinned + overrides + [f"train.updates={updates}", "train.interrupt_at=0"]:
        k, v = kv.split("=", 1)
        *path, last = k.split(".")
        d = c
        for q in path:
            d = d[q]
        d[last] = yaml.safe_load(v)
    t = c["train"]
    if t.get("sampler", "bands") == "global":  # a rank's microbatches are the shape's: G = W x A x B
        t["global_batch"] = t["world_size"] * t["accumulation"] * t["batch_size_per_rank"]
    c2 = json.loads(json.dumps(c))
    c1 = json.loads(json.dumps(c))
    # W = 1: one rank with W = 2's per-rank microbatches (A of B sequences; G / W under the global sampler)
    c1["train"]["world_size"], c1["train"]["rank_bands"] = 1, "auto"
    if t.get("sampler", "bands") == "global":
        c1["train"]["global_batch"] = t["accumulation"] * t["batch_size_per_rank"]
    c2["paths"], c1["paths"] = {"outputs": "o2", "artifacts": "a2"}, {"outputs": "o1", "artifacts": "a1"}
    yaml.safe_dump(c2, open(f"{shape}-w2.yaml", "w"))
    yaml.safe_dump(c1, open(f"{shape}-w1.yaml", "w"))
    return c2


def bands(c, W):
    """Each rank's [lo, hi] under the config (rank_bands or auto; [min, max] for every rank under
    the global sampler's balanced or round-robin partition)."""
    lo, hi = c["data"]["min_length"], c["data"]["max_length"]
    if c["train"].get("sampler", "bands") == "global" and c["train"].get("partition", "bands") != "bands":
        return [(lo, hi)] * W
    given = c["train"].get("rank_bands", [[16, 64], [65, 128]])  # ddptok's default
    if given != "auto" and W == c["train"]["world_size"]:
        return [tuple(x) for x in given]
    n = hi - lo + 1
    return [(lo + r * n // W, lo + (r + 1) * n // W - 1) for r in range(W)]


# --- the contenders -------------------------------------------------------------------------------

class TrainingRss(threading.Thread):
    """Each rank's resident set, sampled every 20 ms while the run's JSONL has fewer than U lines:
    the training's peak, without the final checkpoint that --continuous writes (GNU time's
    peak has it). The ranks: the processes running DDPTOK train with this config, each named
    by its OMPI_COMM_WORLD_RANK (rank 0 first: rank 0 evaluates a split of one chunk)."""
    def __init__(self, cfgfile, jsonl, U):
        super().__init__(daemon=True)
        self.cfgfile, self.jsonl, self.U, self.peak, self.stop = cfgfile, jsonl, U, {}, threading.Event()

    def lines(self):
        try:
            with open(self.jsonl) as f:
                return sum(1 for _ in f)
        except OSError:
            return 0

    def run(self):
        while not self.stop.is_set() and self.lines() < self.U:
            for pid in filter(str.isdigit, os.listdir("/proc")):
                try:
                    argv = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace").split("\0")
                    if argv[:2] == [DDPTOK, "train"] and self.cfgfile in argv:
                        env = open(f"/proc/{pid}/environ").read().split("\0")
                        rank = next((int(e.split("=", 1)[1]) for e in env if e.startswith("OMPI_COMM_WORLD_RANK=")), 0)
                        kb = int(re.search(r"VmRSS:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1))
                        self.peak[rank] = max(self.peak.get(rank, 0), kb)
                except (OSError, AttributeError):
                    pass
            self.stop.wait(0.02)


def ddptok_run(cfgfile, np_, outdir, extra=()):
    subprocess.run(["rm", "-rf", outdir.replace("o", "a", 1), f"{outdir}/train"])
    wrap = [GNU_TIME, "-f", "rank_rss_kb %M"] if GNU_TIME else []
    U = yaml.safe_load(open(cfgfile))["train"]["updates"]
    poll = TrainingRss(cfgfile, f"{outdir}/train/continuous.jsonl", U)
    poll.start()
    try:
        out = run(["mpirun", "-np", str(np_)] + wrap + [DDPTOK, "train", "--config", cfgfile, "--continuous"] + list(extra))
    finally:
        poll.stop.set()
        poll.join()
    rows = [json.loads(l) for l in open(f"{outdir}/train/continuous.jsonl")]
    timed = rows[1:]
    sec = sum(r["seconds"] for r in timed)
    split = {k: sum(r["window_split"][k] for r in timed) / len(timed)
             for k in ("draw", "count_allreduce", "compute", "grad_allreduce", "optimizer")}
    rss = sorted(int(x) for x in re.findall(r"rank_rss_kb (\d+)", out))
    return dict(tps=sum(r["tokens"] for r in timed) / sec, window_ms=1e3 * sec / len(timed), split=split,
                rss_kib=[poll.peak[r] for r in sorted(poll.peak)] or rss, rss_with_checkpoint_kib=rss,
                rank_tokens=[sum(r["rank_tokens"][q] for r in timed) / len(timed) for q in range(np_)], n=len(timed))


def torch_run(py, cfgfile, outdir, extra=()):
    d = last_json(run([py, f"{ROOT}/run/bench_gpt_torch.py", cfgfile, outdir] + list(extra)))
    n = d.get("windows", None)
    return d


def llmc_run(files, B, T, steps, threads, opt):
    wrap = [GNU_TIME, "-f", "rank_rss_kb %M"] if GNU_TIME else []
    out = run(wrap + [os.environ["LLMC_BIN"], f"{files}/model.bin", f"{files}/train.bin", str(B), str(T), str(steps),
                      str(opt["lr"]), str(opt["betas"][0]), str(opt["betas"][1]), str(opt.get("eps", 1e-8)),
                      str(opt.get("weight_decay", 0.0))], env={"OMP_NUM_THREADS": str(threads)})
    d = last_json(out)
    rss = re.findall(r"rank_rss_kb (\d+)", out)
    d["rss_kib"] = [int(rss[-1])] if rss else [d["maxrss_kib"]]
    return d


# --- the profile of one rank's step ---------------------------------------------------------------

def gemm_label(func, s, dims):
    C, hs, V, n, T = dims["C"], dims["hs"], dims["V"], dims["n"], dims["T"]
    layer = {(3 * C, C): "qkv", (C, C): "attproj", (4 * C, C): "fc", (C, 4 * C): "fcproj", (V, C): "lm head (tied wte)"}
    if func == "matmul_forward":
        return "linear fwd: " + layer.get((s["N"], s["K"]), f"{s['N']}x{s['K']}")
    if func == "matmul_backward":
        if s["ta"]:
            return "linear bwd dW: " + layer.get((s["M"], s["N"]), f"{s['M']}x{s['N']}")
        return "linear bwd dX: " + layer.get((s["K"], s["N"]), f"{s['K']}x{s['N']}")
    if func == "gpt_forward_cpu":
        return "lm head fwd (logits)"
    if func == "gpt_backward_cpu":
        return "lm head bwd dW (wte)" if s["ta"] else "lm head bwd dX"
    if func == "attention_forward":
        return "attention fwd: " + ("q·kᵀ" if s["tb"] else "P·v")
    if func == "attention_backward":
        if s["tb"]:
            return "attention bwd: dP = dy·vᵀ"
        if not s["ta"]:
            return "attention bwd: dq = dS·k"
        return "attention bwd: " + ("dv = Pᵀ·dy" if s["line"] == dims["first_tn_line"] else "dk = dSᵀ·q")
    return f"{func} (line {s['line']})"


def addr2line(exe, addrs):
    """{address: [(function, file, line), ...] innermost first}."""
    if not addrs:
        return {}
    out = subprocess.run(["addr2line", "-a", "-f", "-i", "-e", exe] + [hex(a) for a in addrs], stdout=subprocess.PIPE,
                         text=True).stdout.splitlines()
    res, cur = {}, None
    i = 0
    while i < len(out):
        if out[i].startswith("0x"):
            cur = int(out[i], 16)
            res[cur] = []
            i += 1
            continue
        func, loc = out[i], out[i + 1] if i + 1 < len(out) else "??:0"
        f, _, ln = loc.rpartition(":")
        ln = ln.split()[0] if ln else "0"
        res[cur].append((func, os.path.basename(f), int(ln) if ln.isdigit() else 0))
        i += 2
    return res


GPT_FUNCS = {"layernorm_forward": "LayerNorm fwd", "layernorm_backward": "LayerNorm bwd", "gelu_forward": "GELU fwd",
             "gelu_backward": "GELU bwd", "attention_forward": "attention fwd: causal softmax, masks (not GEMM)",
             "attention_backward": "attention bwd: softmax backward, masks (not GEMM)",
             "crossentropy_forward": "output log-softmax (loss)", "bias_backward": "bias gradient sums",
             "matmul_forward": "linear fwd: bias broadcast", "matmul_backward": "linear bwd: bias sums",
             "dropout_backward": "residual/embedding dropout: apply", "dropout_forward": "residual/embedding dropout: apply",
             "encoder_forward": "fwd: embeddings", "encoder_backward": "bwd: embeddings", "residual_forward": "fwd: residual adds",
             "rows_gather": "fwd: copies", "rows_scatter": "bwd: scatter, memset",
             "gpt_forward_cpu": "fwd: embeddings, residual adds, copies",
             "gpt_backward_cpu": "bwd: residual, scatter, embeddings, memset", "gpt_forward_backward": "fwd/bwd glue"}


def classify(dso, sym, chain):
    if "openblas" in dso:
        return "sgemm (OpenBLAS: kernels and packing)"
    if dso.startswith("["):
        return "kernel (page faults, scheduling)"
    if "libc" in dso:
        return "libc: " + ("memset/memcpy" if "mem" in sym else sym)
    if not chain:
        return f"other: {sym or dso}"
    funcs = [re.sub(r"\.(part|isra|constprop|cold).*", "", f) for f, _, _ in chain]
    if any(f in ("sum_exp", "scaled_softmax") or f.startswith(("sum_exp", "scaled_softmax")) for f in funcs):
        return "output log-softmax (loss)"
    if any(f in ("gpt_dropout_scales", "rng_block", "dropout_counter") or f.startswith("philox") for f in funcs):
        return "dropout masks (Philox): " + ("attention" if any(f.startswith("attention") for f in funcs) else "residual/embedding")
    for f in funcs:  # innermost known function of the GPT backend
        if f in GPT_FUNCS:
            return GPT_FUNCS[f]
    if any("optimizer" in f or "adamw" in f for f in funcs):
        return "optimizer"
    return f"other: {funcs[-1]}"


def profile(shape, cfgfile, lens, fb_json):
    """perf record of forward_backward in a loop; returns [(category, share)] and the hot lines."""
    exe = KERN
    data = f"{shape}.perf"
    loop = 6.0
    p = subprocess.run(["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-F", "1999", "-o", data, "--", exe, "step", cfgfile,
                        ",".join(map(str, lens)), "1", str(loop)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        return None, None, f"perf record failed: {p.stdout[-300:]}"
    info = last_json(p.stdout)
    t0, t1 = info["loop_start"], info["loop_start"] + loop
    script = subprocess.run(["perf", "script", "-i", data, "-F", "time,ip,sym,symoff,dso"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True).stdout
    nm = {}
    for line in subprocess.run(["nm", "--defined-only", exe], stdout=subprocess.PIPE, text=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3:
            nm.setdefault(f[2], int(f[0], 16))
    samples = []
    for line in script.splitlines():
        m = re.match(r"\s*([0-9.]+):\s+([0-9a-f]+)\s+(\S*?)(?:\+0x([0-9a-f]+))?\s+\((.*)\)\s*$", line)
        if not m:
            continue
        t, sym, off, dso = float(m.group(1)), m.group(3), m.group(4), m.group(5)
        if t0 <= t <= t1:
            addr = nm[sym] + int(off, 16) if dso.endswith("bench_kernels") and sym in nm and off else None
            samples.append((dso, sym, addr))
    if not samples:
        return None, None, "perf recorded no sample in the loop"
    chains = addr2line(exe, sorted({a for _, _, a in samples if a is not None}))
    cats, lines, passes = {}, {}, {"fwd": 0, "bwd": 0, "gemm": 0, "other": 0}
    for dso, sym, addr in samples:
        ch = chains.get(addr, []) if addr is not None else []
        c = classify(dso, sym, ch)
        cats[c] = cats.get(c, 0) + 1
        names = [f for f, _, _ in ch]
        which = "gemm" if "openblas" in dso else "bwd" if any("backward" in f for f in names) else \
            "fwd" if any(f.startswith(("gpt_forward_cpu", "layernorm_forward", "gelu_forward", "attention_forward", "matmul_forward",
                                        "dropout_forward", "encoder_forward", "residual_forward", "rows_gather",
                                        "crossentropy_forward", "sum_exp")) for f in names) else "other"
        passes[which] += 1
        if ch:
            inner = next(((f, fl, ln) for f, fl, ln in ch if fl in ("gpt_cpu.c", "layers.c")), ch[0])
            key = f"{inner[1]}:{inner[2]} ({inner[0]})"
            lines[key] = lines.get(key, 0) + 1
    n = len(samples)
    fb_json["passes"] = {k: v / n for k, v in passes.items()}
    return sorted(((c, k / n) for c, k in cats.items()), key=lambda x: -x[1]), sorted(((l, k / n) for l, k in lines.items()),
                                                                                     key=lambda x: -x[1])[:12], None


def step_profile(shape, cfgfile, c, lens):
    d = last_json(run([KERN, "step", cfgfile, ",".join(map(str, lens)), "20"]))
    sites = addr2line(KERN, [int(g["site"], 16) - 1 for g in d["gemm"]])  # a return address: the call is the byte before
    C, NH = c["model"]["n_embd"], c["model"]["n_head"]
    dims = dict(C=C, hs=C // NH, V=c["data"]["vocab_size"], n=d["rows"], T=d["supervised"])
    groups = {}
    for g in d["gemm"]:
        ch = sites.get(int(g["site"], 16) - 1, [])
        # the call site: the innermost frame of the GPT backend (a layer function, or the pass itself)
        g["func"], _, g["line"] = next(((f, fl, ln) for f, fl, ln in ch if fl == "gpt_cpu.c"), ch[0] if ch else ("?", "?", 0))
        g["func"] = re.sub(r"\..*", "", g["func"])
    dims["first_tn_line"] = min([g["line"] for g in d["gemm"] if g["func"] == "attention_backward" and g["ta"]], default=0)
    for g in d["gemm"]:
        lab = gemm_label(g["func"], g, dims)
        x = groups.setdefault(lab, dict(calls=0, flops=0.0, ms=0.0, best_ms=0.0, alone_ms=0.0, shapes=set()))
        x["calls"] += g["calls"]
        x["flops"] += 2.0 * g["M"] * g["N"] * g["K"] * g["calls"]
        x["ms"] += g["ms"]
        x["best_ms"] += g["best_ms"]
        x["alone_ms"] += g["alone_ms"]
        x["shapes"].add(f"{'T' if g['ta'] else 'N'}{'T' if g['tb'] else 'N'} {g['M']}x{g['N']}x{g['K']}")
    d["groups"] = groups
    if os.environ["PERF_OK"] == "1":
        d["perf"], d["hot_lines"], d["perf_error"] = profile(shape, cfgfile, lens, d)
    else:
        d["perf"], d["hot_lines"], d["perf_error"] = None, None, "perf not available (Debian: linux-perf), or not permitted"
    return d


def one_run(k, res, shape, U, t, peers, Bl1, Bl2, Lmax):
    """One contender's run of this round, appended to res[k]."""
    if k == "d2":
        res[k].append(ddptok_run(f"{shape}-w2.yaml", 2, "o2"))
    elif k == "d1":
        res[k].append(ddptok_run(f"{shape}-w1.yaml", 1, "o1"))
    elif k.startswith("t"):
        d = torch_run(peers[int(k[1:])][1], f"{shape}-w2.yaml", "o2")
        n = U - 1
        d.update(tps=d["tokens"] / d["seconds"], window_ms=1e3 * d["seconds"] / n,
                 split={q: v / n for q, v in d["split"].items()})
        res[k].append(d)
    else:
        th = 2 if k == "l2" else 1
        d = llmc_run("llmc", Bl2 if th == 2 else Bl1, Lmax, U, th, t["optimizer"])
        n = U - 1
        d.update(tps=d["tokens"] / d["seconds"], window_ms=1e3 * d["seconds"] / n,
                 split={q: v / n for q, v in d["split"].items()})
        res[k].append(d)


# --- the bench ----------------------------------------------------------------------------------

def main():
    load = Load()
    load.start()
    kern = json.loads(run([KERN, "sgemm", "8", "8", "8", "8", "1"]))["kernel"]
    print(f"ddptok bench_gpt: {os.cpu_count()} cores, {R} interleaved rounds per shape; host {os.uname().nodename}; "
          f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; load average now {open('/proc/loadavg').read().split()[0]}")
    print(f"  ddptok: {run([DDPTOK, '--version']).splitlines()[0]}")
    print(f"  BLAS kernel: {kern} (OPENBLAS_CORETYPE: {os.environ.get('OPENBLAS_CORETYPE', 'not set')})")
    peers = []
    for var, skip, label in (("TORCH_OLD", "SKIP_OLD", "Debian"), ("TORCH_NEW", "SKIP_NEW", "current")):
        py = os.environ[var]
        if py:
            v = run([py, "-c", "import torch; print(torch.__version__)"]).strip()
            peers.append((f"PyTorch {v} DDP", py))
            print(f"  peer: PyTorch {v} ({label}, {py}), gloo, 1 thread per rank, run/bench_gpt_torch.py (nanoGPT's GPT)")
        else:
            print(f"  peer: {label} PyTorch skipped: {os.environ[skip]}")
    llmc = bool(os.environ["LLMC_BIN"])
    if llmc:
        print(f"  peer: llm.c train_gpt2.c at commit {os.environ['LLMC_COMMIT']}, built with its Makefile's line "
              f"`{os.environ['LLMC_FLAGS']}` (run/bench_llmc.c in place of train_gpt2.c's main)")
    else:
        print(f"  peer: llm.c skipped: {os.environ['SKIP_LLMC']}")
    results = {}
    shapes = ",".join(SHAPE_SETS.get(x, x) for x in os.environ["SHAPES"].split(","))
    for shape in shapes.split(","):
        if shape not in SHAPES:
            raise SystemExit(f"bench_gpt: --shapes: unknown shape {shape} ({', '.join(SHAPES)}, or equal: {SHAPE_SETS['equal']})")
        title, over, U = SHAPES[shape]
        U = max(3, int(round(U * SCALE)))
        # Each shape in its own directory: a directory holds one config's results (o1/, o2/, a1/, a2/).
        os.makedirs(os.path.join(os.environ["WORK"], shape), exist_ok=True)
        os.chdir(os.path.join(os.environ["WORK"], shape))
        c = write_config(shape, over, U)
        t = c["train"]
        A, B, Wn = t["accumulation"], t["batch_size_per_rank"], t["world_size"]
        Lmax = c["data"]["max_length"]
        print(f"\n== {shape}: {title}; {U} updates (windows 2..{U} timed)")
        for w, f in ((2, f"{shape}-w2.yaml"), (1, f"{shape}-w1.yaml")):
            run([DDPTOK, "prepare", "--config", f])
            run([DDPTOK, "reference", "--config", f])
        # The checks: the same work (losses at dropout 0), the same θ0 in llm.c's files.
        subprocess.run(["rm", "-rf", "a2", "o2/train"])
        run(["mpirun", "-np", "2", DDPTOK, "train", "--config", f"{shape}-w2.yaml", "--set", "model.dropout=0", "--set",
             "train.interrupt_at=2"])
        mine = [json.loads(l)["loss"] for l in open("o2/train/interrupted.jsonl")]
        for name, py in peers:
            theirs = last_json(run([py, f"{ROOT}/run/bench_gpt_torch.py", f"{shape}-w2.yaml", "o2", "--dropout", "0", "--updates",
                                    "2"]))["losses"]
            ok = len(theirs) == 2 and all(abs(a - b) <= 1e-5 * abs(a) for a, b in zip(mine, theirs))
            print(f"  loss check, {name} (dropout 0): step 1 {mine[0]:.7f} vs {theirs[0]:.7f}, step 2 {mine[1]:.7f} vs {theirs[1]:.7f}: "
                  + ("agree within 1e-5 relative" if ok else "DISAGREE"))
            if not ok:
                raise SystemExit("bench_gpt: the PyTorch peer does not do ddptok's work (loss check failed)")
        Bl2, Bl1 = Wn * A * B, A * B  # llm.c: a step = one window's sequences
        if llmc:
            info = last_json(run([peers[0][1], f"{ROOT}/run/bench_gpt_torch.py", f"{shape}-w2.yaml", "o2", "--llmc", "llmc",
                                  "--llmc-B", str(Bl2), "--llmc-T", str(Lmax)]))
            d = llmc_run("llmc", Bl2, Lmax, 2, 1, t["optimizer"])
            ok = abs(d["losses"][0] - info["loss_first_chunk"]) <= 1e-5 * abs(info["loss_first_chunk"])
            print(f"  llm.c check: its step-1 loss {d['losses'][0]:.7f} vs the torch model's on its first {Bl2} x {Lmax} chunk "
                  f"{info['loss_first_chunk']:.7f}: " + ("agree within 1e-5 relative" if ok else "DISAGREE")
                  + f" (padded vocabulary {info['Vp']}; {info['tokens']} tokens, {info['chunks']} chunks)")
            if not ok:
                raise SystemExit("bench_gpt: llm.c did not read the same θ0 (llm.c check failed)")
        # The rounds.
        order = [("ddptok W=2", "d2"), ("ddptok W=1", "d1")] + [(f"{n}, W=2", f"t{i}") for i, (n, _) in enumerate(peers)]
        if llmc:
            order += [("llm.c, 2 OpenMP threads", "l2"), ("llm.c, 1 thread", "l1")]
        res = {k: [] for _, k in order}
        failed = {}
        for r in range(R):
            for name, k in order:
                if k in failed:
                    continue
                try:
                    one_run(k, res, shape, U, t, peers, Bl1, Bl2, Lmax)
                except SystemExit as e:  # a peer that fails is reported and dropped; ddptok's failure ends the bench
                    if k.startswith("d"):
                        raise
                    failed[k] = str(e).splitlines()[0][:300] + " ... " + str(e).splitlines()[-1][:200]
                    print(f"  {name}: FAILED in round {r + 1}, dropped from this shape: {failed[k]}")
        order = [(n, k) for n, k in order if k not in failed]
        # The profile of one rank's step: the busiest rank's microbatch (quantile midpoints of its band).
        busiest = max(range(2), key=lambda q: res["d2"][-1]["rank_tokens"][q])
        lo, hi = bands(c, 2)[busiest]
        lens = [lo + (2 * i + 1) * (hi - lo + 1) // (2 * B) for i in range(B)]
        prof = step_profile(shape, f"{shape}-w2.yaml", c, lens) if os.environ["PROFILE"] == "1" else None
        results[shape] = dict(title=title, U=U, res=res, order=order, prof=prof, lens=lens, busiest=busiest, cfg=c)
        results[shape]["summary"] = summary(results[shape])
        report(shape, results[shape])
    load.stop.set()
    report_summary(results)
    print(f"\n{load.text()}")
    if os.environ.get("BENCH_GPT_JSON"):
        json.dump({s: dict(v, prof=dict(v["prof"], groups={k: dict(x, shapes=sorted(x["shapes"])) for k, x in v["prof"]["groups"].items()})
                           if v["prof"] else None) for s, v in results.items()}, open(os.environ["BENCH_GPT_JSON"], "w"),
                  indent=1, default=str)


def forward_fraction(prof):
    """The forward's share of forward_backward: perf's samples of the forward's and the backward's
    own code, the sgemm samples split by the timed calls of each pass (samples of neither, libc and
    the kernel, in proportion); without perf, evaluate's forward (no dropout) over forward_backward."""
    p = prof.get("passes")
    if not p:
        return prof["forward_loss_best_ms"] / prof["forward_backward_best_ms"]
    g = prof["groups"]
    gf = sum(x["best_ms"] for k, x in g.items() if " fwd" in k) / max(1e-12, sum(x["best_ms"] for x in g.values()))
    fwd, bwd = p["fwd"] + p["gemm"] * gf, p["bwd"] + p["gemm"] * (1 - gf)
    return fwd / (fwd + bwd)


# Above 100 %: the step's least round and the calls alone were timed under different loads.
OVER_CEILING = "(over 100 %: the step's best round ran quieter than the calls alone; rerun on a quiet machine)"


def gemm_share(prof, A, window_ms):
    """The share of the GEMM-only ceiling: the microbatch's sgemm calls alone (one thread, operands
    hot; bench_kernels' alone_ms, already times the calls per microbatch) over its forward +
    backward (the least round); and A x that over ddptok W=2's window (rank 0's median: the
    optimizer, the all-reduce and the wait for the other rank included)."""
    alone = sum(g["alone_ms"] for g in prof["groups"].values())
    return dict(gemm_alone_ms=alone, forward_backward_ms=prof["forward_backward_best_ms"],
                share=alone / prof["forward_backward_best_ms"], window_ms=window_ms, window_share=A * alone / window_ms)


def summary(x):
    """One row of the closing table: ddptok W=2's tokens/s, the per-round ratios, the ceiling's share."""
    res, order, c = x["res"], x["order"], x["cfg"]
    base = [d["tps"] for d in res["d2"]]
    ratios = {}
    for name, k in order:
        if k != "d2":
            r = [b / d["tps"] for b, d in zip(base, res[k])]
            ratios[name] = dict(median=med(r), min=min(r), max=max(r))
    win = med([d["window_ms"] for d in res["d2"]])
    return dict(tokens_per_s=med(base), ratios=ratios,
                ceiling=gemm_share(x["prof"], c["train"]["accumulation"], win) if x["prof"] else None)


def report_summary(results):
    if not results:
        return
    names = [n for n, _ in next(iter(results.values()))["order"] if n != "ddptok W=2"]
    print(f"\n== summary: ddptok W=2 tokens/s (median of {R} rounds), ddptok W=2 / each contender (median of the "
          f"per-round ratios, min-max), share of the GEMM-only ceiling (the microbatch's sgemm calls alone, one thread, "
          f"operands hot / its forward + backward; in brackets A x that / ddptok W=2's window)")
    wid = [max(20, len(n) + 2) for n in names]
    print(f"   {'shape':<11} {'tokens/s':>9}  " + "  ".join(f"{('/ ' + n):<{w}}" for n, w in zip(names, wid)) + "  GEMM-only ceiling")
    for shape, x in results.items():
        sm = x["summary"]
        cells = []
        for n in names:
            r = sm["ratios"].get(n)
            cells.append(f"{r['median']:5.2f}x ({r['min']:.2f}-{r['max']:.2f})" if r else "-")
        ce = sm["ceiling"]
        share = f"{100 * ce['share']:3.0f} % ({100 * ce['window_share']:.0f} %)" if ce else "- (--no-profile)"
        if ce and ce["share"] > 1:
            share += f" {OVER_CEILING}"
        print(f"   {shape:<11} {sm['tokens_per_s']:9.0f}  " + "  ".join(f"{cell:<{w}}" for cell, w in zip(cells, wid)) + f"  {share}")


def report(shape, x):
    res, order, prof, c = x["res"], x["order"], x["prof"], x["cfg"]
    A = c["train"]["accumulation"]
    fwd_frac = forward_fraction(prof) if prof else None
    print(f"  -- tokens/s over all ranks or threads, {R} rounds; ms per window (rank 0 for ddptok); peak RSS per rank (ddptok: "
          f"while training, sampled every 20 ms, rank 0 first; with the final checkpoint --continuous writes, GNU time, "
          f"in ascending order)")
    base = [d["tps"] for d in res["d2"]]
    for name, k in order:
        v = [d["tps"] for d in res[k]]
        line = f"     {name:<34} {med(v):9.0f} (min {min(v):8.0f}, max {max(v):8.0f})"
        if k != "d2":
            ratio = [b / a for b, a in zip(base, v)]
            line += f"  ddptok W=2/this {med(ratio):5.2f}x ({min(ratio):.2f}-{max(ratio):.2f})"
        print(line)
    print("     ms per window (median of the rounds' means):")
    for name, k in order:
        ds = res[k]
        ms = med([d["window_ms"] for d in ds])
        sp = {q: med([1e3 * d["split"][q] for d in ds]) for q in ds[0]["split"]}
        rss = [med([d["rss_kib"][q] / 1024 for d in ds if len(d["rss_kib"]) > q]) for q in range(max(len(d["rss_kib"]) for d in ds))]
        if k.startswith("d"):
            comp = sp["compute"]
            fb = (f"forward {comp * fwd_frac:.1f} / backward {comp * (1 - fwd_frac):.1f} (compute {comp:.1f}, split as the "
                  f"profile's)" if fwd_frac else f"compute {comp:.1f}")
            parts = f"{fb}, optimizer {sp['optimizer']:.2f}, communication: counts {sp['count_allreduce']:.2f} + gradient " \
                    f"all-reduce (incl. waiting for the other rank) {sp['grad_allreduce']:.1f}, draw {sp['draw']:.2f}"
        elif k.startswith("t"):
            parts = f"forward {sp['forward']:.1f} / backward (incl. DDP's bucketed all-reduce) {sp['backward']:.1f}, optimizer " \
                    f"{sp['optimizer']:.2f}, count all-reduce {sp['count_allreduce']:.2f}"
        else:
            parts = f"forward {sp['forward']:.1f} / backward (zero_grad + backward) {sp['backward']:.1f}, optimizer {sp['optimizer']:.2f}, " \
                    f"data {sp['data']:.2f}"
        ck = ""
        if k.startswith("d") and ds[0].get("rss_with_checkpoint_kib"):
            ck = " (with the final checkpoint " + " / ".join(f"{med([d['rss_with_checkpoint_kib'][q] / 1024 for d in ds if len(d['rss_with_checkpoint_kib']) > q]):.0f}"
                                                          for q in range(max(len(d["rss_with_checkpoint_kib"]) for d in ds))) + ")"
        print(f"     {name:<34} {ms:8.1f} ms: {parts}; peak RSS " + " / ".join(f"{r:.0f}" for r in rss) + f" MiB{ck}")
    if not prof:
        return
    # Memory: the budget against the backend's allocation and touch.
    inst = sum(t["bytes"] for t in prof["budget_instance"])
    act = prof["bytes"]["create"] - prof["bytes"]["theta_grad"]
    work = {t["what"].split(" ")[0]: t["bytes"] for t in prof["budget_workload"]}
    touched = prof["bytes"]["rss_after_step"] - prof["bytes"]["rss_before_create"]
    print(f"  -- memory (one rank, a microbatch of {len(prof['lens'])} sequences {prof['lens']}, the instance of "
          f"{prof['cap']} rows = B x Lmax)")
    print(f"     budget of the training instance (the GPT row's terms at B*Lmax rows): {inst / 2**20:.2f} MiB; allocated by "
          f"create, less θ and the gradient: {act / 2**20:.2f} MiB ({100 * (inst - act) / act:+.1f} %); "
          f"resident after a step (θ, gradient, optimizer states and activations touched): {touched / 2**20:.2f} MiB")
    for t in prof["budget_instance"]:
        print(f"       {t['what']}: {t['bytes'] / 2**20:.2f} MiB")
    acts = sum(t["bytes"] for t in prof["budget_workload"] if t["what"].startswith(("activations", "attention")))
    print(f"     workload budget (--check's): activations and attention {acts / 2**20:.2f} MiB, at max(B,16)*Lmax rows "
          f"(the evaluation batch of 16 sequences when B < 16): {acts / max(inst, 1):.2f}x the training instance's")
    # Where the step's time goes: the least round of each (other jobs only ever slow a round down).
    fb, fb_med = prof["forward_backward_best_ms"], prof["forward_backward_ms"]
    gemm_ms = sum(g["best_ms"] for g in prof["groups"].values())
    alone = sum(g["alone_ms"] for g in prof["groups"].values())
    flops = sum(g["flops"] for g in prof["groups"].values())
    print(f"  -- one rank's step (build/bench_kernels step {shape}-w2.yaml {','.join(map(str, prof['lens']))}: the busiest "
          f"rank's band; the least of {prof['reps']} rounds (median in brackets), {prof['kernel']})")
    print(f"     forward + loss {prof['forward_loss_best_ms']:.2f} ms ({prof['forward_loss_ms']:.2f}; evaluate: no dropout), forward + "
          f"backward {fb:.2f} ms ({fb_med:.2f}), optimizer ({prof['optimizer']}) {prof['optimizer_best_ms']:.2f} ms "
          f"({prof['optimizer_ms']:.2f}); a window of A = {A}: {A * fb + prof['optimizer_best_ms']:.1f} ms")
    ce = x["summary"]["ceiling"]
    print(f"     sgemm: {flops / 1e9:.3f} GFLOP per microbatch, {gemm_ms:.2f} ms where they run ({flops / gemm_ms / 1e6:.1f} GFLOP/s), "
          f"{alone:.2f} ms alone ({flops / alone / 1e6:.1f} GFLOP/s: the ceiling); the step at {flops / fb / 1e6:.1f} GFLOP/s: "
          f"share of the GEMM-only ceiling {100 * ce['share']:.0f} % ({alone:.2f} / {fb:.2f} ms; sgemm {100 * gemm_ms / fb:.0f} % "
          f"of the step's time)" + (f" {OVER_CEILING}" if ce["share"] > 1 else ""))
    print(f"     the training window (ddptok W=2, rank 0's median window {ce['window_ms']:.1f} ms, the optimizer, the load and the wait "
          f"for the busiest rank included): share of the GEMM-only ceiling {100 * ce['window_share']:.0f} % ({A} x {alone:.2f} / "
          f"{ce['window_ms']:.1f} ms)")
    print(f"     {'GEMM call site':<34} {'calls':>6} {'GFLOP':>8} {'ms':>8} {'GFLOP/s':>8} {'alone':>8} {'ceiling':>8}  shapes (M x N x K)")
    for lab, g in sorted(prof["groups"].items(), key=lambda kv: -kv[1]["best_ms"]):
        print(f"     {lab:<34} {g['calls']:>6.0f} {g['flops'] / 1e9:>8.4f} {g['best_ms']:>8.3f} {g['flops'] / g['best_ms'] / 1e6:>8.1f} "
              f"{g['alone_ms']:>8.3f} {g['flops'] / g['alone_ms'] / 1e6:>8.1f}  {', '.join(sorted(g['shapes'])[:4])}"
              + (" ..." if len(g["shapes"]) > 4 else ""))
    if prof["perf"]:
        print(f"     perf record of forward_backward in a loop (-F 1999, samples in the loop only): share of its on-CPU time, "
              f"and that share of {fb:.2f} ms")
        for cat, share in prof["perf"]:
            if share >= 0.003:
                print(f"       {cat:<58} {100 * share:5.1f} %  {share * fb:7.3f} ms")
        print("     hottest source lines:")
        for l, share in prof["hot_lines"]:
            print(f"       {l:<58} {100 * share:5.1f} %")
    else:
        print(f"     (no perf breakdown: {prof['perf_error']})")


if __name__ == "__main__":
    main()
