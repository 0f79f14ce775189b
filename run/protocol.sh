#!/usr/bin/env bash
# run/protocol.sh — the whole tutorial, in order, with 2 MPI ranks, ending with the
# balance table. Usage: bash run/protocol.sh [--force] [CONFIG] [--set KEY=VALUE]...
# (default configs/minimum.yaml; each --set goes to every command, as ddptok's own).
# Writes under outputs/ and artifacts/ of the current directory (the config's paths.*): where
# another config's results are there, it prints the two --set that give this one its own.
# It never removes results it did not make in this run: when ddptok's generated files are
# already there (an earlier run), it stops before doing anything and says so; --force
# removes them first, listing each (`ddptok clean --scope generated`: only what ddptok recorded
# making; anything else where the protocol writes stops it, --force or not, and so do results
# of another config). Exit 0
# only when every proof holds: parity passes and every control is rejected, resume is
# bit-exact, the empty window is rejected by all ranks, and the model beats the unigram
# baseline.
set -euo pipefail
ROOT=$(cd -P "$(dirname "$0")/.." && pwd)
FORCE=0 CONFIG= SETS=()
while [ $# -gt 0 ]; do
  case $1 in
    --force) FORCE=1 ;;
    --set) [ $# -ge 2 ] || { echo "protocol.sh: --set needs KEY=VALUE" >&2; exit 2; }; SETS+=(--set "$2"); shift ;;
    --set=*) SETS+=(--set "${1#--set=}") ;;
    -*) echo "protocol.sh: unknown option $1 (usage: bash run/protocol.sh [--force] [CONFIG] [--set KEY=VALUE]...)" >&2; exit 2 ;;
    *) [ -z "$CONFIG" ] || { echo "protocol.sh: one config only ($CONFIG, then $1)" >&2; exit 2; }; CONFIG=$1 ;;
  esac
  shift
done
CONFIG=${CONFIG:-$ROOT/configs/minimum.yaml}
NP=${DDPTOK_NP:-2}

bash "$ROOT/run/install-deps.sh"
make -C "$ROOT" --no-print-directory -s
DDPTOK="$ROOT/ddptok"
# mpirun refuses root unless told otherwise (containers and CI run as root), and more
# ranks than cores need oversubscription.
mpirun_np() {  # mpirun for N ranks: root needs a flag (containers, CI), more ranks than cores another
  local args=(mpirun -np "$1")
  [ "$(id -u)" -eq 0 ] && args+=(--allow-run-as-root)
  [ "$(nproc)" -lt "$1" ] && args+=(--oversubscribe)
  echo "${args[@]}"
}
read -r -a MPIRUN <<<"$(mpirun_np "$NP")"

step() { echo; echo "== $*"; }
# A fresh start, so the resumed run continues this run's checkpoint: an earlier run's
# results are removed only when asked (--force).
# A path where the protocol writes that ddptok did not make (a user's file, a link, an older
# ddptok's results without a record) is never removed: clean lists it (exit 1) and the
# protocol stops rather than write over it.
# The config's own outputs directory, as every command resolves it (the report is read there).
OUTDIR=$("$DDPTOK" config --config "$CONFIG" "${SETS[@]}" | sed -n 's/^paths\.outputs: "\(.*\)"  *#.*/\1/p')
[ -n "$OUTDIR" ] || exit 2  # config said why
dry_rc=0 dry_err=$(mktemp)
dry=$("$DDPTOK" clean --scope generated --dry-run --config "$CONFIG" "${SETS[@]}" 2>"$dry_err") || dry_rc=$?
cat "$dry_err" >&2
# Another config's results here: the same protocol in directories of this config's own, as
# clean names them (the two --set), is the way on.
own=$(grep -oE -- "--set paths\.outputs=[^ ]+ --set paths\.artifacts=[^ \`]+" "$dry_err" | head -1 || true); rm -f "$dry_err"
if [ "$dry_rc" = 2 ] && [ -n "$own" ]; then
  echo "protocol.sh: give $CONFIG its own directories here: bash $0 $CONFIG ${SETS[*]:+${SETS[*]} }$own (and add those two --set to the commands after it), or run it in another directory" >&2
  exit 2
