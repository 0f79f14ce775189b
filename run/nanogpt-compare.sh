#!/usr/bin/env bash
# run/nanogpt-compare.sh — ddptok's GPT side by side with nanoGPT's own train.py on the same text.
#   bash run/nanogpt-compare.sh --nanogpt DIR [--updates U] [--every E] [--seeds "1 2 3"] [--eval-iters N] [--shifts "K..."]
#     (defaults 2000 updates, the validation loss every 200, seeds 1 2 3, nanoGPT's estimate
#     from 50 batches of 16 random blocks, --warmup 100 updates; and for each K of --shifts, "4 128" ("" none), one
#     more ddptok run of the first seed whose train pieces start at K offsets of the stream)
#   bash run/nanogpt-compare.sh --report        (the table and figure again, from nanogpt-compare/)
# DIR: a checkout of karpathy/nanoGPT (train.py, model.py, configurator.py; nothing is written
# in it). Writes nanogpt-compare/ in the current directory; refuses to start where it exists.
#  1. ddptok imports Debian's fortunes-min byte-level (configs/fortunes-gpt-nanogpt.yaml: its
#     documents split by ddptok's hash, long ones cut, short pieces dropped) — ddptok's split;
#  2. run/nanogpt_export.py writes that split's train and validation text as one stream each
#     (documents joined by "\n%\n", cut to a multiple of 128 ids): data/train.bin, val.bin
#     (uint16 ddptok ids, meta.pkl vocab_size 257) for nanoGPT, and the same bytes for ddptok,
#     which imports them again as one document per split cut into pieces of exactly 128 ids;
#  3. per seed, ddptok (W = 2) and nanoGPT's train.py (--device=cpu --compile=False
#     --dtype=float32, overrides in nanogpt-compare/nanogpt-sS/config.py) train the same GPT with
#     the same batch (2048 tokens), schedule, clipping, betas and decay groups; the validation
#     loss every E updates;
#  4. summary.json and figure.png: validation loss against tokens seen, mean and min-max of the seeds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3  # Debian's: numpy, h5py, python3-torch
CFG="$ROOT/configs/fortunes-gpt-nanogpt.yaml"
NANOGPT= U=2000 EVERY=200 EVAL_ITERS=50 SEEDS="1 2 3" SHIFTS="4 128" WARMUP=100 REPORT=0
while [ $# -gt 0 ]; do
  case $1 in
    --nanogpt) NANOGPT=$2; shift 2 ;;
    --updates) U=$2; shift 2 ;;
    --every) EVERY=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --eval-iters) EVAL_ITERS=$2; shift 2 ;;
    --shifts) SHIFTS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --report) REPORT=1; shift ;;
    *) echo "nanogpt-compare.sh: unknown argument $1 (--nanogpt DIR [--updates U] [--every E] [--seeds \"1 2 3\"] [--eval-iters N] [--shifts \"4 128\"] [--warmup W] | --report)" >&2; exit 2 ;;
  esac
done
O=nanogpt-compare
if [ $REPORT = 0 ]; then
[ -n "$NANOGPT" ] || { echo "nanogpt-compare.sh: --nanogpt DIR is required: a checkout of https://github.com/karpathy/nanoGPT (git clone it)" >&2; exit 2; }
NANOGPT=$(cd "$NANOGPT" && pwd)
for f in train.py model.py configurator.py; do
  [ -f "$NANOGPT/$f" ] || { echo "nanogpt-compare.sh: $NANOGPT/$f is missing: --nanogpt must name a checkout of karpathy/nanoGPT" >&2; exit 2; }
done
$PY -c "import torch, numpy, h5py" 2>/dev/null || { echo "nanogpt-compare.sh: $PY lacks torch, numpy or h5py: apt-get install python3-torch python3-numpy python3-h5py" >&2; exit 2; }
FILES=(/usr/share/games/fortunes/fortunes /usr/share/games/fortunes/literature /usr/share/games/fortunes/riddles)
for f in "${FILES[@]}"; do
  [ -f "$f" ] || { echo "nanogpt-compare.sh: $f is missing: install Debian's fortunes-min (apt-get install fortunes-min)" >&2; exit 2; }
