#!/usr/bin/env bash
# run/fortunes.sh — your own text, end to end, with both models: Debian's fortunes-min (three
# English files) imported byte-level, the window MLP (configs/fortunes.yaml) and a GPT of about
# its parameter count (configs/fortunes-gpt.yaml) each trained at W = 2 with the validation
# loss every EVERY updates and a checkpoint there; then, on the test split, each model's
# bits/byte at its last update and at its best validation step, beside the test bytes'
# order-0 entropy and xz -9 / zstd -19, and one figure of both models' loss curves.
#   bash run/fortunes.sh [MLP_UPDATES GPT_UPDATES EVERY]    (default 3000 10000 250)
#   bash run/fortunes.sh --report                           (the table and figure again, from fortunes/)
# Writes fortunes/ in the current directory (fortunes/summary.json, fortunes/figure.png);
# refuses to start where it already exists. About 3.5 minutes on 2 idle CPU cores.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3  # Debian's, with its numpy and h5py (run/install-deps.sh --tests)
REPORT=0; [ "${1:-}" = --report ] && { REPORT=1; shift; }
MLP_U=${1:-3000} GPT_U=${2:-10000} EVERY=${3:-250}
FILES=(/usr/share/games/fortunes/fortunes /usr/share/games/fortunes/literature /usr/share/games/fortunes/riddles)
for f in "${FILES[@]}"; do
  [ -f "$f" ] || { echo "fortunes.sh: $f is missing: install Debian's fortunes-min (apt-get install fortunes-min)" >&2; exit 2; }
done
for c in xz zstd gnuplot; do
  command -v "$c" >/dev/null || { echo "fortunes.sh: $c is missing: apt-get install xz-utils zstd gnuplot-nox" >&2; exit 2; }
