# Preemption under plain mpirun: SIGUSR1 to the launcher reaches every rank; the ranks
# agree at the next window boundary, checkpoint and exit 75; `--resume auto` finishes the
# run, bit-identical to an uninterrupted one. Also: --resume auto starts fresh without a
# checkpoint.
W=$(workdir); cd "$W"
cfg="$CONFIGS/minimum.yaml"
long=(--set train.updates=200 --set train.interrupt_at=0)
one prepare --config "$cfg" "${long[@]}" >/dev/null
expect_rc "uninterrupted 200 updates" 0 ddp 2 train --config "$cfg" "${long[@]}" --set paths.artifacts=full
rm -f outputs/train/interrupted.jsonl
# mpirun itself in the background (not under `timeout`, which would not pass SIGUSR1 on),
# with a watchdog so no hang survives.
mpirun -np 2 "$DDPTOK" train --config "$cfg" "${long[@]}" --resume auto > run1.txt 2>&1 &
pid=$!
( sleep 120; kill -9 "$pid" 2>/dev/null ) & dog=$!
wait_lines outputs/train/interrupted.jsonl 20 30  # ~20 updates logged
kill -USR1 "$pid"
wait "$pid"; rc=$?
kill "$dog" 2>/dev/null
step=$(ls -d artifacts/checkpoints/step-* 2>/dev/null | sed 's/.*step-0*//' | sort -n | tail -1)
[ "$rc" -eq 75 ] && [ -n "$step" ] && [ "$step" -lt 200 ] && ok "SIGUSR1 to mpirun: every rank checkpointed at step $step and the job exited 75" \
  || { bad "preemption" "— exit $rc, checkpoint '$step'"; tail -5 run1.txt; }
n=$(grep -c 'stop requested' run1.txt)
[ "$n" -eq 1 ] && ok "... announced once (rank 0), both ranks stopped at the same window" || bad "stop announcement" "— $n"
expect_rc "--resume auto continues from step $step" 0 ddp 2 train --config "$cfg" "${long[@]}" --resume auto
expect_grep "... from the newest checkpoint" "steps $((step + 1))\.\.200" "$OUT"
d=$(/usr/bin/python3 "$ROOT/tests/compare_ckpt.py" artifacts/checkpoints/step-0200 full/checkpoints/step-0200) \
  && ok "preempted + resumed step-200 model bit-identical to the uninterrupted one (max |dtheta| = $d)" || bad "preempted run differs" "— $d"
expect_rc "--resume auto without a checkpoint starts fresh" 0 ddp 2 train --config "$cfg" --set train.updates=3 --set train.interrupt_at=0 --set paths.artifacts=fresh --resume auto
expect_grep "... at step 1" 'steps 1\.\.3' "$OUT"
expect_rc "--resume latest without a checkpoint is an error" 2 ddp 2 train --config "$cfg" --set paths.artifacts=none --resume latest
cd "$ROOT"; rm -rf "$W"
