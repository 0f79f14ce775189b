# Checkpoints: check-checkpoints accepts good ones; a truncated file, one flipped byte,
# another world size, config or data lock are refused by check-checkpoints and by
# --resume, on every rank, without a hang, and without touching the checkpoint.
W=$(workdir); cd "$W"
cfg="$CONFIGS/tiny.yaml"
one prepare --config "$cfg" >/dev/null
ddp 2 train --config "$cfg" >/dev/null 2>&1
ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1
expect_rc "check-checkpoints on good checkpoints" 0 one check-checkpoints --config "$cfg"
/usr/bin/python3 - <<'PY' && ok "rank file layout and attributes as docs/spec.md §10" || bad "rank file layout"
import h5py
f = h5py.File("artifacts/checkpoints/step-0006/rank-0001.h5")
a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
assert a["format"] == "ddptok-checkpoint" and a["version"] == 2 and a["step"] == 6 and a["world_size"] == 2 and a["rank"] == 1
assert len(a["checksum"]) == 64 and len(a["data_lock"]) == 64 and "optimizer:" in a["config"]
assert f["sampler/history"].shape == (6, 2, 3) and f["model/w1"].shape == (16, 24)
assert set(f["optimizer"]) == {"momentum"} and set(f["optimizer/momentum"]) == {"embedding", "w1", "b1", "w2", "b2"} and set(f["rng"]) == {"sampler", "dropout"}
o = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["optimizer"].attrs.items()}
assert o["name"] == "sgd" and o["step"] == 6 and o["lr"] == 0.2 and o["momentum"] == 0.9 and o["weight_decay"] == 0.01, o
PY
snap() { sha256sum artifacts/checkpoints/step-0006/* | sha256sum; }
refused() {  # NAME PATTERN: check-checkpoints and --resume both refuse, checkpoint untouched
  local name=$1 pat=$2 before; before=$(snap)
  expect_rc "$name: check-checkpoints refuses" 1 one check-checkpoints --config "$cfg"
  expect_grep "$name: ... saying why" "$pat" "$OUT"
  DDPTOK_TEST_TIMEOUT=60 expect_rc "$name: --resume refused on every rank (exit 2, no hang)" 2 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006
  expect_grep "$name: ... saying why" "$pat" "$OUT"
  [ "$(snap)" = "$before" ] && ok "$name: checkpoint untouched" || bad "$name: the checkpoint was modified"
}
cp -r artifacts/checkpoints/step-0006 good
restore() { rm -rf artifacts/checkpoints/step-0006; cp -r good artifacts/checkpoints/step-0006; }

f=artifacts/checkpoints/step-0006/rank-0001.h5
head -c $(( $(stat -c %s $f) / 2 )) good/rank-0001.h5 > $f
refused "truncated rank 1" 'rank-0001.h5: .*(damaged|not a readable HDF5 file)'
restore
# One flipped byte anywhere in rank 0's file (payload, metadata, slack space).
size=$(stat -c %s good/rank-0000.h5)
for frac in 1 20 50 80 97; do
  restore
  /usr/bin/python3 -c "
import sys; p, off = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p,'rb').read()); b[off] ^= 0x10; open(p,'wb').write(b)" \
    artifacts/checkpoints/step-0006/rank-0000.h5 $(( size * frac / 100 ))
  refused "flipped byte at ${frac}% of rank 0" 'rank-0000.h5: '
done
restore
# Another world size: a W=3 checkpoint offered to a W=2 run.
w3=(--set train.world_size=3 --set train.rank_bands=auto --set paths.outputs=o3 --set paths.artifacts=a3)
one prepare --config "$cfg" "${w3[@]}" >/dev/null
ddp 3 train --config "$cfg" "${w3[@]}" >/dev/null 2>&1
mv a3/checkpoints/step-0006 w3
DDPTOK_TEST_TIMEOUT=60 expect_rc "W=3 checkpoint: --resume with W=2 refused" 2 ddp 2 train --config "$cfg" --resume w3
expect_grep "... naming the world size" 'written by 3 ranks, this run has 2' "$OUT"
DDPTOK_TEST_TIMEOUT=60 expect_rc "--resume to a directory that does not exist: refused" 2 ddp 2 train --config "$cfg" --resume no/such
[ "$(grep -c '^ddptok: rank [01]: error: no/such: no such checkpoint directory$' <<<"$OUT")" -eq 2 ] \
  && ok "... one line per rank naming it" || { bad "nonexistent checkpoint message"; echo "$OUT" | grep ddptok | head -4; }
# Another config: the learning rate differs.
DDPTOK_TEST_TIMEOUT=60 expect_rc "another config: --resume refused" 2 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 --set train.optimizer.lr=0.3
expect_grep "... naming the key" 'config differs .* train.optimizer.lr: 0.2 vs 0.3' "$OUT"
# Another data lock: the checkpoint was made for another seed's data.
other=(--set seed=100 --set paths.outputs=o100 --set paths.artifacts=a100)
one prepare --config "$cfg" "${other[@]}" >/dev/null
ddp 2 train --config "$cfg" "${other[@]}" >/dev/null 2>&1
rm -rf artifacts/checkpoints/step-0006; cp -r a100/checkpoints/step-0006 artifacts/checkpoints/
refused "other data" 'data lock .* differs'
# An unpublished write (step-NNNN.tmp) is never taken for a checkpoint.
restore
mkdir -p artifacts/checkpoints/step-0009.tmp; head -c 100 good/rank-0000.h5 > artifacts/checkpoints/step-0009.tmp/rank-0000.h5
expect_rc "an unpublished step-0009.tmp is ignored by check-checkpoints" 0 one check-checkpoints --config "$cfg"
expect_grep "... and reported as incomplete" 'step-0009.tmp +ignored: incomplete write' "$OUT"
rm -rf artifacts/checkpoints/step-0012
expect_rc "--resume latest skips it (resumes from step 6)" 0 ddp 2 train --config "$cfg" --resume latest
expect_grep "... steps 7..12" 'steps 7\.\.12' "$OUT"
# A name that only looks like a step (more zeros, a number past 32 bits, a suffix): never a
# checkpoint, and never read as one step and looked for under another name (step-99999999999
# was listed as step 1215752191 and resumed from as "artifacts/checkpoints/step-1215752191",
# step-00012 holding step 6's files was checked as step 12).
# A name is printed with its control characters as '?' (one with an OSC title sequence here).
esc=$'step-\e]0;owned\a'
for n in step-00012 step-99999999999 step-0012x "$esc"; do cp -r artifacts/checkpoints/step-0006 "artifacts/checkpoints/$n"; done
expect_rc "step-00012, step-99999999999, step-0012x, step-ESC]0;owned BEL beside step-0006: check-checkpoints passes" 0 one check-checkpoints --config "$cfg"
[ "$(grep -c "ignored: not a checkpoint's name" <<<"$OUT")" -eq 4 ] && ! grep -q "step-1215752191" <<<"$OUT" \
  && ok "... each named as not a checkpoint's name, none read as another step" || { bad "look-alike step names"; grep -v '^ ' <<<"$OUT" | head -4; }
! grep -q $'\e' <<<"$OUT" && grep -qF 'step-?]0;owned? ' <<<"$OUT" && ok "... the control characters in a name printed as '?', not raw" \
  || bad "a name's control characters printed raw" "— $(grep -a owned <<<"$OUT" | cat -v)"
rm -rf artifacts/checkpoints/step-0012
expect_rc "... --resume latest resumes from step-0006" 0 ddp 2 train --config "$cfg" --resume latest
expect_grep "... steps 7..12, no warning" 'steps 7\.\.12' "$OUT"
! grep -q "warning" <<<"$OUT" && ok "... and skips nothing as damaged" || bad "look-alike names resumed from" "— $(grep warning <<<"$OUT" | head -1)"
rm -rf artifacts/checkpoints/step-00012 artifacts/checkpoints/step-99999999999 artifacts/checkpoints/step-0012x "artifacts/checkpoints/$esc"
# check-checkpoints lists in step order (not directory order), and a step-NNNN beyond the
# plan's U updates is refused: no run of this config can have written it.
rm -rf artifacts/checkpoints/step-0009.tmp
ddp 2 train --config "$cfg" --continuous --fresh --set train.checkpoint_every=2 >/dev/null 2>&1
expect_rc "check-checkpoints with steps 2..12 of the continuous run" 0 one check-checkpoints --config "$cfg"
order=$(grep -oE 'continuous/step-[0-9]+' <<<"$OUT" | tr '\n' ' ')
[ "$order" = "continuous/step-0002 continuous/step-0004 continuous/step-0006 continuous/step-0008 continuous/step-0010 continuous/step-0012 " ] \
  && ok "... listed in step order" || bad "check-checkpoints order: $order"
cp -r artifacts/checkpoints/step-0012 artifacts/checkpoints/step-0015
expect_rc "a step-0015 beyond the plan's 12 updates is refused" 1 one check-checkpoints --config "$cfg"
expect_grep "... naming it and the plan's steps" 'step-0015: step 15 is outside the plan.s steps 1\.\.12' "$OUT"
expect_grep "... and listed after step-0012" 'step-0012 +ok.*step-0015 +INVALID' "$(tr '\n' ' ' <<<"$OUT")"
rm -rf artifacts/checkpoints/step-0015
# evaluate --checkpoint: any checkpoint, here one of the continuous run alone.
expect_rc "evaluate --checkpoint a continuous-run checkpoint" 0 one evaluate --config "$cfg" --checkpoint artifacts/continuous/step-0004/
expect_grep "... evaluates that model" '^evaluate: step-4 model of artifacts/continuous/step-0004 on 32 test sequences' "$OUT"
[ "$(json outputs/evaluate.json 'j["step"], j["checkpoint"], j["test"]["tokens"] > 0')" = "4 artifacts/continuous/step-0004 True" ] \
  && ok "... outputs/evaluate.json names the checkpoint and its step" || bad "evaluate.json" "— $(cat outputs/evaluate.json)"
expect_rc "evaluate --checkpoint of a missing directory: refused" 2 one evaluate --config "$cfg" --checkpoint artifacts/nope
expect_grep "... one line naming it" '^ddptok: error: evaluate --checkpoint artifacts/nope: no checkpoint there' "$OUT"
cd "$ROOT"; rm -rf "$W"
