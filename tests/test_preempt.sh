# Preemption under plain mpirun: SIGUSR1 to the launcher reaches every rank; the ranks
# agree at the next window boundary, checkpoint and exit 75; `--resume auto` finishes the
# run, bit-identical to an uninterrupted one. Also: --resume auto starts fresh without a
# checkpoint, ends 0 on a finished lineage, skips a damaged newest checkpoint; a killed
# --continuous lineage resumes; a lineage with checkpoints is not restarted by accident.
cfg="$CONFIGS/minimum.yaml"
long=(--set train.updates=200 --set train.interrupt_at=0)
fixture_prepared_long() { one prepare --config "$cfg" "${long[@]}" >/dev/null; }
case_sigusr1_mid_run() {
  fixture prepared_long || return
  expect_rc "preempt: uninterrupted 200 updates" 0 ddp 2 train --config "$cfg" "${long[@]}" --set paths.artifacts=full
  rm -f outputs/train/interrupted.jsonl
  # mpirun itself in the background (not under `timeout`, which would not pass SIGUSR1 on),
  # with a watchdog so no hang survives.
  mpirun -np 2 "$DDPTOK" train --config "$cfg" "${long[@]}" --resume auto > run1.txt 2>&1 &
  local pid=$! dog rc step n d
  ( sleep 120; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
  wait_lines outputs/train/interrupted.jsonl 20 30  # ~20 updates logged
  kill -USR1 "$pid"
  wait "$pid"; rc=$?
  kill "$dog" 2>/dev/null
  step=$(ls -d artifacts/checkpoints/step-* 2>/dev/null | sed 's/.*step-0*//' | sort -n | tail -1)
  [ "$rc" -eq 75 ] && [ -n "$step" ] && [ "$step" -lt 200 ] && ok "SIGUSR1 to mpirun mid-run: every rank checkpointed and the job exited 75" "(step $step)" \
    || { bad "SIGUSR1 to mpirun mid-run: every rank checkpointed and the job exited 75" "— exit $rc, checkpoint '$step'"; tail -5 run1.txt; }
  n=$(grep -c 'stop requested' run1.txt)
  [ "$n" -eq 1 ] && ok "SIGUSR1 to mpirun mid-run: the stop announced once (rank 0), both ranks stopped at the same window" \
    || bad "SIGUSR1 to mpirun mid-run: the stop announced once (rank 0), both ranks stopped at the same window" "— $n"
  expect_rc "preempted run: --resume auto continues from the checkpoint" 0 ddp 2 train --config "$cfg" "${long[@]}" --resume auto
  expect_grep "preempted run: --resume auto continues from the newest checkpoint (step $step)" "steps $((step + 1))\.\.200" "$OUT"
  d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/checkpoints/step-0200 full/checkpoints/step-0200) \
    && ok "preempted + resumed step-200 model bit-identical to the uninterrupted one" "(max |dtheta| = $d)" || bad "preempted + resumed step-200 model bit-identical to the uninterrupted one" "— $d"
}
# SIGUSR1 at any moment after run/ddprun starts (its first line traps it): ddprun writes its
# stop file instead of passing the signal to mpirun (which forwards it at once: in its first
# ~0.1 s the old ddprun died of it, exit 138, and under plain mpirun a rank still loading
# does, or the signal is lost). Every trial must end 75 with an intact checkpoint: the run
# (2000 updates, >1 s here) is far longer than the spread, so no signal comes after its last window.
case_sigusr1_early_ddprun() {
  local sig=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=sig --set train.interrupt_at=0
             --set train.updates=$((SIGNAL_SPREAD_MS > 200 ? SIGNAL_SPREAD_MS * 10 : 2000)))
  local outcomes=() good=0 i d pid dog rc ck n
  one prepare "${sig[@]}" >/dev/null
  for ((i = 0; i < SIGNAL_TRIALS; i++)); do
    d=$(signal_delay $i $SIGNAL_TRIALS)
    DDPRUN_QUIET=1 "$ROOT/run/ddprun" -np 2 train "${sig[@]}" --set paths.artifacts=sig-$i >sig-$i.txt 2>&1 &
    pid=$!
    ( sleep 90; kill -TERM "$pid"; sleep 5; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
    trap_up "$pid"; sleep_ms "$d"; kill -USR1 "$pid"
    wait "$pid"; rc=$?; kill "$dog" 2>/dev/null
    one check-checkpoints "${sig[@]}" --set paths.artifacts=sig-$i >/dev/null 2>&1; ck=$?
    n=$(ls -d sig-$i/checkpoints/step-* 2>/dev/null | wc -l)
    outcomes+=("${d}ms:$rc")
    if [ $rc -eq 75 ] && [ $ck -eq 0 ] && [ "$n" -ge 1 ]; then good=$((good + 1)); rm -rf sig-$i sig-$i.txt
    else echo "       trial $i (${d} ms): exit $rc, check-checkpoints $ck, $n checkpoint(s):"; grep -v '^ ' sig-$i.txt | head -5 | sed 's/^/         /'; fi
  done
  [ $good -eq "$SIGNAL_TRIALS" ] \
    && ok "SIGUSR1 0..${SIGNAL_SPREAD_MS} ms after run/ddprun started, $SIGNAL_TRIALS trials: each exit 75 with an intact checkpoint" \
    || bad "SIGUSR1 0..${SIGNAL_SPREAD_MS} ms after run/ddprun started, $SIGNAL_TRIALS trials: each exit 75 with an intact checkpoint" "— $good of $SIGNAL_TRIALS (delay:exit ${outcomes[*]})"
}
# ... and sent to ddprun's whole process group (`kill -USR1 %1` from a shell, a batch system
# signalling the job's group) in its first milliseconds: a child of ddprun in that group died
# of it — a subshell (the false "ddprun: /ddptok not built: run make", exit 2), mpirun itself
# (exit 138) or mpirun forwarding it to ranks still loading ("mpirun: Forwarding signal 10",
# ranks killed). Every trial must end 75 with an intact checkpoint and no other ddprun line.
# trap_up_now PID: trap_up without a process per poll (the first milliseconds matter here).
trap_up_now() {
  local i k v
  for ((i = 0; i < 50000; i++)); do
    while read -r k v; do [ "$k" = SigCgt: ] && (( 0x$v & 0x200 )) && return 0; done </proc/"$1"/status 2>/dev/null
  done
  return 1
}
case_sigusr1_group_ddprun() {
  # updates 200000: no trial may reach the end before its signal, however fast the machine (2000
  # finished within 600 ms on an idle one: exit 0); every trial stops at its next window.
  local sig=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=sig --set train.interrupt_at=0 --set train.updates=200000)
  local outcomes=() good=0 i d pid rc ck n spread=${DDPTOK_TEST_SIGNAL_GROUP_SPREAD_MS:-28}
  one prepare "${sig[@]}" >/dev/null
  for ((i = 0; i < SIGNAL_TRIALS; i++)); do
    d=$((SIGNAL_TRIALS > 1 ? i * spread / (SIGNAL_TRIALS - 1) : 0))
    # setsid: ddprun leads a process group of its own, as a shell's job does.
    DDPRUN_QUIET=1 timeout -k 5 90 setsid "$ROOT/run/ddprun" -np 2 train "${sig[@]}" --set paths.artifacts=grp-$i >grp-$i.txt 2>&1 &
    for ((n = 0; n < 1000; n++)); do pid=$(pgrep -P "$!") && break; sleep 0.001; done  # ddprun, timeout's child
    trap_up_now "$pid"; sleep_ms "$d"; kill -USR1 -- -"$pid"
    wait "$!"; rc=$?
    one check-checkpoints "${sig[@]}" --set paths.artifacts=grp-$i >/dev/null 2>&1; ck=$?
    n=$(ls -d grp-$i/checkpoints/step-* 2>/dev/null | wc -l)
    outcomes+=("${d}ms:$rc")
    if [ $rc -eq 75 ] && [ $ck -eq 0 ] && [ "$n" -ge 1 ] && ! grep -v '^ddprun: SIGUSR1: ' grp-$i.txt | grep -q '^ddprun: \|Forwarding signal'; then
      good=$((good + 1)); rm -rf grp-$i grp-$i.txt
    else echo "       trial $i (${d} ms): exit $rc, check-checkpoints $ck, $n checkpoint(s):"; grep -v '^ ' grp-$i.txt | head -5 | sed 's/^/         /'; fi
  done
  [ $good -eq "$SIGNAL_TRIALS" ] \
    && ok "SIGUSR1 to ddprun's process group 0..${spread} ms after its trap, $SIGNAL_TRIALS trials: each exit 75, an intact checkpoint, no false line" \
    || bad "SIGUSR1 to ddprun's process group 0..${spread} ms after its trap, $SIGNAL_TRIALS trials: each exit 75, an intact checkpoint, no false line" "— $good of $SIGNAL_TRIALS (delay:exit ${outcomes[*]})"
}
# ... and SIGKILL to that group (kill -9 %1, timeout -k), which no trap sees: mpirun and the
# ranks, in process groups of their own, must not train on (ddprun's watcher ends them).
case_kill9_group_ddprun() {
  local sig=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=k9 --set train.interrupt_at=0 --set train.updates=400000) pid n left
  one prepare "${sig[@]}" >/dev/null
  DDPRUN_QUIET=1 setsid "$ROOT/run/ddprun" -np 2 train "${sig[@]}" --set paths.artifacts=k9-a >k9.txt 2>&1 &
  pid=$!  # setsid, not a group leader here, becomes ddprun: the leader of its own group
  wait_lines k9/train/interrupted.jsonl 2 30
  kill -KILL -- -"$pid"
  for ((n = 0; n < 50; n++)); do left=$(pgrep -fc -- "k9-a") || true; [ "$left" = 0 ] && break; sleep 0.1; done
  [ "$left" = 0 ] && ok "SIGKILL to ddprun's process group mid-run: mpirun and the ranks end too" "(within $((n * 100)) ms)" \
    || { bad "SIGKILL to ddprun's process group mid-run: mpirun and the ranks end too" "— $left process(es) left"; pkill -9 -f -- "k9-a"; }
}
case_resume_auto_fresh() {
  fixture prepared_long || return
  expect_rc "--resume auto without a checkpoint starts fresh" 0 ddp 2 train --config "$cfg" --set train.updates=3 --set train.interrupt_at=0 --set paths.artifacts=fresh --resume auto
  expect_grep "--resume auto without a checkpoint starts at step 1" 'steps 1\.\.3' "$OUT"
}
case_resume_latest_none() {
  fixture prepared_long || return
  expect_rc "--resume latest without a checkpoint is an error" 2 ddp 2 train --config "$cfg" --set paths.artifacts=none --resume latest
}
# Requeue policy and lineages (tiny config, docs/checkpoints.md "Requeue and lineages").
t=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=rq)
fixture_rq() { one prepare "${t[@]}" >/dev/null; }
ck() { /usr/bin/python3 "$ROOT/tests/compare_ckpt.py" "$1" "$2"; }
# SIGUSR1 in the last window (U = 1, the signal as soon as both ranks exist, during their
# start-up: the first window is the last): exit 75 with step U published; the requeued job (--resume auto) then ends 0.
case_sigusr1_last_window() {
  fixture rq || return
  local u1=("${t[@]}" --set train.updates=1 --set train.interrupt_at=0 --set paths.artifacts=rq1) pid dog rc
  mpirun -np 2 "$DDPTOK" train "${u1[@]}" > last.txt 2>&1 &
  pid=$!
  ( sleep 60; kill -9 "$pid" ) >/dev/null 2>&1 & dog=$!
  ranks_up "^$DDPTOK train" 2; kill -USR1 "$pid"; wait "$pid"; rc=$?; kill "$dog" 2>/dev/null
  [ $rc -eq 75 ] && [ -f rq1/checkpoints/step-0001/SHA256SUMS ] && ok "SIGUSR1 in the last window: exit 75 with step U = 1 published" \
    || { bad "SIGUSR1 in the last window: exit 75 with step U = 1 published" "— exit $rc, $(ls rq1/checkpoints 2>/dev/null | tr '\n' ' ')"; grep -v '^ ' last.txt | head -3; }
  expect_rc "SIGUSR1 in the last window: the requeued job (--resume auto) ends 0" 0 ddp 2 train "${u1[@]}" --resume auto
  expect_grep "SIGUSR1 in the last window: the requeued job says the lineage is finished" '^train: rq1/checkpoints/step-0001 is step 1 of 1: this lineage is finished, nothing to do' "$OUT"
}
# A damaged or empty newest checkpoint: --resume auto and latest skip it with one warning
# line and resume from the newest intact one; the result equals the undamaged run's.
a=("${t[@]}" --set paths.artifacts=rq2)
fixture_rq2() { fixture rq && ddp 2 train "${a[@]}" >/dev/null 2>&1 && ddp 2 train "${a[@]}" --resume latest >/dev/null 2>&1; }  # steps 6 and 12
case_damaged_newest() {
  fixture rq2 || return
  local d
  cp -r rq2/checkpoints/step-0012 good12
  head -c 1000 good12/rank-0001.h5 > rq2/checkpoints/step-0012/rank-0001.h5
  expect_rc "a truncated rank file in the newest checkpoint: --resume auto resumes the one before" 0 ddp 2 train "${a[@]}" --resume auto
  [ "$(grep -c warning <<<"$OUT")" -eq 1 ] && grep -q '^ddptok: rank 1: warning: rq2/checkpoints/step-0012 skipped (damaged): .*rank-0001.h5: ' <<<"$OUT" \
    && grep -q 'steps 7\.\.12' <<<"$OUT" && ok "a damaged newest checkpoint: one warning line naming it, then steps 7..12" \
    || { bad "a damaged newest checkpoint: one warning line naming it, then steps 7..12"; grep -v '^ ' <<<"$OUT" | head -4; }
  d=$(ck rq2/checkpoints/step-0012 good12) && ok "a damaged newest checkpoint skipped: step-0012 bit-identical to the undamaged one" "(max |dtheta| = $d)" \
    || bad "a damaged newest checkpoint skipped: step-0012 bit-identical to the undamaged one" "— $d"
}
case_empty_newest() {
  fixture rq2 || return
  local d
  cp -r rq2/checkpoints/step-0012 good12
  rm -rf rq2/checkpoints/step-0012; mkdir rq2/checkpoints/step-0012
  expect_rc "an empty newest step directory: --resume latest resumes the one before" 0 ddp 2 train "${a[@]}" --resume latest
  [ "$(grep -c warning <<<"$OUT")" -eq 1 ] && grep -qE 'warning: rq2/checkpoints/step-0012 skipped \(damaged\): rq2/checkpoints/step-0012/(SHA256SUMS|rank-000[01].h5): (missing|cannot open)' <<<"$OUT" \
    && ok "an empty newest step directory: one warning line" || { bad "an empty newest step directory: one warning line"; grep -v '^ ' <<<"$OUT" | head -4; }
  d=$(ck rq2/checkpoints/step-0012 good12) && ok "an empty newest step directory skipped: step-0012 bit-identical to the undamaged one" "(max |dtheta| = $d)" \
    || bad "an empty newest step directory skipped: step-0012 bit-identical to the undamaged one" "— $d"
}
case_no_intact() {
  fixture rq2 || return
  rm -rf rq2/checkpoints/step-0012
  head -c 1000 rq2/checkpoints/step-0006/rank-0000.h5 > r0 && mv r0 rq2/checkpoints/step-0006/rank-0000.h5
  expect_rc "no intact checkpoint at all: --resume auto refused" 2 ddp 2 train "${a[@]}" --resume auto
  expect_grep "no intact checkpoint at all: refused saying so and what to do" 'no intact checkpoint under rq2/checkpoints .*--fresh' "$OUT"
}
# A killed --continuous lineage (checkpoints every 3 steps, killed after step 6):
# `train --continuous --resume latest` continues it, bit-identical to the whole run.
case_continuous_killed() {
  fixture rq || return
  local c=("${t[@]}" --set paths.artifacts=rq3 --set train.checkpoint_every=3) d
  ddp 2 train "${c[@]}" --continuous >/dev/null 2>&1
  cp -r rq3/continuous/step-0012 cont12; rm -rf rq3/continuous/step-0009 rq3/continuous/step-0012
  expect_rc "a killed --continuous lineage: --continuous --resume latest continues it" 0 ddp 2 train "${c[@]}" --continuous --resume latest
  expect_grep "a killed --continuous lineage: continued from step 6" 'train \(continuous\): .* steps 7\.\.12 of 12' "$OUT"
  d=$(ck rq3/continuous/step-0012 cont12) && ok "a killed --continuous lineage continued: step-0012 bit-identical to the uninterrupted continuous run" "(max |dtheta| = $d)" \
    || bad "a killed --continuous lineage continued: step-0012 bit-identical to the uninterrupted continuous run" "— $d"
}
# Lineage safety: a second plain `train` on a lineage with checkpoints is refused before
# anything is written; --fresh moves the old checkpoints aside (untouched) and starts
# over. Logs are per run: the earlier run's JSONL and rank logs are moved aside, not
# overwritten or appended to.
l=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=rq4o --set paths.artifacts=rq4)
fixture_rq4() { one prepare "${l[@]}" >/dev/null && ddp 2 train "${l[@]}" >/dev/null 2>&1; }
case_second_train_refused() {
  fixture rq4 || return
  local sums; sums=$(cd rq4/checkpoints/step-0006 && sha256sum *)
  expect_rc "a second train on a lineage with checkpoints is refused" 2 ddp 2 train "${l[@]}"
  expect_grep "a second train on a lineage: refused naming it and the choices" '^ddptok: ranks? [0-9,-]+: error: rq4/checkpoints already holds 1 checkpoint\(s\), the newest step-0006: continue it: run `[^`]* train --config [^`]*tiny.yaml --set paths.outputs=rq4o --set paths.artifacts=rq4 --resume latest`; or start over: run `[^`]* --fresh`' "$OUT"
  [ "$(ls rq4o/train)" = interrupted.jsonl ] && [ "$(cd rq4/checkpoints/step-0006 && sha256sum *)" = "$sums" ] \
    && ok "a second train on a lineage: nothing written, the checkpoint and the log untouched" || bad "a second train on a lineage: nothing written, the checkpoint and the log untouched" "— $(ls rq4o/train | tr '\n' ' ')"
}
case_fresh() {
  fixture rq4 || return
  local sums aside n_old n_new r_old r_new; sums=$(cd rq4/checkpoints/step-0006 && sha256sum *)
  expect_rc "train --fresh starts over" 0 ddp 2 train "${l[@]}" --fresh
  expect_grep "train --fresh moves the old checkpoints aside" '^train: --fresh: the 1 checkpoint\(s\) of rq4/checkpoints moved aside to rq4/checkpoints.old-[0-9]{8}T[0-9]{6}Z/' "$OUT"
  aside=$(ls -d rq4/checkpoints.old-* | head -1)
  [ "$(cd "$aside"/step-0006 && sha256sum *)" = "$sums" ] && [ -f rq4/checkpoints/step-0006/SHA256SUMS ] \
    && ok "train --fresh: the old step-0006 byte for byte aside, a new one published" "($aside)" || bad "train --fresh: the old step-0006 byte for byte aside, a new one published"
  n_old=$(cat rq4o/train/interrupted.2*.jsonl 2>/dev/null | wc -l); n_new=$(wc -l < rq4o/train/interrupted.jsonl)
  r_old=$(cat rq4o/logs/interrupted/rank-1.2*.log 2>/dev/null | wc -l); r_new=$(wc -l < rq4o/logs/interrupted/rank-1.log)
  [ "$n_old $n_new $r_old $r_new" = "6 6 6 6" ] && ok "logs per run: the earlier run's JSONL and rank log moved aside (6 lines each), the new run's hold its own 6" \
    || bad "logs per run: the earlier run's JSONL and rank log moved aside (6 lines each), the new run's hold its own 6" "— old/new JSONL $n_old/$n_new, rank log $r_old/$r_new"
}

