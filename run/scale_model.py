#!/usr/bin/env python3
"""scale_model.py — the α–β cost model of docs/scaling.md, projected to large W.

    python3 run/scale_model.py [--alpha US] [--ranks "64 256 1024 4096"] [--params P] [--window-ms MS]
    python3 run/scale_model.py --model gpt2-small [--window-ms MS] ...
    python3 run/scale_model.py --model gpt2-small --overlap [--ranks "2 8 64 256 1024 4096"]

--model gpt2-small: GPT-2 small as ddptok's GPT row lays it out (V 50257, context 1024, C 768,
12 blocks, 12 heads: P = 124 439 808, as HF counts GPT-2 small), AdamW's two states, and a window per rank of 8 sequences
of 1024 tokens; --window-ms then defaults to that window's FLOPs (6P + 12·NL·T·C per token)
at 40 % of one H200's 989 TFLOP/s (dense BF16): an assumption, ddptok's GPT has no GPU
backend yet (--window-ms 0 prints the FLOPs-based figure's inputs only).

--overlap (with gpt2-small): what train.overlap's buckets hide of the gradient all-reduce,
on a timeline of the window's last (here: only) microbatch's backward. Assumed: the
backward is 2/3 of the window's FLOPs and its parts take time in proportion to their FLOPs
per token (the output layer 4·V·C, a block 48·C² + 8·T·C); a bucket is reduced as soon as
it is final and the link is free (one bucket at a time, in the backward's order), each at
the full Rabenseifner rate beside the compute (a device with its own communication stream,
or a CPU rank with a progress thread or a spare core: ddptok's CPU ranks progress it only
in MPI calls); each block bucket is 12 messages (one per stacked tensor's slice, α each),
the tail (ln_f) one, the rest (wte and wpe, final only after the encoder's backward, since
wte is tied to the output layer) one after the backward. Exposed = from the backward's end
to the last bucket's end; none exposes the whole all-reduce.

Prints, per W, the model's cost of each collective and file operation of a window, a
start-up and a checkpoint of ddptok (CPU or GPU compute, MPI data plane, train.overlap none),
for a stated fabric and file system. Every constant below is an assumption (docs/scaling.md
names where each comes from); the model's form is ddptok's code: which collectives a window
makes, with how many bytes, and which file operations a checkpoint makes, on which rank.
"""
import argparse
import math

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("--alpha", type=float, default=1.5, help="latency per message / tree level, µs (HDR InfiniBand MPI: 1-2)")
p.add_argument("--gbps", type=float, default=25.0, help="link bandwidth, GB/s (HDR 200 Gb/s: 25)")
p.add_argument("--gamma", type=float, default=0.1, help="reduction arithmetic, ns per byte (a memory-bound sum)")
p.add_argument("--md-rate", type=float, default=5000.0, help="metadata operations per second in one directory of the shared file system")
p.add_argument("--md-lat", type=float, default=0.2, help="one metadata look-up (stat), ms, as one client sees it")
p.add_argument("--fs-gbps", type=float, default=50.0, help="aggregate file-system bandwidth, GB/s")
p.add_argument("--model", choices=["minimum", "gpt2-small"], default="minimum", help="the preset of P, states and window")
p.add_argument("--params", type=int, default=None, help="P (default: the model's: minimum.yaml 201344, gpt2-small 124475904)")
p.add_argument("--states", type=int, default=None, help="optimizer state tensors (SGD momentum 1, AdamW 2; default: the model's)")
p.add_argument("--window-ms", type=float, default=None, help="one rank's window compute, ms (minimum.yaml on one H200: 2.8; "
                                                          "gpt2-small: the FLOPs at 40 %% of an H200)")
p.add_argument("--jsonl-us", type=float, default=0.21, help="rank 0's JSONL rank_tokens list, µs per rank, up to W = 64 "
                                                          "(measured: 857 µs at W = 4096 when the list was written at every W)")
p.add_argument("--jsonl-scan-ns", type=float, default=1.0, help="beyond W = 64 (rank_tokens_range): the scan for the extremes, "
                                                               "ns per rank (the line itself is the same at any W)")