done
if [ $REPORT = 0 ]; then
[ -e fortunes ] && { echo "fortunes.sh: $(pwd)/fortunes already exists: move it away, or run in another directory (or --report)" >&2; exit 2; }
make -C "$ROOT" --no-print-directory -s
DDPTOK="$ROOT/ddptok"
mpirun_np() {  # as run/protocol.sh: root needs a flag (containers, CI), more ranks than cores another
  local args=(mpirun -np "$1")
  [ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
  [ "$(nproc)" -lt "$1" ] && args+=(--oversubscribe)
  echo "${args[@]}"
}
read -r -a MPIRUN <<<"$(mpirun_np 2)"
inputs=(); for f in "${FILES[@]}"; do inputs+=(--input "$f"); done

model() {  # NAME CONFIG UPDATES [--set KEY=VALUE]...
  local name=$1 cfg=$2 u=$3; shift 3
  local s=(--set paths.outputs=fortunes/$name --set paths.artifacts=fortunes/$name/artifacts --set train.updates=$u
           --set train.eval_every=$EVERY --set train.checkpoint_every=$EVERY --set train.interrupt_at=0 "$@")
  echo "== $name: import, train $u updates (W = 2), evaluate"
  "$DDPTOK" import --config "$cfg" "${s[@]}" --format bytes --delimiter '\n%\n' "${inputs[@]}" | tail -1
  "${MPIRUN[@]}" "$DDPTOK" train --config "$cfg" "${s[@]}" --continuous | tail -1
  local last best
  last=$(printf 'fortunes/%s/artifacts/continuous/step-%04d' "$name" "$u")
  best=$($PY - "fortunes/$name/train/continuous.jsonl" <<'PY'
import json, sys
v = [(l["validation"]["loss"], l["step"]) for l in map(json.loads, open(sys.argv[1])) if "validation" in l]
print(min(v)[1])
PY
)
  best=$(printf 'fortunes/%s/artifacts/continuous/step-%04d' "$name" "$best")
  for which in last best; do
    local ck=${!which}
    "$DDPTOK" evaluate --config "$cfg" "${s[@]}" --checkpoint "$ck" >/dev/null
    cp "fortunes/$name/evaluate.json" "fortunes/$name/evaluate-$which.json"
    echo "  $which ($ck): $($PY -c "import json,sys; t=json.load(open(sys.argv[1]))['test']; print('%.4f bits/byte' % t['bits_per_byte'])" "fortunes/$name/evaluate-$which.json")"
  done
}
model mlp "$ROOT/configs/fortunes.yaml" "$MLP_U"
model gpt "$ROOT/configs/fortunes-gpt.yaml" "$GPT_U" --set train.warmup_updates=$((GPT_U / 10))  # its cosine's warmup: a tenth, as the config's
fi
$PY "$ROOT/tests/import_witness.py" baselines fortunes/mlp/data/corpus.h5 > fortunes/baselines.json

# The table and the figure's data.
$PY - <<'PY'
import json, math, sys
b = json.load(open("fortunes/baselines.json"))
rows, out = [], {"baselines": b}
for name in ("mlp", "gpt"):
    log = [json.loads(l) for l in open(f"fortunes/{name}/train/continuous.jsonl")]
    with open(f"fortunes/{name}-train.dat", "w") as f:  # train loss in bits, a mean over EVERY-step blocks
        k = max(1, len(log) // 200)
        for i in range(0, len(log) - k + 1, k):
            f.write(f"{log[i + k - 1]['step']} {sum(l['loss'] for l in log[i:i + k]) / k / math.log(2)}\n")
    with open(f"fortunes/{name}-val.dat", "w") as f:
        for l in log:
            if "validation" in l:
                f.write(f"{l['step']} {l['validation']['bits_per_byte']}\n")
    best_val = min((l["validation"]["bits_per_byte"], l["step"]) for l in log if "validation" in l)
    ev = {w: json.load(open(f"fortunes/{name}/evaluate-{w}.json")) for w in ("last", "best")}
    out[name] = {"updates": log[-1]["step"], "test_last": ev["last"]["test"]["bits_per_byte"],
                 "best_step": best_val[1], "validation_best": best_val[0], "test_at_best": ev["best"]["test"]["bits_per_byte"],
                 "test_tokens": ev["last"]["test"]["tokens"]}
json.dump(out, open("fortunes/summary.json", "w"), indent=1)
print(f"\n== fortunes-min, test split ({b['test_bytes']} bytes), bits/byte")
print(f"  order-0 entropy of the test bytes     {b['order0_bits_per_byte']:.3f}")
print(f"  xz -9 of the test bytes               {b['xz_bits_per_byte']:.3f}")
print(f"  zstd -19 of the test bytes            {b['zstd_bits_per_byte']:.3f}")
for name, label in (("mlp", "window MLP"), ("gpt", "GPT")):
    m = out[name]
    print(f"  {label:10s} at its last update ({m['updates']:5d})  {m['test_last']:.3f}")
    print(f"  {label:10s} at its best validation ({m['best_step']:5d})  {m['test_at_best']:.3f}   (validation {m['validation_best']:.3f})")
PY
cd fortunes
cat > figure.gp <<EOF
set terminal pngcairo size 1100,600 font 'sans,10'
set output 'figure.png'
set title "fortunes-min, byte-level: the window MLP and a GPT of about its size (W = 2 ranks, AdamW)" noenhanced
set xlabel 'update'; set ylabel 'bits per byte'; set grid; set key top right noenhanced
set yrange [2:6]
plot 'mlp-train.dat' using 1:2 with lines lw 1 lc rgb '#9ecae1' title 'window MLP: training loss', \\
     'mlp-val.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#08519c' title 'window MLP: validation', \\
     'gpt-train.dat' using 1:2 with lines lw 1 lc rgb '#fcae91' title 'GPT: training loss', \\
     'gpt-val.dat' using 1:2 with linespoints lw 2 pt 7 ps 0.6 lc rgb '#a50f15' title 'GPT: validation', \\
     $($PY -c "import json; print(json.load(open('baselines.json'))['zstd_bits_per_byte'])") with lines dt 2 lc rgb '#444444' title 'zstd -19 of the test bytes', \\
     $($PY -c "import json; print(json.load(open('baselines.json'))['xz_bits_per_byte'])") with lines dt 3 lc rgb '#888888' title 'xz -9 of the test bytes'
EOF
LC_ALL=C.UTF-8 gnuplot figure.gp
echo "fortunes.sh: fortunes/summary.json, fortunes/figure.png"