done
command -v gnuplot >/dev/null || { echo "nanogpt-compare.sh: gnuplot is missing: apt-get install gnuplot-nox" >&2; exit 2; }
[ "$U" -gt "$WARMUP" ] || { echo "nanogpt-compare.sh: --updates $U must exceed --warmup $WARMUP (the cosine's warmup, train.warmup_updates and warmup_iters)" >&2; exit 2; }
[ $((U % EVERY)) = 0 ] || { echo "nanogpt-compare.sh: --updates $U is not a multiple of --every $EVERY" >&2; exit 2; }
[ -e $O ] && { echo "nanogpt-compare.sh: $(pwd)/$O already exists: move it away, or run in another directory (or --report)" >&2; exit 2; }
make -C "$ROOT" --no-print-directory -s
DDPTOK="$ROOT/ddptok"
MPIRUN=(mpirun -np 2); [ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root); [ "$(nproc)" -lt 2 ] && MPIRUN+=(--oversubscribe)
mkdir -p $O; echo "$EVAL_ITERS" > $O/eval_iters
inputs=(); for f in "${FILES[@]}"; do inputs+=(--input "$f"); done
echo "== ddptok's split: import fortunes-min (configs/fortunes-gpt-nanogpt.yaml's data keys)"
"$DDPTOK" import --config "$CFG" --set paths.outputs=$O/split --set paths.artifacts=$O/split/artifacts \
  --format bytes --delimiter '\n%\n' "${inputs[@]}" | grep -- '->'
$PY "$ROOT/run/nanogpt_export.py" export $O/split/data/corpus.h5 $O/data
for s in $SEEDS; do
  d=$O/ddptok-s$s
  set_=(--set seed=$s --set paths.outputs=$d --set paths.artifacts=$d/artifacts --set train.updates=$U
        --set train.eval_every=$EVERY --set train.checkpoint_every=$U --set train.lr_decay_updates=$U --set train.warmup_updates=$WARMUP)
  "$DDPTOK" import --config "$CFG" "${set_[@]}" --format bytes --split-from-names \
    --input $O/data/fortunes_train.bytes --input $O/data/fortunes_val.bytes 2>&1 | grep -v 'the test split is empty' | grep -- '->'
  $PY "$ROOT/run/nanogpt_export.py" check $O/split/data/corpus.h5 $O/data --pieces $d/data/corpus.h5
  echo "== ddptok, seed $s: $U updates, W = 2"
  t0=$(date +%s%N)
  "${MPIRUN[@]}" "$DDPTOK" train --config "$CFG" "${set_[@]}" --continuous | tail -1
  echo "   $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee $d/seconds
  n=$O/nanogpt-s$s; mkdir -p $n; here=$(pwd)
  # nanoGPT's configurator exec()s this file in train.py's globals: its keys, and the seed
  # (train.py seeds torch.manual_seed(1337) with no key for it: the call is wrapped to seed S).
  cat > $n/config.py <<PYCFG
out_dir = '$(pwd)/$n/out'
dataset = '$(pwd)/$O/data'          # os.path.join('data', an absolute path) is that path
eval_interval = $EVERY
eval_iters = $EVAL_ITERS
log_interval = $EVERY
always_save_checkpoint = False
batch_size = 16
gradient_accumulation_steps = 1
block_size = 128
n_layer = 3
n_head = 4
n_embd = 32
dropout = 0.1
bias = True
learning_rate = 3e-3
max_iters = $U
lr_decay_iters = $U
warmup_iters = $WARMUP
min_lr = 3e-4
beta1 = 0.9
beta2 = 0.99
weight_decay = 1e-1
grad_clip = 1.0
decay_lr = True
torch.manual_seed = (lambda f: (lambda s: f(s - 1337 + $s)))(torch.manual_seed)
PYCFG
  echo "== nanoGPT train.py, seed $s: $U updates"
  t0=$(date +%s%N)
  (cd "$NANOGPT" && PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} $PY train.py "$here/$n/config.py" \
     --device=cpu --compile=False --dtype=float32) > $n/train.log 2>&1 || { tail -5 $n/train.log >&2; echo "nanogpt-compare.sh: nanoGPT's train.py failed: $n/train.log" >&2; exit 1; }
  grep '^step' $n/train.log | tail -1
  echo "   $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee $n/seconds