fi
[ "$dry_rc" -le 1 ] || exit "$dry_rc"  # clean said why (a bad config)
if [ "$dry_rc" = 1 ]; then
  grep '^left: ' <<<"$dry" >&2
  echo "protocol.sh: $(pwd) holds paths where the protocol writes that ddptok did not make (listed above): clean never removes them; move them away, or run it in another directory" >&2
  exit 2
fi
earlier=$(tail -1 <<<"$dry" | sed -E 's/^clean: ([0-9]+) .*/\1/')
if [ "$earlier" != 0 ] && [ "$FORCE" = 0 ]; then
  echo "protocol.sh: $(pwd) already holds results of an earlier run ($earlier path(s): ddptok clean --scope generated --dry-run --config $CONFIG${SETS[*]:+ ${SETS[*]}} lists them): run it in another directory, or with --force to remove them first" >&2
  exit 2
fi
# --force removes only what ddptok recorded making, each path listed before it goes (a trained
# model, an exported one among them); another config's results stop it above (clean refuses).
if [ "$earlier" != 0 ]; then
  echo "protocol.sh --force: removing the $earlier path(s) an earlier run of ddptok made here:" >&2
  grep '^would remove ' <<<"$dry" | sed 's/^would remove /  /' >&2
fi
step "clean";              "$DDPTOK" clean --scope generated --config "$CONFIG" "${SETS[@]}" | tail -1
step "prepare";            "$DDPTOK" prepare --config "$CONFIG" "${SETS[@]}"
step "reference";          "$DDPTOK" reference --config "$CONFIG" "${SETS[@]}"
step "check-loss";         "$DDPTOK" check-loss --config "$CONFIG" "${SETS[@]}"
step "check-env";          "${MPIRUN[@]}" "$DDPTOK" check-env --config "$CONFIG" "${SETS[@]}"
step "parity";             "${MPIRUN[@]}" "$DDPTOK" parity --config "$CONFIG" "${SETS[@]}"
step "train (interrupted)"; "${MPIRUN[@]}" "$DDPTOK" train --config "$CONFIG" "${SETS[@]}"
step "train --continuous"; "${MPIRUN[@]}" "$DDPTOK" train --config "$CONFIG" "${SETS[@]}" --continuous
step "train --resume";     "${MPIRUN[@]}" "$DDPTOK" train --config "$CONFIG" "${SETS[@]}" --resume latest
# The negative-control matrix: W in {2, 3} x A in {1, 2}, the balanced case (every
# sequence carries 10 labels, so every rank the same count) and the sequence unit; each
# cell in outputs/matrix/<cell>/.
step "parity matrix"
for cell in "W2-A1 2 --set train.accumulation=1" "W2-A2 2" \
            "W3-A1 3 --set train.accumulation=1 --set train.rank_bands=auto" "W3-A2 3 --set train.rank_bands=auto" \
            "balanced-W2-A2 2 --set data.max_labels=10" \
            "sequence-W2-A2 2 --set train.loss_unit=sequence --set train.normalization=global-sequence --set data.unsupervised_prefix=40"; do
  read -r name np extra <<<"$cell"
  sets=("${SETS[@]}" --set paths.outputs=$OUTDIR/matrix/$name --set paths.artifacts=$OUTDIR/matrix/$name --set train.world_size=$np $extra)
  read -r -a run <<<"$(mpirun_np "$np")"
  "$DDPTOK" prepare --config "$CONFIG" "${sets[@]}" >/dev/null
  "$DDPTOK" reference --config "$CONFIG" "${sets[@]}" >/dev/null
  "${run[@]}" "$DDPTOK" parity --config "$CONFIG" "${sets[@]}" | tail -1 | sed "s/^/  $name: /"
