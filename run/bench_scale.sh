#!/usr/bin/env bash
# run/bench_scale.sh — what a CPU rank costs and how a window, the start-up and a checkpoint
# grow with the number of ranks W (docs/scaling.md). Not part of `make test`.
#
#   bash run/bench_scale.sh [--repeats N] [--ranks "1 2 4 8 16 32"] [--updates U] [--model mlp|gpt] [--no-rss] [--no-sweep]
#
# 1. RSS and start-up of the two builds: `make CUDA=0` (build/ddptok-cpu) and the default
#    build (./ddptok; the CUDA module beside it where CUDA was found), in REPEATS interleaved
#    rounds: each rank's peak RSS in a CPU run of configs/minimum.yaml with W = 2 (100
#    updates, `--continuous`), and `ddptok --version`'s wall time and peak RSS (three samples
#    per build per round, in turn; by wait4, no wrapper). Medians.
# 2. The W sweep, ranks oversubscribed on this machine's cores (mpirun --oversubscribe): a
#    model small enough that compute is negligible (minimum.yaml with D = 4, H = 8: P = 1928;
#    --model gpt: configs/gpt-tiny.yaml's GPT with n_embd 8, 2 heads, 1 block: P = 2936, AdamW),
#    U updates with a checkpoint every U/3, REPEATS rounds over the W list in turn. Per W:
#    the median window's count all-reduce, gradient all-reduce (its barrier included) and
#    whole window (JSONL window_split, windows 2..U), rank 0's start-up split (JSONL
#    "startup": MPI_Init, config, run agreement, set-up, total to the first window), the
#    median checkpoint (rank 0's "checkpoint: ... s" line), mpirun's wall time for the run and for
#    `ddptok --version` on W ranks (the launch, MPI_Init and MPI_Finalize alone) and for a
#    run that every rank refuses at once (die() together: rank 0 gathers W lines), and
#    `bench-comm`'s all-reduce latencies (64 B, the count, 64 KiB, 1 MiB). Then a fit of each
#    cost against W: t = a + b·log2(W) and t = a + b·(W − 1), with the residuals; last, the
#    projection of run/scale_model.py (assumed fabric, W = 64 .. 4096; --model gpt: at GPT-2
#    small's size, run/scale_model.py --model gpt2-small).
# Per-rank RSS comes from /usr/bin/time (GNU time) around each rank, wall times from
# Python's monotonic clock. With W above the core count the ranks take turns on the
# cores: the times then measure the scheduler as much as the shared-memory transport
# (docs/scaling.md says how far they carry).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
repeats=5 ranks="1 2 4 8 16 32" updates=30 rss=1 sweep=1 model=mlp
while [ $# -gt 0 ]; do
  case $1 in
    --repeats) repeats=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --updates) updates=$2; shift 2 ;;
    --model) case $2 in mlp|gpt) model=$2 ;; *) echo "bench_scale: --model $2: mlp or gpt" >&2; exit 2 ;; esac; shift 2 ;;
    --no-rss) rss=0; shift ;;
    --no-sweep) sweep=0; shift ;;
    -h|--help) sed -n 2,27p "$0"; exit 0 ;;
    *) echo "bench_scale: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
[ -x /usr/bin/time ] || { echo "bench_scale: needs GNU time (/usr/bin/time; Debian package time)" >&2; exit 2; }
make -C "$ROOT" --no-print-directory -s ddptok build/ddptok-cpu >/dev/null
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
W=$(mktemp -d "${TMPDIR:-/tmp}/ddptok-scale.XXXXXX")
trap 'rm -rf "$W"' EXIT
cd "$W"
export ROOT REPEATS=$repeats RANKS=$ranks UPDATES=$updates DO_RSS=$rss DO_SWEEP=$sweep MODEL=$model
echo "ddptok bench_scale: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); $(date -u +%FT%TZ)"
echo "  $("$ROOT/ddptok" --version | head -1)"
exec /usr/bin/python3 - <<'PY'
import json, math, os, re, statistics as st, subprocess, time

ROOT, R, U = os.environ["ROOT"], int(os.environ["REPEATS"]), int(os.environ["UPDATES"])
CFG = f"{ROOT}/configs/minimum.yaml"
med = lambda xs: st.median(xs) if xs else float("nan")

def run(cmd, **kw):  # every command bounded: a launch that hangs ends the bench with a message
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, **kw)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"bench_scale: {' '.join(cmd)} did not end within 300 s")
    wall = time.monotonic() - t0
    if p.returncode:
        raise SystemExit(f"bench_scale: {' '.join(cmd)} exited {p.returncode}:\n{p.stdout[-2000:]}")
    return p.stdout, wall

def timed(cmd):  # wall (s) and peak RSS (MiB) of one process: the kernel's own accounting (wait4)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"bench_scale: {' '.join(cmd)} exited {p.returncode}")
    return wall, ru.ru_maxrss / 1024