p.add_argument("--ranks", default="64 256 1024 4096")
p.add_argument("--overlap", action="store_true", help="gpt2-small: the exposed all-reduce under train.overlap none, "
                                                      "output-layer and blocks on the backward's timeline")
a = p.parse_args()
if a.model == "gpt2-small":  # ddptok's GPT row: V*C + Lmax*C + NL*(12*C*C + 13*C) + 2*C
    V, T, C, NL, seqs = 50257, 1024, 768, 12, 8
    P = V * C + T * C + NL * (12 * C * C + 13 * C) + 2 * C
    flops = seqs * T * (6 * P + 12 * NL * T * C)
    a.params = a.params or P
    a.states = a.states or 2
    if a.window_ms is None:
        a.window_ms = 1e3 * flops / (0.4 * 989e12)
    print(f"model: GPT-2 small (V {V}, context {T}, C {C}, {NL} blocks): P = {P}; a window of {seqs} x {T} tokens per rank = "
          f"{flops / 1e12:.2f} TFLOP; window {a.window_ms:.1f} ms ({'at 40 % of an H200' if a.window_ms == 1e3 * flops / (0.4 * 989e12) else 'given'})")
a.params = a.params or 201344
a.states = a.states or 1
a.window_ms = 2.8 if a.window_ms is None else a.window_ms

alpha, beta, gamma = a.alpha * 1e-6, 1e-9 / a.gbps, a.gamma * 1e-9
lg = lambda w: math.ceil(math.log2(w)) if w > 1 else 0


def allreduce_tree(w, m):  # recursive doubling: log2 W rounds of the whole vector (small messages)
    return lg(w) * (alpha + m * (beta + gamma))


def allreduce_rab(w, m):  # Rabenseifner: reduce-scatter + all-gather (large messages)
    return 2 * lg(w) * alpha + 2 * (w - 1) / w * m * beta + (w - 1) / w * m * gamma


def allreduce_ring(w, m):  # ring: 2(W-1) steps of m/W bytes
    return 2 * (w - 1) * alpha + 2 * (w - 1) / w * m * beta + (w - 1) / w * m * gamma


def bcast(w, m):
    return lg(w) * (alpha + m * beta)


def gather(w, m):  # binomial tree to rank 0: W·m bytes arrive there
    return lg(w) * alpha + (w - 1) * m * beta


agree = lambda w: lg(w) * (alpha + 4 * (beta + gamma))  # comm_agree: one int, MPI_MAX
barrier = lambda w: lg(w) * alpha

m_grad = 4 * (a.params + 1)
file_bytes = 4 * a.params * (1 + a.states)
rows = []
for w in (int(x) for x in a.ranks.split()):
    m_count = 8 * (2 * w + 3)  # CountExchange: N_r and M_r per rank, 3 totals
    win = {
        "count a-r": min(allreduce_tree(w, m_count), allreduce_rab(w, m_count)),
        "barrier": barrier(w),
        "grad a-r (Rabenseifner)": allreduce_rab(w, m_grad),
        "grad a-r (ring)": allreduce_ring(w, m_grad),
        "rank 0 JSONL": a.jsonl_us * 1e-6 * w if w <= 64 else a.jsonl_scan_ns * 1e-9 * w,  # PROGRESS_RANK_LIST
    }
    start = {
        "run agreement": bcast(w, 130) + agree(w),
        "other agreements (10)": 10 * agree(w) + gather(w, 8),  # startup_end, corpus, trainer, lineage, logs; split_type
        "corpus: W opens": w / a.md_rate + 0.0,
        "rank logs: W creates": w / a.md_rate,
    }
    ckpt = {
        "3 agreements + gather": 3 * agree(w) + gather(w, 65),
        "W files: 3 metadata ops": 3 * w / a.md_rate,
        "W files: data": w * file_bytes / (a.fs_gbps * 1e9),
        "rank 0 look-ups (first only)": w * a.md_lat * 1e-3,
    }
    die = gather(w, 2048) + barrier(w)
    rows.append((w, win, start, ckpt, die))

us = lambda s: f"{1e6 * s:10.1f}"
print(f"fabric: alpha {a.alpha} us, {a.gbps} GB/s, reduction {a.gamma} ns/B; file system: {a.md_rate:.0f} metadata ops/s per "
      f"directory, stat {a.md_lat} ms, {a.fs_gbps} GB/s; P = {a.params} ({m_grad} B gradient, {file_bytes / 1e6:.2f} MB per rank file)")