done
step "check-empty";        "${MPIRUN[@]}" "$DDPTOK" check-empty --config "$CONFIG" "${SETS[@]}"
step "evaluate";           "$DDPTOK" evaluate --config "$CONFIG" "${SETS[@]}" --protocol
step "exercise";           "$DDPTOK" exercise --config "$ROOT/configs/exercise.yaml"
step "plot";               "$DDPTOK" plot --config "$CONFIG" "${SETS[@]}"
step "check-checkpoints";  "$DDPTOK" check-checkpoints --config "$CONFIG" "${SETS[@]}"
step "clean --dry-run";    "$DDPTOK" clean --scope generated --dry-run --config "$CONFIG" "${SETS[@]}" | tail -1

# The balance table, from outputs/report.json.
python3 - "$OUTDIR/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p, t, e = r["parity"], r["test"], r["empty"]
print(f"\n== balance (W = {p['world_size']}, {p['compared']} gradient components, atol {p['atol']:g}, rtol {p['rtol']:g})")
rows = []
for mode, m in p["modes"].items():
    want = m["expected"]
    got = "passes" if m["pass"] else "rejected"
    rows.append((f"parity {mode}", f"max abs err {m['max_abs_err']:.3g}", f"{got} ({'ok' if m['ok'] else 'WRONG'}: must be {want})"))
for mode, m in ((p.get("clip") or {}).get("rows") or {}).items():  # train.grad_clip > 0: where the clip happens
    got = "passes" if m["pass"] else "rejected"
    rows.append((f"parity {mode}", f"max abs err {m['max_abs_err']:.3g}", f"{got} ({'ok' if m['ok'] else 'WRONG'}: must be {m['expected']})"))
for name, m in sorted(r.get("matrix", {}).items()):
    # pass = the product, = a control the counts make equal, x = a control rejected
    mark = lambda v: ("pass" if v["expected"] == "passes" else "=" if v["pass"] else "x") + ("" if v["ok"] else "!WRONG")
    cells = " ".join(f"{v['short']} {mark(v)}" for k, v in m["modes"].items())  # short: the objective row's column label
    rows.append((f"matrix {name}", f"N = {' + '.join(map(str, m['rank_counts']))}", cells))
rows.append(("resume (step %d)" % r["resume"]["step"], f"max |dtheta| = {r['resume']['max_abs_diff']}", "ok" if r["resume"]["max_abs_diff"] == 0 else "WRONG"))
ge = e["global_empty"]
rows.append(("globally empty window", f"exit code {ge['exit_code']}", "rejected by all ranks" if ge["rejected_by_all_ranks"] else "WRONG"))
le = e["local_empty"]
rows.append(("locally empty rank", f"max abs err {le.get('max_abs_err', 0):.3g}", "matches the reference" if le["pass"] else "WRONG"))
rows.append(("test loss per token", f"{t['loss']:.5f}", f"unigram {t['unigram_loss']:.5f}, best achievable {t['best_loss']:.5f}"))
rows.append(("token accuracy", f"{100 * t['token_accuracy']:.2f} %", f"best achievable {100 * t['best_accuracy']:.2f} %; {t['sequences']} sequences, {t['tokens']} tokens"))
w = max(len(a) for a, _, _ in rows)
for a, b, c in rows:
    print(f"  {a:<{w}}  {b:<24}  {c}")
if r.get("matrix"):
    print("  (matrix: token/seq = global-token/-sequence, mom = mean of means, /A = extra division by A, pad = padded\n"
          "   denominator; pass = the product passes, x = a control rejected, = = a control the counts make equal)")
print("\nprotocol:", "OK" if r["ok"] else "FAILED")
sys.exit(0 if r["ok"] else 1)
PY