done
first=${SEEDS%% *}
for k in $SHIFTS; do
  d=$O/ddptok-k$k
  set_=(--set seed=$first --set paths.outputs=$d --set paths.artifacts=$d/artifacts --set train.updates=$U
        --set train.eval_every=$EVERY --set train.checkpoint_every=$U --set train.lr_decay_updates=$U --set train.warmup_updates=$WARMUP)
  $PY "$ROOT/run/nanogpt_export.py" export $O/split/data/corpus.h5 $O/data-k$k --shifts $k >/dev/null
  "$DDPTOK" import --config "$CFG" "${set_[@]}" --format bytes --split-from-names \
    --input "$O/data-k$k/fortunes_train_s*.bytes" --input $O/data-k$k/fortunes_val.bytes 2>&1 | grep -v 'the test split is empty' | grep -- '->'
  $PY "$ROOT/run/nanogpt_export.py" check $O/split/data/corpus.h5 $O/data-k$k --shifts $k --pieces $d/data/corpus.h5
  echo "== ddptok, seed $first, train pieces at $k offsets: $U updates, W = 2"
  t0=$(date +%s%N)
  "${MPIRUN[@]}" "$DDPTOK" train --config "$CFG" "${set_[@]}" --continuous | tail -1
  echo "   $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee $d/seconds
done
fi
cd $O
$PY - <<'PYREP'
import glob, json, math, re, statistics as st
T = 2048  # nanoGPT's tokens per iteration (ddptok's per update but an epoch's last)
def ddptok(d):  # step -> (tokens seen, validation loss): an epoch's last window holds fewer sequences
    out, seen = {}, 0
    for l in map(json.loads, open(f"{d}/train/continuous.jsonl")):
        seen += l["tokens"]
        if "validation" in l:
            out[l["step"]] = (seen, l["validation"]["loss"])
    return out
def nanogpt(d):  # every iteration is batch_size x block_size tokens
    return {int(m.group(1)): (int(m.group(1)) * T, float(m.group(2))) for m in re.finditer(r"^step (\d+): train loss [\d.]+, val loss ([\d.]+)", open(f"{d}/train.log").read(), re.M)}
shifted = {}
for d in sorted(x.rstrip("/") for x in glob.glob("ddptok-k*/")):  # the shifted runs, one seed each
    r = ddptok(d)
    shifted[d] = {"updates": max(r), "tokens": r[max(r)][0], "final_val_loss": r[max(r)][1]}
    with open(f"{d}.dat", "w") as f:
        for s in sorted(r):
            f.write(f"{r[s][0]} {r[s][1]} {s}\n")
    last = max(r)
    print(f"  {d}: validation loss {r[last][1]:.4f} after {last} updates")
runs = {"ddptok": {int(d.split("-s")[-1]): ddptok(d) for d in sorted(glob.glob("ddptok-s*"))},
        "nanogpt": {int(d.split("-s")[-1]): nanogpt(d) for d in sorted(glob.glob("nanogpt-s*"))}}
