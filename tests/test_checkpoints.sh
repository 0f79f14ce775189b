# Checkpoints: check-checkpoints accepts good ones; a truncated file, one flipped byte,
# another world size, config or data lock, and a derivable field changed with both checksums
# recomputed are refused by check-checkpoints and by --resume, on every rank, without a
# hang, and without touching the checkpoint.
cfg="$CONFIGS/tiny.yaml"
# The tiny lineage: prepared, trained to step 6 (artifacts/checkpoints/step-0006) and
# uninterrupted (artifacts/continuous/step-0012).
fixture_trained() {
  one prepare --config "$cfg" >/dev/null && ddp 2 train --config "$cfg" >/dev/null 2>&1 && ddp 2 train --config "$cfg" --continuous >/dev/null 2>&1
}
# ... and resumed to step 12 (artifacts/checkpoints/step-0012).
fixture_resumed() { fixture trained && ddp 2 train --config "$cfg" --resume latest >/dev/null 2>&1; }
# ... and the continuous lineage restarted (--fresh) with a checkpoint every 2 steps.
fixture_every2() { fixture resumed && ddp 2 train --config "$cfg" --continuous --fresh --set train.checkpoint_every=2 >/dev/null 2>&1; }

case_good() {
  fixture trained || return
  expect_rc "check-checkpoints on good checkpoints" 0 one check-checkpoints --config "$cfg"
  /usr/bin/python3 - <<'PY' && ok "checkpoint rank file layout and attributes as docs/spec.md §10" || bad "checkpoint rank file layout and attributes as docs/spec.md §10"
import h5py
f = h5py.File("artifacts/checkpoints/step-0006/rank-0001.h5")
a = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
assert a["format"] == "ddptok-checkpoint" and a["version"] == 4 and a["step"] == 6 and a["world_size"] == 2 and a["rank"] == 1
assert len(a["checksum"]) == 64 and len(a["data_lock"]) == 64 and "optimizer:" in a["config"]
assert set(f["sampler"]) == {"last"} and f["sampler/last"].shape == (2, 3) and f["model/w1"].shape == (16, 24)
sa = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["sampler"].attrs.items()}
assert len(sa["windows_sha256"]) == 64 and sa["epoch"] == 0 and sa["window"] == 6, sa
assert set(f["optimizer"]) == {"momentum"} and set(f["optimizer/momentum"]) == {"embedding", "w1", "b1", "w2", "b2"} and set(f["rng"]) == {"sampler", "dropout"}
o = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f["optimizer"].attrs.items()}
assert o["name"] == "sgd" and o["step"] == 6 and o["lr"] == 0.2 and o["momentum"] == 0.9 and o["weight_decay"] == 0.01, o
PY
}
snap() { sha256sum artifacts/checkpoints/step-0006/* | sha256sum; }
refused() {  # NAME PATTERN: check-checkpoints and --resume both refuse, checkpoint untouched
  local name=$1 pat=$2 before; before=$(snap)
  expect_rc "$name: check-checkpoints refuses" 1 one check-checkpoints --config "$cfg"
  expect_grep "$name: check-checkpoints says why" "$pat" "$OUT"
  DDPTOK_TEST_TIMEOUT=60 expect_rc "$name: --resume refused on every rank (exit 2, no hang)" 2 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006
  expect_grep "$name: --resume says why" "$pat" "$OUT"
  [ "$(snap)" = "$before" ] && ok "$name: checkpoint untouched" || bad "$name: checkpoint untouched"
}
case_truncated() {
  fixture trained || return
  local f=artifacts/checkpoints/step-0006/rank-0001.h5
  head -c $(( $(stat -c %s $f) / 2 )) $f > half && mv half $f
  refused "checkpoint with rank 1's file truncated" 'rank-0001.h5: .*(damaged|not a readable HDF5 file)'
}
# One flipped byte anywhere in rank 0's file (payload, metadata, slack space).
flipped() {  # PERCENT: the byte flipped, as a fraction of the file
  fixture trained || return
  local f=artifacts/checkpoints/step-0006/rank-0000.h5
  /usr/bin/python3 -c "
import sys; p, off = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p,'rb').read()); b[off] ^= 0x10; open(p,'wb').write(b)" \
    $f $(( $(stat -c %s $f) * $1 / 100 ))
  refused "checkpoint with a flipped byte at $1% of rank 0's file" 'rank-0000.h5: '
}
case_flipped_1() { flipped 1; }
case_flipped_20() { flipped 20; }
case_flipped_50() { flipped 50; }
case_flipped_80() { flipped 80; }
case_flipped_97() { flipped 97; }
# Another world size: a W=3 checkpoint offered to a W=2 run.
case_world_size_3() {
  fixture trained || return
  local w3=(--set train.world_size=3 --set train.rank_bands=auto --set paths.outputs=o3 --set paths.artifacts=a3)
  one prepare --config "$cfg" "${w3[@]}" >/dev/null
  ddp 3 train --config "$cfg" "${w3[@]}" >/dev/null 2>&1
  mv a3/checkpoints/step-0006 w3
  DDPTOK_TEST_TIMEOUT=60 expect_rc "W=3 checkpoint: --resume with W=2 refused" 2 ddp 2 train --config "$cfg" --resume w3
  expect_grep "W=3 checkpoint: --resume with W=2 refused, naming the world size" 'written by 3 ranks, this run has 2' "$OUT"
}
case_resume_missing_dir() {
  fixture trained || return
  DDPTOK_TEST_TIMEOUT=60 expect_rc "--resume to a directory that does not exist: refused" 2 ddp 2 train --config "$cfg" --resume no/such
  [ "$(grep -c '^ddptok: rank [01]: error: no/such: no such checkpoint directory$' <<<"$OUT")" -eq 2 ] \
    && ok "--resume to a directory that does not exist: one line per rank naming it" || { bad "--resume to a directory that does not exist: one line per rank naming it"; echo "$OUT" | grep ddptok | head -4; }
}
# Another config: the learning rate differs.
case_other_config() {
  fixture trained || return
  DDPTOK_TEST_TIMEOUT=60 expect_rc "another config: --resume refused" 2 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006 --set train.optimizer.lr=0.3
  expect_grep "another config: --resume refused naming the key" 'config differs .* train.optimizer.lr: 0.2 vs 0.3' "$OUT"
}
# Another data lock: the checkpoint was made for another seed's data.
case_other_data() {
  fixture trained || return
  local other=(--set seed=100 --set paths.outputs=o100 --set paths.artifacts=a100)
  one prepare --config "$cfg" "${other[@]}" >/dev/null
  ddp 2 train --config "$cfg" "${other[@]}" >/dev/null 2>&1
  rm -rf artifacts/checkpoints/step-0006; cp -r a100/checkpoints/step-0006 artifacts/checkpoints/
  refused "checkpoint of another seed's data" 'data lock .* differs'
}
# Derived fields (docs/checkpoints.md "Derived fields"): the payload checksum and SHA256SUMS
# are unkeyed, so tests/reseal_ckpt.py rewrites step 6 with one field changed and both
# recomputed. Whatever can be derived (the optimizer's step from the step, keys from the
# seed, counters from the step or the sampler's replay, the step from the directory's name,
# the hyper-parameters from the stored config, shapes and dtypes from the format, finiteness)
# is derived and compared by check-checkpoints and by --resume: each tamper is refused by
# both, naming the file, the field, what was expected and what was found. Every case but
# the ones marked "guard" was accepted by train --resume before (2aa4f14).
RESEAL="$ROOT/tests/reseal_ckpt.py"
# Negative control: resealed untouched, the checkpoint resumes bit-identically (the tool is faithful).
case_resealed_untouched() {
  fixture trained || return
  local d
  mv artifacts/checkpoints/step-0006 good
  expect_rc "resealed untouched: check-checkpoints accepts it" 0 \
    bash -c "/usr/bin/python3 '$RESEAL' good artifacts/checkpoints/step-0006 && '$DDPTOK' check-checkpoints --config '$cfg'"
  expect_rc "resealed untouched: train --resume" 0 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0006
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/checkpoints/step-0012 artifacts/continuous/step-0012) \
    && ok "resealed untouched: step 12 bit-identical to the continuous run" "(max |dtheta| = $d)" \
    || bad "resealed untouched: step 12 bit-identical to the continuous run" "— $d"
}
tampered() {  # NAME PATTERN EDIT...: step 6 resealed with the EDITs, refused by both
  local name=$1 pat=$2; shift 2
  fixture trained || return
  mv artifacts/checkpoints/step-0006 good
  /usr/bin/python3 "$RESEAL" good artifacts/checkpoints/step-0006 "$@" >/dev/null || { bad "$name: reseal_ckpt.py rewrites the checkpoint"; return; }
  refused "$name" "$pat"
}
cf='artifacts/checkpoints/step-0006/rank-000[01].h5: '
case_tamper_sgd_step() { tampered "tampered: SGD optimizer step 6 -> 0 (drops the momentum)" "$cf/optimizer step is 0, expected 6 \(the checkpoint's step" @optimizer:step=0; }
case_tamper_lr() { tampered "tampered: stored lr 0.3, its config 0.2" "$cf/optimizer lr is 0.3, expected 0.2 \(its stored config's train.optimizer.lr\)" @optimizer:lr=0.3; }
case_tamper_lr_removed() { tampered "tampered, guard (exit, not the message): the lr attribute removed (takes the default 0.1, its config says 0.2)" "$cf/optimizer lr is 0.1, expected 0.2" -@optimizer:lr; }
case_tamper_unknown_attribute() { tampered "tampered: an /optimizer attribute this ddptok does not know" "$cf/optimizer attribute 'nesterov' is not one of format 4's" @optimizer:nesterov=1; }
case_tamper_dropout_key_rank() { tampered "tampered: dropout key's rank word (rank 1 -> 2)" "rank-0001.h5: /rng/dropout/key is \(99, 0x4000002\), expected \(99, 0x4000001\)" 1:rng/dropout/key[1]=67108866; }
case_tamper_dropout_counter() { tampered "tampered: dropout counter 12 -> 11" "$cf/rng/dropout/counter is 11, expected 12 \(one block per microbatch: step 6 x A = 2\)" rng/dropout/counter[0]=11; }
case_tamper_sampler_key() { tampered "tampered: sampler key's seed 99 -> 100" "$cf/rng/sampler/key is \(100, 0x3000000\), expected \(99, 0x3000000\)" 0:rng/sampler/key[0]=100 1:rng/sampler/key[0]=100; }
case_tamper_sampler_counter() { tampered "tampered: sampler counter +1" "$cf/rng/sampler/counter is 37, expected 36 \(where the sampler's 6 windows, replayed from seed 99, leave it\)" 0:rng/sampler/counter[0]=37; }
case_tamper_last_window_id() { tampered "tampered: an id of the last window changed (guard in check-checkpoints: the plan)" "$cf/sampler/last slot 0 is 5, expected [0-9]+ \(window 6 of the sampler replayed" 0:sampler/last[0]=5; }
case_tamper_windows_hash() { tampered "tampered: the running hash of the windows (a past window's ids)" "$cf/sampler windows_sha256 is 000000000000…, expected [0-9a-f]{12}… \(the running hash of the 6 windows replayed from seed 99\)" 0:@sampler:windows_sha256=0000000000000000000000000000000000000000000000000000000000000000; }
case_tamper_bands_position() { tampered "tampered: the bands sampler's position (0, 6) -> (0, 7)" "$cf/sampler epoch, window are \(0, 7\), expected \(0, 6\) \(the bands sampler has no epochs\)" @sampler:window=7; }
case_tamper_nan_momentum() { tampered "tampered: NaN in the momentum" "$cf/optimizer/momentum/w1\[7\] is nan, expected a finite number" optimizer/momentum/w1[7]=nan; }
case_tamper_inf_model() { tampered "tampered: inf in the model" "$cf/model/b2\[0\] is inf, expected a finite number" model/b2[0]=inf; }
case_tamper_w1_shape() { tampered "tampered: w1 stored (24, 16) instead of (16, 24)" "${cf}dataset model/w1 has shape \(24, 16\), expected \(16, 24\)" model/w1:shape=24,16; }
case_tamper_last_window_dtype() { tampered "tampered: the last window stored as int64" "${cf}dataset sampler/last is int64, expected int32" sampler/last:dtype=int64; }
case_tamper_momentum_dtype() { tampered "tampered: a momentum tensor stored as float64" "${cf}dataset optimizer/momentum/b1 is float64, expected float32" optimizer/momentum/b1:dtype=float64; }
case_tamper_counter_dtype() { tampered "tampered: the dropout counter stored as uint32" "${cf}dataset rng/dropout/counter is uint32, expected uint64" rng/dropout/counter:dtype=uint32; }
case_tamper_step_float() { tampered "tampered: the step stored as a float" "${cf}attribute step is not an integer" @/:step=6.0; }
case_tamper_world_size() { tampered "tampered, guard (exit, not the message): world_size 2 -> 3 (its config says 2)" "${cf}world_size is 3, expected 2 \(its stored config's train.world_size\)" @/:world_size=3; }
case_tamper_rank() { tampered "tampered, guard: rank 1's file says rank 0" "rank-0001.h5: rank is 0, expected 1 \(the file's name\)" 1:@/:rank=0; }
# The step and the directory's name: step 6's files under step-0005.
case_step_vs_directory_name() {
  fixture trained || return
  mv artifacts/checkpoints/step-0006 artifacts/checkpoints/step-0005
  expect_rc "step 6's files as step-0005: --resume refused (exit 2)" 2 ddp 2 train --config "$cfg" --resume artifacts/checkpoints/step-0005
  expect_grep "step 6's files as step-0005: --resume names the file and both steps" "step-0005/rank-000[01].h5: step is 6, expected 5 \(the directory's name step-0005\)" "$OUT"
  expect_rc "step 6's files as step-0005, guard: check-checkpoints refuses it" 1 one check-checkpoints --config "$cfg"
  expect_grep "step 6's files as step-0005: check-checkpoints names the file and both steps" "step-0005/rank-000[01].h5: step is 6, expected 5" "$OUT"
}
# The global sampler with AdamW: keyed dropout's key and counter, the global stream's key and
# counter, AdamW's step and moments.
g=(--set train.sampler=global --set train.optimizer.name=adamw --set train.optimizer.lr=0.01 --set paths.outputs=og --set paths.artifacts=ag)
fixture_global_adamw() {
  one prepare --config "$cfg" "${g[@]}" >/dev/null && ddp 2 train --config "$cfg" "${g[@]}" >/dev/null 2>&1 && mv ag/checkpoints/step-0006 ag.good
}
gtampered() {  # NAME PATTERN EDIT...: the global/AdamW step 6 resealed with the EDITs, refused by both
  local name=$1 pat=$2; shift 2
  fixture global_adamw || return
  /usr/bin/python3 "$RESEAL" ag.good ag/checkpoints/step-0006 "$@" >/dev/null || { bad "$name: reseal_ckpt.py rewrites the checkpoint"; return; }
  expect_rc "$name: check-checkpoints refuses" 1 one check-checkpoints --config "$cfg" "${g[@]}"
  expect_grep "$name: check-checkpoints says why" "$pat" "$OUT"
  DDPTOK_TEST_TIMEOUT=60 expect_rc "$name: --resume refused on every rank (exit 2, no hang)" 2 ddp 2 train --config "$cfg" "${g[@]}" --resume ag/checkpoints/step-0006
  expect_grep "$name: --resume says why" "$pat" "$OUT"
}
case_global_adamw_resealed_untouched() {
  fixture global_adamw || return
  local d
  /usr/bin/python3 "$RESEAL" ag.good ag/checkpoints/step-0006 >/dev/null
  expect_rc "global + AdamW, resealed untouched: --resume" 0 ddp 2 train --config "$cfg" "${g[@]}" --resume ag/checkpoints/step-0006
  ddp 2 train --config "$cfg" "${g[@]}" --continuous >/dev/null 2>&1
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" ag/checkpoints/step-0012 ag/continuous/step-0012) \
    && ok "global + AdamW, resealed untouched: step 12 bit-identical to the continuous run" "(max |dtheta| = $d)" \
    || bad "global + AdamW, resealed untouched: step 12 bit-identical to the continuous run" "— $d"
}
gf='ag/checkpoints/step-0006/rank-000[01].h5: '
case_gtamper_adamw_step() { gtampered "global + AdamW tampered: AdamW step 6 -> 1" "$gf/optimizer step is 1, expected 6 \(the checkpoint's step: adamw counts every update\)" @optimizer:step=1; }
case_gtamper_dropout_key() { gtampered "global + AdamW tampered: keyed dropout's key" "$gf/rng/dropout/key is \(99, 0x6000001\), expected \(99, 0x6000000\)" rng/dropout/key[1]=100663297; }
case_gtamper_dropout_counter() { gtampered "global + AdamW tampered: keyed dropout's counter 0 -> 3" "$gf/rng/dropout/counter is 3, expected 0 \(keyed dropout advances no counter\)" rng/dropout/counter[0]=3; }
case_gtamper_stream_key() { gtampered "global + AdamW tampered: the global stream's key" "$gf/rng/sampler/key is \(99, 0x5000001\), expected \(99, 0x5000000\)" rng/sampler/key[1]=83886081; }
case_gtamper_stream_counter() { gtampered "global + AdamW tampered: the global stream's counter (windows drawn) +1" "$gf/rng/sampler/counter is 7, expected 6" rng/sampler/counter[0]=7; }
case_gtamper_epoch() { gtampered "global + AdamW tampered: the epoch of the next window" "$gf/sampler epoch, window are \(5, [0-9]+\), expected \([0-9]+, [0-9]+\) \(where window 7 lies: [0-9]+ windows per epoch\)" @sampler:epoch=5; }
case_gtamper_windows_hash() { gtampered "global + AdamW tampered: the running hash of the global windows" "$gf/sampler windows_sha256 is 000000000000…, expected" @sampler:windows_sha256=0000000000000000000000000000000000000000000000000000000000000000; }
case_gtamper_exp_avg_sq_negative() { gtampered "global + AdamW tampered: -1 in AdamW's exp_avg_sq" "$gf/optimizer/exp_avg_sq/w1\[3\] is -1, expected a finite number >= 0" optimizer/exp_avg_sq/w1[3]=-1; }
case_gtamper_exp_avg_inf() { gtampered "global + AdamW tampered: inf in AdamW's exp_avg" "$gf/optimizer/exp_avg/b1\[0\] is inf, expected a finite number" optimizer/exp_avg/b1[0]=inf; }
case_gtamper_beta2() { gtampered "global + AdamW tampered: stored beta2 0.99, its config 0.999" "$gf/optimizer beta2 is 0.99, expected 0.999 \(its stored config's train.optimizer.betas\[1\]\)" @optimizer:beta2=0.99; }
# An unpublished write (step-NNNN.tmp) is never taken for a checkpoint.
case_unpublished_tmp() {
  fixture trained || return
  mkdir -p artifacts/checkpoints/step-0009.tmp; head -c 100 artifacts/checkpoints/step-0006/rank-0000.h5 > artifacts/checkpoints/step-0009.tmp/rank-0000.h5
  expect_rc "an unpublished step-0009.tmp is ignored by check-checkpoints" 0 one check-checkpoints --config "$cfg"
  expect_grep "an unpublished step-0009.tmp is reported as an incomplete write" 'step-0009.tmp +ignored: incomplete write' "$OUT"
  expect_rc "--resume latest skips an unpublished step-0009.tmp" 0 ddp 2 train --config "$cfg" --resume latest
  expect_grep "--resume latest beside step-0009.tmp resumes from step 6: steps 7..12" 'steps 7\.\.12' "$OUT"
}
# A name that only looks like a step (more zeros, a number past 32 bits, a suffix): never a
# checkpoint, and never read as one step and looked for under another name (step-99999999999
# was listed as step 1215752191 and resumed from as "artifacts/checkpoints/step-1215752191",
# step-00012 holding step 6's files was checked as step 12).
# A name is printed with its control characters as '?' (one with an OSC title sequence here).
case_lookalike_names() {
  fixture resumed || return
  local esc=$'step-\e]0;owned\a' n
  for n in step-00012 step-99999999999 step-0012x "$esc"; do cp -r artifacts/checkpoints/step-0006 "artifacts/checkpoints/$n"; done
  expect_rc "step-00012, step-99999999999, step-0012x, step-ESC]0;owned BEL beside step-0006: check-checkpoints passes" 0 one check-checkpoints --config "$cfg"
  [ "$(grep -c "ignored: not a checkpoint's name" <<<"$OUT")" -eq 4 ] && ! grep -q "step-1215752191" <<<"$OUT" \
    && ok "look-alike step names: each named as not a checkpoint's name, none read as another step" || { bad "look-alike step names: each named as not a checkpoint's name, none read as another step"; grep -v '^ ' <<<"$OUT" | head -4; }
  ! grep -q $'\e' <<<"$OUT" && grep -qF 'step-?]0;owned? ' <<<"$OUT" && ok "look-alike step names: the control characters in a name printed as '?', not raw" \
    || bad "look-alike step names: the control characters in a name printed as '?', not raw" "— $(grep -a owned <<<"$OUT" | cat -v)"
  rm -rf artifacts/checkpoints/step-0012
  expect_rc "look-alike step names: --resume latest resumes from step-0006" 0 ddp 2 train --config "$cfg" --resume latest
  expect_grep "look-alike step names: --resume latest runs steps 7..12" 'steps 7\.\.12' "$OUT"
  ! grep -q "warning" <<<"$OUT" && ok "look-alike step names: --resume latest skips nothing as damaged" || bad "look-alike step names: --resume latest skips nothing as damaged" "— $(grep warning <<<"$OUT" | head -1)"
}
# check-checkpoints lists in step order (not directory order), and a step-NNNN beyond the
# plan's U updates is refused: no run of this config can have written it.
case_step_order() {
  fixture every2 || return
  expect_rc "check-checkpoints with steps 2..12 of the continuous run" 0 one check-checkpoints --config "$cfg"
  local order; order=$(grep -oE 'continuous/step-[0-9]+' <<<"$OUT" | tr '\n' ' ')
  [ "$order" = "continuous/step-0002 continuous/step-0004 continuous/step-0006 continuous/step-0008 continuous/step-0010 continuous/step-0012 " ] \
    && ok "check-checkpoints lists checkpoints in step order" || bad "check-checkpoints lists checkpoints in step order" "— $order"
  cp -r artifacts/checkpoints/step-0012 artifacts/checkpoints/step-0015
  expect_rc "a step-0015 beyond the plan's 12 updates is refused" 1 one check-checkpoints --config "$cfg"
  expect_grep "a step-0015 beyond the plan: refused naming it and the plan's steps" 'step-0015: step 15 is outside the plan.s steps 1\.\.12' "$OUT"
  expect_grep "a step-0015 beyond the plan: listed after step-0012" 'step-0012 +ok.*step-0015 +INVALID' "$(tr '\n' ' ' <<<"$OUT")"
}
# evaluate --checkpoint: any checkpoint, here one of the continuous run alone.
case_evaluate_checkpoint() {
  fixture every2 || return
  expect_rc "evaluate --checkpoint a continuous-run checkpoint" 0 one evaluate --config "$cfg" --checkpoint artifacts/continuous/step-0004/
  expect_grep "evaluate --checkpoint evaluates that model" '^evaluate: step-4 model of artifacts/continuous/step-0004 on 32 test sequences' "$OUT"
  [ "$(json outputs/evaluate.json 'j["step"], j["checkpoint"], j["test"]["tokens"] > 0')" = "4 artifacts/continuous/step-0004 True" ] \
    && ok "evaluate --checkpoint: outputs/evaluate.json names the checkpoint and its step" || bad "evaluate --checkpoint: outputs/evaluate.json names the checkpoint and its step" "— $(cat outputs/evaluate.json)"
  expect_rc "evaluate --checkpoint of a missing directory: refused" 2 one evaluate --config "$cfg" --checkpoint artifacts/nope
  expect_grep "evaluate --checkpoint of a missing directory: one line naming it" '^ddptok: error: evaluate --checkpoint artifacts/nope: no checkpoint there' "$OUT"
}
# Bounded sampler state (docs/checkpoints.md "Sampler state"): a checkpoint at step 100000 is
# the size of one at step 10 (within 4 KiB; format 2's history would have added 100000 x G x 4
# = 800 kB here), and check-checkpoints replays its 100000 windows in O(1) memory and accepts
# it; the same file with one id of its last window changed is refused (the replay really ran).
case_bounded_size() {
  local small=(--set train.world_size=1 --set train.rank_bands=auto --set train.sampler=global --set train.global_batch=2
    --set train.accumulation=1 --set model.hidden=4 --set model.embed_dim=2 --set model.context=1 --set data.max_length=8
    --set data.min_length=8 --set model.dropout=0 --set train.interrupt_at=0 --set train.log_every=100000
    --set train.optimizer.lr=0.01 --set paths.outputs=os --set paths.artifacts=as)
  local s10 s100k
  one prepare --config "$cfg" "${small[@]}" >/dev/null
  expect_rc "bounded state: train 10 updates" 0 one train --config "$cfg" "${small[@]}" --set train.updates=10 || return
  s10=$(stat -c %s as/checkpoints/step-0010/rank-0000.h5)
  rm -rf as
  DDPTOK_TEST_TIMEOUT=60 expect_rc "bounded state: train 100000 updates (within 60 s)" 0 one train --config "$cfg" "${small[@]}" --set train.updates=100000 || return
  s100k=$(stat -c %s as/checkpoints/step-100000/rank-0000.h5)
  [ $((s100k - s10)) -le 4096 ] && [ $((s10 - s100k)) -le 4096 ] \
    && ok "bounded state: the step-100000 rank file is the size of the step-10 one" "($s100k vs $s10 bytes)" \
    || bad "bounded state: the step-100000 rank file is the size of the step-10 one" "— $s100k vs $s10 bytes"
  DDPTOK_TEST_TIMEOUT=60 expect_rc "bounded state: check-checkpoints replays 100000 windows and accepts step 100000" 0 \
    one check-checkpoints --config "$cfg" "${small[@]}" --set train.updates=100000
  mv as/checkpoints/step-100000 s100k.good
  /usr/bin/python3 "$RESEAL" s100k.good as/checkpoints/step-100000 "sampler/last[1]=-1" >/dev/null
  expect_rc "bounded state, negative control: step 100000 with its last window's second id emptied is refused" 1 \
    one check-checkpoints --config "$cfg" "${small[@]}" --set train.updates=100000
  expect_grep "bounded state, negative control: the refusal names the field" "rank-0000.h5: /sampler/last slot 1 is -1, expected [0-9]+ \(window 100000 of the global sampler's epochs from seed 99\)" "$OUT"
}
# What checking the sampler state costs does not grow with the step (format 4, global sampler:
# the last window by random access, the digest of what determines the windows): a checkpoint of
# step 1 000 000 at G = 1024 — built from a trained step-1 one, resealed with window 1 000 000's
# ids as `plan` prints them, the stream counter, the position, the optimizer's step and the
# digest (docs/checkpoints.md) — is checked within seconds (format 3 replayed its 10^6 windows:
# ~3 min here); with the digest of 999 999 windows, or one id changed, it is refused.
# Where a replay cannot be avoided (the bands sampler's stream is a chain: where window u's draw
# starts depends on every draw before it; format 3's running hash), it says how far it is past
# ~2 s (here 0.2 s), and a process that checks several checkpoints replays each stream once:
# from the states an earlier check passed (anchors every 4096 windows), not from step 0 each
# time. build/bench_replay builds step 200 000's state, checks it (a full replay), then the same
# state with its hash changed (refused, from the anchors). plan --steps says so too.
case_replay_progress() {
  local out checked refused
  out=$(DDPTOK_PROGRESS_SECONDS=0.2 "$ROOT/build/bench_replay" "$cfg" 200000 4 --set train.updates=200000 2>&1); local rc=$?
  [ $rc -eq 0 ] && grep -q '^  bench: replaying its sampler, window: [0-9]*/200000 ([0-9]* %), ETA' <<<"$out" \
    && ok "a bands replay of 200000 windows: checked, its hash changed refused, a progress line on the way" "($(tail -1 <<<"$out" | cut -c15-))" \
    || { bad "a bands replay of 200000 windows: checked, its hash changed refused, a progress line on the way" "— exit $rc"; tail -3 <<<"$out"; }
  checked=$(sed -nE 's/.*checked in ([0-9.]+) s.*/\1/p' <<<"$out") refused=$(sed -nE 's/.*refused in ([0-9.]+) s.*/\1/p' <<<"$out")
  /usr/bin/python3 -c "import sys; sys.exit(not (float('$refused') * 4 < float('$checked')))" 2>/dev/null \
    && ok "the second check of step 200000 replays from the first one's anchors" "(${refused} s after ${checked} s)" \
    || bad "the second check of step 200000 replays from the first one's anchors" "— ${refused} s after ${checked} s"
  one prepare --config "$cfg" >/dev/null
  out=$(DDPTOK_PROGRESS_SECONDS=0.1 one plan --config "$cfg" --steps 2000000 2>&1)
  grep -q "^  plan: replaying the bands sampler's streams to the first step asked for, step: [0-9]*/1999999" <<<"$out" && grep -q '^step 2000000 rank 1:' <<<"$out" \
    && ok "plan --steps 2000000 under bands: a progress line while it replays, then the window" \
    || { bad "plan --steps 2000000 under bands: a progress line while it replays, then the window"; tail -3 <<<"$out"; }
}
case_replay_global_step_1e6() {
  local big=(--set train.sampler=global --set train.global_batch=1024 --set data.splits.train=3000 --set train.world_size=1
    --set train.rank_bands=auto --set train.updates=1000000 --set train.interrupt_at=1 --set paths.outputs=ob --set paths.artifacts=ab)
  local edits t0 ms
  one prepare --config "$cfg" "${big[@]}" >/dev/null && one train --config "$cfg" "${big[@]}" >/dev/null 2>&1 \
    && one plan --config "$cfg" "${big[@]}" --steps 999999..1000000 > plan.txt \
    || { bad "replay at step 10^6: prepare, train step 1 (G = 1024) and plan --steps 999999..1000000"; return; }
  mv ab/checkpoints/step-0001 step1
  forged() {  # STEP DIGEST-WINDOWS [EDIT...]: step 1 resealed as step STEP into ab/checkpoints/step-STEP
    local step=$1 k=$2; shift 2
    mapfile -t edits < <(/usr/bin/python3 - "$step" "$k" <<'PY'
import hashlib, re, sys, h5py
step, k = int(sys.argv[1]), int(sys.argv[2])
m = re.match(r"step \d+ epoch \d+ window \d+/(\d+): (.*)", [l for l in open("plan.txt") if l.startswith(f"step {step} ")][0])
Q, ids = int(m.group(1)), m.group(2).split()
p = h5py.File("ob/data/plan.h5").attrs
t = (f"ddptok-sampler-windows v2 global seed={int(p['seed'])} n_train={int(p['n_train'])} train_begin={int(p['train_begin'])} "
     f"global_batch={int(p['global_batch'])} windows={k}")
print(f"@/:step={step}\n@optimizer:step={step}\nrng/sampler/counter[0]={step}")
print(f"@sampler:epoch={step // Q}\n@sampler:window={step % Q}")  # where window step + 1 lies
print("@sampler:windows_sha256=" + hashlib.sha256(t.encode()).hexdigest())
print("\n".join(f"sampler/last[{i}]={v}" for i, v in enumerate(ids)))
PY
)
    rm -rf "ab/checkpoints/step-$step"
    /usr/bin/python3 "$RESEAL" step1 "ab/checkpoints/step-$step" "${edits[@]}" "$@" >/dev/null
  }
  forged 1000000 1000000 || { bad "replay at step 10^6: reseal_ckpt.py writes step 1000000"; return; }
  t0=$(date +%s%N)
  expect_rc "check-checkpoints of a global-sampler checkpoint at step 1000000, G = 1024 (format 4)" 0 one check-checkpoints --config "$cfg" "${big[@]}"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $ms -le 10000 ] && ok "checking step 1000000 at G = 1024 takes seconds, not the replay of 10^6 windows" "($ms ms)" \
    || bad "checking step 1000000 at G = 1024 takes seconds, not the replay of 10^6 windows" "— $ms ms"
  forged 1000000 999999
  expect_rc "step 1000000 holding the digest of 999999 windows: refused" 1 one check-checkpoints --config "$cfg" "${big[@]}"
  expect_grep "step 1000000 holding the digest of 999999 windows: the refusal names the digest" \
    'step-1000000/rank-0000.h5: /sampler windows_sha256 is [0-9a-f]{12}…, expected [0-9a-f]{12}… \(the digest of what determines the 1000000 windows: seed 99' "$OUT"
  forged 1000000 1000000 "sampler/last[7]=0"
  expect_rc "step 1000000 with one id of its last window changed: refused" 1 one check-checkpoints --config "$cfg" "${big[@]}"
  expect_grep "step 1000000 with one id changed: the refusal names the slot" "/sampler/last slot 7 is 0, expected [0-9]+ \(window 1000000 of the global sampler's epochs" "$OUT"
  # ... and a resume from step 999999 checks it as fast, then trains its last step
  rm -rf ab/checkpoints/step-1000000 && forged 999999 999999
  expect_rc "train --resume from a global-sampler checkpoint at step 999999 (G = 1024): one step, then step 1000000 published" 0 \
    one train --config "$cfg" "${big[@]}" --resume ab/checkpoints/step-999999
  expect_rc "check-checkpoints of the resumed run's step 1000000 and the forged step 999999" 0 one check-checkpoints --config "$cfg" "${big[@]}"
}