# --- 1. RSS and start-up of the CPU-only and the default build ---------------------------
if os.environ["DO_RSS"] == "1":
    builds = [("make CUDA=0", f"{ROOT}/build/ddptok-cpu"), ("make (default)", f"{ROOT}/ddptok")]
    info = run([builds[1][1], "--version"])[0]
    if "CUDA backend: built in" in info:
        builds[1] = ("make, CUDA module", builds[1][1])
    run([builds[0][1], "prepare", "--config", CFG])
    for _, exe in builds:  # warm the page cache: the first run of a binary reads it from disk
        run([exe, "--version"])
    res = {b: {"rss0": [], "rss1": [], "vt": [], "vrss": []} for b, _ in builds}
    for _ in range(R):
        for name, exe in builds:
            subprocess.run(["rm", "-rf", "artifacts", "outputs/train", "outputs/logs"])
            out, _ = run(["mpirun", "-np", "2", "/usr/bin/time", "-f", "rank_rss_kb %M", exe, "train", "--config", CFG,
                          "--backend", "cpu", "--continuous"])
            kb = sorted(int(x) for x in re.findall(r"rank_rss_kb (\d+)", out))
            res[name]["rss0"].append(kb[0] / 1024), res[name]["rss1"].append(kb[-1] / 1024)
        for _ in range(3):  # --version: short and noisy, three samples per build per round, in turn
            for name, exe in builds:
                wall, mib = timed([exe, "--version"])
                res[name]["vt"].append(wall), res[name]["vrss"].append(mib)
    print(f"\n== RSS and start-up (medians of {R} interleaved rounds)")
    print(f"  {'build':<20} {'rank RSS, CPU run W=2 minimum.yaml (MiB)':>42} {'--version wall (s)':>19} {'--version RSS (MiB)':>20}")
    for name, _ in builds:
        r = res[name]
        print(f"  {name:<20} {med(r['rss0']):>22.1f} / {med(r['rss1']):<17.1f} {med(r['vt']):>19.3f} {med(r['vrss']):>20.1f}")
    if len(builds) == 2:
        a, b = res[builds[1][0]], res[builds[0][0]]
        print(f"  ratio (2nd / 1st): rank RSS {med(a['rss1']) / med(b['rss1']):.3f}, --version wall "
              f"{med(a['vt']) / med(b['vt']):.3f}, --version RSS {med(a['vrss']) / med(b['vrss']):.3f}")

# --- 2. The W sweep ------------------------------------------------------------------------
if os.environ["DO_SWEEP"] != "1":
    raise SystemExit(0)
Ws = [int(w) for w in os.environ["RANKS"].split()]
if os.environ["MODEL"] == "gpt":  # the GPT's row, AdamW, packed sequences: its own window and checkpoint
    CFG = f"{ROOT}/configs/gpt-tiny.yaml"
    tiny = ["--set", "model.n_embd=8", "--set", "model.n_head=2", "--set", "model.n_layer=1",
            # plain AdamW and the bands sampler (B sequences per rank whatever W), as its figures
            # were measured (gpt-tiny.yaml now ships the recipe and the global sampler)
            "--set", "train.lr_schedule=constant", "--set", "train.grad_clip=0", "--set", "train.optimizer.decay=all",
            "--set", "train.sampler=bands", "--set", "train.batch_size_per_rank=4"]
else:
    tiny = ["--set", "model.embed_dim=4", "--set", "model.hidden=8"]
tiny += ["--set", "train.rank_bands=auto", "--set", f"train.updates={U}", "--set", "train.interrupt_at=0",
         "--set", f"train.checkpoint_every={max(1, U // 3)}"]
def sets(w):
    return tiny + ["--set", f"train.world_size={w}", "--set", f"paths.outputs=o{w}", "--set", f"paths.artifacts=a{w}"]
for w in Ws:
    run([f"{ROOT}/ddptok", "prepare", "--config", CFG] + sets(w))
keys = ["count", "grad", "window", "mpi_init", "config", "agree", "setup", "total", "ckpt", "wall", "launch", "die",
        "bc64", "bccount", "bc64k", "bc1m"]