out = {"tokens_per_update": T, "ddptok_shifted": shifted}
for name, r in runs.items():
    steps = sorted(set.intersection(*(set(v) for v in r.values())) - {0})
    with open(f"{name}.dat", "w") as f:
        for s in steps:
            v = [r[k][s][1] for k in r]
            f.write(f"{r[min(r)][s][0]} {st.mean(v)} {min(v)} {max(v)} {s}\n")
    last = steps[-1]
    fin = {k: r[k][last][1] for k in sorted(r)}
    out[name] = {"updates": last, "tokens": r[min(r)][last][0], "final_val_loss": fin, "mean": st.mean(fin.values()),
                 "sd": st.stdev(fin.values()) if len(fin) > 1 else 0.0,
                 "seconds": {k: float(open(f"{name}-s{k}/seconds").read().split()[0]) / 1000 for k in sorted(r)}}
d, n = out["ddptok"], out["nanogpt"]
out["difference"] = d["mean"] - n["mean"]
out["difference_sd"] = math.sqrt(d["sd"] ** 2 / len(d["final_val_loss"]) + n["sd"] ** 2 / len(n["final_val_loss"]))
json.dump(out, open("summary.json", "w"), indent=1)
print(f"\n== validation loss (nats/token) after {d['updates']} updates (ddptok {d['tokens']} tokens, nanoGPT {n['tokens']}), per seed")
for name in ("ddptok", "nanogpt"):
    m = out[name]
    print(f"  {name:8s} " + "  ".join(f"s{k} {v:.4f}" for k, v in m["final_val_loss"].items()) + f"   mean {m['mean']:.4f} ± {m['sd']:.4f} (sd)"
          + "   " + " ".join(f"{v:.0f}" for v in m["seconds"].values()) + " s")
print(f"  difference ddptok - nanoGPT {out['difference']:+.4f} ± {out['difference_sd']:.4f} (sd of the difference of the means)")
open("title.txt", "w").write(f"final validation loss ddptok {d['mean']:.4f} ± {d['sd']:.4f}, nanoGPT {n['mean']:.4f} ± {n['sd']:.4f} (mean ± sd of {len(d['final_val_loss'])} and {len(n['final_val_loss'])} seeds)\\n"
                              f" difference {out['difference']:+.4f} ± {out['difference_sd']:.4f}; bands: min-max of the seeds")
PYREP
cat > figure.gp <<GP
set terminal pngcairo size 1000,560 font 'sans,10'
set output 'figure.png'
set title "fortunes-min, byte-level GPT (3 blocks, C 32, context 128): ddptok vs nanoGPT's train.py, same data, shape, batch, schedule\n$(cat title.txt)" noenhanced
set xlabel 'tokens seen (millions)'; set ylabel 'validation loss (nats per token)'; set grid; set key top right noenhanced
plot 'nanogpt.dat' using (\$1/1e6):3:4 with filledcurves fs transparent solid 0.25 noborder lc rgb '#fdae6b' title 'nanoGPT: min-max of seeds', \\
     'ddptok.dat' using (\$1/1e6):3:4 with filledcurves fs transparent solid 0.25 noborder lc rgb '#9ecae1' title 'ddptok: min-max of seeds', \\
     'nanogpt.dat' using (\$1/1e6):2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#d94801' title "nanoGPT train.py (eval_iters $(cat eval_iters) x 16 random blocks): mean", \\
     'ddptok.dat' using (\$1/1e6):2 with linespoints lw 2 pt 7 ps 0.5 lc rgb '#08519c' title 'ddptok (exact validation loss): mean'$(
  for f in ddptok-k*.dat; do [ -f "$f" ] || continue; k=${f#ddptok-k}; k=${k%.dat}
    printf ", \\\\\n     '%s' using (\$1/1e6):2 with linespoints dt 2 lw 1.5 pt 6 ps 0.5 lc rgb '#%s' title 'ddptok, train pieces at %s offsets of the stream (one seed)'" "$f" "$([ "$k" -ge 100 ] && echo 41ab5d || echo 6a51a3)" "$k"
  done)
GP
LC_ALL=C.UTF-8 gnuplot figure.gp
echo "nanogpt-compare.sh: $O/summary.json, $O/figure.png"