print(f"\nper window (us; one rank's window compute: {a.window_ms:.1f} ms)")
keys = list(rows[0][1])
print(f"  {'W':>5} " + " ".join(f"{k:>24}" for k in keys) + f" {'sum (Rab.) / window':>20}")
for w, win, _, _, _ in rows:
    tot = win["count a-r"] + win["barrier"] + win["grad a-r (Rabenseifner)"] + win["rank 0 JSONL"]
    print(f"  {w:>5} " + " ".join(f"{1e6 * win[k]:>24.1f}" for k in keys) + f" {100 * tot / (a.window_ms * 1e-3):>19.1f}%")
print("\nstart-up, ddptok's part (ms; MPI_Init / the launcher not included: docs/scaling.md)")
keys = list(rows[0][2])
print(f"  {'W':>5} " + " ".join(f"{k:>24}" for k in keys))
for w, _, start, _, _ in rows:
    print(f"  {w:>5} " + " ".join(f"{1e3 * start[k]:>24.2f}" for k in keys))
print("\ncheckpoint (ms)")
keys = list(rows[0][3])
print(f"  {'W':>5} " + " ".join(f"{k:>28}" for k in keys) + f" {'die together':>14}")
for w, _, _, ckpt, die in rows:
    print(f"  {w:>5} " + " ".join(f"{1e3 * ckpt[k]:>28.2f}" for k in keys) + f" {1e3 * die:>14.2f}")

if a.overlap and a.model == "gpt2-small":
    per_token = 6 * P + 12 * NL * T * C  # the window's FLOPs per token, as above
    t_out = a.window_ms * 1e-3 * 4 * V * C / per_token  # the output layer's backward
    t_block = a.window_ms * 1e-3 * (48 * C * C + 8 * T * C) / per_token
    t_bwd = t_out + NL * t_block

    def cost(w, floats, msgs):  # Rabenseifner per message's latency, bandwidth and arithmetic once
        return msgs * 2 * lg(w) * alpha + 2 * (w - 1) / w * 4 * floats * beta + (w - 1) / w * 4 * floats * gamma

    def exposed(w, buckets):  # buckets: (ready, floats, messages) in the backward's order
        free = 0.0
        for ready, floats, msgs in buckets:
            free = max(free, ready) + cost(w, floats, msgs)
        return max(0.0, free - t_bwd)

    tail, block, rest = 2 * C + 1, 12 * C * C + 13 * C, (V + T) * C
    print(f"\ntrain.overlap at GPT-2 small (ms): backward {1e3 * t_bwd:.1f} of the {a.window_ms:.1f} ms window "
          f"(output layer {1e3 * t_out:.2f}, each of {NL} blocks {1e3 * t_block:.2f}); buckets: ln_f {4 * tail} B, a block "
          f"{4 * block / 1e6:.1f} MB ({NL} x: {4 * NL * block / 1e6:.0f} MB), wte + wpe {4 * rest / 1e6:.0f} MB after the backward")
    print(f"  {'W':>5} {'none':>10} {'output-layer':>13} {'blocks':>10} {'hidden':>10} {'floor (wte+wpe)':>16} "
          f"{'window + exposed, none / blocks':>32}")
    for w in (int(x) for x in a.ranks.split()):
        e_none = cost(w, a.params + 1, 1)
        e_out = exposed(w, [(t_out, tail, 1), (t_bwd, a.params - tail, 1)])
        e_blk = exposed(w, [(t_out, tail, 1)] + [(t_out + (NL - l) * t_block, block, 12) for l in range(NL - 1, -1, -1)]
                        + [(t_bwd, rest, 1)])
        win = a.window_ms * 1e-3
        print(f"  {w:>5} {1e3 * e_none:>10.1f} {1e3 * e_out:>13.1f} {1e3 * e_blk:>10.1f} {1e3 * (e_none - e_blk):>10.1f} "
              f"{1e3 * cost(w, rest, 1):>16.1f} {1e3 * (win + e_none):>15.1f} / {1e3 * (win + e_blk):.1f}")