res = {w: {k: [] for k in keys} for w in Ws}
for _ in range(R):
    for w in Ws:
        r = res[w]
        subprocess.run(["rm", "-rf", f"a{w}", f"o{w}/train", f"o{w}/logs"])
        out, wall = run(["mpirun", "--oversubscribe", "-np", str(w), f"{ROOT}/ddptok", "train", "--config", CFG,
                         "--backend", "cpu"] + sets(w))
        rows = [json.loads(l) for l in open(f"o{w}/train/interrupted.jsonl")]
        r["count"].append(med([x["window_split"]["count_allreduce"] for x in rows[1:]]))
        r["grad"].append(med([x["window_split"]["grad_allreduce"] for x in rows[1:]]))
        r["window"].append(med([x["seconds"] for x in rows[1:]]))
        for k in ("mpi_init", "config", "agree", "setup", "total"):
            r[k].append(rows[0]["startup"][k])
        r["ckpt"].append(med([float(s) for s in re.findall(r"rank files, ([0-9.]+) s\)", out)]))
        r["wall"].append(wall)
        # The launch alone: W processes that start MPI and end it (mpirun -np 32 /bin/true
        # hangs now and then in Open MPI 4.1.4 here: processes that never call MPI_Init).
        r["launch"].append(run(["mpirun", "--oversubscribe", "-np", str(w), f"{ROOT}/ddptok", "--version"])[1])
        # Every rank fails the same check (world size 1 below W): die() together, rank 0
        # gathers the W lines (2 KiB each) and prints one (src/job/together.c).
        t0 = time.monotonic()
        p = subprocess.run(["mpirun", "--oversubscribe", "-np", str(w), f"{ROOT}/ddptok", "train", "--config", CFG,
                            "--set", "train.world_size=1" if w > 1 else "train.world_size=2"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        if p.stdout.count("ddptok: ") != 1 or p.returncode != 2:
            raise SystemExit(f"bench_scale: the W={w} die-together run: exit {p.returncode}, output:\n{p.stdout[-1500:]}")
        r["die"].append(time.monotonic() - t0)
        out, _ = run(["mpirun", "--oversubscribe", "-np", str(w), f"{ROOT}/ddptok", "bench-comm", "--config", CFG,
                      "--backend", "cpu", "--max-bytes", "1048576"] + sets(w))
        lat = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) >= 8 and f[-7].isdigit():
                lat[(f[0] if len(f) == 9 else "", int(f[-8]))] = float(f[-4]) * 1e-6
        r["bc64"].append(lat[("", 64)]), r["bc64k"].append(lat[("", 65536)]), r["bc1m"].append(lat[("", 1048576)])
        r["bccount"].append(next(v for (what, _), v in lat.items() if what == "count"))
m = {w: {k: med(v) for k, v in res[w].items()} for w in Ws}
ms = lambda x: f"{1e3 * x:9.3f}"
print(f"\n== cost against W, {os.environ['MODEL']} (ranks oversubscribed on {os.cpu_count()} cores; medians of {R} rounds; ms)")
print("  W  | window: count a-r  grad a-r     whole | start-up: MPI_Init  config   agree   set-up  to window"
      " | ckpt    | mpirun: train  --version  die | bench-comm: 64 B  count   64 KiB   1 MiB")
for w in Ws:
    x = m[w]
    print(f"  {w:<3}|        {ms(x['count'])} {ms(x['grad'])} {ms(x['window'])} |  {ms(x['mpi_init'])} {ms(x['config'])}"
          f"{ms(x['agree'])}{ms(x['setup'])} {ms(x['total'])} |{ms(x['ckpt'])} | {ms(x['wall'])} {ms(x['launch'])}{ms(x['die'])} |"
          f"  {ms(x['bc64'])}{ms(x['bccount'])}{ms(x['bc64k'])}{ms(x['bc1m'])}")

# Least squares t = a + b·f(W) over the W > 1 points, with the residuals.
def fit(xs, ys):
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    res = [y - (a + b * x) for x, y in zip(xs, ys)]
    return a, b, math.sqrt(sum(e * e for e in res) / n), res
print("\n== fits over W > 1: t = a + b*log2(W) and t = a + b*(W-1) (ms; rms residual; residual per W)")
fitted = {}
for k, label in [("count", "count all-reduce"), ("grad", "gradient all-reduce"), ("bc64", "bench-comm 64 B"),
                 ("bccount", "bench-comm count"), ("bc1m", "bench-comm 1 MiB"), ("mpi_init", "MPI_Init"),
                 ("agree", "run agreement"), ("total", "start-up to window"), ("ckpt", "checkpoint"), ("launch", "mpirun --version"), ("die", "die together")]:
    pts = [(w, m[w][k]) for w in Ws if w > 1]
    if len(pts) < 3:
        continue
    ys = [y for _, y in pts]
    for name, f in (("log2", lambda w: math.log2(w)), ("W-1", lambda w: w - 1)):
        a, b, rms, r = fit([f(w) for w, _ in pts], ys)
        fitted[(k, name)] = (a, b, rms)
        print(f"  {label:<20} {name:>4}: a {1e3 * a:9.3f}  b {1e3 * b:8.4f}  rms {1e3 * rms:8.3f}  "
              + " ".join(f"{w}:{1e3 * e:+.2f}" for (w, _), e in zip(pts, r)))
print("\n== projection with assumed fabric and file-system constants (run/scale_model.py; docs/scaling.md)")
subprocess.run(["/usr/bin/python3", f"{ROOT}/run/scale_model.py"] + (["--model", "gpt2-small"] if os.environ["MODEL"] == "gpt" else []))
json.dump({"medians_s": {str(w): m[w] for w in Ws}, "fits_ms": {f"{k}/{n}": [1e3 * v for v in fitted[(k, n)]] for k, n in fitted}},
          open(os.environ.get("BENCH_SCALE_JSON", "/dev/null"), "w"), indent=1)
PY