# Ctrl-C typed on a terminal (tests/ctrl_c.py: the command is the terminal's foreground job,
# so a Ctrl-C is a SIGINT to its process group, as a user's is; docs/launching.md "Stopping a
# run"). The first stops train as SIGUSR1 does — a checkpoint at the next window, exit 75, the
# resume line — and a second ends it at once. It ended the job with exit 1 (= "a check
# failed"), no checkpoint, and ddprun's "its own error (above)" with nothing above.
cc=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=cc --set train.interrupt_at=0 --set train.updates=400000)
fixture_ctrl_c() { one prepare "${cc[@]}" >/dev/null; }
ctrl_c() { timeout -k 5 150 /usr/bin/python3 "$TESTS_DIR/ctrl_c.py" "$@"; }
newest_step() { ls -d "$1"/step-* 2>/dev/null | grep -v '\.tmp$' | sed 's/.*step-0*//' | sort -n | tail -1; }
case_ctrl_c_ddprun() {
  fixture ctrl_c || return
  local rc step hint d
  OUT=$(ctrl_c --lines cc/train/interrupted.jsonl:50 -- "$ROOT/run/ddprun" -np 2 train "${cc[@]}" --set paths.artifacts=c1); rc=$?
  step=$(newest_step c1/checkpoints)
  one check-checkpoints "${cc[@]}" --set paths.artifacts=c1 >/dev/null 2>&1
  [ $rc -eq 75 ] && [ $? -eq 0 ] && [ -n "$step" ] && [ "$step" -lt 400000 ] \
    && ok "Ctrl-C on a terminal to run/ddprun train: every rank checkpointed at its next window, exit 75" "(step $step)" \
    || { bad "Ctrl-C on a terminal to run/ddprun train: every rank checkpointed at its next window, exit 75" "— exit $rc, newest '$step'"; grep -v '^  ' <<<"$OUT" | tail -5; }
  [ "$(grep -c 'ddprun: Ctrl-C: every rank checkpoints at its next window and stops (exit 75); Ctrl-C again stops at once$' <<<"$OUT")" -eq 1 ] \
    && ! grep -q "its own error\|mpirun failed" <<<"$OUT" && ok "Ctrl-C to run/ddprun: said once, no 'mpirun failed' line" \
    || { bad "Ctrl-C to run/ddprun: said once, no 'mpirun failed' line"; grep '^ddprun' <<<"$OUT"; }
  hint=$(sed -n 's/^train: stop requested (.*) — checkpointing at step [0-9]* and exiting with 75 (resume: run `\([^`]*\)`.*/\1/p' <<<"$OUT")
  [ -n "$hint" ] && ok "Ctrl-C to run/ddprun: the stop line names the resume command" "($hint)" || bad "Ctrl-C to run/ddprun: the stop line names the resume command" "— $(grep '^train:' <<<"$OUT")"
  # The printed command continues the checkpoint (here for 3 more updates: a later --set wins),
  # bit-identical to an uninterrupted run of as many updates.
  expect_rc "Ctrl-C to run/ddprun: the printed resume line continues the run" 0 bash -c "$hint --set train.updates=$((step + 3))"
  expect_grep "Ctrl-C to run/ddprun: resumed at the checkpoint's next step" "steps $((step + 1))\.\.$((step + 3)) of $((step + 3))" "$OUT"
  ddp 2 train "${cc[@]}" --set paths.artifacts=c1full --set train.updates=$((step + 3)) --continuous >/dev/null 2>&1
  d=$(ck "c1/checkpoints/step-$(printf %04d $((step + 3)))" "c1full/continuous/step-$(printf %04d $((step + 3)))") \
    && ok "Ctrl-C + resume: the model bit-identical to the uninterrupted run's" "(max |dtheta| = $d)" || bad "Ctrl-C + resume: the model bit-identical to the uninterrupted run's" "— $d"
}
# A second Ctrl-C ends the job at once: run/ddprun ends the ranks (SIGTERM, which a rank that
# has its stop request ends on) inside a window of ~0.5 s, before its checkpoint; exit 130.
slow=(--config "$CONFIGS/minimum.yaml" --set paths.outputs=slow --set model.hidden=8192 --set train.interrupt_at=0 --set train.updates=1000)
fixture_slow() { one prepare "${slow[@]}" >/dev/null && one prepare "${slow[@]}" --set paths.outputs=slow1 --set train.world_size=1 --set train.rank_bands=auto >/dev/null; }
case_ctrl_c_twice_ddprun() {
  fixture slow || return
  local rc t0 ms
  t0=$(date +%s%N)
  OUT=$(ctrl_c --lines slow/train/interrupted.jsonl:1 --delay 0.05 --again 0.1 -- "$ROOT/run/ddprun" -np 2 train "${slow[@]}" --set paths.artifacts=s2); rc=$?
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $rc -eq 130 ] && [ -z "$(newest_step s2/checkpoints)" ] && grep -q '^ddprun: Ctrl-C again: the job ended at once, this window not checkpointed' <<<"$OUT" \
    && ok "two Ctrl-C to run/ddprun train: ended at once (exit 130), nothing published" "($ms ms in all)" \
    || { bad "two Ctrl-C to run/ddprun train: ended at once (exit 130), nothing published" "— exit $rc, $(ls s2/checkpoints 2>/dev/null | tr '\n' ' ')"; grep -v '^  ' <<<"$OUT" | tail -4; }
  gone "$DDPTOK train" 5 && ok "two Ctrl-C to run/ddprun: no rank left" || bad "two Ctrl-C to run/ddprun: no rank left"
}
# One process (W = 1, no mpirun), Ctrl-C from its terminal: the same, the process itself.
case_ctrl_c_one_process() {
  fixture slow || return
  local one1=("${slow[@]}" --set paths.outputs=slow1 --set train.world_size=1 --set train.rank_bands=auto) rc
  OUT=$(ctrl_c --lines slow1/train/interrupted.jsonl:1 -- "$DDPTOK" train "${one1[@]}" --set paths.artifacts=o1); rc=$?
  [ $rc -eq 75 ] && [ -n "$(newest_step o1/checkpoints)" ] && grep -q '^train: stop requested (SIGINT, Ctrl-C) — checkpointing at step' <<<"$OUT" \
    && ok "Ctrl-C to a one-process train: a checkpoint at the next window, exit 75, the reason named" \
    || { bad "Ctrl-C to a one-process train: a checkpoint at the next window, exit 75, the reason named" "— exit $rc"; grep -v '^  ' <<<"$OUT" | tail -3; }
  OUT=$(ctrl_c --lines slow1/train/interrupted.jsonl:1 --delay 0.05 --again 0.1 -- "$DDPTOK" train "${one1[@]}" --set paths.artifacts=o2); rc=$?
  [ $rc -eq 130 ] && [ -z "$(newest_step o2/checkpoints)" ] && ok "two Ctrl-C to a one-process train: ended at once by SIGINT (130), nothing published" \
    || { bad "two Ctrl-C to a one-process train: ended at once by SIGINT (130), nothing published" "— exit $rc"; grep -v '^  ' <<<"$OUT" | tail -3; }
}
# Plain mpirun: Ctrl-C reaches mpirun alone (Open MPI gives each rank a process group of its
# own), which ends the ranks itself: SIGTERM 1 s later, SIGKILL 1 s after that
# (odls_base_sigkill_timeout), and exits 1 whatever they return. The ranks take that SIGTERM
# as their stop request: a window and a checkpoint within the second, and rank 0's resume line.
case_ctrl_c_plain_mpirun() {
  fixture ctrl_c || return
  local rc step
  OUT=$(ctrl_c --lines cc/train/interrupted.jsonl:50 -- mpirun -np 2 "$DDPTOK" train "${cc[@]}" --set paths.artifacts=m1); rc=$?
  step=$(newest_step m1/checkpoints)
  one check-checkpoints "${cc[@]}" --set paths.artifacts=m1 >/dev/null 2>&1
  [ $? -eq 0 ] && [ -n "$step" ] && grep -q '^train: stop requested (SIGTERM) — checkpointing at step [0-9]* and exiting with 75 (resume: run `' <<<"$OUT" \
    && ok "Ctrl-C to plain mpirun: on mpirun's SIGTERM every rank checkpointed, and rank 0 printed the resume line" "(step $step; mpirun's own exit $rc)" \
    || { bad "Ctrl-C to plain mpirun: on mpirun's SIGTERM every rank checkpointed, and rank 0 printed the resume line" "— exit $rc, newest '$step'"; grep -v '^  ' <<<"$OUT" | tail -5; }
}
# Any other command ends at once on Ctrl-C (no window to stop at): a large prepare, nothing written.
case_ctrl_c_other_command() {
  local rc
  OUT=$(ctrl_c --delay 0.4 -- "$DDPTOK" prepare --config "$CONFIGS/minimum.yaml" --set paths.outputs=big --set data.splits.train=2000000); rc=$?
  [ $rc -eq 130 ] && [ ! -e big/data/corpus.h5 ] && ok "Ctrl-C to prepare: ended at once by SIGINT (130), no corpus.h5 written" \
    || { bad "Ctrl-C to prepare: ended at once by SIGINT (130), no corpus.h5 written" "— exit $rc"; tail -3 <<<"$OUT"; }
}
# A checkpoint by default (train.checkpoint_every: auto): every max(50, ceil(U / 10)) updates,
# so a crash loses at most that; it was 0 (off): every step since the last stop was lost.
# Negative control: checkpoint_every 0 writes the last step only.
case_checkpoint_cadence() {
  fixture ctrl_c || return
  local u
  ddp 2 train "${cc[@]}" --set train.updates=200 --set paths.artifacts=k1 >/dev/null 2>&1
  [ "$(ls k1/checkpoints | tr '\n' ' ')" = "step-0050 step-0100 step-0150 step-0200 " ] \
    && ok "200 updates with the defaults: a checkpoint every 50" || bad "200 updates with the defaults: a checkpoint every 50" "— $(ls k1/checkpoints | tr '\n' ' ')"
  ddp 2 train "${cc[@]}" --set train.updates=1000 --set paths.artifacts=k2 >/dev/null 2>&1
  [ "$(ls k2/checkpoints | wc -l)" -eq 10 ] && [ -d k2/checkpoints/step-0100 ] && [ -d k2/checkpoints/step-1000 ] \
    && ok "1000 updates with the defaults: a checkpoint every 100 (a tenth of the run)" || bad "1000 updates with the defaults: a checkpoint every 100 (a tenth of the run)" "— $(ls k2/checkpoints | tr '\n' ' ')"
  ddp 2 train "${cc[@]}" --set train.updates=200 --set train.checkpoint_every=0 --set paths.artifacts=k3 >/dev/null 2>&1
  [ "$(ls k3/checkpoints | tr '\n' ' ')" = "step-0200 " ] && ok "negative control: train.checkpoint_every 0 writes the last step only" \
    || bad "negative control: train.checkpoint_every 0 writes the last step only" "— $(ls k3/checkpoints | tr '\n' ' ')"
}
# SIGTERM to run/ddprun train (issue 39: a batch system's preemption, timeout(1)) is a stop
# request end to end, as SIGUSR1: every rank checkpoints at its next window and ddprun exits
# 75 (was: SIGTERM passed to mpirun, the ranks exited 75 and ddprun 1, "a check failed"), at
# any moment from its first line on.
case_sigterm_ddprun() {
  # updates 200000: no trial may reach the end before its signal, however fast the machine (2000
  # finished within 600 ms on an idle one: exit 0); every trial stops at its next window.
  local sig=(--config "$CONFIGS/tiny.yaml" --set paths.outputs=sig --set train.interrupt_at=0 --set train.updates=200000)
  local outcomes=() good=0 i d pid dog rc ck n trials=4
  one prepare "${sig[@]}" >/dev/null
  for ((i = 0; i < trials; i++)); do
    d=$((i * 200))  # 0, 200, 400, 600 ms after ddprun's trap: before mpirun, while the ranks load, mid-run
    DDPRUN_QUIET=1 "$ROOT/run/ddprun" -np 2 train "${sig[@]}" --set paths.artifacts=term-$i >term-$i.txt 2>&1 &
    pid=$!
    ( sleep 90; kill -KILL "$pid" ) >/dev/null 2>&1 & dog=$!
    trap_up "$pid"; sleep_ms "$d"; kill -TERM "$pid"
    wait "$pid"; rc=$?; kill "$dog" 2>/dev/null
    one check-checkpoints "${sig[@]}" --set paths.artifacts=term-$i >/dev/null 2>&1; ck=$?
    n=$(ls -d term-$i/checkpoints/step-* 2>/dev/null | wc -l)
    outcomes+=("${d}ms:$rc")
    if [ $rc -eq 75 ] && [ $ck -eq 0 ] && [ "$n" -ge 1 ] && [ "$(grep -c '^ddprun: SIGTERM: every rank checkpoints at its next window' term-$i.txt)" -eq 1 ]; then
      good=$((good + 1))
    else echo "       trial $i (${d} ms): exit $rc, check-checkpoints $ck, $n checkpoint(s):"; grep -v '^ ' term-$i.txt | head -5 | sed 's/^/         /'; fi
  done
  [ $good -eq $trials ] && ok "SIGTERM 0..600 ms after run/ddprun started, $trials trials: each exit 75 with an intact checkpoint, said once" \
    || bad "SIGTERM 0..600 ms after run/ddprun started, $trials trials: each exit 75 with an intact checkpoint, said once" "— $good of $trials (delay:exit ${outcomes[*]})"
}
# Ctrl-C in a command's first milliseconds (issue 39, item 7): before the command is known the
# signal is kept as a stop request, and its notice waits for the command: import ends of it
# (exit 130) without train's "checkpoints at its next window" line (was: printed at once).
case_ctrl_c_startup_import() {
  printf 'a\nb\nc\n' >in.txt
  local i p k m rc said=0 codes=()
  for ((i = 0; i < 5; i++)); do
    "$DDPTOK" import --config "$CONFIGS/tiny.yaml" --set data.source=imported --set paths.outputs=imp-$i --format bytes --input in.txt >imp-$i.txt 2>&1 &
    p=$!
    for ((k = 0; k < 50000; k++)); do  # the handler is up (SIGINT caught): from .preinit_array on
      m=$(awk '/^SigCgt:/ {print $2}' /proc/$p/status 2>/dev/null); [ -n "$m" ] && (( 0x$m & 0x2 )) && break
    done
    kill -INT $p; wait $p; rc=$?; codes+=("$rc")
    grep -q 'checkpoints at its next window' imp-$i.txt && said=$((said + 1))
  done
  [ "$said" -eq 0 ] && ok "Ctrl-C in import's first milliseconds, 5 trials: no train notice" "(exits ${codes[*]})" \
    || bad "Ctrl-C in import's first milliseconds, 5 trials: no train notice" "— said $said times (exits ${codes[*]})"
  [ "${codes[*]}" = "130 130 130 130 130" ] && ok "Ctrl-C in import's first milliseconds: each ended by the signal (exit 130)" || bad "Ctrl-C in import's first milliseconds: each ended by the signal (exit 130)" "— ${codes[*]}"
}
